//! How long to wait before sending a failed request again.

use std::time::Duration;

use rand::Rng;

use super::client::ApiError;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base: Duration,
    pub cap: Duration,
    /// The shortest wait, whatever `retry-after` says: `retry-after: 0` must not turn into a
    /// burst of requests.
    pub(crate) min_retry_after: Duration,
    /// The longest `retry-after` obeyed; a longer one fails the call with the time to retry.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 10,
            base: Duration::from_millis(500),
            cap: Duration::from_secs(32),
            min_retry_after: Duration::from_secs(1),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Send the request again after this long.
    Retry(Duration),
    /// The server asked for a longer pause than ouro waits in a session.
    TooLong(Duration),
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1-based). A server's `retry-after` is obeyed
    /// (within `min_retry_after..=max_retry_after`); otherwise exponential backoff with ±25%
    /// jitter so many clients do not retry in lockstep.
    pub fn delay(&self, attempt: u32, error: &ApiError) -> Wait {
        if let Some(wait) = error.retry_after() {
            if wait > self.max_retry_after {
                return Wait::TooLong(wait);
            }
            return Wait::Retry(wait.max(self.min_retry_after));
        }
        let exp = self.base.as_secs_f64() * 2f64.powi(attempt.saturating_sub(1).min(30) as i32);
        let jitter = rand::rng().random_range(0.75..1.25);
        Wait::Retry(Duration::from_secs_f64(
            (exp * jitter).min(self.cap.as_secs_f64()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16, retry_after: Option<Duration>) -> ApiError {
        ApiError::Status {
            status,
            kind: String::new(),
            message: String::new(),
            retry_after,
        }
    }

    #[test]
    fn retry_after_is_obeyed_within_its_bounds() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.delay(3, &status(429, Some(Duration::from_secs(7)))),
            Wait::Retry(Duration::from_secs(7))
        );
        for short in [0, 10, 999] {
            assert_eq!(
                p.delay(1, &status(429, Some(Duration::from_millis(short)))),
                Wait::Retry(Duration::from_secs(1)),
                "{short} ms"
            );
        }
        assert_eq!(
            p.delay(1, &status(429, Some(Duration::from_secs(3600)))),
            Wait::TooLong(Duration::from_secs(3600))
        );
    }

    fn retry(wait: Wait) -> Duration {
        match wait {
            Wait::Retry(d) => d,
            Wait::TooLong(d) => panic!("too long: {d:?}"),
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let p = RetryPolicy::default();
        for attempt in 1..=4u32 {
            let expected = 0.5 * 2f64.powi(attempt as i32 - 1);
            let d = retry(p.delay(attempt, &status(529, None))).as_secs_f64();
            assert!(
                d >= expected * 0.75 && d <= expected * 1.25,
                "attempt {attempt}: {d}"
            );
        }
        assert!(retry(p.delay(20, &status(500, None))) <= Duration::from_secs(32));
    }
}
