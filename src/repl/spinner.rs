//! The "still working" indicator: a braille frame, what ouro waits for, and elapsed seconds.

use std::time::Instant;

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

#[derive(Debug, Clone)]
pub(super) struct Spinner {
    started: Instant,
    label: String,
    frame: usize,
}

impl Spinner {
    pub(super) fn new(label: impl Into<String>) -> Spinner {
        Spinner {
            started: Instant::now(),
            label: label.into(),
            frame: 0,
        }
    }

    pub(super) fn label(&self) -> &str {
        &self.label
    }

    /// The next frame to draw; each call advances the animation.
    pub(super) fn next_frame(&mut self) -> String {
        let glyph = FRAMES[self.frame % FRAMES.len()];
        self.frame = self.frame.wrapping_add(1);
        format!(
            "{glyph} {}… {}s  (Esc to interrupt)",
            self.label,
            self.started.elapsed().as_secs()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_advance_and_show_label_and_seconds() {
        let mut s = Spinner::new("Thinking");
        let a = s.next_frame();
        let b = s.next_frame();
        assert_ne!(a, b);
        assert!(a.contains("Thinking… 0s"), "{a}");
        assert_eq!(s.label(), "Thinking");
    }
}
