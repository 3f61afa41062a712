//! The rules of an object (`<path>/@content-rules`): which are acquired from above, which can
//! be assigned, which are assigned here, and (un)assigning, enabling and bubbling them. The
//! assignments are kept by [`crate::automation::rules`].
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `<path>/@content-rules` | | 200, `{content-rules: {acquired_rules, assignable_rules, assigned_rules}}` |
//! | POST | `<path>/@content-rules/<rule>` | | 201, `{message}` |
//! | PATCH | `<path>/@content-rules` | one `form.button.*` flag and `rule_ids` | 200, `{message}` (Plone's wording; Nick's on a Nick site) |
//! | PATCH | `<path>/@content-rules` | `{operation: "move_up" \| "move_down", rule_id}` | 200, `{message}` (the order the assigned rules run in) |
//! | DELETE | `<path>/@content-rules` | `{rule_ids}` | 204 |
//!
//! Every route needs Modify on the object.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use crate::automation::rules;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;
use crate::site::profile::SiteProfile;

/// Register the routes.
pub fn register(r: &mut RouteTable) {
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
    let profile = ctx.profile();
    let find = |id: &str| all.iter().find(|r| r.id == id);
    let to_view = |(id, a): (String, rules::Assignment)| {
        find(&id).map(|r| AssignedRule {
            id: r.id.clone(),
            title: r.title.clone(),
            description: r.description.clone(),
            bubbles: a.bubbles,
            enabled: a.enabled,
            global_enabled: r.enabled,
            trigger: r.trigger_named(profile).to_string(),
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
    // A new assignment answers 201 (spec: "201 for … rule assignment", with Nick's wording);
    // assigning it again changes nothing and answers 200, in Plone's wording on a Plone site.
    let (status, message) = match rules::assign(ctx, &obj, id)? {
        true => (201, format!("Successfully assigned the content rule {id}")),
        false if ctx.profile().is_nick() => {
            (200, format!("Successfully assigned the content rule {id}"))
        }
        false => (200, format!("Successfully assigned the rule {id}")),
    };
    Ok(Response::json(status, &Message { message }))
}

/// A move of an assigned rule among the object's assignments.
#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MoveOperation {
    /// One place earlier.
    MoveUp,
    /// One place later.
    MoveDown,
}

impl MoveOperation {
    fn name(self) -> &'static str {
        match self {
            MoveOperation::MoveUp => "move_up",
            MoveOperation::MoveDown => "move_down",
        }
    }
}

/// The body of PATCH `@content-rules`: exactly one flag set to true, and the rules; or an
/// `operation` (`move_up`, `move_down`) and the `rule_id` it moves.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssignmentPatch {
    /// Move the rule `rule_id` among the rules assigned here (they run in that order).
    #[serde(default)]
    pub operation: Option<MoveOperation>,
    /// The rule `operation` moves.
    #[serde(default)]
    pub rule_id: Option<String>,
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

/// What a PATCH of `@content-rules` changes, for its message.
#[derive(Clone, Copy)]
enum AssignmentChange {
    Bubble,
    NoBubble,
    Enable,
    Disable,
}

/// The message of a PATCH of `@content-rules`: Nick's wording on a Nick site (its recorded
/// examples `content_rules/patch_*`), Plone's (the rule ids as a Python list) on the others.
fn assignment_message(profile: SiteProfile, change: AssignmentChange, ids: &[String]) -> String {
    if profile.is_nick() {
        let ids = ids.join(", ");
        match change {
            AssignmentChange::Bubble => format!("Successfully enabled rules {ids} to subfolders"),
            AssignmentChange::NoBubble => {
                format!("Successfully disabled rules {ids} to subfolders")
            }
            AssignmentChange::Enable => format!("Successfully enabled rules {ids}"),
            AssignmentChange::Disable => format!("Successfully disabled rules {ids}"),
        }
    } else {
        let list = format!(
            "[{}]",
            ids.iter()
                .map(|i| format!("'{i}'"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        match change {
            AssignmentChange::Bubble => format!("Successfully applied {list} to subfolders"),
            AssignmentChange::NoBubble => format!("Disabled apply to subfolders for {list}"),
            AssignmentChange::Enable => format!("Successfully enabled rules {list}"),
            AssignmentChange::Disable => format!("Successfully disabled rules {list}"),
        }
    }
}

fn patch_assignments(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let body: AssignmentPatch = call.body()?;
    let flags = [body.bubble, body.no_bubble, body.enable, body.disable];
    let set = flags.iter().filter(|f| **f).count();
    if let Some(op) = body.operation {
        if set != 0 || !body.rule_ids.is_empty() {
            return Err(EngineError::bad_request(
                "'operation' moves one rule ('rule_id'); send it without 'form.button.*' \
                 flags and 'rule_ids'",
            ));
        }
        let id = body.rule_id.ok_or_else(|| EngineError::Invalid {
            field: "rule_id".into(),
            message: "'operation' needs 'rule_id', the rule it moves".into(),
        })?;
        rules::move_assignment(ctx, &obj, &id, op == MoveOperation::MoveUp)?;
        return Ok(Response::json(
            200,
            &Message {
                message: format!("Successfully applied the {}", op.name()),
            },
        ));
    }
    if body.rule_id.is_some() {
        return Err(EngineError::Invalid {
            field: "rule_id".into(),
            message: "'rule_id' goes with 'operation' (move_up, move_down); the flags take \
                      'rule_ids'"
                .into(),
        });
    }
    if set != 1 {
        return Err(EngineError::bad_request(
            "Set exactly one of 'form.button.Bubble', 'form.button.NoBubble', \
             'form.button.Enable', 'form.button.Disable' to true, or send an 'operation' \
             (move_up, move_down) and a 'rule_id'",
        ));
    }
    let (change, f): (AssignmentChange, fn(&mut rules::Assignment)) = if body.bubble {
        (AssignmentChange::Bubble, |a| a.bubbles = true)
    } else if body.no_bubble {
        (AssignmentChange::NoBubble, |a| a.bubbles = false)
    } else if body.enable {
        (AssignmentChange::Enable, |a| a.enabled = true)
    } else {
        (AssignmentChange::Disable, |a| a.enabled = false)
    };
    rules::update_assignments(ctx, &obj, &body.rule_ids, f)?;
    let message = assignment_message(ctx.profile(), change, &body.rule_ids);
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
