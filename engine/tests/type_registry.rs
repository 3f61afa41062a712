//! The stored type registry and its cache: content writes leave the registry version alone (the
//! cached registry stays valid), a type change moves it, read requests fill the cache with the
//! committed registry, and every request sees the registry as committed.

use engine::core::http::{Method, Request};
use engine::core::store::Store;
use engine::{core::keys, Engine, EngineOptions, MemStore, SiteSetup};
use serde_json::json;

const BASE: &str = "http://localhost:8080";
const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";

fn engine() -> Engine<MemStore> {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).expect("engine");
    e.create_site(&SiteSetup::new("secret")).expect("site");
    e
}

fn version(e: &Engine<MemStore>) -> Option<String> {
    let txn = e.store().begin_read().expect("read");
    txn.get(keys::TYPES_VERSION)
        .expect("get")
        .map(|v| String::from_utf8_lossy(&v).into_owned())
}

fn send(e: &Engine<MemStore>, method: Method, path: &str, body: serde_json::Value) -> u16 {
    let mut req = Request::new(method, path, BASE).header("Authorization", ADMIN);
    if !body.is_null() {
        req = req.json(&body);
    }
    e.handle(req).status
}

#[test]
fn content_writes_keep_the_registry_version_and_type_changes_move_it() {
    let e = engine();
    assert_eq!(
        version(&e).as_deref(),
        Some("1"),
        "site creation writes the registry"
    );
    assert_eq!(send(&e, Method::Get, "/@types/Page", json!(null)), 200);
    assert!(
        e.core().cached_types(1).is_some(),
        "a read request caches the committed registry"
    );
    assert_eq!(
        send(
            &e,
            Method::Post,
            "/",
            json!({"@type": "Page", "title": "P"})
        ),
        201
    );
    assert_eq!(version(&e).as_deref(), Some("1"), "a content write");
    assert!(e.core().cached_types(1).is_some(), "still valid");

    let add = json!({"factory": "Integer", "title": "Rating"});
    assert_eq!(send(&e, Method::Post, "/@types/Page", add), 201);
    assert_eq!(version(&e).as_deref(), Some("2"));
    assert!(
        e.core().cached_types(2).is_none(),
        "writes do not fill the cache"
    );
    // The next request sees the new field at once: it validates against it.
    let rate = json!({"rating": "five"});
    assert_eq!(send(&e, Method::Patch, "/p", rate), 400);
    assert_eq!(send(&e, Method::Patch, "/p", json!({"rating": 5})), 204);
    assert_eq!(
        send(&e, Method::Get, "/@types/Page/rating", json!(null)),
        200
    );
    assert!(e.core().cached_types(2).is_some());

    // A refused change writes nothing and keeps the version.
    let dup = json!({"factory": "Text", "title": "Rating"});
    assert_eq!(send(&e, Method::Post, "/@types/Page", dup), 400);
    assert_eq!(version(&e).as_deref(), Some("2"));
}
