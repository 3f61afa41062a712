//! [`SqliteStore`]: the engine's [`Store`] on one SQLite database file.
//!
//! Layout: a single table `kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID`. SQLite compares
//! BLOBs with `memcmp`, so the table's key order is exactly the bytewise order the engine expects.
//!
//! Concurrency: the database runs in WAL mode. There is exactly one writer connection, behind a
//! mutex; a [`WriteTxn`] holds that mutex and runs `BEGIN IMMEDIATE` ... `COMMIT` (or `ROLLBACK` when
//! dropped without committing). Readers never wait for the writer: each [`ReadTxn`] borrows a
//! connection from a small pool, opens a transaction and pins its snapshot at once, so everything it
//! reads comes from the state committed before it began. The connection returns to the pool when the
//! transaction is dropped, with its transaction still open: the next [`ReadTxn`] on it reuses that
//! snapshot when no write has committed since it was taken (the store counts its commits), which
//! saves the `BEGIN`, the first read and the `ROLLBACK` (and SQLite's locking of a read mark in
//! the shared WAL index) per read. A snapshot older than the last commit is never reused: the
//! transaction is ended and a new one begun. The checkpointer also ends idle connections' stale
//! snapshots, so that none keeps the checkpointer from copying the log into the database.
//!
//! Writers are serialized (see "Writers" in [`engine::store`]): the one writer connection, and the
//! exclusive lock on `<db>.lock` that keeps a second process off the database, mean a commit never
//! competes with another writer, so `SQLITE_BUSY` cannot come from one and nothing here reports
//! [`StoreError::Conflict`]. (Readers in WAL mode and the passive checkpointer never make a commit
//! busy.) A busy or locked error, should one still come, stays a backend error.
//!
//! Durability: see [`SyncMode`].

use std::fmt;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use engine::KeyValue;
use engine::{Direction, ReadTxn, Store, StoreError, WriteTxn};
use rusqlite::{Connection, ErrorCode, OptionalExtension};

/// How hard SQLite works to make a commit survive a crash (`PRAGMA synchronous`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SyncMode {
    /// `synchronous=FULL` (the default): every commit fsyncs the write-ahead log before it is
    /// acknowledged. An acknowledged write survives the process being killed *and* the machine
    /// losing power (as far as the disk honours fsync). Costs one fsync per write request.
    #[default]
    Full,
    /// `synchronous=NORMAL`: commits are written to the log but fsynced only at checkpoints.
    /// Still never corrupts the database and survives the process being killed (kill -9), but the
    /// last few acknowledged writes can be lost if the operating system crashes or power fails.
    /// Noticeably faster on slow disks.
    Normal,
}

impl SyncMode {
    fn pragma_value(self) -> &'static str {
        match self {
            SyncMode::Full => "FULL",
            SyncMode::Normal => "NORMAL",
        }
    }
}

impl fmt::Display for SyncMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SyncMode::Full => "full",
            SyncMode::Normal => "normal",
        })
    }
}

/// Settings for [`SqliteStore::open`].
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    /// Most reader connections kept open at once (at least 1). Further concurrent readers wait.
    pub readers: usize,
    /// Durability level of commits.
    pub sync: SyncMode,
    /// How long a statement waits for a lock held by another process before failing.
    pub busy_timeout: Duration,
    /// How long a reader waits for a free pooled connection before failing.
    pub reader_wait: Duration,
    /// Page cache of the writer connection, in KiB (`PRAGMA cache_size`). Writes touch the
    /// interior pages of the whole key space (edits hit any object), so a cache that holds them
    /// saves a read from the OS per write.
    pub writer_cache_kib: u32,
    /// Page cache of each reader connection, in KiB.
    pub reader_cache_kib: u32,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            readers: 4,
            sync: SyncMode::Full,
            busy_timeout: Duration::from_secs(5),
            reader_wait: Duration::from_secs(30),
            writer_cache_kib: 32 * 1024,
            reader_cache_kib: 8 * 1024,
        }
    }
}

