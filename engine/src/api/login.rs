//! `@login`, `@login-renew` and `@logout`: JWT sessions.

use serde_json::{json, Value};

use super::{json_body, Route};
use crate::auth::{self, Credentials};
use crate::context::Ctx;
use crate::error::{EngineError, Result};
use crate::http::{Request, Response};
use crate::model::ContentRecord;

/// POST `/@login` `{login, password}` → `{token}`.
pub fn login(ctx: &mut Ctx<'_>, req: &Request, _: &Route, _: ContentRecord) -> Result<Response> {
    let body = json_body(req)?;
    let (Some(Value::String(login)), Some(Value::String(password))) =
        (body.get("login"), body.get("password"))
    else {
        return Err(EngineError::bad_request(
            "Login and password must be provided in the body as strings: {\"login\": ..., \"password\": ...}",
        ));
    };
    let user = auth::check_password(ctx, login, password)?
        .ok_or_else(|| EngineError::Unauthorized("Wrong login and/or password.".into()))?;
    let token = auth::issue_token(ctx, &user)?;
    Ok(Response::json(200, &json!({ "token": token })))
}

fn bearer(req: &Request) -> Result<String> {
    match req.credentials().map_err(EngineError::Unauthorized)? {
        Credentials::Bearer(t) => Ok(t),
        _ => Err(EngineError::Unauthorized(
            "This needs a login token: send it as 'Authorization: Bearer <token>'".into(),
        )),
    }
}

/// POST `/@login-renew` with a valid token → a fresh `{token}`; the old one is revoked.
pub fn renew(ctx: &mut Ctx<'_>, req: &Request, _: &Route, _: ContentRecord) -> Result<Response> {
    let token = bearer(req)?;
    let claims = auth::verify_token(ctx, &token)?;
    let user = auth::users::get(ctx, &claims.sub)?
        .ok_or_else(|| EngineError::Unauthorized("The token's user no longer exists".into()))?;
    let fresh = auth::issue_token(ctx, &user)?;
    auth::revoke(ctx, &claims)?;
    Ok(Response::json(200, &json!({ "token": fresh })))
}

/// POST `/@logout` with a valid token: the token stops working; 204.
pub fn logout(ctx: &mut Ctx<'_>, req: &Request, _: &Route, _: ContentRecord) -> Result<Response> {
    let token = bearer(req)?;
    let claims = auth::verify_token(ctx, &token)?;
    auth::revoke(ctx, &claims)?;
    Ok(Response::empty(204))
}
