//! `@types`: the content types a caller may add in a context, each type's JSON Schema (what
//! add and edit forms are built from), and editing a type's own fields and fieldsets. Expandable
//! as the `types` component (not for anonymous callers). The rules and the stored registry are
//! in [`crate::content::content_types`].

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use super::Route;
use crate::content::content_types::{self, FieldChange, Member, NewField, OWN_SCHEMA};
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::fields::{ChoiceValue, FieldDef, FieldKind};
use crate::core::model::types::FieldsetDef;
use crate::core::model::{ContentRecord, ContentType};
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// Register the `@types` routes and the `types` component.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@types", list)
            .checked_by_handler()
            .summary(
                "The content types, each with whether the caller may add it here (logged-in \
                 callers with View)",
            )
            .answers::<Vec<TypeEntry>>(),
    );
    r.route(
        RouteDef::get("@types/{type}", get_schema)
            .checked_by_handler()
            .summary("The JSON Schema of a type: fieldsets, properties, required, layouts")
            .answers::<TypeSchema>(),
    );
    r.route(
        RouteDef::get("@types/{type}/{name}", get_member)
            .checked_by_handler()
            .summary("One field (its schema) or fieldset of a type")
            .answers::<Value>(),
    );
    r.route(
        RouteDef::post("@types/{type}", post)
            .requires(Permission::ManagePortal)
            .status(201)
            .summary("Add a field (`factory`: a field factory) or a fieldset (`factory: fieldset`)")
            .body::<AddRequest>()
            .answers::<Value>(),
    );
    r.route(
        RouteDef::patch("@types/{type}", patch_type)
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Change fields (`properties`), fieldsets (`fieldsets`) or `layouts` of a type")
            .body::<PatchTypeRequest>(),
    );
    r.route(
        RouteDef::put("@types/{type}", put_type)
            .requires(Permission::ManagePortal)
            .status(204)
            .summary(
                "Replace a type's own schema: its own fields are those of `properties` that no \
                 behavior brings; `required`, `fieldsets` and `layouts` as sent",
            )
            .body::<PutTypeRequest>(),
    );
    r.route(
        RouteDef::patch("@types/{type}/{name}", patch_member)
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Change one of the type's own fields or fieldsets")
            .body::<PatchMemberRequest>(),
    );
    r.route(
        RouteDef::delete("@types/{type}/{name}", delete_member)
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Remove one of the type's own fields or fieldsets"),
    );
    r.member_component("types", component);
}

/// One entry of the types list.
#[derive(Serialize, JsonSchema)]
pub struct TypeEntry {
    /// `<context>/@types/<name>`.
    #[serde(rename = "@id")]
    pub id_url: String,
    /// Whether the caller may add one here.
    pub addable: bool,
    /// The type name.
    pub id: String,
    /// Same as `addable` (no secondary Add menu).
    pub immediately_addable: bool,
    /// Its title.
    pub title: String,
}

/// A type's JSON Schema.
#[derive(Serialize, JsonSchema)]
pub struct TypeSchema {
    /// The form tabs and the fields on each.
    pub fieldsets: Vec<FieldsetOut>,
    /// Views the type offers.
    pub layouts: Vec<String>,
    /// Every field, by name.
    pub properties: BTreeMap<String, FieldSchema>,
    /// The required fields.
    pub required: Vec<String>,
    /// The type's title.
    pub title: String,
    /// Always `object`.
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// A fieldset of a schema.
#[derive(Serialize, JsonSchema)]
pub struct FieldsetOut {
    /// `plone` for the standard tabs, the generated schema's name for the type's own.
    pub behavior: String,
    /// Help text.
    pub description: String,
    /// Its fields, in order.
    pub fields: Vec<String>,
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
}

/// A vocabulary link.
#[derive(Serialize, JsonSchema, Clone)]
pub struct VocabularyLink {
    /// `<site>/@vocabularies/<name>`.
    #[serde(rename = "@id")]
    pub id: String,
}

/// The items of an array field.
#[derive(Serialize, JsonSchema)]
pub struct ItemsSchema {
    /// Help text (empty).
    pub description: String,
    /// The items' factory.
    pub factory: &'static str,
    /// Title (empty).
    pub title: String,
    /// Always `string`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Where values come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vocabulary: Option<VocabularyLink>,
    /// Multiple Choice: the values offered.
    #[serde(flatten)]
    pub choices: Option<Choices>,
}

/// The values a Choice (or a Multiple Choice's items) offers, inlined as plone.restapi inlines a
/// field's own vocabulary.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Choices {
    /// `[token, title]` pairs.
    pub choices: Vec<(String, String)>,
    /// The tokens.
    #[serde(rename = "enum")]
    pub tokens: Vec<String>,
    /// The titles, in the order of the tokens.
    pub enum_names: Vec<String>,
}

