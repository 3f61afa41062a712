//! `@controlpanels`: site settings panels: `language` (the site's languages and default language,
//! as the reference's language control panel) and `navigation` (what the top navigation shows
//! besides content):
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `/@controlpanels` | | 200, `[{@id, group, title}]` |
//! | GET | `/@controlpanels/language` | | 200, `{@id, group, title, data: {available_languages: [{token, title}], default_language: {token, title}}}` |
//! | PATCH | `/@controlpanels/language` | `{available_languages?: [code], default_language?: code}` | 204 |
//! | GET | `/@controlpanels/navigation` | | 200, `{@id, group, title, data: {show_home, nonfolderish_tabs, displayed_types, extra_items: [{title, url, description}]}}` |
//! | PATCH | `/@controlpanels/navigation` | any of the `data` properties | 204 |
//!
//! Only on the site root; the Manage portal permission is required. With the `multilingual-content`
//! profile installed, adding a language creates its root folder.

use serde_json::{json, Value};

use super::{json_body, Route};
use crate::context::Ctx;
use crate::error::{EngineError, Result};
use crate::http::{Request, Response};
use crate::model::{language, ContentRecord};
use crate::permissions::Access;
use crate::security::Permission;
use crate::{multilingual, navigation};

const PANELS: &[(&str, &str, &str)] = &[
    ("language", "Language", "General"),
    ("navigation", "Navigation", "General"),
];

fn check(ctx: &Ctx<'_>, route: &Route, obj: &ContentRecord) -> Result<Option<&'static str>> {
    let not_found = || EngineError::NotFound {
        url: route.url(&ctx.base_url),
        context: Some(ctx.url(&obj.path)),
    };
    if !obj.is_root() || route.params.len() > 1 {
        return Err(not_found());
    }
    ctx.require(Permission::ManagePortal, obj)?;
    match route.params.first() {
        None => Ok(None),
        Some(name) => PANELS
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(n, _, _)| Some(*n))
            .ok_or_else(not_found),
    }
}

fn language_panel(ctx: &Ctx<'_>) -> Result<Value> {
    let s = multilingual::settings(ctx)?;
    let available: Vec<Value> = s
        .available_languages
        .iter()
        .map(|c| language::token_title(c))
        .collect();
    Ok(json!({
        "@id": format!("{}/@controlpanels/language", ctx.base_url),
        "group": "General",
        "title": "Language",
        "data": {
            "available_languages": available,
            "default_language": language::token_title(&s.default_language),
        },
    }))
}

fn navigation_panel(ctx: &Ctx<'_>) -> Result<Value> {
    let s = navigation::settings(ctx)?;
    Ok(json!({
        "@id": format!("{}/@controlpanels/navigation", ctx.base_url),
        "group": "General",
        "title": "Navigation",
        "data": serde_json::to_value(&s)?,
    }))
}

/// PATCH of the navigation panel: the given properties replace the stored ones.
fn patch_navigation(ctx: &mut Ctx<'_>, body: serde_json::Map<String, Value>) -> Result<()> {
    let mut merged = serde_json::to_value(navigation::settings(ctx)?)?;
    for (key, value) in body {
        if merged.get(&key).is_none() {
            return Err(EngineError::bad_request(format!(
                "Unknown setting '{key}' of the navigation control panel (known: show_home, \
                 nonfolderish_tabs, displayed_types, extra_items)"
            )));
        }
        merged[key] = value;
    }
    let settings: navigation::NavigationSettings = serde_json::from_value(merged)
        .map_err(|e| EngineError::bad_request(format!("Invalid navigation settings: {e}")))?;
    settings.validate(ctx)?;
    navigation::save_settings(ctx, &settings)
}

/// GET `/@controlpanels` and `/@controlpanels/<name>`.
pub fn get(ctx: &mut Ctx<'_>, _: &Request, route: &Route, obj: ContentRecord) -> Result<Response> {
    match check(ctx, route, &obj)? {
        None => {
            let list: Vec<Value> = PANELS
                .iter()
                .map(|(name, title, group)| {
                    json!({
                        "@id": format!("{}/@controlpanels/{name}", ctx.base_url),
                        "group": group,
                        "title": title,
                    })
                })
                .collect();
            Ok(Response::json(200, &list))
        }
        Some("navigation") => Ok(Response::json(200, &navigation_panel(ctx)?)),
        Some(_) => Ok(Response::json(200, &language_panel(ctx)?)),
    }
}

/// PATCH `/@controlpanels/<name>`: change a panel's settings; 204.
pub fn patch(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    obj: ContentRecord,
) -> Result<Response> {
    let body = json_body(req)?;
    match check(ctx, route, &obj)? {
        None => {
            return Err(EngineError::MethodNotAllowed {
                method: "PATCH".into(),
                allowed: vec!["GET"],
            })
        }
        Some("navigation") => {
            patch_navigation(ctx, body)?;
            return Ok(Response::empty(204));
        }
        Some(_) => {}
    }
    for key in body.keys() {
        if key != "available_languages" && key != "default_language" {
            return Err(EngineError::bad_request(format!(
                "Unknown setting '{key}' of the language control panel (known: \
                 available_languages, default_language)"
            )));
        }
    }
    let current = multilingual::settings(ctx)?;
    let available = match body.get("available_languages") {
        None => current.available_languages.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| multilingual::parse_code(v, "available_languages"))
            .collect::<Result<Vec<String>>>()?,
        Some(_) => {
            return Err(EngineError::bad_request(
                "'available_languages' must be an array of language codes",
            ))
        }
    };
    let default = match body.get("default_language") {
        None | Some(Value::Null) => None,
        Some(v) => Some(multilingual::parse_code(v, "default_language")?),
    };
    multilingual::set_languages(ctx, &available, default.as_deref())?;
    Ok(Response::empty(204))
}
