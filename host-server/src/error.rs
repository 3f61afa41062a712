//! The server's own errors: everything that can stop it from starting or serving.

use std::path::PathBuf;

use engine::{EngineError, StoreError};

/// Why the server could not start or keep serving. Each message says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// A command-line option has an unusable value.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The data directory does not exist and cannot be created.
    #[error("cannot use the data directory {path}: {source}")]
    DataDir {
        /// The directory.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The database cannot be opened (locked, damaged, not a database, unwritable).
    #[error("cannot open the database: {0}")]
    Database(#[source] StoreError),
    /// The engine refuses the data (for example a newer schema version).
    #[error("the engine cannot use this database: {0}")]
    Engine(#[source] EngineError),
    /// Creating the site on first start failed.
    #[error("cannot create the site: {0}")]
    SiteSetup(#[source] EngineError),
    /// The listen address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// Any other I/O failure (starting the runtime, serving).
    #[error("{context}: {source}")]
    Io {
        /// What the server was doing.
        context: &'static str,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A backup or a restore failed (the message names the file and the reason).
    #[error("{0}")]
    Backup(String),
}
