//! Content rules, jobs and mail (the rules themselves are in [`crate::automation::rules`], the outbox in
//! [`crate::automation::jobs`]):
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
//! | GET | `<path>/@content-rules` | | 200, `{content-rules: {acquired_rules, assignable_rules, assigned_rules}}` |
//! | POST | `<path>/@content-rules/<rule>` | | 201, `{message}` |
//! | PATCH | `<path>/@content-rules` | one `form.button.*` flag and `rule_ids` | 200, `{message}` |
//! | DELETE | `<path>/@content-rules` | `{rule_ids}` | 204 |
//! | GET | `/@jobs`, `/@jobs/<uuid>` | | 200, jobs / a job |
//! | GET | `/@jobs/<uuid>/result` | | 200, the job's `result` |
//! | DELETE | `/@jobs/<uuid>` | | 204 |
//! | POST | `/@jobs/<uuid>/abort`, `/@jobs/<uuid>/retry` | | 204 |
//! | GET | `/@scheduled-jobs`, `/@scheduled-jobs/<id>` | | 200, scheduled jobs / one (`next_run`, `last_run`) |
//! | POST | `/@scheduled-jobs` | `{id, title, description?, enabled?, action, params?, schedule}` | 201, the scheduled job |
//! | PATCH | `/@scheduled-jobs/<id>` | any of those | 204 |
//! | DELETE | `/@scheduled-jobs/<id>` | | 204 |
//! | POST | `/@scheduled-jobs/<id>/start` | | 204 (runs it now: the run is a job) |
//! | GET | `/@scheduled-job-actions` | | 200, the actions with their parameters' schema |
//! | POST | `/@email-send` | `{to, from, message, subject?, name?}` | 204 (queued in the outbox) |
//! | POST | `/@email-notification` | `{from, message, subject?, name?}` | 204 (to the site's address) |
//! | POST | `/@users/<id>/@email-notification` | `{from, message, subject?, name?}` | 204 (to the user's address; logged-in callers) |
//!
//! The panel and the jobs need Manage portal; `@content-rules` needs Modify on the object;
//! `@email-send` Manage portal; `@email-notification` is open to everyone.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::extract::{self, Call};
use super::router::{Registry, RouteDef};
use crate::automation::jobs::{self, Delivery, Job};
use crate::automation::rules::{self, Action, Condition, Rule};
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

const PANEL: &str = "@controlpanels/content-rules";

