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
    for (k, v) in rows.into_iter().take(limit) {
        let seq = k
            .get(keys::CHANGES_ENTRY_PREFIX.len()..)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_be_bytes)
            .ok_or_else(|| EngineError::Internal("malformed change log key".into()))?;
        let entry: Entry = serde_json::from_slice(&v)?;
        let object = match tree::load(ctx, &entry.uid)? {
            Some(obj)
                if tree::is_within(&obj, context) && ctx.permitted(Permission::View, &obj)? =>
            {
                Some(obj)
            }
            _ => None,
        };
        entries.push(Listed {
            seq,
            added: entry.added > since.seq,
            uid: entry.uid,
            object,
        });
    }
    let cursor = Cursor {
        epoch: now.epoch,
        seq: entries.last().map_or(since.seq, |e| e.seq),
    };
    Ok(Page {
        entries,
        cursor,
        more,
    })
}

/// Give each uid a new entry at the end of the log, in order (its earlier one goes); with
/// `true`: it was (re)created now. The sequence counter is read and written once for all of
/// them (a create touches the new object and its parent).
fn touch_all<'u>(ctx: &mut Ctx<'_>, uids: impl IntoIterator<Item = (&'u str, bool)>) -> Result<()> {
    let mut uids = uids.into_iter().peekable();
    if uids.peek().is_none() {
        return Ok(());
    }
    let start = read_u64(ctx, keys::CHANGES_SEQ)?;
    let mut seq = start;
    for (uid, added) in uids {
        seq = seq.saturating_add(1);
        touch(ctx, uid, added, seq)?;
    }
    if seq != start {
        ctx.put(keys::CHANGES_SEQ, &seq.to_be_bytes())?;
    }
    Ok(())
}

/// Give `uid` the entry `seq` (its earlier one goes); `added`: it was (re)created now. The
/// caller stores the sequence counter.
fn touch(ctx: &mut Ctx<'_>, uid: &str, added: bool, seq: u64) -> Result<()> {
    let pointer = keys::changes_uid(uid);
    let mut first_added = 0;
    let old = read_u64(ctx, &pointer)?;
    if old > 0 {
        let old_key = keys::changes_entry(old);
        if let Some(bytes) = ctx.get(&old_key)? {
            first_added = serde_json::from_slice::<Entry>(&bytes)?.added;
            ctx.delete(&old_key)?;
        }
        ctx.delete(&keys::changes_removal(old))?;
    }
    let now = ctx.now().timestamp_millis();
    let entry = Entry {
        uid: uid.to_string(),
        added: if added { seq } else { first_added },
        at: now,
    };
    ctx.put_json(&keys::changes_entry(seq), &entry)?;
    ctx.put(&pointer, &seq.to_be_bytes())?;
    if ctx.get(&keys::object(uid))?.is_none() {
        ctx.put(&keys::changes_removal(seq), b"")?;
        prune(ctx, now)?;
    }
    ctx.core
        .changes_pending
        .store(true, std::sync::atomic::Ordering::Release);
    Ok(())
}

/// Drop removals older than [`RETENTION_DAYS`] (a batch at most), moving the horizon past them.
fn prune(ctx: &mut Ctx<'_>, now: i64) -> Result<()> {
    let cutoff = now - RETENTION_DAYS * 24 * 3600 * 1000;
    let prefix = keys::CHANGES_REMOVAL_PREFIX;
    let rows = ctx.scan(prefix, &prefix_end(prefix), Direction::Forward, PRUNE_BATCH)?;
    let mut horizon = read_u64(ctx, keys::CHANGES_HORIZON)?;
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
        let entry: Option<Entry> = ctx.get_json(&entry_key)?;
        if entry.as_ref().is_some_and(|e| e.at > cutoff) {
            break;
        }
        ctx.delete(&k)?;
        if let Some(e) = entry {
            ctx.delete(&entry_key)?;
            let pointer = keys::changes_uid(&e.uid);
            if read_u64(ctx, &pointer)? == seq {
                ctx.delete(&pointer)?;
            }
        }
        horizon = horizon.max(seq);
    }
    if horizon != before {
        ctx.put(keys::CHANGES_HORIZON, &horizon.to_be_bytes())?;
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
