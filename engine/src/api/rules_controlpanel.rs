//! The content rules control panel (`@controlpanels/content-rules`): rules, their conditions
//! and actions, and the forms (JSON Schemas) of each kind. The rules themselves are in
//! [`crate::automation::rules`].
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `/@controlpanels/content-rules` | | 200, `{@id, group, title, items: [[rule summary]]}` |
//! | POST | `/@controlpanels/content-rules` | `{title, description?, event, enabled?, stop?, cascading?}` | 201, the rule |
//! | GET | `/@controlpanels/content-rules/<rule>` | | 200, the rule with its conditions, actions and the addable kinds |
//! | PATCH | `/@controlpanels/content-rules/<rule>` | any of the POST fields | 204 |
//! | DELETE | `/@controlpanels/content-rules/<rule>` | | 204 (its assignments go too) |
//! | POST | `.../<rule>/condition` or `/action` | `{type, ...settings}` | 201, the rule |
//! | GET | `.../<rule>/condition/<idx>` or `/action/<idx>` | | 200, `{@id, @schema, ...settings}` |
//! | PATCH | `.../<rule>/condition/<idx>` or `/action/<idx>` | settings, or `{"form.button.Move": "_move_up" \| "_move_down"}` | 204 |
//! | DELETE | `.../<rule>/condition/<idx>` or `/action/<idx>` | | 204 |
//!
//! A condition's or action's `type` is Plone's (`plone.actions.Logger`) or Nick's (`logger`) on
//! every site, stored as Plone's ([`crate::automation::rules::stored_kind`]). A Nick site shows
//! Nick's names, titles, descriptions and forms, lists Nick's kinds as addable, and shows a
//! rule's `assigned` and `trigger` (the panel's list: the trigger's token).
//!
//! Every route needs Manage portal.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::extract::{self, Call};
use super::router::{RouteDef, RouteTable};
use crate::automation::jobs::Setting;
use crate::automation::rules::{self, Action, Condition, ElementChange, Rule};
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;
use crate::site::profile::SiteProfile;

const PANEL: &str = "@controlpanels/content-rules";

/// Register the routes.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@controlpanels/content-rules", list)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("The content rules")
            .answers::<RulesPanel>(),
    );
    r.route(
        RouteDef::post("@controlpanels/content-rules", add)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(201)
            .summary("Add a content rule")
            .body::<RuleRequest>()
            .answers::<RuleView>(),
    );
    r.route(
        RouteDef::get("@controlpanels/content-rules/{rule}", get_rule)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("A content rule with its conditions and actions")
            .answers::<RuleView>(),
    );
    r.route(
        RouteDef::patch("@controlpanels/content-rules/{rule}", patch_rule)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Change a content rule")
            .body::<RuleRequest>(),
    );
    r.route(
        RouteDef::delete("@controlpanels/content-rules/{rule}", delete_rule)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Delete a content rule (and its assignments)"),
    );
    for (part, add, get, patch, delete) in [
        (
            "condition",
            add_condition as super::router::Handler,
            get_condition as super::router::Handler,
            patch_condition as super::router::Handler,
            delete_condition as super::router::Handler,
        ),
        (
            "action",
            add_action,
            get_action,
            patch_action,
            delete_action,
        ),
    ] {
        let (p_add, p_one): (&'static str, &'static str) = if part == "condition" {
            (
                "@controlpanels/content-rules/{rule}/condition",
                "@controlpanels/content-rules/{rule}/condition/{idx}",
            )
        } else {
            (
                "@controlpanels/content-rules/{rule}/action",
                "@controlpanels/content-rules/{rule}/action/{idx}",
            )
        };
        r.route(
            RouteDef::post(p_add, add)
                .root_only()
                .requires(Permission::ManagePortal)
                .status(201)
                .summary("Add a condition or action to a rule (`type` names its kind)")
                .body::<Map<String, Value>>()
                .answers::<RuleView>(),
        );
        r.route(
            RouteDef::get(p_one, get)
                .root_only()
                .requires(Permission::ManagePortal)
                .summary("A condition or action of a rule, with its schema")
                .answers::<Map<String, Value>>(),
        );
        r.route(
            RouteDef::patch(p_one, patch)
                .root_only()
                .requires(Permission::ManagePortal)
                .status(204)
                .summary("Change a condition or action, or move it up or down")
                .body::<Map<String, Value>>(),
        );
        r.route(
            RouteDef::delete(p_one, delete)
                .root_only()
                .requires(Permission::ManagePortal)
                .status(204)
                .summary("Remove a condition or action from a rule"),
        );
    }
}

