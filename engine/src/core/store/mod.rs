//! The storage abstraction: a transactional, ordered key-value store with range scans.
//!
//! Every host supplies one implementation (the in-memory [`MemStore`] here, SQLite in `host-server`,
//! IndexedDB-backed memory in `host-wasm`). The engine defines the keyspace (see [`crate::core::keys`]) and
//! keeps every index and query on top of these few operations, so all hosts answer identically.
//!
//! # The contract
//!
//! Every implementation provides all of the following. The suite in `conformance` (cargo feature
//! `conformance` of this crate) checks it; every store of the project runs it.
//!
//! **Keys and values** are arbitrary byte strings: any byte may occur, 0x00 and 0xFF included; a
//! value may be empty or several MiB long. Keys are non-empty (the engine never uses the empty
//! key) and sort bytewise as unsigned bytes, a prefix before its extensions (`a` < `a\0` < `b` <
//! `\xFF`). A value reads back exactly as written.
//!
//! **Read transactions** ([`Store::begin_read`]) read one snapshot: every transaction that
//! committed before `begin_read` returned, and nothing that commits later, for all of their gets
//! and scans however long they stay open and whatever writers commit meanwhile. Beginning a read
//! transaction and reading in it never wait for a write transaction, open or committing, beyond
//! the short moment in which a commit is made visible.
//!
//! **Write transactions** ([`Store::begin_write`]) read their own writes: `get` and `scan` see
//! the state the transaction began on with its own puts and deletes applied, the last write of a
//! key winning. [`WriteTxn::commit`] applies all of its writes at once: a reader sees all of a
//! commit or none of it, and once `commit` returns `Ok` the writes are durable (to the backend's
//! documented level). When `commit` returns an error, none of the writes is applied. Dropping a
//! write transaction without committing (also while unwinding from a panic) discards all of its
//! writes. Committing a transaction that wrote nothing succeeds and changes nothing.
//!
//! **Scans**: `scan(start, end, dir, limit)` returns the pairs with `start <= key < end`, where an
//! empty `end` means no upper bound (there is no largest key to pass instead; see [`prefix_end`])
//! and an empty `start` means from the first key. [`Direction::Forward`] returns them in ascending
//! key order from the smallest key of the range, [`Direction::Reverse`] in descending order from
//! the largest; either way the first `limit` of them in that order, or all when there are fewer.
//! `limit == 0` returns nothing, and so does a non-empty `end <= start`; `usize::MAX` means no
//! limit. In a write transaction a scan sees the transaction's own writes and the limit counts
//! what it returns (a key the transaction deleted never takes a place).
//!
//! **Writers** come in one of two kinds; each backend documents which it is.
//! - *Serialized* (single-writer backends: [`MemStore`], SQLite, the browser host): at most one
//!   write transaction is open at a time; `begin_write` waits until the running one ends
//!   (committed or dropped). Such a backend never reports [`StoreError::Conflict`].
//! - *Optimistic* (a database shared by several servers, for example): write transactions run at
//!   the same time, each reading the snapshot it began on plus its own writes, and may fail with
//!   [`StoreError::Conflict`] (from `commit`, or earlier from any operation once the backend knows).
//!   A transaction that failed so applied none of its writes; the engine then runs the whole
//!   request again in a new transaction, a bounded number of times. The backend must refuse (with
//!   `Conflict`) to commit a transaction `T` when another transaction `U` committed after `T`
//!   began and `U` wrote (put or deleted) a key that `T` wrote, or a key that `T` read: a key `T`
//!   asked for with `get` (present or not), or a key within the part of a range that a scan of
//!   `T` covered (from the bound the scan started at, the range's start going forward and its end
//!   in reverse, to the last pair it returned, or the whole range when fewer than `limit` pairs
//!   came back; keys `U` inserted there count too). So of two transactions that both write a
//!   key, or one of which writes a key the other read, at most one commits, and no update is
//!   lost. Reporting more conflicts than these (per page or per table, say) is allowed: it only
//!   costs a retry. Read transactions never conflict.
//!
//! A store is shared by reference (`&self`); a host that serves requests on several threads uses a
//! store that is `Sync`, and each transaction stays on the thread that began it.

#[cfg(feature = "conformance")]
pub mod conformance;
mod memory;
mod overlay;
mod savepoint;