/// Register the routes.
pub fn register(r: &mut Registry) {
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
    r.route(
        RouteDef::get("@content-rules", object_rules)
            .requires(Permission::Modify)
            .summary("The rules acquired from above, assignable here, and assigned here")
            .answers::<ObjectRules>(),
    );
    r.route(
        RouteDef::post("@content-rules/{rule}", assign)
            .requires(Permission::Modify)
            .status(201)
            .summary("Assign a rule here")
            .answers::<Message>(),
    );
    r.route(
        RouteDef::patch("@content-rules", patch_assignments)
            .requires(Permission::Modify)
            .summary("Enable, disable, bubble or stop bubbling assigned rules")
            .body::<AssignmentPatch>()
            .answers::<Message>(),
    );
    r.route(
        RouteDef::delete("@content-rules", unassign)
            .requires(Permission::Modify)
            .status(204)
            .summary("Unassign rules from here")
            .body::<RuleIds>(),
    );
    r.route(
        RouteDef::get("@jobs", list_jobs)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("Every job (outbox deliveries, runs), oldest first")
            .answers::<Vec<JobView>>(),
    );
    r.route(
        RouteDef::get("@jobs/{id}", get_job)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("A job")
            .answers::<JobView>(),
    );
    r.route(
        RouteDef::get("@jobs/{id}/result", job_result)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("What a job produced (its `result`)")
            .answers::<Map<String, Value>>(),
    );
    r.route(
        RouteDef::delete("@jobs/{id}", delete_job)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Delete a job (a queued delivery is not sent)"),
    );
    r.route(
        RouteDef::post("@jobs/{id}/abort", abort_job)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Abort a queued or running job"),
    );
    r.route(
        RouteDef::post("@jobs/{id}/retry", retry_job)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Queue a failed or aborted delivery again"),
    );
    r.route(
        RouteDef::post("@users/{id}/@email-notification", email_user)
            .root_only()
            .checked_by_handler()
            .status(204)
            .summary("Send a mail to a user (through the outbox); logged-in callers only")
            .body::<EmailNotification>(),
    );
    r.route(
        RouteDef::get("@scheduled-jobs", list_schedules)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("Every scheduled job")
            .answers::<Vec<ScheduleView>>(),
    );
    r.route(
        RouteDef::post("@scheduled-jobs", add_schedule)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(201)
            .summary("Add a scheduled job (an action run on a cron schedule)")
            .body::<ScheduleRequest>()
            .answers::<ScheduleView>(),
    );
    r.route(
        RouteDef::get("@scheduled-jobs/{id}", get_schedule)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("A scheduled job")
            .answers::<ScheduleView>(),
    );
    r.route(
        RouteDef::patch("@scheduled-jobs/{id}", patch_schedule)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Change a scheduled job")
            .body::<ScheduleRequest>(),
    );
    r.route(
        RouteDef::delete("@scheduled-jobs/{id}", delete_schedule)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Delete a scheduled job (its past runs stay in @jobs)"),
    );
    r.route(
        RouteDef::post("@scheduled-jobs/{id}/start", start_schedule)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Run a scheduled job now (the run is a job)"),
    );
    r.route(
        RouteDef::get("@scheduled-job-actions", schedule_actions)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("The actions a scheduled job can run, with their parameters' schema")
            .answers::<Vec<AddableKind>>(),
    );
    r.route(
        RouteDef::post("@email-send", email_send)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Send a mail to any address (through the outbox)")
            .body::<EmailSend>(),
    );
    r.route(
        RouteDef::post("@email-notification", email_notification)
            .root_only()
            .status(204)
            .summary("Send a mail to the site's address (contact form; through the outbox)")
            .body::<EmailNotification>(),
    );
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
    /// The title of its trigger.
    pub trigger: String,
}

fn rule_url(ctx: &Ctx<'_>, id: &str) -> String {
    format!("{}/{PANEL}/{id}", ctx.base_url)
}

fn list(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let mut items = Vec::new();
    for r in rules::all(ctx)? {
        let assigned = rules::is_assigned(ctx, &r.id)?;
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
            trigger: rules::trigger_title(&r.event).to_string(),
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
    /// Its `type`.
    pub addview: &'static str,
    /// What it does.
    pub description: &'static str,
    /// Its title.
    pub title: &'static str,
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
    /// `Content`.
    pub group: &'static str,
    /// The key its webhooks are signed with.
    pub secret: String,
    /// The paths of the objects it is assigned to.
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

/// The settings fields of each kind: (name, title, JSON type, required).
fn fields_of(kind: &str) -> &'static [(&'static str, &'static str, &'static str, bool)] {
    match kind {
        "plone.conditions.PortalType" => &[("check_types", "Content type", "array", true)],
        "plone.conditions.FileExtension" => &[("file_extension", "File extension", "string", true)],
        "plone.conditions.WorkflowState" => &[("wf_states", "Workflow state", "array", true)],
        "plone.conditions.WorkflowTransition" => {
            &[("wf_transitions", "Workflow transition", "array", true)]
        }
        "plone.conditions.Group" => &[("group_names", "Group name", "array", true)],
        "plone.conditions.Role" => &[("role_names", "Roles", "array", true)],
        "plone.actions.Logger" => &[
            ("targetLogger", "Logger name", "string", true),
            ("loggingLevel", "Logging level", "integer", true),
            ("message", "Message", "string", true),
        ],
        "plone.actions.Notify" => &[
            ("message", "Message", "string", true),
            ("message_type", "Message type", "string", true),
        ],
        "plone.actions.Copy" | "plone.actions.Move" => {
            &[("target_folder", "Target folder", "string", true)]
        }
        "plone.actions.Workflow" => &[("transition", "Transition", "string", true)],
        "plone.actions.Versioning" => &[("comment", "Comment", "string", false)],
        "plone.actions.Mail" => &[
            ("subject", "Subject", "string", true),
            ("source", "Email source", "string", false),
            ("recipients", "Email recipients", "string", true),
            (
                "exclude_actor",
                "Exclude actor from recipients",
                "boolean",
                false,
            ),
            ("message", "Message", "string", true),
        ],
        "nick.actions.Webhook" => &[("url", "URL", "string", true)],
        _ => &[],
    }
}

