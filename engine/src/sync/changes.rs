//! The change log behind `GET /@changes` (issue 18, the server side of offline editing): which
//! content objects changed since a cursor, in commit order, one entry per object.
//!
//! The [`ChangesSubscriber`] writes the log inside the request's transaction, from the content
//! events ([`Event::objects`] names every content record a request wrote, so the log is never
//! behind or ahead of the data): each object an event names gets a new entry at the next sequence
//! number, and its earlier entry (`C:u:<uid>` points at it) is deleted, so the log holds at most
//! one entry per object, at its latest position. Visibility changes that do not save the objects
//! they affect are recorded too: a change of local roles (sharing) marks the whole subtree.
//!
//! An entry only names the object; what it lists is read when the feed is read: the object's
//! current record (none: it was removed). Whether it was "added" after a cursor is told by the
//! sequence its entry was first written at ([`Entry::added`]).
//!
//! Retention: entries of existing objects are kept (one per object at most); removals are kept
//! for [`RETENTION_DAYS`] days, then dropped when a later removal is recorded. Dropping one moves
//! the log's horizon (`C:h`): a cursor below it would miss that removal, so it is expired
//! ([`EngineError::CursorExpired`], the client downloads everything again).
//!
//! Removals are listed only to callers who could see the object before: each entry carries what
//! the log knew of the object over its recorded states ([`Entry::seen_by`]: the
//! `allowedRolesAndUsers` tokens of each state; [`Entry::seen_at`]: its paths). An object the
//! caller cannot view now (deleted, retracted, unshared, moved out of the context) is listed as
//! removed only when one of the caller's tokens is among `seen_by` and one of `seen_at` is
//! within the context; otherwise it is not listed at all (an anonymous caller never learns the
//! uid of a private object, and the site root is never "removed" under a sub-path). Entries
//! written before this was kept have no history: their removals are listed to logged-in callers
//! only.
//!
//! Not recorded: changes of a caller's global roles or group memberships (they change what that
//! caller may see everywhere, without touching any object; the feed's permission filter applies
//! the new rights to the entries listed after them, not to older ones).

use serde::{Deserialize, Serialize};

use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::core::store::{prefix_end, Direction};
use crate::people::permissions::Access;
use crate::runtime::commit::{AtCommit, CommitTxn};
use crate::runtime::context::Ctx;
use crate::runtime::subscriber::Subscriber;

/// How long removals stay in the log (days); cursors older than a dropped removal expire.
pub const RETENTION_DAYS: i64 = 30;

/// Most dropped removals per recorded removal (the rest go with the next ones).
const PRUNE_BATCH: usize = 32;

/// One entry of the log (`C:e:<seq>`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    /// The object's uid.
    pub uid: String,
    /// The sequence at which the object was (last) added, 0 when it was added before the log
    /// knew it: listed as "added" to cursors below it.
    pub added: u64,
    /// When the entry was written (milliseconds since the epoch).
    pub at: i64,
    /// Who could view the object in any state the log recorded for it: the union of its
    /// `allowedRolesAndUsers` tokens ([`crate::people::permissions::allowed_roles_and_users`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen_by: Vec<String>,
    /// Where it was in those states: its paths (the latest [`MAX_SEEN_PATHS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen_at: Vec<String>,
}

/// Most paths an entry remembers ([`Entry::seen_at`]).
pub const MAX_SEEN_PATHS: usize = 16;

impl Entry {
    /// Whether a caller with search `tokens` could see the object in `context` in a state the
    /// log recorded (entries without history: any logged-in caller).
    fn seen_by_caller(&self, tokens: &[String], anonymous: bool, context: &ContentRecord) -> bool {
        if self.seen_by.is_empty() && self.seen_at.is_empty() {
            return !anonymous;
        }
        self.within(context) && self.seen_by.iter().any(|t| tokens.contains(t))
    }