impl Choices {
    fn of(f: &FieldDef) -> Option<Choices> {
        f.kind.has_values().then(|| Choices {
            choices: f
                .choice_values()
                .iter()
                .map(|v| (v.token.clone(), v.title.clone()))
                .collect(),
            tokens: f.choice_values().iter().map(|v| v.token.clone()).collect(),
            enum_names: f.choice_values().iter().map(|v| v.title.clone()).collect(),
        })
    }
}

/// Options for an array field's widget.
#[derive(Serialize, JsonSchema)]
pub struct WidgetOptions {
    /// Where values come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vocabulary: Option<VocabularyLink>,
    /// Options of the widget's pattern (a Nick site's related items: `{"recentlyUsed": true}`,
    /// the widget offers the items chosen last).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern_options: Option<Value>,
}

/// The schema of one field.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldSchema {
    /// Arrays: more items may be added.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_items: Option<bool>,
    /// The behavior it comes from (or the type's generated schema).
    pub behavior: String,
    /// The value new objects start with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// Help text.
    pub description: String,
    /// The field factory (`Text line (String)`, `Email`, ...).
    pub factory: String,
    /// Choice: the values offered.
    #[serde(flatten)]
    pub choices: Option<Choices>,
    /// Arrays: the items.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<ItemsSchema>,
    /// Longest value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// Shortest value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Label.
    pub title: String,
    /// JSON Schema type.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Arrays: values are unique.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unique_items: Option<bool>,
    /// Where values come from (single values).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vocabulary: Option<VocabularyLink>,
    /// The form widget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub widget: Option<String>,
    /// Options of the widget (arrays with a vocabulary).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub widget_options: Option<WidgetOptions>,
}

/// A fieldset addressed on its own (`@types/<Type>/<fieldset>`).
#[derive(Serialize, JsonSchema)]
pub struct FieldsetAnswer {
    /// Where it comes from.
    pub behavior: String,
    /// Help text.
    pub description: String,
    /// Its fields.
    pub fields: Vec<String>,
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
}

/// POST `@types/<Type>`: a field (`factory` one of the field factories) or a fieldset
/// (`factory: "fieldset"`).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddRequest {
    /// A field factory, or `fieldset`.
    pub factory: String,
    /// Its title (the name is made from it unless `id` is given).
    pub title: String,
    /// Help text.
    #[serde(default)]
    pub description: String,
    /// The name to use instead of one made from the title.
    #[serde(default)]
    pub id: Option<String>,
    /// Fields only: required.
    #[serde(default)]
    pub required: bool,
    /// Choice and Multiple Choice fields: the values offered.
    #[serde(default)]
    pub values: Option<ValuesIn>,
}

/// The values of a Choice or Multiple Choice field as a client sends them: a list of lines, or
/// one text of lines (as plone.schemaeditor's form), each `token` or `token|title`; or a list
/// of `{token, title}`.
#[derive(Deserialize, JsonSchema, Clone)]
#[serde(untagged)]
pub enum ValuesIn {
    /// One line per value.
    Text(String),
    /// One entry per value.
    List(Vec<ValueIn>),
}

/// One value of a Choice field as a client sends it.
#[derive(Deserialize, JsonSchema, Clone)]
#[serde(untagged)]
pub enum ValueIn {
    /// `token` or `token|title`.
    Line(String),
    /// `{token, title}`.
    Term {
        /// What is stored.
        token: String,
        /// What forms show (the token when left out).
        #[serde(default)]
        title: Option<String>,
    },
    /// `[token, title]`, as `choices` reads back.
    Pair(String, String),
}

