//! Inheriting behavior data from ancestors (`@inherit`): for each behavior asked for, the closest
//! object on the chain from the context up to the site root (the context itself first) whose type
//! has that behavior and which the caller may view, and the values of that behavior's fields
//! there.
//!
//! Which types have which behaviors, and which fields a behavior brings, is read from the type
//! registry's data (`model/types.json`).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::context::Ctx;
use crate::error::Result;
use crate::model::ContentRecord;
use crate::permissions::Access;
use crate::security::Permission;
use crate::tree;

#[derive(Deserialize)]
struct FieldName {
    name: String,
}

#[derive(Deserialize)]
struct TypeBehaviors {
    name: String,
    #[serde(default)]
    behaviors: Vec<String>,
}

#[derive(Deserialize)]
struct Registry {
    behaviors: BTreeMap<String, Vec<FieldName>>,
    types: Vec<TypeBehaviors>,
}

fn registry() -> &'static Option<Registry> {
    static R: OnceLock<Option<Registry>> = OnceLock::new();
    R.get_or_init(|| serde_json::from_str(include_str!("model/types.json")).ok())
}

/// Every behavior name, sorted.
pub fn behavior_names() -> Vec<String> {
    registry()
        .as_ref()
        .map(|r| r.behaviors.keys().cloned().collect())
        .unwrap_or_default()
}

/// Whether `name` is a behavior.
pub fn is_behavior(name: &str) -> bool {
    registry()
        .as_ref()
        .is_some_and(|r| r.behaviors.contains_key(name))
}

fn has_behavior(type_name: &str, behavior: &str) -> bool {
    registry().as_ref().is_some_and(|r| {
        r.types
            .iter()
            .any(|t| t.name == type_name && t.behaviors.iter().any(|b| b == behavior))
    })
}

fn fields_of(behavior: &str) -> Vec<String> {
    registry()
        .as_ref()
        .and_then(|r| r.behaviors.get(behavior))
        .map(|f| f.iter().map(|f| f.name.clone()).collect())
        .unwrap_or_default()
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
            if has_behavior(&candidate.type_name, b)
                && ctx.permitted(Permission::View, candidate)?
            {
                let ty = ctx.type_of(candidate)?;
                let data = fields_of(b)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_registry_data_reads() {
        assert!(is_behavior("navigation"));
        assert!(has_behavior("Folder", "navigation"));
        assert!(fields_of("navigation").contains(&"exclude_from_nav".to_string()));
    }
}