    /// Whether one of the recorded paths is `context` or below it.
    fn within(&self, context: &ContentRecord) -> bool {
        let base = &context.path;
        self.seen_at.iter().any(|p| {
            base.is_empty()
                || p.strip_prefix(base.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    }
}

/// A position in the log, as clients hold it: the site's epoch (the first 8 hex digits of the
/// site root's uid, so a cursor of another site, or of this one re-created, is refused) and a
/// sequence number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// The site's epoch.
    pub epoch: String,
    /// The sequence number: every entry up to it has been seen.
    pub seq: u64,
}

impl Cursor {
    /// Parse `<epoch>.<seq>`; `None` when malformed.
    pub fn parse(text: &str) -> Option<Cursor> {
        let (epoch, seq) = text.split_once('.')?;
        let hex = epoch.len() == 8 && epoch.bytes().all(|b| b.is_ascii_hexdigit());
        let digits = !seq.is_empty() && seq.bytes().all(|b| b.is_ascii_digit());
        if !hex || !digits {
            return None;
        }
        Some(Cursor {
            epoch: epoch.to_ascii_lowercase(),
            seq: seq.parse().ok()?,
        })
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.epoch, self.seq)
    }
}

/// One object listed by [`list`].
#[derive(Debug, Clone)]
pub struct Listed {
    /// The sequence of its entry (the cursor after it).
    pub seq: u64,
    /// Its uid.
    pub uid: String,
    /// Whether it was added after the cursor the list started from.
    pub added: bool,
    /// Its current record, when it exists, the caller may view it and it is within the context;
    /// `None`: listed as removed.
    pub object: Option<ContentRecord>,
}

/// A page of the log.
#[derive(Debug, Clone)]
pub struct Page {
    /// The entries, in log order.
    pub entries: Vec<Listed>,
    /// The cursor after the last entry (the given one when there is none).
    pub cursor: Cursor,
    /// Whether more entries follow.
    pub more: bool,
}

fn read_u64(ctx: &Ctx<'_>, key: &[u8]) -> Result<u64> {
    Ok(ctx
        .get(key)?
        .and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
        .map(u64::from_be_bytes)
        .unwrap_or(0))
}

/// The site's epoch (see [`Cursor`]).
pub fn epoch(ctx: &Ctx<'_>) -> Result<String> {
    let root = tree::root(ctx)?;
    Ok(root.uid.chars().take(8).collect())
}

/// The cursor at the end of the log now.
pub fn current(ctx: &Ctx<'_>) -> Result<Cursor> {
    Ok(Cursor {
        epoch: epoch(ctx)?,
        seq: read_u64(ctx, keys::CHANGES_SEQ)?,
    })
}

/// The objects changed after `since` (up to `limit`), as the caller sees them from `context`:
/// objects outside it, or that the caller may not view, are listed as removed (a client that
/// held them drops them). A cursor of another site, from beyond the log's end, or below the
/// horizon is expired.
pub fn list(ctx: &Ctx<'_>, since: &Cursor, limit: usize, context: &ContentRecord) -> Result<Page> {
    let now = current(ctx)?;
    let expired = |why: &str| {
        Err(EngineError::CursorExpired(format!(
            "The cursor '{since}' {why}; download everything again and follow the changes from \
             the current cursor"
        )))
    };
    if since.epoch != now.epoch {
        return expired("belongs to another site");
    }
    if since.seq > now.seq {
        return expired("is ahead of this site's change log");
    }
    if since.seq < read_u64(ctx, keys::CHANGES_HORIZON)? {
        return expired(&format!(
            "is older than the change log keeps (removals are kept {RETENTION_DAYS} days)"
        ));
    }
    let start = keys::changes_entry(since.seq.saturating_add(1));
    let end = prefix_end(keys::CHANGES_ENTRY_PREFIX);
    let rows = ctx.scan(&start, &end, Direction::Forward, limit.saturating_add(1))?;
    let more = rows.len() > limit;
    let mut entries = Vec::with_capacity(rows.len().min(limit));
    let mut last = since.seq;
    // the caller's tokens, for the removals they may be told of (once per page)
    let tokens = ctx.principal.search_tokens();
    let anonymous = ctx.principal.is_anonymous();
    for (k, v) in rows.into_iter().take(limit) {
        let seq = k
            .get(keys::CHANGES_ENTRY_PREFIX.len()..)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_be_bytes)
            .ok_or_else(|| EngineError::Internal("malformed change log key".into()))?;
        let entry: Entry = serde_json::from_slice(&v)?;
        last = seq;
        let object = match tree::load(ctx, &entry.uid)? {
            Some(obj)
                if tree::is_within(&obj, context) && ctx.permitted(Permission::View, &obj)? =>
            {
                Some(obj)
            }
            _ => None,
        };
        if object.is_none() && !entry.seen_by_caller(&tokens, anonymous, context) {
            // never visible to this caller here: not even its uid is listed
            continue;
        }
        entries.push(Listed {
            seq,
            added: entry.added > since.seq,
            uid: entry.uid,
            object,
        });
    }
    // past every entry read, listed or not
    let cursor = Cursor {
        epoch: now.epoch,
        seq: last,
    };
    Ok(Page {
        entries,
        cursor,
        more,
    })
}

