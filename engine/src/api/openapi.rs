//! `GET /@openapi`: an OpenAPI 3.1 document of the whole API, generated from the route table
//! ([`super::router`]) and the request and response types' JSON Schemas (schemars, draft
//! 2020-12, which OpenAPI 3.1 uses as is). Nothing in it is written by hand per endpoint, so it
//! cannot drift from what the engine serves.
//!
//! Paths: a route that works on any object is documented under `/{path}/@endpoint`, where `path`
//! is the object's site path (it may span several segments; the site root is the empty path,
//! i.e. `/@endpoint`); root-only routes under `/@endpoint`. OpenAPI has no optional path
//! parameters, so a route with one (`@history/{version?}`) is documented once without it and
//! once with it.
//!
//! The schemas come from schemars, whose code is a third of a megabyte of wasm. With the engine
//! feature `openapi` (on by default) the document is generated at run time; without it (the
//! browser build, host-wasm) the engine serves [`PREGENERATED`], the document generated for an
//! engine on which every route is available, checked into the source tree (`openapi.json` next
//! to this file), with the server URL filled in and the routes unavailable on this engine (the
//! test hooks) taken out. `engine/tests/openapi.rs` checks that this gives the same bytes as the
//! generation, with and without the test clock; `OPENAPI_WRITE=1 cargo test -p engine --test
//! openapi` rewrites the file after a change to the API.

#[cfg(feature = "openapi")]
use serde::Serialize;
#[cfg(feature = "openapi")]
use serde_json::json;
use serde_json::Map;
use serde_json::Value;

use super::extract::Call;
#[cfg(feature = "openapi")]
use super::router::Access;
use super::router::{self, RouteDef, RouteTable};
use crate::content::operations;
#[cfg(feature = "openapi")]
use crate::core::error::ErrorBody;
use crate::core::error::Result;
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::runtime::context::Ctx;

/// Register `@openapi`.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@openapi", get)
            .root_only()
            .summary("This API described in OpenAPI 3.1"),
    );
}

fn get(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let mut doc = document(ctx.core, &ctx.base_url);
    describe_content_bodies(ctx, &mut doc)?;
    Ok(Response::json(200, &doc))
}

/// Where a `$ref` finds a component schema.
const REFS: &str = "#/components/schemas/";

/// Describe the bodies of content POST and PATCH from the site's type registry
/// ([`operations::body_schemas`], the same field definitions the parse validates against): one
/// component per type's create body (`Page`, `Folder`, ...) and per type's edit body
/// (`PageChanges`, ...); the POST body is one of the create bodies, told apart by `@type`, and
/// the PATCH body any of the edit bodies.
fn describe_content_bodies(ctx: &Ctx<'_>, doc: &mut Value) -> Result<()> {
    let find_op = |doc: &Value, id: &str| -> Option<String> {
        let paths = doc.get("paths")?.as_object()?;
        paths.iter().find_map(|(path, ops)| {
            ops.as_object()?.iter().find_map(|(method, op)| {
                (op.get("operationId").and_then(Value::as_str) == Some(id)).then(|| {
                    format!(
                        "/paths/{}/{method}",
                        path.replace('~', "~0").replace('/', "~1")
                    )
                })
            })
        })
    };
    let body_pointer = |op: &str| format!("{op}/requestBody/content/application~1json/schema");
    // What a PATCH body has besides fields: its generic schema's `ordering` and `sort`.
    let mut edit_extra = Map::new();
    let patch = find_op(doc, "patch_content");
    if let Some(generic) = patch.as_ref().and_then(|op| doc.pointer(&body_pointer(op))) {
        let generic = match generic.get("$ref").and_then(Value::as_str) {
            Some(r) => r
                .strip_prefix("#")
                .and_then(|p| doc.pointer(p))
                .unwrap_or(generic),
            None => generic,
        };
        if let Some(props) = generic.get("properties").and_then(Value::as_object) {
            for key in ["ordering", "sort"] {
                if let Some(s) = props.get(key) {
                    edit_extra.insert(key.to_string(), s.clone());
                }
            }
        }
    }
    let existing: Vec<String> = doc
        .pointer("/components/schemas")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let taken = |name: &str| existing.iter().any(|n| n == name);
    let bodies = operations::body_schemas(ctx, REFS, &taken, &edit_extra)?;
    if let Some(Value::Object(schemas)) = doc.pointer_mut("/components/schemas") {
        for (name, schema) in bodies.components {
            schemas.insert(name, schema);
        }
    }
    let reference = |name: &str| json_ref(&format!("{REFS}{name}"));
    if let Some(op) = find_op(doc, "post_content") {
        if let Some(slot) = doc.pointer_mut(&body_pointer(&op)) {
            let mut mapping = Map::new();
            for (type_name, component) in &bodies.create {
                mapping.insert(
                    type_name.clone(),
                    Value::String(format!("{REFS}{component}")),
                );
            }
            let mut body = Map::new();
            body.insert(
                "oneOf".into(),
                Value::Array(bodies.create.iter().map(|(_, c)| reference(c)).collect()),
            );
            body.insert(
                "discriminator".into(),
                Value::Object(Map::from_iter([
                    ("propertyName".to_string(), Value::String("@type".into())),
                    ("mapping".to_string(), Value::Object(mapping)),
                ])),
            );
            *slot = Value::Object(body);
        }
    }
    if let Some(op) = patch {
        if let Some(slot) = doc.pointer_mut(&body_pointer(&op)) {
            let any: Vec<Value> = bodies.edit.iter().map(|c| reference(c)).collect();
            *slot = Value::Object(Map::from_iter([("anyOf".to_string(), Value::Array(any))]));
        }
    }
    Ok(())
}