// ---------------------------------------------------------------- the panel

/// The content rules panel.
#[derive(Serialize, JsonSchema)]
pub struct RulesPanel {
    /// `/@controlpanels/content-rules`.
    #[serde(rename = "@id")]
    pub id: String,
    /// `Content`.
    pub group: &'static str,
    /// `Content Rules`.
    pub title: &'static str,
    /// One list of every rule (Plone nests it).
    pub items: Vec<Vec<RuleSummary>>,
}

/// A rule in the panel's list.
#[derive(Serialize, JsonSchema)]
pub struct RuleSummary {
    /// Its URL.
    #[serde(rename = "@id")]
    pub url: String,
    /// Whether it is assigned anywhere.
    pub assigned: bool,
    /// Its description.
    pub description: String,
    /// Whether it is enabled.
    pub enabled: bool,
    /// Its id.
    pub id: String,
    /// CSS classes Plone's panel uses.
    pub row_class: String,
    /// Its title.
    pub title: String,
    /// The title of its trigger (Nick's site: its token).
    pub trigger: String,
}

fn rule_url(ctx: &Ctx<'_>, id: &str) -> String {
    format!("{}/{PANEL}/{id}", ctx.base_url)
}

fn list(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let mut items = Vec::new();
    for r in rules::all(ctx)? {
        let assigned = rules::is_assigned(ctx, &r.id)?;
        let trigger = if ctx.profile().is_nick() {
            r.trigger_named(ctx.profile()).to_string()
        } else {
            rules::trigger_title(&r.event).to_string()
        };
        items.push(RuleSummary {
            url: rule_url(ctx, &r.id),
            assigned,
            description: r.description.clone(),
            enabled: r.enabled,
            row_class: format!(
                "trigger-{} state-{} assignment-{}",
                r.event.to_lowercase(),
                if r.enabled { "enabled" } else { "disabled" },
                if assigned { "assigned" } else { "unassigned" }
            ),
            id: r.id,
            title: r.title,
            trigger,
        });
    }
    Ok(Response::json(
        200,
        &RulesPanel {
            id: format!("{}/{PANEL}", ctx.base_url),
            group: "Content",
            title: "Content Rules",
            items: vec![items],
        },
    ))
}

// `form.button.Save` is accepted from Volto's form and not read.
#[allow(dead_code)]
/// The fields of a rule (POST: `title` and `event` required; PATCH: any).
#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct RuleRequest {
    /// Its id: ignored on POST (ids are given out), on PATCH it must be the rule's own (Volto's
    /// rules list sends it back).
    pub id: Option<String>,
    /// Sent by Volto's rule form; ignored.
    #[serde(rename = "form.button.Save")]
    pub save: Option<bool>,
    /// Its title.
    pub title: Option<String>,
    /// Its description.
    pub description: Option<String>,
    /// Its trigger: a token of `@vocabularies/plone.contentrules.events`, or its title.
    pub event: Option<String>,
    /// Whether it runs (default true).
    pub enabled: Option<bool>,
    /// Whether no further rules run after it (default false).
    pub stop: Option<bool>,
    /// Whether events its actions cause may trigger rules (default false).
    pub cascading: Option<bool>,
    /// The key webhooks are signed with (default: a random one).
    pub secret: Option<String>,
}

/// A condition or action in a rule's listing.
#[derive(Serialize, JsonSchema)]
pub struct ElementView {
    /// What it is.
    pub title: String,
    /// More about it.
    pub description: String,
    /// What it checks or does.
    pub summary: String,
    /// Its position.
    pub idx: usize,
    /// Whether it is the first.
    pub first: bool,
    /// Whether it is the last.
    pub last: bool,
    /// Its URL.
    pub editview: String,
}

/// A kind of condition or action that can be added.
#[derive(Serialize, JsonSchema)]
pub struct AddableKind {
    /// The schema of its settings.
    #[serde(rename = "@schema")]
    pub schema: Value,
    /// Its `type` (Nick's on a Nick site).
    pub addview: &'static str,
    /// What it does.
    pub description: &'static str,
    /// Its title.
    pub title: &'static str,
}

