//! The REST API: routing requests to endpoint handlers, one module per endpoint family.
//!
//! A URL path is `<object path>[/@endpoint[/params...]]`; the site root is `/`. A `++api++` segment
//! (what Volto and the official JavaScript client put in front) is dropped, so it serves exactly what
//! the plain path serves, with plain `@id`s.

pub mod actions;
#[cfg(not(feature = "lean"))]
pub mod addons;
#[cfg(not(feature = "lean"))]
pub mod ai;
#[cfg(not(feature = "lean"))]
pub mod aliases;
pub mod batching;
pub mod breadcrumbs;
#[cfg(not(feature = "lean"))]
pub mod calendar;
pub mod change_stream;
#[cfg(not(feature = "lean"))]
pub mod changes;
pub mod comments;
#[cfg(not(feature = "lean"))]
pub mod configuration;
pub mod content;
#[cfg(not(feature = "lean"))]
pub mod content_rules;
pub mod contextnavigation;
#[cfg(not(feature = "lean"))]
pub mod controlpanels;
pub mod copymove;
#[cfg(not(feature = "lean"))]
pub mod dexterity_types;
#[cfg(not(feature = "lean"))]
pub mod email;
pub mod etag;
pub mod expansion;
#[cfg(not(feature = "lean"))]
pub mod export;
pub mod extract;
pub mod file_fields;
pub mod files;
#[cfg(not(feature = "lean"))]
pub mod forms;
#[cfg(not(feature = "lean"))]
pub mod groups;
#[cfg(not(feature = "lean"))]
pub mod health;
#[cfg(not(feature = "lean"))]
pub mod history;
pub mod idempotency;
pub mod inherit;
#[cfg(not(feature = "lean"))]
pub mod jobs;
#[cfg(not(feature = "lean"))]
pub mod linkintegrity;
pub mod locking;
pub mod login;
pub mod navigation;
pub mod navroot;
pub mod nick_items;
#[cfg(not(feature = "lean"))]
pub mod openapi;
#[cfg(not(feature = "lean"))]
pub mod principals;
pub mod query;
pub mod recyclebin;
pub mod related;
#[cfg(not(feature = "lean"))]
pub mod relations;
#[cfg(not(feature = "lean"))]
pub mod replace;
pub mod router;
#[cfg(not(feature = "lean"))]
pub mod rules_controlpanel;
pub mod search;
#[cfg(not(feature = "lean"))]
pub mod securitypanels;
pub mod serialize;
#[cfg(not(feature = "lean"))]
pub mod sharing;
pub mod site;
pub mod summaries;

#[cfg(not(feature = "lean"))]
pub mod system;
pub mod testhooks;
pub mod time;
#[cfg(not(feature = "lean"))]
pub mod transactions;
pub mod translations;
#[cfg(not(feature = "lean"))]
pub mod tus;
pub mod types;
#[cfg(not(feature = "lean"))]
pub mod upgrade;
pub mod users;
#[cfg(not(feature = "lean"))]
pub mod userschema;
pub mod vocabularies;
pub mod workflow;

use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::http::Request;
use crate::core::model::ContentRecord;
use crate::runtime::context::Ctx;

use query::{decode_component, Query};
pub use router::{lookup, Carriage, Endpoint};

/// A family's registration function.
pub type Register = fn(&mut router::RouteTable);

/// Every endpoint family: its name (the OpenAPI tag) and the function that registers its routes,
/// components and expanders. Adding a family is adding its module and one line here.
pub const FAMILIES: &[(&str, Register)] = &[
    ("content", content::register),
    ("auth", login::register),
    ("workflow", workflow::register),
    #[cfg(not(feature = "lean"))]
    ("history", history::register),
    ("locking", locking::register),
    #[cfg(not(feature = "lean"))]
    ("aliases", aliases::register),
    #[cfg(feature = "lean")]
    ("aliases", aliases_component),
    ("copymove", copymove::register),
    ("files", files::register),
    #[cfg(not(feature = "lean"))]
    ("tus", tus::register),
    #[cfg(not(feature = "lean"))]
    ("export", export::register),
    ("comments", comments::register),
    ("translations", translations::register),
    ("navigation", navigation::register),
    ("navroot", navroot::register),
    ("breadcrumbs", breadcrumbs::register),
    ("actions", actions::register),
    ("inherit", inherit::register),
    ("site", site::register),
    #[cfg(not(feature = "lean"))]
    ("controlpanels", controlpanels::register),
    #[cfg(not(feature = "lean"))]
    ("registry", configuration::register),
    ("vocabularies", vocabularies::register),
    #[cfg(not(feature = "lean"))]
    ("system", system::register),
    #[cfg(not(feature = "lean"))]
    ("upgrade", upgrade::register),
    #[cfg(not(feature = "lean"))]
    ("addons", addons::register),
    ("users", users::register),
    ("types", types::register),
    #[cfg(not(feature = "lean"))]
    ("dexterity-types", dexterity_types::register),
    #[cfg(not(feature = "lean"))]
    ("calendar", calendar::register),
    #[cfg(not(feature = "lean"))]
    ("groups", groups::register),
    #[cfg(not(feature = "lean"))]
    ("principals", principals::register),
    #[cfg(not(feature = "lean"))]
    ("sharing", sharing::register),
    #[cfg(not(feature = "lean"))]
    ("userschema", userschema::register),
    #[cfg(not(feature = "lean"))]
    ("securitypanels", securitypanels::register),
    ("search", search::register),
    #[cfg(not(feature = "lean"))]
    ("linkintegrity", linkintegrity::register),
    ("recyclebin", recyclebin::register),
    #[cfg(not(feature = "lean"))]
    ("replace", replace::register),
    #[cfg(not(feature = "lean"))]
    ("forms", forms::register),
    #[cfg(not(feature = "lean"))]
    ("health", health::register),
    #[cfg(not(feature = "lean"))]
    ("content-rules", rules_controlpanel::register),
    #[cfg(not(feature = "lean"))]
    ("content-rules", content_rules::register),
    #[cfg(not(feature = "lean"))]
    ("jobs", jobs::register),
    #[cfg(not(feature = "lean"))]
    ("email", email::register),
    ("contextnavigation", contextnavigation::register),
    ("related", related::register),
    #[cfg(not(feature = "lean"))]
    ("relations", relations::register),
    #[cfg(not(feature = "lean"))]
    ("transactions", transactions::register),
    #[cfg(not(feature = "lean"))]
    ("ai", ai::register),
    #[cfg(not(feature = "lean"))]
    ("changes", changes::register),
    #[cfg(not(feature = "lean"))]
    ("openapi", openapi::register),
    ("testing", testhooks::register),
];

