//! Terminal subscriptions: callbacks registered once on a brain handle that outlive every process
//! it boots.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::ExitInfo;
use crate::sys::sync::lock;

/// Called with each chunk of raw output bytes.
pub type DataCallback = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// Called once when a process ends.
pub type ExitCallback = Arc<dyn Fn(ExitInfo) + Send + Sync>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubscriptionId(u64);

/// Terminal size in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermSize {
    pub cols: u16,
    pub rows: u16,
}

impl Default for TermSize {
    fn default() -> Self {
        Self { cols: 80, rows: 24 }
    }
}

/// The callbacks of one brain handle, shared with its reader threads and exit watchers.
#[derive(Default)]
pub(crate) struct Subscribers {
    next: AtomicU64,
    data: Mutex<Vec<(SubscriptionId, DataCallback)>>,
    exit: Mutex<Vec<(SubscriptionId, ExitCallback)>>,
}

impl Subscribers {
    pub(crate) fn on_data(&self, callback: DataCallback) -> SubscriptionId {
        let id = self.id();
        lock(&self.data).push((id, callback));
        id
    }

    pub(crate) fn on_exit(&self, callback: ExitCallback) -> SubscriptionId {
        let id = self.id();
        lock(&self.exit).push((id, callback));
        id
    }

    pub(crate) fn unsubscribe(&self, id: SubscriptionId) -> bool {
        let mut found = false;
        lock(&self.data).retain(|(i, _)| {
            found |= *i == id;
            *i != id
        });
        lock(&self.exit).retain(|(i, _)| {
            found |= *i == id;
            *i != id
        });
        found
    }

    // Callbacks run on a snapshot taken outside the lock, so one may subscribe or call back
    // into the brain without deadlocking.
    pub(crate) fn data(&self, chunk: &[u8]) {
        let callbacks: Vec<DataCallback> =
            lock(&self.data).iter().map(|(_, c)| c.clone()).collect();
        for callback in callbacks {
            callback(chunk);
        }
    }

    pub(crate) fn exit(&self, info: ExitInfo) {
        let callbacks: Vec<ExitCallback> =
            lock(&self.exit).iter().map(|(_, c)| c.clone()).collect();
        for callback in callbacks {
            callback(info);
        }
    }

    fn id(&self) -> SubscriptionId {
        SubscriptionId(self.next.fetch_add(1, Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callbacks_fire_until_unsubscribed() {
        let subs = Subscribers::default();
        let seen = Arc::new(Mutex::new(Vec::<u8>::new()));
        let exits = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let data_id = subs.on_data(Arc::new(move |b| s.lock().unwrap().extend_from_slice(b)));
        let e = exits.clone();
        let exit_id = subs.on_exit(Arc::new(move |i| e.lock().unwrap().push(i)));
        assert_ne!(data_id, exit_id);

        subs.data(b"ab");
        let info = ExitInfo {
            code: Some(0),
            signal: None,
        };
        subs.exit(info);
        assert!(subs.unsubscribe(data_id));
        assert!(!subs.unsubscribe(data_id));
        subs.data(b"cd");
        assert_eq!(*seen.lock().unwrap(), b"ab");
        assert_eq!(*exits.lock().unwrap(), vec![info]);
    }
}
