//! Start-up work begun early and taken later: on a thread of its own when it is slow (loading
//! the system's CA certificates, running git), done on the spot when it is not. Starting a
//! thread costs more than quick work, and a session's first request waits for both.

use std::thread::JoinHandle;

pub enum Job<T> {
    Done(T),
    Running(JoinHandle<T>),
}

impl<T: Send + 'static> Job<T> {
    pub fn start(slow: bool, work: impl FnOnce() -> T + Send + 'static) -> Self {
        if slow {
            Job::Running(std::thread::spawn(work))
        } else {
            Job::Done(work())
        }
    }

    /// The work's result; `None` when its thread panicked.
    pub fn finish(self) -> Option<T> {
        match self {
            Job::Done(value) => Some(value),
            Job::Running(thread) => thread.join().ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_work_is_done_on_the_spot_and_slow_work_on_a_thread() {
        let caller = std::thread::current().id();
        let quick = Job::start(false, move || std::thread::current().id() == caller);
        assert!(matches!(quick, Job::Done(true)));
        let slow = Job::start(true, move || std::thread::current().id() == caller);
        assert!(matches!(slow, Job::Running(_)));
        assert_eq!(slow.finish(), Some(false));
    }

    #[test]
    fn a_panicking_thread_is_reported_not_spread() {
        let slow: Job<()> = Job::start(true, || panic!("gone"));
        assert_eq!(slow.finish(), None);
    }
}
