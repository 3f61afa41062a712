//! Undo: the changes the site has recorded, listed as Plone's Undo control panel lists its
//! transactions, and undoing them as the reverse of the recorded change, through the same domain
//! functions the API uses.
//!
//! What is recorded, and how each is undone:
//! - a version of an object (`v:<uid>:<n>`): its creation (version 0) is undone by deleting the
//!   object ([`operations::delete`], into the recycle bin when it is on), an edit by reverting to
//!   the version before it ([`operations::revert`], itself recorded as a new version);
//! - a workflow transition (`w:<uid>:<seq>`): by the transition that leads back to the state
//!   before it, when the workflow offers one to the caller ([`workflow::take`]);
//! - a deletion into the recycle bin (`z:<recycle id>`): by restoring the item to where it was
//!   ([`recyclebin::restore`]).
//!
//! Only an object's latest changes can be undone (several of its latest versions at once): an
//! earlier one would throw away what came after it, so it is refused (409), as is a change whose
//! reverse is impossible (no transition back, the parent of a deleted item gone or its id taken).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::content::operations::{self, Delete, Locks, Revert};
use crate::content::recyclebin;
use crate::content::tree;
use crate::content::versioning::VersionRecord;
use crate::content::workflow::{self, HistoryEntry, TransitionOptions};
use crate::core::error::{EngineError, Result};
use crate::core::keys;
use crate::runtime::context::Ctx;

/// At most this many changes are listed (the newest).
pub const MAX_LISTED: usize = 1000;

/// What a recorded change was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Version `version` of the object `uid` (0: its creation).
    Version {
        /// The object.
        uid: String,
        /// The version number.
        version: u32,
    },
    /// Entry `seq` of the workflow history of `uid`: a transition.
    Transition {
        /// The object.
        uid: String,
        /// The entry's number.
        seq: u32,
    },
    /// The deletion kept as recycle bin item `recycle_id`.
    Deletion {
        /// The item's id in the bin.
        recycle_id: String,
    },
}

impl Kind {
    /// The change's id: `v:<uid>:<version>`, `w:<uid>:<seq>` or `z:<recycle id>`.
    pub fn id(&self) -> String {
        match self {
            Kind::Version { uid, version } => format!("v:{uid}:{version}"),
            Kind::Transition { uid, seq } => format!("w:{uid}:{seq}"),
            Kind::Deletion { recycle_id } => format!("z:{recycle_id}"),
        }
    }

    /// Parse an id (its first word: Plone's ids carry the time and description after it).
    pub fn parse(id: &str) -> Result<Kind> {
        let word = id.split_whitespace().next().unwrap_or("");
        let bad = || {
            EngineError::bad_request(format!(
                "'{id}' is not a transaction id of this site (ids are listed by GET @transactions)"
            ))
        };
        let mut parts = word.splitn(3, ':');
        let kind = match (parts.next(), parts.next(), parts.next()) {
            (Some("v"), Some(uid), Some(n)) if is_uid(uid) => Kind::Version {
                uid: uid.into(),
                version: n.parse().map_err(|_| bad())?,
            },
            (Some("w"), Some(uid), Some(n)) if is_uid(uid) => Kind::Transition {
                uid: uid.into(),
                seq: n.parse().map_err(|_| bad())?,
            },
            (Some("z"), Some(rid), None) if !rid.is_empty() => Kind::Deletion {
                recycle_id: rid.into(),
            },
            _ => return Err(bad()),
        };
        Ok(kind)
    }
}