/// `{"$ref": target}`.
fn json_ref(target: &str) -> Value {
    Value::Object(Map::from_iter([(
        "$ref".to_string(),
        Value::String(target.to_string()),
    )]))
}

/// The OpenAPI document for the routes this engine serves, with `server` as the server URL:
/// generated (feature `openapi`) or [`pregenerated`] (without it); both give the same document.
pub fn document(core: &crate::runtime::state::Core, server: &str) -> Value {
    #[cfg(feature = "openapi")]
    {
        generated(core, server)
    }
    #[cfg(not(feature = "openapi"))]
    {
        pregenerated(core, server)
    }
}

/// The generated document of an engine on which every route is available, with an empty
/// server URL (`openapi.json`; see the module documentation).
#[cfg(any(test, feature = "internals", not(feature = "openapi")))]
pub const PREGENERATED: &str = include_str!("openapi.json");

/// The document from [`PREGENERATED`]: `server` as the server URL, without the operations of
/// routes unavailable on this engine (and without the paths left with none).
#[cfg(any(test, feature = "internals", not(feature = "openapi")))]
pub fn pregenerated(core: &crate::runtime::state::Core, server: &str) -> Value {
    let mut doc: Value = serde_json::from_str(PREGENERATED).unwrap_or(Value::Null);
    if let Some(url) = doc.pointer_mut("/servers/0/url") {
        *url = Value::String(server.to_string());
    }
    let unavailable: Vec<&RouteDef> = router::table()
        .routes
        .iter()
        .filter(|r| !(r.available)(core))
        .collect();
    if unavailable.is_empty() {
        return doc;
    }
    let mut removed = Vec::new();
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for def in unavailable {
            let required = def.params.iter().filter(|p| !p.optional).count();
            for n in required..=def.params.len() {
                let (key, _) = path_of(def, n);
                let emptied = match paths.get_mut(&key).and_then(Value::as_object_mut) {
                    Some(ops) => {
                        removed.extend(ops.remove(&def.method.as_str().to_ascii_lowercase()));
                        ops.is_empty()
                    }
                    None => false,
                };
                if emptied {
                    paths.remove(&key);
                }
            }
        }
    }
    drop_schemas_of(&mut doc, &removed);
    doc
}

/// Remove the component schemas that only the `removed` operations referred to, directly or
/// through other schemas (the generator adds a schema for each type it is asked for and for the
/// types that one refers to, so they were there for the removed routes alone).
#[cfg(any(test, feature = "internals", not(feature = "openapi")))]
fn drop_schemas_of(doc: &mut Value, removed: &[Value]) {
    let Some(Value::Object(schemas)) = doc.pointer_mut("/components/schemas").map(Value::take)
    else {
        return;
    };
    let closure = |roots: Vec<String>| {
        let mut seen = std::collections::BTreeSet::new();
        let mut todo = roots;
        while let Some(name) = todo.pop() {
            if let Some(s) = schemas.get(&name) {
                if seen.insert(name) {
                    refs(s, &mut todo);
                }
            }
        }
        seen
    };
    let mut roots = Vec::new();
    removed.iter().for_each(|op| refs(op, &mut roots));
    let candidates = closure(roots);
    let mut roots: Vec<String> = schemas
        .keys()
        .filter(|k| !candidates.contains(*k))
        .cloned()
        .collect();
    refs(doc, &mut roots);
    let keep = closure(roots);
    let kept: Map<String, Value> = schemas
        .into_iter()
        .filter(|(k, _)| keep.contains(k) || !candidates.contains(k))
        .collect();
    if let Some(slot) = doc.pointer_mut("/components/schemas") {
        *slot = Value::Object(kept);
    }
}

/// The names of the component schemas `v` refers to (`$ref`), appended to `out`.
#[cfg(any(test, feature = "internals", not(feature = "openapi")))]
fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => {
                        if let Some(name) = r.strip_prefix("#/components/schemas/") {
                            out.push(name.to_string());
                        }
                    }
                    _ => refs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

