//! The store generation: a counter under [`GENERATION`] that every write transaction which
//! changes anything increments as it commits ([`crate::runtime::context::Ctx::commit`]). Caches of
//! answers and of verified credentials ([`crate::runtime::cache`], [`crate::runtime::state::Core`]) are valid for
//! one generation. It lives at the keyspace level, below the request context, so that both the
//! context and the caches can use it without knowing each other.

use crate::core::error::Result;
use crate::core::store::ReadTxn;

/// Key of the store generation (decimal text; absent means 0).
pub const GENERATION: &[u8] = b"s:generation";

/// The store generation as seen by `txn`.
pub fn read(txn: &dyn ReadTxn) -> Result<u64> {
    Ok(txn
        .get(GENERATION)?
        .and_then(|v| std::str::from_utf8(&v).ok()?.parse().ok())
        .unwrap_or(0))
}

/// The value that follows `generation` (written by the commit of a transaction that changed
/// anything).
pub fn next(generation: u64) -> u64 {
    generation.wrapping_add(1)
}
