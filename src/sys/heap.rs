//! Giving freed memory back to the system. glibc keeps freed heap pages for reuse, and a
//! long-running server whose big answers are done holds them for good, interleaved with the
//! small allocations that outlive each turn; `malloc_trim` returns every free page.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Trims at most this often: after a burst of turns one trim does it.
const EVERY_MS: u64 = 1000;

static LAST_MS: AtomicU64 = AtomicU64::new(0);

/// Returns the heap's free pages to the system, unless that was done within the last second.
pub fn give_back() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let last = LAST_MS.load(Ordering::Relaxed);
    if now.saturating_sub(last) < EVERY_MS
        || LAST_MS
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
    {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory malloc holds free.
    unsafe {
        libc::malloc_trim(0);
    }
}
