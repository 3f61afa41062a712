//! `@controlpanels`: the site settings panels, each declared once in [`crate::site::controlpanels`]
//! (name, group, title, and its fields, each a configuration registry record):
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `/@controlpanels` | | 200, `[{@id, group, title}]`: every panel, also those other modules serve (`dexterity-types`, `security`, `usergroup`); on a Nick site the eight Nick lists |
//! | GET | `/@controlpanels/<name>` | | 200, `{@id, group, title, schema: {fieldsets, properties, required}, data}` |
//! | PATCH | `/@controlpanels/<name>` | any of the `data` fields | 204 |
//!
//! Panels: `discussion` (`globally_enabled`: comments for the whole site), `editing`, `form`,
//! `language` (the site's languages; `data` shows them as `{token, title}`), `mail` (settings
//! only; Nick's field names `host`, `port`, `secure`, `user`, `pass`, `debug` are accepted on
//! every site and shown, with Nick's form, on a Nick site), `markup`, `navigation` (Home entry, extra links, folder-only tabs, displayed types),
//! `search`, `site` (title, logo, robots.txt, time zone), `social`.
//!
//! Only on the site root; the Manage portal permission is required. An unknown field, or a value
//! of the wrong type, is a 400 naming the field, and nothing changes. With the
//! `multilingual-content` profile installed, adding a language creates its root folder.

use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::extract::{self, Call};
use super::router::{RouteDef, RouteTable};
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::{language, ContentRecord};
use crate::core::security::Permission;
use crate::runtime::context::Ctx;
use crate::site::configuration::{self, Kind, RecordDef, Source};
use crate::site::controlpanels::{self, PanelDef};

