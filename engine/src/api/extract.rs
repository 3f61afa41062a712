//! Typed input: a request's JSON body and query string parsed into serde types, with every
//! rejection a 400 (or 415) that names the field and what was expected.
//!
//! Handlers get a [`Call`]: the request, its parsed route, the matched route's named path
//! parameters, and typed accessors ([`Call::body`], [`Call::query`]). Request DTOs declare
//! `#[serde(deny_unknown_fields)]`, so a misspelt property is a 400 naming it rather than being
//! silently ignored.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::Route;
use crate::core::error::{EngineError, Result};
use crate::core::http::Request;

/// One request as a handler sees it.
pub struct Call<'r> {
    /// The request.
    pub req: &'r Request,
    /// Its parsed path and query.
    pub route: &'r Route,
    /// The named path parameters of the matched route (`@workflow/{transition}`).
    pub params: Vec<(&'static str, &'r str)>,
}

impl<'r> Call<'r> {
    /// The path parameter `name` of the matched route, if the request gave it.
    pub fn param(&self, name: &str) -> Option<&'r str> {
        self.params
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }

    /// The JSON body parsed as `T`; an empty body reads as `{}`. Refusals: 415 for a body that
    /// is declared as something other than JSON, 400 for malformed JSON, a body that is not an
    /// object, or a property of the wrong type, missing or unknown (the message names it).
    pub fn body<T: DeserializeOwned>(&self) -> Result<T> {
        body(self.req)
    }

    /// The query string parsed as `T` (unknown parameters are ignored: clients add their own,
    /// such as cache busters). A malformed value is a 400 naming the parameter.
    pub fn query<T: DeserializeOwned>(&self) -> Result<T> {
        query(self.route)
    }

    /// The `Lock-Token` header, if sent.
    pub fn lock_token(&self) -> Option<&'r str> {
        self.req.header_value("lock-token")
    }

    /// Whether the client asked for the changed object in the answer (`Prefer:
    /// return=representation`).
    pub fn wants_representation(&self) -> bool {
        self.req
            .header_value("prefer")
            .is_some_and(|p| p.split(',').any(|x| x.trim() == "return=representation"))
    }
}

/// The JSON body of `req` as a map (for endpoints whose bodies are open, such as content, whose
/// fields the type registry defines); the same refusals as [`Call::body`].
pub fn json_object(req: &Request) -> Result<serde_json::Map<String, Value>> {
    match json_value(req)? {
        Value::Object(m) => Ok(m),
        other => Err(not_an_object(&other)),
    }
}

fn not_an_object(v: &Value) -> EngineError {
    EngineError::bad_request(format!(
        "The body must be a JSON object, got {}",
        crate::core::model::fields::json_kind(v)
    ))
}

fn json_value(req: &Request) -> Result<Value> {
    if req.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    if let Some(ct) = req.header_value("content-type") {
        let ct = ct.to_ascii_lowercase();
        if !ct.starts_with("application/json") && !ct.contains("+json") {
            return Err(EngineError::UnsupportedMediaType(format!(
                "The body must be JSON (Content-Type: application/json), got '{ct}'"
            )));
        }
    }
    serde_json::from_slice(&req.body)
        .map_err(|e| EngineError::bad_request(format!("The body is not valid JSON: {e}")))
}

/// Parse the body of `req` as `T` (see [`Call::body`]).
pub fn body<T: DeserializeOwned>(req: &Request) -> Result<T> {
    let value = json_value(req)?;
    if !value.is_object() {
        return Err(not_an_object(&value));
    }
    from_value(value, "property")
}

/// Decode `value` as `T`; a mismatch is a 400 naming where it is (`what` says what a path
/// element is: a body property or a query parameter).
pub fn from_value<T: DeserializeOwned>(value: Value, what: &str) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|e| rejection(e, what))
}

fn rejection(e: serde_path_to_error::Error<serde_json::Error>, what: &str) -> EngineError {
    let path = e.path().to_string();
    let inner = e.into_inner().to_string();
    if path == "." || path.is_empty() {
        EngineError::bad_request(format!("Invalid body: {inner}"))
    } else {
        EngineError::bad_request(format!("Invalid {what} '{path}': {inner}"))
    }
}

/// Parse the query of `route` as `T` (see [`Call::query`]). Repeated parameters and Zope's
/// `name:list` form become sequences.
pub fn query<T: DeserializeOwned>(route: &Route) -> Result<T> {
    let encoded: Vec<(String, String)> = route
        .query
        .pairs
        .iter()
        .map(|(k, v)| (k.strip_suffix(":list").unwrap_or(k).to_string(), v.clone()))
        .collect();
    let text = serde_html_form::to_string(&encoded)
        .map_err(|e| EngineError::Internal(format!("re-encoding a query: {e}")))?;
    let de = serde_html_form::Deserializer::from_bytes(text.as_bytes());
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        EngineError::bad_request(format!("Query parameter '{path}': {inner}"))
    })
}