/// The engine's key-value store on a SQLite database file (WAL mode, one writer, pooled readers).
pub struct SqliteStore {
    path: PathBuf,
    writer: Mutex<Connection>,
    readers: Arc<ReaderPool>,
    /// Copies the write-ahead log into the database in the background; stopped on drop.
    _checkpointer: Checkpointer,
    /// An exclusive lock on `<db>.lock`, held while the store is open, so that two servers never
    /// share one database (each keeps caches that assume it is the only writer).
    _lock: File,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

const SCHEMA_SQL: &str =
    "CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID";
const STATEMENT_CACHE: usize = 16;

impl SqliteStore {
    /// Open (creating if missing) the database at `path`.
    ///
    /// Fails with a descriptive [`StoreError`] when the file is in use by another server, locked,
    /// not a SQLite database, or damaged.
    pub fn open(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let lock = take_lock(&path)?;
        let writer = open_writer(&path, &options).map_err(|e| open_error(&path, e))?;
        let readers = ReaderPool {
            path: path.clone(),
            options: options.clone(),
            max: options.readers.max(1),
            state: Mutex::new(PoolState::default()),
            available: Condvar::new(),
            commits: AtomicU64::new(0),
        };
        // Open one reader now so that a problem with reader connections shows at startup.
        let first = open_reader(&path, &options).map_err(|e| open_error(&path, e))?;
        readers.lock_state().open = 1;
        readers.release(Pooled::new(first), true);
        let readers = Arc::new(readers);
        let checkpointer = Checkpointer::start(&path, &options, readers.clone())?;
        Ok(SqliteStore {
            path,
            writer: Mutex::new(writer),
            readers,
            _checkpointer: checkpointer,
            _lock: lock,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many keys the database holds (`SELECT count(*)`, for progress reports).
    pub fn key_count(&self) -> Result<u64, StoreError> {
        let mut conn = self.readers.acquire()?;
        let n = conn.end().and_then(|()| {
            conn.conn
                .query_row("SELECT count(*) FROM kv", [], |row| row.get::<_, i64>(0))
                .map_err(store_error)
        });
        self.readers.release(conn, n.is_ok());
        Ok(u64::try_from(n?).unwrap_or(0))
    }
}

/// Take the exclusive lock on `<db>.lock` that keeps a second process off the database (the
/// server holds it while running; `restore` holds it while replacing the file).
pub(crate) fn take_lock(db: &Path) -> Result<File, StoreError> {
    let mut name = db.as_os_str().to_owned();
    name.push(".lock");
    let lock_path = PathBuf::from(name);
    let mut options = OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    {
        // Like the database: the server user's alone.
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options.open(&lock_path).map_err(|e| {
        StoreError::Backend(format!(
            "cannot open lock file {}: {e}",
            lock_path.display()
        ))
    })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(StoreError::Backend(format!(
            "database {} is in use by another process (lock file {} is held); \
             is another host-server running on the same data directory?",
            db.display(),
            lock_path.display()
        ))),
        Err(TryLockError::Error(e)) => Err(StoreError::Backend(format!(
            "cannot lock {}: {e}",
            lock_path.display()
        ))),
    }
}

/// Explain an error that happened while opening the database.
fn open_error(path: &Path, e: rusqlite::Error) -> StoreError {
    let hint = match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            " (another process holds a lock on the database)"
        }
        Some(ErrorCode::NotADatabase) => {
            " (the file is not a SQLite database; move it away or restore it from a backup)"
        }
        Some(ErrorCode::DatabaseCorrupt) => " (the database is damaged; restore it from a backup)",
        Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied | ErrorCode::ReadOnly) => {
            " (check that the file and its directory exist and are writable)"
        }
        _ => "",
    };
    let e = store_error(e);
    let (wrap, text): (fn(String) -> StoreError, String) = match e {
        StoreError::QuotaExceeded(t) => (StoreError::QuotaExceeded, t),
        StoreError::Backend(t) | StoreError::Misuse(t) | StoreError::Conflict(t) => {
            (StoreError::Backend, t)
        }
    };
    wrap(format!("{}: {text}{hint}", path.display()))
}

/// Map a SQLite error to the engine's error type; a full disk becomes `QuotaExceeded` (507).
fn store_error(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => StoreError::QuotaExceeded(e.to_string()),
        _ => StoreError::Backend(e.to_string()),
    }
}

