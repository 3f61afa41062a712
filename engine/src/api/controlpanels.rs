//! `@controlpanels`: the site settings panels, each declared once in [`crate::controlpanels`]
//! (name, group, title, and its fields, each a configuration registry record):
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `/@controlpanels` | | 200, `[{@id, group, title}]`: every panel, also those other modules serve (`dexterity-types`, `security`, `usergroup`) |
//! | GET | `/@controlpanels/<name>` | | 200, `{@id, group, title, schema: {fieldsets, properties, required}, data}` |
//! | PATCH | `/@controlpanels/<name>` | any of the `data` fields | 204 |
//!
//! Panels: `discussion` (`globally_enabled`: comments for the whole site), `editing`, `form`,
//! `language` (the site's languages; `data` shows them as `{token, title}`), `mail` (settings
//! only), `markup`, `navigation` (Home entry, extra links, folder-only tabs, displayed types),
//! `search`, `site` (title, logo, robots.txt, time zone), `social`.
//!
//! Only on the site root; the Manage portal permission is required. An unknown field, or a value
//! of the wrong type, is a 400 naming the field, and nothing changes. With the
//! `multilingual-content` profile installed, adding a language creates its root folder.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::extract::{self, Call};
use super::router::{Registry, RouteDef};
use crate::configuration::{Kind, RecordDef};
use crate::context::Ctx;
use crate::controlpanels::{self, PanelDef, PANELS};
use crate::error::{EngineError, Result};
use crate::http::Response;
use crate::model::{language, ContentRecord};
use crate::security::Permission;

/// Register the control panel routes.
pub fn register(r: &mut Registry) {
    r.route(
        RouteDef::get("@controlpanels/{name?}", get)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("The control panels, or one panel with its schema and settings")
            .answers::<Panel>(),
    );
    r.route(
        RouteDef::patch("@controlpanels/{name}", patch)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Change a panel's settings (any of its fields)")
            .body::<Map<String, Value>>(),
    );
}

/// A control panel (its schema and settings when one panel is asked for).
#[derive(Serialize, JsonSchema)]
pub struct Panel {
    /// `/@controlpanels/<name>`.
    #[serde(rename = "@id")]
    pub id: String,
    /// Its group.
    pub group: &'static str,
    /// Its title.
    pub title: &'static str,
    /// The JSON Schema of its settings: `{fieldsets, properties, required}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// Its settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Map<String, Value>>,
}

fn link(ctx: &Ctx<'_>, p: &PanelDef) -> Panel {
    Panel {
        id: format!("{}/@controlpanels/{}", ctx.base_url, p.name),
        group: p.group,
        title: p.title,
        schema: None,
        data: None,
    }
}

fn vocabulary(ctx: &Ctx<'_>, name: &str) -> Value {
    json!({"@id": format!("{}/@vocabularies/{name}", ctx.base_url)})
}

