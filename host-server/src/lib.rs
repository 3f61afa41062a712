//! `host-server`: the content engine served over HTTP, stored in SQLite (or in PostgreSQL, shared
//! by several servers: [`postgres`]).
//!
//! The binary (`src/main.rs`) parses the command line, opens the database with [`open_engine`],
//! creates the site on first start with [`ensure_site`] and serves [`app`]. The pieces are public so
//! that tests can drive the same router in-process (`tower::ServiceExt::oneshot`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod app;
pub mod backup;
pub mod delivery;
pub mod error;
pub mod llm;
pub mod metrics;
pub mod migrate;
pub mod oidc;
pub mod postgres;
pub mod sqlite;

use std::path::{Path, PathBuf};

use engine::{Engine, EngineOptions, SiteSetup};

pub use app::limits::{AddressPermit, PerAddress, StreamLimits};
pub use app::throttle::Limits as LoginLimits;
pub use app::{app, ClientAddr, Config, CONTENT_SECURITY_POLICY};
pub use error::ServerError;
pub use postgres::{PgOptions, PgStore, WriteMode};
pub use sqlite::{SqliteOptions, SqliteStore, SyncMode};

/// File name of the database inside the data directory.
pub const DB_FILE: &str = "site.sqlite3";

/// The database file for data directory `data_dir`.
pub fn db_path(data_dir: &Path) -> PathBuf {
    data_dir.join(DB_FILE)
}

/// Create `data_dir` if needed, open its database and build an engine over it.
///
/// The database holds the secret that signs login tokens, so the data is the server user's
/// alone: a new directory is created `0700` and the database file `0600` (SQLite gives its
/// `-wal` and `-shm` files the database file's mode); files an earlier version left readable
/// are made `0600`. A directory other users can write is refused (they could replace the
/// database).
///
/// Fails with a [`ServerError`] that says what is wrong when the directory cannot be created or
/// is writable by others, the database is in use, locked or damaged, or the engine refuses its
/// schema version.
pub fn open_engine(
    data_dir: &Path,
    sqlite: SqliteOptions,
    mut options: EngineOptions,
) -> Result<Engine<SqliteStore>, ServerError> {
    options.store_backend = format!("SQLite {}", rusqlite::version());
    private_data_dir(data_dir).map_err(|source| ServerError::DataDir {
        path: data_dir.to_path_buf(),
        source,
    })?;
    let store = SqliteStore::open(db_path(data_dir), sqlite).map_err(ServerError::Database)?;
    Engine::new(store, options).map_err(ServerError::Engine)
}

/// Connect to the PostgreSQL database at `url` and build an engine over it (see
/// [`postgres::PgStore`]). Several servers may do this at once on one database: opening the
/// engine runs the schema migrations in a write transaction, which is tried again when another
/// server's start conflicts with it.
pub fn open_engine_postgres(
    url: &str,
    pg: PgOptions,
    mut options: EngineOptions,
) -> Result<Engine<PgStore>, ServerError> {
    let store = PgStore::open(url, pg.clone()).map_err(ServerError::Database)?;
    let version = store.server_version().map_err(ServerError::Database)?;
    options.store_backend = format!("PostgreSQL {version} ({} writes)", store.write_mode());
    engine_retrying(
        store,
        || PgStore::open(url, pg.clone()).map_err(ServerError::Database),
        options,
    )
}

/// [`open_engine_postgres`] with reads from a read replica at `read_url` (see
/// [`postgres::ReplicatedStore`]); everything this function reads goes to the primary.
pub fn open_engine_replicated(
    url: &str,
    read_url: &str,
    pg: PgOptions,
    mut options: EngineOptions,
) -> Result<Engine<postgres::ReplicatedStore>, ServerError> {
    let open = || {
        let primary = PgStore::open(url, pg.clone()).map_err(ServerError::Database)?;
        let replica =
            PgStore::open_read_only(read_url, pg.clone()).map_err(ServerError::Database)?;
        Ok(postgres::ReplicatedStore::new(primary, replica))
    };
    let store = open()?;
    let version = store
        .primary()
        .server_version()
        .map_err(ServerError::Database)?;
    options.store_backend = format!(
        "PostgreSQL {version} ({} writes, reads from a replica)",
        store.primary().write_mode()
    );
    postgres::with_min_generation(Some(postgres::PRIMARY_ONLY), || {
        engine_retrying(store, open, options)
    })
}

/// `Engine::new(store)`, opening a new store with `open` and trying again when the migrations
/// conflict with another server starting on the same database.
fn engine_retrying<S: engine::Store>(
    store: S,
    open: impl Fn() -> Result<S, ServerError>,
    options: EngineOptions,
) -> Result<Engine<S>, ServerError> {
    let mut store = store;
    let mut attempt = 1;
    loop {
        match Engine::new(store, options.clone()) {
            Ok(engine) => return Ok(engine),
            Err(e) if is_store_conflict(&e) && attempt < 10 => {
                attempt += 1;
                store = open()?; // Engine::new consumed the store
            }
            Err(e) => return Err(ServerError::Engine(e)),
        }
    }
}

