//! The content tree in the keyspace: finding objects by uid and path, listing children in order,
//! inserting, saving and removing objects (whole subtrees), and rewriting a folder's order.
//! Only this module writes the `o:`, `p:` and `c:` keys, so the three stay consistent, and every
//! function that writes them emits the events that announce the change ([`Event`]): `Added`,
//! `Modified` or `Transitioned` ([`save`] with its [`Change`]), `Removed`, `Moved` and
//! `OrderChanged`, each naming the parents and children whose records changed with it.

use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::core::model::{ancestor_paths, ContentRecord};
use crate::core::store::{prefix_end, Direction};
use crate::runtime::context::Ctx;

/// The record of `uid`, if it exists.
pub fn load(ctx: &Ctx<'_>, uid: &str) -> Result<Option<ContentRecord>> {
    if let Some(rec) = ctx.saved_record(uid) {
        return Ok(Some(rec.clone()));
    }
    ctx.get_json(&keys::object(uid))
}

/// The stored record of `uid` as bytes, if it exists (to decode only part of it).
pub fn load_raw(ctx: &Ctx<'_>, uid: &str) -> Result<Option<Vec<u8>>> {
    ctx.get(&keys::object(uid))
}

/// The uid of the object at `path` (`""` is the root).
pub fn uid_at(ctx: &Ctx<'_>, path: &str) -> Result<Option<String>> {
    Ok(ctx
        .get(&keys::path(path))?
        .map(|b| String::from_utf8_lossy(&b).into_owned()))
}

/// The object at `path`.
pub fn at_path(ctx: &Ctx<'_>, path: &str) -> Result<Option<ContentRecord>> {
    match uid_at(ctx, path)? {
        Some(uid) => {
            let rec = load(ctx, &uid)?.ok_or_else(|| {
                EngineError::Internal(format!("path index points at missing object {uid}"))
            })?;
            Ok(Some(rec))
        }
        None => Ok(None),
    }
}

/// The site root.
pub fn root(ctx: &Ctx<'_>) -> Result<ContentRecord> {
    at_path(ctx, "")?.ok_or_else(|| EngineError::Internal("the site has no root object".into()))
}

