//! Authentication: turning a request's credentials into a [`Principal`].
//!
//! Accepted, in this order: `Authorization: Bearer <JWT>` (from `POST /@login`), `Authorization:
//! Basic`, and the `auth_token` cookie that Volto sets. No credentials means anonymous; credentials
//! that do not check out are a 401, never a silent downgrade to anonymous.
//!
//! HTTP Basic would cost one slow argon2 verification per request; a verified (login, password,
//! stored hash) triple is remembered as a SHA-256 digest, so a changed password or hash misses the
//! cache, and the password itself is never kept.

pub mod jwt;
pub mod password;
pub mod users;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::context::Ctx;
use crate::error::{EngineError, Result};
use crate::http::Request;
use crate::keys;
use crate::security::Principal;
use crate::site;

/// Credentials found on a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credentials {
    /// None.
    None,
    /// A bearer token (header or cookie).
    Bearer(String),
    /// Basic login and password.
    Basic(String, String),
}

/// Extract the credentials of `req`; a malformed `Authorization` header is a 401.
pub fn credentials(req: &Request) -> Result<Credentials> {
    if let Some(h) = req.header_value("authorization") {
        let h = h.trim();
        let (scheme, rest) = h.split_once(' ').unwrap_or((h, ""));
        let rest = rest.trim();
        if scheme.eq_ignore_ascii_case("bearer") && !rest.is_empty() {
            return Ok(Credentials::Bearer(rest.to_string()));
        }
        if scheme.eq_ignore_ascii_case("basic") {
            let decoded = B64
                .decode(rest)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| unauthorized("Malformed Basic credentials"))?;
            let (login, pw) = decoded
                .split_once(':')
                .ok_or_else(|| unauthorized("Malformed Basic credentials"))?;
            return Ok(Credentials::Basic(login.to_string(), pw.to_string()));
        }
        return Err(unauthorized(
            "Unsupported Authorization scheme (use Bearer or Basic)",
        ));
    }
    if let Some(cookies) = req.header_value("cookie") {
        for c in cookies.split(';') {
            if let Some(tok) = c.trim().strip_prefix("auth_token=") {
                if !tok.is_empty() {
                    return Ok(Credentials::Bearer(tok.to_string()));
                }
            }
        }
    }
    Ok(Credentials::None)
}

fn unauthorized(msg: &str) -> EngineError {
    EngineError::Unauthorized(msg.to_string())
}

/// Who makes `req`.
pub fn authenticate(ctx: &Ctx<'_>, req: &Request) -> Result<Principal> {
    match credentials(req)? {
        Credentials::None => Ok(Principal::Anonymous),
        Credentials::Bearer(token) => {
            // Verified tokens are remembered per store generation (see `Core::token_cache_get`),
            // learnt only from read transactions: those see committed states alone.
            let cached = ctx.core.caches_enabled() && !ctx.is_write();
            let generation = if cached {
                crate::cache::generation(ctx)?
            } else {
                0
            };
            let now = ctx.now().timestamp();
            if cached {
                if let Some(p) = ctx.core.token_cache_get(&token, generation, now) {
                    return Ok(p);
                }
            }
            let claims = verify_token(ctx, &token)?;
            let user = users::get(ctx, &claims.sub)?
                .ok_or_else(|| unauthorized("The token's user no longer exists"))?;
            let principal = Principal::User(user.to_user());
            if cached {
                ctx.core
                    .token_cache_insert(&token, generation, claims.exp, &principal);
            }
            Ok(principal)
        }
        Credentials::Basic(login, pw) => {
            let user = check_password(ctx, &login, &pw)?
                .ok_or_else(|| unauthorized("Wrong login and/or password."))?;
            Ok(Principal::User(user.to_user()))
        }
    }
}

/// Verify a token's signature, expiry and that it was not revoked.
pub fn verify_token(ctx: &Ctx<'_>, token: &str) -> Result<jwt::Claims> {
    let secret = site::secret(ctx)?;
    let claims = jwt::verify(token, &secret, ctx.now().timestamp())
        .map_err(|e| unauthorized(&format!("Invalid token: {e}")))?;
    if ctx.get(&keys::revoked_token(&claims.jti))?.is_some() {
        return Err(unauthorized(
            "Invalid token: the token was revoked (logged out)",
        ));
    }
    Ok(claims)
}

/// The user `login` if `password` is theirs.
pub fn check_password(
    ctx: &Ctx<'_>,
    login: &str,
    password: &str,
) -> Result<Option<users::UserRecord>> {
    let Some(user) = users::get(ctx, login)? else {
        return Ok(None);
    };
    let digest: [u8; 32] = {
        let mut h = Sha256::new();
        for part in [login, "\0", password, "\0", &user.password_hash] {
            h.update(part.as_bytes());
        }
        h.finalize().into()
    };
    if ctx.core.basic_cache_contains(&digest) {
        return Ok(Some(user));
    }
    if password::verify(password, &user.password_hash) {
        ctx.core.basic_cache_insert(digest);
        return Ok(Some(user));
    }
    Ok(None)
}

/// Issue a token for `user`.
pub fn issue_token(ctx: &Ctx<'_>, user: &users::UserRecord) -> Result<String> {
    let secret = site::secret(ctx)?;
    let now = ctx.now().timestamp();
    let claims = jwt::Claims {
        sub: user.login.clone(),
        fullname: user.fullname.clone(),
        iat: now,
        exp: now + ctx.core.options.token_ttl_secs,
        jti: ctx.new_uid(),
    };
    Ok(jwt::sign(&claims, &secret))
}

/// Revoke a token (until it would have expired anyway).
pub fn revoke(ctx: &mut Ctx<'_>, claims: &jwt::Claims) -> Result<()> {
    ctx.put(
        &keys::revoked_token(&claims.jti),
        claims.exp.to_string().as_bytes(),
    )
}
