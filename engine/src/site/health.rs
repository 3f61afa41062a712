//! What `@health` reports: how long the engine has run (by the clock the host injected), whether
//! the store answers a read, and whether the stored schema version is the one this build writes.

use crate::core::keys;
use crate::runtime::context::Ctx;

/// The measurements of one health check.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Seconds since the engine started, by its clock.
    pub uptime_secs: i64,
    /// `None` when a read of the store succeeded, else what went wrong.
    pub store_error: Option<String>,
    /// The stored schema version (`None`: no site, or unreadable).
    pub stored_schema: Option<u32>,
    /// The schema version this build writes.
    pub schema_version: u32,
}

impl Report {
    /// Whether the store answered.
    pub fn store_ok(&self) -> bool {
        self.store_error.is_none()
    }

    /// Whether the stored schema is this build's.
    pub fn schema_ok(&self) -> bool {
        self.stored_schema == Some(self.schema_version)
    }
}

/// Measure now.
pub fn check(ctx: &Ctx<'_>) -> Report {
    let store_error = ctx.get(keys::SCHEMA).err().map(|e| e.to_string());
    Report {
        uptime_secs: (ctx.now() - ctx.core.started).num_seconds().max(0),
        store_error,
        stored_schema: crate::site::migrations::check(ctx).ok().flatten(),
        schema_version: keys::SCHEMA_VERSION,
    }
}
