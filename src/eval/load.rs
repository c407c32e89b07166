//! How many trials run at once: up to `--concurrency`, and another starts only while the
//! machine has room (its load below its CPUs, memory to spare), so a run neither crawls on a
//! laptop nor idles on a big machine.

use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Memory a trial is assumed to need beyond what runs already.
const SPARE_BYTES: u64 = 512 * 1024 * 1024;

/// Waits for a slot, then for room (when other trials run: the first always starts).
pub(super) async fn admit(
    slots: &std::sync::Arc<Semaphore>,
    running: usize,
) -> OwnedSemaphorePermit {
    let permit = loop {
        if let Ok(permit) = slots.clone().acquire_owned().await {
            break permit;
        }
    };
    let mut waited = 0;
    while running > 0 && !room() && waited < 600 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        waited += 1;
    }
    permit
}

fn room() -> bool {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok());
    let available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map(|kib| kib * 1024)
    });
    load.is_none_or(|l| l < cpus * 1.5) && available.is_none_or(|a| a > SPARE_BYTES)
}
