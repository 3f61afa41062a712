//! `@lock`: lock, read, refresh and unlock an object (the rules are in [`crate::content::locking`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::Call;
use super::router::{Registry, RouteDef};
use crate::content::locking::{self, Lock};
use crate::core::clock::iso;
use crate::core::error::Result;
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register the lock routes.
pub fn register(r: &mut Registry) {
    r.route(
        RouteDef::get("@lock", get)
            .requires(Permission::View)
            .summary("The lock, or `{locked: false, stealable: true}`")
            .answers::<LockInfo>(),
    );
    r.route(
        RouteDef::post("@lock", post)
            .checked_by_handler()
            .conditional()
            .summary("Lock the object (Modify permission); the answer carries the token")
            .body::<LockRequest>()
            .answers::<LockInfo>(),
    );
    r.route(
        RouteDef::patch("@lock", patch)
            .requires(Permission::Modify)
            .conditional()
            .summary("Refresh the caller's lock: its creation time becomes now")
            .answers::<LockInfo>(),
    );
    r.route(
        RouteDef::delete("@lock", delete)
            .checked_by_handler()
            .conditional()
            .summary(
                "Unlock (Modify permission); another user's lock needs `force: true` and Modify \
                 (stealable lock) or Manage portal (non-stealable)",
            )
            .body::<UnlockRequest>()
            .answers::<LockInfo>(),
    );
}

/// The lock status of an object. Unlocked objects show only `locked: false, stealable: true`;
/// the token is shown to the lock's owner only.
#[derive(Serialize, JsonSchema)]
pub struct LockInfo {
    /// When it was taken or last refreshed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// Login of its owner.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creator: Option<String>,
    /// Full name of its owner (the login when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creator_name: Option<String>,
    /// URL of its owner.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creator_url: Option<String>,
    /// Whether the object is locked.
    pub locked: bool,
    /// The lock type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'static str>,
    /// Whether others with edit rights may break it.
    pub stealable: bool,
    /// When it was taken, in seconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<f64>,
    /// Seconds it lasts from `created`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// The token changes to the object must send in `Lock-Token` (owner only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

impl LockInfo {
    /// What the caller of `ctx` may see of `lock`.
    pub fn new(ctx: &Ctx<'_>, lock: Option<&Lock>) -> Self {
        let Some(l) = lock else {
            return LockInfo {
                created: None,
                creator: None,
                creator_name: None,
                creator_url: None,
                locked: false,
                name: None,
                stealable: true,
                time: None,
                timeout: None,
                token: None,
            };
        };
        let name = if l.creator_name.is_empty() {
            &l.creator
        } else {
            &l.creator_name
        };
        LockInfo {
            created: Some(iso(&l.created)),
            creator: Some(l.creator.clone()),
            creator_name: Some(name.clone()),
            creator_url: Some(ctx.url(&format!("/author/{}", l.creator))),
            locked: true,
            name: Some("plone.locking.stealable"),
            stealable: l.stealable,
            time: Some(l.created.timestamp_millis() as f64 / 1000.0),
            timeout: Some(l.timeout),
            token: (ctx.principal.login() == Some(l.creator.as_str())).then(|| l.token.clone()),
        }
    }
}

/// The body of a lock request.
#[derive(Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LockRequest {
    /// Whether other users with edit rights may break it (default true).
    #[serde(default)]
    pub stealable: Option<bool>,
    /// Seconds it lasts (default 600, at most 86,400).
    #[serde(default)]
    pub timeout: Option<u64>,
}

/// The body of an unlock request.
#[derive(Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnlockRequest {
    /// Break another user's lock.
    #[serde(default)]
    pub force: Option<bool>,
}

fn answer(ctx: &Ctx<'_>, lock: Option<&Lock>) -> Response {
    Response::json(200, &LockInfo::new(ctx, lock))
}

/// POST `<path>/@lock {stealable?, timeout?}`.
fn post(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let body: LockRequest = call.body()?;
    let cmd = locking::Acquire {
        stealable: body.stealable,
        timeout: body.timeout,
        lock_token: call.lock_token().map(str::to_string),
    };
    let lock = locking::acquire(ctx, &obj, &cmd)?;
    Ok(answer(ctx, Some(&lock)))
}

/// GET `<path>/@lock`.
fn get(ctx: &mut Ctx<'_>, _: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let lock = locking::current(ctx, &obj)?;
    Ok(answer(ctx, lock.as_ref()))
}

/// PATCH `<path>/@lock`: refresh the caller's lock.
fn patch(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let lock = locking::refresh(ctx, &obj, call.lock_token())?;
    Ok(answer(ctx, Some(&lock)))
}

/// DELETE `<path>/@lock {force?}`.
fn delete(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let body: UnlockRequest = call.body()?;
    let cmd = locking::Release {
        force: body.force.unwrap_or(false),
        lock_token: call.lock_token().map(str::to_string),
    };
    locking::release(ctx, &obj, &cmd)?;
    Ok(answer(ctx, None))
}
