//! [`PgStore`]: the engine's [`Store`] on a PostgreSQL database, which several servers may share.
//!
//! Layout: one table `kv(k bytea PRIMARY KEY, v bytea NOT NULL)`, created when missing. PostgreSQL
//! compares `bytea` bytewise (as unsigned bytes, a prefix first), which is exactly the order the
//! engine expects; values of any size are kept out of line by TOAST.
//!
//! Connections come from a small pool ([`PgOptions::connections`]); a transaction holds one for its
//! whole life and gives it back when it ends. The client is the synchronous `postgres` crate,
//! which runs its own small runtime on the calling thread: a transaction must therefore never be
//! used from inside an async task (host-server runs every request that reads the store on its
//! blocking pool when the store is PostgreSQL).
//!
//! **Reads** run in `REPEATABLE READ READ ONLY` transactions whose snapshot is taken when
//! [`Store::begin_read`] returns; they never wait for writers and never fail with a conflict.
//!
//! **Writes**: puts and deletes are buffered in the transaction ([`Overlay`], so it reads its own
//! writes) and sent in a few statements at commit (one `DELETE ... = ANY`, one `INSERT ... SELECT
//! unnest ... ON CONFLICT DO UPDATE` per few MiB). How writers are kept apart is the
//! [`WriteMode`]:
//! - [`WriteMode::Locked`] (the default): one writer at a time across all servers. Before its
//!   transaction begins, a writer takes a session-level advisory lock (`pg_advisory_lock`), held
//!   until the transaction has ended (then `pg_advisory_unlock`; a session that dies releases it
//!   too); the transaction, begun once the lock is granted, reads the latest committed state and
//!   nobody else writes until it ends. This backend is then *serialized* in the sense of the
//!   store contract ([`engine::store`]): `begin_write` waits, and no conflict is reported. The
//!   transaction is `SERIALIZABLE` all the same, so that a server started in the other mode on
//!   the same database by mistake cannot make it lose an update (the two then conflict and one
//!   retries).
//! - [`WriteMode::Optimistic`]: `SERIALIZABLE` transactions that run side by side; PostgreSQL
//!   reports a serialization failure (SQLSTATE 40001) or a deadlock (40P01) when two of them
//!   interfere, which becomes [`StoreError::Conflict`] and makes the engine run the request again.
//!   The snapshot is taken when `begin_write` returns, so a concurrent commit of a key this
//!   transaction also writes is always caught at flush. A read-write overlap that still has a
//!   serial order (this transaction read a key that another one overwrote since, and writes only
//!   keys nobody else touched) may commit, ordered before the other: PostgreSQL's serializable
//!   isolation allows it, and the result is the same as if the two had run one after the other.
//!   Since every engine write also moves the store generation (`s:generation`), two write
//!   requests of the engine always write a common key, so they always conflict and one retries.
//!
//! **Retries** (optimistic mode): PostgreSQL's documentation asks that serializable transactions
//! that failed be retried, and a request that conflicted is run again by the engine
//! ([`engine::ConflictRetry`]); a re-run at once mostly meets the same writers again, so the
//! server pauses first ([`conflict_pause`]: a growing pause with random jitter). With
//! [`PgOptions::exclusive_retries`], every optimistic writer also holds the writers' advisory
//! lock in *shared* mode for its transaction, and a request that has conflicted often enough runs
//! its next attempt holding it *exclusively* ([`write_alone_next`]): it waits for the writers
//! in flight to end, and no other writer begins until it has ended, so that attempt has no
//! concurrent writer to conflict with. Every transaction stays `SERIALIZABLE`; the lock only
//! decides who runs beside whom. (PostgreSQL queues a shared request behind a waiting exclusive
//! one, so the exclusive attempt is not starved.)
//!
//! Servers sharing a database should use the same write mode (mixing them stays correct, as every
//! writer is `SERIALIZABLE`, but the locked ones then meet conflicts too).
//!
//! Durability is PostgreSQL's: with its default `synchronous_commit = on`, a commit is flushed
//! to its write-ahead log before it is acknowledged.

