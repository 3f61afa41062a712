//! Sync between hosts: the change feed (what changed since a cursor, filtered by permission),
//! the browser replica (sans-IO: pending writes, replay, conflicts), and idempotency keys.

pub mod changes;
pub mod idempotency;
pub mod replica;
