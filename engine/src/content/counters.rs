//! Per-object counters (`n:<uid>:<kind>`): numbers that are never handed out twice.
//!
//! A counter holds the next number to hand out, as decimal text; a missing counter starts at 0.
//! [`next`] reads it, writes it back incremented and returns the number read, inside the request's
//! transaction. So two concurrent allocations of the same counter both write its key: a store
//! that serialises writers runs them one after the other, and an optimistic store commits at most
//! one of them (the other's commit fails with a conflict), so no number is allocated twice.
//! A counter only moves forward: deleting the last comment (or anything else numbered) does not
//! make its number available again.
//!
//! The counters in use, all per object (see [`crate::core::keys`]):
//!
//! - `n:<uid>:h`: the combined history sequence ([`crate::content::versioning::VersionRecord::seq`],
//!   [`crate::content::workflow::HistoryEntry::seq`]), which orders versions and workflow entries among
//!   each other;
//! - `n:<uid>:v`: version numbers ([`crate::content::versioning::record`]);
//! - `n:<uid>:m`: comment positions ([`crate::content::comments::add`]).
//!
//! Folder child positions (`c:<parent>:<pos>`) need no counter here: they come from the parent
//! record's `next_pos` ([`crate::core::model::ContentRecord`]), and every add writes that record, so
//! the same argument holds for them.
//!
//! An object's counters are deleted with the object ([`CountersSubscriber`]); its uid is never
//! reused, so its numbers cannot come back either.

use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::runtime::context::Ctx;
use crate::runtime::subscriber::Subscriber;

/// The value of the counter at `key` without moving it: the number [`next`] would return.
pub fn peek(ctx: &Ctx<'_>, key: &[u8]) -> Result<u64> {
    match ctx.get(key)? {
        None => Ok(0),
        Some(bytes) => std::str::from_utf8(&bytes)
            .ok()
            .and_then(|t| t.parse::<u64>().ok())
            .ok_or_else(|| {
                EngineError::Internal(format!(
                    "counter {} holds {:?}, not a number",
                    String::from_utf8_lossy(key),
                    String::from_utf8_lossy(&bytes)
                ))
            }),
    }
}

/// Allocate the next number of the counter at `key` (0 for a counter never used) and move the
/// counter past it, in `ctx`'s write transaction (stored when the request finishes, once
/// however often it moved: [`Ctx::put_counter`]).
pub fn next(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<u64> {
    let n = peek(ctx, key)?;
    let after = n.checked_add(1).ok_or_else(|| {
        EngineError::Internal(format!(
            "counter {} is exhausted",
            String::from_utf8_lossy(key)
        ))
    })?;
    ctx.put_counter(key, after.to_string().as_bytes())?;
    Ok(n)
}

/// Set the counter at `key` so that the next number it hands out is `next` (migrations).
pub fn set(ctx: &mut Ctx<'_>, key: &[u8], next: u64) -> Result<()> {
    ctx.put(key, next.to_string().as_bytes())
}

/// Deletes the counters of removed objects.
pub struct CountersSubscriber;

impl Subscriber for CountersSubscriber {
    fn name(&self) -> &'static str {
        "counters"
    }

    fn on_event(&self, ctx: &mut Ctx<'_>, event: &Event) -> Result<()> {
        if let Event::Removed { uid, .. } = event {
            ctx.delete_prefix(&keys::counters_prefix(uid))?;
        }
        Ok(())
    }
}
