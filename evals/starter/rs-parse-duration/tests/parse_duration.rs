use duration::parse_duration;

#[test]
fn bare_seconds() {
    assert_eq!(parse_duration("90"), Some(90));
    assert_eq!(parse_duration("0"), Some(0));
}

#[test]
fn single_units() {
    assert_eq!(parse_duration("45s"), Some(45));
    assert_eq!(parse_duration("5m"), Some(300));
    assert_eq!(parse_duration("2h"), Some(7_200));
    assert_eq!(parse_duration("1d"), Some(86_400));
}

#[test]
fn combined_units() {
    assert_eq!(parse_duration("1h30m"), Some(5_400));
    assert_eq!(parse_duration("2d4h"), Some(187_200));
    assert_eq!(parse_duration("1h1m1s"), Some(3_661));
}

#[test]
fn surrounding_whitespace() {
    assert_eq!(parse_duration("  10m "), Some(600));
}

#[test]
fn rejects_bad_input() {
    for bad in ["", "   ", "h", "5x", "1h30", "-5s", "1h 30m", "m5"] {
        assert_eq!(parse_duration(bad), None, "{bad:?} should be rejected");
    }
}

#[test]
fn rejects_overflow() {
    assert_eq!(parse_duration("18446744073709551615h"), None);
    assert_eq!(parse_duration("18446744073709551615s1s"), None);
}
