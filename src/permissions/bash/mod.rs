//! Shell command analysis on the tree-sitter-bash AST.

/// Whether a command only reads (and so may run in parallel with other reads).
/// Fails closed until the analyser judges otherwise.
pub fn is_read_only_command(_command: &str) -> bool {
    false
}
