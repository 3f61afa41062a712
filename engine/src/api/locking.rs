//! `@lock`: lock, read, refresh and unlock an object (the rules are in [`crate::content::locking`]).

use schemars::JsonSchema;
use serde::Deserialize;

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use super::serialize::LockInfo;
use crate::content::locking::{self, Lock};
use crate::core::error::Result;
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register the lock routes.
pub fn register(r: &mut RouteTable) {
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
