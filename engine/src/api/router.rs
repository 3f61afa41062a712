//! The one route table.
//!
//! Every endpoint family declares its routes, `@components` entries and expanders in its own
//! `register` function (one line per family in [`super::FAMILIES`]); this module knows nothing of
//! any family. From the table it derives what no handler writes by hand: 404 for an unknown
//! endpoint or path shape, 405 with `Allow` for a known path with another method, `HEAD` (a GET
//! without the body), `OPTIONS` (204 with `Allow`), the permission check on the context object,
//! `If-Match` preconditions (412), and the OpenAPI document ([`super::openapi`]).

use std::sync::OnceLock;

use schemars::{JsonSchema, Schema, SchemaGenerator};

use super::extract::Call;
use super::Route;
use crate::core::error::{EngineError, Result};
use crate::core::http::{Method, Response};
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access as _;
use crate::runtime::context::Ctx;
use crate::runtime::state::Core;

/// A handler: the context object is resolved and the route's access rule is satisfied.
pub type Handler = fn(&mut Ctx<'_>, &Call<'_>, ContentRecord) -> Result<Response>;

/// Builds a component's JSON for an object (the body its endpoint's GET answers), for
/// `?expand=<name>`.
pub type Expander = fn(&Ctx<'_>, &Route, &ContentRecord) -> Result<serde_json::Value>;

/// Adds a type's JSON Schema to a generator and returns a reference to it (OpenAPI).
pub type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// The schema of `T`, as a [`SchemaFn`].
#[cfg(feature = "openapi")]
pub fn schema_of<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

/// [`schema_of::<T>`](schema_of) with the feature `openapi`; without it `None`, so that no
/// schema code is linked in (the document is then the pregenerated one, see [`super::openapi`]).
#[cfg_attr(not(feature = "openapi"), allow(clippy::extra_unused_type_parameters))]
fn schema_fn<T: JsonSchema>() -> Option<SchemaFn> {
    #[cfg(feature = "openapi")]
    {
        Some(schema_of::<T>)
    }
    #[cfg(not(feature = "openapi"))]
    {
        None
    }
}

/// Who may call a route, checked on the context object before the handler runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone (the handler may still refuse, e.g. wrong credentials at login).
    Public,
    /// The caller must hold this permission on the context object (401 anonymous, 403 else).
    Permission(Permission),
    /// The handler decides (documented in the route's description), because the rule depends on
    /// the body or on other objects.
    Handler,
}

/// One segment of a route's path pattern after the endpoint name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    /// Its name (`transition` in `@workflow/{transition}`).
    pub name: &'static str,
    /// Whether it may be left out (`{comment_id?}`); only trailing parameters may.
    pub optional: bool,
    /// A fixed segment (`dexterity-types` in `@controlpanels/dexterity-types/{type}`), written
    /// without braces: the request's segment must equal `name`. Where several routes fit a
    /// request, those with the most fixed segments answer it.
    pub literal: bool,
}

/// What a host must know to carry a route's request and answer, besides whether it writes (see
/// [`crate::core::http::RouteInfo`], which the engine derives from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carriage {
    /// A body read whole, an answer sent whole.
    Plain,
    /// A password attempt in the body (`@login`): the host's login throttle applies.
    Login,
    /// A password reset (`@users/<id>/reset-password`): every request counts against the host's
    /// throttle, keyed by the login in the path and the client's address.
    Reset,
    /// An answer produced line by line, possibly slowly (a language model's).
    Lines,
    /// A feed that may be followed as `text/event-stream` (a GET that asks for it).
    EventStream,
    /// A body of any length, handed to the engine in pieces at an `Upload-Offset` (tus `PATCH`).
    Pieces,
}

