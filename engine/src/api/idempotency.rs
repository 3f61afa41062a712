//! `Idempotency-Key` over HTTP: any unsafe request (POST, PATCH, PUT, DELETE, ...) may carry
//! `Idempotency-Key: <1 to 255 visible ASCII characters>`. When a request that writes answers
//! 2xx, its answer (status, `Content-Type`, `Location`, `ETag`, body) is stored for the caller and
//! key in the same transaction as its change ([`crate::sync::idempotency`], kept
//! [`crate::sync::idempotency::WINDOW_HOURS`] hours). The same caller sending the same key again gets
//! the stored answer with `Idempotent-Replayed: true`, without the request running again; the
//! same key with another method or path is a 422 `Unprocessable`; a malformed key a 400. Answers
//! other than 2xx are not remembered (the request may be sent again and run).
//!
//! Inside a group commit each request runs in its own savepoint of the one transaction, so a
//! second request with the key of an earlier one in the same group finds its record and replays.

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

fn login(ctx: &Ctx<'_>) -> String {
    ctx.principal.login().unwrap_or("").to_string()
}

/// The stored answer for the caller's `key`, marked as replayed, if there is one for this
/// method and path; a 422 when the key was used for another method or path.
pub fn replay(ctx: &Ctx<'_>, req: &Request, key: &str) -> Result<Option<Response>> {
    let Some(rec) = idempotency::load(ctx, &login(ctx), key)? else {
        return Ok(None);
    };
    if rec.method != req.method.as_str() || rec.path != req.path {
        return Err(EngineError::Unprocessable(format!(
            "The Idempotency-Key '{key}' was already used for {} {}; send a new key for another \
             request",
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
        status: resp.status,
        headers,
        expires: 0,
        body: resp.body.clone(),
    };
    let who = login(ctx);
    idempotency::store(ctx, &who, key, rec)
}
