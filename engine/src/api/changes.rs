//! `@changes`: the change feed ([`crate::sync::changes`]): which objects at and below the context
//! changed since a cursor, one entry per object in commit order, as the caller sees them now.
//!
//! `GET <context>/@changes` without `since` answers the current cursor and no entries (a client
//! takes it before downloading everything); `?since=<cursor>&limit=<1..=1000, default 100>`
//! lists what changed after it, with `more` when another page follows (ask again from the
//! answer's `cursor`). An entry's `version` is the `ETag` a `GET` of the object answers now
//! ([`super::etag`]). An object the caller may no longer view (or that moved out of the context)
//! is listed as removed only when the caller could view it there before; one they never could
//! see is not listed at all. A cursor the log no longer covers is a 410 `CursorExpired`.
//!
//! `Accept: text/event-stream` is the same feed as Server-Sent Events: the engine builds them
//! ([`super::change_stream`]); hosts that can hold a connection open (host-server) wait for
//! commits and send the bytes, the browser host answers these JSON pages.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::etag;
use super::extract::Call;
use super::router::{Carriage, RouteDef, RouteTable};
use crate::core::clock::iso;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;
use crate::sync::changes::{self, Cursor};

/// Default page size.
pub const DEFAULT_LIMIT: usize = 100;
/// Largest page size.
pub const MAX_LIMIT: usize = 1000;

/// Register the change feed.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@changes", get)
            .carried(Carriage::EventStream)
            .requires(Permission::View)
            .summary(
                "The change feed: objects at and below the context changed since `since` (one \
                 entry per object, commit order, filtered by View: hidden ones are `removed`); \
                 without `since` only the current cursor. 410 `CursorExpired` for a cursor the \
                 log no longer covers",
            )
            .query::<ChangesQuery>()
            .answers::<ChangesPage>(),
    );
}

/// The query of the change feed.
#[derive(Default, Deserialize, JsonSchema)]
pub struct ChangesQuery {
    /// A cursor from an earlier answer (absent: answer the current cursor only).
    #[serde(default)]
    pub since: Option<String>,
    /// Most entries in the answer (1 to 1000, default 100).
    #[serde(default)]
    pub limit: Option<String>,
}

/// A page of the change feed.
#[derive(Serialize, JsonSchema)]
pub struct ChangesPage {
    /// The request's URL.
    #[serde(rename = "@id")]
    pub id: String,
    /// The cursor after the last listed entry (the given one, or the current one, when none).
    pub cursor: String,
    /// Whether more entries follow this page.
    pub more: bool,
    /// The entries, in commit order.
    pub changes: Vec<ChangeEntry>,
}

/// One changed object, as it is now.
#[derive(Serialize, JsonSchema)]
pub struct ChangeEntry {
    /// This entry's cursor.
    pub cursor: String,
    /// `added` (created after the cursor asked from), `modified` or `removed` (deleted, or
    /// not visible to the caller).
    pub action: &'static str,
    /// The object's uid.
    #[serde(rename = "UID")]
    pub uid: String,
    /// Its URL (null when removed).
    #[serde(rename = "@id")]
    pub id: Option<String>,
    /// Its site path (`/` for the root; null when removed).
    pub path: Option<String>,
    /// Its parent's uid (null for the root and when removed).
    pub parent: Option<String>,
    /// The `ETag` a GET of the object answers now (null when removed).
    pub version: Option<String>,
    /// When it was last modified (null when removed).
    pub modified: Option<String>,
}

/// The page size of `limit`: 1 to [`MAX_LIMIT`], default [`DEFAULT_LIMIT`].
fn parse_limit(limit: Option<&str>) -> Result<usize> {
    let Some(text) = limit else {
        return Ok(DEFAULT_LIMIT);
    };
    match text.parse::<usize>() {
        Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        _ => Err(EngineError::bad_request(format!(
            "The parameter 'limit' must be a whole number from 1 to {MAX_LIMIT}, got '{text}'"
        ))),
    }
}

/// The cursor of `since`, if given; a malformed one is a 400 naming it.
fn parse_since(since: Option<&str>) -> Result<Option<Cursor>> {
    since
        .map(|text| {
            Cursor::parse(text).ok_or_else(|| {
                EngineError::bad_request(format!(
                    "The parameter 'since' must be a cursor from an earlier answer of @changes, \
                     got '{text}'"
                ))
            })
        })
        .transpose()
}

fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let q: ChangesQuery = call.query()?;
    let limit = parse_limit(q.limit.as_deref())?;
    let since = parse_since(q.since.as_deref())?;
    let mut id = call.route.url(&ctx.base_url);
    if !call.req.query.is_empty() {
        id.push('?');
        id.push_str(&call.req.query);
    }
    let Some(since) = since else {
        let cursor = changes::current(ctx)?;
        return Ok(Response::json(
            200,
            &ChangesPage {
                id,
                cursor: cursor.to_string(),
                more: false,
                changes: Vec::new(),
            },
        ));
    };
    let page = changes::list(ctx, &since, limit, &obj)?;
    let epoch = page.cursor.epoch.clone();
    let changes = page
        .entries
        .into_iter()
        .map(|e| {
            let cursor = Cursor {
                epoch: epoch.clone(),
                seq: e.seq,
            }
            .to_string();
            match e.object {
                Some(o) => ChangeEntry {
                    cursor,
                    action: if e.added { "added" } else { "modified" },
                    uid: e.uid,
                    id: Some(ctx.url(&o.path)),
                    path: Some(if o.path.is_empty() {
                        "/".to_string()
                    } else {
                        o.path.clone()
                    }),
                    version: Some(etag::of(&o)),
                    modified: Some(iso(&o.modified)),
                    parent: o.parent,
                },
                None => ChangeEntry {
                    cursor,
                    action: "removed",
                    uid: e.uid,
                    id: None,
                    path: None,
                    parent: None,
                    version: None,
                    modified: None,
                },
            }
        })
        .collect();
    Ok(Response::json(
        200,
        &ChangesPage {
            id,
            cursor: page.cursor.to_string(),
            more: page.more,
            changes,
        },
    ))
}
