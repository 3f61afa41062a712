//! The REST API: routing requests to endpoint handlers, one module per endpoint family.
//!
//! A URL path is `<object path>[/@endpoint[/params...]]`; the site root is `/`. A `++api++` segment
//! (what Volto and the official JavaScript client put in front) is dropped, so it serves exactly what
//! the plain path serves, with plain `@id`s.

pub mod addons;
pub mod aliases;
pub mod batching;
pub mod breadcrumbs;
pub mod comments;
pub mod content;
pub mod controlpanels;
pub mod copymove;
pub mod expansion;
pub mod history;
pub mod locking;
pub mod login;
pub mod navigation;
pub mod navroot;
pub mod query;
pub mod serialize;
pub mod testhooks;
pub mod translations;
pub mod users;
pub mod workflow;

use crate::context::Ctx;
use crate::core::Core;
use crate::error::{EngineError, Result};
use crate::http::{Method, Request, Response};
use crate::model::ContentRecord;
use crate::tree;

use query::{decode_component, Query};

/// A parsed request path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Site path of the context object (`""` for the root, else `/a/b`).
    pub object_path: String,
    /// The endpoint name without `@` (`None` for the object itself).
    pub endpoint: Option<String>,
    /// Path segments after the endpoint (`@workflow/publish` → `["publish"]`).
    pub params: Vec<String>,
    /// The decoded query string.
    pub query: Query,
}

impl Route {
    /// Parse the path and query of `req`.
    pub fn parse(req: &Request) -> Result<Self> {
        if !req.path.starts_with('/') {
            return Err(EngineError::bad_request(
                "The request path must start with '/'",
            ));
        }
        let mut object_path = String::new();
        let mut endpoint = None;
        let mut params = Vec::new();
        for raw in req.path.split('/').filter(|s| !s.is_empty()) {
            let seg = decode_component(raw, false)?;
            if seg == "++api++" {
                continue;
            }
            if endpoint.is_some() {
                params.push(seg);
            } else if let Some(name) = seg.strip_prefix('@') {
                endpoint = Some(name.trim_start_matches('@').to_string());
            } else {
                object_path.push('/');
                object_path.push_str(&seg);
            }
        }
        Ok(Route {
            object_path,
            endpoint,
            params,
            query: Query::parse(&req.query)?,
        })
    }

    /// Refuse extra path segments after the endpoint (`usage` shows the expected form).
    pub fn no_params(&self, usage: &str) -> Result<()> {
        if self.params.is_empty() {
            Ok(())
        } else {
            Err(EngineError::bad_request(format!("Expected {usage}")))
        }
    }

    /// The URL this route names (without query), for messages and `@id`s.
    pub fn url(&self, base_url: &str) -> String {
        let mut u = format!("{base_url}{}", self.object_path);
        if let Some(e) = &self.endpoint {
            u.push_str("/@");
            u.push_str(e);
            for p in &self.params {
                u.push('/');
                u.push_str(p);
            }
        }
        u
    }
}