impl AddableKind {
    /// One of Nick's kinds (a Nick site's answer), with Nick's name, texts and form.
    pub(crate) fn nick(n: &'static rules::NickKind) -> AddableKind {
        AddableKind {
            schema: n.schema.clone(),
            addview: n.nick.as_str(),
            description: n.description.as_str(),
            title: n.title.as_str(),
        }
    }
}

/// A rule as the panel shows it.
#[derive(Serialize, JsonSchema)]
pub struct RuleView {
    /// Its URL.
    #[serde(rename = "@id")]
    pub url: String,
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its description.
    pub description: String,
    /// Its trigger (token).
    pub event: String,
    /// Whether it runs.
    pub enabled: bool,
    /// Whether no further rules run after it.
    pub stop: bool,
    /// Whether its actions may trigger rules.
    pub cascading: bool,
    /// Whether it is assigned anywhere (Nick's site only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assigned: Option<bool>,
    /// Its trigger token again (Nick's site only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// `Content`.
    pub group: &'static str,
    /// The key its webhooks are signed with.
    pub secret: String,
    /// The objects it is assigned to: `{@id, title}` (Nick's site: `{url, title, description}`).
    pub assignments: Vec<Value>,
    /// Its conditions.
    pub conditions: Vec<ElementView>,
    /// Its actions.
    pub actions: Vec<ElementView>,
    /// The kinds of conditions that can be added.
    pub addable_conditions: Vec<AddableKind>,
    /// The kinds of actions that can be added.
    pub addable_actions: Vec<AddableKind>,
}

/// The form of the stored kind `kind`: Nick's form on a Nick site (for the kinds Nick has).
fn schema_of(profile: SiteProfile, kind: &str) -> Value {
    match rules::nick_kind(kind) {
        Some(n) if profile.is_nick() => n.schema.clone(),
        _ => settings_schema(rules::settings_of(kind)),
    }
}

/// The `type` of the stored kind `kind` as the site shows it (Nick's name on a Nick site).
fn shown_kind(profile: SiteProfile, kind: &str) -> String {
    match rules::nick_kind(kind) {
        Some(n) if profile.is_nick() => n.nick.clone(),
        _ => kind.to_string(),
    }
}

/// The form of a kind's settings: a JSON Schema with one fieldset.
#[derive(Serialize)]
struct SettingsSchema {
    #[serde(rename = "type")]
    ty: &'static str,
    fieldsets: [Fieldset; 1],
    properties: std::collections::BTreeMap<&'static str, SettingSchema>,
    required: Vec<&'static str>,
}

/// The one fieldset of a settings form.
#[derive(Serialize)]
struct Fieldset {
    id: &'static str,
    title: &'static str,
    fields: Vec<&'static str>,
}

/// One setting in a settings form.
#[derive(Serialize)]
struct SettingSchema {
    title: &'static str,
    #[serde(rename = "type")]
    ty: &'static str,
    description: &'static str,
    /// Lists hold strings.
    #[serde(skip_serializing_if = "Option::is_none")]
    items: Option<ItemsSchema>,
}

/// What a list setting holds.
#[derive(Serialize)]
struct ItemsSchema {
    #[serde(rename = "type")]
    ty: &'static str,
}

/// The JSON Schema of a form with `fields` (a rule condition's or action's settings, a scheduled
/// action's parameters), as Volto's forms read it.
pub fn settings_schema(fields: &[Setting]) -> Value {
    let schema = SettingsSchema {
        ty: "object",
        fieldsets: [Fieldset {
            id: "default",
            title: "Default",
            fields: fields.iter().map(|f| f.0).collect(),
        }],
        properties: fields
            .iter()
            .map(|(name, title, ty, _)| {
                let items = (*ty == "array").then_some(ItemsSchema { ty: "string" });
                (
                    *name,
                    SettingSchema {
                        title,
                        ty,
                        description: "",
                        items,
                    },
                )
            })
            .collect(),
        required: fields.iter().filter(|f| f.3).map(|f| f.0).collect(),
    };
    serde_json::to_value(schema).unwrap_or(Value::Null)
}

/// The kinds that can be added: ours (Plone's `type`s, and the webhook), or on a Nick site
/// Nick's kinds (`nick` is Nick's list of them), with Nick's names, texts and forms.
fn addable(
    profile: SiteProfile,
    kinds: &'static [(&'static str, &'static str, &'static str)],
    nick: &'static [rules::NickKind],
) -> Vec<AddableKind> {
    if profile.is_nick() {
        return nick.iter().map(AddableKind::nick).collect();
    }
    kinds
        .iter()
        .map(|(t, title, d)| AddableKind {
            schema: schema_of(profile, t),
            addview: t,
            description: d,
            title,
        })
        .collect()
}