use std::cell::RefCell;
use std::fmt;
use std::str::FromStr;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use ::postgres::error::SqlState;
use ::postgres::{Client, NoTls, Statement};
use engine::{Direction, ReadTxn, Store, StoreError, WriteTxn};
use engine::{KeyValue, Overlay};

/// How write transactions of several servers are kept apart (see the [module documentation](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum WriteMode {
    /// One writer at a time across all servers (`pg_advisory_lock`); never a conflict.
    #[default]
    Locked,
    /// `SERIALIZABLE` transactions side by side; a conflict makes the engine retry the request.
    Optimistic,
}

impl fmt::Display for WriteMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WriteMode::Locked => "locked",
            WriteMode::Optimistic => "optimistic",
        })
    }
}

/// Settings for [`PgStore::open`].
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// Most connections this store keeps open at once (at least 2: a write transaction may read
    /// in a read transaction of its own meanwhile). Further transactions wait for one.
    pub connections: usize,
    /// How write transactions are kept apart.
    pub write_mode: WriteMode,
    /// How long a transaction waits for a free pooled connection before failing.
    pub connection_wait: Duration,
    /// The schema the table lives in (`search_path`), when not the database's default. Tests
    /// use one schema per store.
    pub schema: Option<String>,
    /// Optimistic mode: every write transaction holds the writers' advisory lock in shared mode,
    /// so that one begun after [`write_alone_next`] (holding it exclusively) runs with no other
    /// writer beside it (see the [module documentation](self)). Costs one round trip per write.
    pub exclusive_retries: bool,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            connections: 16,
            write_mode: WriteMode::Locked,
            connection_wait: Duration::from_secs(30),
            schema: None,
            exclusive_retries: false,
        }
    }
}

/// Key of the advisory lock that [`WriteMode::Locked`] writers take (any fixed number; advisory
/// locks are per database). "plonekv" in ASCII.
pub const WRITER_LOCK: i64 = 0x0070_6c6f_6e65_6b76;

/// Largest number of value bytes sent in one `INSERT` at commit (more goes in further ones).
const FLUSH_BYTES: usize = 8 * 1024 * 1024;

const SCHEMA_SQL: &str = "CREATE TABLE IF NOT EXISTS kv (k bytea PRIMARY KEY, v bytea NOT NULL)";

