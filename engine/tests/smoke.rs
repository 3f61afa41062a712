//! In-process smoke test of the main content flow (the full behaviour is in the contract scenarios).

use engine::{Engine, EngineOptions, MemStore, Method, Request, SiteSetup};
use serde_json::json;

const BASE: &str = "http://localhost:8080";

fn engine() -> Engine<MemStore> {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    e
}

fn basic() -> (&'static str, &'static str) {
    ("Authorization", "Basic YWRtaW46c2VjcmV0")
}

#[test]
fn create_read_patch_delete() {
    let e = engine();
    let (h, v) = basic();
    let r = e.handle(
        Request::new(Method::Post, "/", BASE)
            .header(h, v)
            .json(&json!({"@type": "Folder", "title": "My Folder"})),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.header_value("location"),
        Some("http://localhost:8080/my-folder")
    );
    let r = e.handle(
        Request::new(Method::Post, "/my-folder", BASE)
            .header(h, v)
            .json(&json!({"@type": "Page", "title": "My Document"})),
    );
    assert_eq!(r.status, 201);
    let body = r.json_body();
    assert_eq!(body["parent"]["@id"], "http://localhost:8080/my-folder");
    assert_eq!(body["review_state"], "private");
    let r = e.handle(Request::new(Method::Get, "/++api++/my-folder", BASE).header(h, v));
    assert_eq!(r.status, 200);
    assert_eq!(r.json_body()["items_total"], 1);
    let anon = e.handle(Request::new(Method::Get, "/my-folder", BASE));
    assert_eq!(anon.status, 401);
    let r = e.handle(
        Request::new(Method::Patch, "/my-folder/my-document", BASE)
            .header(h, v)
            .header("Prefer", "return=representation")
            .json(&json!({"title": "New"})),
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json_body()["title"], "New");
    let r = e.handle(Request::new(Method::Delete, "/my-folder", BASE).header(h, v));
    assert_eq!(r.status, 204);
    let r = e.handle(Request::new(Method::Get, "/my-folder/my-document", BASE).header(h, v));
    assert_eq!(r.status, 404);
    assert_eq!(r.json_body()["context"], BASE);
}

#[test]
fn login_and_bearer() {
    let e = engine();
    let r = e.handle(
        Request::new(Method::Post, "/@login", BASE)
            .json(&json!({"login": "admin", "password": "secret"})),
    );
    assert_eq!(r.status, 200);
    let token = r.json_body()["token"].as_str().unwrap().to_string();
    let auth = format!("Bearer {token}");
    let r = e.handle(
        Request::new(Method::Post, "/", BASE)
            .header("Authorization", &auth)
            .json(&json!({"@type": "Page", "title": "x"})),
    );
    assert_eq!(r.status, 201);
    let r = e.handle(Request::new(Method::Post, "/@logout", BASE).header("Authorization", &auth));
    assert_eq!(r.status, 204);
    let r = e.handle(Request::new(Method::Get, "/", BASE).header("Authorization", &auth));
    assert_eq!(r.status, 401);
}

#[test]
fn members_without_permission_get_403() {
    let e = engine();
    let (h, v) = basic();
    let r = e.handle(
        Request::new(Method::Post, "/@users", BASE)
            .header(h, v)
            .json(&json!({"username": "jane", "password": "password1", "roles": ["Member"]})),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let r = e.handle(
        Request::new(Method::Post, "/", BASE)
            .header("Authorization", "Basic amFuZTpwYXNzd29yZDE=")
            .json(&json!({"@type": "Page", "title": "x"})),
    );
    assert_eq!(r.status, 403);
    assert_eq!(r.json_body()["type"], "Forbidden");
}
