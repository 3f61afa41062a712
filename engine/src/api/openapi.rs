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

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::extract::Call;
use super::router::{self, Access, Registry, RouteDef};
use crate::context::Ctx;
use crate::error::{ErrorBody, Result};
use crate::http::Response;
use crate::model::ContentRecord;

/// Register `@openapi`.
pub fn register(r: &mut Registry) {
    r.route(
        RouteDef::get("@openapi", get)
            .root_only()
            .summary("This API described in OpenAPI 3.1"),
    );
}

fn get(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    Ok(Response::json(200, &document(ctx.core, &ctx.base_url)))
}

/// The OpenAPI document for the routes this engine serves, with `server` as the server URL.
pub fn document(core: &crate::state::Core, server: &str) -> Value {
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

#[derive(Serialize)]
struct Parameter {
    name: &'static str,
    #[serde(rename = "in")]
    location: &'static str,
    required: bool,
    description: String,
    schema: Value,
}

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
