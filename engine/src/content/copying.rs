//! Copying and moving objects with their subtrees (what `@copy`, `@move` and the content rules'
//! copy and move actions do). Copies get fresh UIDs for the whole subtree, a fresh history and the
//! initial workflow state, and announce [`Event::Copied`] for the top copy; moves keep UIDs,
//! history and state and leave automatic aliases at the old paths.

use std::collections::HashMap;

use crate::content::operations::{self, IdScheme};
use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// A free id for `id` in `parent`: `id` itself, else `copy_of_id`, `copy2_of_id`, ... (the one
/// allocator, [`operations::allocate_id`]).
fn free_id(ctx: &Ctx<'_>, parent: &ContentRecord, id: &str) -> Result<String> {
    operations::allocate_id(ctx, parent, id, IdScheme::CopyOf)
}

/// Refuse placing `obj` inside `dest`: the destination must be folderish and allow its type.
fn check_destination(ctx: &Ctx<'_>, dest: &ContentRecord, obj: &ContentRecord) -> Result<()> {
    let dt = ctx.type_of(dest)?;
    if !dt.folderish {
        return Err(EngineError::bad_request(format!(
            "The destination '{}' is not folderish",
            ctx.url(&dest.path)
        )));
    }
    let ot = ctx.type_of(obj)?;
    if !dt.allows(&ot) {
        return Err(EngineError::bad_request(format!(
            "A {} may not be placed inside a {}",
            ot.title, dt.title
        )));
    }
    Ok(())
}

/// Refuse moving `obj` into `dest` (named `label` in the message): the destination's rules,
/// not into itself or a descendant, and the caller needs Delete on `obj`. The lock and the
/// request's `If-Match` are checked by the caller.
pub fn check_move(
    ctx: &Ctx<'_>,
    dest: &ContentRecord,
    obj: &ContentRecord,
    label: &str,
) -> Result<()> {
    check_destination(ctx, dest, obj)?;
    if tree::is_within(dest, obj) {
        return Err(EngineError::bad_request(format!(
            "Cannot move '{label}' into itself or one of its descendants"
        )));
    }
    ctx.require(Permission::Delete, obj)
}

/// Refuse copying `obj` into `dest`: the destination's rules, and the caller must see `obj`.
pub fn check_copy(ctx: &Ctx<'_>, dest: &ContentRecord, obj: &ContentRecord) -> Result<()> {
    check_destination(ctx, dest, obj)?;
    ctx.require(Permission::View, obj)
}

/// Move `obj` (with its subtree) into `dest` under a free id; its new path (unchanged when it
/// is already there).
pub fn move_into(ctx: &mut Ctx<'_>, obj: &ContentRecord, dest: &ContentRecord) -> Result<String> {
    if obj.parent.as_deref() == Some(dest.uid.as_str()) {
        return Ok(obj.path.clone()); // already there
    }
    let id = free_id(ctx, dest, &obj.id)?;
    let moves = operations::relocate(ctx, obj, &dest.uid, &id)?;
    Ok(moves
        .first()
        .map(|m| m.new_path.clone())
        .unwrap_or_default())
}

/// Copy `obj` (with its subtree) into `dest` under a free id; the copy's path.
pub fn copy_into(ctx: &mut Ctx<'_>, obj: &ContentRecord, dest: &ContentRecord) -> Result<String> {
    let members = tree::subtree(ctx, obj)?;
    let login = ctx.principal.login().unwrap_or("").to_string();
    // old uid → the new record standing in for it (kept current as children are added)
    let mut made: HashMap<String, ContentRecord> = HashMap::new();
    let mut top_path = String::new();
    for (i, old) in members.iter().enumerate() {
        let ty = ctx.type_of(old)?;
        let mut parent = if i == 0 {
            tree::load(ctx, &dest.uid)?
                .ok_or_else(|| EngineError::Internal("destination vanished".into()))?
        } else {
            let puid = old.parent.as_deref().unwrap_or("");
            made.get(puid)
                .cloned()
                .ok_or_else(|| EngineError::Internal("copied parent missing".into()))?
        };
        let id = if i == 0 {
            free_id(ctx, &parent, &old.id)?
        } else {
            old.id.clone()
        };
        let mut rec = tree::new_record(ctx, &ty, &id, &login, old.fields.clone());
        tree::add(ctx, &mut parent, &mut rec, None)?;
        if i == 0 {
            top_path = rec.path.clone();
        } else if let Some(p) = old.parent.as_deref() {
            made.insert(p.to_string(), parent);
        }

        if i == 0 {
            ctx.emit(Event::Copied {
                uid: rec.uid.clone(),
                path: rec.path.clone(),
                source: old.uid.clone(),
            });
        }
        made.insert(old.uid.clone(), rec);
    }
    Ok(top_path)
}