// `pattern` is kept for tests and debugging output; the router matches on the parsed parts.
#[allow(dead_code)]
/// One route: method, path pattern, who may call it, whether it writes, its handler and its
/// documentation.
#[derive(Clone)]
pub struct RouteDef {
    /// The family that registered it (OpenAPI tag).
    pub family: &'static str,
    /// The method.
    pub method: Method,
    /// The pattern after the object path: `""` (the object itself), `@lock`,
    /// `@workflow/{transition?}`.
    pub pattern: &'static str,
    /// The endpoint name (`""` for the object itself).
    pub endpoint: &'static str,
    /// The parameters after the endpoint name.
    pub params: Vec<ParamSpec>,
    /// Who may call it.
    pub access: Access,
    /// Whether it runs in the write transaction.
    pub writes: bool,
    /// Only on the site root: elsewhere the route does not exist (404).
    pub root_only: bool,
    /// Also answers below a path where no object is (a recycle bin item at the path its object
    /// had): the context is then the site root, and the handler decides which paths it takes.
    pub any_path: bool,
    /// `If-Match` is checked against the context object's `ETag` (412 when it does not match).
    pub conditional: bool,
    /// Present only when this holds for the engine (e.g. the test clock).
    pub available: fn(&Core) -> bool,
    /// How the host carries it.
    pub carriage: Carriage,
    /// One line for the documentation.
    pub summary: &'static str,
    /// Success status.
    pub status: u16,
    /// Schema of the JSON body, if it takes one.
    pub body: Option<SchemaFn>,
    /// Schema of the query parameters, if it takes any.
    pub query: Option<SchemaFn>,
    /// Schema of the success answer's JSON body, if it has one.
    pub response: Option<SchemaFn>,
    /// The handler.
    pub handler: Handler,
}

fn always(_: &Core) -> bool {
    true
}

impl RouteDef {
    fn new(method: Method, pattern: &'static str, handler: Handler) -> Self {
        let mut segs = pattern.split('/').filter(|s| !s.is_empty());
        let endpoint = segs
            .next()
            .map(|s| s.strip_prefix('@').unwrap_or(s))
            .unwrap_or("");
        let params: Vec<ParamSpec> = segs
            .map(|s| {
                let literal = !s.starts_with('{');
                let inner = s.trim_start_matches('{').trim_end_matches('}');
                match inner.strip_suffix('?') {
                    Some(name) if !literal => ParamSpec {
                        name,
                        optional: true,
                        literal,
                    },
                    _ => ParamSpec {
                        name: inner,
                        optional: false,
                        literal,
                    },
                }
            })
            .collect();
        RouteDef {
            family: "",
            writes: !method.is_safe(),
            method,
            pattern,
            endpoint,
            params,
            access: Access::Public,
            root_only: false,
            any_path: false,
            conditional: false,
            available: always,
            carriage: Carriage::Plain,
            summary: "",
            status: 200,
            body: None,
            query: None,
            response: None,
            handler,
        }
    }

    /// A GET route.
    pub fn get(pattern: &'static str, handler: Handler) -> Self {
        Self::new(Method::Get, pattern, handler)
    }
    /// A POST route (writes unless [`RouteDef::reads`]).
    pub fn post(pattern: &'static str, handler: Handler) -> Self {
        Self::new(Method::Post, pattern, handler)
    }
    /// A PATCH route.
    pub fn patch(pattern: &'static str, handler: Handler) -> Self {
        Self::new(Method::Patch, pattern, handler)
    }
    /// A PUT route.
    pub fn put(pattern: &'static str, handler: Handler) -> Self {
        Self::new(Method::Put, pattern, handler)
    }
    /// A DELETE route.
    pub fn delete(pattern: &'static str, handler: Handler) -> Self {
        Self::new(Method::Delete, pattern, handler)
    }
    /// An OPTIONS route, answering instead of the derived `204` with `Allow` (tus announces its
    /// protocol there).
    pub fn options(pattern: &'static str, handler: Handler) -> Self {
        Self::new(Method::Options, pattern, handler)
    }

    /// Requires `perm` on the context object.
    pub fn requires(mut self, perm: Permission) -> Self {
        self.access = Access::Permission(perm);
        self
    }
    /// The handler checks access itself.
    pub fn checked_by_handler(mut self) -> Self {
        self.access = Access::Handler;
        self
    }
    /// Runs in a read transaction although the method is not safe (e.g. `@login`).
    pub fn reads(mut self) -> Self {
        self.writes = false;
        self
    }
    /// Exists only on the site root.
    pub fn root_only(mut self) -> Self {
        self.root_only = true;
        self
    }
    /// Also answers below any path, the context being the site root ([`RouteDef::any_path`]).
    pub fn at_any_path(mut self) -> Self {
        self.any_path = true;
        self
    }
    /// Honours `If-Match` against the context object's `ETag`.
    pub fn conditional(mut self) -> Self {
        self.conditional = true;
        self
    }
    /// Present only when `f` holds for the engine.
    pub fn only_if(mut self, f: fn(&Core) -> bool) -> Self {
        self.available = f;
        self
    }
    /// How the host carries it (default [`Carriage::Plain`]).
    pub fn carried(mut self, carriage: Carriage) -> Self {
        self.carriage = carriage;
        self
    }
    /// The one-line documentation. The lean build (feature `lean`, which serves no `@openapi`)
    /// keeps none, so that the texts are not in its module.
    #[inline(always)]
    #[cfg_attr(feature = "lean", allow(unused_mut))]
    pub fn summary(mut self, s: &'static str) -> Self {
        #[cfg(not(feature = "lean"))]
        {
            self.summary = s;
        }
        #[cfg(feature = "lean")]
        let _ = s;
        self
    }
    /// The success status (default 200).
    pub fn status(mut self, s: u16) -> Self {
        self.status = s;
        self
    }
    /// Takes a JSON body of type `T`.
    pub fn body<T: JsonSchema>(mut self) -> Self {
        self.body = schema_fn::<T>();
        self
    }
    /// Takes query parameters of type `T`.
    pub fn query<T: JsonSchema>(mut self) -> Self {
        self.query = schema_fn::<T>();
        self
    }
    /// Answers a JSON body of type `T`.
    pub fn answers<T: JsonSchema>(mut self) -> Self {
        self.response = schema_fn::<T>();
        self
    }

