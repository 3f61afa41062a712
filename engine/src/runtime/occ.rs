//! Writes that use every core: optimistic concurrency inside one engine.
//!
//! A write request runs on any thread against a snapshot of its own ([`SnapshotTxn`]: a read
//! transaction of the store, an [`Overlay`] for its writes, and a record of what it read: keys
//! and the covered parts of scanned ranges). What it leaves is a [`Buffered`] write set. Only the
//! commit is serial (the engine's `commit_prepared`): a write set is applied if nothing it read
//! was written by a commit after its snapshot, else the request runs again.
//!
//! Commits are told apart by the store generation ([`crate::core::generation`]), which every
//! commit that writes moves. [`CommitLog`] keeps, for the last [`LOG_COMMITS`] commits of this
//! engine, the generation each reached and the keys it wrote (every commit of the engine is
//! recorded, the serial paths' too: [`CommitLog::record`] is called where the engine publishes a
//! commit). A snapshot's generation is read from the snapshot itself, so the check is exact: the
//! commits to check against are those the log holds above it, and a snapshot older than what
//! the log covers (or a generation the log never heard of: another writer) conflicts.
//!
//! The hot keys every write moves (the generation, the change log's sequence) are not read by
//! the request: they are assigned in the commit ([`crate::runtime::commit`]), so two writes of
//! different objects do not conflict. Creates in one folder each take their own position
//! ([`crate::runtime::state::Core::child_position`]) and write the folder's record only to
//! count the child: the log keeps such writes as merges, which conflict only with a request
//! that wrote the record otherwise, and the commit adds the counts to the record as committed
//! ([`crate::runtime::commit::FolderMerge`]).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Mutex;

use crate::core::store::{Direction, KeyValue, Overlay, ReadTxn, StoreError, WriteTxn};
use crate::runtime::cache::ReadSet;

/// How many recent commits [`CommitLog`] keeps: a request whose snapshot is older than that
/// runs again.
pub const LOG_COMMITS: usize = 4096;

/// What a request read and wrote in its snapshot.
#[derive(Default)]
pub struct Buffered {
    /// Its writes (puts and deletes).
    pub overlay: Overlay,
    /// What it read.
    pub reads: ReadSet,
}

/// A write transaction over a read snapshot: writes are buffered, reads recorded (see the module
/// documentation). Its `commit` only hands the buffer over (to whoever holds the other end of
/// [`SnapshotTxn::new`]'s buffer); nothing reaches the store until the engine applies it.
pub struct SnapshotTxn<'a> {
    base: Box<dyn ReadTxn + 'a>,
    buffer: Rc<RefCell<Buffered>>,
}

impl<'a> SnapshotTxn<'a> {
    /// A transaction over `base`, buffering into `buffer`.
    pub fn new(base: Box<dyn ReadTxn + 'a>, buffer: Rc<RefCell<Buffered>>) -> Self {
        SnapshotTxn { base, buffer }
    }
}

impl ReadTxn for SnapshotTxn<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let mut b = self.buffer.borrow_mut();
        b.reads.key(key);
        match b.overlay.lookup(key) {
            Some(v) => Ok(v.map(<[u8]>::to_vec)),
            None => self.base.get(key),
        }
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        dir: Direction,
        limit: usize,
    ) -> Result<Vec<KeyValue>, StoreError> {
        let mut b = self.buffer.borrow_mut();
        let pairs = b.overlay.merge_scan(start, end, dir, limit, |n| {
            self.base.scan(start, end, dir, n)
        })?;
        b.reads.scan(start, end, dir, limit, &pairs);
        Ok(pairs)
    }
}

impl WriteTxn for SnapshotTxn<'_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.buffer.borrow_mut().overlay.put(key, value);
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> Result<(), StoreError> {
        self.buffer.borrow_mut().overlay.delete(key);
        Ok(())
    }

    fn commit(self: Box<Self>) -> Result<(), StoreError> {
        Ok(())
    }
}

/// One commit as the log keeps it: the generation it reached, the keys it wrote and which of
/// them it only merged ([`crate::runtime::cache::Moved::merged`]).
struct Entry {
    to: u64,
    writes: Vec<Vec<u8>>,
    merged: Vec<Vec<u8>>,
}

/// Whether a request conflicts with a commit that wrote `writes`, of which `merged` were only
/// merges (a folder's child counters): an outright write conflicts with a request that read the
/// key, a merge only with one that wrote the key otherwise than by merging (`outright`), whose
/// write would put old counts back.
pub fn conflicts(
    writes: &[Vec<u8>],
    merged: &[Vec<u8>],
    reads: &ReadSet,
    outright: &dyn Fn(&[u8]) -> bool,
) -> bool {
    writes.iter().any(|k| {
        if merged.contains(k) {
            outright(k)
        } else {
            reads.touches(k)
        }
    })
}

/// The recent commits of this engine (see the module documentation).
#[derive(Default)]
pub struct CommitLog {
    inner: Mutex<LogInner>,
}

#[derive(Default)]
struct LogInner {
    /// The generation from which on every commit is in `entries` (`None`: not known yet).
    covers_from: Option<u64>,
    /// The newest generation recorded.
    newest: u64,
    entries: VecDeque<Entry>,
}

impl CommitLog {
    /// Note the store's generation when nothing is being written (engine start): the log covers
    /// every commit from it on.
    pub fn start_at(&self, generation: u64) {
        if let Ok(mut log) = self.inner.lock() {
            if log.covers_from.is_none() {
                log.covers_from = Some(generation);
                log.newest = generation;
            }
        }
    }

    /// Record a commit that moved the generation from `from` to `to` writing `writes` (of
    /// which `merged` were only merged). A move
    /// that does not follow the newest one recorded (a commit the log missed) starts the log over
    /// at `to`: every older snapshot then conflicts.
    pub fn record(&self, from: u64, to: u64, writes: &[Vec<u8>], merged: &[Vec<u8>]) {
        let Ok(mut log) = self.inner.lock() else {
            return;
        };
        if log.covers_from.is_none() || from != log.newest {
            log.entries.clear();
            log.covers_from = Some(to);
            log.newest = to;
            return;
        }
        log.newest = to;
        log.entries.push_back(Entry {
            to,
            writes: writes.to_vec(),
            merged: merged.to_vec(),
        });
        while log.entries.len() > LOG_COMMITS {
            if let Some(e) = log.entries.pop_front() {
                log.covers_from = Some(e.to);
            }
        }
    }

    /// Whether a request that read `reads` on the snapshot of generation `snapshot` may commit
    /// now, the store being at generation `current`: the log covers every commit after the
    /// snapshot up to `current`, and none of them [`conflicts`] with it (`outright`: whether
    /// the request wrote a key otherwise than by merging).
    pub fn valid(
        &self,
        snapshot: u64,
        current: u64,
        reads: &ReadSet,
        outright: &dyn Fn(&[u8]) -> bool,
    ) -> bool {
        let Ok(log) = self.inner.lock() else {
            return false;
        };
        match log.covers_from {
            Some(from) if from <= snapshot && log.newest == current => {}
            _ => return false,
        }
        log.entries
            .iter()
            .rev()
            .take_while(|e| e.to > snapshot)
            .all(|e| !conflicts(&e.writes, &e.merged, reads, outright))
    }
}
