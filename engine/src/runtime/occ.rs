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
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

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

/// Ids handed to new objects by writes not yet committed, or committed so recently that older
/// snapshots do not show them (the path key of each, `p:<path>`): with parallel writes, two
/// creates of one title in one folder prepared side by side would otherwise both find the id
/// free in their snapshots, both take it, and the second would run again. A create that finds
/// an id held here by another write takes the next candidate without reading the id's key (so
/// that key is not in its reads, and the other's commit does not make it stale). Treating a
/// free id as taken is always safe (the id a create takes is one it read as free); the price
/// is a gap in the numbering when the holder fails (`news`, `news-2`), as a failed create
/// leaves a gap in the positions.
#[derive(Default)]
pub struct IdHolds {
    inner: Mutex<HashMap<Vec<u8>, Held>>,
}

/// The state of one held id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// Taken by a write not yet committed.
    InFlight,
    /// Committed at this store generation: taken for snapshots older than it.
    Committed(u64),
}

/// Most ids [`IdHolds`] keeps before it forgets the committed ones (a request whose snapshot
/// does not show such an id then reads it, and runs again if it took it).
const HOLDS_MAX: usize = 4096;

/// Whether a request may take an id ([`IdHolds::take`]).
pub enum Taking {
    /// Another write holds it, or committed it after `snapshot`: the id is taken.
    Taken,
    /// Nobody else holds it: the request holds it now (until the [`Hold`] is dropped or
    /// [`Hold::committed`]) and reads its key to see whether the store has it.
    Free(Hold),
}

impl IdHolds {
    /// Try to hold the id of path key `key` for a request whose snapshot is at generation
    /// `snapshot` (read only when an id committed recently is found).
    pub fn take(self: &Arc<Self>, key: &[u8], snapshot: &mut dyn FnMut() -> Option<u64>) -> Taking {
        let Ok(mut held) = self.inner.lock() else {
            return Taking::Taken;
        };
        match held.get(key) {
            Some(Held::InFlight) => return Taking::Taken,
            Some(Held::Committed(g)) if snapshot().is_none_or(|s| s < *g) => return Taking::Taken,
            _ => {}
        }
        if held.len() >= HOLDS_MAX {
            held.retain(|_, h| *h == Held::InFlight);
        }
        held.insert(key.to_vec(), Held::InFlight);
        Taking::Free(Hold {
            holds: self.clone(),
            key: key.to_vec(),
            committed: None,
        })
    }
}

/// An id a request holds ([`IdHolds`]); dropping it lets the id go (the request failed, ran
/// again, or found the id taken in its snapshot), unless it was [`Hold::committed`].
pub struct Hold {
    holds: Arc<IdHolds>,
    key: Vec<u8>,
    committed: Option<u64>,
}

impl Hold {
    /// The request that held it committed at store generation `generation`: older snapshots
    /// keep seeing the id as taken.
    pub fn committed(mut self, generation: u64) {
        self.committed = Some(generation);
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        let Ok(mut held) = self.holds.inner.lock() else {
            return;
        };
        match self.committed {
            Some(g) => {
                held.insert(std::mem::take(&mut self.key), Held::Committed(g));
            }
            None => {
                if held.get(&self.key) == Some(&Held::InFlight) {
                    held.remove(&self.key);
                }
            }
        }
    }
}

/// One commit as the log keeps it: the generation it reached, the keys it wrote and which of
/// them it only merged ([`crate::runtime::cache::Moved::merged`]).
struct Entry {
    to: u64,
    writes: Vec<Vec<u8>>,
    merged: Vec<Vec<u8>>,
}

/// The first key of `writes` that makes a request conflict, if any: `writes` are the keys a
/// commit wrote, of which `merged` were only merges (a folder's child counters). An outright
/// write conflicts with a request that read the key, a merge only with one that wrote the key
/// otherwise than by merging (`outright`), whose write would put old counts back.
pub fn conflicting_key<'w>(
    writes: &'w [Vec<u8>],
    merged: &[Vec<u8>],
    reads: &ReadSet,
    outright: &dyn Fn(&[u8]) -> bool,
) -> Option<&'w [u8]> {
    writes
        .iter()
        .find(|k| {
            if merged.contains(k) {
                outright(k)
            } else {
                reads.touches(k)
            }
        })
        .map(Vec::as_slice)
}

/// Why a prepared write was found stale at commit (what [`crate::EngineOptions::stale_log`]
/// is told, so that a hot key can be found on a running server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stale {
    /// The log does not cover every commit since the snapshot (it is older than the log, or a
    /// commit the log did not see came in between).
    Uncovered {
        /// The snapshot's generation.
        snapshot: u64,
        /// The store's generation at commit.
        current: u64,
    },
    /// A commit after the snapshot (or an earlier member of the group) wrote this key, which
    /// the request read (or wrote otherwise than by merging, for a merged key).
    Key(Vec<u8>),
    /// A folder's record the request counted children in differs from the committed one in
    /// more than the counts ([`crate::runtime::commit::FolderMerge::rebase`]).
    Folder(Vec<u8>),
}

impl std::fmt::Display for Stale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stale::Uncovered { snapshot, current } => write!(
                f,
                "the commit log does not cover generations {snapshot} to {current}"
            ),
            Stale::Key(k) => write!(f, "key {} was written", String::from_utf8_lossy(k)),
            Stale::Folder(k) => write!(
                f,
                "folder record {} changed in more than its counts",
                String::from_utf8_lossy(k)
            ),
        }
    }
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
    /// snapshot up to `current`, and none of them conflicts with it ([`conflicting_key`]) (`outright`: whether
    /// the request wrote a key otherwise than by merging). `None`: it may; else why not.
    pub fn stale(
        &self,
        snapshot: u64,
        current: u64,
        reads: &ReadSet,
        outright: &dyn Fn(&[u8]) -> bool,
    ) -> Option<Stale> {
        let uncovered = Stale::Uncovered { snapshot, current };
        let Ok(log) = self.inner.lock() else {
            return Some(uncovered);
        };
        match log.covers_from {
            Some(from) if from <= snapshot && log.newest == current => {}
            _ => return Some(uncovered),
        }
        log.entries
            .iter()
            .rev()
            .take_while(|e| e.to > snapshot)
            .find_map(|e| conflicting_key(&e.writes, &e.merged, reads, outright))
            .map(|k| Stale::Key(k.to_vec()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(holds: &Arc<IdHolds>, key: &[u8], snapshot: u64) -> Option<Hold> {
        match holds.take(key, &mut || Some(snapshot)) {
            Taking::Taken => None,
            Taking::Free(h) => Some(h),
        }
    }

    #[test]
    fn an_id_is_held_until_dropped_or_committed() {
        let holds = Arc::new(IdHolds::default());
        let first = taken(&holds, b"p:/a/x", 5).unwrap();
        // Another write, whatever its snapshot, finds it taken while the first holds it.
        assert!(taken(&holds, b"p:/a/x", 5).is_none());
        assert!(taken(&holds, b"p:/a/x", 9).is_none());
        // Let go (the write failed or runs again): free again.
        drop(first);
        let again = taken(&holds, b"p:/a/x", 5).unwrap();
        // Committed at generation 7: taken for snapshots before it, which do not show it;
        // a snapshot that shows it reads the key itself.
        again.committed(7);
        assert!(taken(&holds, b"p:/a/x", 6).is_none());
        assert!(taken(&holds, b"p:/a/x", 7).is_some());
        // Other ids are not concerned.
        assert!(taken(&holds, b"p:/a/y", 6).is_some());
    }
}