    /// Whether the path parameters `given` fit this route: their number, and its fixed segments.
    fn takes(&self, given: &[String]) -> bool {
        let required = self.params.iter().filter(|p| !p.optional).count();
        (required..=self.params.len()).contains(&given.len())
            && self
                .params
                .iter()
                .zip(given)
                .all(|(spec, seg)| !spec.literal || spec.name == seg)
    }

    /// How many fixed segments the pattern has (more answers before fewer).
    fn fixed_segments(&self) -> usize {
        self.params.iter().filter(|p| p.literal).count()
    }
}

/// A `@components` entry: every content object links it; `expander` (when set) embeds it for
/// `?expand=<name>`.
#[derive(Clone, Copy)]
pub struct Component {
    /// Its name.
    pub name: &'static str,
    /// Builds its expanded form.
    pub expander: Option<Expander>,
    /// Left out of `@components` (link and expansion) for anonymous callers.
    pub members_only: bool,
}

/// What the families register.
#[derive(Default)]
pub struct RouteTable {
    /// Every route, in registration order.
    pub routes: Vec<RouteDef>,
    /// Every component, in registration order.
    pub components: Vec<Component>,
    family: &'static str,
    /// The positions in [`Registry::routes`] of each endpoint name's routes, in order: a lookup
    /// looks at those only (the engine routes every request, cached answers included).
    by_endpoint: std::collections::HashMap<&'static str, Vec<usize>>,
}

impl RouteTable {
    /// Register `route` for the family being registered.
    pub fn route(&mut self, mut route: RouteDef) {
        route.family = self.family;
        self.by_endpoint
            .entry(route.endpoint)
            .or_default()
            .push(self.routes.len());
        self.routes.push(route);
    }

    /// Register a `@components` entry.
    pub fn component(&mut self, name: &'static str, expander: Option<Expander>) {
        self.components.push(Component {
            name,
            expander,
            members_only: false,
        });
    }

    /// Register a `@components` entry that anonymous callers do not get (as `types`).
    pub fn member_component(&mut self, name: &'static str, expander: Expander) {
        self.components.push(Component {
            name,
            expander: Some(expander),
            members_only: true,
        });
    }

    /// The routes that may answer `route` on this engine: same endpoint, fitting parameters, and
    /// among those the ones with the most fixed segments.
    fn candidates<'a>(
        &'static self,
        route: &'a Route,
        core: &'a Core,
    ) -> impl Iterator<Item = &'static RouteDef> + 'a {
        let name = route.endpoint.as_deref().unwrap_or("");
        let fits = move |r: &&'static RouteDef| {
            r.endpoint == name && r.takes(&route.params) && (r.available)(core)
        };
        let ids: &'static [usize] = self.by_endpoint.get(name).map_or(&[], Vec::as_slice);
        let named = move || ids.iter().filter_map(|&i| self.routes.get(i));
        let most_fixed = named()
            .filter(fits)
            .map(RouteDef::fixed_segments)
            .max()
            .unwrap_or(0);
        named()
            .filter(fits)
            .filter(move |r| r.fixed_segments() == most_fixed)
    }

    /// The component `name`, if registered.
    pub fn component_named(&self, name: &str) -> Option<&Component> {
        self.components.iter().find(|c| c.name == name)
    }
}

