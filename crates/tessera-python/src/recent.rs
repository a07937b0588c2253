//! A few recent values by key, for what a `Program` reuses between calls (bound programs,
//! plans, prepared executables): a short list searched linearly, the oldest dropped first.

use std::sync::{Mutex, MutexGuard};

/// At most `capacity` values by key, most recent last.
pub struct Recent<K, V> {
    capacity: usize,
    entries: Mutex<Vec<(K, V)>>,
}

impl<K: PartialEq, V> Recent<K, V> {
    /// An empty list that keeps `capacity` values.
    pub fn new(capacity: usize) -> Recent<K, V> {
        Recent {
            capacity,
            entries: Mutex::new(Vec::new()),
        }
    }

    /// The entries (a panic in another thread while it held them leaves them usable).
    fn entries(&self) -> MutexGuard<'_, Vec<(K, V)>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Removes and returns the latest value of `key`.
    pub fn take(&self, key: &K) -> Option<V> {
        let mut entries = self.entries();
        let index = entries.iter().rposition(|(k, _)| k == key)?;
        Some(entries.remove(index).1)
    }

    /// A copy of the latest value of `key`.
    pub fn get(&self, key: &K) -> Option<V>
    where
        V: Clone,
    {
        let entries = self.entries();
        entries
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    /// Adds `value` under `key`, dropping the oldest entry beyond the capacity.
    pub fn put(&self, key: K, value: V) {
        let mut entries = self.entries();
        entries.push((key, value));
        if entries.len() > self.capacity {
            entries.remove(0);
        }
    }
}
