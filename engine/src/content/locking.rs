//! Where locking is decided: the lock on an object, its expiry, and whether a write may proceed.
//!
//! A lock (`l:<uid>`) belongs to the user who took it and carries a token (a UUID). While it is
//! valid, every change to the object (edit, delete, workflow, revert, move, rename) must present
//! that token in the `Lock-Token` header — the lock owner too. A lock expires `timeout` seconds after
//! it was created or last refreshed; an expired lock reads as unlocked and is removed by the next
//! write that looks at it. A refused write answers 403 `Forbidden` "Resource is locked.", as the
//! reference does.
//!
//! Changes announce themselves: [`put`] emits `Locked` (a new lock) or `LockRefreshed` (the same
//! token again), [`remove`] emits `Unlocked`. [`LockingSubscriber`] drops the lock of a removed
//! object.
//!
//! [`info`] still builds the API's JSON for a lock; it belongs in the api layer (a typed answer in
//! `api/locking.rs`) and moves there with the api rewrite.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::core::model::ContentRecord;
use crate::runtime::context::Ctx;
use crate::runtime::subscriber::Subscriber;

/// Lock timeout when the request gives none (seconds).
pub const DEFAULT_TIMEOUT: u64 = 600;
/// Longest lock timeout accepted (seconds): one day.
pub const MAX_TIMEOUT: u64 = 86_400;

/// A stored lock.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Lock {
    /// The token needed to change the object.
    pub token: String,
    /// Login of the user who holds it.
    pub creator: String,
    /// Full name of that user.
    pub creator_name: String,
    /// When it was taken or last refreshed.
    pub created: DateTime<Utc>,
    /// Seconds it lasts from `created`.
    pub timeout: u64,
    /// Whether other users with edit rights may break it.
    pub stealable: bool,
}

impl Lock {
    /// Whether the lock has expired at `now`.
    pub fn expired(&self, now: DateTime<Utc>) -> bool {
        now >= self.created + Duration::seconds(self.timeout as i64)
    }

    /// Whether `lock_token` (what a request sent in `Lock-Token`) is this lock's token.
    pub fn opened_by(&self, lock_token: Option<&str>) -> bool {
        lock_token.map(str::trim) == Some(self.token.as_str())
    }

    /// Whether a request by `login` presenting `lock_token` holds this lock (to refresh, unlock
    /// or re-lock it): its owner does, and so does whoever presents its token.
    pub fn held_by(&self, login: Option<&str>, lock_token: Option<&str>) -> bool {
        login == Some(self.creator.as_str()) || self.opened_by(lock_token)
    }
}

/// The valid (unexpired) lock on `obj`, if any.
pub fn current(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Option<Lock>> {
    let lock: Option<Lock> = ctx.get_json(&keys::lock(&obj.uid))?;
    Ok(lock.filter(|l| !l.expired(ctx.now())))
}

/// Store a lock on `obj`: [`Event::LockRefreshed`] when it replaces a lock with the same token,
/// [`Event::Locked`] otherwise.
pub fn put(ctx: &mut Ctx<'_>, obj: &ContentRecord, lock: &Lock) -> Result<()> {
    let key = keys::lock(&obj.uid);
    let before: Option<Lock> = ctx.get_json(&key)?;
    ctx.put_json(&key, lock)?;
    let (uid, path) = (obj.uid.clone(), obj.path.clone());
    ctx.emit(match before {
        Some(b) if b.token == lock.token => Event::LockRefreshed { uid, path },
        _ => Event::Locked { uid, path },
    });
    Ok(())
}

/// Remove any lock on `obj` (valid or expired); [`Event::Unlocked`] when there was one.
pub fn remove(ctx: &mut Ctx<'_>, obj: &ContentRecord) -> Result<()> {
    let key = keys::lock(&obj.uid);
    if ctx.get(&key)?.is_none() {
        return Ok(());
    }
    ctx.delete(&key)?;
    ctx.emit(Event::Unlocked {
        uid: obj.uid.clone(),
        path: obj.path.clone(),
    });
    Ok(())
}

/// Fail with 403 "Resource is locked." unless `obj` is unlocked or `lock_token` (what the
/// request sent in its `Lock-Token` header) is the lock's token.
pub fn check_can_change(
    ctx: &mut Ctx<'_>,
    lock_token: Option<&str>,
    obj: &ContentRecord,
) -> Result<()> {
    let stored: Option<Lock> = ctx.get_json(&keys::lock(&obj.uid))?;
    let Some(lock) = stored else {
        return Ok(());
    };
    if lock.expired(ctx.now()) {
        // Clean up lazily; this request writes anyway.
        return remove(ctx, obj);
    }
    if lock.opened_by(lock_token) {
        return Ok(());
    }
    Err(EngineError::Locked(format!(
        "Resource is locked. '{}' is locked by '{}'; send its token in the Lock-Token header.",
        ctx.url(&obj.path),
        lock.creator
    )))
}

/// Fail with 403 "Resource is locked." unless `obj` is unlocked, the caller owns the lock, or
/// `lock_token` is the lock's token: the rule for a workflow transition, which changes the
/// object's state and not its fields. Plone lets the lock's owner take one without the token
/// (Volto's state menu sends none while its own edit form holds the lock).
pub fn check_can_transition(
    ctx: &mut Ctx<'_>,
    lock_token: Option<&str>,
    obj: &ContentRecord,
) -> Result<()> {
    let owner = ctx.principal.login().map(str::to_string);
    match current(ctx, obj)? {
        Some(lock) if lock.held_by(owner.as_deref(), lock_token) => Ok(()),
        _ => check_can_change(ctx, lock_token, obj),
    }
}

/// Drops the lock of a removed object (the lock `l:<uid>` is this module's record).
pub struct LockingSubscriber;

impl Subscriber for LockingSubscriber {
    fn name(&self) -> &'static str {
        "locking"
    }

    fn on_event(&self, ctx: &mut Ctx<'_>, event: &Event) -> Result<()> {
        if let Event::Removed { uid, .. } = event {
            ctx.delete(&keys::lock(uid))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_expire_after_their_timeout() {
        let t0 = crate::core::clock::FixedClock::default_instant();
        let l = Lock {
            token: "t".into(),
            creator: "a".into(),
            creator_name: String::new(),
            created: t0,
            timeout: 600,
            stealable: true,
        };
        assert!(!l.expired(t0 + Duration::seconds(599)));
        assert!(l.expired(t0 + Duration::seconds(600)));
    }
}