fn is_uid(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// One recorded change.
#[derive(Debug, Clone)]
pub struct Change {
    /// What it was.
    pub kind: Kind,
    /// When.
    pub time: DateTime<Utc>,
    /// Who (login).
    pub actor: String,
    /// `<path> <what>`, as Plone describes a transaction by the path and view it ran.
    pub description: String,
    /// How many bytes it recorded.
    pub size: usize,
}

fn shown(path: &str) -> &str {
    if path.is_empty() {
        "/"
    } else {
        path
    }
}

/// The uid and number of a `v:` or `w:` key (`<prefix><uid>:<u32 BE>`).
fn uid_and_number(key: &[u8], prefix: &[u8]) -> Option<(String, u32)> {
    let rest = key.get(prefix.len()..)?;
    let colon = rest.iter().rposition(|b| *b == b':')?;
    let n: [u8; 4] = rest.get(colon + 1..)?.try_into().ok()?;
    let uid = std::str::from_utf8(&rest[..colon]).ok()?;
    Some((uid.to_string(), u32::from_be_bytes(n)))
}

/// The changes the site has recorded, newest first (at most [`MAX_LISTED`]): the versions and
/// transitions of the objects in the tree, and the deletions in the recycle bin.
pub fn list(ctx: &Ctx<'_>) -> Result<Vec<Change>> {
    let mut out = Vec::new();
    let mut paths: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut path_of = |ctx: &Ctx<'_>, uid: &str| -> Result<Option<String>> {
        if let Some(p) = paths.get(uid) {
            return Ok(p.clone());
        }
        let p = tree::load(ctx, uid)?.map(|r| r.path);
        paths.insert(uid.to_string(), p.clone());
        Ok(p)
    };
    for (k, v) in ctx.scan_prefix(keys::VERSION_PREFIX)? {
        let Some((uid, version)) = uid_and_number(&k, keys::VERSION_PREFIX) else {
            continue;
        };
        let Some(path) = path_of(ctx, &uid)? else {
            continue;
        };
        let rec: VersionRecord = serde_json::from_slice(&v)?;
        let what = if version == 0 {
            "created".to_string()
        } else if rec.comment.is_empty() {
            "edited".to_string()
        } else {
            format!("edited: {}", rec.comment)
        };
        out.push(Change {
            kind: Kind::Version { uid, version },
            time: rec.time,
            actor: rec.actor,
            description: format!("{} {what}", shown(&path)),
            size: v.len(),
        });
    }
    for (k, v) in ctx.scan_prefix(keys::WORKFLOW_HISTORY_PREFIX)? {
        let Some((uid, seq)) = uid_and_number(&k, keys::WORKFLOW_HISTORY_PREFIX) else {
            continue;
        };
        let entry: HistoryEntry = serde_json::from_slice(&v)?;
        let Some(action) = entry.action else {
            continue;
        };
        let Some(path) = path_of(ctx, &uid)? else {
            continue;
        };
        out.push(Change {
            kind: Kind::Transition { uid, seq },
            time: entry.time,
            actor: entry.actor,
            description: format!("{} {action}", shown(&path)),
            size: v.len(),
        });
    }
    for item in recyclebin::all(ctx)? {
        out.push(Change {
            description: format!("{} deleted", shown(item.path())),
            kind: Kind::Deletion {
                recycle_id: item.recycle_id.clone(),
            },
            time: item.deletion_date,
            actor: item.deleted_by.clone(),
            size: serde_json::to_vec(&item)?.len(),
        });
    }
    out.sort_by(|a, b| {
        b.time
            .cmp(&a.time)
            .then_with(|| b.kind.id().cmp(&a.kind.id()))
    });
    out.truncate(MAX_LISTED);
    Ok(out)
}

fn cannot(id: &str, why: impl std::fmt::Display) -> EngineError {
    EngineError::Conflict(format!("The change '{id}' cannot be undone: {why}"))
}

/// Undo the changes `ids` (in one request: all of them, or, when one cannot be undone, none).
/// Several versions of one object are undone together: they must be its latest ones, without a
/// gap. Blank ids are skipped, as Plone skips them: Volto's Undo panel sends one entry per listed
/// change, `""` for each one not ticked.
pub fn undo(ctx: &mut Ctx<'_>, ids: &[String]) -> Result<()> {
    let ids: Vec<&String> = ids.iter().filter(|id| !id.trim().is_empty()).collect();
    if ids.is_empty() {
        return Err(EngineError::bad_request(
            "'transaction_ids' must name at least one transaction",
        ));
    }
    let mut versions: BTreeMap<String, Vec<(u32, String)>> = BTreeMap::new();
    let mut others = Vec::new();
    for id in ids {
        match Kind::parse(id)? {
            Kind::Version { uid, version } => {
                versions.entry(uid).or_default().push((version, id.clone()))
            }
            other => others.push((other, id.clone())),
        }
    }
    for (uid, mut vs) in versions {
        vs.sort();
        vs.dedup_by(|a, b| a.0 == b.0);
        undo_versions(ctx, &uid, &vs)?;
    }
    for (kind, id) in others {
        match kind {
            Kind::Transition { uid, seq } => undo_transition(ctx, &uid, seq, &id)?,
            Kind::Deletion { recycle_id } => undo_deletion(ctx, &recycle_id, &id)?,
            Kind::Version { .. } => {}
        }
    }
    Ok(())
}

