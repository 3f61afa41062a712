//! `@controlpanels/dexterity-types`: the content types control panel. Lists the types with how
//! many objects each has, adds a type (from a title), shows one type's settings (title,
//! description, allowed types, one switch per behavior) and schema, changes them, and removes a
//! type that has no content. A new type may be given as Nick's type definition (its fields and
//! behaviors); behaviors may be switched by Nick's names ([`content_types::NICK_BEHAVIORS`]),
//! and a Nick site shows Nick's behavior switches. The rules are in
//! [`crate::content::content_types`]; the routes' fixed segment wins over the generic
//! `@controlpanels/{name}`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use super::types::{schema, TypeSchema};
use crate::content::content_types::{self, BehaviorName};
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::types::TypeData;
use crate::core::model::{ContentRecord, ContentType};
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

const PANEL: &str = "@controlpanels/dexterity-types";

/// Register the panel's routes.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@controlpanels/dexterity-types", list)
            .requires(Permission::ManagePortal)
            .root_only()
            .summary("Every content type, with how many objects of it exist")
            .answers::<TypesPanel>(),
    );
    r.route(
        RouteDef::post("@controlpanels/dexterity-types", add)
            .requires(Permission::ManagePortal)
            .root_only()
            .status(201)
            .summary("Add a content type (`title`, `description`, optional `id`)")
            .body::<AddTypeRequest>()
            .answers::<TypePanel>(),
    );
    r.route(
        RouteDef::get("@controlpanels/dexterity-types/{type}", get)
            .requires(Permission::ManagePortal)
            .root_only()
            .summary("One type's settings (behaviors as switches) and schema")
            .answers::<TypePanel>(),
    );
    r.route(
        RouteDef::patch("@controlpanels/dexterity-types/{type}", patch)
            .requires(Permission::ManagePortal)
            .root_only()
            .status(204)
            .summary(
                "Change a type's title, description, allowed types, or behaviors (`<behavior>: \
                 true|false`)",
            )
            .body::<BTreeMap<String, Value>>(),
    );
    r.route(
        RouteDef::delete("@controlpanels/dexterity-types/{type}", delete)
            .requires(Permission::ManagePortal)
            .root_only()
            .status(204)
            .summary("Remove a type that has no content (400 otherwise)"),
    );
}

/// The panel.
#[derive(Serialize, JsonSchema)]
pub struct TypesPanel {
    /// Its URL.
    #[serde(rename = "@id")]
    pub id: String,
    /// Its group.
    pub group: &'static str,
    /// The types.
    pub items: Vec<TypeItem>,
    /// Its title.
    pub title: &'static str,
}

/// One type in the panel's list.
#[derive(Serialize, JsonSchema)]
pub struct TypeItem {
    /// Its URL in the panel.
    #[serde(rename = "@id")]
    pub url: String,
    /// Its name.
    #[serde(rename = "@type")]
    pub type_name: String,
    /// How many objects of it exist.
    pub count: u64,
    /// What it is for.
    pub description: String,
    /// Its name.
    pub id: String,
    /// `Dexterity FTI` (a Nick site: the type's name, as Nick shows).
    pub meta_type: String,
    /// Its title.
    pub title: String,
}

/// One type's settings.
#[derive(Serialize, JsonSchema)]
pub struct TypePanel {
    /// Its URL in the panel.
    #[serde(rename = "@id")]
    pub id: String,
    /// Title, description, allowed types, and one `true`/`false` per behavior.
    pub data: BTreeMap<String, Value>,
    /// What it is for.
    pub description: String,
    /// The panel's group.
    pub group: &'static str,
    /// Always empty.
    pub items: Vec<Value>,
    /// The form of these settings on a Nick site (Nick's panel form: title, description,
    /// allowed types and one switch per Nick behavior); the type's JSON Schema on another site.
    pub schema: PanelSchema,
    /// Its title.
    pub title: String,
}

/// The `schema` of a type's settings: the type's schema (Plone) or the settings' form (Nick).
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
pub enum PanelSchema {
    /// The type's JSON Schema, as `@types/<type>` answers it.
    Type(TypeSchema),
    /// Nick's form of the settings (`dexterity_types_nick.json`, the vocabulary URL made
    /// absolute).
    Nick(Value),
}

/// Nick's form of a type's settings (`schema` of the panel on a Nick site).
const NICK_PANEL_FORM: &str = include_str!("dexterity_types_nick.json");

