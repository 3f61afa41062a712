//! A write buffer over a read snapshot: what a transaction changed, merged with what it reads.
//!
//! Used by stores whose backend cannot hold an open transaction itself (the in-memory store, and the
//! browser host, which replays the buffered change set into IndexedDB on commit).

use std::collections::BTreeMap;
use std::ops::Bound;

use super::{Direction, KeyValue, StoreError};

/// Buffered changes of one transaction: `Some(value)` for a put, `None` for a delete.
#[derive(Debug, Default, Clone)]
pub struct Overlay {
    changes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

impl Overlay {
    /// Record a put.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.changes.insert(key.to_vec(), Some(value.to_vec()));
    }

    /// Record a delete.
    pub fn delete(&mut self, key: &[u8]) {
        self.changes.insert(key.to_vec(), None);
    }

    /// Drop what the overlay holds for `key` (it is written elsewhere now).
    pub fn forget(&mut self, key: &[u8]) {
        self.changes.remove(key);
    }

    /// `Some(Some(v))` when the overlay wrote `key`, `Some(None)` when it deleted it, `None` when untouched.
    pub fn lookup(&self, key: &[u8]) -> Option<Option<&[u8]>> {
        self.changes.get(key).map(|v| v.as_deref())
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The buffered changes in key order.
    pub fn changes(&self) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> {
        self.changes
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
    }

    /// Consume into the change list.
    pub fn into_changes(self) -> BTreeMap<Vec<u8>, Option<Vec<u8>>> {
        self.changes
    }

    /// Merge a base scan with the overlay for `[start, end)`.
    ///
    /// `base` must return the base pairs of the same range in `dir` order, at most `limit` of them
    /// *plus* the number of overlay deletes in the range (so deleted keys cannot starve the result).
    pub fn merge_scan(
        &self,
        start: &[u8],
        end: &[u8],
        dir: Direction,
        limit: usize,
        base: impl FnOnce(usize) -> Result<Vec<KeyValue>, StoreError>,
    ) -> Result<Vec<KeyValue>, StoreError> {
        if super::scan_is_empty(start, end, limit) {
            return Ok(Vec::new());
        }
        let upper = if end.is_empty() {
            Bound::Unbounded
        } else {
            Bound::Excluded(end.to_vec())
        };
        let range = self
            .changes
            .range::<Vec<u8>, _>((Bound::Included(start.to_vec()), upper));
        let mine: Vec<(&Vec<u8>, &Option<Vec<u8>>)> = match dir {
            Direction::Forward => range.collect(),
            Direction::Reverse => range.rev().collect(),
        };
        if mine.is_empty() {
            return base(limit);
        }
        let extra = mine.iter().filter(|(_, v)| v.is_none()).count();
        let base_rows = base(limit.saturating_add(extra))?;
        let mut out = Vec::with_capacity(limit.min(base_rows.len() + mine.len()));
        let (mut i, mut j) = (0, 0);
        let before = |a: &[u8], b: &[u8]| match dir {
            Direction::Forward => a < b,
            Direction::Reverse => a > b,
        };
        while out.len() < limit && (i < base_rows.len() || j < mine.len()) {
            let take_base = match (base_rows.get(i), mine.get(j)) {
                (Some((bk, _)), Some((mk, _))) => {
                    if bk.as_slice() == mk.as_slice() {
                        i += 1; // overlay shadows base
                        false
                    } else {
                        before(bk, mk)
                    }
                }
                (Some(_), None) => true,
                (None, _) => false,
            };
            if take_base {
                out.push(base_rows[i].clone());
                i += 1;
            } else {
                let (k, v) = mine[j];
                j += 1;
                if let Some(v) = v {
                    out.push((k.clone(), v.clone()));
                }
            }
        }
        Ok(out)
    }
}