fn configure_common(conn: &Connection, options: &SqliteOptions) -> rusqlite::Result<()> {
    conn.busy_timeout(options.busy_timeout)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(())
}

fn open_writer(path: &Path, options: &SqliteOptions) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    configure_common(&conn, options)?;
    conn.pragma_update(None, "cache_size", -i64::from(options.writer_cache_kib))?;
    let mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            Some(format!(
                "cannot switch the database to WAL mode (journal_mode is {mode:?})"
            )),
        ));
    }
    conn.pragma_update(None, "synchronous", options.sync.pragma_value())?;
    // Checkpoints run on their own thread (`Checkpointer`); the writer checkpoints only if that
    // falls far behind, so a commit rarely pays for copying the log into the database.
    conn.pragma_update(None, "wal_autocheckpoint", WRITER_AUTOCHECKPOINT_PAGES)?;
    conn.execute_batch(SCHEMA_SQL)?;
    // Reading a row proves the table is readable (a damaged file may only fail here).
    conn.query_row("SELECT k FROM kv LIMIT 1", [], |_| Ok(()))
        .optional()?;
    Ok(conn)
}

fn open_reader(path: &Path, options: &SqliteOptions) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    configure_common(&conn, options)?;
    // Belt and braces: a pooled reader can never write, whatever a bug asks of it.
    conn.pragma_update(None, "query_only", true)?;
    conn.pragma_update(None, "cache_size", -i64::from(options.reader_cache_kib))?;
    Ok(conn)
}

/// Pages of write-ahead log after which the writer connection checkpoints by itself (a
/// fallback; normally the background checkpointer keeps the log far shorter).
const WRITER_AUTOCHECKPOINT_PAGES: i64 = 20_000;
/// How often the background checkpointer copies the log into the database.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);