fn nick_panel_form(ctx: &Ctx<'_>) -> Result<Value> {
    let text = NICK_PANEL_FORM.replace("{site}", &ctx.base_url);
    serde_json::from_str(&text)
        .map_err(|e| EngineError::Internal(format!("dexterity_types_nick.json: {e}")))
}

/// POST: a new type.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddTypeRequest {
    /// Its title (its name is made from it unless `id` is given).
    pub title: String,
    /// What it is for.
    #[serde(default)]
    pub description: String,
    /// Its name.
    #[serde(default)]
    pub id: Option<String>,
    /// Whether it can be added anywhere (default true).
    #[serde(default)]
    pub global_allow: Option<bool>,
    /// Whether only `allowed_content_types` can be added in it (default false).
    #[serde(default)]
    pub filter_content_types: Option<bool>,
    /// The types that can be added in it (with `filter_content_types`).
    #[serde(default)]
    pub allowed_content_types: Option<Vec<String>>,
    /// Its workflow (default `simple_publication_workflow`).
    #[serde(default)]
    pub workflow: Option<String>,
    /// Nick's type definition: its own fields and its behaviors.
    #[serde(default)]
    pub schema: Option<DefinitionSchema>,
}

/// The `schema` of Nick's type definition.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DefinitionSchema {
    /// Its fieldsets: only `default` (a type's own fields are in one form tab here).
    #[serde(default)]
    pub fieldsets: Vec<DefinitionFieldset>,
    /// Its own fields, by name.
    #[serde(default)]
    pub properties: BTreeMap<String, DefinitionField>,
    /// Its required fields.
    #[serde(default)]
    pub required: Vec<String>,
    /// Its behaviors: ours (`plone.versioning`) or Nick's names (`versioning`, `folderish`).
    #[serde(default)]
    pub behaviors: Vec<String>,
    /// Its views (the first is its default view; none: `document_view`).
    #[serde(default)]
    pub layouts: Vec<String>,
}

// `title` is accepted from Nick's definition and not read: the default fieldset's title is ours.
#[allow(dead_code)]
/// A fieldset of Nick's type definition.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DefinitionFieldset {
    /// `default`.
    pub id: String,
    /// Its title.
    #[serde(default)]
    pub title: String,
    /// Its fields.
    #[serde(default)]
    pub fields: Vec<String>,
}

// `type` is accepted from Nick's definition and not read: the factory decides the JSON type.
#[allow(dead_code)]
/// A field of Nick's type definition.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DefinitionField {
    /// Its factory (`Text line (String)`, `File`, ...).
    pub factory: String,
    /// Its title.
    #[serde(default)]
    pub title: String,
    /// Its help text.
    #[serde(default)]
    pub description: String,
    /// Its JSON type (follows from the factory).
    #[serde(rename = "type", default)]
    pub ty: Option<String>,
    /// The widget forms use.
    #[serde(default)]
    pub widget: Option<String>,
}

fn panel_url(ctx: &Ctx<'_>) -> String {
    ctx.url(&format!("/{PANEL}"))
}

/// GET `/@controlpanels/dexterity-types`.
fn list(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let counts = content_types::counts(ctx)?;
    let base = panel_url(ctx);
    let nick = ctx.profile().is_nick();
    let items = ctx
        .types()?
        .all()
        .map(|t| TypeItem {
            url: format!("{base}/{}", t.name),
            type_name: t.name.clone(),
            count: counts.get(&t.name).copied().unwrap_or(0),
            description: t.data.description.clone(),
            id: t.name.clone(),
            meta_type: if nick {
                t.name.clone()
            } else {
                "Dexterity FTI".to_string()
            },
            title: t.title.clone(),
        })
        .collect();
    Ok(Response::json(
        200,
        &TypesPanel {
            id: base,
            group: "Content",
            items,
            title: "Content Types",
        },
    ))
}

