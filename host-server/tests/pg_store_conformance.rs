//! The store conformance suite (`engine::conformance`) on [`PgStore`], in both write modes,
//! each store on a fresh schema of the database at `PG_TEST_URL` (skipped, saying so, when that
//! is not set; failing when `PG_TEST_REQUIRED=1`).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

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

/// `PG_TEST_URL`; only called once [`pg_ready`] said it is set.
fn pg_test_url() -> String {
    std::env::var("PG_TEST_URL").unwrap_or_default()
}

/// Whether the conformance tests can run (`PG_TEST_URL` set; see [`common::pg_url`]).
fn pg_ready() -> bool {
    common::pg_url("pg_store_conformance").is_some()
}

engine::store_conformance_tests! {
    backend: pg_locked,
    new_store: || TempPg::new(&pg_test_url(), WriteMode::Locked),
    skip_unless: pg_ready(),
}

engine::store_conformance_tests! {
    backend: pg_optimistic,
    new_store: || TempPg::new(&pg_test_url(), WriteMode::Optimistic),
    skip_unless: pg_ready(),
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

/// An optimistic store whose writers hold the writers' lock shared, on `temp`'s schema.
fn exclusive_retries(temp: &TempPg, url: &str) -> PgStore {
    PgStore::open(
        url,
        PgOptions {
            write_mode: WriteMode::Optimistic,
            connections: 8,
            schema: Some(temp.schema.clone()),
            exclusive_retries: true,
            ..PgOptions::default()
        },
    )
    .unwrap()
}

/// With `exclusive_retries`, optimistic writers run side by side, and a write begun after
/// `write_alone_next` waits until the writers in flight have ended (it then has no concurrent
/// writer to conflict with); the flag holds for one transaction only.
#[test]
fn a_write_alone_waits_for_the_writers_in_flight() {
    let Some(admin) = common::pg_url("a_write_alone_waits_for_the_writers_in_flight") else {
        return;
    };
    // A database of its own: the writers' advisory lock is per database, and the other tests'
    // writers must not queue on it meanwhile.
    let db = common::PgDatabase::create(&admin, "alone");
    let url = db.url.clone();
    let temp = TempPg::new(&url, WriteMode::Optimistic);
    let store = exclusive_retries(&temp, &url);
    let mut first = store.begin_write().unwrap();
    first.put(b"first", b"1").unwrap();
    // Another shared writer begins beside it.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut w = store.begin_write().unwrap();
            w.put(b"beside", b"1").unwrap();
            w.commit().unwrap();
            tx.send("beside").unwrap();
        });
        assert_eq!(
            rx.recv_timeout(std::time::Duration::from_secs(30)),
            Ok("beside")
        );
        // One that runs alone waits for `first`.
        s.spawn(|| {
            host_server::postgres::write_alone_next();
            let mut w = store.begin_write().unwrap();
            tx.send("alone began").unwrap();
            let seen = w.get(b"first").unwrap();
            w.put(b"alone", b"1").unwrap();
            w.commit().unwrap();
            assert_eq!(
                seen.as_deref(),
                Some(&b"1"[..]),
                "began after `first` committed"
            );
        });
        assert!(rx
            .recv_timeout(std::time::Duration::from_millis(300))
            .is_err());
        first.commit().unwrap();
        assert_eq!(
            rx.recv_timeout(std::time::Duration::from_secs(30)),
            Ok("alone began")
        );
    });
    // The flag was used up: the next writer is a shared one again, which begins while another
    // shared writer is open.
    let open = store.begin_write().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut w = store.begin_write().unwrap();
            w.put(b"after", b"1").unwrap();
            w.commit().unwrap();
            tx.send("after").unwrap();
        });
        assert_eq!(
            rx.recv_timeout(std::time::Duration::from_secs(30)),
            Ok("after")
        );
    });
    drop(open);
    let r = store.begin_read().unwrap();
    for k in [&b"first"[..], b"beside", b"alone", b"after"] {
        assert!(r.get(k).unwrap().is_some());
    }
}

/// Concurrent read-increment-write transactions that conflict and are re-run with the server's
/// pause (`conflict_pause`, alone after 2 conflicting runs) all commit within 4 runs and lose
/// no update.
#[test]
fn conflicting_writers_rerun_with_the_pause_all_commit() {
    let Some(admin) = common::pg_url("conflicting_writers_rerun_with_the_pause_all_commit") else {
        return;
    };
    let db = common::PgDatabase::create(&admin, "pause");
    let url = db.url.clone();
    let temp = TempPg::new(&url, WriteMode::Optimistic);
    let store = exclusive_retries(&temp, &url);
    const THREADS: usize = 4;
    const INCREMENTS: u64 = 25;
    let pause = host_server::postgres::conflict_pause(std::time::Duration::from_millis(5), Some(2));
    let conflicts = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..INCREMENTS {
                    let mut runs = 1;
                    loop {
                        let attempt = store.begin_write().and_then(|mut w| {
                            let n = w
                                .get(b"n")?
                                .map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()));
                            // Long enough for the others to overlap.
                            std::thread::sleep(std::time::Duration::from_millis(1));
                            w.put(b"n", &(n + 1).to_le_bytes())?;
                            w.commit()
                        });
                        match attempt {
                            Ok(()) => break,
                            Err(StoreError::Conflict(_)) if runs < 4 => {
                                conflicts.fetch_add(1, Ordering::Relaxed);
                                pause(runs);
                                runs += 1;
                            }
                            Err(e) => panic!("run {runs}: {e}"),
                        }
                    }
                }
            });
        }
    });
    let r = store.begin_read().unwrap();
    let n = u64::from_le_bytes(r.get(b"n").unwrap().unwrap().try_into().unwrap());
    assert_eq!(n, THREADS as u64 * INCREMENTS);
    // The writers did overlap (the test would prove nothing otherwise).
    assert!(conflicts.load(Ordering::Relaxed) > 0);
}