/// The OpenAPI document generated from the route table and the types' schemas.
#[cfg(feature = "openapi")]
pub fn generated(core: &crate::runtime::state::Core, server: &str) -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.definitions_path = "/components/schemas".into())
        .into_generator();
    let error = generator.subschema_for::<ErrorBody>();
    let mut paths: Map<String, Value> = Map::new();
    for def in router::table()
        .routes
        .iter()
        .filter(|r| (r.available)(core))
    {
        let required = def.params.iter().filter(|p| !p.optional).count();
        for n in required..=def.params.len() {
            let (key, params) = path_of(def, n);
            let op = operation(def, &params, n, &mut generator, &error);
            let entry = paths
                .entry(key)
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = entry {
                m.insert(def.method.as_str().to_ascii_lowercase(), op);
            }
        }
    }
    let schemas = generator.take_definitions(true);
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Content service REST API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The Plone REST API as this service serves it. Every error answers \
                            with the ErrorBody schema.",
        },
        "servers": [{"url": server}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
                "basic": {"type": "http", "scheme": "basic"},
            },
        },
        "security": [{}, {"bearer": []}, {"basic": []}],
    })
}

/// The documented path of `def` with its first `n` parameters, and those parameters' names.
fn path_of(def: &RouteDef, n: usize) -> (String, Vec<&'static str>) {
    let mut key = String::new();
    let mut names = Vec::new();
    if !def.root_only {
        key.push_str("/{path}");
        names.push("path");
    }
    if !def.endpoint.is_empty() {
        key.push_str("/@");
        key.push_str(def.endpoint);
    }
    for p in &def.params[..n] {
        if p.literal {
            key.push('/');
            key.push_str(p.name);
            continue;
        }
        key.push_str("/{");
        key.push_str(p.name);
        key.push('}');
        names.push(p.name);
    }
    if key.is_empty() {
        key.push('/');
    }
    (key, names)
}

#[cfg(feature = "openapi")]
#[derive(Serialize)]
struct Parameter {
    name: &'static str,
    #[serde(rename = "in")]
    location: &'static str,
    required: bool,
    description: String,
    schema: Value,
}

#[cfg(feature = "openapi")]
fn operation(
    def: &RouteDef,
    params: &[&'static str],
    n: usize,
    generator: &mut schemars::SchemaGenerator,
    error: &schemars::Schema,
) -> Value {
    let mut parameters: Vec<Value> = params
        .iter()
        .map(|name| {
            let description = if *name == "path" {
                "The object's site path (may span several segments; empty for the site root)"
                    .to_string()
            } else {
                format!("The {}", name.replace('_', " "))
            };
            serde_json::to_value(Parameter {
                name,
                location: "path",
                required: true,
                description,
                schema: json!({"type": "string"}),
            })
            .unwrap_or(Value::Null)
        })
        .collect();
    if let Some(query) = def.query {
        parameters.extend(query_parameters(query(generator), generator));
    }
    let access = match def.access {
        Access::Public => "Anyone may call it.".to_string(),
        Access::Permission(p) => format!("Needs the permission '{}' on the object.", p.name()),
        Access::Handler => "Who may call it depends on the request (see the summary).".into(),
    };
    let mut success = Map::new();
    success.insert(
        "description".into(),
        Value::String(if def.status == 204 {
            "Done; no content".into()
        } else {
            "Success".into()
        }),
    );
    if let Some(resp) = def.response {
        success.insert(
            "content".into(),
            json!({"application/json": {"schema": resp(generator)}}),
        );
    }
    let mut responses = Map::new();
    responses.insert(def.status.to_string(), Value::Object(success));
    responses.insert(
        "default".into(),
        json!({"description": "An error", "content": {"application/json": {"schema": error}}}),
    );
    let suffix = if n < def.params.len() || def.params.is_empty() {
        String::new()
    } else {
        format!(
            "_{}",
            def.params[..n]
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join("_")
        )
    };
    let mut op = json!({
        "tags": [def.family],
        "operationId": format!(
            "{}_{}{}",
            def.method.as_str().to_ascii_lowercase(),
            if def.endpoint.is_empty() { "content" } else { def.endpoint }.replace('-', "_"),
            suffix
        ),
        "summary": def.summary,
        "description": format!(
            "{access}{}{}",
            if def.writes { " Runs in one write transaction." } else { "" },
            if def.conditional {
                " Honours If-Match: 412 with the current ETag when the object changed."
            } else {
                ""
            }
        ),
        "parameters": parameters,
        "responses": responses,
    });
    if let Some(body) = def.body {
        op["requestBody"] = json!({
            "required": false,
            "content": {"application/json": {"schema": body(generator)}},
        });
    }
    op
}

/// The properties of a query type's schema as query parameters.
#[cfg(feature = "openapi")]
fn query_parameters(schema: schemars::Schema, generator: &schemars::SchemaGenerator) -> Vec<Value> {
    let resolved = match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => r
            .rsplit('/')
            .next()
            .and_then(|name| generator.definitions().get(name))
            .cloned()
            .unwrap_or(Value::Null),
        None => schema.to_value(),
    };
    let Some(props) = resolved.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, s)| {
            json!({
                "name": name,
                "in": "query",
                "required": false,
                "description": s.get("description").cloned().unwrap_or(Value::String(String::new())),
                "schema": s,
            })
        })
        .collect()
}
