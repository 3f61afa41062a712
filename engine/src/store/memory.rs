//! The in-memory store: a `BTreeMap` behind a lock. Used by the engine's own tests, the in-process
//! contract runner, and (wrapped with IndexedDB persistence) by the browser host.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use super::{Direction, KeyValue, Overlay, ReadTxn, Store, StoreError, WriteTxn};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// A committed change set: `(key, Some(value))` for puts, `(key, None)` for deletes.
pub type ChangeSet = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// Called with each committed change set, before the commit becomes visible; an error aborts it.
pub type CommitHook = Box<dyn Fn(&ChangeSet) -> Result<(), StoreError> + Send + Sync>;

/// An ordered in-memory key-value store with serialized writers.
#[derive(Clone, Default)]
pub struct MemStore {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    data: RwLock<Map>,
    writer: Mutex<()>,
    hook: RwLock<Option<CommitHook>>,
}

impl MemStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store holding `pairs` (for example loaded from a persistent backend at open).
    pub fn from_pairs(pairs: impl IntoIterator<Item = KeyValue>) -> Self {
        let store = Self::default();
        if let Ok(mut data) = store.inner.data.write() {
            data.extend(pairs);
        }
        store
    }

    /// Install a hook that sees every committed change set (the browser host persists it).
    pub fn set_commit_hook(&self, hook: Option<CommitHook>) {
        if let Ok(mut h) = self.inner.hook.write() {
            *h = hook;
        }
    }

    /// Number of keys stored.
    pub fn len(&self) -> usize {
        self.inner.data.read().map(|d| d.len()).unwrap_or(0)
    }

    /// True when no key is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Apply an externally committed change set (another tab's writes) to this copy.
    pub fn apply(&self, changes: &ChangeSet) -> Result<(), StoreError> {
        let _w = lock(&self.inner.writer)?;
        let mut data = self.inner.data.write().map_err(poisoned)?;
        apply_changes(&mut data, changes);
        Ok(())
    }
}

fn poisoned<T>(_: T) -> StoreError {
    StoreError::Backend("memory store lock poisoned".into())
}

fn lock(m: &Mutex<()>) -> Result<MutexGuard<'_, ()>, StoreError> {
    m.lock().map_err(poisoned)
}

fn apply_changes(data: &mut Map, changes: &ChangeSet) {
    for (k, v) in changes {
        match v {
            Some(v) => {
                data.insert(k.clone(), v.clone());
            }
            None => {
                data.remove(k);
            }
        }
    }
}

fn scan_map(map: &Map, start: &[u8], end: &[u8], dir: Direction, limit: usize) -> Vec<KeyValue> {
    let upper = if end.is_empty() {
        Bound::Unbounded
    } else {
        Bound::Excluded(end.to_vec())
    };
    let range = map.range::<Vec<u8>, _>((Bound::Included(start.to_vec()), upper));
    let clone = |(k, v): (&Vec<u8>, &Vec<u8>)| (k.clone(), v.clone());
    match dir {
        Direction::Forward => range.take(limit).map(clone).collect(),
        Direction::Reverse => range.rev().take(limit).map(clone).collect(),
    }
}

impl Store for MemStore {
    fn begin_read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        Ok(Box::new(MemRead { store: self }))
    }

    fn begin_write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        let guard = lock(&self.inner.writer)?;
        Ok(Box::new(MemWrite {
            store: self,
            _guard: guard,
            overlay: Overlay::default(),
        }))
    }
}

/// Reads see the latest committed state. Writes are applied atomically under the write lock, so a
/// single read never observes half a commit.
struct MemRead<'a> {
    store: &'a MemStore,
}

impl ReadTxn for MemRead<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let data = self.store.inner.data.read().map_err(poisoned)?;
        Ok(data.get(key).cloned())
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        dir: Direction,
        limit: usize,
    ) -> Result<Vec<KeyValue>, StoreError> {
        let data = self.store.inner.data.read().map_err(poisoned)?;
        Ok(scan_map(&data, start, end, dir, limit))
    }
}

struct MemWrite<'a> {
    store: &'a MemStore,
    _guard: MutexGuard<'a, ()>,
    overlay: Overlay,
}

impl ReadTxn for MemWrite<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        if let Some(v) = self.overlay.lookup(key) {
            return Ok(v.map(<[u8]>::to_vec));
        }
        let data = self.store.inner.data.read().map_err(poisoned)?;
        Ok(data.get(key).cloned())
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        dir: Direction,
        limit: usize,
    ) -> Result<Vec<KeyValue>, StoreError> {
        let data = self.store.inner.data.read().map_err(poisoned)?;
        self.overlay.merge_scan(start, end, dir, limit, |n| {
            Ok(scan_map(&data, start, end, dir, n))
        })
    }
}

impl WriteTxn for MemWrite<'_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.overlay.put(key, value);
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> Result<(), StoreError> {
        self.overlay.delete(key);
        Ok(())
    }

    fn commit(self: Box<Self>) -> Result<(), StoreError> {
        if self.overlay.is_empty() {
            return Ok(());
        }
        let changes = self.overlay.into_changes();
        if let Some(hook) = self.store.inner.hook.read().map_err(poisoned)?.as_ref() {
            hook(&changes)?;
        }
        let mut data = self.store.inner.data.write().map_err(poisoned)?;
        apply_changes(&mut data, &changes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(rows: &[KeyValue]) -> Vec<&[u8]> {
        rows.iter().map(|(k, _)| k.as_slice()).collect()
    }

    #[test]
    fn uncommitted_writes_are_discarded() {
        let s = MemStore::new();
        {
            let mut w = s.begin_write().unwrap();
            w.put(b"a", b"1").unwrap();
            assert_eq!(w.get(b"a").unwrap(), Some(b"1".to_vec()));
        }
        assert_eq!(s.begin_read().unwrap().get(b"a").unwrap(), None);
    }

    #[test]
    fn scan_merges_overlay_with_base_in_both_directions() {
        let s = MemStore::new();
        let mut w = s.begin_write().unwrap();
        for k in [b"a", b"c", b"e", b"g"] {
            w.put(k, b"x").unwrap();
        }
        w.commit().unwrap();
        let mut w = s.begin_write().unwrap();
        w.delete(b"c").unwrap();
        w.put(b"d", b"y").unwrap();
        let fwd = w.scan(b"a", b"z", Direction::Forward, 10).unwrap();
        assert_eq!(keys(&fwd), vec![&b"a"[..], b"d", b"e", b"g"]);
        let rev = w.scan(b"a", b"z", Direction::Reverse, 2).unwrap();
        assert_eq!(keys(&rev), vec![&b"g"[..], b"e"]);
        let lim = w.scan(b"a", b"", Direction::Forward, 2).unwrap();
        assert_eq!(keys(&lim), vec![&b"a"[..], b"d"]);
        w.commit().unwrap();
        let r = s.begin_read().unwrap();
        assert_eq!(r.get(b"c").unwrap(), None);
        assert_eq!(r.get(b"d").unwrap(), Some(b"y".to_vec()));
    }

    #[test]
    fn failing_commit_hook_aborts_the_commit() {
        let s = MemStore::new();
        s.set_commit_hook(Some(Box::new(|_| {
            Err(StoreError::QuotaExceeded("full".into()))
        })));
        let mut w = s.begin_write().unwrap();
        w.put(b"a", b"1").unwrap();
        assert!(w.commit().is_err());
        assert_eq!(s.begin_read().unwrap().get(b"a").unwrap(), None);
    }
}
