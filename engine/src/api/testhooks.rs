//! `POST /@test-clock {"advance": seconds}` or `{"set": timestamp}`: moves the fixed test clock so
//! contract scenarios over HTTP can test expiry. Only routed when the engine was built with
//! [`crate::EngineOptions::test_clock`] (deterministic test mode); production engines answer 404.

use serde_json::{json, Value};

use super::{json_body, Route};
use crate::clock::iso;
use crate::context::Ctx;
use crate::error::{EngineError, Result};
use crate::http::{Request, Response};
use crate::model::fields::parse_datetime;
use crate::model::ContentRecord;

/// Move the test clock; answers `{"now": ...}`.
pub fn clock(ctx: &mut Ctx<'_>, req: &Request, _: &Route, _: ContentRecord) -> Result<Response> {
    let clock = ctx
        .core
        .options
        .test_clock
        .clone()
        .ok_or_else(|| EngineError::Internal("test clock not configured".into()))?;
    let body = json_body(req)?;
    match (body.get("advance"), body.get("set")) {
        (Some(Value::Number(n)), None) if n.is_i64() => clock.advance(n.as_i64().unwrap_or(0)),
        (None, Some(Value::String(s))) => clock.set(
            parse_datetime(s)
                .ok_or_else(|| EngineError::bad_request("'set' must be a timestamp"))?,
        ),
        _ => {
            return Err(EngineError::bad_request(
                "Send {\"advance\": seconds} or {\"set\": timestamp}",
            ))
        }
    }
    Ok(Response::json(200, &json!({ "now": iso(&ctx.now()) })))
}
