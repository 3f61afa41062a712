//! The serial part of a write's commit: what every write moves (the store generation, the change
//! log's sequence) is assigned here, from the committed values, not read and written by the
//! request itself.
//!
//! A request that writes leaves [`AtCommit`] work in its context ([`Ctx::at_commit`]); when it
//! commits, [`Pending::apply`] runs that work and then moves the generation, in the transaction
//! that is being committed. On the serial paths (one writer, a group commit) that transaction is
//! the request's own, so nothing changes in what is stored. On the parallel path
//! ([`crate::runtime::occ`]) the request ran against a snapshot, and this is the only part that
//! runs in the single writer: so two writes of different objects never read the same hot key, and
//! do not conflict.
//!
//! [`Ctx::at_commit`]: crate::runtime::context::Ctx::at_commit

use crate::core::error::Result;
use crate::core::generation;
use crate::core::keys;
use crate::core::model::ContentRecord;
use crate::core::store::{Direction, KeyValue, WriteTxn};
use crate::runtime::cache::Moved;

/// A folder whose record a request wrote only to count the children it added
/// ([`crate::content::tree::add`]): how many, and how many times it wrote the record. Two
/// creates in one folder both write its record, but what they change there (`child_count`,
/// `next_pos`, `rev`) adds up: the commit recorded the write as a merge
/// ([`Moved::merged`]), and a create prepared on an older snapshot has its counts added to the
/// record as committed ([`FolderMerge::rebase`]) instead of conflicting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderMerge {
    /// The folder's uid.
    pub uid: String,
    /// Children added.
    pub children: u64,
    /// Writes of the record (each moved `rev` by one).
    pub writes: u64,
}

impl FolderMerge {
    /// The folder's `o:` key.
    pub fn key(&self) -> Vec<u8> {
        keys::object(&self.uid)
    }

    /// The record to commit, when the request wrote `mine` on its snapshot and the store now
    /// holds `committed`: `committed` with this request's counts added (`next_pos` past the
    /// positions it handed out).
    pub fn rebase(&self, committed: &[u8], mine: &[u8]) -> Result<Rebased> {
        let committed: ContentRecord = serde_json::from_slice(committed)?;
        let mine: ContentRecord = serde_json::from_slice(mine)?;
        let mut merged = mine.clone();
        merged.child_count = committed.child_count;
        merged.next_pos = committed.next_pos;
        merged.rev = committed.rev;
        if merged != committed {
            return Ok(Rebased::Conflict);
        }
        merged.child_count += self.children;
        merged.next_pos = mine.next_pos.max(committed.next_pos);
        merged.rev += self.writes;
        Ok(if merged == mine {
            Rebased::Unchanged
        } else {
            Rebased::Merged(serde_json::to_vec(&merged)?)
        })
    }
}

/// What [`FolderMerge::rebase`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Rebased {
    /// Nothing committed in between: the request's own record stands.
    Unchanged,
    /// Other creates committed children in between: this record, with all the counts.
    Merged(Vec<u8>),
    /// The request's record differs from the committed one in more than the counters: it
    /// changed (or read) what another commit changed, and must run again.
    Conflict,
}

/// Work left for the commit (see the module documentation). It reads and writes only through
/// the [`CommitTxn`] it is given, which sees every commit before this one.
pub trait AtCommit: Send {
    /// Do the work in `txn`.
    fn apply(&self, txn: &mut CommitTxn<'_, '_>) -> Result<()>;
}

/// The transaction being committed, as [`AtCommit`] work sees it: the keys it writes are
/// recorded with the request's own (the response cache drops what read them).
pub struct CommitTxn<'t, 'a> {
    txn: &'t mut (dyn WriteTxn + 'a),
    writes: Option<&'t mut Vec<Vec<u8>>>,
}

impl CommitTxn<'_, '_> {
    /// Raw read.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.txn.get(key)?)
    }

    /// Raw range scan.
    pub fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        dir: Direction,
        limit: usize,
    ) -> Result<Vec<KeyValue>> {
        Ok(self.txn.scan(start, end, dir, limit)?)
    }

    /// Raw write.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if let Some(w) = &mut self.writes {
            w.push(key.to_vec());
        }
        Ok(self.txn.put(key, value)?)
    }

    /// Raw delete.
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        if let Some(w) = &mut self.writes {
            w.push(key.to_vec());
        }
        Ok(self.txn.delete(key)?)
    }
}

/// What a write request leaves for its commit: its [`AtCommit`] work, whether it wrote anything
/// (then the generation moves), and the keys it wrote (when the engine keeps caches).
#[derive(Default)]
pub struct Pending {
    /// The work, in the order the request left it.
    pub work: Vec<Box<dyn AtCommit>>,
    /// Whether the request wrote anything.
    pub dirty: bool,
    /// The keys written, when recorded ([`Moved::writes`]).
    pub writes: Option<Vec<Vec<u8>>>,
    /// The folders whose records it wrote only to count added children.
    pub merges: Vec<FolderMerge>,
    /// The ids it gave new objects, held until it commits ([`crate::runtime::occ::IdHolds`]).
    pub holds: Vec<crate::runtime::occ::Hold>,
}

impl Pending {
    /// Run the work and move the store generation in `txn` (the transaction being committed);
    /// returns the move (`None`: nothing was written).
    pub fn apply(mut self, txn: &mut (dyn WriteTxn + '_)) -> Result<Option<Moved>> {
        let mut view = CommitTxn {
            txn,
            writes: self.writes.as_mut(),
        };
        for work in &self.work {
            work.apply(&mut view)?;
            self.dirty = true;
        }
        if !self.dirty {
            return Ok(None);
        }
        let from = generation::read(&*txn)?;
        let to = generation::next(from);
        txn.put(generation::GENERATION, to.to_string().as_bytes())?;
        let mut writes = self.writes.take().unwrap_or_default();
        if !writes.is_empty() {
            writes.push(generation::GENERATION.to_vec());
        }
        let merged = self.merges.iter().map(FolderMerge::key).collect();
        Ok(Some(Moved {
            from,
            to,
            writes,
            merged,
        }))
    }
}