/// The table, built once from [`super::FAMILIES`].
pub fn table() -> &'static RouteTable {
    static TABLE: OnceLock<RouteTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut r = RouteTable::default();
        for (family, register) in super::FAMILIES {
            r.family = family;
            register(&mut r);
        }
        r
    })
}

/// The route chosen for a request: the definition, or the derived OPTIONS answer.
#[derive(Clone, Copy)]
pub enum Endpoint {
    /// A declared route.
    Route(&'static RouteDef),
    /// `OPTIONS` on a known path: 204 with `Allow`.
    Options,
}

impl Endpoint {
    /// Whether it needs the write transaction.
    pub fn writes(&self) -> bool {
        match self {
            Endpoint::Route(r) => r.writes,
            Endpoint::Options => false,
        }
    }
}

/// The `Allow` header value for the routes in `matching`: their methods in table order, `HEAD`
/// when GET is among them, and `OPTIONS`.
fn allow<'a>(matching: impl Iterator<Item = &'a RouteDef>) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for r in matching {
        let m = r.method.known_token().unwrap_or("OPTIONS");
        if !out.contains(&m) {
            out.push(m);
        }
    }
    if out.contains(&"GET") {
        out.push("HEAD");
    }
    if !out.contains(&"OPTIONS") {
        out.push("OPTIONS");
    }
    out
}

/// Find the endpoint for `route` and `method`: 404 for an unknown endpoint or path shape, 405
/// (with `Allow`) for a known one with another method.
pub fn lookup(route: &Route, method: &Method, core: &Core, base_url: &str) -> Result<Endpoint> {
    let found = lookup_here(route, method, core, base_url);
    #[cfg(feature = "lean")]
    if let Err(EngineError::NotFound { .. } | EngineError::MethodNotAllowed { .. }) = &found {
        // The full build may have a route for it: the host answers it there.
        let name = route.endpoint.as_deref().unwrap_or("");
        if super::RARE_ENDPOINTS.contains(&name) {
            return Err(EngineError::NotInBuild {
                endpoint: name.to_string(),
            });
        }
    }
    found
}

/// [`lookup`] in this build's table.
fn lookup_here(route: &Route, method: &Method, core: &Core, base_url: &str) -> Result<Endpoint> {
    let table = table();
    // No route takes this path: as in Plone, whose traversal stops at the endpoint name, the
    // 404 names the URL up to the endpoint (`<object>/@components` for
    // `<object>/@components/breadcrumbs`), not the segments after it.
    let not_found = || EngineError::NotFound {
        url: Route {
            params: Vec::new(),
            ..route.clone()
        }
        .url(base_url.trim_end_matches('/')),
        context: None,
    };
    if table.candidates(route, core).next().is_none() {
        return Err(not_found());
    }
    if *method == Method::Options {
        let declared = table
            .candidates(route, core)
            .find(|r| r.method == Method::Options);
        return Ok(declared.map_or(Endpoint::Options, Endpoint::Route));
    }
    let wanted = if *method == Method::Head {
        &Method::Get
    } else {
        method
    };
    table
        .candidates(route, core)
        .find(|r| r.method == *wanted)
        .map(Endpoint::Route)
        .ok_or_else(|| EngineError::MethodNotAllowed {
            method: method.as_str().to_string(),
            allowed: allow(table.candidates(route, core)),
        })
}

/// Whether a route that answers `route` takes any path ([`RouteDef::any_path`]): its context
/// is the site root, whatever object the path names, if any.
pub fn at_any_path(route: &Route, core: &Core) -> bool {
    route.endpoint.is_some() && table().candidates(route, core).any(|r| r.any_path)
}

/// Run `endpoint` for `call` on the resolved context object `obj`: the route's root-only rule,
/// its access rule and its `If-Match` precondition, then the handler.
pub fn run(
    ctx: &mut Ctx<'_>,
    call: &Call<'_>,
    endpoint: Endpoint,
    obj: ContentRecord,
) -> Result<Response> {
    let not_here = |ctx: &Ctx<'_>| EngineError::NotFound {
        url: call.route.url(&ctx.base_url),
        context: Some(ctx.url(&obj.path)),
    };
    let def = match endpoint {
        Endpoint::Options => {
            let here: Vec<&RouteDef> = table()
                .candidates(call.route, ctx.core)
                .filter(|r| !r.root_only || obj.is_root())
                .collect();
            if here.is_empty() {
                return Err(not_here(ctx));
            }
            let allowed = allow(here.into_iter());
            return Ok(Response::empty(204).with_header("Allow", &allowed.join(", ")));
        }
        Endpoint::Route(def) => def,
    };
    if def.root_only && !obj.is_root() {
        return Err(not_here(ctx));
    }
    if let Access::Permission(p) = def.access {
        ctx.require(p, &obj)?;
    }
    if def.conditional && !super::etag::matches(call.req, &obj) {
        // The 412 names the current ETag: only to callers who may see the object.
        ctx.require(Permission::View, &obj)?;
        super::etag::check_if_match(call.req, &obj)?;
    }
    (def.handler)(ctx, call, obj)
}