/// Every ancestor of `obj`, root first.
pub fn ancestors(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Vec<ContentRecord>> {
    let mut out = Vec::new();
    for p in ancestor_paths(&obj.path) {
        let a = at_path(ctx, &p)?.ok_or_else(|| {
            EngineError::Internal(format!("ancestor {p:?} of {} missing", obj.path))
        })?;
        out.push(a);
    }
    Ok(out)
}

/// Every ancestor of `obj`, root first, decoded only for permission checks
/// ([`ContentRecord::from_json_for_permissions`]: uid, path, type, state, local roles): what
/// `allowedRolesAndUsers` reads, without decoding their field values. Never save them.
pub fn ancestors_for_permissions(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Vec<ContentRecord>> {
    let mut out = Vec::new();
    for p in ancestor_paths(&obj.path) {
        let missing = || EngineError::Internal(format!("ancestor {p:?} of {} missing", obj.path));
        let uid = uid_at(ctx, &p)?.ok_or_else(missing)?;
        let rec = match ctx.saved_record(&uid) {
            Some(r) => r.clone_without_fields(),
            None => {
                let bytes = ctx.get(&keys::object(&uid))?.ok_or_else(missing)?;
                ContentRecord::from_json_for_permissions(&bytes)?
            }
        };
        out.push(rec);
    }
    Ok(out)
}

/// The parent of `obj` (`None` for the root).
pub fn parent(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Option<ContentRecord>> {
    match &obj.parent {
        Some(uid) => Ok(Some(load(ctx, uid)?.ok_or_else(|| {
            EngineError::Internal(format!("parent {uid} of {} missing", obj.path))
        })?)),
        None => Ok(None),
    }
}

/// The parent of `obj` decoded for the representation of `obj`
/// ([`ContentRecord::from_json_for_parent`]: structure, title, description and
/// `nextPreviousEnabled`; never save it); `None` for the root.
pub fn parent_for_representation(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
) -> Result<Option<ContentRecord>> {
    let Some(uid) = &obj.parent else {
        return Ok(None);
    };
    if let Some(rec) = ctx.saved_record(uid) {
        return Ok(Some(rec.clone()));
    }
    let bytes = load_raw(ctx, uid)?
        .ok_or_else(|| EngineError::Internal(format!("parent {uid} of {} missing", obj.path)))?;
    Ok(Some(ContentRecord::from_json_for_parent(&bytes)?))
}

/// Uids of the children of `parent_uid` in order, skipping `skip` and returning at most `limit`.
pub fn child_uids(
    ctx: &Ctx<'_>,
    parent_uid: &str,
    skip: usize,
    limit: usize,
) -> Result<Vec<String>> {
    Ok(child_slots(ctx, parent_uid, skip, limit)?
        .into_iter()
        .map(|(_, uid)| uid)
        .collect())
}

/// The children of `parent_uid` in order as their positions (the `pos` of their `c:` keys) and
/// uids, skipping `skip` and returning at most `limit`.
pub fn child_slots(
    ctx: &Ctx<'_>,
    parent_uid: &str,
    skip: usize,
    limit: usize,
) -> Result<Vec<(u64, String)>> {
    let prefix = keys::children_prefix(parent_uid);
    let rows = ctx.scan(
        &prefix,
        &prefix_end(&prefix),
        Direction::Forward,
        skip.saturating_add(limit),
    )?;
    Ok(rows
        .into_iter()
        .skip(skip)
        .map(|(k, v)| {
            let uid = String::from_utf8(v)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            (keys::child_pos(&k).unwrap_or(0), uid)
        })
        .collect())
}

/// The children of `parent_uid` in order (a page of them).
pub fn children(
    ctx: &Ctx<'_>,
    parent_uid: &str,
    skip: usize,
    limit: usize,
) -> Result<Vec<ContentRecord>> {
    child_uids(ctx, parent_uid, skip, limit)?
        .iter()
        .map(|uid| load(ctx, uid)?.ok_or_else(|| missing_child(uid)))
        .collect()
}

/// A child index entry whose record is gone (the store is inconsistent).
fn missing_child(uid: &str) -> EngineError {
    EngineError::Internal(format!("child index points at missing {uid}"))
}

/// The stored records of the children of `parent_uid` in order (a page of them), undecoded.
#[cfg(any(test, feature = "internals"))]
pub fn children_raw(
    ctx: &Ctx<'_>,
    parent_uid: &str,
    skip: usize,
    limit: usize,
) -> Result<Vec<Vec<u8>>> {
    child_uids(ctx, parent_uid, skip, limit)?
        .iter()
        .map(|uid| {
            ctx.get(&keys::object(uid))?
                .ok_or_else(|| missing_child(uid))
        })
        .collect()
}

/// The children of `parent_uid` in order (a page of them), decoded for a listing only
/// ([`ContentRecord::from_json_for_listing`]: the field values summaries need, no others). Never
/// save them.
#[cfg(any(test, feature = "internals"))]
pub fn children_for_listing(
    ctx: &Ctx<'_>,
    parent_uid: &str,
    skip: usize,
    limit: usize,
) -> Result<Vec<ContentRecord>> {
    children_raw(ctx, parent_uid, skip, limit)?
        .iter()
        .map(|bytes| Ok(ContentRecord::from_json_for_listing(bytes)?))
        .collect()
}

/// The children of `parent_uid` just before and just after position `pos` (either may be absent).
pub fn neighbours(
    ctx: &Ctx<'_>,
    parent_uid: &str,
    pos: u64,
) -> Result<(Option<ContentRecord>, Option<ContentRecord>)> {
    let prefix = keys::children_prefix(parent_uid);
    let before = ctx.scan(
        &prefix,
        &keys::child(parent_uid, pos),
        Direction::Reverse,
        1,
    )?;
    let after = ctx.scan(
        &keys::child(parent_uid, pos.saturating_add(1)),
        &prefix_end(&prefix),
        Direction::Forward,
        1,
    )?;
    let record = |rows: Vec<(Vec<u8>, Vec<u8>)>| -> Result<Option<ContentRecord>> {
        match rows.into_iter().next() {
            Some((_, uid)) => load(ctx, &String::from_utf8_lossy(&uid)),
            None => Ok(None),
        }
    };
    Ok((record(before)?, record(after)?))
}

/// How many children of its parent come before `obj` (its index in the folder's order, 0 for
/// the first and for the site root). Reads the keys of those siblings, not their records.
pub fn index_in_parent(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<usize> {
    let Some(parent) = obj.parent.as_deref() else {
        return Ok(0);
    };
    let prefix = keys::children_prefix(parent);
    Ok(ctx
        .scan(
            &prefix,
            &keys::child(parent, obj.pos),
            Direction::Forward,
            usize::MAX,
        )?
        .len())
}

/// The path a child called `id` has inside `parent`.
pub fn child_path(parent: &ContentRecord, id: &str) -> String {
    format!("{}/{}", parent.path, id)
}

/// Whether `parent` already has a child called `id`.
pub fn has_child(ctx: &Ctx<'_>, parent: &ContentRecord, id: &str) -> Result<bool> {
    Ok(ctx.get(&keys::path(&child_path(parent, id)))?.is_some())
}

/// Whether a new child of `parent` may be given `id` (no child has it; with parallel writes,
/// no other write is giving it: [`Ctx::id_free`]). An id found free is held for this request:
/// give it.
pub fn id_free(ctx: &Ctx<'_>, parent: &ContentRecord, id: &str) -> Result<bool> {
    ctx.id_free(&keys::path(&child_path(parent, id)))
}

/// Store a new object as the last child of `parent` (whose counters are updated and saved),
/// with no change note: [`add`].
#[cfg(any(test, feature = "internals"))]
pub fn insert(
    ctx: &mut Ctx<'_>,
    parent: &mut ContentRecord,
    rec: &mut ContentRecord,
) -> Result<()> {
    add(ctx, parent, rec, None)
}

/// A new object of type `ty`, not yet stored: a fresh uid, created and modified now, the initial
/// state of its workflow, and `owner` holding the `Owner` role on it. [`add`] stores it.
pub fn new_record(
    ctx: &Ctx<'_>,
    ty: &crate::core::model::ContentType,
    id: &str,
    owner: &str,
    fields: serde_json::Map<String, serde_json::Value>,
) -> ContentRecord {
    let now = ctx.now();
    ContentRecord {
        uid: ctx.new_uid(),
        id: id.to_string(),
        path: String::new(),
        parent: None,
        type_name: ty.name.clone(),
        pos: 0,
        created: now,
        modified: now,
        owner: owner.to_string(),
        review_state: ty
            .workflow
            .as_deref()
            .and_then(|w| ctx.core.workflows.get(w))
            .map(|w| w.initial_state.clone()),
        child_count: 0,
        next_pos: 0,
        local_roles: [(owner.to_string(), vec!["Owner".to_string()])].into(),
        block_local_roles: false,
        fields,
        rev: 0,
    }
}

/// Store a new object as the last child of `parent` (whose counters are updated and saved) and
/// announce it with an [`Event::Added`] event, which the subscribers (history, workflow, ...)
/// handle. Fills in the record's `path`, `parent` and `pos`.
pub fn add(
    ctx: &mut Ctx<'_>,
    parent: &mut ContentRecord,
    rec: &mut ContentRecord,
    change_note: Option<String>,
) -> Result<()> {
    rec.path = child_path(parent, &rec.id);
    rec.parent = Some(parent.uid.clone());
    rec.pos = ctx.core.child_position(&parent.uid, parent.next_pos);
    parent.next_pos = rec.pos + 1;
    parent.child_count += 1;
    let child = keys::child(&parent.uid, rec.pos);
    if ctx.core.options.parallel_writes {
        // Read, so that a position taken meanwhile by another commit makes this one run
        // again (the engine's positions handed out are only a hint: `Core::child_position`).
        ctx.get(&child)?;
    }
    ctx.put(&child, rec.uid.as_bytes())?;
    ctx.put(&keys::path(&rec.path), rec.uid.as_bytes())?;
    write(ctx, rec)?;
    parent.rev += 1;
    ctx.put_folder_counters(parent)?;
    ctx.remember_saved(parent);
    ctx.emit(Event::Added {
        uid: rec.uid.clone(),
        path: rec.path.clone(),
        type_name: rec.type_name.clone(),
        parent: Some(parent.uid.clone()),
        change_note,
    });
    Ok(())
}

/// Store the root object of a new site ([`Event::Added`] with no parent).
pub fn insert_root(ctx: &mut Ctx<'_>, rec: &mut ContentRecord) -> Result<()> {
    ctx.put(&keys::path(""), rec.uid.as_bytes())?;
    write(ctx, rec)?;
    ctx.emit(Event::Added {
        uid: rec.uid.clone(),
        path: rec.path.clone(),
        type_name: rec.type_name.clone(),
        parent: None,
        change_note: None,
    });
    Ok(())
}

/// What a [`save`] of an existing object changes, and so which event announces it.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Fields were written (an edit, a revert, a language change): [`Event::Modified`], from
    /// which versioning records a version of the written fields.
    Edit {
        /// Names of the fields written.
        fields: Vec<String>,
        /// The change note sent with the edit, if any.
        change_note: Option<String>,
    },
    /// A workflow transition changed the state (and maybe the dates):
    /// [`Event::Transitioned`]. The workflow service ([`crate::content::workflow::take`]) decides it and
    /// keeps the history.
    Transition {
        /// The transition id.
        transition: String,
        /// The state before.
        from: String,
        /// The state after.
        to: String,
    },
    /// The local roles, or the flag that blocks inheriting them, changed (sharing):
    /// [`Event::LocalRolesChanged`].
    LocalRoles,
}

/// Write `rec` back as its next revision and announce the change.
pub fn save(ctx: &mut Ctx<'_>, rec: &mut ContentRecord, change: Change) -> Result<()> {
    write(ctx, rec)?;
    let (uid, path) = (rec.uid.clone(), rec.path.clone());
    ctx.emit(match change {
        Change::Edit {
            fields,
            change_note,
        } => Event::Modified {
            uid,
            path,
            fields,
            change_note,
        },
        Change::Transition {
            transition,
            from,
            to,
        } => Event::Transitioned {
            uid,
            path,
            transition,
            from,
            to,
        },
        Change::LocalRoles => Event::LocalRolesChanged { uid, path },
    });
    Ok(())
}

/// Write `rec` back as its next revision (`rev` goes up by one), announcing nothing: the caller
/// in this module emits the event that covers it.
fn write(ctx: &mut Ctx<'_>, rec: &mut ContentRecord) -> Result<()> {
    rec.rev += 1;
    ctx.put_json(&keys::object(&rec.uid), &*rec)?;
    ctx.remember_saved(rec);
    Ok(())
}

/// Remove `obj` and everything below it: `members` is its subtree as [`subtree`] lists it (callers
/// inspect it first, e.g. for locks); `obj` is unlinked from its parent. Emits [`Event::Removed`]
/// for every member, `obj` first.
pub fn remove_members(
    ctx: &mut Ctx<'_>,
    obj: &ContentRecord,
    members: &[ContentRecord],
) -> Result<()> {
    unlink_members(ctx, obj, members)?;
    for rec in members {
        ctx.emit(Event::Removed {
            uid: rec.uid.clone(),
            path: rec.path.clone(),
            type_name: rec.type_name.clone(),
            parent: rec.parent.clone(),
        });
    }
    Ok(())
}

/// Delete the records, paths and child entries of `members` (the subtree of `obj`) and unlink
/// `obj` from its parent; announcing it is the caller's part.
fn unlink_members(ctx: &mut Ctx<'_>, obj: &ContentRecord, members: &[ContentRecord]) -> Result<()> {
    for rec in members {
        ctx.delete_prefix(&keys::children_prefix(&rec.uid))?;
        ctx.delete(&keys::path(&rec.path))?;
        ctx.delete(&keys::object(&rec.uid))?;
    }
    if let Some(mut parent) = parent(ctx, obj)? {
        ctx.delete(&keys::child(&parent.uid, obj.pos))?;
        parent.child_count = parent.child_count.saturating_sub(1);
        write(ctx, &mut parent)?;
    }
    Ok(())
}

/// Take `obj` and everything below it out of the tree into the recycle bin: like
/// [`remove_members`] (the records, paths and child entries go; `obj` is unlinked from its
/// parent), but announced with [`Event::Binned`], so the subscribers keep the objects' history,
/// comments and counters; the caller ([`crate::content::recyclebin`]) keeps the records.
pub fn bin_members(
    ctx: &mut Ctx<'_>,
    obj: &ContentRecord,
    members: &[ContentRecord],
) -> Result<()> {
    unlink_members(ctx, obj, members)?;
    for rec in members {
        ctx.emit(Event::Binned {
            uid: rec.uid.clone(),
            path: rec.path.clone(),
            type_name: rec.type_name.clone(),
            parent: rec.parent.clone(),
        });
    }
    Ok(())
}

/// Put a binned subtree back into the tree: `members` are its records as [`bin_members`] took
/// them (the top first, pre-order), the top becomes the last child of `new_parent` under its id
/// (the caller checks that it is free), and every path is rewritten below the new place.
/// `linked_from` names, per uid, the objects that linked to it when it was binned. Announced with
/// [`Event::Restored`] for every member, the top first; returns the records as stored.
pub fn restore_members(
    ctx: &mut Ctx<'_>,
    new_parent: &mut ContentRecord,
    members: Vec<ContentRecord>,
    linked_from: &std::collections::BTreeMap<String, Vec<String>>,
) -> Result<Vec<ContentRecord>> {
    let Some(top) = members.first() else {
        return Ok(Vec::new());
    };
    let old_prefix = top.path.clone();
    let new_prefix = child_path(new_parent, &top.id);
    let top_uid = top.uid.clone();
    let mut out = Vec::with_capacity(members.len());
    for mut rec in members {
        rec.path = format!(
            "{new_prefix}{}",
            &rec.path[old_prefix.len().min(rec.path.len())..]
        );
        if rec.uid == top_uid {
            rec.parent = Some(new_parent.uid.clone());
            rec.pos = new_parent.next_pos;
            new_parent.next_pos += 1;
            new_parent.child_count += 1;
            ctx.put(&keys::child(&new_parent.uid, rec.pos), rec.uid.as_bytes())?;
            write(ctx, new_parent)?;
        } else if let Some(p) = &rec.parent {
            ctx.put(&keys::child(p, rec.pos), rec.uid.as_bytes())?;
        }
        ctx.put(&keys::path(&rec.path), rec.uid.as_bytes())?;
        write(ctx, &mut rec)?;
        out.push(rec);
    }
    for rec in &out {
        ctx.emit(Event::Restored {
            uid: rec.uid.clone(),
            path: rec.path.clone(),
            type_name: rec.type_name.clone(),
            parent: rec.parent.clone(),
            linked_from: linked_from.get(&rec.uid).cloned().unwrap_or_default(),
        });
    }
    Ok(out)
}

/// Rewrite the order of `parent`'s children to `order` (uids, a permutation of the current
/// children); emits [`Event::OrderChanged`] naming the children whose position changed.
pub fn set_order(ctx: &mut Ctx<'_>, parent: &mut ContentRecord, order: &[String]) -> Result<()> {
    let prefix = keys::children_prefix(&parent.uid);
    let old = ctx.scan(
        &prefix,
        &prefix_end(&prefix),
        Direction::Forward,
        usize::MAX,
    )?;
    if old.len() != order.len() {
        return Err(EngineError::Internal(
            "new order is not a permutation of the children".into(),
        ));
    }
    for (k, _) in &old {
        ctx.delete(k)?;
    }
    let mut moved = Vec::new();
    for (pos, uid) in order.iter().enumerate() {
        let pos = pos as u64;
        let mut rec = load(ctx, uid)?.ok_or_else(|| {
            EngineError::Internal(format!("child {uid} missing while reordering"))
        })?;
        ctx.put(&keys::child(&parent.uid, pos), uid.as_bytes())?;
        if rec.pos != pos {
            // A child's place is its parent's list, not its own content: its revision (its
            // ETag) stays, so an edit based on it (an offline edit replayed after a reorder of
            // its folder) is not refused. The parent's revision goes up below.
            rec.pos = pos;
            ctx.put_json(&keys::object(&rec.uid), &rec)?;
            ctx.remember_saved(&rec);
            moved.push(rec.uid);
        }
    }
    parent.next_pos = order.len() as u64;
    write(ctx, parent)?;
    ctx.emit(Event::OrderChanged {
        uid: parent.uid.clone(),
        path: parent.path.clone(),
        children: moved,
    });
    Ok(())
}

/// Every object of the subtree rooted at `obj`, `obj` first (pre-order).
pub fn subtree(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Vec<ContentRecord>> {
    let mut out = Vec::new();
    let mut stack = vec![obj.clone()];
    while let Some(rec) = stack.pop() {
        if rec.child_count > 0 {
            let kids = children(ctx, &rec.uid, 0, usize::MAX)?;
            stack.extend(kids.into_iter().rev());
        }
        out.push(rec);
    }
    Ok(out)
}

/// Uids of the object at `path` and of every object below it, in path order (bytewise, as
/// `sort_on=path` orders them): one read and one range scan of the path index.
pub fn subtree_uids(ctx: &Ctx<'_>, path: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    if let Some(uid) = uid_at(ctx, path)? {
        out.push(uid);
    }
    let prefix = keys::path(&format!("{path}/"));
    for (_, v) in ctx.scan(
        &prefix,
        &prefix_end(&prefix),
        Direction::Forward,
        usize::MAX,
    )? {
        out.push(String::from_utf8_lossy(&v).into_owned());
    }
    Ok(out)
}

/// Whether `candidate` is `obj` itself or lies below it.
pub fn is_within(candidate: &ContentRecord, obj: &ContentRecord) -> bool {
    candidate.uid == obj.uid
        || (obj.path.is_empty() && !candidate.path.is_empty())
        || candidate.path.starts_with(&format!("{}/", obj.path))
}

/// One object's change of path in a move or rename.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relocation {
    /// The object's uid.
    pub uid: String,
    /// Its path before.
    pub old_path: String,
    /// Its path after.
    pub new_path: String,
}

/// Move `obj` (and its subtree) into `new_parent` under `new_id`, keeping uids, fields and history.
/// A rename within the same parent keeps the object's position; a move appends it to the new
/// parent. Returns every path change, `obj` first, each also announced as an [`Event::Moved`].
/// The caller checks ids and permissions.
pub fn relocate(
    ctx: &mut Ctx<'_>,
    obj: &ContentRecord,
    new_parent_uid: &str,
    new_id: &str,
) -> Result<Vec<Relocation>> {
    let old_parent_uid = obj
        .parent
        .clone()
        .ok_or_else(|| EngineError::Internal("the site root cannot be relocated".into()))?;
    let members = subtree(ctx, obj)?;
    let mut top = obj.clone();
    if old_parent_uid != new_parent_uid {
        let mut old_parent = load(ctx, &old_parent_uid)?
            .ok_or_else(|| EngineError::Internal("old parent missing".into()))?;
        ctx.delete(&keys::child(&old_parent.uid, obj.pos))?;
        old_parent.child_count = old_parent.child_count.saturating_sub(1);
        write(ctx, &mut old_parent)?;
        let mut new_parent = load(ctx, new_parent_uid)?
            .ok_or_else(|| EngineError::Internal("new parent missing".into()))?;
        top.pos = new_parent.next_pos;
        new_parent.next_pos += 1;
        new_parent.child_count += 1;
        ctx.put(&keys::child(&new_parent.uid, top.pos), top.uid.as_bytes())?;
        write(ctx, &mut new_parent)?;
        top.parent = Some(new_parent.uid.clone());
        top.path = child_path(&new_parent, new_id);
    } else {
        let parent_path = obj.parent_path().unwrap_or("").to_string();
        top.path = format!("{parent_path}/{new_id}");
    }
    top.id = new_id.to_string();
    let old_prefix = obj.path.clone();
    let new_prefix = top.path.clone();
    let mut moves = Vec::with_capacity(members.len());
    for mut rec in members {
        let old_path = rec.path.clone();
        let old_parent = rec.parent.clone();
        if rec.uid == top.uid {
            rec = top.clone();
        } else {
            rec.path = format!("{new_prefix}{}", &old_path[old_prefix.len()..]);
        }
        ctx.delete(&keys::path(&old_path))?;
        moves.push(Relocation {
            uid: rec.uid.clone(),
            old_path: old_path.clone(),
            new_path: rec.path.clone(),
        });
        write(ctx, &mut rec)?;
        ctx.emit(Event::Moved {
            uid: rec.uid.clone(),
            old_path,
            new_path: rec.path.clone(),
            old_parent,
            new_parent: rec.parent.clone(),
        });
    }
    for m in &moves {
        ctx.put(&keys::path(&m.new_path), m.uid.as_bytes())?;
    }
    Ok(moves)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Engine, EngineOptions, MemStore, SiteSetup};

    #[test]
    fn records_saved_in_a_request_read_back_as_stored() {
        let engine = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
        engine.create_site(&SiteSetup::new("secret")).unwrap();
        engine
            .with_write(|ctx| {
                let mut root = root(ctx)?;
                let ty = ctx.types()?.require("Page")?;
                let mut rec = new_record(ctx, &ty, "p", "admin", Default::default());
                insert(ctx, &mut root, &mut rec)?;
                // Read back from the request's memory, and equal to what the store holds.
                assert_eq!(ctx.saved_record(&rec.uid), Some(&rec));
                let stored: Option<ContentRecord> = ctx.get_json(&keys::object(&rec.uid))?;
                assert_eq!(stored.as_ref(), Some(&rec));
                assert_eq!(load(ctx, &rec.uid)?, Some(rec.clone()));
                // A raw write replaces it; a delete removes it.
                let mut other = rec.clone();
                other.id = "q".into();
                ctx.put_json(&keys::object(&rec.uid), &other)?;
                assert_eq!(ctx.saved_record(&rec.uid), None);
                assert_eq!(load(ctx, &rec.uid)?, Some(other));
                write(ctx, &mut rec)?;
                ctx.delete(&keys::object(&rec.uid))?;
                assert_eq!(load(ctx, &rec.uid)?, None);
                Ok(())
            })
            .unwrap();
    }
}
