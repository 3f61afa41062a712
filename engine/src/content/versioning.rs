//! Where version history is kept: every create and edit of a versioned type records a version.
//!
//! Version 0 stores all field values at creation; each later version stores only the fields that
//! edit wrote (their new values), so history grows by the changed content per edit, never by a copy
//! of the whole object. The state at version N is version 0 with versions 1..=N applied in order.
//! Versions are recorded by [`VersioningSubscriber`] from the `Added`/`Modified` events, in the
//! same transaction as the edit.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::content::tree;
use crate::core::error::Result;
use crate::core::events::Event;
use crate::core::keys;
use crate::core::model::{ContentRecord, ContentType};
use crate::core::store::Direction;
use crate::runtime::context::Ctx;
use crate::runtime::subscriber::Subscriber;

/// One stored version.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct VersionRecord {
    /// Version number (0 for the initial one).
    pub version: u32,
    /// Login of the editor.
    pub actor: String,
    /// When it was recorded.
    pub time: DateTime<Utc>,
    /// The change note.
    pub comment: String,
    /// Field values written by this version (all fields for version 0).
    pub changes: Map<String, Value>,
    /// Position in the object's combined history (see [`next_history_seq`]).
    #[serde(default)]
    pub seq: u64,
}

/// The next number in `uid`'s combined history of versions and workflow entries, which orders the
/// two kinds of entries among each other even when their timestamps are equal (the counter
/// `n:<uid>:h`, [`crate::content::counters`]).
pub fn next_history_seq(ctx: &mut Ctx<'_>, uid: &str) -> Result<u64> {
    crate::content::counters::next(ctx, &keys::history_counter(uid))
}

/// Whether objects of `ty` keep a version history (types with the versioning behavior).
pub fn is_versioned(ty: &ContentType) -> bool {
    ty.field("changeNote").is_some()
}

/// The newest version number of `uid`, if it has any.
pub fn latest(ctx: &Ctx<'_>, uid: &str) -> Result<Option<u32>> {
    let last = ctx.last_with_prefix(&keys::versions_prefix(uid))?;
    Ok(last.and_then(|(k, _)| keys::trailing_u32(&k)))
}

/// Every version of `uid`, oldest first.
pub fn list(ctx: &Ctx<'_>, uid: &str) -> Result<Vec<VersionRecord>> {
    ctx.values_with_prefix(&keys::versions_prefix(uid))
}

/// The field values of `uid` as they were at `version` (`None` if there is no such version).
pub fn fields_at(ctx: &Ctx<'_>, uid: &str, version: u32) -> Result<Option<Map<String, Value>>> {
    let prefix = keys::versions_prefix(uid);
    let end = keys::version(uid, version.saturating_add(1));
    let rows = if version == u32::MAX {
        ctx.scan_prefix(&prefix)?
    } else {
        ctx.scan(&prefix, &end, Direction::Forward, usize::MAX)?
    };
    if rows.last().and_then(|(k, _)| keys::trailing_u32(k)) != Some(version) {
        return Ok(None);
    }
    let mut fields = Map::new();
    for (_, v) in rows {
        let rec: VersionRecord = serde_json::from_slice(&v)?;
        for (k, val) in rec.changes {
            fields.insert(k, val);
        }
    }
    Ok(Some(fields))
}

/// Record the next version of `obj` holding `changes`. Its number comes from the counter
/// `n:<uid>:v` ([`crate::content::counters`]), so two writers never record the same version number.
pub fn record(
    ctx: &mut Ctx<'_>,
    obj: &ContentRecord,
    changes: Map<String, Value>,
    comment: String,
) -> Result<u32> {
    let n = crate::content::counters::next(ctx, &keys::version_counter(&obj.uid))?;
    let version = u32::try_from(n).map_err(|_| {
        crate::core::error::EngineError::Internal(format!("{} has too many versions", obj.uid))
    })?;
    let seq = next_history_seq(ctx, &obj.uid)?;
    let rec = VersionRecord {
        seq,
        version,
        actor: ctx.principal.login().unwrap_or(&obj.owner).to_string(),
        time: ctx.now(),
        comment,
        changes,
    };
    ctx.put_json(&keys::version(&obj.uid, version), &rec)?;
    Ok(version)
}

/// Remove every version of `uid`.
pub fn remove_all(ctx: &mut Ctx<'_>, uid: &str) -> Result<()> {
    ctx.delete_prefix(&keys::versions_prefix(uid))
}

/// Records versions on `Added` and `Modified`; drops the versions of removed objects (the
/// versions `v:<uid>:` are this module's record; the workflow history, the lock and the comments
/// belong to their own modules' subscribers).
pub struct VersioningSubscriber;

impl Subscriber for VersioningSubscriber {
    fn name(&self) -> &'static str {
        "versioning"
    }

    fn on_event(&self, ctx: &mut Ctx<'_>, event: &Event) -> Result<()> {
        match event {
            Event::Added {
                uid, change_note, ..
            } => {
                let Some(obj) = tree::load(ctx, uid)? else {
                    return Ok(());
                };
                if is_versioned(ctx.type_of(&obj)?.as_ref()) {
                    let note = change_note
                        .clone()
                        .unwrap_or_else(|| "Initial version".into());
                    record(ctx, &obj, obj.fields.clone(), note)?;
                }
            }
            Event::Modified {
                uid,
                fields,
                change_note,
                ..
            } if !fields.is_empty() => {
                let Some(obj) = tree::load(ctx, uid)? else {
                    return Ok(());
                };
                if is_versioned(ctx.type_of(&obj)?.as_ref()) {
                    let changes = fields
                        .iter()
                        .filter_map(|f| obj.fields.get(f).map(|v| (f.clone(), v.clone())))
                        .collect();
                    record(ctx, &obj, changes, change_note.clone().unwrap_or_default())?;
                }
            }
            Event::Removed { uid, .. } => {
                remove_all(ctx, uid)?;
            }
            _ => {}
        }
        Ok(())
    }
}