/// A handler: the context object is already resolved.
pub type Handler = fn(&mut Ctx<'_>, &Request, &Route, ContentRecord) -> Result<Response>;

/// The endpoint chosen for a request.
#[derive(Clone, Copy)]
pub struct Endpoint {
    /// Whether it needs the write transaction.
    pub writes: bool,
    handler: Handler,
}

/// One method of an endpoint family: method, writes?, handler.
type MethodRow = (Method, bool, Handler);

fn methods_of(name: &str, core: &Core) -> Option<Vec<MethodRow>> {
    let rows: Vec<MethodRow> = match name {
        "" => vec![
            (Method::Get, false, content::get),
            (Method::Post, true, content::post),
            (Method::Patch, true, content::patch),
            (Method::Delete, true, content::delete),
        ],
        "login" => vec![(Method::Post, false, login::login)],
        "login-renew" => vec![(Method::Post, true, login::renew)],
        "logout" => vec![(Method::Post, true, login::logout)],
        "workflow" => vec![
            (Method::Get, false, workflow::get),
            (Method::Post, true, workflow::post),
        ],
        "history" => vec![
            (Method::Get, false, history::get),
            (Method::Patch, true, history::patch),
        ],
        "lock" => vec![
            (Method::Get, false, locking::get),
            (Method::Post, true, locking::post),
            (Method::Patch, true, locking::patch),
            (Method::Delete, true, locking::delete),
        ],
        "aliases" => vec![
            (Method::Get, false, aliases::get),
            (Method::Post, true, aliases::post),
            (Method::Delete, true, aliases::delete),
        ],
        "copy" => vec![(Method::Post, true, copymove::copy)],
        "move" => vec![(Method::Post, true, copymove::move_)],
        "comments" => vec![
            (Method::Get, false, comments::get),
            (Method::Post, true, comments::post),
            (Method::Patch, true, comments::patch),
            (Method::Delete, true, comments::delete),
        ],
        "translations" => vec![
            (Method::Get, false, translations::get),
            (Method::Post, true, translations::post),
            (Method::Delete, true, translations::delete),
        ],
        "translation-locator" => vec![(Method::Get, false, translations::locate)],
        "navroot" => vec![(Method::Get, false, navroot::get)],
        "navigation" => vec![(Method::Get, false, navigation::get)],
        "breadcrumbs" => vec![(Method::Get, false, breadcrumbs::get)],
        "controlpanels" => vec![
            (Method::Get, false, controlpanels::get),
            (Method::Patch, true, controlpanels::patch),
        ],
        "addons" => vec![
            (Method::Get, false, addons::get),
            (Method::Post, true, addons::post),
        ],
        "users" => vec![
            (Method::Get, false, users::get),
            (Method::Post, true, users::post),
            (Method::Patch, true, users::patch),
            (Method::Delete, true, users::delete),
        ],
        "test-clock" if core.options.test_clock.is_some() => {
            vec![(Method::Post, false, testhooks::clock)]
        }
        _ => return None,
    };
    Some(rows)
}

fn allowed(rows: &[MethodRow]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = rows
        .iter()
        .map(|(m, _, _)| match m {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
            Method::Put => "PUT",
            _ => "OPTIONS",
        })
        .collect();
    if out.contains(&"GET") {
        out.push("HEAD");
    }
    out.push("OPTIONS");
    out
}

fn options_handler(_: &mut Ctx<'_>, _: &Request, _: &Route, _: ContentRecord) -> Result<Response> {
    Ok(Response::empty(204))
}

/// Find the endpoint for `route` and `method`: 404 for an unknown endpoint, 405 for a wrong method.
pub fn lookup(route: &Route, method: &Method, core: &Core, base_url: &str) -> Result<Endpoint> {
    let name = route.endpoint.as_deref().unwrap_or("");
    let rows = methods_of(name, core).ok_or_else(|| EngineError::NotFound {
        url: route.url(base_url.trim_end_matches('/')),
        context: None,
    })?;
    let wanted = if *method == Method::Head {
        &Method::Get
    } else {
        method
    };
    if *method == Method::Options {
        return Ok(Endpoint {
            writes: false,
            handler: options_handler,
        });
    }
    rows.iter()
        .find(|(m, _, _)| m == wanted)
        .map(|(_, writes, handler)| Endpoint {
            writes: *writes,
            handler: *handler,
        })
        .ok_or_else(|| EngineError::MethodNotAllowed {
            method: method.as_str().to_string(),
            allowed: allowed(&rows),
        })
}

/// Resolve the context object and run the endpoint.
pub fn dispatch(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    endpoint: &Endpoint,
) -> Result<Response> {
    let obj = resolve(ctx, route)?;
    let mut resp = (endpoint.handler)(ctx, req, route, obj)?;
    if req.method == Method::Options {
        if let Some(rows) = methods_of(route.endpoint.as_deref().unwrap_or(""), ctx.core) {
            resp = resp.with_header("Allow", &allowed(&rows).join(", "));
        }
    }
    Ok(resp)
}

/// The object at the route's path, or a 404 naming the deepest existing ancestor as context.
fn resolve(ctx: &Ctx<'_>, route: &Route) -> Result<ContentRecord> {
    if let Some(obj) = tree::at_path(ctx, &route.object_path)? {
        return Ok(obj);
    }
    if let Some(target) = crate::aliases::resolve(ctx, &route.object_path)? {
        return Err(EngineError::Redirect {
            location: redirect_url(ctx, route, &target),
            permanent_method: ctx.is_write(),
        });
    }
    let mut context = route.object_path.clone();
    while let Some((parent, _)) = context.rsplit_once('/') {
        context = parent.to_string();
        if tree::uid_at(ctx, &context)?.is_some() {
            break;
        }
    }
    Err(EngineError::NotFound {
        url: route.url(&ctx.base_url),
        context: Some(ctx.url(&context)),
    })
}

/// Where an aliased request goes: the target path with the request's `@endpoint` suffix and query.
fn redirect_url(ctx: &Ctx<'_>, route: &Route, target: &str) -> String {
    let mut moved = route.clone();
    moved.object_path = target.to_string();
    let mut url = moved.url(&ctx.base_url);
    let q: Vec<String> = route
        .query
        .pairs
        .iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                query::encode_component(k),
                query::encode_component(v)
            )
        })
        .collect();
    if !q.is_empty() {
        url.push('?');
        url.push_str(&q.join("&"));
    }
    url
}

