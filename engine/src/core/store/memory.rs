//! The in-memory store: an ordered map of versioned values. Used by the engine's own tests, the
//! in-process contract runner, and (wrapped with IndexedDB persistence) by the browser host.
//!
//! # Snapshots
//!
//! Every commit gets the next number of a commit counter. Each key keeps its newest version and,
//! while some open reader may still need them, the older versions it replaced (a delete is a
//! version without a value, a tombstone). A [`ReadTxn`] takes the counter's value when it begins
//! and, for its whole life, sees for every key the newest version written at or before that
//! number, so writers keep committing while it reads one consistent state. Open readers are
//! registered by their number; after each commit the versions no open reader can see any more are
//! dropped (the keys a commit made older versions or tombstones for are queued for that).
//!
//! Why versioned values rather than a persistent map with structural sharing (an `imbl` `OrdMap`,
//! say): a get or scan stays a plain `BTreeMap` lookup, a commit changes only the keys it wrote,
//! in place, opening the store is one bulk build of a `BTreeMap` from sorted pairs, and there is no
//! extra dependency. The price is a read lock per get or scan (never held across calls) and a short
//! moment in each commit during which reads wait while the change set is applied. Figures:
//! `cargo run --release -p engine --example memstore_figures`.
//!
//! Writers are serialized: one [`WriteTxn`] at a time, [`Store::begin_write`] waits for the running
//! one to end. So a commit never conflicts and [`StoreError::Conflict`] never comes from this store.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use super::{Direction, KeyValue, Overlay, ReadTxn, Store, StoreError, WriteTxn};

/// A committed change set: `(key, Some(value))` for puts, `(key, None)` for deletes.
pub type ChangeSet = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// Called with each committed change set, before the commit becomes visible; an error aborts it.
pub type CommitHook = Box<dyn Fn(&ChangeSet) -> Result<(), StoreError> + Send + Sync>;

/// The number of a commit; a reader sees every version with a number at most its own.
type Seq = u64;

/// One version of a key: the commit that wrote it and the value (`None`: deleted).
struct Version {
    at: Seq,
    value: Option<Vec<u8>>,
}

/// The versions of one key: the newest, and older ones an open reader may still see (oldest first).
struct Versions {
    newest: Version,
    older: Vec<Version>,
}

impl Versions {
    /// The value a reader of snapshot `snap` sees (`None`: absent or deleted at `snap`).
    fn at(&self, snap: Seq) -> Option<&Vec<u8>> {
        if self.newest.at <= snap {
            return self.newest.value.as_ref();
        }
        self.older
            .iter()
            .rev()
            .find(|v| v.at <= snap)
            .and_then(|v| v.value.as_ref())
    }

    /// Drop the versions no reader of a snapshot `>= horizon` can see. Returns false when nothing
    /// is left to keep (the key's newest version is a tombstone every reader sees).
    fn prune(&mut self, horizon: Seq) -> bool {
        if self.newest.at <= horizon {
            self.older.clear();
            return self.newest.value.is_some();
        }
        // keep the newest older version visible at `horizon` and everything after it
        if let Some(i) = self.older.iter().rposition(|v| v.at <= horizon) {
            self.older.drain(..i);
        }
        true
    }
}

/// The versioned data: changed only by commits, under the write lock.
#[derive(Default)]
struct Data {
    map: BTreeMap<Vec<u8>, Versions>,
    /// Keys whose newest version is not a tombstone.
    live: usize,
    /// Keys that got older versions or a tombstone, with the commit that did it, in commit order:
    /// pruned once every open reader's snapshot is at least that commit.
    garbage: VecDeque<(Seq, Vec<u8>)>,
}

/// The commit counter and the snapshots of open readers.
#[derive(Default)]
struct Clock {
    committed: Seq,
    /// Snapshot number -> how many open readers hold it.
    readers: BTreeMap<Seq, usize>,
}

#[derive(Default)]
struct Inner {
    data: RwLock<Data>,
    clock: Mutex<Clock>,
    writer: Mutex<()>,
    hook: RwLock<Option<CommitHook>>,
}

/// An ordered in-memory key-value store with snapshot reads and serialized writers (see the
/// module documentation).
#[derive(Clone, Default)]
pub struct MemStore {
    inner: Arc<Inner>,
}

