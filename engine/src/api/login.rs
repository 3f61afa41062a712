//! `@login`, `@login-renew` and `@logout`: JWT sessions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::Call;
use super::router::{Carriage, RouteDef, RouteTable};
use crate::core::error::{EngineError, Result, SessionFailure};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::people::auth::{self, Credentials};
use crate::runtime::context::Ctx;

/// Register the session routes.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@login", options)
            .root_only()
            .summary(
                "The external login options (single sign-on providers), as Plone's login \
                 add-ons list them for Volto; 405 when the site has none",
            )
            .answers::<LoginOptionList>(),
    );
    r.route(
        RouteDef::post("@login", login)
            .carried(Carriage::Login)
            .summary(
                "Log in with `login` and `password`; answers a token for `Authorization: Bearer`",
            )
            .body::<LoginRequest>()
            .answers::<TokenAnswer>(),
    );
    r.route(
        RouteDef::post("@login-renew", renew)
            .summary("A fresh token for a valid one (which is revoked)")
            .answers::<TokenAnswer>(),
    );
    r.route(
        RouteDef::post("@logout", logout)
            .status(204)
            .summary(
                "Revoke the token sent; with `{\"all\": true}`, every token of the user \
                 (logout of all sessions)",
            )
            .body::<LogoutRequest>(),
    );
}

/// Login credentials.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    /// The login name.
    pub login: Option<String>,
    /// The password.
    pub password: Option<String>,
}

/// What `@logout` ends.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct LogoutRequest {
    /// `true`: end every session (token) of the user, not only the token sent.
    #[serde(default)]
    pub all: bool,
}

/// A token.
#[derive(Serialize, JsonSchema)]
pub struct TokenAnswer {
    /// A JWT for `Authorization: Bearer`.
    pub token: String,
}

/// The external login options.
#[derive(Serialize, JsonSchema)]
pub struct LoginOptionList {
    /// One per configured identity provider, in the operator's order.
    pub options: Vec<LoginOption>,
}

/// One external login option.
#[derive(Serialize, JsonSchema)]
pub struct LoginOption {
    /// The provider's id.
    pub id: String,
    /// The login plugin that serves it: `oidc` (the add-on then calls `@login-oidc/<id>`).
    pub plugin: String,
    /// What the login form shows.
    pub title: String,
    /// `<site>/@login-oidc/<id>`: where the login starts.
    pub url: String,
}

/// GET `/@login` → `{options: [{id, plugin, title, url}]}`. Without any provider it is what
/// Plone without a login add-on answers: 405, `@login` is only POSTed to.
fn options(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    if ctx.core.options.login.providers.is_empty() {
        return Err(EngineError::MethodNotAllowed {
            method: "GET".into(),
            allowed: vec!["POST", "OPTIONS"],
        });
    }
    let options = ctx
        .core
        .options
        .login
        .providers
        .iter()
        .map(|p| LoginOption {
            id: p.id.clone(),
            plugin: "oidc".to_string(),
            title: p.title.clone(),
            url: format!("{}/@login-oidc/{}", ctx.base_url, p.id),
        })
        .collect();
    Ok(Response::json(200, &LoginOptionList { options }))
}

/// POST `/@login` `{login, password}` → `{token}`.
fn login(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let body: LoginRequest = call.body()?;
    let (Some(login), Some(password)) = (body.login, body.password) else {
        return Err(EngineError::Session {
            failure: SessionFailure::MissingCredentials,
            message: "Login and password must be provided in the body as strings: {\"login\": ..., \"password\": ...}".into(),
        });
    };
    let token = auth::log_in(ctx, &login, &password)?.ok_or_else(|| EngineError::Session {
        failure: SessionFailure::InvalidCredentials,
        message: "Wrong login and/or password.".into(),
    })?;
    Ok(token_answer(token))
}

/// A fresh token: no cache keeps it.
fn token_answer(token: String) -> Response {
    Response::json(200, &TokenAnswer { token }).with_header("Cache-Control", "no-store")
}

fn bearer(call: &Call<'_>) -> Result<String> {
    match call.req.credentials().map_err(EngineError::Unauthorized)? {
        Credentials::Bearer(t) => Ok(t),
        _ => Err(EngineError::Unauthorized(
            "This needs a login token: send it as 'Authorization: Bearer <token>'".into(),
        )),
    }
}

/// POST `/@login-renew` with a valid token → a fresh `{token}`; the old one is revoked. Without
/// a valid session token: 401, a refused session ([`SessionFailure::InvalidSession`]).
fn renew(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let session = |e: EngineError| match e {
        EngineError::Unauthorized(message) => EngineError::Session {
            failure: SessionFailure::InvalidSession,
            message,
        },
        other => other,
    };
    let token = bearer(call).map_err(session)?;
    let claims = auth::verify_token(ctx, &token).map_err(session)?;
    let user = auth::token_user(ctx, &claims).map_err(session)?;
    let fresh = auth::issue_token(ctx, &user)?;
    auth::revoke(ctx, &claims)?;
    Ok(token_answer(fresh))
}

/// POST `/@logout` with a valid token: the token stops working (with `{"all": true}`, every
/// token of the user does); 204.
fn logout(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let body: LogoutRequest = call.body()?;
    let token = bearer(call)?;
    let claims = auth::verify_token(ctx, &token)?;
    auth::token_user(ctx, &claims)?;
    if body.all {
        auth::log_out_everywhere(ctx, &claims)?;
    }
    auth::log_out(ctx, &claims)?;
    Ok(Response::empty(204))
}
