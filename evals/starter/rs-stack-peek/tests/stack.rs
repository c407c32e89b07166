use stack::Stack;

#[test]
fn push_and_pop_are_lifo() {
    let mut s = Stack::new();
    s.push(1);
    s.push(2);
    assert_eq!(s.pop(), Some(2));
    assert_eq!(s.pop(), Some(1));
    assert_eq!(s.pop(), None);
}

#[test]
fn peek_sees_the_top() {
    let mut s = Stack::new();
    assert_eq!(s.peek(), None);
    s.push("a".to_string());
    s.push("b".to_string());
    assert_eq!(s.peek().map(String::as_str), Some("b"));
    assert_eq!(s.peek().map(String::as_str), Some("b"));
    assert_eq!(s.pop().as_deref(), Some("b"));
    assert_eq!(s.peek().map(String::as_str), Some("a"));
}

#[test]
fn peek_mut_changes_the_top() {
    let mut s = Stack::new();
    assert!(s.peek_mut().is_none());
    s.push(10);
    s.push(20);
    if let Some(top) = s.peek_mut() {
        *top += 1;
    }
    assert_eq!(s.pop(), Some(21));
    assert_eq!(s.pop(), Some(10));
}

#[test]
fn len_and_is_empty() {
    // A type with no Clone, Debug or Default: the methods need no bounds.
    struct Opaque;
    let mut s = Stack::new();
    assert!(s.is_empty());
    assert_eq!(s.len(), 0);
    s.push(Opaque);
    s.push(Opaque);
    assert!(!s.is_empty());
    assert_eq!(s.len(), 2);
    s.pop();
    assert_eq!(s.len(), 1);
}