fn is_store_conflict(e: &engine::EngineError) -> bool {
    matches!(
        e,
        engine::EngineError::Store(engine::StoreError::Conflict(_))
    )
}

/// Create `data_dir` (mode `0700`) if missing, refuse it if other users can write it, and make
/// the database files in it private (`0600`), creating the database file so.
#[cfg(unix)]
pub(crate) fn private_data_dir(data_dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    if !data_dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(data_dir)?;
    }
    let mode = std::fs::metadata(data_dir)?.permissions().mode();
    if mode & 0o002 != 0 {
        return Err(std::io::Error::other(format!(
            "other users can write it (mode {:o}); it holds the secret that signs login tokens: \
             make it the server user's alone (chmod 700)",
            mode & 0o7777
        )));
    }
    if mode & 0o077 != 0 {
        tracing::warn!(
            dir = %data_dir.display(),
            mode = format!("{:o}", mode & 0o7777),
            "the data directory is open to other users; chmod 700 is advised"
        );
    }
    let db = db_path(data_dir);
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&db)?;
    for suffix in ["", "-wal", "-shm", "-journal", ".lock"] {
        let mut name = db.clone().into_os_string();
        name.push(suffix);
        let path = PathBuf::from(name);
        if let Ok(meta) = std::fs::metadata(&path) {
            if meta.permissions().mode() & 0o077 != 0 {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
            }
        }
    }
    Ok(())
}

/// Create `data_dir` if missing (no file modes off Unix).
#[cfg(not(unix))]
pub(crate) fn private_data_dir(data_dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(data_dir)
}

/// The embedding model named by `--embedding-model`: `test` is the deterministic test embedder
/// ([`engine::TestEmbedder`], for contract tests); anything else is a directory
/// holding a static model: `model.safetensors` and `tokenizer.json`
/// (`scripts/prepare-embedding-model.sh` makes one).
pub fn load_embedder(spec: &str) -> Result<std::sync::Arc<dyn engine::Embedder>, ServerError> {
    use engine::{StaticEmbedder, TestEmbedder};
    if spec == "test" {
        return Ok(std::sync::Arc::new(TestEmbedder));
    }
    let dir = Path::new(spec);
    let read = |name: &str| {
        std::fs::read(dir.join(name)).map_err(|e| {
            ServerError::Config(format!(
                "--embedding-model {}: cannot read {name}: {e}",
                dir.display()
            ))
        })
    };
    let model = read("model.safetensors")?;
    let tokenizer = read("tokenizer.json")?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    let embedder = StaticEmbedder::from_bytes(&name, &model, &tokenizer)
        .map_err(|e| ServerError::Config(format!("--embedding-model {}: {e}", dir.display())))?;
    Ok(std::sync::Arc::new(embedder))
}

/// What [`ensure_site`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SiteInit {
    /// The store already held a site; nothing was changed.
    Existing,
    /// A new site was created with the given admin password.
    Created {
        /// Set when the password was generated (nobody knows it yet: show it to the operator).
        generated_password: Option<String>,
    },
}

/// Login of the admin user created on first start.
pub const ADMIN_LOGIN: &str = "admin";

/// Create the site unless the store has one, with `profiles` installed and `languages` (the first
/// is the default; empty means English only). The admin password is `admin_password` when given
/// (and not empty), else a random one that is returned so the caller can show it once.
pub fn ensure_site<S: engine::Store>(
    engine: &Engine<S>,
    admin_password: Option<String>,
    profiles: &[String],
    languages: &[String],
) -> Result<SiteInit, ServerError> {
    if engine.site_exists().map_err(ServerError::Engine)? {
        return Ok(SiteInit::Existing);
    }
    let (password, generated) = match admin_password.filter(|p| !p.is_empty()) {
        Some(p) => (p, false),
        None => (generate_password(), true),
    };
    let mut setup = SiteSetup::new(&password);
    setup.admin_login = ADMIN_LOGIN.to_string();
    setup.profiles = profiles.to_vec();
    setup.languages = languages.to_vec();
    if let Err(e) = engine.create_site(&setup) {
        // Another server sharing the database may have created it at the same moment.
        if engine.site_exists().map_err(ServerError::Engine)? {
            return Ok(SiteInit::Existing);
        }
        return Err(ServerError::SiteSetup(e));
    }
    Ok(SiteInit::Created {
        generated_password: generated.then_some(password),
    })
}

/// 122 random bits from the OS, as 32 lowercase hex digits.
fn generate_password() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}