/// The title and description of the stored kind `kind` (Nick's on a Nick site).
fn kind_info(
    profile: SiteProfile,
    kinds: &'static [(&'static str, &'static str, &'static str)],
    kind: &str,
) -> (&'static str, &'static str) {
    if let Some(n) = rules::nick_kind(kind).filter(|_| profile.is_nick()) {
        return (n.title.as_str(), n.description.as_str());
    }
    kinds
        .iter()
        .find(|(t, _, _)| *t == kind)
        .map(|(_, t, d)| (*t, *d))
        .unwrap_or(("", ""))
}

fn view(ctx: &Ctx<'_>, r: &Rule) -> Result<RuleView> {
    let profile = ctx.profile();
    let url = rule_url(ctx, &r.id);
    let elements = |items: Vec<(String, String)>, kinds, part: &str| -> Vec<ElementView> {
        let n = items.len();
        items
            .into_iter()
            .enumerate()
            .map(|(i, (kind, summary))| {
                let (title, description) = kind_info(profile, kinds, &kind);
                ElementView {
                    title: title.into(),
                    description: description.into(),
                    summary,
                    idx: i,
                    first: i == 0,
                    last: i + 1 == n,
                    editview: format!("{url}/{part}/{i}"),
                }
            })
            .collect()
    };
    let assigned = rules::assigned_to(ctx, &r.id)?;
    let nick = profile.is_nick();
    let (is_assigned, trigger) = if nick {
        (
            Some(!assigned.is_empty()),
            Some(r.trigger_named(profile).to_string()),
        )
    } else {
        (None, None)
    };
    let assignments = assigned
        .into_iter()
        .map(|o| {
            let title = o.fields.get("title");
            if nick {
                let description = o.fields.get("description").cloned();
                json!({"url": ctx.url(&o.path), "title": title,
                       "description": description.unwrap_or_else(|| json!(""))})
            } else {
                json!({"@id": ctx.url(&o.path), "title": title})
            }
        })
        .collect();
    Ok(RuleView {
        url: url.clone(),
        id: r.id.clone(),
        title: r.title.clone(),
        description: r.description.clone(),
        event: r.trigger_named(profile).to_string(),
        enabled: r.enabled,
        stop: r.stop,
        cascading: r.cascading,
        assigned: is_assigned,
        trigger,
        group: "Content",
        secret: r.secret.clone(),
        assignments,
        conditions: elements(
            r.conditions
                .iter()
                .map(|c| (c.kind(), c.summary()))
                .collect(),
            rules::CONDITION_KINDS,
            "condition",
        ),
        actions: elements(
            r.actions.iter().map(|a| (a.kind(), a.summary())).collect(),
            rules::ACTION_KINDS,
            "action",
        ),
        addable_conditions: addable(
            profile,
            rules::CONDITION_KINDS,
            &rules::nick_kinds().conditions,
        ),
        addable_actions: addable(profile, rules::ACTION_KINDS, &rules::nick_kinds().actions),
    })
}

impl From<RuleRequest> for rules::RuleChanges {
    fn from(b: RuleRequest) -> Self {
        rules::RuleChanges {
            id: b.id,
            title: b.title,
            description: b.description,
            event: b.event,
            enabled: b.enabled,
            stop: b.stop,
            cascading: b.cascading,
            secret: b.secret,
        }
    }
}

fn add(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let body: RuleRequest = call.body()?;
    let rule = rules::create_from(ctx, body.into())?;
    let v = view(ctx, &rule)?;
    Ok(Response::json(201, &v).with_header("Location", &v.url))
}

fn rule_param(ctx: &Ctx<'_>, call: &Call<'_>) -> Result<Rule> {
    rules::require(ctx, call.param("rule").unwrap_or_default())
}

fn get_rule(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let rule = rule_param(ctx, call)?;
    Ok(Response::json(200, &view(ctx, &rule)?))
}

fn patch_rule(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let rule = rule_param(ctx, call)?;
    let body: RuleRequest = call.body()?;
    rules::update(ctx, rule, body.into())?;
    Ok(Response::empty(204))
}