/// The JSON Schema of one field.
pub fn field_schema(ctx: &Ctx<'_>, d: &RecordDef) -> Value {
    let mut s = Map::new();
    s.insert("title".into(), json!(d.title));
    s.insert("description".into(), json!(d.description));
    s.insert("factory".into(), json!(d.kind.factory()));
    s.insert("type".into(), json!(d.kind.json_type()));
    if let crate::configuration::Source::Stored = d.source {
        s.insert("default".into(), d.default.value());
    }
    match d.kind {
        Kind::TextList => {
            s.insert("items".into(), json!({"type": "string"}));
        }
        Kind::Choice(options) => {
            s.insert(
                "choices".into(),
                json!(options.iter().map(|o| [o, o]).collect::<Vec<_>>()),
            );
        }
        Kind::TextOrNull => {
            s.insert("type".into(), json!(["string", "null"]));
        }
        _ => {}
    }
    // Fields whose values live in other services: their shapes and vocabularies.
    let lists = |s: &mut Map<String, Value>, items: Value| {
        s.insert("type".into(), json!("array"));
        s.insert("factory".into(), json!("List"));
        s.insert("items".into(), items);
    };
    match d.name {
        "plone.available_languages" => lists(
            &mut s,
            json!({"type": "string", "vocabulary":
                vocabulary(ctx, "plone.app.vocabularies.SupportedContentLanguages")}),
        ),
        "plone.default_language" => {
            s.insert("type".into(), json!("string"));
            s.insert("factory".into(), json!("Choice"));
            s.insert(
                "vocabulary".into(),
                vocabulary(ctx, "plone.app.vocabularies.SupportedContentLanguages"),
            );
        }
        "plone.displayed_types" => {
            lists(
                &mut s,
                json!({"type": "string", "vocabulary":
                    vocabulary(ctx, "plone.app.vocabularies.ReallyUserFriendlyTypes")}),
            );
            s.insert("type".into(), json!(["array", "null"]));
        }
        "plone.navigation.extra_items" => lists(
            &mut s,
            json!({"type": "object", "properties": {
                "title": {"type": "string"}, "url": {"type": "string"},
                "description": {"type": "string"}}, "required": ["title", "url"]}),
        ),
        "plone.portal_timezone" => {
            s.remove("choices");
            s.insert(
                "vocabulary".into(),
                vocabulary(ctx, "plone.app.vocabularies.CommonTimezones"),
            );
        }
        "plone.default_editor" => {
            s.remove("choices");
            s.insert(
                "vocabulary".into(),
                vocabulary(ctx, "plone.app.vocabularies.AvailableEditors"),
            );
        }
        _ => {}
    }
    Value::Object(s)
}

/// The panel's JSON Schema: one fieldset with every field.
fn schema(ctx: &Ctx<'_>, p: &PanelDef) -> Value {
    let mut properties = Map::new();
    for (field, d) in p.records() {
        properties.insert(field.to_string(), field_schema(ctx, d));
    }
    json!({
        "fieldsets": [{
            "id": "default",
            "title": "Default",
            "fields": p.fields.iter().map(|(f, _)| *f).collect::<Vec<_>>(),
        }],
        "properties": properties,
        "required": [],
        "type": "object",
    })
}

/// The panel's data as clients see it (languages as `{token, title}`).
fn data(ctx: &Ctx<'_>, p: &PanelDef) -> Result<Map<String, Value>> {
    let mut data = controlpanels::data(ctx, p)?;
    if p.name == "language" {
        for v in data.values_mut() {
            *v = match v.take() {
                Value::String(c) => language::token_title(&c),
                Value::Array(a) => Value::Array(
                    a.iter()
                        .map(|c| language::token_title(c.as_str().unwrap_or_default()))
                        .collect(),
                ),
                other => other,
            };
        }
    }
    Ok(data)
}

fn served(ctx: &Ctx<'_>, call: &Call<'_>, obj: &ContentRecord) -> Result<&'static PanelDef> {
    call.param("name")
        .and_then(controlpanels::find)
        .ok_or_else(|| EngineError::NotFound {
            url: call.route.url(&ctx.base_url),
            context: Some(ctx.url(&obj.path)),
        })
}

/// GET `/@controlpanels` and `/@controlpanels/<name>`.
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    if call.param("name").is_none() {
        let list: Vec<Panel> = PANELS.iter().map(|p| link(ctx, p)).collect();
        return Ok(Response::json(200, &list));
    }
    let p = served(ctx, call, &obj)?;
    let mut panel = link(ctx, p);
    panel.schema = Some(schema(ctx, p));
    panel.data = Some(data(ctx, p)?);
    Ok(Response::json(200, &panel))
}

/// PATCH `/@controlpanels/<name>`: change a panel's settings; 204.
fn patch(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let p = served(ctx, call, &obj)?;
    let body = extract::json_object(call.req)?;
    controlpanels::patch(ctx, p, body)?;
    Ok(Response::empty(204))
}