/// The engine's key-value store on a PostgreSQL database (see the [module documentation](self)).
pub struct PgStore {
    config: ::postgres::Config,
    options: PgOptions,
    pool: Mutex<PoolState>,
    available: Condvar,
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore")
            .field("hosts", &self.config.get_hosts())
            .field("dbname", &self.config.get_dbname())
            .field("write_mode", &self.options.write_mode)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct PoolState {
    idle: Vec<Conn>,
    /// Connections open now, idle or in use.
    open: usize,
}

/// One connection with its prepared statements.
struct Conn {
    client: Client,
    get: Statement,
    /// Forward/reverse, bounded/unbounded above.
    scan_fwd: Statement,
    scan_rev: Statement,
    scan_fwd_open: Statement,
    scan_rev_open: Statement,
    upsert: Statement,
    delete: Statement,
}

impl PgStore {
    /// Connect to the database at `url` (`postgres://user:password@host:port/dbname`, or
    /// key=value settings; a Unix socket directory as `host=/run/postgresql`), create the table
    /// when missing and keep the connection for the pool.
    ///
    /// Fails with a descriptive [`StoreError`] when the database cannot be reached or the table
    /// cannot be created.
    pub fn open(url: &str, options: PgOptions) -> Result<Self, StoreError> {
        let store = PgStore::new(url, "host-server", options)?;
        let mut client = store.connect_client()?;
        // Several servers may start at once on an empty database: one creates the table.
        let mut txn = client.transaction().map_err(pg_error)?;
        txn.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITER_LOCK])
            .map_err(pg_error)?;
        if let Some(schema) = &store.options.schema {
            txn.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {}", quote(schema)))
                .map_err(pg_error)?;
        }
        txn.batch_execute(SCHEMA_SQL).map_err(pg_error)?;
        txn.commit().map_err(pg_error)?;
        let conn = prepare(client)?;
        store.lock_pool().open = 1;
        store.release(conn);
        Ok(store)
    }

    /// The store for `url`, with no connection yet.
    fn new(url: &str, application: &str, options: PgOptions) -> Result<Self, StoreError> {
        let mut config = ::postgres::Config::from_str(url)
            .map_err(|e| StoreError::Backend(format!("invalid PostgreSQL URL: {e}")))?;
        if config.get_application_name().is_none() {
            config.application_name(application);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if let Some(schema) = &options.schema {
            config.options(&format!(
                "-c search_path={}",
                quote(schema).replace(' ', "\\ ")
            ));
        }
        Ok(PgStore {
            config,
            options: PgOptions {
                connections: options.connections.max(2),
                ..options
            },
            pool: Mutex::new(PoolState::default()),
            available: Condvar::new(),
        })
    }

    /// Connect to a read replica at `url` (a hot standby: read-only, so the table is not
    /// created; it must be there, replicated from the primary). Only read transactions may be
    /// begun on it.
    pub fn open_read_only(url: &str, options: PgOptions) -> Result<Self, StoreError> {
        let store = PgStore::new(url, "host-server (reads)", options)?;
        let conn = prepare(store.connect_client()?)?;
        store.lock_pool().open = 1;
        store.release(conn);
        Ok(store)
    }

    /// The write mode in use.
    pub fn write_mode(&self) -> WriteMode {
        self.options.write_mode
    }

    /// The database server's version (`SHOW server_version`).
    pub fn server_version(&self) -> Result<String, StoreError> {
        let mut conn = self.acquire()?;
        let v = conn
            .client
            .query_one("SHOW server_version", &[])
            .and_then(|row| row.try_get::<_, String>(0))
            .map_err(pg_error);
        self.release(conn);
        v
    }

    /// Whether the table holds no key at all (the target of a migration must be empty).
    pub fn is_empty(&self) -> Result<bool, StoreError> {
        let r = self.begin_read()?;
        Ok(r.scan(b"", b"", Direction::Forward, 1)?.is_empty())
    }

    /// Remove every key (`TRUNCATE`): for `host-server migrate --replace` only.
    pub fn clear(&self) -> Result<(), StoreError> {
        let mut conn = self.acquire()?;
        let r = conn.client.batch_execute("TRUNCATE kv").map_err(pg_error);
        self.release(conn);
        r
    }

    fn connect_client(&self) -> Result<Client, StoreError> {
        self.config.connect(NoTls).map_err(|e| {
            StoreError::Backend(format!(
                "cannot connect to PostgreSQL ({:?} / {:?}): {e}",
                self.config.get_hosts(),
                self.config.get_dbname().unwrap_or("")
            ))
        })
    }

    fn lock_pool(&self) -> MutexGuard<'_, PoolState> {
        self.pool.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A connection from the pool, opening one when fewer than the maximum are open.
    fn acquire(&self) -> Result<Conn, StoreError> {
        let deadline = std::time::Instant::now() + self.options.connection_wait;
        let mut state = self.lock_pool();
        loop {
            if let Some(conn) = state.idle.pop() {
                return Ok(conn);
            }
            if state.open < self.options.connections {
                state.open += 1;
                drop(state);
                let opened = self.connect_client().and_then(prepare);
                if opened.is_err() {
                    self.forget_one();
                }
                return opened;
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return Err(StoreError::Backend(format!(
                    "no PostgreSQL connection free within {:?} ({} in use)",
                    self.options.connection_wait, state.open
                )));
            }
            state = self
                .available
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Give a connection back (closed ones are dropped and their place freed).
    fn release(&self, conn: Conn) {
        if conn.client.is_closed() {
            drop(conn);
            self.forget_one();
            return;
        }
        self.lock_pool().idle.push(conn);
        self.available.notify_one();
    }

    fn forget_one(&self) {
        let mut state = self.lock_pool();
        state.open = state.open.saturating_sub(1);
        drop(state);
        self.available.notify_one();
    }

    /// Begin a transaction with `sql` on a pooled connection; on failure the connection is
    /// rolled back (or dropped when broken) and returned.
    fn begin(&self, sql: &str) -> Result<Conn, StoreError> {
        let mut conn = self.acquire()?;
        match conn.client.batch_execute(sql) {
            Ok(()) => Ok(conn),
            Err(e) => {
                let _ = conn.client.batch_execute("ROLLBACK");
                self.release(conn);
                Err(pg_error(e))
            }
        }
    }
}

/// `name` as a quoted SQL identifier.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn prepare(mut client: Client) -> Result<Conn, StoreError> {
    let mut p = |sql: &str| client.prepare(sql).map_err(pg_error);
    let get = p("SELECT v FROM kv WHERE k = $1")?;
    let scan_fwd = p("SELECT k, v FROM kv WHERE k >= $1 AND k < $2 ORDER BY k ASC LIMIT $3")?;
    let scan_rev = p("SELECT k, v FROM kv WHERE k >= $1 AND k < $2 ORDER BY k DESC LIMIT $3")?;
    let scan_fwd_open = p("SELECT k, v FROM kv WHERE k >= $1 ORDER BY k ASC LIMIT $2")?;
    let scan_rev_open = p("SELECT k, v FROM kv WHERE k >= $1 ORDER BY k DESC LIMIT $2")?;
    let upsert = p(
        "INSERT INTO kv (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[]) \
         ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
    )?;
    let delete = p("DELETE FROM kv WHERE k = ANY($1::bytea[])")?;
    Ok(Conn {
        client,
        get,
        scan_fwd,
        scan_rev,
        scan_fwd_open,
        scan_rev_open,
        upsert,
        delete,
    })
}

/// A PostgreSQL error as a [`StoreError`]: serialization failures and deadlocks are conflicts
/// (the engine runs the request again), a full disk is [`StoreError::QuotaExceeded`].
fn pg_error(e: ::postgres::Error) -> StoreError {
    match e.code() {
        Some(c)
            if *c == SqlState::T_R_SERIALIZATION_FAILURE
                || *c == SqlState::T_R_DEADLOCK_DETECTED =>
        {
            StoreError::Conflict(e.to_string())
        }
        Some(c) if *c == SqlState::DISK_FULL || *c == SqlState::PROGRAM_LIMIT_EXCEEDED => {
            StoreError::QuotaExceeded(e.to_string())
        }
        _ => {
            let detail = e
                .as_db_error()
                .map_or_else(|| e.to_string(), |db| format!("{e}: {}", db.message()));
            StoreError::Backend(format!("PostgreSQL: {detail}"))
        }
    }
}

fn get_on(conn: &mut Conn, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
    let row = conn
        .client
        .query_opt(&conn.get, &[&key])
        .map_err(pg_error)?;
    row.map(|r| r.try_get::<_, Vec<u8>>(0).map_err(pg_error))
        .transpose()
}

fn scan_on(
    conn: &mut Conn,
    start: &[u8],
    end: &[u8],
    dir: Direction,
    limit: usize,
) -> Result<Vec<KeyValue>, StoreError> {
    if engine::scan_is_empty(start, end, limit) {
        return Ok(Vec::new());
    }
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = match (dir, end.is_empty()) {
        (Direction::Forward, false) => conn.client.query(&conn.scan_fwd, &[&start, &end, &limit]),
        (Direction::Reverse, false) => conn.client.query(&conn.scan_rev, &[&start, &end, &limit]),
        (Direction::Forward, true) => conn.client.query(&conn.scan_fwd_open, &[&start, &limit]),
        (Direction::Reverse, true) => conn.client.query(&conn.scan_rev_open, &[&start, &limit]),
    }
    .map_err(pg_error)?;
    rows.iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<Result<Vec<KeyValue>, ::postgres::Error>>()
        .map_err(pg_error)
}

impl Store for PgStore {
    fn begin_read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        // `SELECT 1` takes the snapshot now, so the transaction sees exactly what was committed
        // before `begin_read` returned.
        let conn = self.begin("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT 1")?;
        Ok(Box::new(PgRead {
            store: self,
            conn: RefCell::new(Some(conn)),
        }))
    }

    fn begin_write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        let alone = WRITE_ALONE.with(|c| c.replace(false));
        let lock = match self.options.write_mode {
            WriteMode::Locked => WriterLock::Exclusive,
            WriteMode::Optimistic if !self.options.exclusive_retries => WriterLock::None,
            WriteMode::Optimistic if alone => WriterLock::Exclusive,
            WriteMode::Optimistic => WriterLock::Shared,
        };
        let conn = if let Some(take) = lock.take_sql() {
            // The session-level lock is taken before the transaction begins, so its snapshot
            // (taken by `SELECT 1`) holds every write committed before the lock was granted.
            // Exclusive (`locked` mode, or an optimistic retry that runs alone): one writer at
            // a time; the transaction is SERIALIZABLE all the same, so that a server of the
            // other mode on the same database cannot make it lose an update.
            let mut conn = self.acquire()?;
            if let Err(e) = conn.client.batch_execute(&take) {
                // the session may hold nothing (or be broken): do not reuse it
                drop(conn);
                self.forget_one();
                return Err(pg_error(e));
            }
            if let Err(e) = conn
                .client
                .batch_execute("BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT 1")
            {
                drop(conn); // closing the session releases the lock
                self.forget_one();
                return Err(pg_error(e));
            }
            conn
        } else {
            // The snapshot is taken now (`SELECT 1`), not at the first read or at the flush.
            self.begin("BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT 1")?
        };
        Ok(Box::new(PgWrite {
            store: self,
            conn: RefCell::new(Some(conn)),
            overlay: Overlay::default(),
            failed: RefCell::new(None),
            lock,
            ended: std::cell::Cell::new(false),
        }))
    }
}

