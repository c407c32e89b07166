//! The run's progress on stderr: one line redrawn in a terminal (trials done, passing, cost so
//! far), one line per finished trial otherwise.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use super::results::{Status, Trial};
use crate::sys::sync::lock;

pub(super) struct Progress {
    total: usize,
    tty: bool,
    state: Mutex<(usize, usize, f64)>,
}

impl Progress {
    pub(super) fn new(total: usize) -> Progress {
        let progress = Progress {
            total,
            tty: std::io::stderr().is_terminal(),
            state: Mutex::new((0, 0, 0.0)),
        };
        progress.draw(0, 0, 0.0, None);
        progress
    }

    pub(super) fn done(&self, trial: &Trial) {
        let (done, passing, cost) = {
            let mut state = lock(&self.state);
            state.0 += 1;
            state.1 += usize::from(trial.status == Status::Passed);
            state.2 += trial.cost_usd;
            *state
        };
        self.draw(done, passing, cost, Some(trial));
    }

    fn draw(&self, done: usize, passing: usize, cost: f64, trial: Option<&Trial>) {
        let total = self.total.max(1);
        let width = 24;
        let filled = done * width / total;
        let bar = format!("{}{}", "#".repeat(filled), "-".repeat(width - filled));
        let line = format!(
            "eval [{bar}] {done}/{} trials, {passing} passing, ${cost:.4}",
            self.total
        );
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r{line}");
        } else if let Some(t) = trial {
            let status = serde_json::to_value(t.status).unwrap_or_default();
            let _ = writeln!(
                err,
                "{line}: {} #{} {}",
                t.task,
                t.trial,
                status.as_str().unwrap_or_default()
            );
        }
        let _ = err.flush();
    }

    pub(super) fn finish(&self) {
        if self.tty {
            let _ = writeln!(std::io::stderr());
        }
    }
}
