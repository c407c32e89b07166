//! Which brains keep their process warm between turns: a served session's brain answers its
//! next turn without starting a process, until it has been idle too long or too many are warm
//! (the least recently used ends first). The policy only; its owner ends the processes with
//! [`super::BrainCli::release`].

use std::time::{Duration, Instant};

/// How long after its turn a brain is spared from the warm limit.
pub const SETTLING: Duration = Duration::from_secs(2);

/// How long a warm brain may sit idle, and how many may be warm at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarmPolicy {
    pub idle: Duration,
    pub max_warm: usize,
}

impl Default for WarmPolicy {
    fn default() -> Self {
        WarmPolicy {
            idle: Duration::from_secs(600),
            max_warm: 32,
        }
    }
}

/// One brain as the policy sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warmth<K> {
    pub key: K,
    /// When its last turn ended.
    pub used: Instant,
    /// Its process is alive.
    pub warm: bool,
    /// A turn runs on it: never ended by the policy.
    pub busy: bool,
}

impl WarmPolicy {
    /// The brains whose process should end now: every idle one past its time, then the least
    /// recently used until at most `max_warm` stay warm. One whose turn ended less than
    /// [`SETTLING`] ago is spared for the limit: under more sessions than the limit taking
    /// turns in a ring, ending it would only start it again for its next turn.
    pub fn to_end<K: Clone>(&self, brains: &[Warmth<K>], now: Instant) -> Vec<K> {
        let mut warm: Vec<&Warmth<K>> = brains.iter().filter(|b| b.warm).collect();
        warm.sort_by_key(|b| b.used);
        let mut over = warm.len().saturating_sub(self.max_warm);
        let mut end = Vec::new();
        for brain in warm {
            if brain.busy {
                over = over.saturating_sub(1);
                continue;
            }
            let idle_for = now.saturating_duration_since(brain.used);
            if (over > 0 && idle_for >= SETTLING) || idle_for >= self.idle {
                over = over.saturating_sub(1);
                end.push(brain.key.clone());
            }
        }
        end
    }

    /// How often the owner should check: often enough to end an idle brain close to its time.
    pub fn tick(&self) -> Duration {
        (self.idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brain(key: u32, age_s: u64, warm: bool, busy: bool, now: Instant) -> Warmth<u32> {
        Warmth {
            key,
            used: now - Duration::from_secs(age_s),
            warm,
            busy,
        }
    }

    #[test]
    fn idle_brains_end_and_busy_or_cold_ones_are_left_alone() {
        let now = Instant::now() + Duration::from_secs(1000);
        let policy = WarmPolicy {
            idle: Duration::from_secs(60),
            max_warm: 10,
        };
        let brains = [
            brain(1, 120, true, false, now),
            brain(2, 120, true, true, now),
            brain(3, 120, false, false, now),
            brain(4, 5, true, false, now),
        ];
        assert_eq!(policy.to_end(&brains, now), [1]);
    }

    #[test]
    fn past_the_limit_the_least_recently_used_end_first() {
        let now = Instant::now() + Duration::from_secs(1000);
        let policy = WarmPolicy {
            idle: Duration::from_secs(600),
            max_warm: 2,
        };
        let brains = [
            brain(1, 10, true, false, now),
            brain(2, 30, true, true, now),
            brain(3, 20, true, false, now),
            brain(4, 40, true, false, now),
            brain(5, 1, true, false, now),
        ];
        // Five warm, two may stay: 4 (oldest) ends, 2 is busy and counts as one that stays
        // over the limit, then 3 ends; 5 is one second out of its turn, so spared anyway.
        assert_eq!(policy.to_end(&brains, now), [4, 3]);
        let settling = [brain(1, 1, true, false, now), brain(2, 0, true, false, now)];
        let one = WarmPolicy {
            idle: Duration::from_secs(600),
            max_warm: 1,
        };
        assert!(one.to_end(&settling, now).is_empty());
    }
}
