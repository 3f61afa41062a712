//! A transaction nested in another: a savepoint kept in memory.
//!
//! [`Savepoint`] buffers its writes in an [`Overlay`] over an open [`WriteTxn`] and reads through to
//! it. Committing the savepoint replays the buffered writes into the outer transaction (which still
//! has to commit for them to become durable); dropping it discards them and leaves the outer
//! transaction exactly as it was. [`crate::Engine::handle_group`] runs each request of a group in
//! its own savepoint, so a failing request undoes only its own writes. It works over every store,
//! because it needs nothing of the backend beyond the [`WriteTxn`] operations.

use super::{Direction, KeyValue, Overlay, ReadTxn, StoreError, WriteTxn};

/// Writes buffered over an outer write transaction; see the module documentation.
pub struct Savepoint<'t, 'a> {
    outer: &'t mut (dyn WriteTxn + 'a),
    overlay: Overlay,
}

impl<'t, 'a> Savepoint<'t, 'a> {
    /// A savepoint over `outer`, with no writes yet.
    pub fn new(outer: &'t mut (dyn WriteTxn + 'a)) -> Self {
        Savepoint {
            outer,
            overlay: Overlay::default(),
        }
    }
}

impl ReadTxn for Savepoint<'_, '_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        match self.overlay.lookup(key) {
            Some(v) => Ok(v.map(<[u8]>::to_vec)),
            None => self.outer.get(key),
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
            self.outer.scan(start, end, dir, n)
        })
    }
}

impl WriteTxn for Savepoint<'_, '_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.overlay.put(key, value);
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> Result<(), StoreError> {
        self.overlay.delete(key);
        Ok(())
    }

    /// Replay the buffered writes into the outer transaction (not yet durable: the outer
    /// transaction commits them).
    fn commit(self: Box<Self>) -> Result<(), StoreError> {
        let Savepoint { outer, overlay } = *self;
        for (k, v) in overlay.changes() {
            match v {
                Some(v) => outer.put(k, v)?,
                None => outer.delete(k)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::store::{MemStore, Store};

    #[test]
    fn released_savepoints_reach_the_outer_transaction_and_dropped_ones_do_not() {
        let store = MemStore::new();
        let mut w = store.begin_write().unwrap();
        w.put(b"a", b"0").unwrap();
        {
            let mut sp = Box::new(Savepoint::new(w.as_mut()));
            sp.put(b"b", b"1").unwrap();
            sp.delete(b"a").unwrap();
            assert_eq!(sp.get(b"a").unwrap(), None);
            let rows = sp.scan(b"", b"", Direction::Forward, 10).unwrap();
            assert_eq!(rows, vec![(b"b".to_vec(), b"1".to_vec())]);
            sp.commit().unwrap();
        }
        {
            let mut sp = Savepoint::new(w.as_mut());
            sp.put(b"c", b"2").unwrap();
            sp.delete(b"b").unwrap();
            // dropped: nothing happens
        }
        assert_eq!(w.get(b"a").unwrap(), None);
        assert_eq!(w.get(b"b").unwrap(), Some(b"1".to_vec()));
        assert_eq!(w.get(b"c").unwrap(), None);
        w.commit().unwrap();
        let r = store.begin_read().unwrap();
        assert_eq!(r.get(b"b").unwrap(), Some(b"1".to_vec()));
    }
}
