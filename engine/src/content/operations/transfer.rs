//! Moving and copying objects with their subtrees: the [`Transfer`] command that `@move`,
//! `@copy` and the content rules' move and copy actions run. Copies get fresh UIDs for the whole
//! subtree, a fresh history and the initial workflow state, and announce [`Event::Copied`] for
//! the top copy; moves keep UIDs, history and state and leave automatic aliases at the old paths
//! ([`super::relocate`]). Both take a free id in the destination from the one allocator
//! ([`super::allocate_id`], [`IdScheme::CopyOf`]).

use std::collections::HashMap;

use super::{allocate_id, relocate, IdScheme, Locks, Place};
use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// What a [`transfer`] does with its object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transfer {
    /// Move it (with its subtree): same UIDs, history and state; aliases at the old paths.
    Move,
    /// Copy it (with its subtree): fresh UIDs, history and workflow state.
    Copy,
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

/// Refuse a caller's transfer of `obj` (named `label` in messages) into `dest`: the
/// destination's rules; for a move, not into itself or a descendant and the caller needs
/// Delete on `obj`; for a copy, the caller must see `obj`. The lock and the request's
/// `If-Match` are checked by [`check_lock`] and the caller.
pub fn check_transfer(
    ctx: &Ctx<'_>,
    what: Transfer,
    dest: &ContentRecord,
    obj: &ContentRecord,
    label: &str,
) -> Result<()> {
    check_destination(ctx, dest, obj)?;
    match what {
        Transfer::Move => {
            if tree::is_within(dest, obj) {
                return Err(EngineError::bad_request(format!(
                    "Cannot move '{label}' into itself or one of its descendants"
                )));
            }
            ctx.require(Permission::Delete, obj)
        }
        Transfer::Copy => ctx.require(Permission::View, obj),
    }
}

/// Fail with 403 "Resource is locked." when `obj`'s lock refuses moving it (a copy leaves the
/// source alone, so it never is).
pub fn check_lock(
    ctx: &mut Ctx<'_>,
    what: Transfer,
    obj: &ContentRecord,
    locks: &Locks,
) -> Result<()> {
    match what {
        Transfer::Move => locks.check(ctx, obj),
        Transfer::Copy => Ok(()),
    }
}

/// Move or copy `obj` (with its subtree) into `dest` under a free id; the path it has there
/// (a move into its own parent changes nothing and answers its path). Callers acting for a
/// client run [`check_transfer`] and [`check_lock`] first.
pub fn transfer(
    ctx: &mut Ctx<'_>,
    what: Transfer,
    obj: &ContentRecord,
    dest: &ContentRecord,
) -> Result<String> {
    match what {
        Transfer::Move => move_into(ctx, obj, dest),
        Transfer::Copy => copy_into(ctx, obj, dest),
    }
}

fn move_into(ctx: &mut Ctx<'_>, obj: &ContentRecord, dest: &ContentRecord) -> Result<String> {
    if obj.parent.as_deref() == Some(dest.uid.as_str()) {
        return Ok(obj.path.clone()); // already there
    }
    let id = allocate_id(ctx, dest, &obj.id, IdScheme::CopyOf)?;
    let moves = relocate(ctx, obj, &dest.uid, &id)?;
    Ok(moves
        .first()
        .map(|m| m.new_path.clone())
        .unwrap_or_default())
}

fn copy_into(ctx: &mut Ctx<'_>, obj: &ContentRecord, dest: &ContentRecord) -> Result<String> {
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
            allocate_id(ctx, &parent, &old.id, IdScheme::CopyOf)?
        } else {
            old.id.clone()
        };
        let place = Place {
            type_name: ty.name.clone(),
            id,
            owner: login.clone(),
            fields: old.fields.clone(),
            review_state: None, // the initial state
        };
        let rec = super::place(ctx, &mut parent, place)?;
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
