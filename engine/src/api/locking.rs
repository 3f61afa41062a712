//! `@lock`: lock, read, refresh and unlock an object (the rules are in [`crate::locking`]).

use serde_json::Value;

use super::{json_body, opt_bool, Route};
use crate::auth::users;
use crate::context::Ctx;
use crate::error::{EngineError, Result};
use crate::http::{Request, Response};
use crate::locking::{self, Lock, DEFAULT_TIMEOUT, MAX_TIMEOUT};
use crate::model::ContentRecord;
use crate::permissions::Access;
use crate::security::Permission;

fn holds(req: &Request, ctx: &Ctx<'_>, lock: &Lock) -> bool {
    ctx.principal.login() == Some(lock.creator.as_str())
        || req.header_value("lock-token").map(str::trim) == Some(lock.token.as_str())
}

/// POST `<path>/@lock {stealable?, timeout?}`: lock the object; 200 with the lock and its token.
pub fn post(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    obj: ContentRecord,
) -> Result<Response> {
    route.no_params("<path>/@lock")?;
    let body = json_body(req)?;
    ctx.require(Permission::Modify, &obj)?;
    let stealable = opt_bool(&body, "stealable", true)?;
    let timeout = match body.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT,
        Some(Value::Number(n)) => n
            .as_u64()
            .filter(|t| (1..=MAX_TIMEOUT).contains(t))
            .ok_or_else(|| {
                EngineError::bad_request(format!(
                    "'timeout' must be a whole number of seconds from 1 to {MAX_TIMEOUT}"
                ))
            })?,
        Some(_) => {
            return Err(EngineError::bad_request(
                "'timeout' must be a number of seconds",
            ))
        }
    };
    if let Some(k) = body
        .keys()
        .find(|k| !["stealable", "timeout"].contains(&k.as_str()))
    {
        return Err(EngineError::bad_request(format!(
            "Unknown property '{k}'; a lock takes stealable and timeout"
        )));
    }
    if let Some(existing) = locking::current(ctx, &obj)? {
        if !holds(req, ctx, &existing) {
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
        stealable,
    };
    locking::put(ctx, &obj, &lock)?;
    Ok(Response::json(200, &locking::info(ctx, Some(&lock))))
}

/// GET `<path>/@lock`: the lock, or `{locked: false, stealable: true}`.
pub fn get(ctx: &mut Ctx<'_>, _: &Request, route: &Route, obj: ContentRecord) -> Result<Response> {
    route.no_params("<path>/@lock")?;
    ctx.require(Permission::View, &obj)?;
    let lock = locking::current(ctx, &obj)?;
    Ok(Response::json(200, &locking::info(ctx, lock.as_ref())))
}

/// PATCH `<path>/@lock`: refresh the caller's lock (its creation time becomes now).
pub fn patch(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    obj: ContentRecord,
) -> Result<Response> {
    route.no_params("<path>/@lock")?;
    ctx.require(Permission::Modify, &obj)?;
    let mut lock = locking::current(ctx, &obj)?.ok_or_else(|| {
        EngineError::bad_request(format!(
            "'{}' is not locked; POST @lock to lock it",
            ctx.url(&obj.path)
        ))
    })?;
    if !holds(req, ctx, &lock) {
        return Err(EngineError::Locked(format!(
            "Resource is locked. Only '{}' (or the holder of the lock token) can refresh this lock.",
            lock.creator
        )));
    }
    lock.created = ctx.now();
    locking::put(ctx, &obj, &lock)?;
    Ok(Response::json(200, &locking::info(ctx, Some(&lock))))
}

/// DELETE `<path>/@lock {force?}`: unlock. Another user's lock needs `force: true` and the right to
/// break it: Modify for a stealable lock, Manage portal for a non-stealable one.
pub fn delete(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    obj: ContentRecord,
) -> Result<Response> {
    route.no_params("<path>/@lock")?;
    let body = json_body(req)?;
    ctx.require(Permission::Modify, &obj)?;
    let force = opt_bool(&body, "force", false)?;
    if let Some(lock) = locking::current(ctx, &obj)? {
        if !holds(req, ctx, &lock) {
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
    Ok(Response::json(200, &locking::info(ctx, None)))
}