impl MemStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store holding `pairs` (for example loaded from a persistent backend at open). When a key
    /// occurs more than once, the last pair wins.
    pub fn from_pairs(pairs: impl IntoIterator<Item = KeyValue>) -> Self {
        let map: BTreeMap<Vec<u8>, Versions> = pairs
            .into_iter()
            .map(|(k, v)| {
                let newest = Version {
                    at: 0,
                    value: Some(v),
                };
                (
                    k,
                    Versions {
                        newest,
                        older: Vec::new(),
                    },
                )
            })
            .collect();
        let live = map.len();
        MemStore {
            inner: Arc::new(Inner {
                data: RwLock::new(Data {
                    map,
                    live,
                    garbage: VecDeque::new(),
                }),
                ..Inner::default()
            }),
        }
    }

    /// Install a hook that sees every committed change set (the browser host persists it).
    pub fn set_commit_hook(&self, hook: Option<CommitHook>) {
        if let Ok(mut h) = self.inner.hook.write() {
            *h = hook;
        }
    }

    /// Number of keys stored (in the latest committed state).
    pub fn len(&self) -> usize {
        self.inner.data.read().map(|d| d.live).unwrap_or(0)
    }

    /// True when no key is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Apply an externally committed change set (another tab's writes) to this copy, as one
    /// commit (waiting for a running write transaction; the commit hook is not called).
    pub fn apply(&self, changes: &ChangeSet) -> Result<(), StoreError> {
        let _w = lock(&self.inner.writer);
        self.inner.commit_changes(changes)
    }
}

fn poisoned<T>(_: T) -> StoreError {
    StoreError::Backend("memory store lock poisoned".into())
}

/// The writer lock guards no data (a write transaction buffers its writes in its own overlay), so
/// a writer that panicked leaves nothing inconsistent behind and its poisoned lock is taken over.
fn lock(m: &Mutex<()>) -> MutexGuard<'_, ()> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Inner {
    /// The clock holds two plain fields that every update leaves consistent, so a poisoned lock
    /// (a panic elsewhere while holding it) is safe to keep using.
    fn clock(&self) -> MutexGuard<'_, Clock> {
        self.clock.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Make `changes` the next commit. The caller holds the writer lock.
    fn commit_changes(&self, changes: &ChangeSet) -> Result<(), StoreError> {
        if changes.is_empty() {
            return Ok(());
        }
        let mut data = self.data.write().map_err(poisoned)?;
        let at = self.clock().committed + 1;
        let Data { map, live, garbage } = &mut *data;
        for (k, v) in changes {
            let version = Version {
                at,
                value: v.clone(),
            };
            if let Some(versions) = map.get_mut(k) {
                match (versions.newest.value.is_some(), v.is_some()) {
                    (true, false) => *live -= 1,
                    (false, true) => *live += 1,
                    _ => {}
                }
                let old = std::mem::replace(&mut versions.newest, version);
                versions.older.push(old);
                garbage.push_back((at, k.clone()));
            } else if v.is_some() {
                *live += 1;
                map.insert(
                    k.clone(),
                    Versions {
                        newest: version,
                        older: Vec::new(),
                    },
                );
            }
            // deleting an absent key changes nothing any snapshot can see
        }
        // Publish the commit, then drop what no open reader can see any more. A reader that
        // begins from here on has a snapshot of at least `at`; one that began before it holds
        // `horizon` down. Readers wait on `data` until this commit is complete.
        let horizon = {
            let mut clock = self.clock();
            clock.committed = at;
            clock.readers.keys().next().copied().unwrap_or(at)
        };
        while let Some((seq, _)) = garbage.front() {
            if *seq > horizon {
                break;
            }
            let Some((_, key)) = garbage.pop_front() else {
                break;
            };
            let keep = match map.get_mut(&key) {
                Some(versions) => versions.prune(horizon),
                None => true,
            };
            if !keep {
                map.remove(&key);
            }
        }
        Ok(())
    }
}