/// A thread with its own connection that runs `PRAGMA wal_checkpoint(PASSIVE)` every
/// [`CHECKPOINT_EVERY`]: it copies committed pages from the log into the database without
/// blocking the writer or any reader. With SQLite's default the writer did this inside a commit
/// every 1,000 pages, which was 14% of its time under a stream of creates. Dropping it stops the
/// thread (after the checkpoint in progress, if any).
struct Checkpointer {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Checkpointer {
    fn start(
        path: &Path,
        options: &SqliteOptions,
        readers: Arc<ReaderPool>,
    ) -> Result<Self, StoreError> {
        let conn = Connection::open(path)
            .and_then(|c| configure_common(&c, options).map(|()| c))
            .map_err(|e| open_error(path, e))?;
        let (stop, rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("wal-checkpoint".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(CHECKPOINT_EVERY) {
                    readers.end_stale();
                    if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                    {
                        tracing::warn!(error = %e, "background WAL checkpoint failed");
                    }
                }
            })
            .map_err(|e| StoreError::Backend(format!("cannot start the checkpoint thread: {e}")))?;
        Ok(Checkpointer {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reader connections, opened lazily up to `max`.
struct ReaderPool {
    path: PathBuf,
    options: SqliteOptions,
    max: usize,
    state: Mutex<PoolState>,
    available: Condvar,
    /// Write transactions committed so far (counted after their `COMMIT` returned): a pooled
    /// snapshot taken at this count is current.
    commits: AtomicU64,
}

/// A reader connection and the snapshot its open transaction holds, if any.
struct Pooled {
    conn: Connection,
    /// [`ReaderPool::commits`] read just before its open transaction took its snapshot (`None`:
    /// no transaction open). The snapshot holds every commit counted up to it.
    snapshot: Option<u64>,
}

impl Pooled {
    fn new(conn: Connection) -> Self {
        Pooled {
            conn,
            snapshot: None,
        }
    }

    /// End the open read transaction, if any.
    fn end(&mut self) -> Result<(), StoreError> {
        self.snapshot = None;
        if self.conn.is_autocommit() {
            Ok(())
        } else {
            run(&self.conn, "ROLLBACK")
        }
    }

    /// Make the connection's open transaction hold a snapshot with every commit counted up to
    /// now (`commits`): the one it holds when no commit came since, else a new one.
    fn current(&mut self, commits: &AtomicU64) -> Result<(), StoreError> {
        let now = commits.load(AtomicOrdering::Acquire);
        if self.snapshot == Some(now) && !self.conn.is_autocommit() {
            return Ok(());
        }
        self.end()?;
        run(&self.conn, "BEGIN DEFERRED")?;
        // A deferred transaction takes its snapshot at the first read; read now, so the
        // transaction sees exactly what was committed before `begin_read` returned.
        self.conn
            .prepare_cached("SELECT 1 FROM kv LIMIT 1")
            .and_then(|mut stmt| stmt.query_row([], |_| Ok(())).optional())
            .map_err(store_error)?;
        self.snapshot = Some(now);
        Ok(())
    }
}

#[derive(Default)]
struct PoolState {
    idle: Vec<Pooled>,
    /// Connections in existence (idle or lent out).
    open: usize,
    /// Threads waiting in [`ReaderPool::acquire`] for a connection: only then does giving one
    /// back wake a thread (a condition variable's notify is a system call even when no one
    /// waits, and a read request gives a connection back every time).
    waiting: usize,
}

impl ReaderPool {
    fn lock_state(&self) -> MutexGuard<'_, PoolState> {
        // The state is two plain fields that are always consistent; a panic elsewhere cannot
        // leave it half-updated, so a poisoned lock is safe to keep using.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn acquire(&self) -> Result<Pooled, StoreError> {
        let mut state = self.lock_state();
        loop {
            if let Some(conn) = state.idle.pop() {
                return Ok(conn);
            }
            if state.open < self.max {
                state.open += 1;
                drop(state);
                return match open_reader(&self.path, &self.options) {
                    Ok(conn) => Ok(Pooled::new(conn)),
                    Err(e) => {
                        self.forget_one();
                        Err(store_error(e))
                    }
                };
            }
            state.waiting += 1;
            let (next, wait) = self
                .available
                .wait_timeout(state, self.options.reader_wait)
                .unwrap_or_else(PoisonError::into_inner);
            state = next;
            state.waiting -= 1;
            if wait.timed_out() && state.idle.is_empty() && state.open >= self.max {
                return Err(StoreError::Backend(format!(
                    "all {} reader connections stayed busy for {:?}",
                    self.max, self.options.reader_wait
                )));
            }
        }
    }

    /// Give a connection back; an unhealthy one is closed and a fresh one opened on demand.
    fn release(&self, conn: Pooled, healthy: bool) {
        if healthy {
            let mut state = self.lock_state();
            state.idle.push(conn);
            let wake = state.waiting > 0;
            drop(state);
            if wake {
                self.available.notify_one();
            }
        } else {
            drop(conn);
            self.forget_one();
        }
    }

    /// End the open transactions of idle connections whose snapshot is older than the last
    /// commit (they would keep the log from being checkpointed past them).
    fn end_stale(&self) {
        let now = self.commits.load(AtomicOrdering::Acquire);
        let mut state = self.lock_state();
        let mut failed = 0;
        state.idle.retain_mut(|p| {
            if p.snapshot.is_none_or(|s| s == now) {
                return true;
            }
            let ok = p.end().is_ok();
            failed += usize::from(!ok);
            ok
        });
        state.open = state.open.saturating_sub(failed);
    }

    fn forget_one(&self) {
        let mut state = self.lock_state();
        state.open = state.open.saturating_sub(1);
        let wake = state.waiting > 0;
        drop(state);
        if wake {
            self.available.notify_one();
        }
    }
}

fn run(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut stmt| stmt.execute([]))
        .map(|_| ())
        .map_err(store_error)
}

fn get_on(conn: &Connection, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT v FROM kv WHERE k = ?1")
        .map_err(store_error)?;
    stmt.query_row([key], |row| row.get::<_, Vec<u8>>(0))
        .optional()
        .map_err(store_error)
}

fn scan_on(
    conn: &Connection,
    start: &[u8],
    end: &[u8],
    dir: Direction,
    limit: usize,
) -> Result<Vec<KeyValue>, StoreError> {
    if engine::scan_is_empty(start, end, limit) {
        return Ok(Vec::new());
    }
    // No `LIMIT ?` in the SQL: SQLite (3.54) reads a bound LIMIT while planning and marks the
    // statement to be compiled again whenever that value changes, so alternating
    // limits (1, then unbounded) re-prepared a cached statement on most calls (about 50,000
    // instructions each, twice per create). Rows are produced lazily, so stopping after
    // `limit` of them reads no more than a LIMIT would.
    let sql = match (dir, end.is_empty()) {
        (Direction::Forward, false) => {
            "SELECT k, v FROM kv WHERE k >= ?1 AND k < ?2 ORDER BY k ASC"
        }
        (Direction::Reverse, false) => {
            "SELECT k, v FROM kv WHERE k >= ?1 AND k < ?2 ORDER BY k DESC"
        }
        (Direction::Forward, true) => "SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k ASC",
        (Direction::Reverse, true) => "SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k DESC",
    };
    let mut stmt = conn.prepare_cached(sql).map_err(store_error)?;
    let mut rows = if end.is_empty() {
        stmt.query(rusqlite::params![start])
    } else {
        stmt.query(rusqlite::params![start, end])
    }
    .map_err(store_error)?;
    let mut out = Vec::new();
    while out.len() < limit {
        match rows.next().map_err(store_error)? {
            Some(row) => out.push((
                row.get::<_, Vec<u8>>(0).map_err(store_error)?,
                row.get::<_, Vec<u8>>(1).map_err(store_error)?,
            )),
            None => break,
        }
    }
    Ok(out)
}

impl Store for SqliteStore {
    fn begin_read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        let mut conn = self.readers.acquire()?;
        let begun = conn.current(&self.readers.commits);
        let txn = SqliteRead {
            pool: &self.readers,
            conn: Some(conn),
            failed: std::cell::Cell::new(begun.is_err()),
        };
        // On failure, dropping `txn` ends whatever was begun and returns the connection.
        begun.map(|()| Box::new(txn) as Box<dyn ReadTxn + '_>)
    }

    fn begin_write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        // A panic while writing unwinds through `SqliteWrite::drop`, which rolls back; the
        // connection is therefore clean and a poisoned lock can be taken over.
        let conn = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if !conn.is_autocommit() {
            run(&conn, "ROLLBACK")?;
        }
        run(&conn, "BEGIN IMMEDIATE")?;
        Ok(Box::new(SqliteWrite {
            conn,
            commits: &self.readers.commits,
        }))
    }
}

/// A read transaction on a pooled connection.
struct SqliteRead<'a> {
    pool: &'a ReaderPool,
    /// Always `Some` until dropped.
    conn: Option<Pooled>,
    /// Whether a statement failed: then the transaction is ended rather than kept for the next
    /// reader.
    failed: std::cell::Cell<bool>,
}

impl SqliteRead<'_> {
    fn conn(&self) -> Result<&Connection, StoreError> {
        self.conn
            .as_ref()
            .map(|p| &p.conn)
            .ok_or_else(|| StoreError::Misuse("read transaction already ended".into()))
    }