/// Register the control panel routes.
pub fn register(r: &mut RouteTable) {
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
    pub schema: Option<PanelSchema>,
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

/// A link to a vocabulary.
#[derive(Serialize, JsonSchema, Clone)]
pub struct VocabularyLink {
    /// `<site>/@vocabularies/<name>`.
    #[serde(rename = "@id")]
    pub id: String,
}

fn vocabulary(ctx: &Ctx<'_>, name: &str) -> Option<VocabularyLink> {
    Some(VocabularyLink {
        id: format!("{}/@vocabularies/{name}", ctx.base_url),
    })
}

/// The schema of a list's items.
#[derive(Serialize, JsonSchema)]
pub struct ItemSchema {
    /// `string` or `object`.
    #[serde(rename = "type")]
    pub ty: &'static str,
    /// Where the values come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vocabulary: Option<VocabularyLink>,
    /// An object's properties: name → `{type}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<BTreeMap<&'static str, TypeOnly>>,
    /// An object's required properties.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<&'static str>>,
}

/// `{type}`.
#[derive(Serialize, JsonSchema)]
pub struct TypeOnly {
    /// The JSON type.
    #[serde(rename = "type")]
    pub ty: &'static str,
}

/// The JSON Schema of one field (of a panel, or of a registry record).
#[derive(Serialize, JsonSchema)]
pub struct FieldSchema {
    /// Its label.
    pub title: &'static str,
    /// What it does.
    pub description: &'static str,
    /// The reference's field factory (`Yes/No`, `Int`, `List`, `Choice`, ...).
    pub factory: &'static str,
    /// The JSON type(s) of its value.
    #[serde(rename = "type")]
    pub ty: JsonType,
    /// The value until set (records stored by the registry).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// A list's items.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<ItemSchema>,
    /// The allowed values, as `[token, title]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<[&'static str; 2]>>,
    /// Where the allowed values come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vocabulary: Option<VocabularyLink>,
    /// The widget a form shows (Nick's mail panel: `password`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub widget: Option<&'static str>,
}

/// A JSON Schema `type`: one name, or a name and `null`.
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
pub enum JsonType {
    /// One type.
    One(&'static str),
    /// A type or `null`.
    OrNull([&'static str; 2]),
}

/// One fieldset of a panel's schema.
#[derive(Serialize, JsonSchema)]
pub struct Fieldset {
    /// `default`.
    pub id: &'static str,
    /// `Default`.
    pub title: &'static str,
    /// Its fields, in order.
    pub fields: Vec<&'static str>,
}

/// A panel's JSON Schema.
#[derive(Serialize, JsonSchema)]
pub struct PanelSchema {
    /// The fieldsets (one, with every field).
    pub fieldsets: Vec<Fieldset>,
    /// Each field's schema.
    pub properties: BTreeMap<&'static str, FieldSchema>,
    /// Required fields (none: a PATCH may send any of them).
    pub required: Vec<&'static str>,
    /// `object`.
    #[serde(rename = "type")]
    pub ty: &'static str,
}

fn items(ty: &'static str, vocabulary: Option<VocabularyLink>) -> Option<ItemSchema> {
    Some(ItemSchema {
        ty,
        vocabulary,
        properties: None,
        required: None,
    })
}

/// The JSON Schema of one record's field.
pub fn field_schema(ctx: &Ctx<'_>, d: &RecordDef) -> FieldSchema {
    let mut s = FieldSchema {
        title: d.title,
        description: d.description,
        factory: d.kind.factory(),
        ty: JsonType::One(d.kind.json_type()),
        default: match d.source {
            Source::Stored => Some(d.default.value()),
            Source::Owned { .. } => None,
        },
        items: None,
        choices: None,
        vocabulary: None,
        widget: None,
    };
    match d.kind {
        Kind::TextList => s.items = items("string", None),
        Kind::Choice(options) => s.choices = Some(options.iter().map(|o| [*o, *o]).collect()),
        Kind::TextOrNull => s.ty = JsonType::OrNull(["string", "null"]),
        _ => {}
    }
    // Fields whose values live in other services, and choices from a vocabulary.
    match d.name {
        "plone.available_languages" => {
            s.ty = JsonType::One("array");
            s.factory = "List";
            s.items = items(
                "string",
                vocabulary(ctx, "plone.app.vocabularies.SupportedContentLanguages"),
            );
        }
        "plone.default_language" => {
            s.ty = JsonType::One("string");
            s.factory = "Choice";
            s.vocabulary = vocabulary(ctx, "plone.app.vocabularies.SupportedContentLanguages");
        }
        "plone.displayed_types" => {
            s.ty = JsonType::OrNull(["array", "null"]);
            s.factory = "List";
            s.items = items(
                "string",
                vocabulary(ctx, "plone.app.vocabularies.ReallyUserFriendlyTypes"),
            );
        }
        "plone.navigation.extra_items" => {
            s.ty = JsonType::One("array");
            s.factory = "List";
            s.items = Some(ItemSchema {
                ty: "object",
                vocabulary: None,
                properties: Some(
                    [
                        ("title", "string"),
                        ("url", "string"),
                        ("description", "string"),
                    ]
                    .into_iter()
                    .map(|(n, t)| (n, TypeOnly { ty: t }))
                    .collect(),
                ),
                required: Some(vec!["title", "url"]),
            });
        }
        "plone.portal_timezone" => {
            s.choices = None;
            s.vocabulary = vocabulary(ctx, "plone.app.vocabularies.CommonTimezones");
        }
        "plone.default_editor" => {
            s.choices = None;
            s.vocabulary = vocabulary(ctx, "plone.app.vocabularies.AvailableEditors");
        }
        _ => {}
    }
    s
}

/// The panel's JSON Schema: one fieldset with every field (Nick's form, under Nick's names,
/// texts and required fields, on a Nick site where Nick's form differs).
fn schema(ctx: &Ctx<'_>, p: &PanelDef) -> PanelSchema {
    if p.shows_nick(ctx.profile()) {
        return PanelSchema {
            fieldsets: vec![Fieldset {
                id: "default",
                title: "Default",
                fields: p.nick.iter().map(|f| f.name).collect(),
            }],
            properties: p
                .nick
                .iter()
                .filter_map(|f| configuration::def(f.record).map(|d| (f, d)))
                .map(|(f, d)| {
                    let mut s = field_schema(ctx, d);
                    s.title = f.title;
                    s.description = f.description;
                    s.widget = f.widget;
                    if !f.shows_default {
                        s.default = None;
                    }
                    (f.name, s)
                })
                .collect(),
            required: p.nick_required.to_vec(),
            ty: "object",
        };
    }
    PanelSchema {
        fieldsets: vec![Fieldset {
            id: "default",
            title: "Default",
            fields: p.fields.iter().map(|(f, _)| *f).collect(),
        }],
        properties: p
            .records()
            .map(|(field, d)| (field, field_schema(ctx, d)))
            .collect(),
        required: Vec::new(),
        ty: "object",
    }
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
        let list: Vec<Panel> = controlpanels::listed(ctx.profile())
            .map(|p| link(ctx, p))
            .collect();
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