/// Undo versions `vs` (sorted, each with the id the client sent) of `uid`.
fn undo_versions(ctx: &mut Ctx<'_>, uid: &str, vs: &[(u32, String)]) -> Result<()> {
    let (Some((first, first_id)), Some((last, last_id))) = (vs.first(), vs.last()) else {
        return Ok(());
    };
    let Some(mut obj) = tree::load(ctx, uid)? else {
        return Err(cannot(first_id, "the object is no longer in the site"));
    };
    let latest = crate::content::versioning::latest(ctx, uid)?;
    if latest.is_none_or(|l| *last > l) {
        return Err(cannot(last_id, "the object has no such version"));
    }
    if latest != Some(*last) || (*last - *first) as usize + 1 != vs.len() {
        return Err(cannot(
            first_id,
            format!(
                "'{}' changed after it (its latest version is {}); undo its later changes with it",
                ctx.url(&obj.path),
                latest.unwrap_or(0)
            ),
        ));
    }
    if *first == 0 {
        operations::delete(
            ctx,
            &obj,
            &Delete {
                locks: Locks::Honour(None),
                purge: false,
            },
        )?;
        return Ok(());
    }
    operations::revert(
        ctx,
        &mut obj,
        &Revert {
            version: first - 1,
            locks: Locks::Honour(None),
        },
    )?;
    Ok(())
}

fn undo_transition(ctx: &mut Ctx<'_>, uid: &str, seq: u32, id: &str) -> Result<()> {
    let Some(mut obj) = tree::load(ctx, uid)? else {
        return Err(cannot(id, "the object is no longer in the site"));
    };
    // The entries are numbered from 0 in the order they were written (`w:<uid>:<seq>`).
    let history = workflow::history(ctx, uid)?;
    let seq = seq as usize;
    let Some(entry) = history.get(seq).filter(|e| e.action.is_some()) else {
        return Err(cannot(id, "the object has no such transition"));
    };
    if seq + 1 != history.len() {
        return Err(cannot(
            id,
            format!(
                "'{}' went through other transitions after it; undo those first",
                ctx.url(&obj.path)
            ),
        ));
    }
    let before = match seq.checked_sub(1).and_then(|i| history.get(i)) {
        Some(e) => e.review_state.clone(),
        None => return Err(cannot(id, "the state before it is not recorded")),
    };
    let current = obj.review_state.clone().unwrap_or_default();
    if current != entry.review_state {
        return Err(cannot(
            id,
            format!(
                "'{}' is no longer in the state it led to",
                ctx.url(&obj.path)
            ),
        ));
    }
    let back = workflow::workflow_of(ctx, &obj)?.and_then(|wf| {
        wf.states.get(&current).and_then(|st| {
            st.transitions
                .iter()
                .find(|t| {
                    wf.transitions
                        .get(*t)
                        .is_some_and(|tr| tr.new_state == before)
                })
                .cloned()
        })
    });
    let Some(back) = back else {
        return Err(cannot(
            id,
            format!("the workflow offers no transition from '{current}' back to '{before}'"),
        ));
    };
    workflow::take(
        ctx,
        None,
        &mut obj,
        &back,
        &TransitionOptions {
            comment: format!("Undo of {}", entry.action.as_deref().unwrap_or("")),
            ..TransitionOptions::default()
        },
    )?;
    Ok(())
}

fn undo_deletion(ctx: &mut Ctx<'_>, recycle_id: &str, id: &str) -> Result<()> {
    let item = recyclebin::all(ctx)?
        .into_iter()
        .find(|i| i.recycle_id == recycle_id)
        .ok_or_else(|| cannot(id, "the item is no longer in the recycle bin"))?;
    let parent = recyclebin::restore_target(ctx, &item, None).map_err(|e| match e {
        EngineError::BadRequest(m) => cannot(id, m),
        other => other,
    })?;
    recyclebin::restore(ctx, item, parent)?;
    Ok(())
}
