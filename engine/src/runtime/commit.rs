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
use crate::core::store::{Direction, KeyValue, WriteTxn};
use crate::runtime::cache::Moved;

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
        Ok(Some(Moved { from, to, writes }))
    }
}
