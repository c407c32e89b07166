//! Giving freed memory back to the system. glibc keeps freed heap pages for reuse, and a
//! long-running server whose big answers are done holds them for good, interleaved with the
//! small allocations that outlive each turn; `malloc_trim` returns every free page.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Trims at most this often: after a burst of turns one trim does it.
const EVERY_MS: u64 = 1000;

static LAST_MS: AtomicU64 = AtomicU64::new(0);

/// A trim is due after the current one: the last of a burst of calls is never skipped.
static SCHEDULED: AtomicBool = AtomicBool::new(false);

/// Returns the heap's free pages to the system: now, or, when that was done within the last
/// second, once the second is up (so memory freed by the last of many turns goes back too).
pub fn give_back() {
    let now = now_ms();
    let last = LAST_MS.load(Ordering::Relaxed);
    if now.saturating_sub(last) >= EVERY_MS
        && LAST_MS
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        trim();
        return;
    }
    if !SCHEDULED.swap(true, Ordering::Relaxed) {
        std::thread::spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(EVERY_MS));
            SCHEDULED.store(false, Ordering::Relaxed);
            LAST_MS.store(now_ms(), Ordering::Relaxed);
            trim();
        });
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory malloc holds free.
    unsafe {
        libc::malloc_trim(0);
    }
}