impl ValuesIn {
    fn into_values(self) -> Vec<ChoiceValue> {
        match self {
            ValuesIn::Text(text) => text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(ChoiceValue::from_line)
                .collect(),
            ValuesIn::List(list) => list
                .into_iter()
                .map(|v| match v {
                    ValueIn::Line(l) => ChoiceValue::from_line(&l),
                    ValueIn::Term { token, title } => ChoiceValue {
                        title: title.unwrap_or_else(|| token.clone()),
                        token,
                    },
                    ValueIn::Pair(token, title) => ChoiceValue { token, title },
                })
                .collect(),
        }
    }
}

// Some fields are accepted from clients or only describe the OpenAPI document; none is read.
#[allow(dead_code)]
/// Changes to one field (every property optional; `null` clears `default`, `minLength`,
/// `maxLength`, `widget`).
#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FieldPatch {
    /// Label.
    #[serde(default)]
    pub title: Option<String>,
    /// Help text.
    #[serde(default)]
    pub description: Option<String>,
    /// Required.
    #[serde(default)]
    pub required: Option<bool>,
    /// New default.
    #[serde(default, deserialize_with = "some")]
    pub default: Option<Option<Value>>,
    /// Shortest value.
    #[serde(default, deserialize_with = "some")]
    pub min_length: Option<Option<u64>>,
    /// Longest value.
    #[serde(default, deserialize_with = "some")]
    pub max_length: Option<Option<u64>>,
    /// Widget.
    #[serde(default, deserialize_with = "some")]
    pub widget: Option<Option<String>>,
    /// Choice and Multiple Choice: the values offered.
    #[serde(default)]
    pub values: Option<ValuesIn>,
    /// Read back from a GET: a Choice's values as `[token, title]` (`values` wins).
    #[serde(default)]
    pub choices: Option<ValuesIn>,
    /// Read back from a GET; ignored (`choices` carries the values).
    #[serde(default, rename = "enum")]
    pub tokens: Option<Vec<String>>,
    /// Read back from a GET; ignored (`choices` carries the values).
    #[serde(default, rename = "enumNames")]
    pub enum_names: Option<Vec<String>>,
    /// Read back from a GET; must equal the field's factory (a field's kind cannot change).
    #[serde(default)]
    pub factory: Option<String>,
    /// Read back from a GET; ignored.
    #[serde(default)]
    pub behavior: Option<String>,
    /// Read back from a GET; ignored.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}

fn some<'de, T: Deserialize<'de>, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

// Some fields are accepted from clients or only describe the OpenAPI document; none is read.
#[allow(dead_code)]
/// A fieldset as PATCH and PUT send it.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FieldsetIn {
    /// Its id.
    pub id: String,
    /// Its title.
    #[serde(default)]
    pub title: Option<String>,
    /// Help text.
    #[serde(default)]
    pub description: Option<String>,
    /// The type's own fields to put on it.
    #[serde(default)]
    pub fields: Option<Vec<String>>,
    /// Read back from a GET; ignored.
    #[serde(default)]
    pub behavior: Option<String>,
}

/// PATCH `@types/<Type>`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchTypeRequest {
    /// Changes to fields, by name.
    #[serde(default)]
    pub properties: Option<BTreeMap<String, FieldPatch>>,
    /// Fieldsets to create or change (their fields move onto them).
    #[serde(default)]
    pub fieldsets: Option<Vec<FieldsetIn>>,
    /// The views the type offers.
    #[serde(default)]
    pub layouts: Option<Vec<String>>,
}

// Some fields are accepted from clients or only describe the OpenAPI document; none is read.
#[allow(dead_code)]
/// A property as PUT sends it: a field schema as GET answers it.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PropertyIn {
    /// Label.
    #[serde(default)]
    pub title: String,
    /// Help text.
    #[serde(default)]
    pub description: String,
    /// The factory; needed for new fields.
    #[serde(default)]
    pub factory: Option<String>,
    /// Where it comes from; fields of behaviors are left as they are.
    #[serde(default)]
    pub behavior: Option<String>,
    /// New default.
    #[serde(default)]
    pub default: Option<Value>,
    /// Shortest value.
    #[serde(default)]
    pub min_length: Option<u64>,
    /// Longest value.
    #[serde(default)]
    pub max_length: Option<u64>,
    /// Widget.
    #[serde(default)]
    pub widget: Option<String>,
    /// Choice and Multiple Choice: the values offered.
    #[serde(default)]
    pub values: Option<ValuesIn>,
    /// Read back from a GET: a Choice's values as `[token, title]` (`values` wins).
    #[serde(default)]
    pub choices: Option<ValuesIn>,
    /// Read back from a GET: a Multiple Choice's items, with their `choices`.
    #[serde(default)]
    pub items: Option<ItemsIn>,
}

