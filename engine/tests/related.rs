//! `@related` beyond the contract scenarios (which all run with the test embedder): without a
//! model it answers "AI is disabled."; stored vectors follow the configured model across
//! reopenings; the generated tiny static model answers through the whole path.

use std::sync::Arc;

use engine::ai::embedding::{tiny_model, StaticEmbedder};
use engine::{Engine, EngineOptions, MemStore, Method, Request, Response, SiteSetup, Store};
use serde_json::{json, Value};

const BASE: &str = "http://localhost:8080";
const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";

fn call(e: &Engine<MemStore>, m: Method, path: &str, body: Option<Value>) -> Response {
    let mut r = Request::new(m, path, BASE).header("Authorization", ADMIN);
    if let Some(b) = body {
        r = r.json(&b);
    }
    e.handle(r)
}

fn page(e: &Engine<MemStore>, title: &str, description: &str) {
    let r = call(
        e,
        Method::Post,
        "/",
        Some(json!({"@type": "Page", "title": title, "description": description})),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
}

fn vector_of(store: &MemStore, path: &str) -> Option<Vec<u8>> {
    let txn = store.begin_read().unwrap();
    let uid = String::from_utf8(txn.get(format!("p:{path}").as_bytes()).unwrap()?).unwrap();
    txn.get(format!("E:v:{uid}").as_bytes()).unwrap()
}

fn model_key(store: &MemStore) -> Option<String> {
    let txn = store.begin_read().unwrap();
    txn.get(b"E:model")
        .unwrap()
        .map(|b| String::from_utf8(b).unwrap())
}

fn tiny() -> Arc<StaticEmbedder> {
    let (model, tok) = tiny_model(&[
        "harbour", "tours", "boat", "hire", "budget", "report", "annual",
    ]);
    Arc::new(StaticEmbedder::from_bytes("tiny", &model, &tok).unwrap())
}

fn options(embedder: Option<Arc<dyn engine::ai::embedding::Embedder>>) -> EngineOptions {
    EngineOptions {
        embedder,
        ..EngineOptions::for_tests()
    }
}

#[test]
fn without_a_model_related_is_disabled_and_the_object_still_answers() {
    let e = Engine::new(MemStore::new(), options(None)).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    page(&e, "Harbour", "tours");
    let r = call(&e, Method::Get, "/harbour/@related", None);
    assert_eq!(r.status, 400);
    assert_eq!(r.json_body()["message"], "AI is disabled.");
    let r = call(&e, Method::Get, "/harbour?expand=related", None);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json_body()["@components"]["related"],
        json!({"@id": format!("{BASE}/harbour/@related")})
    );
    // no vectors are kept without a model
    assert_eq!(vector_of(e.store(), "/harbour"), None);
    assert_eq!(model_key(e.store()), None);
}

#[test]
fn vectors_follow_the_configured_model_across_reopenings() {
    let store = MemStore::new();
    let e = Engine::new(store.clone(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    page(&e, "Harbour tours", "boat hire in summer");
    let test_vector = vector_of(&store, "/harbour-tours").expect("a vector");
    assert_eq!(model_key(&store).as_deref(), Some("test-hashed-words-64"));
    drop(e);

    // another model: every vector is recomputed when the store is opened
    let e = Engine::new(store.clone(), options(Some(tiny()))).unwrap();
    let tiny_vector = vector_of(&store, "/harbour-tours").expect("a vector");
    assert_ne!(tiny_vector, test_vector);
    assert!(model_key(&store).unwrap().starts_with("static:tiny:"));
    assert_eq!(e.sync_vectors().unwrap(), 0, "current vectors are kept");
    drop(e);

    // changed while no model is configured: the vectors are stale, E:model goes
    let e = Engine::new(store.clone(), options(None)).unwrap();
    let r = call(
        &e,
        Method::Patch,
        "/harbour-tours",
        Some(json!({"title": "Annual report"})),
    );
    assert_eq!(r.status, 204);
    assert_eq!(model_key(&store), None);
    drop(e);
    let e = Engine::new(store.clone(), options(Some(tiny()))).unwrap();
    assert_ne!(vector_of(&store, "/harbour-tours").unwrap(), tiny_vector);
    assert_eq!(e.sync_vectors().unwrap(), 0);
}

#[test]
fn the_tiny_static_model_answers_related() {
    let e = Engine::new(MemStore::new(), options(Some(tiny()))).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    page(&e, "Harbour tours", "Boat tours of the harbour");
    page(&e, "Boat hire", "Hire a boat in the harbour");
    page(&e, "Annual report", "The budget report");
    let r = call(&e, Method::Get, "/harbour-tours/@related?b_size=2", None);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let body = r.json_body();
    let items = body["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["@id"], format!("{BASE}/boat-hire"));
    let (first, second) = (
        items[0]["similarity"].as_f64().unwrap(),
        items[1]["similarity"].as_f64().unwrap(),
    );
    assert!(first > 0.3 && first > second, "{first} {second}");
}