fn panel_of(ctx: &Ctx<'_>, ty: &ContentType) -> Result<TypePanel> {
    let mut data = BTreeMap::new();
    let nick = ctx.profile().is_nick();
    for b in ctx.types()?.behaviors() {
        // a Nick site shows the behaviors Nick has under Nick's names (below)
        let nicks = content_types::NICK_BEHAVIORS
            .iter()
            .any(|(_, _, stored)| *stored == Some(b.name.as_str()));
        if !(nick && nicks) {
            data.insert(b.name.clone(), Value::Bool(ty.has_behavior(&b.name)));
        }
    }
    if nick {
        for (name, _, stored) in content_types::NICK_BEHAVIORS {
            let on = match stored {
                Some(b) => ty.has_behavior(b),
                None => ty.data.nick_switches.iter().any(|s| s == name),
            };
            data.insert(name.to_string(), Value::Bool(on));
        }
    }
    data.insert("title".into(), Value::String(ty.title.clone()));
    data.insert(
        "description".into(),
        Value::String(ty.data.description.clone()),
    );
    data.insert(
        "allowed_content_types".into(),
        serde_json::to_value(ty.allowed_types.clone().unwrap_or_default())?,
    );
    data.insert(
        "filter_content_types".into(),
        Value::Bool(ty.allowed_types.is_some()),
    );
    data.insert("folderish".into(), Value::Bool(ty.folderish));
    data.insert("global_allow".into(), Value::Bool(ty.global_allow));
    Ok(TypePanel {
        id: format!("{}/{}", panel_url(ctx), ty.name),
        data,
        description: ty.data.description.clone(),
        group: "Content",
        items: Vec::new(),
        schema: if nick {
            PanelSchema::Nick(nick_panel_form(ctx)?)
        } else {
            PanelSchema::Type(schema(ctx, ty))
        },
        title: ty.title.clone(),
    })
}

fn type_param(ctx: &Ctx<'_>, call: &Call<'_>) -> Result<std::sync::Arc<ContentType>> {
    content_types::require_type(
        ctx,
        call.param("type").unwrap_or_default(),
        &call.route.url(&ctx.base_url),
    )
}

/// POST `/@controlpanels/dexterity-types`: 201 with the new type's panel.
fn add(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let body: AddTypeRequest = call.body()?;
    if body.title.trim().is_empty() {
        return Err(EngineError::bad_request(
            "Property 'title' must not be empty",
        ));
    }
    let name = body
        .id
        .unwrap_or_else(|| content_types::type_name_from_title(ctx.profile(), &body.title));
    let schema = body.schema.unwrap_or(DefinitionSchema {
        fieldsets: Vec::new(),
        properties: BTreeMap::new(),
        required: Vec::new(),
        behaviors: Vec::new(),
        layouts: Vec::new(),
    });
    if let Some(fs) = schema.fieldsets.iter().find(|fs| fs.id != "default") {
        return Err(EngineError::Invalid {
            field: "schema".into(),
            message: format!(
                "Fieldset '{}' in 'schema.fieldsets': a new type's own fields are in the \
                 'default' fieldset (add other fieldsets with POST @types/<type>)",
                fs.id
            ),
        });
    }
    if let Some(missing) = schema
        .required
        .iter()
        .find(|r| !schema.properties.contains_key(*r))
    {
        return Err(EngineError::Invalid {
            field: "schema".into(),
            message: format!("'schema.required' names '{missing}', which is not in 'properties'"),
        });
    }
    // the fields in the order the fieldset lists them, then the others by name
    let listed: Vec<String> = schema
        .fieldsets
        .iter()
        .flat_map(|fs| fs.fields.iter().cloned())
        .collect();
    let mut order: Vec<String> = listed
        .iter()
        .filter(|f| schema.properties.contains_key(*f))
        .cloned()
        .collect();
    order.extend(
        schema
            .properties
            .keys()
            .filter(|k| !listed.contains(k))
            .cloned(),
    );
    let mut properties = schema.properties;
    let fields = order
        .into_iter()
        .filter_map(|n| properties.remove(&n).map(|f| (n, f)))
        .map(|(n, f)| content_types::DefinedField {
            required: schema.required.contains(&n),
            name: n,
            factory: f.factory,
            title: f.title,
            description: f.description,
            widget: f.widget,
        })
        .collect();
    let layouts = if schema.layouts.is_empty() {
        vec!["document_view".to_string()]
    } else {
        schema.layouts
    };
    let filter = body.filter_content_types.unwrap_or(false)
        || (body.filter_content_types.is_none() && body.allowed_content_types.is_some());
    let ty = content_types::add_defined_type(
        ctx,
        content_types::TypeDefinition {
            data: TypeData {
                name,
                title: body.title,
                description: body.description,
                folderish: false,
                global_allow: body.global_allow.unwrap_or(true),
                allowed_types: filter.then(|| body.allowed_content_types.unwrap_or_default()),
                layout: layouts[0].clone(),
                layouts,
                workflow: Some(
                    body.workflow
                        .unwrap_or_else(|| "simple_publication_workflow".into()),
                ),
                allow_discussion: false,
                behaviors: vec!["plone.dublincore".into()],
                fields: Vec::new(),
                fieldsets: Vec::new(),
                nick_switches: Vec::new(),
            },
            behaviors: schema.behaviors,
            fields,
        },
    )?;
    let panel = panel_of(ctx, &ty)?;
    let location = panel.id.clone();
    Ok(Response::json(201, &panel).with_header("Location", &location))
}

