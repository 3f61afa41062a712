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

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::{self, Call};
use super::router::{Registry, RouteDef};
use crate::context::Ctx;
use crate::error::{EngineError, Result};
use crate::http::Response;
use crate::model::{language, ContentRecord};
use crate::security::Permission;
use crate::{multilingual, navigation};

/// Register the control panel routes.
pub fn register(r: &mut Registry) {
    r.route(
        RouteDef::get("@controlpanels/{name?}", get)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary(
                "The control panels, or one panel with its settings (`language`, `navigation`)",
            )
            .answers::<Panel>(),
    );
    r.route(
        RouteDef::patch("@controlpanels/{name}", patch)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Change a panel's settings")
            .body::<serde_json::Map<String, Value>>(),
    );
}

/// A control panel (its settings in `data` when one panel is asked for).
#[derive(Serialize, JsonSchema)]
pub struct Panel {
    /// `/@controlpanels/<name>`.
    #[serde(rename = "@id")]
    pub id: String,
    /// Its group.
    pub group: &'static str,
    /// Its title.
    pub title: &'static str,
    /// Its settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// The language panel's settings, as PATCH takes them.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LanguagePatch {
    /// The site's languages (codes or `{token}`), the first the default unless one is named.
    #[serde(default)]
    pub available_languages: Option<Vec<Value>>,
    /// The default language (one of them).
    #[serde(default)]
    pub default_language: Option<Value>,
}

const PANELS: &[(&str, &str, &str)] = &[
    ("language", "Language", "General"),
    ("navigation", "Navigation", "General"),
];

fn check(ctx: &Ctx<'_>, call: &Call<'_>, obj: &ContentRecord) -> Result<Option<&'static str>> {
    let not_found = || EngineError::NotFound {
        url: call.route.url(&ctx.base_url),
        context: Some(ctx.url(&obj.path)),
    };
    match call.param("name") {
        None => Ok(None),
        Some(name) => PANELS
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(n, _, _)| Some(*n))
            .ok_or_else(not_found),
    }
}

/// The language panel's data.
#[derive(Serialize)]
struct LanguageData {
    available_languages: Vec<Value>,
    default_language: Value,
}

fn panel(ctx: &Ctx<'_>, name: &str, data: Option<Value>) -> Panel {
    let (title, group) = PANELS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map_or(("", ""), |(_, t, g)| (*t, *g));
    Panel {
        id: format!("{}/@controlpanels/{name}", ctx.base_url),
        group,
        title,
        data,
    }
}

fn language_panel(ctx: &Ctx<'_>) -> Result<Panel> {
    let s = multilingual::settings(ctx)?;
    let data = LanguageData {
        available_languages: s
            .available_languages
            .iter()
            .map(|c| language::token_title(c))
            .collect(),
        default_language: language::token_title(&s.default_language),
    };
    Ok(panel(ctx, "language", Some(serde_json::to_value(data)?)))
}

fn navigation_panel(ctx: &Ctx<'_>) -> Result<Panel> {
    let s = navigation::settings(ctx)?;
    Ok(panel(ctx, "navigation", Some(serde_json::to_value(&s)?)))
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
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    match check(ctx, call, &obj)? {
        None => {
            let list: Vec<Panel> = PANELS
                .iter()
                .map(|(name, _, _)| panel(ctx, name, None))
                .collect();
            Ok(Response::json(200, &list))
        }
        Some("navigation") => Ok(Response::json(200, &navigation_panel(ctx)?)),
        Some(_) => Ok(Response::json(200, &language_panel(ctx)?)),
    }
}

/// PATCH `/@controlpanels/<name>`: change a panel's settings; 204.
fn patch(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    if check(ctx, call, &obj)? == Some("navigation") {
        patch_navigation(ctx, extract::json_object(call.req)?)?;
        return Ok(Response::empty(204));
    }
    let body: LanguagePatch = call.body()?;
    let current = multilingual::settings(ctx)?;
    let available = match &body.available_languages {
        None => current.available_languages.clone(),
        Some(a) => a
            .iter()
            .map(|v| multilingual::parse_code(v, "available_languages"))
            .collect::<Result<Vec<String>>>()?,
    };
    let default = match &body.default_language {
        None | Some(Value::Null) => None,
        Some(v) => Some(multilingual::parse_code(v, "default_language")?),
    };
    multilingual::set_languages(ctx, &available, default.as_deref())?;
    Ok(Response::empty(204))
}
