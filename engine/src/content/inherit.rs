//! Inheriting behavior data from ancestors (`@inherit`): for each behavior asked for, the closest
//! object on the chain from the context up to the site root (the context itself first) whose type
//! has that behavior and which the caller may view, and the values of that behavior's fields
//! there.
//!
//! Which types have which behaviors, and which fields a behavior brings, is read from the stored
//! type registry ([`Ctx::types`]).

use serde_json::{Map, Value};

use crate::content::tree;
use crate::core::error::Result;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// Every behavior name, sorted.
pub fn behavior_names(ctx: &Ctx<'_>) -> Result<Vec<String>> {
    let mut names: Vec<String> = ctx.types()?.behaviors().map(|b| b.name.clone()).collect();
    names.sort();
    Ok(names)
}

/// Whether `name` is a behavior.
pub fn is_behavior(ctx: &Ctx<'_>, name: &str) -> Result<bool> {
    Ok(ctx.types()?.behavior(name).is_some())
}

fn fields_of(ctx: &Ctx<'_>, behavior: &str) -> Result<Vec<String>> {
    Ok(ctx
        .types()?
        .behavior(behavior)
        .map(|b| b.fields.iter().map(|f| f.name.clone()).collect())
        .unwrap_or_default())
}

/// Where a behavior's data was found.
#[derive(Debug, Clone)]
pub struct Inherited {
    /// The object that has it.
    pub from: ContentRecord,
    /// Its fields' values there (a field never set reads as its type's default).
    pub data: Map<String, Value>,
}

/// For each of `behaviors` (known ones; see [`is_behavior`]), the closest viewable object from
/// `obj` up to the root that has it; `None` where no object on the chain does.
pub fn inherit(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    behaviors: &[String],
) -> Result<Vec<(String, Option<Inherited>)>> {
    let mut chain = tree::ancestors(ctx, obj)?;
    chain.push(obj.clone());
    let mut out = Vec::new();
    for b in behaviors {
        let mut found = None;
        for candidate in chain.iter().rev() {
            let ty = ctx.type_of(candidate)?;
            if ty.has_behavior(b) && ctx.permitted(Permission::View, candidate)? {
                let data = fields_of(ctx, b)?
                    .into_iter()
                    .filter_map(|f| {
                        let v = match candidate.fields.get(&f) {
                            Some(v) => v.clone(),
                            None => ty.field(&f)?.default_value(),
                        };
                        Some((f, v))
                    })
                    .collect();
                found = Some(Inherited {
                    from: candidate.clone(),
                    data,
                });
                break;
            }
        }
        out.push((b.clone(), found));
    }
    Ok(out)
}
