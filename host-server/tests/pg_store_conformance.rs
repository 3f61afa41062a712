//! The store conformance suite (`engine::core::store::conformance`) on [`PgStore`], in both write modes,
//! each store on a fresh schema of the database at `PG_TEST_URL` (skipped, saying so, when that
//! is not set; failing when `PG_TEST_REQUIRED=1`).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use engine::core::store::conformance;
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

/// Two stores on one schema, one in each write mode (servers started in different modes by
/// mistake): concurrent read-increment-write transactions through both lose no update.
#[test]
fn mixed_write_modes_lose_no_update() {
    let Some(url) = common::pg_url("mixed_write_modes_lose_no_update") else {
        return;
    };
    let locked = TempPg::new(&url, WriteMode::Locked);
    let optimistic = PgStore::open(
        &url,
        PgOptions {
            write_mode: WriteMode::Optimistic,
            connections: 8,
            schema: Some(locked.schema.clone()),
            ..PgOptions::default()
        },
    )
    .unwrap();
    const THREADS: usize = 3;
    const INCREMENTS: u64 = 40;
    fn increment<S: Store + ?Sized>(store: &S) {
        loop {
            let attempt = store.begin_write().and_then(|mut w| {
                let n = w
                    .get(b"n")?
                    .map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()));
                w.put(b"n", &(n + 1).to_le_bytes())?;
                w.commit()
            });
            match attempt {
                Ok(()) => return,
                Err(StoreError::Conflict(_)) => continue,
                Err(e) => panic!("{e}"),
            }
        }
    }
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..INCREMENTS {
                    increment(&locked);
                }
            });
            s.spawn(|| {
                for _ in 0..INCREMENTS {
                    increment(&optimistic);
                }
            });
        }
    });
    let r = locked.begin_read().unwrap();
    let n = u64::from_le_bytes(r.get(b"n").unwrap().unwrap().try_into().unwrap());
    assert_eq!(n, 2 * THREADS as u64 * INCREMENTS);
}
