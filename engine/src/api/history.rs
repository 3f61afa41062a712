//! `@history`: an object's versions and workflow changes, reading an old version, reverting.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use super::serialize::{self, ListingRequest};
use super::{batching::Batch, etag};
use crate::content::operations::{self, Locks};
use crate::core::clock::iso;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::auth::users;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;
use crate::{content::versioning, content::workflow};

/// Register the history routes.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@history/{version?}", get)
            .requires(Permission::View)
            .summary(
                "The history, newest first (versions and workflow changes); with a version \
                 number, the object as it was at that version",
            )
            .answers::<Vec<HistoryItem>>(),
    );
    r.route(
        RouteDef::patch("@history", patch)
            .requires(Permission::Modify)
            .conditional()
            .summary("Revert to a version (recorded as a new version)")
            .body::<RevertRequest>()
            .answers::<Message>(),
    );
}

/// Who made a history entry.
#[derive(Serialize, JsonSchema)]
pub struct Actor {
    /// The user's URL.
    #[serde(rename = "@id")]
    pub id_url: String,
    /// Full name (the login when none).
    pub fullname: String,
    /// Login.
    pub id: String,
    /// Login.
    pub username: String,
}

/// One history entry: a version (`type: versioning`) or a workflow change (`type: workflow`).
#[derive(Serialize, JsonSchema)]
pub struct HistoryItem {
    /// Link to that version (versions only).
    #[serde(rename = "@id", skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `Edited`, `Create`, or the transition id.
    pub action: String,
    /// Who.
    pub actor: Actor,
    /// The change note or transition comment.
    pub comments: String,
    /// Whether the caller may revert to it (versions only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub may_revert: Option<bool>,
    /// The state after it (workflow changes only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review_state: Option<String>,
    /// The title of that state (workflow changes only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_title: Option<String>,
    /// When.
    pub time: String,
    /// The title of the action.
    pub transition_title: String,
    /// `versioning` or `workflow`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The version number (versions only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
}

/// A revert request.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevertRequest {
    /// The version to revert to (a number, also written as a string).
    pub version: VersionNumber,
}

/// A version number as clients send it.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum VersionNumber {
    /// A number.
    Number(u32),
    /// A number written as a string.
    Text(String),
}

/// An answer that is one sentence.
#[derive(Serialize, JsonSchema)]
pub struct Message {
    /// The sentence.
    pub message: String,
}

fn actor(ctx: &Ctx<'_>, login: &str) -> Result<Actor> {
    let fullname = users::get(ctx, login)?
        .map(|u| u.fullname)
        .filter(|f| !f.is_empty())
        .unwrap_or_else(|| login.to_string());
    Ok(Actor {
        id_url: ctx.url(&format!("/@users/{login}")),
        fullname,
        id: login.to_string(),
        username: login.to_string(),
    })
}

fn parse_version(s: &str) -> Result<u32> {
    s.parse::<u32>().map_err(|_| {
        EngineError::bad_request(format!("A version is a non-negative integer, got '{s}'"))
    })
}

fn unknown_version(ctx: &Ctx<'_>, obj: &ContentRecord, v: impl std::fmt::Display) -> EngineError {
    EngineError::NotFound {
        url: ctx.url(&format!("{}/@history/{v}", obj.path)),
        context: Some(ctx.url(&obj.path)),
    }
}

/// GET `<path>/@history` (newest first) or `<path>/@history/<version>` (the object at that version).
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let (req, route) = (call.req, call.route);
    match call.param("version") {
        None => list(ctx, &obj),
        Some(v) => {
            let version = parse_version(v)?;
            let fields = versioning::fields_at(ctx, &obj.uid, version)?
                .ok_or_else(|| unknown_version(ctx, &obj, version))?;
            let mut old = obj.clone();
            old.fields = fields;
            let listing = ListingRequest {
                batch: Batch::for_route(ctx, route)?,
                query: &route.query,
                raw_query: &req.query,
                route: None,
            };
            let mut body = serialize::full(ctx, &old, &listing)?;
            body["version"] = json!(version);
            Ok(Response::json(200, &body))
        }
    }
}

fn list(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Response> {
    let url = ctx.url(&obj.path);
    let may_revert = ctx.permitted(Permission::Modify, obj)?;
    // (history sequence, entry): newest first.
    let mut entries: Vec<(u64, HistoryItem)> = Vec::new();
    for v in versioning::list(ctx, &obj.uid)? {
        entries.push((
            v.seq,
            HistoryItem {
                id: Some(format!("{url}/@history/{}", v.version)),
                action: "Edited".into(),
                actor: actor(ctx, &v.actor)?,
                comments: v.comment,
                may_revert: Some(may_revert),
                review_state: None,
                state_title: None,
                time: iso(&v.time),
                transition_title: "Edited".into(),
                kind: "versioning",
                version: Some(v.version),
            },
        ));
    }
    let wf = workflow::workflow_of(ctx, obj)?;
    for e in workflow::shown_history(ctx, &obj.uid)? {
        let (action, title) = match &e.action {
            None => ("Create".to_string(), "Create".to_string()),
            Some(a) => (
                a.clone(),
                wf.and_then(|w| w.transitions.get(a))
                    .map_or_else(|| a.clone(), |t| t.title.clone()),
            ),
        };
        entries.push((
            e.seq,
            HistoryItem {
                id: None,
                action,
                actor: actor(ctx, &e.actor)?,
                comments: e.comments.clone(),
                may_revert: None,
                state_title: Some(workflow::state_title(ctx, obj, &e.review_state)?),
                review_state: Some(e.review_state),
                time: iso(&e.time),
                transition_title: title,
                kind: "workflow",
                version: None,
            },
        ));
    }
    entries.sort_by_key(|e| std::cmp::Reverse(e.0));
    let out: Vec<HistoryItem> = entries.into_iter().map(|(_, v)| v).collect();
    Ok(Response::json(200, &out))
}

/// PATCH `<path>/@history {"version": N}`: revert to version N (recorded as a new version).
fn patch(ctx: &mut Ctx<'_>, call: &Call<'_>, mut obj: ContentRecord) -> Result<Response> {
    let body: RevertRequest = call.body()?;
    let version = match body.version {
        VersionNumber::Number(n) => n,
        VersionNumber::Text(s) => parse_version(&s)?,
    };
    let cmd = operations::Revert {
        version,
        locks: Locks::Honour(call.lock_token().map(str::to_string)),
    };
    if operations::revert(ctx, &mut obj, &cmd)? == operations::Reverted::NoSuchVersion {
        return Err(unknown_version(ctx, &obj, version));
    }
    let message = Message {
        message: format!("{} has been reverted to revision {version}.", obj.title()),
    };
    Ok(etag::tagged(Response::json(200, &message), &obj))
}
