//! Guards. A poisoned lock is taken over (a panic in one request must not wedge every later one:
//! the data behind these locks is valid after any panic), and a task handle aborts its task
//! when dropped (cancel drops the future that owns it).

use std::sync::{Mutex, MutexGuard};

/// Lock `m`, ignoring poisoning.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Aborts a task when dropped.
pub struct AbortOnDrop(pub tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs `f` when dropped (on every path out of a scope, a cancel included).
pub struct OnDrop<F: FnMut()>(pub F);

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}
