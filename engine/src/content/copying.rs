//! Copying and moving objects with their subtrees (what `@copy`, `@move` and the content rules'
//! copy and move actions do). Copies get fresh UIDs for the whole subtree, a fresh history and the
//! initial workflow state, and announce [`Event::Copied`] for the top copy; moves keep UIDs,
//! history and state and leave automatic aliases at the old paths.

use std::collections::HashMap;

use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::model::{ids, ContentRecord};
use crate::runtime::context::Ctx;
use crate::{content::aliases, content::tree};

/// A free id for `id` in `parent`: `id` itself, else `copy_of_id`, `copy2_of_id`, ...
pub fn free_id(ctx: &Ctx<'_>, parent: &ContentRecord, id: &str) -> Result<String> {
    if !tree::has_child(ctx, parent, id)? {
        return Ok(id.to_string());
    }
    for n in 1.. {
        let candidate = if n == 1 {
            format!("copy_of_{id}")
        } else {
            format!("copy{n}_of_{id}")
        };
        if candidate.len() <= ids::MAX_ID_LEN && !tree::has_child(ctx, parent, &candidate)? {
            return Ok(candidate);
        }
        if candidate.len() > ids::MAX_ID_LEN {
            return Err(EngineError::bad_request(format!(
                "No free id for '{id}' in the destination"
            )));
        }
    }
    unreachable!("ids are unbounded")
}

/// Move `obj` (with its subtree) into `dest` under a free id; its new path (unchanged when it
/// is already there).
pub fn move_into(ctx: &mut Ctx<'_>, obj: &ContentRecord, dest: &ContentRecord) -> Result<String> {
    if obj.parent.as_deref() == Some(dest.uid.as_str()) {
        return Ok(obj.path.clone()); // already there
    }
    let id = free_id(ctx, dest, &obj.id)?;
    let moves = tree::relocate(ctx, obj, &dest.uid, &id)?;
    aliases::record_moves(ctx, &moves)?;
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