fn schema_of(kind: &str) -> Value {
    schema_for(fields_of(kind))
}

fn schema_for(fields: &[(&'static str, &'static str, &'static str, bool)]) -> Value {
    let mut props = Map::new();
    for (name, title, ty, _) in fields {
        let mut p = json!({"title": title, "type": ty, "description": ""});
        if *ty == "array" {
            p["items"] = json!({"type": "string"});
        }
        props.insert((*name).to_string(), p);
    }
    json!({
        "type": "object",
        "fieldsets": [{"id": "default", "title": "Default",
            "fields": fields.iter().map(|f| f.0).collect::<Vec<_>>()}],
        "properties": props,
        "required": fields.iter().filter(|f| f.3).map(|f| f.0).collect::<Vec<_>>(),
    })
}

fn addable(kinds: &'static [(&'static str, &'static str, &'static str)]) -> Vec<AddableKind> {
    kinds
        .iter()
        .map(|(t, title, d)| AddableKind {
            schema: schema_of(t),
            addview: t,
            description: d,
            title,
        })
        .collect()
}

fn kind_info(
    kinds: &'static [(&'static str, &'static str, &'static str)],
    kind: &str,
) -> (&'static str, &'static str) {
    kinds
        .iter()
        .find(|(t, _, _)| *t == kind)
        .map(|(_, t, d)| (*t, *d))
        .unwrap_or(("", ""))
}