    /// `result`, noting a failure.
    fn noted<T>(&self, result: Result<T, StoreError>) -> Result<T, StoreError> {
        if result.is_err() {
            self.failed.set(true);
        }
        result
    }
}

impl ReadTxn for SqliteRead<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.noted(get_on(self.conn()?, key))
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        dir: Direction,
        limit: usize,
    ) -> Result<Vec<KeyValue>, StoreError> {
        self.noted(scan_on(self.conn()?, start, end, dir, limit))
    }
}

impl Drop for SqliteRead<'_> {
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            // The snapshot stays open for the next reader ([`Pooled::current`]), unless
            // something failed.
            let healthy = !self.failed.get() || conn.end().is_ok();
            self.pool.release(conn, healthy);
        }
    }
}

/// The write transaction: holds the writer connection for its whole life.
struct SqliteWrite<'a> {
    conn: MutexGuard<'a, Connection>,
    /// The store's commit count ([`ReaderPool::commits`]), incremented after each commit.
    commits: &'a AtomicU64,
}

impl ReadTxn for SqliteWrite<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        get_on(&self.conn, key)
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        dir: Direction,
        limit: usize,
    ) -> Result<Vec<KeyValue>, StoreError> {
        scan_on(&self.conn, start, end, dir, limit)
    }
}