/// Give each uid a new entry at the end of the log, in order (its earlier one goes); with
/// `true`: it was (re)created now. What the entries say about each object (who could view it,
/// where it is, whether it is gone) is read here, in the request; their sequence numbers are
/// given at commit ([`Touches`]), so that a request never reads the log's end.
fn touch_all<'u>(ctx: &mut Ctx<'_>, uids: impl IntoIterator<Item = (&'u str, bool)>) -> Result<()> {
    let mut touches = Vec::new();
    for (uid, added) in uids {
        touches.push(observe(ctx, uid, added)?);
    }
    if touches.is_empty() {
        return Ok(());
    }
    ctx.core
        .changes_pending
        .store(true, std::sync::atomic::Ordering::Release);
    ctx.at_commit(Box::new(Touches(touches)))
}

/// One object's new entry, as the request saw the object.
struct Touch {
    uid: String,
    /// It was (re)created now.
    added: bool,
    /// Who may view it now and its path; `None` when it does not exist.
    now: Option<(std::collections::BTreeSet<String>, String)>,
    /// Its record is gone: the entry is a removal.
    removed: bool,
    /// When (milliseconds since the epoch).
    at: i64,
}

/// What the log records about `uid` now (see [`touch_all`]).
fn observe(ctx: &Ctx<'_>, uid: &str, added: bool) -> Result<Touch> {
    let now = match tree::load(ctx, uid)? {
        Some(obj) => {
            let ancestors = tree::ancestors(ctx, &obj)?;
            let tokens =
                crate::people::permissions::allowed_roles_and_users(ctx, &obj, &ancestors)?;
            Some((tokens, obj.path))
        }
        None => None,
    };
    Ok(Touch {
        uid: uid.to_string(),
        added,
        now,
        at: ctx.now().timestamp_millis(),
        removed: ctx.get(&keys::object(uid))?.is_none(),
    })
}

/// A request's entries, numbered at commit: the sequence counter is read and written once for
/// all of them (a create touches the new object and its parent).
struct Touches(Vec<Touch>);

impl AtCommit for Touches {
    fn apply(&self, txn: &mut CommitTxn<'_, '_>) -> Result<()> {
        let start = read_u64_at(txn, keys::CHANGES_SEQ)?;
        let mut seq = start;
        for t in &self.0 {
            seq = seq.saturating_add(1);
            touch(txn, t, seq)?;
        }
        if seq != start {
            txn.put(keys::CHANGES_SEQ, &seq.to_be_bytes())?;
        }
        Ok(())
    }
}

fn read_u64_at(txn: &CommitTxn<'_, '_>, key: &[u8]) -> Result<u64> {
    Ok(txn
        .get(key)?
        .and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
        .map(u64::from_be_bytes)
        .unwrap_or(0))
}