fn view(ctx: &Ctx<'_>, r: &Rule) -> Result<RuleView> {
    let url = rule_url(ctx, &r.id);
    let elements = |items: Vec<(String, String)>, kinds, part: &str| -> Vec<ElementView> {
        let n = items.len();
        items
            .into_iter()
            .enumerate()
            .map(|(i, (kind, summary))| {
                let (title, description) = kind_info(kinds, &kind);
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
    let assignments = rules::assigned_to(ctx, &r.id)?
        .into_iter()
        .map(|o| json!({"@id": ctx.url(&o.path), "title": o.fields.get("title")}))
        .collect();
    Ok(RuleView {
        url: url.clone(),
        id: r.id.clone(),
        title: r.title.clone(),
        description: r.description.clone(),
        event: r.event.clone(),
        enabled: r.enabled,
        stop: r.stop,
        cascading: r.cascading,
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
        addable_conditions: addable(rules::CONDITION_KINDS),
        addable_actions: addable(rules::ACTION_KINDS),
    })
}

fn add(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let body: RuleRequest = call.body()?;
    let rule = rules::create(
        ctx,
        Rule {
            id: String::new(),
            title: body.title.unwrap_or_default(),
            description: body.description.unwrap_or_default(),
            event: body.event.ok_or_else(|| EngineError::Invalid {
                field: "event".into(),
                message: "'event' is required".into(),
            })?,
            enabled: body.enabled.unwrap_or(true),
            stop: body.stop.unwrap_or(false),
            cascading: body.cascading.unwrap_or(false),
            conditions: Vec::new(),
            actions: Vec::new(),
            secret: body.secret.unwrap_or_default(),
        },
    )?;
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
    let mut rule = rule_param(ctx, call)?;
    let body: RuleRequest = call.body()?;
    if body.id.as_ref().is_some_and(|id| *id != rule.id) {
        return Err(EngineError::Invalid {
            field: "id".into(),
            message: format!("'id' cannot change (it is '{}')", rule.id),
        });
    }
    set(&mut rule.title, body.title);
    set(&mut rule.description, body.description);
    set(&mut rule.event, body.event);
    set(&mut rule.enabled, body.enabled);
    set(&mut rule.stop, body.stop);
    set(&mut rule.cascading, body.cascading);
    if let Some(s) = body.secret {
        if s.is_empty() {
            return Err(EngineError::Invalid {
                field: "secret".into(),
                message: "'secret' must not be empty".into(),
            });
        }
        rule.secret = s;
    }
    rules::save(ctx, &rule)?;
    Ok(Response::empty(204))
}

fn delete_rule(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let rule = rule_param(ctx, call)?;
    rules::delete(ctx, &rule.id)?;
    Ok(Response::empty(204))
}

fn parse_element<T: serde::de::DeserializeOwned>(
    body: Map<String, Value>,
    kinds: &'static [(&'static str, &'static str, &'static str)],
    what: &str,
) -> Result<T> {
    let kind = body.get("type").and_then(Value::as_str).unwrap_or_default();
    if !kinds.iter().any(|(t, _, _)| *t == kind) {
        return Err(EngineError::Invalid {
            field: "type".into(),
            message: format!(
                "Unknown {what} type '{kind}' in 'type'; known: {}",
                kinds.iter().map(|k| k.0).collect::<Vec<_>>().join(", ")
            ),
        });
    }
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
    let mut rule = rule_param(ctx, call)?;
    let body: Map<String, Value> = call.body()?;
    let c: Condition = parse_element(body, rules::CONDITION_KINDS, "condition")?;
    rule.conditions.push(c);
    rules::save(ctx, &rule)?;
    let v = view(ctx, &rule)?;
    Ok(Response::json(201, &v).with_header("Location", &v.url))
}

fn add_action(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let mut rule = rule_param(ctx, call)?;
    let body: Map<String, Value> = call.body()?;
    let a: Action = parse_element(body, rules::ACTION_KINDS, "action")?;
    rules::validate_action(ctx, &a)?;
    rule.actions.push(a);
    rules::save(ctx, &rule)?;
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
    m.insert("@schema".into(), schema_of(&kind));
    m.insert("type".into(), json!(kind));
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
        if k == "type" && v != m["type"] {
            return Err(EngineError::Invalid {
                field: "type".into(),
                message: format!("The {what}'s 'type' cannot change; delete it and add another"),
            });
        }
        m.insert(k, v);
    }
    extract::from_value(Value::Object(m), what)
}

fn patch_condition(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let mut rule = rule_param(ctx, call)?;
    let i = index(call, rule.conditions.len(), "condition")?;
    let body: Map<String, Value> = call.body()?;
    match move_of(&body)? {
        Some(up) => rules::move_item(&mut rule.conditions, i, up, "condition")?,
        None => rule.conditions[i] = merged(&rule.conditions[i], body, "condition")?,
    }
    rules::save(ctx, &rule)?;
    Ok(Response::empty(204))
}

fn patch_action(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let mut rule = rule_param(ctx, call)?;
    let i = index(call, rule.actions.len(), "action")?;
    let body: Map<String, Value> = call.body()?;
    match move_of(&body)? {
        Some(up) => rules::move_item(&mut rule.actions, i, up, "action")?,
        None => {
            let a: Action = merged(&rule.actions[i], body, "action")?;
            rules::validate_action(ctx, &a)?;
            rule.actions[i] = a;
        }
    }
    rules::save(ctx, &rule)?;
    Ok(Response::empty(204))
}

fn delete_condition(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let mut rule = rule_param(ctx, call)?;
    let i = index(call, rule.conditions.len(), "condition")?;
    rule.conditions.remove(i);
    rules::save(ctx, &rule)?;
    Ok(Response::empty(204))
}

fn delete_action(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let mut rule = rule_param(ctx, call)?;
    let i = index(call, rule.actions.len(), "action")?;
    rule.actions.remove(i);
    rules::save(ctx, &rule)?;
    Ok(Response::empty(204))
}

// ---------------------------------------------------------------- @content-rules

/// The rules of an object.
#[derive(Serialize, JsonSchema)]
pub struct ObjectRules {
    /// The three lists.
    #[serde(rename = "content-rules")]
    pub content_rules: RuleLists,
}

