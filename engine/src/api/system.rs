//! `@system` and `@database`: what runs this site, and what its store holds, measured rather
//! than configured.
//!
//! | method | path | answer |
//! |---|---|---|
//! | GET | `/@system` | 200, `{@id, items: [{label, value}], plone_restapi_version, upgrade}`: the engine and its version, the Rust compiler that built it, the store backend (named by the host), the schema version this build reads and the one stored |
//! | GET | `/@database` | 200, `{@id, db_name, keys, size_bytes, schema_version, objects, by_prefix: {<prefix>: {keys, bytes}}}` from one scan of the store, plus Plone's keys that Volto's database panel reads (a Nick site adds Nick's `blob_size`, the blobs' bytes for people) (`database_size`, `db_size`, `cache_size`, `cache_length`, `cache_length_bytes` of the response cache, `cache_detail_length` and `cache_detail_size` always empty) |
//!
//! Only on the site root; the Manage portal permission is required.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use crate::core::error::Result;
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;
use crate::site::statistics;

/// Register `@system` and `@database`.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@system", system)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary(
                "What runs the site: engine and compiler versions, store backend, schema versions",
            )
            .answers::<SystemInfo>(),
    );
    r.route(
        RouteDef::get("@database", database)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary(
                "What the store holds: keys and bytes, in total and by key prefix (one full scan)",
            )
            .answers::<DatabaseInfo>(),
    );
}

/// One fact.
#[derive(Serialize, JsonSchema)]
pub struct SystemItem {
    /// What it is.
    pub label: &'static str,
    /// Its value.
    pub value: String,
}

/// The answer of `@system`.
#[derive(Serialize, JsonSchema)]
pub struct SystemInfo {
    /// `<site>/@system`.
    #[serde(rename = "@id")]
    pub id: String,
    /// The facts.
    pub items: Vec<SystemItem>,
    /// Plone's key: the plone.restapi release whose behaviour this API follows
    /// ([`PLONE_RESTAPI_LEVEL`]). Volto reads it to decide which panels the server supports.
    pub plone_restapi_version: &'static str,
    /// Plone's key: whether the stored data is older than this build reads (an upgrade is due).
    pub upgrade: bool,
}

/// The plone.restapi release whose recorded behaviour this API follows (its transcripts are the
/// reference the engine is tested against); `@system` reports it as `plone_restapi_version`.
pub const PLONE_RESTAPI_LEVEL: &str = "10.0.4";

/// Keys and bytes of a part of the store.
#[derive(Serialize, JsonSchema)]
pub struct UsageInfo {
    /// How many keys.
    pub keys: u64,
    /// Bytes of keys and values.
    pub bytes: u64,
}

/// The answer of `@database`.
#[derive(Serialize, JsonSchema)]
pub struct DatabaseInfo {
    /// `<site>/@database`.
    #[serde(rename = "@id")]
    pub id: String,
    /// The store backend (as `@system` names it).
    pub db_name: String,
    /// How many keys the store holds.
    pub keys: u64,
    /// Bytes of all keys and values (not the backend's file size, which includes its overhead).
    pub size_bytes: u64,
    /// The stored schema version.
    pub schema_version: Option<u32>,
    /// How many content objects (`o:` records).
    pub objects: u64,
    /// Keys and bytes by key prefix (see the keyspace table).
    pub by_prefix: BTreeMap<String, UsageInfo>,
    /// Plone's key (Volto's database panel shows it): bytes of all keys and values.
    pub database_size: u64,
    /// Plone's key: the same, for people (`"1.2 MB"`).
    pub db_size: String,
    /// Nick's key, on a Nick site only: bytes of the blobs (file and image data, the `f:` keys),
    /// for people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob_size: Option<String>,
    /// Plone's key: the response cache's limit in bytes (0: off).
    pub cache_size: u64,
    /// Plone's key: how many responses the cache holds.
    pub cache_length: u64,
    /// Plone's key: their bytes.
    pub cache_length_bytes: u64,
    /// Plone's key: per-connection object caches; this engine has none, so always empty.
    pub cache_detail_length: Vec<serde_json::Value>,
    /// Plone's key: as `cache_detail_length`.
    pub cache_detail_size: Vec<serde_json::Value>,
}

/// `bytes` for people: `"512 B"`, `"1.2 KB"`, `"3.4 MB"`, `"5.6 GB"`.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KB", "MB", "GB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// GET `/@system`.
fn system(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let stored = statistics::figures_schema(ctx)?;
    let mut items = vec![
        SystemItem {
            label: "Engine",
            value: format!("{} {}", env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
        },
        SystemItem {
            label: "Store",
            value: ctx.core.options.store_backend.clone(),
        },
        SystemItem {
            label: "Schema version (this build)",
            value: crate::site::migrations::current_version().to_string(),
        },
        SystemItem {
            label: "Schema version (stored)",
            value: stored.map_or_else(|| "none".to_string(), |v| v.to_string()),
        },
    ];
    let rustc = env!("ENGINE_RUSTC_VERSION");
    if !rustc.is_empty() {
        items.insert(
            1,
            SystemItem {
                label: "Rust",
                value: rustc.to_string(),
            },
        );
    }
    Ok(Response::json(
        200,
        &SystemInfo {
            id: format!("{}/@system", ctx.base_url),
            items,
            plone_restapi_version: PLONE_RESTAPI_LEVEL,
            upgrade: stored.is_some_and(|v| v < crate::site::migrations::current_version()),
        },
    ))
}

/// GET `/@database`.
fn database(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let f = statistics::figures(ctx)?;
    let objects = f.by_prefix.get("o:").map_or(0, |u| u.keys);
    let blob_size = ctx
        .profile()
        .is_nick()
        .then(|| human_bytes(f.by_prefix.get("f:").map_or(0, |u| u.bytes)));
    let (cache_length, cache_bytes, cache_size) = ctx.core.responses.usage();
    Ok(Response::json(
        200,
        &DatabaseInfo {
            id: format!("{}/@database", ctx.base_url),
            db_name: ctx.core.options.store_backend.clone(),
            keys: f.total.keys,
            size_bytes: f.total.bytes,
            schema_version: f.schema_version,
            objects,
            by_prefix: f
                .by_prefix
                .into_iter()
                .map(|(k, u)| {
                    (
                        k,
                        UsageInfo {
                            keys: u.keys,
                            bytes: u.bytes,
                        },
                    )
                })
                .collect(),
            database_size: f.total.bytes,
            db_size: human_bytes(f.total.bytes),
            blob_size,
            cache_size: cache_size as u64,
            cache_length: cache_length as u64,
            cache_length_bytes: cache_bytes as u64,
            cache_detail_length: Vec::new(),
            cache_detail_size: Vec::new(),
        },
    ))
}
