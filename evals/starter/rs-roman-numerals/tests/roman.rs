use roman::to_roman;

fn r(n: u32) -> String {
    to_roman(n).unwrap_or_else(|| panic!("to_roman({n}) returned None"))
}

#[test]
fn additive_forms() {
    assert_eq!(r(1), "I");
    assert_eq!(r(3), "III");
    assert_eq!(r(8), "VIII");
    assert_eq!(r(2023), "MMXXIII");
}

#[test]
fn subtractive_forms() {
    assert_eq!(r(4), "IV");
    assert_eq!(r(9), "IX");
    assert_eq!(r(14), "XIV");
    assert_eq!(r(40), "XL");
    assert_eq!(r(90), "XC");
    assert_eq!(r(400), "CD");
    assert_eq!(r(900), "CM");
}

#[test]
fn larger_numbers() {
    assert_eq!(r(1994), "MCMXCIV");
    assert_eq!(r(2024), "MMXXIV");
    assert_eq!(r(3999), "MMMCMXCIX");
}

#[test]
fn out_of_range() {
    assert_eq!(to_roman(0), None);
    assert_eq!(to_roman(4000), None);
}