/// Acquired, assignable and assigned rules.
#[derive(Serialize, JsonSchema)]
pub struct RuleLists {
    /// Rules assigned above that bubble down here.
    pub acquired_rules: Vec<AssignedRule>,
    /// Rules not assigned here.
    pub assignable_rules: Vec<AssignableRule>,
    /// Rules assigned here.
    pub assigned_rules: Vec<AssignedRule>,
}

/// A rule that can be assigned.
#[derive(Serialize, JsonSchema)]
pub struct AssignableRule {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its description.
    pub description: String,
}

/// An assigned rule.
#[derive(Serialize, JsonSchema)]
pub struct AssignedRule {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its description.
    pub description: String,
    /// Whether it applies to subfolders.
    pub bubbles: bool,
    /// Whether the assignment is enabled.
    pub enabled: bool,
    /// Whether the rule itself is enabled.
    pub global_enabled: bool,
    /// Its trigger token.
    pub trigger: String,
}

fn object_rules(ctx: &mut Ctx<'_>, _: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let all = rules::all(ctx)?;
    let find = |id: &str| all.iter().find(|r| r.id == id);
    let to_view = |(id, a): (String, rules::Assignment)| {
        find(&id).map(|r| AssignedRule {
            id: r.id.clone(),
            title: r.title.clone(),
            description: r.description.clone(),
            bubbles: a.bubbles,
            enabled: a.enabled,
            global_enabled: r.enabled,
            trigger: r.event.clone(),
        })
    };
    let here = rules::assigned(ctx, &obj.uid)?;
    let assignable = all
        .iter()
        .filter(|r| !here.iter().any(|(id, _)| *id == r.id))
        .map(|r| AssignableRule {
            id: r.id.clone(),
            title: r.title.clone(),
            description: r.description.clone(),
        })
        .collect();
    let acquired = rules::acquired(ctx, &obj)?;
    Ok(Response::json(
        200,
        &ObjectRules {
            content_rules: RuleLists {
                acquired_rules: acquired.into_iter().filter_map(to_view).collect(),
                assignable_rules: assignable,
                assigned_rules: here.into_iter().filter_map(to_view).collect(),
            },
        },
    ))
}

/// `{message}`.
#[derive(Serialize, JsonSchema)]
pub struct Message {
    /// What was done.
    pub message: String,
}

fn assign(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let id = call.param("rule").unwrap_or_default();
    if rules::get(ctx, id)?.is_none() {
        return Err(EngineError::bad_request(format!(
            "There is no content rule '{id}'"
        )));
    }
    rules::assign(ctx, &obj, id)?;
    Ok(Response::json(
        201,
        &Message {
            message: format!("Successfully assigned the content rule {id}"),
        },
    ))
}

/// The body of PATCH `@content-rules`: exactly one flag set to true, and the rules.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssignmentPatch {
    /// Apply the rules to subfolders.
    #[serde(rename = "form.button.Bubble", default)]
    pub bubble: bool,
    /// Stop applying them to subfolders.
    #[serde(rename = "form.button.NoBubble", default)]
    pub no_bubble: bool,
    /// Enable them here.
    #[serde(rename = "form.button.Enable", default)]
    pub enable: bool,
    /// Disable them here.
    #[serde(rename = "form.button.Disable", default)]
    pub disable: bool,
    /// The rules.
    #[serde(default)]
    pub rule_ids: Vec<String>,
}

fn patch_assignments(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let body: AssignmentPatch = call.body()?;
    let flags = [body.bubble, body.no_bubble, body.enable, body.disable];
    if flags.iter().filter(|f| **f).count() != 1 {
        return Err(EngineError::bad_request(
            "Set exactly one of 'form.button.Bubble', 'form.button.NoBubble', \
             'form.button.Enable', 'form.button.Disable' to true",
        ));
    }
    let ids = body.rule_ids.join(", ");
    let (message, f): (String, fn(&mut rules::Assignment)) = if body.bubble {
        (
            format!("Successfully enabled rules {ids} to subfolders"),
            |a| a.bubbles = true,
        )
    } else if body.no_bubble {
        (
            format!("Successfully disabled rules {ids} to subfolders"),
            |a| a.bubbles = false,
        )
    } else if body.enable {
        (format!("Successfully enabled rules {ids}"), |a| {
            a.enabled = true
        })
    } else {
        (format!("Successfully disabled rules {ids}"), |a| {
            a.enabled = false
        })
    };
    rules::update_assignments(ctx, &obj, &body.rule_ids, f)?;
    Ok(Response::json(200, &Message { message }))
}

