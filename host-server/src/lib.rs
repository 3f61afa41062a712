//! `host-server`: the content engine served over HTTP, stored in SQLite.
//!
//! The binary (`src/main.rs`) parses the command line, opens the database with [`open_engine`],
//! creates the site on first start with [`ensure_site`] and serves [`app`]. The pieces are public so
//! that tests can drive the same router in-process (`tower::ServiceExt::oneshot`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod app;
pub mod error;
pub mod llm;
pub mod sqlite;

use std::path::{Path, PathBuf};

use engine::{Engine, EngineOptions, SiteSetup};

pub use app::{app, Config};
pub use error::ServerError;
pub use sqlite::{SqliteOptions, SqliteStore, SyncMode};

/// File name of the database inside the data directory.
pub const DB_FILE: &str = "site.sqlite3";

/// The database file for data directory `data_dir`.
pub fn db_path(data_dir: &Path) -> PathBuf {
    data_dir.join(DB_FILE)
}

/// Create `data_dir` if needed, open its database and build an engine over it.
///
/// Fails with a [`ServerError`] that says what is wrong when the directory cannot be created, the
/// database is in use, locked or damaged, or the engine refuses its schema version.
pub fn open_engine(
    data_dir: &Path,
    sqlite: SqliteOptions,
    mut options: EngineOptions,
) -> Result<Engine<SqliteStore>, ServerError> {
    options.store_backend = format!("SQLite {}", rusqlite::version());
    std::fs::create_dir_all(data_dir).map_err(|source| ServerError::DataDir {
        path: data_dir.to_path_buf(),
        source,
    })?;
    let store = SqliteStore::open(db_path(data_dir), sqlite).map_err(ServerError::Database)?;
    Engine::new(store, options).map_err(ServerError::Engine)
}

/// The embedding model named by `--embedding-model`: `test` is the deterministic test embedder
/// ([`engine::embedding::TestEmbedder`], for contract tests); anything else is a directory
/// holding a static model: `model.safetensors` and `tokenizer.json`
/// (`scripts/prepare-embedding-model.sh` makes one).
pub fn load_embedder(
    spec: &str,
) -> Result<std::sync::Arc<dyn engine::embedding::Embedder>, ServerError> {
    use engine::embedding::{StaticEmbedder, TestEmbedder};
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
pub fn ensure_site(
    engine: &Engine<SqliteStore>,
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
    engine.create_site(&setup).map_err(ServerError::SiteSetup)?;
    Ok(SiteInit::Created {
        generated_password: generated.then_some(password),
    })
}

/// 122 random bits from the OS, as 32 lowercase hex digits.
fn generate_password() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}
