//! Online backups of a SQLite site and their restore (`host-server backup` / `host-server
//! restore`).
//!
//! Everything a site holds (content, users, the token secret, blobs) is in the one database file
//! `DIR/site.sqlite3`: there are no files beside it to copy. A backup is therefore one SQLite file,
//! written by `VACUUM INTO` from a connection of its own: that runs in a single read transaction,
//! so the copy is exactly the state committed when it began, while the server keeps reading and
//! writing (WAL mode: a reader never blocks the writer). Every write acknowledged before the backup
//! started is in it. After a crash (kill -9) the first connection replays the write-ahead log, so a
//! backup of a dead server's directory holds every acknowledged write too.
//!
//! A restore checks the file (a SQLite database with the `kv` table that passes
//! `PRAGMA quick_check`), takes the data directory's lock (so no server can be running on it),
//! copies the file beside the database and renames it into place, after removing the old
//! write-ahead log that belongs to the database being replaced.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::{db_path, ServerError};

/// What a backup or restore did, for the line the command prints.
#[derive(Debug, Clone, Copy)]
pub struct Report {
    /// Keys (rows of `kv`) in the copy.
    pub keys: u64,
    /// Size of the copy in bytes.
    pub bytes: u64,
    /// How long it took.
    pub elapsed: Duration,
}

fn fail(text: String) -> ServerError {
    ServerError::Backup(text)
}

/// `path` with `suffix` appended to its file name.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Create `path` empty, failing if it exists; mode `0600` on Unix (a backup holds the secret that
/// signs login tokens).
fn create_private(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Open the directory holding `path` and fsync it, so a rename into it is durable.
fn sync_parent(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        File::open(parent)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Count the keys of a site database and check it is one: a `kv` table and a clean
/// `PRAGMA quick_check`.
fn check_site(conn: &Connection, what: &Path) -> Result<u64, ServerError> {
    let problem = |e: rusqlite::Error| fail(format!("{}: not a usable site: {e}", what.display()));
    let check: String = conn
        .query_row("PRAGMA quick_check", [], |row| row.get(0))
        .map_err(problem)?;
    if check != "ok" {
        return Err(fail(format!(
            "{}: the database is damaged (quick_check: {check})",
            what.display()
        )));
    }
    let table: Option<String> = conn
        .query_row(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'kv'",
            [],
            |row| row.get(0),
        )
        .optional()
        .map_err(problem)?;
    if table.is_none() {
        return Err(fail(format!(
            "{}: not a host-server site (no table kv)",
            what.display()
        )));
    }
    let keys: i64 = conn
        .query_row("SELECT count(*) FROM kv", [], |row| row.get(0))
        .map_err(problem)?;
    Ok(u64::try_from(keys).unwrap_or(0))
}

/// Write a consistent copy of the site in `data_dir` to the new file `to` (refused if it
/// exists). The server may be running on `data_dir` meanwhile, and keep writing.
///
/// The copy is written to `to.partial` first and renamed when complete and checked, so `to`
/// never names half a backup.
pub fn backup(data_dir: &Path, to: &Path) -> Result<Report, ServerError> {
    let started = Instant::now();
    let db = db_path(data_dir);
    if !db.is_file() || std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0) == 0 {
        return Err(fail(format!(
            "--data {}: no site there ({} is missing or empty)",
            data_dir.display(),
            db.display()
        )));
    }
    if to.exists() {
        return Err(fail(format!(
            "--to {}: the file exists; choose a new name (a backup never overwrites)",
            to.display()
        )));
    }
    // Read-write (not read-only): after a crash the first connection must be able to recover the
    // write-ahead log. Nothing is written to the site by this connection.
    let conn = Connection::open_with_flags(
        &db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| fail(format!("{}: cannot open: {e}", db.display())))?;
    conn.busy_timeout(Duration::from_secs(30))
        .map_err(|e| fail(format!("{}: {e}", db.display())))?;
    let partial = with_suffix(to, ".partial");
    // A stale one from an interrupted backup: ours to remove.
    let _ = std::fs::remove_file(&partial);
    create_private(&partial)
        .map_err(|e| fail(format!("{}: cannot create: {e}", partial.display())))?;
    let result = (|| {
        let target = partial.to_str().ok_or_else(|| {
            fail(format!(
                "{}: the path is not valid UTF-8",
                partial.display()
            ))
        })?;
        conn.execute("VACUUM INTO ?1", [target])
            .map_err(|e| fail(format!("backup of {} failed: {e}", db.display())))?;
        drop(conn);
        let copy = Connection::open_with_flags(&partial, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| fail(format!("{}: cannot reopen: {e}", partial.display())))?;
        let keys = check_site(&copy, &partial)?;
        drop(copy);
        File::open(&partial)
            .and_then(|f| f.sync_all())
            .map_err(|e| fail(format!("{}: {e}", partial.display())))?;
        Ok(keys)
    })();
    let keys = match result {
        Ok(keys) => keys,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    std::fs::rename(&partial, to)
        .and_then(|()| sync_parent(to))
        .map_err(|e| fail(format!("{}: {e}", to.display())))?;
    let bytes = std::fs::metadata(to).map(|m| m.len()).unwrap_or(0);
    Ok(Report {
        keys,
        bytes,
        elapsed: started.elapsed(),
    })
}

/// Whether `path` exists with content.
fn non_empty(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() > 0)
}

/// Bring the backup `from` back as the site of `data_dir` (created if missing). A directory that
/// already holds a site is refused unless `replace`; a server running on it always is (the lock).
pub fn restore(from: &Path, data_dir: &Path, replace: bool) -> Result<Report, ServerError> {
    let started = Instant::now();
    let source = Connection::open_with_flags(from, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| fail(format!("--from {}: cannot open: {e}", from.display())))?;
    let keys = check_site(&source, from)?;
    drop(source);
    let db = db_path(data_dir);
    let wal = with_suffix(&db, "-wal");
    if !replace && (non_empty(&db) || non_empty(&wal)) {
        return Err(fail(format!(
            "--data {}: it already holds a site; restore into an empty directory, or pass \
             --replace to overwrite it",
            data_dir.display()
        )));
    }
    crate::private_data_dir(data_dir).map_err(|source| ServerError::DataDir {
        path: data_dir.to_path_buf(),
        source,
    })?;
    let _lock = crate::sqlite::take_lock(&db).map_err(ServerError::Database)?;
    let incoming = with_suffix(&db, ".restoring");
    let _ = std::fs::remove_file(&incoming);
    let copy = (|| -> std::io::Result<u64> {
        let mut out = create_private(&incoming)?;
        let mut input = File::open(from)?;
        let bytes = std::io::copy(&mut input, &mut out)?;
        out.flush()?;
        out.sync_all()?;
        Ok(bytes)
    })();
    let bytes = match copy {
        Ok(b) => b,
        Err(e) => {
            let _ = std::fs::remove_file(&incoming);
            return Err(fail(format!("{}: cannot write: {e}", incoming.display())));
        }
    };
    // The old log and its index belong to the database being replaced: replayed onto the
    // restored file they would corrupt it.
    for suffix in ["-wal", "-shm", "-journal"] {
        let path = with_suffix(&db, suffix);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(fail(format!("{}: cannot remove: {e}", path.display()))),
        }
    }
    std::fs::rename(&incoming, &db)
        .and_then(|()| sync_parent(&db))
        .map_err(|e| fail(format!("{}: {e}", db.display())))?;
    Ok(Report {
        keys,
        bytes,
        elapsed: started.elapsed(),
    })
}