/// `{rule_ids}`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleIds {
    /// The rules.
    #[serde(default)]
    pub rule_ids: Vec<String>,
}

fn unassign(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let body: RuleIds = call.body()?;
    rules::unassign(ctx, &obj, &body.rule_ids)?;
    Ok(Response::empty(204))
}

// ---------------------------------------------------------------- jobs

/// A job (Nick's schema, plus the delivery's kind and attempts).
#[derive(Serialize, JsonSchema)]
pub struct JobView {
    /// Its URL.
    #[serde(rename = "@id")]
    pub url: String,
    /// Its id (also the idempotency key of its delivery).
    pub uuid: String,
    /// What it is.
    pub title: String,
    /// More about it.
    pub description: String,
    /// What it was started with.
    pub params: Map<String, Value>,
    /// Who caused it.
    pub actor: String,
    /// When it was created.
    pub created: String,
    /// When its last attempt started.
    pub started: Option<String>,
    /// When it finished.
    pub finished: Option<String>,
    /// `created`, `running`, `completed`, `failed` or `aborted`.
    pub status: String,
    /// What it produced.
    pub result: Map<String, Value>,
    /// `webhook` or `mail` for a delivery.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// Attempts made.
    pub attempts: u32,
}

fn job_view(ctx: &Ctx<'_>, j: Job) -> JobView {
    let iso = |t: &chrono::DateTime<chrono::Utc>| crate::core::clock::iso(t);
    JobView {
        url: format!("{}/@jobs/{}", ctx.base_url, j.uuid),
        kind: j.delivery.as_ref().map(|d| match d {
            Delivery::Webhook { .. } => "webhook",
            Delivery::Mail { .. } => "mail",
        }),
        created: iso(&j.created),
        started: j.started.as_ref().map(iso),
        finished: j.finished.as_ref().map(iso),
        uuid: j.uuid,
        title: j.title,
        description: j.description,
        params: j.params,
        actor: j.actor,
        status: j.status,
        result: j.result,
        attempts: j.attempts,
    }
}

fn list_jobs(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let out: Vec<JobView> = jobs::all(ctx)?
        .into_iter()
        .map(|j| job_view(ctx, j))
        .collect();
    Ok(Response::json(200, &out))
}

fn job_param(ctx: &Ctx<'_>, call: &Call<'_>) -> Result<Job> {
    let id = call.param("id").unwrap_or_default();
    jobs::get(ctx, id)?.ok_or_else(|| EngineError::NotFound {
        url: format!("{}/@jobs/{id}", ctx.base_url),
        context: None,
    })
}

fn get_job(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let j = job_param(ctx, call)?;
    Ok(Response::json(200, &job_view(ctx, j)))
}

fn job_result(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let j = job_param(ctx, call)?;
    Ok(Response::json(200, &j.result))
}

fn delete_job(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let j = job_param(ctx, call)?;
    jobs::delete(ctx, &j.uuid)?;
    Ok(Response::empty(204))
}

fn abort_job(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let j = job_param(ctx, call)?;
    jobs::abort(ctx, &j.uuid)?;
    Ok(Response::empty(204))
}

fn retry_job(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let j = job_param(ctx, call)?;
    jobs::retry(ctx, &j.uuid)?;
    Ok(Response::empty(204))
}

// ---------------------------------------------------------------- mail

/// The body of `@email-send`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmailSend {
    /// The recipient.
    pub to: String,
    /// The sender.
    pub from: String,
    /// The text.
    pub message: String,
    /// The subject.
    #[serde(default)]
    pub subject: Option<String>,
    /// The sender's name.
    #[serde(default)]
    pub name: Option<String>,
}