/// Give `t.uid` the entry `seq` (its earlier one goes). The caller stores the sequence counter.
fn touch(txn: &mut CommitTxn<'_, '_>, t: &Touch, seq: u64) -> Result<()> {
    let pointer = keys::changes_uid(&t.uid);
    let mut first_added = 0;
    let mut seen_by = std::collections::BTreeSet::new();
    let mut seen_at = Vec::new();
    let old = read_u64_at(txn, &pointer)?;
    if old > 0 {
        let old_key = keys::changes_entry(old);
        if let Some(bytes) = txn.get(&old_key)? {
            let old_entry = serde_json::from_slice::<Entry>(&bytes)?;
            first_added = old_entry.added;
            seen_by.extend(old_entry.seen_by);
            seen_at = old_entry.seen_at;
            txn.delete(&old_key)?;
        }
        txn.delete(&keys::changes_removal(old))?;
    }
    // What the object is now, for callers of later pages who cannot see it any more.
    if let Some((tokens, path)) = &t.now {
        seen_by.extend(tokens.iter().cloned());
        seen_at.retain(|p| p != path);
        seen_at.push(path.clone());
        if seen_at.len() > MAX_SEEN_PATHS {
            seen_at.drain(..seen_at.len() - MAX_SEEN_PATHS);
        }
    }
    let entry = Entry {
        uid: t.uid.clone(),
        added: if t.added { seq } else { first_added },
        at: t.at,
        seen_by: seen_by.into_iter().collect(),
        seen_at,
    };
    txn.put(&keys::changes_entry(seq), &serde_json::to_vec(&entry)?)?;
    txn.put(&pointer, &seq.to_be_bytes())?;
    if t.removed {
        txn.put(&keys::changes_removal(seq), b"")?;
        prune(txn, t.at)?;
    }
    Ok(())
}

/// Drop removals older than [`RETENTION_DAYS`] (a batch at most), moving the horizon past them.
fn prune(txn: &mut CommitTxn<'_, '_>, now: i64) -> Result<()> {
    let cutoff = now - RETENTION_DAYS * 24 * 3600 * 1000;
    let prefix = keys::CHANGES_REMOVAL_PREFIX;
    let rows = txn.scan(prefix, &prefix_end(prefix), Direction::Forward, PRUNE_BATCH)?;
    let mut horizon = read_u64_at(txn, keys::CHANGES_HORIZON)?;
    let before = horizon;
    for (k, _) in rows {
        let Some(seq) = k
            .get(prefix.len()..)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_be_bytes)
        else {
            continue;
        };
        let entry_key = keys::changes_entry(seq);
        let entry: Option<Entry> = match txn.get(&entry_key)? {
            Some(bytes) => Some(serde_json::from_slice(&bytes)?),
            None => None,
        };
        if entry.as_ref().is_some_and(|e| e.at > cutoff) {
            break;
        }
        txn.delete(&k)?;
        if let Some(e) = entry {
            txn.delete(&entry_key)?;
            let pointer = keys::changes_uid(&e.uid);
            if read_u64_at(txn, &pointer)? == seq {
                txn.delete(&pointer)?;
            }
        }
        horizon = horizon.max(seq);
    }
    if horizon != before {
        txn.put(keys::CHANGES_HORIZON, &horizon.to_be_bytes())?;
    }
    Ok(())
}

/// Writes the change log ([`crate::sync::changes`]) from the content events.
pub struct ChangesSubscriber;

impl Subscriber for ChangesSubscriber {
    fn name(&self) -> &'static str {
        "changes"
    }

    fn on_event(&self, ctx: &mut Ctx<'_>, event: &Event) -> Result<()> {
        match event {
            Event::Added { uid, parent, .. } | Event::Restored { uid, parent, .. } => {
                let parent = parent.as_deref().map(|p| (p, false));
                touch_all(ctx, std::iter::once((uid.as_str(), true)).chain(parent))?;
            }
            Event::LocalRolesChanged { path, .. } => {
                // Who may view the object and everything below it may have changed.
                let uids = tree::subtree_uids(ctx, path)?;
                touch_all(ctx, uids.iter().map(|u| (u.as_str(), false)))?;
            }
            other => {
                touch_all(ctx, other.objects().into_iter().map(|u| (u, false)))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_parse_and_print() {
        let c = Cursor::parse("0a1B2c3d.42").unwrap();
        assert_eq!(c.seq, 42);
        assert_eq!(c.to_string(), "0a1b2c3d.42");
        for bad in [
            "",
            "42",
            "0a1b2c3d.",
            "0a1b2c3.1",
            "0a1b2c3g.1",
            "0a1b2c3d.-1",
            "0a1b2c3d.1x",
        ] {
            assert!(Cursor::parse(bad).is_none(), "{bad}");
        }
        assert!(Cursor::parse("0a1b2c3d.99999999999999999999999").is_none());
    }
}