/// The items of an array field as a GET answers them; only a Multiple Choice's `choices` are
/// read.
#[derive(Deserialize, JsonSchema)]
pub struct ItemsIn {
    /// The values offered.
    #[serde(default)]
    pub choices: Option<ValuesIn>,
}

// Some fields are accepted from clients or only describe the OpenAPI document; none is read.
#[allow(dead_code)]
/// PUT `@types/<Type>`: the whole schema as GET answers it.
#[derive(Deserialize, JsonSchema)]
pub struct PutTypeRequest {
    /// Every field; those no behavior of the type brings are its own fields.
    pub properties: BTreeMap<String, PropertyIn>,
    /// The fieldsets; the type's own fields go where listed.
    #[serde(default)]
    pub fieldsets: Vec<FieldsetIn>,
    /// Required fields (of the type's own fields).
    #[serde(default)]
    pub required: Vec<String>,
    /// Views.
    #[serde(default)]
    pub layouts: Option<Vec<String>>,
    /// Read back from a GET; the title is changed in the control panel.
    #[serde(default)]
    pub title: Option<String>,
    /// Read back from a GET; ignored.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}

/// PATCH `@types/<Type>/<name>`: a field's changes, or a fieldset's (`title`, `description`,
/// `fields`).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PatchMemberRequest {
    /// Label.
    #[serde(default)]
    pub title: Option<String>,
    /// Help text.
    #[serde(default)]
    pub description: Option<String>,
    /// Fields: required.
    #[serde(default)]
    pub required: Option<bool>,
    /// Fields: new default.
    #[serde(default, deserialize_with = "some")]
    pub default: Option<Option<Value>>,
    /// Fields: shortest value.
    #[serde(default, deserialize_with = "some")]
    pub min_length: Option<Option<u64>>,
    /// Fields: longest value.
    #[serde(default, deserialize_with = "some")]
    pub max_length: Option<Option<u64>>,
    /// Fields: widget.
    #[serde(default, deserialize_with = "some")]
    pub widget: Option<Option<String>>,
    /// Choice and Multiple Choice fields: the values offered.
    #[serde(default)]
    pub values: Option<ValuesIn>,
    /// Fieldsets: the type's own fields to put on it.
    #[serde(default)]
    pub fields: Option<Vec<String>>,
}