/// The body of `@email-notification`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmailNotification {
    /// The sender.
    pub from: String,
    /// The text.
    pub message: String,
    /// The subject.
    #[serde(default)]
    pub subject: Option<String>,
    /// The sender's name.
    #[serde(default)]
    pub name: Option<String>,
}

fn check_address(field: &str, a: &str) -> Result<()> {
    let ok = a
        .split_once('@')
        .is_some_and(|(l, d)| !l.is_empty() && d.contains('.') && !a.contains(char::is_whitespace));
    if ok {
        Ok(())
    } else {
        Err(EngineError::Invalid {
            field: field.into(),
            message: format!("'{field}' must be an e-mail address, not '{a}'"),
        })
    }
}

fn queue_mail(
    ctx: &mut Ctx<'_>,
    to: String,
    from: String,
    name: Option<String>,
    subject: Option<String>,
    message: String,
    via: &str,
) -> Result<()> {
    let subject = subject.unwrap_or_else(|| "A message".into());
    let body = match name {
        Some(n) if !n.is_empty() => format!("{message}\n\n-- {n} <{from}>"),
        _ => message,
    };
    let mut params = Map::new();
    params.insert("via".into(), json!(via));
    params.insert("to".into(), json!([to]));
    let job = jobs::new_job(ctx, &format!("Mail: {subject}"), via, params);
    jobs::enqueue(
        ctx,
        job,
        Delivery::Mail {
            from,
            to: vec![to],
            subject,
            body,
        },
    )?;
    Ok(())
}

fn email_send(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let b: EmailSend = call.body()?;
    check_address("to", &b.to)?;
    check_address("from", &b.from)?;
    queue_mail(
        ctx,
        b.to,
        b.from,
        b.name,
        b.subject,
        b.message,
        "@email-send",
    )?;
    Ok(Response::empty(204))
}

fn email_user(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    if ctx.principal.login().is_none() {
        return Err(EngineError::Unauthorized(
            "Log in to send a mail to a user".into(),
        ));
    }
    let b: EmailNotification = call.body()?;
    check_address("from", &b.from)?;
    let id = call.param("id").unwrap_or_default();
    let user = crate::people::auth::users::get(ctx, id)?.ok_or_else(|| EngineError::NotFound {
        url: format!("{}/@users/{id}/@email-notification", ctx.base_url),
        context: None,
    })?;
    if user.email.is_empty() {
        return Err(EngineError::bad_request(format!(
            "The user '{id}' has no e-mail address"
        )));
    }
    queue_mail(
        ctx,
        user.email,
        b.from,
        b.name,
        b.subject,
        b.message,
        "@email-notification",
    )?;
    Ok(Response::empty(204))
}

fn email_notification(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let b: EmailNotification = call.body()?;
    check_address("from", &b.from)?;
    let to = rules::site_sender(ctx)?;
    queue_mail(
        ctx,
        to,
        b.from,
        b.name,
        b.subject,
        b.message,
        "@email-notification",
    )?;
    Ok(Response::empty(204))
}

// ---------------------------------------------------------------- scheduled jobs

/// A scheduled job.
#[derive(Serialize, JsonSchema)]
pub struct ScheduleView {
    /// Its URL.
    #[serde(rename = "@id")]
    pub url: String,
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its description.
    pub description: String,
    /// Whether the schedule runs it.
    pub enabled: bool,
    /// What it runs (`@scheduled-job-actions`).
    pub action: String,
    /// The action's parameters (a webhook's signing key is not shown).
    pub params: Map<String, Value>,
    /// A cron expression (UTC).
    pub schedule: String,
    /// When it last ran.
    pub last_run: Option<String>,
    /// When the schedule runs it next.
    pub next_run: Option<String>,
}

