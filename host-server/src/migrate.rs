//! `host-server migrate`: copy a site, every key as it is, from a SQLite data directory into a
//! PostgreSQL database, so that servers started with `--database` serve it.
//!
//! The copy reads one snapshot of the source (the source server must be stopped: the SQLite
//! store's lock refuses a running one) and writes the keys in key order, in transactions of at
//! most [`BATCH_KEYS`] keys or [`BATCH_BYTES`] bytes. A target that already holds keys is refused
//! unless told to replace it. If the copy stops half-way, the target holds part of the site: run
//! it again with `replace`. At the end the number of keys in the target is checked against the
//! source. The site's schema version travels with the keys; a newer server upgrades it when it
//! opens the database, as it would have done on SQLite.

use engine::{Direction, Store, StoreError};

use crate::postgres::PgStore;

/// Most keys written in one target transaction.
pub const BATCH_KEYS: usize = 2_000;
/// Most value bytes written in one target transaction (a key with a larger value goes alone).
pub const BATCH_BYTES: usize = 16 * 1024 * 1024;

/// What a finished copy moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copied {
    /// Keys copied.
    pub keys: u64,
    /// Bytes of keys and values copied.
    pub bytes: u64,
}

/// Copy every key of `from` into `to`. `replace`: empty a target that holds keys first (else such
/// a target is refused). `progress(keys, bytes)` is called after every committed batch.
pub fn copy_site<S: Store + ?Sized>(
    from: &S,
    to: &PgStore,
    replace: bool,
    mut progress: impl FnMut(u64, u64),
) -> Result<Copied, StoreError> {
    if !to.is_empty()? {
        if !replace {
            return Err(StoreError::Misuse(
                "the target database already holds a site (table kv is not empty); \
                 pass --replace to overwrite it"
                    .into(),
            ));
        }
        to.clear()?;
    }
    let source = from.begin_read()?;
    let mut copied = Copied { keys: 0, bytes: 0 };
    let mut start: Vec<u8> = Vec::new();
    loop {
        let rows = source.scan(&start, b"", Direction::Forward, BATCH_KEYS)?;
        let Some((last, _)) = rows.last() else {
            break;
        };
        let mut next = last.clone();
        next.push(0); // the smallest key after `last`
        let mut i = 0;
        while i < rows.len() {
            let mut w = to.begin_write()?;
            let mut bytes = 0usize;
            while i < rows.len() && (bytes == 0 || bytes + rows[i].1.len() <= BATCH_BYTES) {
                let (k, v) = &rows[i];
                w.put(k, v)?;
                bytes += k.len() + v.len();
                copied.keys += 1;
                copied.bytes += (k.len() + v.len()) as u64;
                i += 1;
            }
            w.commit()?;
            progress(copied.keys, copied.bytes);
        }
        start = next;
    }
    drop(source);
    let target_keys = count_keys(to)?;
    if target_keys != copied.keys {
        return Err(StoreError::Backend(format!(
            "after the copy the target holds {target_keys} keys, the source {}",
            copied.keys
        )));
    }
    Ok(copied)
}

/// The number of keys in `store`, counted by scanning.
pub fn count_keys<S: Store + ?Sized>(store: &S) -> Result<u64, StoreError> {
    let r = store.begin_read()?;
    let mut n = 0u64;
    let mut start: Vec<u8> = Vec::new();
    loop {
        let rows = r.scan(&start, b"", Direction::Forward, BATCH_KEYS)?;
        let Some((last, _)) = rows.last() else {
            return Ok(n);
        };
        n += rows.len() as u64;
        start = last.clone();
        start.push(0);
    }
}