/// The families the browser's first module leaves out (engine feature `lean`): rarely used by an
/// editor in the browser, and together about a third of the module. Their requests are answered
/// [`EngineError::NotInBuild`] there, and the host loads the full module for them.
#[allow(dead_code)] // read by the route table's test
pub const RARE_FAMILIES: &[&str] = &[
    "aliases",
    "tus",
    "export",
    "controlpanels",
    "registry",
    "system",
    "upgrade",
    "addons",
    "dexterity-types",
    "calendar",
    "groups",
    "principals",
    "sharing",
    "userschema",
    "securitypanels",
    "linkintegrity",
    "replace",
    "forms",
    "health",
    "content-rules",
    "jobs",
    "email",
    "relations",
    "transactions",
    "ai",
    "changes",
    "openapi",
    "history",
];

/// Every endpoint name a route of a [`RARE_FAMILIES`] family has (the table's test checks the
/// list against the table). Without the feature `lean` it is only read by that test; with it, a
/// request to one of these endpoints that the lean table does not answer is
/// [`EngineError::NotInBuild`], never a 404 or 405 (`users` is shared: `@email-notification`
/// below a user is the `email` family's; the test checks that no route of a kept family could
/// answer a request a rare family's route answers).
#[cfg_attr(not(feature = "lean"), allow(dead_code))]
pub const RARE_ENDPOINTS: &[&str] = &[
    "addons",
    "aliases",
    "changes",
    "chat",
    "content-rules",
    "controlpanels",
    "database",
    "email-notification",
    "email-send",
    "export",
    "form-data",
    "form-data-export",
    "generate",
    "groups",
    "health",
    "history",
    "ics_view",
    "jobs",
    "linkintegrity",
    "markdown_view",
    "openapi",
    "principals",
    "registry",
    "relations",
    "replace",
    "roles",
    "rss_view",
    "scheduled-job-actions",
    "scheduled-jobs",
    "schemaform-data",
    "sharing",
    "system",
    "transactions",
    "translated-messages",
    "tus-replace",
    "tus-upload",
    "upgrade",
    "users",
    "userschema",
];

/// The lean build's stand-in for the `aliases` family: only its `@components` entry (a link,
/// without an expander), so that every object lists the same components in both builds.
#[cfg(feature = "lean")]
fn aliases_component(r: &mut router::RouteTable) {
    r.component("aliases", None);
}

/// Endpoints also reachable without the `@` as the path's last segment (`<path>/ics_view`), as
/// Nick serves them; such a segment never names a content object.
pub const VIEWS: &[&str] = &["ics_view", "rss_view", "markdown_view"];

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
            if seg.contains('/') {
                return Err(EngineError::bad_request(format!(
                    "The path segment '{raw}' encodes a '/' (%2F); ids cannot contain '/', so \
                     a segment never does either"
                )));
            }
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
        // Views named without `@` (Nick's `<path>/ics_view`) as the last segment are that view.
        if endpoint.is_none() {
            for view in VIEWS {
                if let Some(rest) = object_path.strip_suffix(&format!("/{view}")) {
                    object_path = rest.to_string();
                    endpoint = Some(view.to_string());
                    break;
                }
            }
        }
        Ok(Route {
            object_path,
            endpoint,
            params,
            query: Query::parse(&req.query)?,
        })
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

/// Resolve the context object and run the endpoint through the route table's rules.
pub fn dispatch(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    endpoint: Endpoint,
) -> Result<crate::core::http::Response> {
    // The matched route says it; only OPTIONS (no route chosen) asks the table.
    let any_path = match endpoint {
        Endpoint::Route(def) => def.any_path,
        Endpoint::Options => router::at_any_path(route, ctx.core),
    };
    let obj = if any_path {
        tree::root(ctx)?
    } else {
        resolve(ctx, route)?
    };
    ctx.content_language = crate::content::multilingual::content_language(ctx, &obj)?;
    let params = match endpoint {
        Endpoint::Route(def) => router::bind(def, route),
        Endpoint::Options => Vec::new(),
    };
    let call = extract::Call { req, route, params };
    router::run(ctx, &call, endpoint, obj)
}

/// The object at the route's path, or a 404 naming the deepest existing ancestor as context.
fn resolve(ctx: &Ctx<'_>, route: &Route) -> Result<ContentRecord> {
    if let Some(obj) = tree::at_path(ctx, &route.object_path)? {
        return Ok(obj);
    }
    if let Some(target) = crate::content::aliases::resolve(ctx, &route.object_path)? {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::http::Method;

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
        // An encoded slash never separates segments, nor joins an id: it is refused.
        assert!(Route::parse(&Request::new(Method::Get, "/a%2Fb", "http://x")).is_err());
        assert!(Route::parse(&Request::new(Method::Get, "/a/@aliases/x%2fy", "http://x")).is_err());
    }
}