/// Logged-in callers with View on the context; anonymous callers get 401.
fn check_reader(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<()> {
    if ctx.principal.is_anonymous() {
        return Err(ctx.denied(Permission::View));
    }
    ctx.require(Permission::View, obj)
}

/// GET `<path>/@types`.
fn list(ctx: &mut Ctx<'_>, _: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    check_reader(ctx, &obj)?;
    Ok(Response::json(200, &entries(ctx, &obj)?))
}

fn entries(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Vec<TypeEntry>> {
    let base = ctx.url(&obj.path);
    let tr = crate::site::i18n::Translator::for_request(ctx)?;
    Ok(content_types::addable_types(ctx, obj)?
        .into_iter()
        .map(|a| TypeEntry {
            id_url: format!("{base}/@types/{}", a.ty.name),
            addable: a.addable,
            id: a.ty.name.clone(),
            immediately_addable: a.addable,
            title: tr.t(&a.ty.title),
        })
        .collect())
}

/// The `types` component: the list, for logged-in callers.
fn component(ctx: &Ctx<'_>, _: &Route, obj: &ContentRecord) -> Result<Value> {
    Ok(serde_json::to_value(entries(ctx, obj)?)?)
}

fn type_param(ctx: &Ctx<'_>, call: &Call<'_>) -> Result<std::sync::Arc<ContentType>> {
    let name = call.param("type").unwrap_or_default();
    content_types::require_type(ctx, name, &call.route.url(&ctx.base_url))
}

/// GET `<path>/@types/<Type>`.
fn get_schema(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    check_reader(ctx, &obj)?;
    let ty = type_param(ctx, call)?;
    let mut resp = Response::json(200, &schema(ctx, &ty));
    resp.headers
        .retain(|(n, _)| !n.eq_ignore_ascii_case("Content-Type"));
    Ok(resp.with_header("Content-Type", "application/json+schema"))
}

/// The JSON Schema of `ty`.
pub fn schema(ctx: &Ctx<'_>, ty: &ContentType) -> TypeSchema {
    let fieldsets = ty
        .fieldsets
        .iter()
        .map(|fs| fieldset_out(ctx, ty, fs))
        .filter(|fs| !fs.fields.is_empty() || fs.behavior == OWN_SCHEMA)
        .collect();
    let properties = ty
        .fields
        .iter()
        .zip(&ty.sources)
        .map(|(f, src)| (f.name.clone(), field_schema(ctx, f, src.as_deref())))
        .collect();
    let nick = ctx.profile().is_nick();
    let mut layouts = ty.data.layouts.clone();
    if layouts.is_empty() && !nick {
        // a Nick site's types list the layouts they have (Nick's: none)
        layouts.push(ty.layout.clone());
    }
    let mut out = TypeSchema {
        fieldsets,
        layouts,
        properties,
        required: ty
            .fields
            .iter()
            .filter(|f| f.required && !f.transient)
            .map(|f| f.name.clone())
            .collect(),
        title: ty.title.clone(),
        kind: "object",
    };
    if nick {
        nick_short_name(&mut out, ty);
    }
    out
}

/// Nick's short name on a Nick site: a type with Nick's `short_name` switch on shows the
/// object's id as the first field of its `settings` tab, as Nick's schemas do. It is the id a
/// POST gives the new object and a PATCH renames it to (the content API takes `id` on every
/// site), not a stored field.
fn nick_short_name(schema: &mut TypeSchema, ty: &ContentType) {
    const SHORT_NAME: &str = "short_name";
    if !ty.data.nick_switches.iter().any(|s| s == SHORT_NAME) || ty.field("id").is_some() {
        return;
    }
    let at = match schema.fieldsets.iter().position(|fs| fs.id == "settings") {
        Some(at) => at,
        None => {
            schema.fieldsets.push(FieldsetOut {
                behavior: SHORT_NAME.into(),
                description: String::new(),
                fields: Vec::new(),
                id: "settings".into(),
                title: "Settings".into(),
            });
            schema.fieldsets.len() - 1
        }
    };
    schema.fieldsets[at].fields.insert(0, "id".into());
    schema.properties.insert(
        "id".into(),
        FieldSchema {
            additional_items: None,
            behavior: SHORT_NAME.into(),
            choices: None,
            default: None,
            description: "This name will be displayed in the URL.".into(),
            factory: FieldKind::String.factory().into(),
            items: None,
            max_length: None,
            min_length: None,
            title: "Identifier".into(),
            kind: "string",
            unique_items: None,
            vocabulary: None,
            widget: None,
            widget_options: None,
        },
    );
}

fn fieldset_out(ctx: &Ctx<'_>, ty: &ContentType, fs: &FieldsetDef) -> FieldsetOut {
    let own = ty.data.fieldsets.iter().any(|f| f.id == fs.id);
    let nick = ctx
        .profile()
        .is_nick()
        .then(|| content_types::nick_behavior_of_fieldset(&fs.id))
        .flatten()
        .filter(|_| !own);
    FieldsetOut {
        behavior: nick
            .unwrap_or(if own { OWN_SCHEMA } else { "plone" })
            .to_string(),
        description: fs.description.clone(),
        fields: content_types::fieldset_fields(ty, &fs.id),
        id: fs.id.clone(),
        title: fs.title.clone(),
    }
}

/// The schema of field `f` (from behavior `source`, or the type's own).
pub fn field_schema(ctx: &Ctx<'_>, f: &FieldDef, source: Option<&str>) -> FieldSchema {
    let vocabulary = f.vocabulary.as_ref().map(|v| VocabularyLink {
        id: format!("{}/@vocabularies/{v}", ctx.base_url),
    });
    let array = f.kind.json_type() == "array";
    let default = f.default.clone().or_else(|| match f.kind {
        FieldKind::Blocks | FieldKind::BlocksLayout => Some(f.default_value()),
        _ => None,
    });
    let nick = ctx.profile().is_nick();
    // A Nick site's related items: the items titled `Related`, the widget offering the items
    // chosen last, as Nick's schemas show them.
    let nick_related = nick && f.kind == FieldKind::Uids && f.name == "relatedItems";
    FieldSchema {
        additional_items: array.then_some(true),
        behavior: match source {
            // a Nick site names the behavior as Nick's type schemas do
            Some(src) if ctx.profile().is_nick() => {
                content_types::nick_behavior_of_field(src, &f.name).unwrap_or(src)
            }
            Some(src) => src,
            None => OWN_SCHEMA,
        }
        .to_string(),
        default,
        description: f.description.clone(),
        factory: f.factory_name().to_string(),
        choices: Choices::of(f).filter(|_| !array),
        items: array.then(|| ItemsSchema {
            description: String::new(),
            factory: match f.kind {
                FieldKind::Uids => "Relation Choice",
                FieldKind::MultipleChoice => "Choice",
                _ => "Text line (String)",
            },
            title: if nick_related { "Related" } else { "" }.to_string(),
            kind: "string",
            vocabulary: vocabulary.clone().filter(|_| f.kind == FieldKind::Uids),
            choices: Choices::of(f),
        }),
        max_length: f.max_length,
        min_length: f.min_length,
        title: f.title.clone(),
        kind: f.kind.json_type(),
        unique_items: array.then_some(true),
        // a Nick site names an array's vocabulary here too, as Nick's schemas do
        vocabulary: vocabulary.clone().filter(|_| !array || nick),
        widget: f.widget_name().map(str::to_string),
        widget_options: match (vocabulary.filter(|_| array), nick_related) {
            (None, false) => None,
            (vocabulary, related) => Some(WidgetOptions {
                vocabulary,
                pattern_options: related.then(|| serde_json::json!({"recentlyUsed": true})),
            }),
        },
    }
}

/// GET `<path>/@types/<Type>/<field or fieldset>`.
fn get_member(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    check_reader(ctx, &obj)?;
    let ty = type_param(ctx, call)?;
    let name = call.param("name").unwrap_or_default();
    match content_types::member(&ty, name) {
        Some(Member::Field(f, src)) => Ok(Response::json(200, &field_schema(ctx, f, src))),
        Some(Member::Fieldset(fs, fields)) => {
            Ok(Response::json(200, &fieldset_answer(ctx, &ty, fs, fields)))
        }
        None => Err(EngineError::NotFound {
            url: call.route.url(&ctx.base_url),
            context: Some(ctx.url(&obj.path)),
        }),
    }
}

fn fieldset_answer(
    ctx: &Ctx<'_>,
    ty: &ContentType,
    fs: &FieldsetDef,
    fields: Vec<String>,
) -> FieldsetAnswer {
    let out = fieldset_out(ctx, ty, fs);
    FieldsetAnswer {
        behavior: out.behavior,
        description: fs.description.clone(),
        fields,
        id: fs.id.clone(),
        title: fs.title.clone(),
    }
}

/// POST `<path>/@types/<Type>`: add a field or a fieldset; 201 with it.
fn post(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let ty = type_param(ctx, call)?;
    let body: AddRequest = call.body()?;
    if body.factory == "fieldset" {
        let fs = content_types::add_fieldset(ctx, &ty, body.id, body.title, body.description)?;
        let ty = ctx.types()?.require(&ty.name)?;
        return Ok(Response::json(
            201,
            &fieldset_answer(ctx, &ty, &fs, Vec::new()),
        ));
    }
    let def = content_types::add_field(
        ctx,
        &ty,
        NewField {
            id: body.id,
            factory: body.factory,
            title: body.title,
            description: body.description,
            required: body.required,
            values: body.values.map(ValuesIn::into_values),
        },
    )?;
    Ok(Response::json(201, &field_schema(ctx, &def, None)))
}

fn change_of(p: FieldPatch) -> FieldChange {
    FieldChange {
        title: p.title,
        description: p.description,
        required: p.required,
        default: p.default,
        min_length: p.min_length,
        max_length: p.max_length,
        widget: p.widget,
        fieldset: None,
        values: p.values.or(p.choices).map(ValuesIn::into_values),
    }
}

/// PATCH `<path>/@types/<Type>`: change fields, fieldsets, layouts; all or nothing.
fn patch_type(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let mut ty = type_param(ctx, call)?;
    let body: PatchTypeRequest = call.body()?;
    for (name, p) in body.properties.into_iter().flatten() {
        if let Some(f) = &p.factory {
            check_same_factory(&ty, &name, f)?;
        }
        content_types::change_field(ctx, &ty, &name, change_of(p))?;
        ty = ctx.types()?.require(&ty.name)?;
    }
    for fs in body.fieldsets.into_iter().flatten() {
        apply_fieldset(ctx, &ty, fs)?;
        ty = ctx.types()?.require(&ty.name)?;
    }
    if let Some(layouts) = body.layouts {
        let mut data = ty.data.clone();
        data.layouts = layouts;
        content_types::save_type(ctx, data)?;
    }
    Ok(Response::empty(204))
}

/// Create the fieldset `fs` if the type lacks it, then set its title, description and fields.
fn apply_fieldset(ctx: &mut Ctx<'_>, ty: &ContentType, fs: FieldsetIn) -> Result<()> {
    if !ty.fieldsets.iter().any(|f| f.id == fs.id) {
        content_types::add_fieldset(
            ctx,
            ty,
            Some(fs.id.clone()),
            fs.title.clone().unwrap_or_else(|| fs.id.clone()),
            fs.description.clone().unwrap_or_default(),
        )?;
        let ty = ctx.types()?.require(&ty.name)?;
        return content_types::change_fieldset(ctx, &ty, &fs.id, None, None, fs.fields);
    }
    let own = ty.data.fieldsets.iter().any(|f| f.id == fs.id);
    let (title, description) = if own {
        (fs.title, fs.description)
    } else {
        (None, None)
    };
    content_types::change_fieldset(ctx, ty, &fs.id, title, description, fs.fields)
}

fn check_same_factory(ty: &ContentType, name: &str, factory: &str) -> Result<()> {
    if let Some(f) = ty.field(name) {
        let same = f.factory_name() == factory
            || crate::core::model::fields::factory_named(factory)
                .is_some_and(|k| k.title == f.factory_name());
        if !same {
            return Err(EngineError::bad_request(format!(
                "Field '{name}' is a '{}' field; its factory cannot change to '{factory}'",
                f.factory_name()
            )));
        }
    }
    Ok(())
}

/// PUT `<path>/@types/<Type>`: replace the type's own schema.
fn put_type(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let ty = type_param(ctx, call)?;
    let body: PutTypeRequest = call.body()?;
    let mut data = ty.data.clone();
    let from_behaviors: Vec<&str> = ty
        .fields
        .iter()
        .zip(&ty.sources)
        .filter(|(_, s)| s.is_some())
        .map(|(f, _)| f.name.as_str())
        .collect();
    let mut own = Vec::new();
    for (name, p) in &body.properties {
        if from_behaviors.contains(&name.as_str()) {
            continue;
        }
        let mut def = match data.fields.iter().find(|f| &f.name == name) {
            Some(existing) => {
                if let Some(f) = &p.factory {
                    check_same_factory(&ty, name, f)?;
                }
                existing.clone()
            }
            None => {
                let factory = p.factory.as_deref().ok_or_else(|| {
                    EngineError::bad_request(format!("New field '{name}' needs a 'factory'"))
                })?;
                let known =
                    crate::core::model::fields::factory_named(factory).ok_or_else(|| {
                        EngineError::bad_request(format!(
                            "Unknown field factory '{factory}' for field '{name}'"
                        ))
                    })?;
                let kind = known.kind;
                let mut def = FieldDef::new(name, kind);
                if known.title != kind.factory() {
                    def.factory = Some(known.title.to_string());
                }
                if kind.has_values() {
                    def.values = Some(Vec::new());
                }
                if kind == FieldKind::RelationChoice {
                    def.vocabulary = Some(content_types::RELATION_VOCABULARY.to_string());
                }
                def
            }
        };
        def.title = p.title.clone();
        def.description = p.description.clone();
        def.default = p.default.clone();
        def.min_length = p.min_length;
        def.max_length = p.max_length;
        if p.widget.is_some() {
            def.widget = p.widget.clone();
        }
        if p.values.is_some() && !def.kind.has_values() {
            return Err(EngineError::Invalid {
                field: "values".into(),
                message: format!(
                    "Field '{name}' is not a Choice or Multiple Choice field: 'values' does not \
                     apply"
                ),
            });
        }
        let values = p
            .values
            .clone()
            .or_else(|| p.choices.clone())
            .or_else(|| p.items.as_ref().and_then(|i| i.choices.clone()));
        if let Some(values) = values.filter(|_| def.kind.has_values()) {
            let values = values.into_values();
            crate::core::model::fields::check_values(name, &values)?;
            def.values = Some(values);
        }
        def.required = body.required.contains(name);
        def.fieldset = None;
        own.push(def);
    }
    data.fields = own;
    let behavior_fieldsets: Vec<String> = ty
        .fieldsets
        .iter()
        .filter(|f| !ty.data.fieldsets.iter().any(|o| o.id == f.id))
        .map(|f| f.id.clone())
        .collect();
    data.fieldsets = Vec::new();
    for fs in &body.fieldsets {
        if !behavior_fieldsets.contains(&fs.id) {
            data.fieldsets.push(FieldsetDef {
                id: fs.id.clone(),
                title: fs.title.clone().unwrap_or_else(|| fs.id.clone()),
                description: fs.description.clone().unwrap_or_default(),
            });
        }
        for name in fs.fields.iter().flatten() {
            if let Some(def) = data.fields.iter_mut().find(|f| &f.name == name) {
                def.fieldset = (fs.id != "default").then(|| fs.id.clone());
            }
        }
    }
    if let Some(layouts) = body.layouts {
        data.layouts = layouts;
    }
    for f in &data.fields {
        f.check_default()?;
    }
    content_types::save_type(ctx, data)?;
    Ok(Response::empty(204))
}

/// PATCH `<path>/@types/<Type>/<field or fieldset>`.
fn patch_member(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let ty = type_param(ctx, call)?;
    let name = call.param("name").unwrap_or_default();
    let body: PatchMemberRequest = call.body()?;
    match content_types::member(&ty, name) {
        Some(Member::Field(..)) => {
            if body.fields.is_some() {
                return Err(EngineError::bad_request(format!(
                    "'fields' applies to fieldsets; '{name}' is a field"
                )));
            }
            content_types::change_field(
                ctx,
                &ty,
                name,
                FieldChange {
                    title: body.title,
                    description: body.description,
                    required: body.required,
                    default: body.default,
                    min_length: body.min_length,
                    max_length: body.max_length,
                    widget: body.widget,
                    fieldset: None,
                    values: body.values.map(ValuesIn::into_values),
                },
            )?;
        }
        Some(Member::Fieldset(..)) => {
            content_types::change_fieldset(
                ctx,
                &ty,
                name,
                body.title,
                body.description,
                body.fields,
            )?;
        }
        None => {
            return Err(EngineError::NotFound {
                url: call.route.url(&ctx.base_url),
                context: Some(ctx.url(&obj.path)),
            })
        }
    }
    Ok(Response::empty(204))
}

/// DELETE `<path>/@types/<Type>/<field or fieldset>`.
fn delete_member(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let ty = type_param(ctx, call)?;
    let name = call.param("name").unwrap_or_default();
    match content_types::member(&ty, name) {
        Some(Member::Field(..)) => content_types::remove_field(ctx, &ty, name)?,
        Some(Member::Fieldset(..)) => content_types::remove_fieldset(ctx, &ty, name)?,
        None => {
            return Err(EngineError::NotFound {
                url: call.route.url(&ctx.base_url),
                context: Some(ctx.url(&obj.path)),
            })
        }
    }
    Ok(Response::empty(204))
}
