//! Authentication: turning a request's credentials into a [`Principal`].
//!
//! The credentials themselves are read from the request's headers by the HTTP layer
//! ([`crate::core::http::Request::credentials`]). Accepted, in this order: `Authorization: Bearer
//! <JWT>` (from `POST /@login`), `Authorization: Basic`, and the `auth_token` cookie that Volto
//! sets. No credentials means anonymous; credentials that do not check out are a 401, never a
//! silent downgrade to anonymous.
//!
//! HTTP Basic would cost one slow argon2 verification per request; a verified (login, password,
//! stored hash) triple is remembered as a SHA-256 digest, so a changed password or hash misses the
//! cache, and the password itself is never kept.

pub mod external;
pub mod groups;
pub mod jwt;
pub mod password;
pub mod users;

use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
pub use crate::core::http::Credentials;
use crate::core::keys;
use crate::core::security::Principal;
use crate::runtime::context::Ctx;
use crate::site::settings;

/// Who the caller presenting `credentials` (found on the request by
/// [`crate::core::http::Request::credentials`]) is.
pub fn authenticate(ctx: &Ctx<'_>, credentials: Credentials) -> Result<Principal> {
    match credentials {
        Credentials::None => Ok(Principal::Anonymous),
        Credentials::Bearer(token) => {
            // Verified tokens are remembered by the response cache with what verifying them
            // read (`crate::runtime::cache`), learnt only by requests that record their reads: read
            // transactions, which see committed states alone.
            let cached = ctx.core.caches_enabled() && ctx.reads().is_some();
            let generation = if cached { ctx.generation()? } else { 0 };
            let now = ctx.now_for_credentials().timestamp();
            let key = crate::runtime::cache::ResponseCache::caller_key("t", &token);
            if cached {
                if let Some(c) = ctx.core.responses.caller(Some(generation), &key, now) {
                    // The answer depends on what the verification read.
                    ctx.add_reads(&c.reads);
                    return Ok(c.principal);
                }
            }
            let claims = verify_token(ctx, &token)?;
            let user = token_user(ctx, &claims)?;
            let principal = Principal::User(groups::resolve(ctx, &user)?);
            if let (true, Some(reads)) = (cached, ctx.reads()) {
                let caller = crate::runtime::cache::Caller {
                    principal: principal.clone(),
                    exp: claims.exp,
                    reads: std::sync::Arc::new(reads),
                };
                ctx.core
                    .responses
                    .insert_caller(generation, key, caller, now);
            }
            Ok(principal)
        }
        Credentials::Basic(login, pw) => {
            if !ctx.core.options.login.password {
                return Err(unauthorized(PASSWORD_LOGIN_OFF));
            }
            let user = check_password(ctx, &login, &pw)?
                .ok_or_else(|| unauthorized("Wrong login and/or password."))?;
            Ok(Principal::User(groups::resolve(ctx, &user)?))
        }
    }
}

/// Verify a token's signature, expiry and that it was not revoked. A signature found valid is
/// remembered (bounded, [`crate::runtime::state::Core::token_checked`]) with the secret that
/// checked it, so a rotated secret checks it again; the expiry and the revocation are checked
/// on every call.
pub fn verify_token(ctx: &Ctx<'_>, token: &str) -> Result<jwt::Claims> {
    let secret = settings::secret(ctx)?;
    let now = ctx.now_for_credentials().timestamp();
    // A signature checked before with this secret is not checked again (the HMAC and the
    // decoding); its expiry is, as everything below.
    let claims = match ctx.core.token_checked(token, &secret) {
        Some(claims) if claims.exp > now => claims,
        _ => {
            let claims = jwt::verify(token, &secret, now)
                .map_err(|e| unauthorized(&format!("Invalid token: {e}")))?;
            ctx.core.token_remember(token, &secret, &claims);
            claims
        }
    };
    if ctx.get(&keys::revoked_token(&claims.jti))?.is_some() {
        return Err(unauthorized(
            "Invalid token: the token was revoked (logged out)",
        ));
    }
    Ok(claims)
}

/// The user a verified token names, if the token is still bound to its credential: the same
/// user (not a later one with the same login) at the same credential version (no password
/// change or logout of all sessions since it was issued). Its roles are the user's current ones
/// (read here, on every request), not the ones it had when the token was issued.
pub fn token_user(ctx: &Ctx<'_>, claims: &jwt::Claims) -> Result<users::UserRecord> {
    let user = users::get(ctx, &claims.sub)?
        .ok_or_else(|| unauthorized("The token's user no longer exists"))?;
    if user.uid != claims.uid {
        return Err(unauthorized("The token's user no longer exists"));
    }
    if user.credential_version != claims.cv {
        return Err(unauthorized(
            "Invalid token: the user's password changed, or all its sessions were logged out, \
             since it was issued",
        ));
    }
    Ok(user)
}

