//! `@lock`: lock, read, refresh and unlock an object (the rules are in [`crate::content::locking`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::Call;
use super::router::{Registry, RouteDef};
use crate::content::locking::{self, Lock, DEFAULT_TIMEOUT, MAX_TIMEOUT};
use crate::core::clock::iso;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::auth::users;
use crate::people::permissions::Access;
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

fn holds(call: &Call<'_>, ctx: &Ctx<'_>, lock: &Lock) -> bool {
    lock.held_by(ctx.principal.login(), call.lock_token())
}

fn answer(ctx: &Ctx<'_>, lock: Option<&Lock>) -> Response {
    Response::json(200, &LockInfo::new(ctx, lock))
}

/// POST `<path>/@lock {stealable?, timeout?}`.
fn post(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let body: LockRequest = call.body()?;
    ctx.require(Permission::Modify, &obj)?;
    let timeout = match body.timeout {
        None => DEFAULT_TIMEOUT,
        Some(t) if (1..=MAX_TIMEOUT).contains(&t) => t,
        Some(_) => {
            return Err(EngineError::bad_request(format!(
                "'timeout' must be a whole number of seconds from 1 to {MAX_TIMEOUT}"
            )))
        }
    };
    if let Some(existing) = locking::current(ctx, &obj)? {
        if !holds(call, ctx, &existing) {
            return Err(EngineError::Locked(format!(
                "Resource is locked. '{}' is already locked by '{}'.",
                ctx.url(&obj.path),
                existing.creator
            )));
        }
    }
    let login = ctx.principal.login().unwrap_or("").to_string();
    let creator_name = users::get(ctx, &login)?
        .map(|u| u.fullname)
        .unwrap_or_default();
    let lock = Lock {
        token: ctx.core.entropy.uuid().to_string(),
        creator: login,
        creator_name,
        created: ctx.now(),
        timeout,
        stealable: body.stealable.unwrap_or(true),
    };
    locking::put(ctx, &obj, &lock)?;
    Ok(answer(ctx, Some(&lock)))
}

/// GET `<path>/@lock`.
fn get(ctx: &mut Ctx<'_>, _: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let lock = locking::current(ctx, &obj)?;
    Ok(answer(ctx, lock.as_ref()))
}

/// PATCH `<path>/@lock`: refresh the caller's lock.
fn patch(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let mut lock = locking::current(ctx, &obj)?.ok_or_else(|| {
        EngineError::bad_request(format!(
            "'{}' is not locked; POST @lock to lock it",
            ctx.url(&obj.path)
        ))
    })?;
    if !holds(call, ctx, &lock) {
        return Err(EngineError::Locked(format!(
            "Resource is locked. Only '{}' (or the holder of the lock token) can refresh this lock.",
            lock.creator
        )));
    }
    lock.created = ctx.now();
    locking::put(ctx, &obj, &lock)?;
    Ok(answer(ctx, Some(&lock)))
}

/// DELETE `<path>/@lock {force?}`.
fn delete(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let body: UnlockRequest = call.body()?;
    ctx.require(Permission::Modify, &obj)?;
    let force = body.force.unwrap_or(false);
    if let Some(lock) = locking::current(ctx, &obj)? {
        if !holds(call, ctx, &lock) {
            if !force {
                return Err(EngineError::Locked(format!(
                    "Resource is locked by '{}'; send {{\"force\": true}} to unlock it.",
                    lock.creator
                )));
            }
            let needed = if lock.stealable {
                Permission::Modify
            } else {
                Permission::ManagePortal
            };
            if !ctx.permitted(needed, &obj)? {
                return Err(EngineError::Forbidden(format!(
                    "The lock of '{}' is not stealable; breaking it needs the permission '{}'.",
                    lock.creator,
                    needed.name()
                )));
            }
        }
        locking::remove(ctx, &obj)?;
    } else {
        // An expired lock may still be stored: clean it up.
        locking::remove(ctx, &obj)?;
    }
    Ok(answer(ctx, None))
}