fn scan_map(
    map: &BTreeMap<Vec<u8>, Versions>,
    snap: Seq,
    start: &[u8],
    end: &[u8],
    dir: Direction,
    limit: usize,
) -> Vec<KeyValue> {
    if super::scan_is_empty(start, end, limit) {
        return Vec::new();
    }
    let upper = if end.is_empty() {
        Bound::Unbounded
    } else {
        Bound::Excluded(end)
    };
    let range = map.range::<[u8], _>((Bound::Included(start), upper));
    let visible = |(k, v): (&Vec<u8>, &Versions)| v.at(snap).map(|v| (k.clone(), v.clone()));
    match dir {
        Direction::Forward => range.filter_map(visible).take(limit).collect(),
        Direction::Reverse => range.rev().filter_map(visible).take(limit).collect(),
    }
}

impl Store for MemStore {
    fn begin_read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        let mut clock = self.inner.clock();
        let snap = clock.committed;
        *clock.readers.entry(snap).or_insert(0) += 1;
        Ok(Box::new(MemRead {
            inner: &self.inner,
            snap,
        }))
    }

    fn begin_write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        let guard = lock(&self.inner.writer);
        Ok(Box::new(MemWrite {
            store: self,
            _guard: guard,
            overlay: Overlay::default(),
        }))
    }
}

/// A read transaction: sees the versions committed up to `snap`.
struct MemRead<'a> {
    inner: &'a Inner,
    snap: Seq,
}

impl ReadTxn for MemRead<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let data = self.inner.data.read().map_err(poisoned)?;
        Ok(data.map.get(key).and_then(|v| v.at(self.snap)).cloned())
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        dir: Direction,
        limit: usize,
    ) -> Result<Vec<KeyValue>, StoreError> {
        let data = self.inner.data.read().map_err(poisoned)?;
        Ok(scan_map(&data.map, self.snap, start, end, dir, limit))
    }
}

impl Drop for MemRead<'_> {
    fn drop(&mut self) {
        let mut clock = self.inner.clock();
        if let Some(n) = clock.readers.get_mut(&self.snap) {
            *n -= 1;
            if *n == 0 {
                clock.readers.remove(&self.snap);
            }
        }
    }
}

/// The write transaction. It holds the writer lock, so nothing commits while it runs and the
/// newest versions are exactly the state it began on.
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
        Ok(data.map.get(key).and_then(|v| v.at(Seq::MAX)).cloned())
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
            Ok(scan_map(&data.map, Seq::MAX, start, end, dir, n))
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
        self.store.inner.commit_changes(&changes)
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

    /// (keys with older versions, tombstones, garbage queue length)
    fn leftovers(s: &MemStore) -> (usize, usize, usize) {
        let d = s.inner.data.read().unwrap();
        let older = d.map.values().filter(|v| !v.older.is_empty()).count();
        let tombstones = d.map.values().filter(|v| v.newest.value.is_none()).count();
        (older, tombstones, d.garbage.len())
    }

    #[test]
    fn versions_no_reader_can_see_are_dropped() {
        let s = MemStore::new();
        let mut w = s.begin_write().unwrap();
        for k in [b"a", b"b", b"c"] {
            w.put(k, b"1").unwrap();
        }
        w.commit().unwrap();
        // no reader open: a commit keeps nothing old
        let mut w = s.begin_write().unwrap();
        w.put(b"a", b"2").unwrap();
        w.delete(b"c").unwrap();
        w.commit().unwrap();
        assert_eq!(leftovers(&s), (0, 0, 0));
        assert_eq!(s.len(), 2);

        let r = s.begin_read().unwrap();
        let mut w = s.begin_write().unwrap();
        w.put(b"a", b"3").unwrap();
        w.delete(b"b").unwrap();
        w.commit().unwrap();
        // the reader still needs the old versions of a and b
        assert_eq!(leftovers(&s), (2, 1, 2));
        assert_eq!(s.len(), 1);
        assert_eq!(r.get(b"a").unwrap(), Some(b"2".to_vec()));
        assert_eq!(r.get(b"b").unwrap(), Some(b"1".to_vec()));
        drop(r);
        // the next commit drops them
        let mut w = s.begin_write().unwrap();
        w.put(b"d", b"1").unwrap();
        w.commit().unwrap();
        assert_eq!(leftovers(&s), (0, 0, 0));
        let rows = s
            .begin_read()
            .unwrap()
            .scan(b"", b"", Direction::Forward, 10)
            .unwrap();
        assert_eq!(keys(&rows), vec![&b"a"[..], b"d"]);
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
