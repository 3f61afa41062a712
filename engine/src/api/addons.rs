//! `@addons`: the installable profiles of the site (see [`crate::multilingual::PROFILES`]):
//!
//! | method | path | answer |
//! |---|---|---|
//! | GET | `/@addons` | 200, `{@id, items: [addon], items_total}` |
//! | GET | `/@addons/<id>` | 200, addon `{@id, id, title, description, is_installed}` |
//! | POST | `/@addons/<id>/install` | 204 (installing an installed profile changes nothing) |
//! | POST | `/@addons/<id>/uninstall` | 204 |
//!
//! Only on the site root; the Manage portal permission is required.

use serde_json::{json, Value};

use super::Route;
use crate::context::Ctx;
use crate::error::{EngineError, Result};
use crate::http::{Request, Response};
use crate::model::ContentRecord;
use crate::multilingual::{self, LanguageSettings, PROFILES};
use crate::permissions::Access;
use crate::security::Permission;

fn not_found(ctx: &Ctx<'_>, route: &Route) -> EngineError {
    EngineError::NotFound {
        url: route.url(&ctx.base_url),
        context: Some(ctx.base_url.clone()),
    }
}

fn addon_json(
    ctx: &Ctx<'_>,
    s: &LanguageSettings,
    id: &str,
    title: &str,
    description: &str,
) -> Value {
    json!({
        "@id": format!("{}/@addons/{id}", ctx.base_url),
        "id": id,
        "title": title,
        "description": description,
        "is_installed": s.has_profile(id),
    })
}

fn check(ctx: &Ctx<'_>, route: &Route, obj: &ContentRecord) -> Result<()> {
    if !obj.is_root() {
        return Err(not_found(ctx, route));
    }
    ctx.require(Permission::ManagePortal, obj)
}

/// GET `/@addons` and `/@addons/<id>`.
pub fn get(ctx: &mut Ctx<'_>, _: &Request, route: &Route, obj: ContentRecord) -> Result<Response> {
    check(ctx, route, &obj)?;
    let s = multilingual::settings(ctx)?;
    match route.params.as_slice() {
        [] => {
            let items: Vec<Value> = PROFILES
                .iter()
                .map(|(id, t, d)| addon_json(ctx, &s, id, t, d))
                .collect();
            Ok(Response::json(
                200,
                &json!({
                    "@id": format!("{}/@addons", ctx.base_url),
                    "items_total": items.len(),
                    "items": items,
                }),
            ))
        }
        [name] => PROFILES
            .iter()
            .find(|(id, _, _)| id == name)
            .map(|(id, t, d)| Response::json(200, &addon_json(ctx, &s, id, t, d)))
            .ok_or_else(|| not_found(ctx, route)),
        _ => Err(not_found(ctx, route)),
    }
}

/// POST `/@addons/<id>/install` and `/@addons/<id>/uninstall`; 204.
pub fn post(ctx: &mut Ctx<'_>, _: &Request, route: &Route, obj: ContentRecord) -> Result<Response> {
    check(ctx, route, &obj)?;
    let [name, action] = route.params.as_slice() else {
        return Err(not_found(ctx, route));
    };
    if !multilingual::is_profile(name) {
        return Err(not_found(ctx, route));
    }
    match action.as_str() {
        "install" => multilingual::install(ctx, name)?,
        "uninstall" => multilingual::uninstall(ctx, name)?,
        _ => return Err(not_found(ctx, route)),
    };
    Ok(Response::empty(204))
}