pub use memory::MemStore;
#[cfg(any(test, feature = "internals"))]
pub use memory::{ChangeSet, CommitHook};
pub use overlay::Overlay;
pub use savepoint::savepoint;
#[cfg(any(test, feature = "internals"))]
pub use savepoint::Savepoint;

/// A storage failure (I/O, corruption, quota, ...). Surfaces to clients as a 500/503 error.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The backend failed; the text says how.
    #[error("storage backend error: {0}")]
    Backend(String),
    /// The backend is out of space (disk full, browser quota exceeded).
    #[error("storage quota exceeded: {0}")]
    QuotaExceeded(String),
    /// The transaction was used after it ended or from a read-only context.
    #[error("storage misuse: {0}")]
    Misuse(String),
    /// An optimistic backend found that another writer committed a change this transaction
    /// conflicts with (see "Writers" in the module documentation); none of this
    /// transaction's writes was applied. The engine retries the whole request in a new
    /// transaction, a bounded number of times.
    #[error("write conflict: {0}")]
    Conflict(String),
}

/// Scan direction for [`ReadTxn::scan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Ascending key order.
    Forward,
    /// Descending key order.
    Reverse,
}

/// One key-value pair as returned by a scan.
pub type KeyValue = (Vec<u8>, Vec<u8>);

/// Read operations, available in every transaction.
pub trait ReadTxn {
    /// The value stored under `key`, if any.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError>;

    /// Pairs with `start <= key < end` (empty `end`: no upper bound), in `dir` order, the first
    /// `limit` of them in that order (see "Scans" in the module documentation).
    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        dir: Direction,
        limit: usize,
    ) -> Result<Vec<KeyValue>, StoreError>;
}

/// A read-write transaction. Dropping it without [`WriteTxn::commit`] rolls it back.
pub trait WriteTxn: ReadTxn {
    /// Store `value` under `key`, replacing any previous value.
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), StoreError>;
    /// Remove `key` (no error when absent).
    fn delete(&mut self, key: &[u8]) -> Result<(), StoreError>;
    /// Make every write of this transaction durable, atomically; on an error none is applied
    /// ([`StoreError::Conflict`] only from optimistic backends).
    fn commit(self: Box<Self>) -> Result<(), StoreError>;

    /// Whether [`WriteTxn::native_savepoint`] gives a savepoint of the backend's own (SQLite's
    /// `SAVEPOINT`); when false (the default) `savepoint` buffers one in memory (`Savepoint`).
    fn has_native_savepoints(&self) -> bool {
        false
    }

    /// A transaction nested in this one, kept by the backend: reads see this transaction's
    /// writes and its own, `commit` hands its writes to this transaction (durable only when this
    /// one commits), dropping it undoes them. Only called when
    /// [`WriteTxn::has_native_savepoints`] is true; call `savepoint` rather than this.
    fn native_savepoint(&mut self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        Err(StoreError::Misuse(
            "this transaction has no native savepoints".into(),
        ))
    }
}

/// A store: a factory of transactions.
pub trait Store {
    /// Begin a read-only transaction on a consistent snapshot.
    fn begin_read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError>;
    /// Begin a write transaction. A serialized backend waits here for the running writer to
    /// finish; an optimistic one may run several at once and report conflicts (see the module
    /// documentation).
    fn begin_write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError>;
}

/// Whether a scan of `start..end` (empty `end`: no upper bound) with `limit` finds nothing
/// whatever is stored: a zero limit, or a range that is empty or inverted. Every backend answers
/// such a scan with no pairs without asking its storage (a `BTreeMap` range would panic on an
/// inverted one).
pub fn scan_is_empty(start: &[u8], end: &[u8], limit: usize) -> bool {
    limit == 0 || (!end.is_empty() && start >= end)
}

/// The smallest key greater than every key that starts with `prefix` (for prefix scans).
/// Returns an empty vector when no such key exists (all bytes 0xFF), meaning "unbounded".
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return end;
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_increments_last_byte() {
        assert_eq!(prefix_end(b"ab"), b"ac".to_vec());
        assert_eq!(prefix_end(&[1, 0xFF]), vec![2]);
        assert_eq!(prefix_end(&[0xFF, 0xFF]), Vec::<u8>::new());
    }
}
