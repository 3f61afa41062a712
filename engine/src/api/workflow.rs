//! `@workflow`: the workflow status of an object and taking transitions (the rules are in
//! [`crate::content::workflow`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use super::Route;
use crate::content::tree;
use crate::content::workflow::{self, HistoryEntry, TransitionOptions};
use crate::core::clock::iso;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::fields::{FieldDef, FieldKind};
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register the workflow routes and the `workflow` component.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@workflow", get)
            .requires(Permission::View)
            .summary("History, current state and the transitions the caller may take")
            .answers::<WorkflowStatus>(),
    );
    r.route(
        RouteDef::post("@workflow/{transition?}", post)
            .requires(Permission::View)
            .conditional()
            .summary(
                "Take a transition (the transition's guard permission is checked), optionally \
                 on every descendant that offers it too (`include_children`)",
            )
            .body::<TransitionRequest>()
            .answers::<TransitionResult>(),
    );
    r.component("workflow", Some(component));
}

/// The workflow status of an object.
#[derive(Serialize, JsonSchema)]
pub struct WorkflowStatus {
    /// `<object URL>/@workflow`.
    #[serde(rename = "@id")]
    pub id: String,
    /// Every state change, oldest first.
    pub history: Vec<TransitionResult>,
    /// The current state (`null` for objects without workflow).
    pub state: Option<StateInfo>,
    /// The transitions the caller may take now.
    pub transitions: Vec<TransitionLink>,
}

/// A workflow state.
#[derive(Serialize, JsonSchema)]
pub struct StateInfo {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
}

/// A transition the caller may take.
#[derive(Serialize, JsonSchema)]
pub struct TransitionLink {
    /// `<object URL>/@workflow/<transition>`.
    #[serde(rename = "@id")]
    pub id: String,
    /// Its title.
    pub title: String,
}

/// One state change (the answer to a transition, and an entry of the status's history).
#[derive(Serialize, JsonSchema)]
pub struct TransitionResult {
    /// The transition id (`null` for the creation entry).
    pub action: Option<String>,
    /// Login of who made it.
    pub actor: String,
    /// The comment given.
    pub comments: String,
    /// The state after it.
    pub review_state: String,
    /// When.
    pub time: String,
    /// The title of that state.
    pub title: String,
}

/// The body of a transition (all optional).
#[derive(Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransitionRequest {
    /// A comment for the history.
    #[serde(default)]
    pub comment: Option<String>,
    /// A new effective date (ISO 8601).
    #[serde(default)]
    pub effective: Option<Value>,
    /// A new expiry date (ISO 8601).
    #[serde(default)]
    pub expires: Option<Value>,
    /// Take the transition on every descendant that offers it and is not locked, too.
    #[serde(default)]
    pub include_children: Option<bool>,
}

impl TransitionResult {
    fn new(
        ctx: &Ctx<'_>,
        tr: &crate::site::i18n::Translator,
        obj: &ContentRecord,
        e: &HistoryEntry,
    ) -> Result<Self> {
        Ok(TransitionResult {
            action: e.action.clone(),
            actor: e.actor.clone(),
            comments: e.comments.clone(),
            review_state: e.review_state.clone(),
            time: iso(&e.time),
            title: tr.t(&workflow::state_title(ctx, obj, &e.review_state)?),
        })
    }
}

/// GET `<path>/@workflow`.
fn get(ctx: &mut Ctx<'_>, _: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    Ok(Response::json(200, &status(ctx, &obj)?))
}

/// The workflow status of `obj`.
pub fn status(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<WorkflowStatus> {
    let url = ctx.url(&obj.path);
    let tr = crate::site::i18n::Translator::for_request(ctx)?;
    let history = workflow::shown_history(ctx, &obj.uid)?
        .iter()
        .map(|e| TransitionResult::new(ctx, &tr, obj, e))
        .collect::<Result<Vec<_>>>()?;
    let state = match &obj.review_state {
        Some(s) => Some(StateInfo {
            id: s.clone(),
            title: tr.t(&workflow::state_title(ctx, obj, s)?),
        }),
        None => None,
    };
    let transitions = workflow::available(ctx, obj)?
        .into_iter()
        .map(|(id, t)| TransitionLink {
            id: format!("{url}/@workflow/{id}"),
            title: tr.t(&t.title),
        })
        .collect();
    Ok(WorkflowStatus {
        id: format!("{url}/@workflow"),
        history,
        state,
        transitions,
    })
}

/// The `workflow` component.
fn component(ctx: &Ctx<'_>, _: &Route, obj: &ContentRecord) -> Result<Value> {
    Ok(serde_json::to_value(status(ctx, obj)?)?)
}

fn date(name: &str, v: Option<&Value>) -> Result<Option<Value>> {
    let Some(v) = v else {
        return Ok(None);
    };
    let def = FieldDef::new(name, FieldKind::Datetime);
    def.validate(v).map(Some)
}

/// POST `<path>/@workflow/<transition>`: take the transition (optionally on every descendant too).
fn post(ctx: &mut Ctx<'_>, call: &Call<'_>, mut obj: ContentRecord) -> Result<Response> {
    let transition = call.param("transition").ok_or_else(|| {
        EngineError::bad_request("Name the transition: POST <path>/@workflow/<transition>")
    })?;
    let body: TransitionRequest = call.body()?;
    let opts = TransitionOptions {
        comment: body.comment.unwrap_or_default(),
        effective: date("effective", body.effective.as_ref())?,
        expires: date("expires", body.expires.as_ref())?,
    };
    let entry = workflow::take(ctx, call.lock_token(), &mut obj, transition, &opts)?;
    if body.include_children.unwrap_or(false) {
        for mut member in tree::subtree(ctx, &obj)?.into_iter().skip(1) {
            let offered = workflow::available(ctx, &member)?
                .iter()
                .any(|(id, _)| *id == transition);
            let unlocked = crate::content::locking::current(ctx, &member)?.is_none();
            if offered && unlocked {
                workflow::take(ctx, call.lock_token(), &mut member, transition, &opts)?;
            }
        }
    }
    let out = TransitionResult::new(
        ctx,
        &crate::site::i18n::Translator::for_request(ctx)?,
        &obj,
        &entry,
    )?;
    Ok(super::etag::tagged(Response::json(200, &out), &obj))
}
