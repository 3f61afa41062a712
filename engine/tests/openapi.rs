//! `GET /@openapi` is a valid OpenAPI 3.1 document that documents every route of the table.

use engine::api::router;
use engine::{Engine, EngineOptions, MemStore, Method, Request, SiteSetup};
use serde_json::Value;

fn document() -> (String, Value) {
    let engine = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    engine.create_site(&SiteSetup::new("secret")).unwrap();
    let resp = engine.handle(Request::new(
        Method::Get,
        "/@openapi",
        "http://localhost:8080",
    ));
    assert_eq!(resp.status, 200);
    let text = String::from_utf8(resp.body).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    (text, value)
}

#[test]
fn the_document_parses_as_openapi_3_1() {
    let (text, _) = document();
    let spec = oas3::from_json(&text).expect("a valid OpenAPI 3.1 document");
    assert!(spec.openapi.starts_with("3.1"));
    assert!(spec.paths.as_ref().is_some_and(|p| p.len() > 20));
}

#[test]
fn every_route_is_documented() {
    let (_, doc) = document();
    let paths = doc["paths"].as_object().expect("paths");
    let mut missing = Vec::new();
    for def in &router::table().routes {
        let mut key = String::new();
        if !def.root_only {
            key.push_str("/{path}");
        }
        if !def.endpoint.is_empty() {
            key.push_str("/@");
            key.push_str(def.endpoint);
        }
        for p in def.params.iter().filter(|p| !p.optional) {
            if p.literal {
                key.push_str(&format!("/{}", p.name));
            } else {
                key.push_str(&format!("/{{{}}}", p.name));
            }
        }
        if key.is_empty() {
            key.push('/');
        }
        let method = def.method.as_str().to_ascii_lowercase();
        let documented = paths
            .get(&key)
            .and_then(|ops| ops.get(&method))
            .is_some_and(|op| op["summary"].as_str().is_some_and(|s| !s.is_empty()));
        if !documented {
            missing.push(format!("{} {key}", def.method.as_str()));
        }
    }
    assert!(missing.is_empty(), "undocumented routes: {missing:?}");
}

#[test]
fn every_schema_reference_resolves() {
    let (_, doc) = document();
    let schemas = doc["components"]["schemas"].as_object().unwrap().clone();
    let mut refs = Vec::new();
    collect_refs(&doc, &mut refs);
    assert!(!refs.is_empty());
    for r in refs {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("reference outside components/schemas: {r}"));
        assert!(schemas.contains_key(name), "dangling reference {r}");
    }
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("$ref", Value::String(s)) => out.push(s.clone()),
                    _ => collect_refs(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// The checked-in document the browser build serves (`src/api/openapi.json`, see
/// `engine::api::openapi`) gives the same bytes as the generation, on an engine with the test
/// clock (every route) and on one without it (no test hooks). `OPENAPI_WRITE=1` rewrites the file
/// from the generation first (after a change to the API).
#[test]
fn the_pregenerated_document_equals_the_generated_one() {
    use engine::api::openapi;
    let with_hooks = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    if std::env::var_os("OPENAPI_WRITE").is_some() {
        let text = serde_json::to_string(&openapi::generated(with_hooks.core(), "")).unwrap();
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/src/api/openapi.json");
        std::fs::write(file, text).unwrap();
        panic!("rewrote {file}: run again without OPENAPI_WRITE");
    }
    let mut options = EngineOptions::for_tests();
    options.test_clock = None;
    let without_hooks = Engine::new(MemStore::new(), options).unwrap();
    for (engine, hooks) in [(&with_hooks, true), (&without_hooks, false)] {
        for server in ["", "http://localhost:8080", "https://example.org/site"] {
            let generated = serde_json::to_string(&openapi::generated(engine.core(), server));
            let served = serde_json::to_string(&openapi::pregenerated(engine.core(), server));
            let (generated, served) = (generated.unwrap(), served.unwrap());
            assert_eq!(
                generated, served,
                "test hooks: {hooks}, server {server:?}: src/api/openapi.json is stale; \
                 rewrite it with OPENAPI_WRITE=1 cargo test -p engine --test openapi"
            );
        }
    }
    let generated = serde_json::to_string(&openapi::generated(without_hooks.core(), "")).unwrap();
    let all = serde_json::to_string(&openapi::generated(with_hooks.core(), "")).unwrap();
    assert_ne!(generated, all, "the test hooks should change the document");
}
