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
