//! The store conformance suite on [`MemStore`], and proof that the suite catches broken stores.

use engine::core::store::conformance;
use engine::core::store::{KeyValue, Overlay};
use engine::{Direction, MemStore, ReadTxn, Store, StoreError, WriteTxn};

#[test]
fn mem_store_conforms() {
    conformance::run_all(MemStore::new);
}

#[test]
fn mem_store_with_a_commit_hook_conforms() {
    // like the browser host: a hook that reads the before-image of every change set
    conformance::run_all(|| {
        let store = MemStore::new();
        let reader = store.clone();
        store.set_commit_hook(Some(Box::new(move |changes| {
            let txn = reader.begin_read()?;
            for key in changes.keys() {
                txn.get(key)?;
            }
            Ok(())
        })));
        store
    });
}

/// A store whose readers see the latest commit at every call (what `MemStore` did before it kept
/// snapshots).
struct NoSnapshot(MemStore);

struct LatestRead<'a>(&'a MemStore);

impl ReadTxn for LatestRead<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.begin_read()?.get(key)
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        dir: Direction,
        limit: usize,
    ) -> Result<Vec<KeyValue>, StoreError> {
        self.0.begin_read()?.scan(start, end, dir, limit)
    }
}

impl Store for NoSnapshot {
    fn begin_read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        Ok(Box::new(LatestRead(&self.0)))
    }

    fn begin_write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        self.0.begin_write()
    }
}

/// A store whose reverse scans return the first pairs of the range instead of the last ones.
struct ReverseFromTheStart(MemStore);

struct ReverseRead<'a>(Box<dyn ReadTxn + 'a>);

impl ReadTxn for ReverseRead<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.get(key)
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        dir: Direction,
        limit: usize,
    ) -> Result<Vec<KeyValue>, StoreError> {
        let mut rows = self.0.scan(start, end, Direction::Forward, limit)?;
        if dir == Direction::Reverse {
            rows.reverse();
        }
        Ok(rows)
    }
}

impl Store for ReverseFromTheStart {
    fn begin_read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        Ok(Box::new(ReverseRead(self.0.begin_read()?)))
    }

    fn begin_write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        self.0.begin_write()
    }
}

/// A store that lets writers run at once, like an optimistic one, but never detects a conflict:
/// each commit is applied blindly over whatever the others committed.
struct NoConflictDetection(MemStore);

struct BlindWrite<'a> {
    store: &'a MemStore,
    snapshot: Box<dyn ReadTxn + 'a>,
    overlay: Overlay,
}

impl ReadTxn for BlindWrite<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        match self.overlay.lookup(key) {
            Some(v) => Ok(v.map(<[u8]>::to_vec)),
            None => self.snapshot.get(key),
        }
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        dir: Direction,
        limit: usize,
    ) -> Result<Vec<KeyValue>, StoreError> {
        self.overlay.merge_scan(start, end, dir, limit, |n| {
            self.snapshot.scan(start, end, dir, n)
        })
    }
}

impl WriteTxn for BlindWrite<'_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.overlay.put(key, value);
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> Result<(), StoreError> {
        self.overlay.delete(key);
        Ok(())
    }

    fn commit(self: Box<Self>) -> Result<(), StoreError> {
        let BlindWrite { store, overlay, .. } = *self;
        store.apply(&overlay.into_changes())
    }
}

impl Store for NoConflictDetection {
    fn begin_read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        self.0.begin_read()
    }

    fn begin_write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        Ok(Box::new(BlindWrite {
            store: &self.0,
            snapshot: self.0.begin_read()?,
            overlay: Overlay::default(),
        }))
    }
}

/// The panic message of `f`, which must panic.
fn failure_of(f: impl FnOnce()) -> String {
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .expect_err("the conformance suite accepted a broken store");
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn the_suite_rejects_readers_without_snapshots() {
    let msg = failure_of(|| conformance::snapshot_isolation(|| NoSnapshot(MemStore::new())));
    assert!(
        msg.starts_with("store conformance: snapshot isolation:"),
        "{msg}"
    );
}

#[test]
fn the_suite_rejects_wrong_reverse_scans() {
    let msg =
        failure_of(|| conformance::scan_order_and_limits(|| ReverseFromTheStart(MemStore::new())));
    assert!(
        msg.starts_with("store conformance: scan order, bounds and limits:"),
        "{msg}"
    );
}

#[test]
fn the_suite_rejects_lost_updates() {
    let msg =
        failure_of(|| conformance::concurrent_conflicts(|| NoConflictDetection(MemStore::new())));
    assert!(
        msg.starts_with("store conformance: concurrent writers: conflicting interleavings:"),
        "{msg}"
    );
}
