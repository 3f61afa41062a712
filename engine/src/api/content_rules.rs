//! The rules of an object (`<path>/@content-rules`): which are acquired from above, which can
//! be assigned, which are assigned here, and (un)assigning, enabling and bubbling them. The
//! assignments are kept by [`crate::automation::rules`].
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `<path>/@content-rules` | | 200, `{content-rules: {acquired_rules, assignable_rules, assigned_rules}}` |
//! | POST | `<path>/@content-rules/<rule>` | | 201, `{message}` |
//! | PATCH | `<path>/@content-rules` | one `form.button.*` flag and `rule_ids` | 200, `{message}` |
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