/// An optional boolean property of a JSON body (`default` when absent or null); any other JSON
/// type is a 400 naming the property.
pub fn opt_bool(
    body: &serde_json::Map<String, serde_json::Value>,
    name: &str,
    default: bool,
) -> Result<bool> {
    match body.get(name) {
        None | Some(serde_json::Value::Null) => Ok(default),
        Some(serde_json::Value::Bool(b)) => Ok(*b),
        Some(_) => Err(EngineError::bad_request(format!(
            "'{name}' must be a boolean"
        ))),
    }
}

/// Parse a JSON object body; anything else is a 400 that says what was wrong.
pub fn json_body(req: &Request) -> Result<serde_json::Map<String, serde_json::Value>> {
    if req.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(serde_json::Map::new());
    }
    if let Some(ct) = req.header_value("content-type") {
        let ct = ct.to_ascii_lowercase();
        if !ct.starts_with("application/json") && !ct.contains("+json") {
            return Err(EngineError::UnsupportedMediaType(format!(
                "The body must be JSON (Content-Type: application/json), got '{ct}'"
            )));
        }
    }
    let v: serde_json::Value = serde_json::from_slice(&req.body)
        .map_err(|e| EngineError::bad_request(format!("The body is not valid JSON: {e}")))?;
    match v {
        serde_json::Value::Object(m) => Ok(m),
        other => Err(EngineError::bad_request(format!(
            "The body must be a JSON object, got {}",
            crate::model::fields::json_kind(&other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(path: &str) -> Route {
        Route::parse(&Request::new(Method::Get, path, "http://x")).unwrap()
    }

    #[test]
    fn paths_split_into_object_endpoint_and_params() {
        let r = route("/folder/page/@workflow/publish?x=1");
        assert_eq!(r.object_path, "/folder/page");
        assert_eq!(r.endpoint.as_deref(), Some("workflow"));
        assert_eq!(r.params, vec!["publish"]);
        assert_eq!(r.query.get("x"), Some("1"));
        assert_eq!(route("/").object_path, "");
        assert_eq!(route("/@login").endpoint.as_deref(), Some("login"));
    }

    #[test]
    fn api_prefix_is_transparent() {
        assert_eq!(
            route("/++api++/folder/page/@workflow"),
            route("/folder/page/@workflow")
        );
        assert_eq!(route("/++api++").object_path, "");
    }

    #[test]
    fn segments_are_percent_decoded() {
        assert_eq!(route("/a%2Db").object_path, "/a-b");
        assert!(Route::parse(&Request::new(Method::Get, "/a%ZZ", "http://x")).is_err());
    }
}