fn delete_rule(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let rule = rule_param(ctx, call)?;
    rules::delete(ctx, &rule.id)?;
    Ok(Response::empty(204))
}

/// A new condition or action from a request body; its `type` may be Plone's (stored) name or
/// Nick's (`logger`, `transition_workflow`, ...), on every site.
fn parse_element<T: serde::de::DeserializeOwned>(
    mut body: Map<String, Value>,
    kinds: &'static [(&'static str, &'static str, &'static str)],
    what: &str,
) -> Result<T> {
    let given = body.get("type").and_then(Value::as_str).unwrap_or_default();
    let kind = rules::stored_kind(given).to_string();
    if !kinds.iter().any(|(t, _, _)| *t == kind) {
        return Err(EngineError::Invalid {
            field: "type".into(),
            message: format!(
                "Unknown {what} type '{kind}' in 'type'; known: {}",
                kinds.iter().map(|k| k.0).collect::<Vec<_>>().join(", ")
            ),
        });
    }
    body.insert("type".into(), Value::String(kind));
    extract::from_value(Value::Object(body), what)
}

fn index(call: &Call<'_>, len: usize, what: &str) -> Result<usize> {
    let raw = call.param("idx").unwrap_or_default();
    raw.parse::<usize>()
        .ok()
        .filter(|i| *i < len)
        .ok_or_else(|| EngineError::NotFound {
            url: format!("{what} {raw}"),
            context: None,
        })
}

fn add_condition(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let rule = rule_param(ctx, call)?;
    let body: Map<String, Value> = call.body()?;
    let c: Condition = parse_element(body, rules::CONDITION_KINDS, "condition")?;
    let rule = rules::change_conditions(ctx, rule, ElementChange::Add(c))?;
    let v = view(ctx, &rule)?;
    Ok(Response::json(201, &v).with_header("Location", &v.url))
}

fn add_action(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let rule = rule_param(ctx, call)?;
    let body: Map<String, Value> = call.body()?;
    let a: Action = parse_element(body, rules::ACTION_KINDS, "action")?;
    let rule = rules::change_actions(ctx, rule, ElementChange::Add(a))?;
    let v = view(ctx, &rule)?;
    Ok(Response::json(201, &v).with_header("Location", &v.url))
}

