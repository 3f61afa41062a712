//! Figures about the stored data, measured by reading the store (`@database`): how many keys and
//! bytes each part of the keyspace ([`crate::core::keys`]) holds, and the schema version. Reading them
//! scans every key, so it costs time in proportion to the size of the site.

use std::collections::BTreeMap;

use crate::core::error::Result;
use crate::core::keys;
use crate::core::store::Direction;
use crate::runtime::context::Ctx;

/// Keys and bytes (keys plus values) of one part of the keyspace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// How many keys.
    pub keys: u64,
    /// Their keys' and values' bytes.
    pub bytes: u64,
}

/// What the store holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Figures {
    /// The whole store.
    pub total: Usage,
    /// By key prefix (`o:`, `p:`, ...: the text before the first `:`).
    pub by_prefix: BTreeMap<String, Usage>,
    /// The stored schema version, if the store has a site.
    pub schema_version: Option<u32>,
}

/// Measure the store `ctx` reads (one full scan).
pub fn figures(ctx: &Ctx<'_>) -> Result<Figures> {
    let mut f = Figures::default();
    for (k, v) in ctx.scan(&[], &[0xff; 8], Direction::Forward, usize::MAX)? {
        let bytes = (k.len() + v.len()) as u64;
        let prefix = match k.iter().position(|b| *b == b':') {
            Some(i) => String::from_utf8_lossy(&k[..=i]).into_owned(),
            None => String::from_utf8_lossy(&k).into_owned(),
        };
        let u = f.by_prefix.entry(prefix).or_default();
        u.keys += 1;
        u.bytes += bytes;
        f.total.keys += 1;
        f.total.bytes += bytes;
    }
    f.schema_version = ctx
        .get(keys::SCHEMA)?
        .and_then(|v| String::from_utf8_lossy(&v).parse().ok());
    Ok(f)
}

/// The stored schema version alone (one read), if the store has a site.
pub fn figures_schema(ctx: &Ctx<'_>) -> Result<Option<u32>> {
    Ok(ctx
        .get(keys::SCHEMA)?
        .and_then(|v| String::from_utf8_lossy(&v).parse().ok()))
}
