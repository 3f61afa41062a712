//! The site's actions (what Volto's toolbar and menus offer: Edit, Contents, Cut, Log out, ...):
//! stored as data in the configuration registry record `plone.actions` ([`crate::site::configuration`]),
//! by category, each with the permission it needs on the context object and whether it is for
//! anonymous or logged-in callers only. [`available`] filters them for the caller.

use crate::core::error::{EngineError, Result};
use crate::core::model::actions::{Action, Actions, AvailableTo, CATEGORIES};
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;
use crate::site::configuration;

/// The stored actions.
pub fn stored(ctx: &Ctx<'_>) -> Result<Actions> {
    let v = configuration::get(ctx, configuration::ACTIONS)?;
    serde_json::from_value(v)
        .map_err(|e| EngineError::Internal(format!("stored actions do not decode: {e}")))
}

/// The actions of `categories` (all when empty) the caller may use on `obj`, by category in
/// [`CATEGORIES`] order; every asked category is present, maybe empty.
pub fn available(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    categories: &[String],
) -> Result<Vec<(&'static str, Vec<Action>)>> {
    let all = stored(ctx)?;
    let anonymous = ctx.principal.is_anonymous();
    let mut granted: Vec<(Permission, bool)> = Vec::new();
    let mut out = Vec::new();
    for cat in CATEGORIES {
        if !categories.is_empty() && !categories.iter().any(|c| c == cat) {
            continue;
        }
        let mut list = Vec::new();
        for a in all.get(*cat).into_iter().flatten() {
            let for_caller = match a.available_to {
                AvailableTo::Anyone => true,
                AvailableTo::Anonymous => anonymous,
                AvailableTo::Authenticated => !anonymous,
            };
            if !for_caller {
                continue;
            }
            if let Some(p) = a.permission.as_deref().and_then(Permission::from_name) {
                let ok = match granted.iter().find(|(q, _)| *q == p) {
                    Some((_, ok)) => *ok,
                    None => {
                        let ok = ctx.permitted(p, obj)?;
                        granted.push((p, ok));
                        ok
                    }
                };
                if !ok {
                    continue;
                }
            }
            list.push(a.clone());
        }
        out.push((*cat, list));
    }
    Ok(out)
}
