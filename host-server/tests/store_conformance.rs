//! The store conformance suite (`engine::core::store::conformance`) on [`SqliteStore`], each store on a
//! fresh database file in its own temporary directory, with the server's default options
//! (WAL, `synchronous=FULL`, pooled readers), concurrent writers included.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use engine::core::store::conformance;
use engine::{ReadTxn, Store, StoreError, WriteTxn};
use host_server::sqlite::{SqliteOptions, SqliteStore};

/// A `SqliteStore` on a fresh directory, removed when dropped (after the store is closed).
struct TempSqlite {
    store: Option<SqliteStore>,
    dir: PathBuf,
}

impl TempSqlite {
    fn new() -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "host-server-conformance-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a temporary directory");
        let store = SqliteStore::open(dir.join("site.sqlite3"), SqliteOptions::default())
            .expect("open a SqliteStore");
        TempSqlite {
            store: Some(store),
            dir,
        }
    }

    fn store(&self) -> Result<&SqliteStore, StoreError> {
        self.store
            .as_ref()
            .ok_or_else(|| StoreError::Misuse("store already closed".into()))
    }
}

impl Drop for TempSqlite {
    fn drop(&mut self) {
        drop(self.store.take());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Store for TempSqlite {
    fn begin_read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        self.store()?.begin_read()
    }

    fn begin_write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        self.store()?.begin_write()
    }
}

#[test]
fn sqlite_store_conforms() {
    conformance::run_all(TempSqlite::new);
}