/// A read transaction on a pooled connection.
struct PgRead<'a> {
    store: &'a PgStore,
    /// `Some` until dropped.
    conn: RefCell<Option<Conn>>,
}

impl PgRead<'_> {
    fn with<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let mut slot = self.conn.borrow_mut();
        let conn = slot
            .as_mut()
            .ok_or_else(|| StoreError::Misuse("read transaction already ended".into()))?;
        f(conn)
    }
}

impl ReadTxn for PgRead<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.with(|c| get_on(c, key))
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        dir: Direction,
        limit: usize,
    ) -> Result<Vec<KeyValue>, StoreError> {
        self.with(|c| scan_on(c, start, end, dir, limit))
    }
}

impl Drop for PgRead<'_> {
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.get_mut().take() {
            if conn.client.batch_execute("ROLLBACK").is_err() {
                // A connection that cannot end its transaction is not reused.
                drop(conn);
                self.store.forget_one();
                return;
            }
            self.store.release(conn);
        }
    }
}

/// Keys and values sent in one `INSERT` at commit.
type Batch<'a> = (Vec<&'a [u8]>, Vec<&'a [u8]>);

/// A write transaction: its own connection, its writes buffered until commit.
struct PgWrite<'a> {
    store: &'a PgStore,
    conn: RefCell<Option<Conn>>,
    overlay: Overlay,
    /// The error that aborted the transaction on the server (every later operation reports it).
    failed: RefCell<Option<StoreError>>,
    /// The writers' session-level advisory lock this connection holds ([`WriteMode::Locked`],
    /// [`PgOptions::exclusive_retries`]), released when the transaction ends.
    lock: WriterLock,
    /// Committed (and the lock released): the connection is clean.
    ended: std::cell::Cell<bool>,
}