impl WriteTxn for SqliteWrite<'_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "INSERT INTO kv (k, v) VALUES (?1, ?2) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
            )
            .map_err(store_error)?;
        stmt.execute(rusqlite::params![key, value])
            .map(|_| ())
            .map_err(store_error)
    }

    fn delete(&mut self, key: &[u8]) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("DELETE FROM kv WHERE k = ?1")
            .map_err(store_error)?;
        stmt.execute([key]).map(|_| ()).map_err(store_error)
    }

    fn commit(self: Box<Self>) -> Result<(), StoreError> {
        // If COMMIT fails (disk full, I/O error) the transaction is still open; `drop` then
        // rolls it back.
        run(&self.conn, "COMMIT")?;
        self.commits.fetch_add(1, AtomicOrdering::Release);
        Ok(())
    }
}

impl Drop for SqliteWrite<'_> {
    fn drop(&mut self) {
        if !self.conn.is_autocommit() {
            if let Err(e) = run(&self.conn, "ROLLBACK") {
                tracing::error!(error = %e, "rolling back a write transaction failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A fresh directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> Self {
            static N: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "host-server-sqlite-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        fn db(&self) -> PathBuf {
            self.0.join("site.sqlite3")
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn open(dir: &TempDir) -> SqliteStore {
        SqliteStore::open(dir.db(), SqliteOptions::default()).unwrap()
    }

    fn keys(rows: &[KeyValue]) -> Vec<&[u8]> {
        rows.iter().map(|(k, _)| k.as_slice()).collect()
    }

    fn fill(store: &SqliteStore, keys: &[&[u8]]) {
        let mut w = store.begin_write().unwrap();
        for k in keys {
            w.put(k, &[b'v', k[0]]).unwrap();
        }
        w.commit().unwrap();
    }

    #[test]
    fn committed_writes_are_visible_and_dropped_ones_are_not() {
        let dir = TempDir::new();
        let s = open(&dir);
        {
            let mut w = s.begin_write().unwrap();
            w.put(b"a", b"1").unwrap();
            assert_eq!(w.get(b"a").unwrap(), Some(b"1".to_vec()));
            // dropped without commit
        }
        assert_eq!(s.begin_read().unwrap().get(b"a").unwrap(), None);

        let mut w = s.begin_write().unwrap();
        w.put(b"a", b"1").unwrap();
        w.put(b"a", b"2").unwrap();
        w.put(b"b", b"3").unwrap();
        w.commit().unwrap();
        let r = s.begin_read().unwrap();
        assert_eq!(r.get(b"a").unwrap(), Some(b"2".to_vec()));
        assert_eq!(r.get(b"b").unwrap(), Some(b"3".to_vec()));
        drop(r);

        let mut w = s.begin_write().unwrap();
        w.delete(b"a").unwrap();
        w.delete(b"missing").unwrap();
        assert_eq!(w.get(b"a").unwrap(), None);
        drop(w);
        assert_eq!(
            s.begin_read().unwrap().get(b"a").unwrap(),
            Some(b"2".to_vec())
        );
    }

    #[test]
    fn scans_respect_bounds_direction_and_limit() {
        let dir = TempDir::new();
        let s = open(&dir);
        fill(&s, &[b"a", b"b", b"ba", b"c", b"d", &[0xFF, 0x01]]);
        let r = s.begin_read().unwrap();

        let fwd = r.scan(b"b", b"d", Direction::Forward, 10).unwrap();
        assert_eq!(keys(&fwd), vec![&b"b"[..], b"ba", b"c"]);
        assert_eq!(fwd[0].1, b"vb".to_vec());

        let rev = r.scan(b"b", b"d", Direction::Reverse, 10).unwrap();
        assert_eq!(keys(&rev), vec![&b"c"[..], b"ba", b"b"]);

        let lim = r.scan(b"a", b"z", Direction::Forward, 2).unwrap();
        assert_eq!(keys(&lim), vec![&b"a"[..], b"b"]);
        let lim = r.scan(b"a", b"z", Direction::Reverse, 2).unwrap();
        assert_eq!(keys(&lim), vec![&b"d"[..], b"c"]);

        // An empty end means "no upper bound"; bytes sort as unsigned (0xFF after ASCII).
        let unb = r.scan(b"c", b"", Direction::Forward, 10).unwrap();
        assert_eq!(keys(&unb), vec![&b"c"[..], b"d", &[0xFF, 0x01]]);
        let unb = r.scan(b"", b"", Direction::Reverse, 1).unwrap();
        assert_eq!(keys(&unb), vec![&[0xFF, 0x01][..]]);

        assert!(r
            .scan(b"a", b"z", Direction::Forward, 0)
            .unwrap()
            .is_empty());
        assert!(r
            .scan(b"d", b"b", Direction::Forward, 5)
            .unwrap()
            .is_empty());
        assert_eq!(
            r.scan(b"a", b"", Direction::Forward, usize::MAX)
                .unwrap()
                .len(),
            6
        );
    }

    #[test]
    fn write_transaction_scans_see_its_own_writes() {
        let dir = TempDir::new();
        let s = open(&dir);
        fill(&s, &[b"a", b"c", b"e"]);
        let mut w = s.begin_write().unwrap();
        w.delete(b"c").unwrap();
        w.put(b"d", b"x").unwrap();
        let rows = w.scan(b"a", b"", Direction::Forward, 10).unwrap();
        assert_eq!(keys(&rows), vec![&b"a"[..], b"d", b"e"]);
    }

    #[test]
    fn reader_keeps_its_snapshot_while_a_writer_commits() {
        let dir = TempDir::new();
        let s = open(&dir);
        fill(&s, &[b"a"]);
        let before = s.begin_read().unwrap();
        // This one reads nothing until after the commit: its snapshot is still the one taken
        // when it began.
        let untouched = s.begin_read().unwrap();

        let mut w = s.begin_write().unwrap();
        w.put(b"a", b"new").unwrap();
        w.put(b"b", b"new").unwrap();
        // Readers are not blocked by the open write transaction, old or new...
        assert_eq!(before.get(b"a").unwrap(), Some(b"va".to_vec()));
        let during = s.begin_read().unwrap();
        assert_eq!(during.get(b"a").unwrap(), Some(b"va".to_vec()));
        drop(during);
        w.commit().unwrap();

        // ...and after the commit it still sees its snapshot, for gets and scans alike.
        assert_eq!(before.get(b"a").unwrap(), Some(b"va".to_vec()));
        assert_eq!(before.get(b"b").unwrap(), None);
        let rows = before.scan(b"", b"", Direction::Forward, 10).unwrap();
        assert_eq!(keys(&rows), vec![&b"a"[..]]);

        assert_eq!(untouched.get(b"b").unwrap(), None);
        assert_eq!(untouched.get(b"a").unwrap(), Some(b"va".to_vec()));

        let after = s.begin_read().unwrap();
        assert_eq!(after.get(b"a").unwrap(), Some(b"new".to_vec()));
        assert_eq!(after.get(b"b").unwrap(), Some(b"new".to_vec()));
    }

    #[test]
    fn a_pooled_snapshot_is_reused_only_until_the_next_commit() {
        let dir = TempDir::new();
        let opts = SqliteOptions {
            readers: 1,
            ..SqliteOptions::default()
        };
        let s = SqliteStore::open(dir.db(), opts).unwrap();
        fill(&s, &[b"a"]);
        let snapshot = |s: &SqliteStore| {
            let state = s.readers.lock_state();
            state
                .idle
                .first()
                .map(|p| (p.snapshot, p.conn.is_autocommit()))
        };
        assert_eq!(s.begin_read().unwrap().get(b"b").unwrap(), None);
        // Back in the pool with its transaction open, at the current commit count.
        let first = snapshot(&s).expect("an idle reader");
        assert_eq!(first, (Some(1), false));
        assert_eq!(
            s.begin_read().unwrap().get(b"a").unwrap(),
            Some(b"va".to_vec())
        );
        assert_eq!(snapshot(&s), Some(first));
        // A commit makes the pooled snapshot stale: the next reader sees the write.
        fill(&s, &[b"b"]);
        assert_eq!(
            s.begin_read().unwrap().get(b"b").unwrap(),
            Some(b"vb".to_vec())
        );
        assert_eq!(snapshot(&s), Some((Some(2), false)));
        // The checkpointer's sweep ends a stale idle snapshot and leaves a current one.
        s.readers.end_stale();
        assert_eq!(snapshot(&s), Some((Some(2), false)));
        fill(&s, &[b"c"]);
        s.readers.end_stale();
        assert_eq!(snapshot(&s), Some((None, true)));
        assert_eq!(
            s.begin_read().unwrap().get(b"c").unwrap(),
            Some(b"vc".to_vec())
        );
    }

    #[test]
    fn readers_run_concurrently_beyond_one_and_pool_is_bounded() {
        let dir = TempDir::new();
        let opts = SqliteOptions {
            readers: 2,
            reader_wait: Duration::from_millis(50),
            ..SqliteOptions::default()
        };
        let s = SqliteStore::open(dir.db(), opts).unwrap();
        let r1 = s.begin_read().unwrap();
        let r2 = s.begin_read().unwrap();
        // A third concurrent reader has to wait and, with nothing released, gives up.
        assert!(matches!(s.begin_read(), Err(StoreError::Backend(_))));
        drop(r1);
        let r3 = s.begin_read().unwrap();
        assert_eq!(r3.get(b"x").unwrap(), None);
        drop(r2);
    }

    #[test]
    fn a_writer_that_panics_is_rolled_back_and_the_store_stays_usable() {
        let dir = TempDir::new();
        let s = open(&dir);
        let outcome = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let mut w = s.begin_write().unwrap();
                    w.put(b"p", b"1").unwrap();
                    panic!("simulated bug inside a write transaction");
                })
                .join()
        });
        assert!(outcome.is_err());
        assert_eq!(s.begin_read().unwrap().get(b"p").unwrap(), None);
        fill(&s, &[b"q"]);
        assert!(s.begin_read().unwrap().get(b"q").unwrap().is_some());
    }

    #[test]
    fn data_persists_across_reopen() {
        let dir = TempDir::new();
        {
            let s = open(&dir);
            fill(&s, &[b"k"]);
        }
        let s = open(&dir);
        assert_eq!(
            s.begin_read().unwrap().get(b"k").unwrap(),
            Some(b"vk".to_vec())
        );
    }

    #[test]
    fn second_open_of_the_same_database_is_refused() {
        let dir = TempDir::new();
        let _first = open(&dir);
        let err = SqliteStore::open(dir.db(), SqliteOptions::default()).unwrap_err();
        assert!(
            err.to_string().contains("in use by another process"),
            "{err}"
        );
    }

    #[test]
    fn a_file_that_is_not_a_database_is_reported() {
        let dir = TempDir::new();
        std::fs::write(dir.db(), vec![b'x'; 8192]).unwrap();
        let err = SqliteStore::open(dir.db(), SqliteOptions::default()).unwrap_err();
        assert!(err.to_string().contains("not a SQLite database"), "{err}");
    }

    #[test]
    fn disk_full_maps_to_quota_exceeded() {
        let full = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        );
        assert!(matches!(store_error(full), StoreError::QuotaExceeded(_)));
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            None,
        );
        assert!(matches!(store_error(busy), StoreError::Backend(_)));
    }

    #[test]
    fn database_full_on_commit_is_quota_exceeded_and_rolls_back() {
        let dir = TempDir::new();
        let s = open(&dir);
        fill(&s, &[b"a"]);
        // Cap the file size so that a large write cannot fit: SQLite then fails with SQLITE_FULL.
        {
            let w = s.writer.lock().unwrap();
            let pages: i64 = w
                .pragma_query_value(None, "page_count", |r| r.get(0))
                .unwrap();
            w.pragma_update(None, "max_page_count", pages + 2).unwrap();
        }
        let mut w = s.begin_write().unwrap();
        let big = vec![7u8; 64 * 1024];
        let res = w.put(b"big", &big).and_then(|()| w.commit());
        assert!(matches!(res, Err(StoreError::QuotaExceeded(_))), "{res:?}");
        assert_eq!(s.begin_read().unwrap().get(b"big").unwrap(), None);
        // The store keeps working afterwards.
        fill(&s, &[b"z"]);
        assert!(s.begin_read().unwrap().get(b"z").unwrap().is_some());
    }
}