fn schedule_view(ctx: &Ctx<'_>, j: jobs::ScheduledJob) -> ScheduleView {
    let mut params = j.params;
    if params.contains_key("secret") {
        params.insert("secret".into(), json!("********"));
    }
    ScheduleView {
        url: format!("{}/@scheduled-jobs/{}", ctx.base_url, j.id),
        id: j.id,
        title: j.title,
        description: j.description,
        enabled: j.enabled,
        action: j.action,
        params,
        schedule: j.schedule,
        last_run: j.last_run.as_ref().map(crate::core::clock::iso),
        next_run: j.next_run.as_ref().map(crate::core::clock::iso),
    }
}

/// The fields of a scheduled job (POST: `id`, `title`, `action`, `schedule` required).
#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct ScheduleRequest {
    /// Its id (letters, digits, `-`, `_`); on PATCH it must be the job's own.
    pub id: Option<String>,
    /// Its title.
    pub title: Option<String>,
    /// Its description.
    pub description: Option<String>,
    /// Whether the schedule runs it (default true).
    pub enabled: Option<bool>,
    /// What it runs.
    pub action: Option<String>,
    /// The action's parameters.
    pub params: Option<Map<String, Value>>,
    /// A cron expression: five fields (minute hour day month weekday) or six (seconds first).
    pub schedule: Option<String>,
}

fn required(v: Option<String>, field: &str) -> Result<String> {
    v.ok_or_else(|| EngineError::Invalid {
        field: field.into(),
        message: format!("'{field}' is required"),
    })
}

fn list_schedules(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let out: Vec<ScheduleView> = jobs::schedules(ctx)?
        .into_iter()
        .map(|j| schedule_view(ctx, j))
        .collect();
    Ok(Response::json(200, &out))
}

fn schedule_param(ctx: &Ctx<'_>, call: &Call<'_>) -> Result<jobs::ScheduledJob> {
    let id = call.param("id").unwrap_or_default();
    jobs::schedule(ctx, id)?.ok_or_else(|| EngineError::NotFound {
        url: format!("{}/@scheduled-jobs/{id}", ctx.base_url),
        context: None,
    })
}

fn add_schedule(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let b: ScheduleRequest = call.body()?;
    let job = jobs::save_schedule(
        ctx,
        jobs::ScheduledJob {
            id: required(b.id, "id")?,
            title: required(b.title, "title")?,
            description: b.description.unwrap_or_default(),
            enabled: b.enabled.unwrap_or(true),
            action: required(b.action, "action")?,
            params: b.params.unwrap_or_default(),
            schedule: required(b.schedule, "schedule")?,
            last_run: None,
            next_run: None,
        },
        true,
    )?;
    let v = schedule_view(ctx, job);
    Ok(Response::json(201, &v).with_header("Location", &v.url))
}

fn get_schedule(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let j = schedule_param(ctx, call)?;
    Ok(Response::json(200, &schedule_view(ctx, j)))
}

fn patch_schedule(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let mut j = schedule_param(ctx, call)?;
    let b: ScheduleRequest = call.body()?;
    if let Some(id) = b.id {
        if id != j.id {
            return Err(EngineError::Invalid {
                field: "id".into(),
                message: format!("'id' cannot change (it is '{}')", j.id),
            });
        }
    }
    set(&mut j.title, b.title);
    set(&mut j.description, b.description);
    set(&mut j.enabled, b.enabled);
    set(&mut j.action, b.action);
    set(&mut j.params, b.params);
    set(&mut j.schedule, b.schedule);
    jobs::save_schedule(ctx, j, false)?;
    Ok(Response::empty(204))
}

fn delete_schedule(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let j = schedule_param(ctx, call)?;
    jobs::delete_schedule(ctx, &j.id)?;
    Ok(Response::empty(204))
}

fn start_schedule(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let mut j = schedule_param(ctx, call)?;
    jobs::run_schedule(ctx, &mut j)?;
    Ok(Response::empty(204))
}

fn schedule_actions(_: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let out: Vec<AddableKind> = jobs::SCHEDULED_ACTIONS
        .iter()
        .map(|(name, title, description, params)| AddableKind {
            schema: schema_for(params),
            addview: name,
            description,
            title,
        })
        .collect();
    Ok(Response::json(200, &out))
}

/// Replace `slot` with `value` when a PATCH body gave one.
fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}