impl PgWrite<'_> {
    /// The error that aborted this transaction on the server, if one did.
    fn aborted(&self) -> Result<(), StoreError> {
        match self.failed.borrow().as_ref() {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T, StoreError>) -> Result<T, StoreError> {
        self.aborted()?;
        let mut slot = self.conn.borrow_mut();
        let conn = slot
            .as_mut()
            .ok_or_else(|| StoreError::Misuse("write transaction already ended".into()))?;
        let r = f(conn);
        if let Err(e) = &r {
            // PostgreSQL aborted the transaction: nothing more can run in it.
            *self.failed.borrow_mut() = Some(e.clone());
        }
        r
    }

    /// Send the buffered writes.
    fn flush(&self) -> Result<(), StoreError> {
        let mut deletes: Vec<&[u8]> = Vec::new();
        let mut batches: Vec<Batch<'_>> = vec![(Vec::new(), Vec::new())];
        let mut bytes = 0usize;
        for (k, v) in self.overlay.changes() {
            match v {
                None => deletes.push(k),
                Some(v) => {
                    if bytes > 0 && bytes + v.len() + k.len() > FLUSH_BYTES {
                        batches.push((Vec::new(), Vec::new()));
                        bytes = 0;
                    }
                    bytes += v.len() + k.len();
                    if let Some((ks, vs)) = batches.last_mut() {
                        ks.push(k);
                        vs.push(v);
                    }
                }
            }
        }
        self.with(|c| {
            if !deletes.is_empty() {
                c.client.execute(&c.delete, &[&deletes]).map_err(pg_error)?;
            }
            for (ks, vs) in &batches {
                if !ks.is_empty() {
                    c.client.execute(&c.upsert, &[ks, vs]).map_err(pg_error)?;
                }
            }
            Ok(())
        })
    }
}

