//! The storage abstraction: a transactional, ordered key-value store with range scans.
//!
//! Every host supplies one implementation (the in-memory [`MemStore`] here, SQLite in `host-server`,
//! IndexedDB-backed memory in `host-wasm`). The engine defines the keyspace (see [`crate::keys`]) and
//! keeps every index and query on top of these few operations, so all hosts answer identically.
//!
//! Semantics every implementation must provide:
//! - keys and values are byte strings; keys sort bytewise (lexicographically);
//! - a [`ReadTxn`] sees one consistent snapshot;
//! - a [`WriteTxn`] sees its own writes; [`WriteTxn::commit`] makes all of them durable at once;
//!   dropping a write transaction without committing discards all of them;
//! - at most one write transaction runs at a time (writers are serialized), so a request never
//!   loses another request's update.

mod memory;
mod overlay;
mod savepoint;

pub use memory::MemStore;
pub use overlay::Overlay;
pub use savepoint::Savepoint;

/// A storage failure (I/O, corruption, quota, ...). Surfaces to clients as a 500/503 error.
#[derive(Debug, thiserror::Error)]
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

    /// Pairs with `start <= key < end`, in `dir` order, at most `limit` of them.
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
    /// Make every write of this transaction durable, atomically.
    fn commit(self: Box<Self>) -> Result<(), StoreError>;
}

/// A store: a factory of transactions.
pub trait Store {
    /// Begin a read-only transaction on a consistent snapshot.
    fn begin_read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError>;
    /// Begin the (single) write transaction; waits for a running writer to finish.
    fn begin_write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError>;
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
