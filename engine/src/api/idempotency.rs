//! `Idempotency-Key` over HTTP: any unsafe request (POST, PATCH, PUT, DELETE, ...) may carry
//! `Idempotency-Key: <1 to 255 visible ASCII characters>`. When a request that writes answers
//! 2xx, its answer (status, `Content-Type`, `Location`, `ETag`, body) is stored for the caller
//! (the user's stable uid, not the login name: a user deleted and created again with the same
//! login is another caller) and key in the same transaction as its change
//! ([`crate::sync::idempotency`], kept [`crate::sync::idempotency::WINDOW_HOURS`] hours), with a
//! fingerprint of the request (SHA-256 of method, path, query and body). The same caller sending
//! the same request with the same key again gets the stored answer with `Idempotent-Replayed:
//! true`, without the request running again; the same key with another request (method, path,
//! query or body) is a 422 `Unprocessable`, as the IETF Idempotency-Key draft says; a malformed
//! key a 400. Answers other than 2xx are not remembered (the request may be sent again and run).
//!
//! Inside a group commit each request runs in its own savepoint of the one transaction, so a
//! second request with the key of an earlier one in the same group finds its record and replays.

use sha2::{Digest, Sha256};

use crate::core::error::{EngineError, Result};
use crate::core::http::{Request, Response};
use crate::runtime::context::Ctx;
use crate::sync::idempotency::{self, Record};

/// The request header.
pub const HEADER: &str = "Idempotency-Key";

/// The header of replayed answers.
pub const REPLAYED: &str = "Idempotent-Replayed";

/// The answer headers a replay repeats.
const KEPT_HEADERS: &[&str] = &["Content-Type", "Location", "ETag"];

/// The `Idempotency-Key` of an unsafe request, if it has one; a malformed one is a 400. Safe
/// requests have none (the header is ignored).
pub fn key_of(req: &Request) -> Result<Option<String>> {
    if req.method.is_safe() {
        return Ok(None);
    }
    let Some(value) = req.header_value(HEADER) else {
        return Ok(None);
    };
    let ok = (1..=255).contains(&value.len()) && value.bytes().all(|b| (0x21..=0x7e).contains(&b));
    if !ok {
        return Err(EngineError::bad_request(
            "The Idempotency-Key header must be 1 to 255 visible ASCII characters (no spaces)",
        ));
    }
    Ok(Some(value.to_string()))
}

/// Whose keys these are: `u:<uid>` for a user (stable: a later user with the same login has
/// another uid), empty for anonymous callers.
fn owner(ctx: &Ctx<'_>) -> Result<String> {
    let Some(login) = ctx.principal.login() else {
        return Ok(String::new());
    };
    let uid = crate::people::auth::users::get(ctx, login)?
        .map(|u| u.uid)
        .filter(|uid| !uid.is_empty());
    Ok(match uid {
        Some(uid) => format!("u:{uid}"),
        // a principal without a stored account (none today): its login, marked apart
        None => format!("l:{login}"),
    })
}

/// The hex SHA-256 of what makes `req` the request it is: method, path, query and body.
fn fingerprint(req: &Request) -> String {
    let mut h = Sha256::new();
    for part in [
        req.method.as_str().as_bytes(),
        req.path.as_bytes(),
        req.query.as_bytes(),
    ] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part);
    }
    h.update(&req.body);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The stored answer for the caller's `key`, marked as replayed, if there is one for this
/// request; a 422 when the key was used for another request (method, path, query or body).
pub fn replay(ctx: &Ctx<'_>, req: &Request, key: &str) -> Result<Option<Response>> {
    let Some(rec) = idempotency::load(ctx, &owner(ctx)?, key)? else {
        return Ok(None);
    };
    if rec.method != req.method.as_str() || rec.path != req.path {
        return Err(EngineError::Unprocessable(format!(
            "The Idempotency-Key '{key}' was already used for {} {}; send a new key for another \
             request",
            rec.method, rec.path
        )));
    }
    if !rec.fingerprint.is_empty() && rec.fingerprint != fingerprint(req) {
        return Err(EngineError::Unprocessable(format!(
            "The Idempotency-Key '{key}' was already used for another request to {} {} (a \
             different query or body); send a new key for another request",
            rec.method, rec.path
        )));
    }
    let mut resp = Response::empty(rec.status);
    resp.headers = rec.headers;
    resp.body = rec.body;
    Ok(Some(resp.with_header(REPLAYED, "true")))
}

/// Remember `resp` as the answer to the caller's `key` when it is a 2xx with its body at hand.
pub fn remember(ctx: &mut Ctx<'_>, req: &Request, key: &str, resp: &Response) -> Result<()> {
    if !(200..300).contains(&resp.status) || resp.stream.is_some() || resp.lines.is_some() {
        return Ok(());
    }
    let headers = resp
        .headers
        .iter()
        .filter(|(name, _)| KEPT_HEADERS.iter().any(|k| k.eq_ignore_ascii_case(name)))
        .cloned()
        .collect();
    let rec = Record {
        method: req.method.as_str().to_string(),
        path: req.path.clone(),
        fingerprint: fingerprint(req),
        status: resp.status,
        headers,
        expires: 0,
        body: resp.body.clone(),
    };
    let who = owner(ctx)?;
    idempotency::store(ctx, &who, key, rec)
}