/// GET `/@controlpanels/dexterity-types/<type>`.
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let ty = type_param(ctx, call)?;
    Ok(Response::json(200, &panel_of(ctx, &ty)?))
}

/// PATCH `/@controlpanels/dexterity-types/<type>`.
fn patch(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let ty = type_param(ctx, call)?;
    let body: BTreeMap<String, Value> = call.body()?;
    let registry = ctx.types()?;
    let profile = ctx.profile();
    // one behavior under two names (`blocks` and `volto.blocks`) is ambiguous
    let mut named: BTreeMap<&str, &str> = BTreeMap::new();
    for k in body.keys() {
        if let Some(BehaviorName::Stored(b)) = content_types::behavior_named(&registry, profile, k)
        {
            if let Some(other) = named.insert(b, k) {
                return Err(EngineError::Invalid {
                    field: k.clone(),
                    message: format!(
                        "'{other}' and '{k}' name the same behavior ({b}); send one of them"
                    ),
                });
            }
        }
    }
    let mut data = ty.data.clone();
    let text = |k: &str, v: &Value| -> Result<String> {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| EngineError::bad_request(format!("Property '{k}' must be a string")))
    };
    let flag = |k: &str, v: &Value| -> Result<bool> {
        v.as_bool()
            .ok_or_else(|| EngineError::bad_request(format!("Property '{k}' must be a boolean")))
    };
    for (k, v) in &body {
        match k.as_str() {
            "title" => {
                data.title = text(k, v)?;
                if data.title.trim().is_empty() {
                    return Err(EngineError::bad_request(
                        "Property 'title' must not be empty",
                    ));
                }
            }
            "description" => data.description = text(k, v)?,
            "global_allow" => data.global_allow = flag(k, v)?,
            "folderish" => {
                let folderish = flag(k, v)?;
                if ty.name == "Site" && !folderish {
                    return Err(EngineError::bad_request(
                        "Property 'folderish': the site root stays folderish",
                    ));
                }
                data.folderish = folderish;
            }
            "filter_content_types" => {
                if flag(k, v)? {
                    data.allowed_types.get_or_insert_with(Vec::new);
                } else {
                    data.allowed_types = None;
                }
            }
            "allowed_content_types" => {
                let list: Vec<String> = serde_json::from_value(v.clone()).map_err(|_| {
                    EngineError::bad_request(
                        "Property 'allowed_content_types' must be a list of type names",
                    )
                })?;
                data.allowed_types = Some(list);
            }
            name if content_types::behavior_named(&registry, profile, name)
                == Some(BehaviorName::AlwaysOn) =>
            {
                // one of Nick's behaviors every type here has: the switch is kept and shown,
                // and changes nothing
                content_types::set_nick_switch(&mut data, name, flag(k, v)?);
            }
            given if content_types::behavior_named(&registry, profile, given).is_some() => {
                let on = flag(k, v)?;
                let Some(BehaviorName::Stored(name)) =
                    content_types::behavior_named(&registry, profile, given)
                else {
                    continue;
                };
                let has = data.behaviors.iter().any(|b| b == name);
                if on && !has {
                    data.behaviors.push(name.to_string());
                } else if !on && has {
                    if name == "plone.dublincore" {
                        return Err(EngineError::bad_request(
                            "Property 'plone.dublincore': every type keeps its title",
                        ));
                    }
                    data.behaviors.retain(|b| b != name);
                }
            }
            _ => {
                return Err(EngineError::bad_request(format!(
                    "Unknown property '{k}': expected title, description, allowed_content_types, \
                     filter_content_types, folderish, global_allow or a behavior name"
                )))
            }
        }
    }
    content_types::save_type(ctx, data)?;
    Ok(Response::empty(204))
}

/// DELETE `/@controlpanels/dexterity-types/<type>`.
fn delete(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let ty = type_param(ctx, call)?;
    content_types::remove_type(ctx, &ty.name)?;
    Ok(Response::empty(204))
}
