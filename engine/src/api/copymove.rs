//! `@copy` and `@move`: copy or move objects (with their subtrees) into a destination folder.
//!
//! `source` is one URL, site path or UID, or an array of them. The request is atomic: if any source
//! is missing or refused, nothing is copied or moved. Copies get fresh UIDs for the whole subtree,
//! a fresh history (version 0) and the initial workflow state; moves keep UIDs, history and state
//! and leave automatic aliases at the old paths.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::etag;
use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use crate::content::operations::{self, Locks, Transfer};
use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register `@copy` and `@move`.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::post("@copy", copy)
            .requires(Permission::AddContent)
            .summary("Copy objects (with their subtrees) into this folder; atomic")
            .body::<SourceRequest>()
            .answers::<Vec<Copied>>(),
    );
    r.route(
        RouteDef::post("@move", move_)
            .requires(Permission::AddContent)
            .summary(
                "Move objects (with their subtrees) into this folder (Delete permission on each \
                 source); `If-Match` lists the ETags the sources must have; atomic",
            )
            .body::<SourceRequest>()
            .answers::<Vec<Copied>>(),
    );
}

/// What to copy or move: one URL, site path or UID, or an array of them.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceRequest {
    /// The source(s).
    pub source: Option<Sources>,
}

/// One source or several.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Sources {
    /// One.
    One(String),
    /// Several.
    Many(Vec<String>),
}

/// Where one source went.
#[derive(Serialize, JsonSchema)]
pub struct Copied {
    /// The source's URL.
    pub source: String,
    /// The new object's URL.
    pub target: String,
}

/// Resolve a source given as an absolute URL under the site, a site path, or a UID.
pub fn resolve_source(ctx: &Ctx<'_>, raw: &str) -> Result<Option<ContentRecord>> {
    let missing = || Ok(None);
    if let Some(rest) = raw.strip_prefix(&ctx.base_url) {
        if rest.is_empty() || rest.starts_with('/') {
            return tree::at_path(ctx, rest.trim_end_matches('/'));
        }
        return missing();
    }
    if raw.starts_with('/') {
        let p = raw.trim_end_matches('/');
        return tree::at_path(ctx, if p == "/" { "" } else { p });
    }
    if raw.len() == 32 && raw.chars().all(|c| c.is_ascii_hexdigit()) {
        return tree::load(ctx, raw);
    }
    missing()
}

fn sources(ctx: &Ctx<'_>, body: SourceRequest) -> Result<Vec<(String, ContentRecord)>> {
    let raw: Vec<String> = match body.source {
        Some(Sources::One(s)) => vec![s],
        Some(Sources::Many(a)) if !a.is_empty() => a,
        Some(Sources::Many(_)) => {
            return Err(EngineError::bad_request("'source' must not be empty"))
        }
        None => return Err(EngineError::bad_request("Property 'source' is required")),
    };
    let mut out: Vec<(String, ContentRecord)> = Vec::new();
    for r in raw {
        let obj = resolve_source(ctx, &r)?
            .ok_or_else(|| EngineError::bad_request(format!("Source '{r}' does not exist")))?;
        if obj.is_root() {
            return Err(EngineError::bad_request(
                "The site root cannot be copied or moved",
            ));
        }
        if out.iter().any(|(_, o)| o.uid == obj.uid) {
            return Err(EngineError::bad_request(format!(
                "Source '{r}' is given twice"
            )));
        }
        out.push((r, obj));
    }
    Ok(out)
}

/// POST `<destination>/@copy`.
fn copy(ctx: &mut Ctx<'_>, call: &Call<'_>, dest: ContentRecord) -> Result<Response> {
    run(ctx, call, dest, Transfer::Copy)
}

/// POST `<destination>/@move`.
fn move_(ctx: &mut Ctx<'_>, call: &Call<'_>, dest: ContentRecord) -> Result<Response> {
    run(ctx, call, dest, Transfer::Move)
}

fn run(
    ctx: &mut Ctx<'_>,
    call: &Call<'_>,
    dest: ContentRecord,
    what: Transfer,
) -> Result<Response> {
    let body: SourceRequest = call.body()?;
    let list = sources(ctx, body)?;
    let locks = Locks::Honour(call.lock_token().map(str::to_string));
    // Check everything first; then act (the transaction makes it atomic either way).
    for (raw, obj) in &list {
        operations::check_transfer(ctx, what, &dest, obj, raw)?;
        if what == Transfer::Move {
            etag::check_if_match(call.req, obj)?;
        }
        operations::check_lock(ctx, what, obj, &locks)?;
    }
    let mut out = Vec::new();
    for (_, obj) in list {
        let source_url = ctx.url(&obj.path);
        let dest_now = tree::load(ctx, &dest.uid)?
            .ok_or_else(|| EngineError::Internal("destination vanished".into()))?;
        let target_path = operations::transfer(ctx, what, &obj, &dest_now)?;
        out.push(Copied {
            source: source_url,
            target: ctx.url(&target_path),
        });
    }
    Ok(Response::json(200, &out))
}