fn element_answer(ctx: &Ctx<'_>, call: &Call<'_>, value: Value, part: &str) -> Response {
    let mut m = match value {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let kind = m
        .remove("type")
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    m.insert(
        "@id".into(),
        json!(format!(
            "{}/{part}/{}",
            rule_url(ctx, call.param("rule").unwrap_or_default()),
            call.param("idx").unwrap_or_default()
        )),
    );
    let profile = ctx.profile();
    m.insert("@schema".into(), schema_of(profile, &kind));
    m.insert("type".into(), json!(shown_kind(profile, &kind)));
    Response::json(200, &m)
}

fn get_condition(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let rule = rule_param(ctx, call)?;
    let i = index(call, rule.conditions.len(), "condition")?;
    let v = serde_json::to_value(&rule.conditions[i]).unwrap_or(Value::Null);
    Ok(element_answer(ctx, call, v, "condition"))
}

fn get_action(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let rule = rule_param(ctx, call)?;
    let i = index(call, rule.actions.len(), "action")?;
    let v = serde_json::to_value(&rule.actions[i]).unwrap_or(Value::Null);
    Ok(element_answer(ctx, call, v, "action"))
}

/// The move request of an element: `Some(true)` up, `Some(false)` down, `None` an edit.
fn move_of(body: &Map<String, Value>) -> Result<Option<bool>> {
    match body.get("form.button.Move") {
        None => Ok(None),
        Some(v) => match v.as_str() {
            Some("_move_up") => Ok(Some(true)),
            Some("_move_down") => Ok(Some(false)),
            _ => Err(EngineError::Invalid {
                field: "form.button.Move".into(),
                message: "'form.button.Move' must be '_move_up' or '_move_down'".into(),
            }),
        },
    }
}

fn merged<T: Serialize + serde::de::DeserializeOwned>(
    old: &T,
    body: Map<String, Value>,
    what: &str,
) -> Result<T> {
    let mut m = match serde_json::to_value(old) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    for (k, v) in body {
        if k == "@id" || k == "@schema" {
            continue; // what GET shows of it, sent back by forms
        }
        if k == "type" && v.as_str().map(rules::stored_kind) != m["type"].as_str() {
            return Err(EngineError::Invalid {
                field: "type".into(),
                message: format!("The {what}'s 'type' cannot change; delete it and add another"),
            });
        }
        if k != "type" {
            m.insert(k, v);
        }
    }
    extract::from_value(Value::Object(m), what)
}

fn patch_condition(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let rule = rule_param(ctx, call)?;
    let i = index(call, rule.conditions.len(), "condition")?;
    let body: Map<String, Value> = call.body()?;
    let change = match move_of(&body)? {
        Some(up) => ElementChange::Move(i, up),
        None => ElementChange::Replace(i, merged(&rule.conditions[i], body, "condition")?),
    };
    rules::change_conditions(ctx, rule, change)?;
    Ok(Response::empty(204))
}

fn patch_action(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let rule = rule_param(ctx, call)?;
    let i = index(call, rule.actions.len(), "action")?;
    let body: Map<String, Value> = call.body()?;
    let change = match move_of(&body)? {
        Some(up) => ElementChange::Move(i, up),
        None => ElementChange::Replace(i, merged(&rule.actions[i], body, "action")?),
    };
    rules::change_actions(ctx, rule, change)?;
    Ok(Response::empty(204))
}

fn delete_condition(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let rule = rule_param(ctx, call)?;
    let i = index(call, rule.conditions.len(), "condition")?;
    rules::change_conditions(ctx, rule, ElementChange::Remove(i))?;
    Ok(Response::empty(204))
}

fn delete_action(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let rule = rule_param(ctx, call)?;
    let i = index(call, rule.actions.len(), "action")?;
    rules::change_actions(ctx, rule, ElementChange::Remove(i))?;
    Ok(Response::empty(204))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nicks_kinds_map_to_stored_kinds() {
        let k = rules::nick_kinds();
        assert_eq!(k.conditions.len(), 5);
        assert_eq!(k.actions.len(), 7);
        for n in &k.conditions {
            assert!(
                rules::CONDITION_KINDS.iter().any(|c| c.0 == n.plone),
                "{}",
                n.nick
            );
        }
        for n in &k.actions {
            assert!(
                rules::ACTION_KINDS.iter().any(|c| c.0 == n.plone),
                "{}",
                n.nick
            );
        }
        assert_eq!(rules::stored_kind("logger"), "plone.actions.Logger");
        assert_eq!(
            rules::stored_kind("transition_workflow"),
            "plone.actions.Workflow"
        );
        assert_eq!(
            rules::stored_kind("plone.actions.Mail"),
            "plone.actions.Mail"
        );
        assert_eq!(
            shown_kind(SiteProfile::Nick, "plone.conditions.WorkflowState"),
            "workflow_state"
        );
        assert_eq!(
            shown_kind(SiteProfile::Plone, "plone.conditions.WorkflowState"),
            "plone.conditions.WorkflowState"
        );
    }

    #[test]
    fn a_settings_form_is_the_schema_volto_reads() {
        let mail =
            serde_json::to_string(&schema_of(SiteProfile::Plone, "plone.actions.Mail")).unwrap();
        assert_eq!(
            mail,
            r#"{"fieldsets":[{"fields":["subject","source","recipients","exclude_actor","message"],"id":"default","title":"Default"}],"properties":{"exclude_actor":{"description":"","title":"Exclude actor from recipients","type":"boolean"},"message":{"description":"","title":"Message","type":"string"},"recipients":{"description":"","title":"Email recipients","type":"string"},"source":{"description":"","title":"Email source","type":"string"},"subject":{"description":"","title":"Subject","type":"string"}},"required":["subject","recipients","message"],"type":"object"}"#
        );
        let types = serde_json::to_string(&schema_of(
            SiteProfile::Plone,
            "plone.conditions.PortalType",
        ))
        .unwrap();
        assert_eq!(
            types,
            r#"{"fieldsets":[{"fields":["check_types"],"id":"default","title":"Default"}],"properties":{"check_types":{"description":"","items":{"type":"string"},"title":"Content type","type":"array"}},"required":["check_types"],"type":"object"}"#
        );
        assert_eq!(
            serde_json::to_string(&schema_of(SiteProfile::Plone, "unknown")).unwrap(),
            r#"{"fieldsets":[{"fields":[],"id":"default","title":"Default"}],"properties":{},"required":[],"type":"object"}"#
        );
    }
}