impl ReadTxn for PgWrite<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        if let Some(mine) = self.overlay.lookup(key) {
            return Ok(mine.map(<[u8]>::to_vec));
        }
        self.with(|c| get_on(c, key))
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        dir: Direction,
        limit: usize,
    ) -> Result<Vec<KeyValue>, StoreError> {
        self.overlay.merge_scan(start, end, dir, limit, |n| {
            self.with(|c| scan_on(c, start, end, dir, n))
        })
    }
}

impl WriteTxn for PgWrite<'_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.aborted()?;
        self.overlay.put(key, value);
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> Result<(), StoreError> {
        self.aborted()?;
        self.overlay.delete(key);
        Ok(())
    }

    fn commit(self: Box<Self>) -> Result<(), StoreError> {
        if !self.overlay.is_empty() {
            self.flush()?;
        }
        // The writers' lock goes in the same message as the COMMIT, so the next writer need not
        // wait for another round trip. A failed COMMIT (PostgreSQL rolled back) skips the
        // unlock; `drop` then sends ROLLBACK and the unlock.
        let end = match self.lock.release_sql() {
            Some(unlock) => format!("COMMIT; {unlock}"),
            None => "COMMIT".to_string(),
        };
        self.with(|c| c.client.batch_execute(&end).map_err(pg_error))?;
        self.ended.set(true);
        Ok(())
    }
}

impl Drop for PgWrite<'_> {
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.get_mut().take() {
            if self.ended.get() {
                // committed, and the lock (if any) released
                self.store.release(conn);
                return;
            }
            // Discard the transaction (its writes never left the buffer, or are undone); then
            // release the writers' lock, if held. A connection that cannot do both is closed,
            // which releases the lock too.
            let end = match self.lock.release_sql() {
                Some(unlock) => format!("ROLLBACK; {unlock}"),
                None => "ROLLBACK".to_string(),
            };
            if conn.client.batch_execute(&end).is_err() {
                drop(conn);
                self.store.forget_one();
                return;
            }
            self.store.release(conn);
        }
    }
}

/// How a write transaction holds the writers' advisory lock ([`WRITER_LOCK`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriterLock {
    /// Not at all (optimistic mode without [`PgOptions::exclusive_retries`]).
    None,
    /// Beside other optimistic writers, never beside an exclusive one.
    Shared,
    /// Alone among the writers that take the lock.
    Exclusive,
}

impl WriterLock {
    /// The statement that takes the lock (waiting for it), if any.
    fn take_sql(self) -> Option<String> {
        match self {
            WriterLock::None => None,
            WriterLock::Shared => Some(format!("SELECT pg_advisory_lock_shared({WRITER_LOCK})")),
            WriterLock::Exclusive => Some(format!("SELECT pg_advisory_lock({WRITER_LOCK})")),
        }
    }

    /// The statement that releases it, if any.
    fn release_sql(self) -> Option<String> {
        match self {
            WriterLock::None => None,
            WriterLock::Shared => Some(format!("SELECT pg_advisory_unlock_shared({WRITER_LOCK})")),
            WriterLock::Exclusive => Some(format!("SELECT pg_advisory_unlock({WRITER_LOCK})")),
        }
    }
}

