//! Locking a mutex whose holder may have panicked. Everything ouro keeps behind a std mutex
//! stays valid when a holder panics mid-way (lists, slots, pending answers), so the lock is
//! taken anyway rather than spreading the panic.

use std::sync::{Mutex, MutexGuard, PoisonError};

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
