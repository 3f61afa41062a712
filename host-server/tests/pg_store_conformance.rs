//! The store conformance suite (`engine::store::conformance`) on [`PgStore`], in both write modes,
//! each store on a fresh schema of the database at `PG_TEST_URL` (skipped, saying so, when that
//! is not set; failing when `PG_TEST_REQUIRED=1`).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use engine::store::conformance;
use engine::{ReadTxn, Store, StoreError, WriteTxn};
use host_server::postgres::{PgOptions, PgStore, WriteMode};

/// A `PgStore` on a fresh schema, dropped with the store.
struct TempPg {
    store: Option<PgStore>,
    url: String,
    schema: String,
}

impl TempPg {
    fn new(url: &str, mode: WriteMode) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let schema = format!(
            "conf_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let store = PgStore::open(
            url,
            PgOptions {
                write_mode: mode,
                connections: 8,
                schema: Some(schema.clone()),
                ..PgOptions::default()
            },
        )
        .expect("open a PgStore");
        TempPg {
            store: Some(store),
            url: url.to_string(),
            schema,
        }
    }

    fn store(&self) -> Result<&PgStore, StoreError> {
        self.store
            .as_ref()
            .ok_or_else(|| StoreError::Misuse("store already closed".into()))
    }
}

impl Drop for TempPg {
    fn drop(&mut self) {
        drop(self.store.take());
        if let Ok(mut c) = postgres::Client::connect(&self.url, postgres::NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP SCHEMA IF EXISTS \"{}\" CASCADE",
                self.schema
            ));
        }
    }
}

impl Store for TempPg {
    fn begin_read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        self.store()?.begin_read()
    }

    fn begin_write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        self.store()?.begin_write()
    }
}

#[test]
fn pg_store_conforms_with_locked_writers() {
    let Some(url) = common::pg_url("pg_store_conforms_with_locked_writers") else {
        return;
    };
    conformance::run_all(|| TempPg::new(&url, WriteMode::Locked));
}

#[test]
fn pg_store_conforms_with_optimistic_writers() {
    let Some(url) = common::pg_url("pg_store_conforms_with_optimistic_writers") else {
        return;
    };
    conformance::run_all(|| TempPg::new(&url, WriteMode::Optimistic));
}

/// An optimistic writer that loses a race reports `Conflict`, and applies none of its writes.
#[test]
fn optimistic_conflict_is_reported_and_nothing_applied() {
    let Some(url) = common::pg_url("optimistic_conflict_is_reported_and_nothing_applied") else {
        return;
    };
    let s = TempPg::new(&url, WriteMode::Optimistic);
    let mut a = s.begin_write().unwrap();
    assert_eq!(a.get(b"k").unwrap(), None);
    a.put(b"a-only", b"A").unwrap();
    a.put(b"k", b"A").unwrap();
    let mut b = s.begin_write().unwrap();
    b.put(b"k", b"B").unwrap();
    b.commit().unwrap();
    match a.commit() {
        Err(StoreError::Conflict(_)) => {}
        other => panic!("expected a conflict, got {other:?}"),
    }
    let r = s.begin_read().unwrap();
    assert_eq!(r.get(b"k").unwrap().as_deref(), Some(&b"B"[..]));
    assert_eq!(r.get(b"a-only").unwrap(), None);
}