thread_local! {
    /// The next write transaction begun on this thread holds the writers' lock exclusively
    /// ([`write_alone_next`]).
    static WRITE_ALONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The store generation reads on this thread must see ([`with_min_generation`]).
    static MIN_GENERATION: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Make the next write transaction begun on this thread (by a store in optimistic mode with
/// [`PgOptions::exclusive_retries`]) hold the writers' advisory lock exclusively: it waits for
/// the write transactions in flight (which hold it shared) and runs with none beside it, so it
/// cannot meet a write conflict. For the re-run of a request that conflicted repeatedly
/// ([`conflict_pause`] calls it); other stores and modes ignore it.
pub fn write_alone_next() {
    WRITE_ALONE.with(|c| c.set(true));
}

/// The pause before the re-run of a request that conflicted ([`engine::ConflictRetry::pause`])
/// on a PostgreSQL store in optimistic mode, given the runs that conflicted so far: about 1 ms
/// after the first, doubling after each, never more than `most`, of which a random half (so that
/// the writers that just collided do not start again together). After `alone_after` runs that
/// conflicted (if set) the next run holds the writers' lock exclusively ([`write_alone_next`]).
/// It sleeps: call it only where blocking is allowed (the engine's requests on PostgreSQL run on
/// tokio's blocking pool or on the writer thread).
pub fn conflict_pause(most: Duration, alone_after: Option<usize>) -> impl Fn(usize) + Send + Sync {
    move |runs: usize| {
        if alone_after.is_some_and(|n| runs >= n) {
            write_alone_next();
        }
        let shift = u32::try_from(runs.saturating_sub(1))
            .unwrap_or(u32::MAX)
            .min(20);
        let full = Duration::from_micros(1000u64 << shift).min(most);
        let half = full / 2;
        let half_ns = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        let jitter = Duration::from_nanos(fastrand::u64(0..=half_ns));
        let pause = half + jitter;
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
}

/// A generation no replica reaches: reads under it always go to the primary.
pub const PRIMARY_ONLY: u64 = u64::MAX;

/// Run `f` with the read transactions it begins on this thread required to see at least store
/// generation `generation` (a [`ReplicatedStore`] that finds its replica behind reads from the
/// primary instead); `None` requires nothing. Other stores ignore it.
pub fn with_min_generation<T>(generation: Option<u64>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<u64>);
    impl Drop for Restore {
        fn drop(&mut self) {
            MIN_GENERATION.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(MIN_GENERATION.with(|c| c.replace(generation)));
    f()
}

/// Writes (and reads that must see recent writes) on a primary database, other reads on a
/// read replica (`--read-database`): a PostgreSQL standby fed by streaming replication, which
/// may lag behind. A read transaction begun under [`with_min_generation`]`(Some(g))` checks the
/// replica's store generation in its snapshot and, when it is older than `g`, runs on the
/// primary instead: so a client that carries the generation of its last write (host-server's
/// `rw-generation` cookie) reads its own writes.
pub struct ReplicatedStore {
    primary: PgStore,
    replica: PgStore,
}

impl ReplicatedStore {
    /// Writes on `primary`, reads on `replica` unless it is behind.
    pub fn new(primary: PgStore, replica: PgStore) -> Self {
        ReplicatedStore { primary, replica }
    }

    /// The primary store.
    pub fn primary(&self) -> &PgStore {
        &self.primary
    }
}

impl Store for ReplicatedStore {
    fn begin_read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        let need = MIN_GENERATION.with(std::cell::Cell::get);
        if need == Some(PRIMARY_ONLY) {
            return self.primary.begin_read();
        }
        let read = self.replica.begin_read()?;
        let Some(need) = need else {
            return Ok(read);
        };
        let have = read
            .get(engine::host::keyspace::GENERATION)?
            .and_then(|v| std::str::from_utf8(&v).ok()?.parse::<u64>().ok())
            .unwrap_or(0);
        if have >= need {
            return Ok(read);
        }
        drop(read);
        self.primary.begin_read()
    }

    fn begin_write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        self.primary.begin_write()
    }
}
