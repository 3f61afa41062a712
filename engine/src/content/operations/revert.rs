//! Reverting an object to one of its versions: the [`Revert`] command `@history` runs.

use super::Locks;
use crate::content::tree;
use crate::core::error::Result;
use crate::core::model::ContentRecord;
use crate::runtime::context::Ctx;

/// Restore an object's fields as they were at one of its versions; the revert is recorded as a
/// new version.
#[derive(Debug, Clone)]
pub struct Revert {
    /// The version to go back to.
    pub version: u32,
    /// Whose lock is honoured.
    pub locks: Locks,
}

/// What [`revert`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reverted {
    /// The object has that version's fields (saved, with a change note naming it).
    Done,
    /// The object has no such version; nothing changed.
    NoSuchVersion,
}

/// Apply `cmd` to `obj` (which is updated and saved): every stored field of its type takes its
/// value at the version (its default where the version had none). When nothing differs, the
/// full state is still recorded as a version.
pub fn revert(ctx: &mut Ctx<'_>, obj: &mut ContentRecord, cmd: &Revert) -> Result<Reverted> {
    let version = cmd.version;
    let Some(fields) = crate::content::versioning::fields_at(ctx, &obj.uid, version)? else {
        return Ok(Reverted::NoSuchVersion);
    };
    cmd.locks.check(ctx, obj)?;
    let ty = ctx.type_of(obj)?;
    let mut changed = Vec::new();
    for def in &ty.fields {
        if def.transient {
            continue;
        }
        let target = fields
            .get(&def.name)
            .cloned()
            .unwrap_or_else(|| def.default_value());
        let current = obj
            .fields
            .get(&def.name)
            .cloned()
            .unwrap_or_else(|| def.default_value());
        if target != current
            || (fields.contains_key(&def.name) != obj.fields.contains_key(&def.name))
        {
            obj.fields.insert(def.name.clone(), target);
            changed.push(def.name.clone());
        }
    }
    if changed.is_empty() {
        // Nothing differs; still record the revert as a version of the full state.
        changed = obj.fields.keys().cloned().collect();
    }
    obj.modified = ctx.now();
    tree::save(
        ctx,
        obj,
        tree::Change::Edit {
            fields: changed,
            change_note: Some(format!("Reverted to revision {version}")),
        },
    )?;
    Ok(Reverted::Done)
}