/// The user `login` if `password` is theirs. An unknown login costs one password verification
/// too (against [`crate::runtime::state::Core::dummy_password_hash`]), so the answer's speed does not tell
/// whether a login exists.
pub fn check_password(
    ctx: &Ctx<'_>,
    login: &str,
    password: &str,
) -> Result<Option<users::UserRecord>> {
    let Some(user) = users::get(ctx, login)? else {
        let _ = password::verify(password, ctx.core.dummy_password_hash());
        return Ok(None);
    };
    if ctx
        .core
        .basic_verified(login, password, &user.password_hash)
    {
        return Ok(Some(user));
    }
    if password::verify(password, &user.password_hash) {
        ctx.core
            .basic_remember(login, password, &user.password_hash);
        return Ok(Some(user));
    }
    Ok(None)
}

/// Issue a token for `user`.
pub fn issue_token(ctx: &Ctx<'_>, user: &users::UserRecord) -> Result<String> {
    let secret = settings::secret(ctx)?;
    let now = ctx.now().timestamp();
    let claims = jwt::Claims {
        sub: user.login.clone(),
        fullname: user.fullname.clone(),
        iat: now,
        exp: now + ctx.core.options.token_ttl_secs,
        jti: ctx.new_uid(),
        uid: user.uid.clone(),
        cv: user.credential_version,
    };
    Ok(jwt::sign(&claims, &secret))
}

/// Why a password is refused when the operator turned password login off.
const PASSWORD_LOGIN_OFF: &str =
    "Password login is turned off on this site: log in through one of the identity providers \
     that GET @login lists";

/// Log `login` in with `password`: a token for the user ([`Event::UserLoggedIn`]), or `None`
/// when the credentials do not check out. A 403 when the operator turned password login off
/// ([`crate::runtime::state::LoginOptions::password`]).
pub fn log_in(ctx: &mut Ctx<'_>, login: &str, password: &str) -> Result<Option<String>> {
    if !ctx.core.options.login.password {
        return Err(EngineError::Forbidden(PASSWORD_LOGIN_OFF.to_string()));
    }
    let Some(user) = check_password(ctx, login, password)? else {
        return Ok(None);
    };
    let token = issue_token(ctx, &user)?;
    ctx.emit(Event::UserLoggedIn {
        login: user.login.clone(),
    });
    Ok(Some(token))
}

/// Log out: revoke the token whose claims are `claims` ([`Event::UserLoggedOut`]).
pub fn log_out(ctx: &mut Ctx<'_>, claims: &jwt::Claims) -> Result<()> {
    revoke(ctx, claims)?;
    ctx.emit(Event::UserLoggedOut {
        login: claims.sub.clone(),
    });
    Ok(())
}

/// Log out of every session: all tokens of the user `claims` names stop working (the caller
/// then logs the token itself out with [`log_out`]).
pub fn log_out_everywhere(ctx: &mut Ctx<'_>, claims: &jwt::Claims) -> Result<()> {
    users::end_sessions(ctx, &claims.sub)
}

/// Revoke a token (until it would have expired anyway).
pub fn revoke(ctx: &mut Ctx<'_>, claims: &jwt::Claims) -> Result<()> {
    ctx.put(
        &keys::revoked_token(&claims.jti),
        claims.exp.to_string().as_bytes(),
    )?;
    ctx.emit(Event::TokenRevoked {
        jti: claims.jti.clone(),
    });
    Ok(())
}

fn unauthorized(msg: &str) -> EngineError {
    EngineError::Unauthorized(msg.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::clock::FixedClock;

    /// A token whose signature was checked before is still refused at once when it is revoked,
    /// when its user's sessions end (password change, logout everywhere), when the site's
    /// secret changes, and when it expires.
    #[test]
    fn remembered_tokens_are_checked_on_every_request() {
        let options = crate::EngineOptions::for_tests();
        let clock = options.test_clock.clone().expect("a test clock");
        let engine = crate::Engine::new(crate::MemStore::new(), options).unwrap();
        engine
            .create_site(&crate::SiteSetup::new("secret"))
            .unwrap();
        let issue = || {
            engine
                .with_write(|ctx| {
                    let user = users::get(ctx, "admin")?.expect("the admin");
                    issue_token(ctx, &user)
                })
                .unwrap()
        };
        let check = |token: &str| {
            engine.with_write(|ctx| {
                let claims = verify_token(ctx, token)?;
                token_user(ctx, &claims).map(|_| claims)
            })
        };
        // Revoked.
        let t = issue();
        let claims = check(&t).unwrap();
        assert!(check(&t).is_ok(), "checked again from the cache");
        engine.with_write(|ctx| revoke(ctx, &claims)).unwrap();
        assert!(check(&t).is_err());
        // The user's sessions ended.
        let t = issue();
        check(&t).unwrap();
        engine
            .with_write(|ctx| users::end_sessions(ctx, "admin"))
            .unwrap();
        assert!(check(&t).is_err());
        // Another secret.
        let t = issue();
        check(&t).unwrap();
        engine
            .with_write(|ctx| {
                let mut s = settings::settings(ctx)?;
                s.secret = "b3RoZXIgc2VjcmV0".into();
                settings::save_settings(ctx, &s)
            })
            .unwrap();
        assert!(check(&t).is_err());
        // Expired.
        let t = issue();
        check(&t).unwrap();
        let ttl = engine.core().options.token_ttl_secs;
        clock.set(FixedClock::default_instant() + chrono::Duration::seconds(ttl + 1));
        let err = check(&t).unwrap_err();
        assert!(err.to_string().contains("expired"), "{err}");
    }
}
