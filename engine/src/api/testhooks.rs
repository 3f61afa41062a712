//! Hooks for contract tests, routed only when the engine was built with
//! [`crate::EngineOptions::test_clock`] (deterministic test mode); production engines answer 404:
//!
//! - `POST /@test-clock {"advance": seconds}` or `{"set": timestamp}` moves the fixed test clock
//!   so contract scenarios over HTTP can test expiry;
//! - `GET /@test-mails/<address>` answers the last mail the engine logged for that address
//!   (password reset tokens; there is no mail delivery yet).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::Call;
use super::router::{Registry, RouteDef};
use crate::core::clock::iso;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::fields::parse_datetime;
use crate::core::model::ContentRecord;
use crate::runtime::context::Ctx;
use crate::runtime::state::{Core, Mail};

/// Register `@test-clock` (present only on engines with a test clock).
pub fn register(r: &mut Registry) {
    r.route(
        RouteDef::post("@test-clock", clock)
            .reads()
            .only_if(has_test_clock)
            .summary("Tests only: move the fixed clock (`advance` seconds, or `set` a time)")
            .body::<ClockRequest>()
            .answers::<ClockAnswer>(),
    );
    r.route(
        RouteDef::get("@test-mails/{to}", mails)
            .only_if(has_test_clock)
            .summary("Tests only: the last mail the engine logged (no mail delivery yet) for `to`")
            .answers::<Mail>(),
    );
}

/// The last mail logged for the address `to` (engines with a test clock keep them); 404 when
/// none was.
fn mails(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let to = call.param("to").unwrap_or_default();
    let last = ctx.core.test_mails().into_iter().rev().find(|m| m.to == to);
    match last {
        Some(m) => Ok(Response::json(200, &m)),
        None => Err(EngineError::NotFound {
            url: call.route.url(&ctx.base_url),
            context: Some(ctx.url("")),
        }),
    }
}

fn has_test_clock(core: &Core) -> bool {
    core.options.test_clock.is_some()
}

/// How to move the clock: one of the two.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClockRequest {
    /// Seconds to move it on (or back, when negative).
    #[serde(default)]
    pub advance: Option<i64>,
    /// The time to set it to.
    #[serde(default)]
    pub set: Option<String>,
}

/// The clock's time now.
#[derive(Serialize, JsonSchema)]
pub struct ClockAnswer {
    /// ISO 8601.
    pub now: String,
}

/// Move the test clock; answers `{"now": ...}`.
fn clock(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let clock = ctx
        .core
        .options
        .test_clock
        .clone()
        .ok_or_else(|| EngineError::Internal("test clock not configured".into()))?;
    let body: ClockRequest = call.body()?;
    match (body.advance, body.set) {
        (Some(n), None) => clock.advance(n),
        (None, Some(s)) => clock.set(
            parse_datetime(&s)
                .ok_or_else(|| EngineError::bad_request("'set' must be a timestamp"))?,
        ),
        _ => {
            return Err(EngineError::bad_request(
                "Send {\"advance\": seconds} or {\"set\": timestamp}",
            ))
        }
    }
    Ok(Response::json(
        200,
        &ClockAnswer {
            now: iso(&ctx.now()),
        },
    ))
}
