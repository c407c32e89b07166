//! The diffs a change is shown with: after it ran, and in the permission question before.

use std::time::Duration;

use similar::TextDiff;

const MAX_DIFF_LINES: usize = 60;
const MAX_DIFF_LINE_CHARS: usize = 300;

/// A unified diff with 3 lines of context, cut to a few dozen lines.
pub fn excerpt(old: &str, new: &str) -> String {
    let (old, new) = (old.replace("\r\n", "\n"), new.replace("\r\n", "\n"));
    let diff = TextDiff::configure()
        .timeout(Duration::from_millis(500))
        .diff_lines(&old, &new);
    let text = diff.unified_diff().context_radius(3).to_string();
    let total = text.lines().count();
    let mut out: Vec<String> = text
        .lines()
        .take(MAX_DIFF_LINES)
        .map(|line| crate::text::truncate(line, MAX_DIFF_LINE_CHARS))
        .collect();
    if total > MAX_DIFF_LINES {
        out.push(format!(
            "… ({} more diff lines not shown)",
            total - MAX_DIFF_LINES
        ));
    }
    out.join("\n")
}