/// The named parameters of `def` for the path parameters of `route`.
pub fn bind<'r>(def: &'static RouteDef, route: &'r Route) -> Vec<(&'static str, &'r str)> {
    def.params
        .iter()
        .zip(&route.params)
        .filter(|(spec, _)| !spec.literal)
        .map(|(spec, value)| (spec.name, value.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noop(_: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
        Ok(Response::empty(204))
    }

    fn segs(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    /// Whether some list of path parameters fits both `a` and `b` (same count, no fixed segment
    /// of one differing from a fixed segment of the other at the same place).
    #[cfg(not(feature = "lean"))]
    fn may_overlap(a: &RouteDef, b: &RouteDef) -> bool {
        let range = |r: &RouteDef| r.params.iter().filter(|p| !p.optional).count()..=r.params.len();
        let (ra, rb) = (range(a), range(b));
        (0..=a.params.len().max(b.params.len()))
            .filter(|n| ra.contains(n) && rb.contains(n))
            .any(|n| {
                a.params
                    .iter()
                    .zip(&b.params)
                    .take(n)
                    .all(|(x, y)| !(x.literal && y.literal) || x.name == y.name)
            })
    }

    /// The lean build (feature `lean`) answers `NotInBuild` for exactly the endpoints of the rare
    /// families ([`super::super::RARE_ENDPOINTS`]) when its own table has no route for a request;
    /// that is right only if the list is complete and no kept family's route could answer a
    /// request that a rare family's route answers in the full build.
    #[cfg(not(feature = "lean"))]
    #[test]
    fn the_lean_build_knows_every_endpoint_it_leaves_out() {
        use super::super::{FAMILIES, RARE_ENDPOINTS, RARE_FAMILIES};
        let t = table();
        for f in RARE_FAMILIES {
            assert!(FAMILIES.iter().any(|(n, _)| n == f), "{f} is no family");
        }
        let rare = |r: &RouteDef| RARE_FAMILIES.contains(&r.family);
        let mut endpoints: Vec<&str> = t
            .routes
            .iter()
            .filter(|r| rare(r))
            .map(|r| r.endpoint)
            .collect();
        endpoints.sort_unstable();
        endpoints.dedup();
        assert_eq!(
            endpoints, RARE_ENDPOINTS,
            "RARE_ENDPOINTS must list the rare families' endpoints"
        );
        for r in t.routes.iter().filter(|r| rare(r)) {
            for k in t
                .routes
                .iter()
                .filter(|k| !rare(k) && k.endpoint == r.endpoint)
            {
                assert!(
                    !may_overlap(r, k),
                    "{} {} ({}) and {} {} ({}) may answer the same request",
                    r.method.as_str(),
                    r.pattern,
                    r.family,
                    k.method.as_str(),
                    k.pattern,
                    k.family
                );
            }
        }
    }

    #[test]
    fn fixed_segments_must_match_and_answer_first() {
        let general = RouteDef::get("@controlpanels/{name?}", noop);
        let fixed = RouteDef::get("@controlpanels/dexterity-types/{type}", noop);
        assert_eq!(fixed.fixed_segments(), 1);
        assert!(fixed.takes(&segs(&["dexterity-types", "Page"])));
        assert!(!fixed.takes(&segs(&["language", "Page"])));
        assert!(!fixed.takes(&segs(&["dexterity-types"])));
        assert!(general.takes(&segs(&["dexterity-types"])));
        assert!(!general.takes(&segs(&["dexterity-types", "Page"])));
        let route = Route {
            object_path: String::new(),
            endpoint: Some("controlpanels".into()),
            params: segs(&["dexterity-types", "Page"]),
            query: Default::default(),
        };
        let bound = {
            let def: &'static RouteDef = Box::leak(Box::new(fixed));
            bind(def, &route)
        };
        assert_eq!(bound, vec![("type", "Page")]);
    }
}
