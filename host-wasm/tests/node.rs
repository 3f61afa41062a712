//! The engine in wasm under Node (no IndexedDB there): the JS API over the in-memory store.

mod common;

use common::{call, open, options, unique};
use serde_json::json;
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn create_read_update_delete_through_fetch() {
    let site = open(&unique("node"), options("memory")).await;
    let r = call(&site, "GET", "/", None, false).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["@id"], "http://localhost:8080");
    assert_eq!(r.content_type.as_deref(), Some("application/json"));

    let r = call(
        &site,
        "POST",
        "/",
        Some(json!({"@type": "Folder", "title": "Docs"})),
        true,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["@id"], "http://localhost:8080/docs");
    let r = call(
        &site,
        "POST",
        "/docs",
        Some(json!({"@type": "Page", "title": "Hello"})),
        true,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);

    let r = call(&site, "GET", "/docs", None, true).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["items_total"], 1);
    assert_eq!(r.body["items"][0]["title"], "Hello");

    let r = call(
        &site,
        "PATCH",
        "/docs/hello",
        Some(json!({"title": "Hi"})),
        true,
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(r.body, serde_json::Value::Null);
    let r = call(&site, "GET", "/docs/hello", None, true).await;
    assert_eq!(r.body["title"], "Hi");

    let r = call(&site, "DELETE", "/docs", None, true).await;
    assert_eq!(r.status, 204);
    let r = call(&site, "GET", "/docs/hello", None, true).await;
    assert_eq!(r.status, 404);
}

#[wasm_bindgen_test]
async fn api_failures_are_json_responses_not_exceptions() {
    let site = open(&unique("node"), options("memory")).await;
    // anonymous write
    let r = call(
        &site,
        "POST",
        "/",
        Some(json!({"@type": "Page", "title": "x"})),
        false,
    )
    .await;
    assert_eq!(r.status, 401);
    assert_eq!(r.body["type"], "Unauthorized");
    // missing object
    let r = call(&site, "GET", "/nope", None, true).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.body["type"], "NotFound");
    // malformed body
    let r = call(&site, "POST", "/", Some(json!("not an object")), true).await;
    assert_eq!(r.status / 100, 4, "{}", r.body);
    assert!(r.body["message"].is_string());
}

#[wasm_bindgen_test]
async fn urls_outside_the_base_path_are_404_json() {
    let mut opts = options("memory");
    opts.base_url = Some("http://localhost:8080/api".into());
    let site = open(&unique("node"), opts).await;
    let r = call(&site, "GET", "/api", None, false).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["@id"], "http://localhost:8080/api");
    let r = call(&site, "GET", "/elsewhere", None, false).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.body["type"], "NotFound");
}

#[wasm_bindgen_test]
async fn open_errors_are_clear() {
    // Node has no IndexedDB: persistent storage must fail with a message that says so.
    let err = host_wasm::Site::open(unique("node"), options("indexeddb"))
        .await
        .err()
        .map(|e| host_wasm::idb::js_error_text(&e))
        .expect("openSite must fail without IndexedDB");
    assert!(err.contains("IndexedDB is not available"), "{err}");

    let mut opts = options("memory");
    opts.admin_password = None;
    let err = host_wasm::Site::open(unique("node"), opts)
        .await
        .err()
        .map(|e| host_wasm::idb::js_error_text(&e))
        .expect("a new site needs an admin password");
    assert!(err.contains("adminPassword"), "{err}");
}

#[wasm_bindgen_test]
async fn profiles_in_the_open_options_make_a_multilingual_site() {
    let mut opts = options("memory");
    opts.profiles = vec!["multilingual-content".into()];
    opts.languages = vec!["en".into(), "de".into()];
    let site = open(&unique("node-ml"), opts).await;
    let r = call(&site, "GET", "/", None, true).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let ids: Vec<&str> = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["@id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec!["http://localhost:8080/en", "http://localhost:8080/de"]
    );
    let r = call(&site, "GET", "/de/@navroot", None, true).await;
    assert_eq!(r.body["navroot"]["@id"], "http://localhost:8080/de");

    let mut bad = options("memory");
    bad.profiles = vec!["nonsense".into()];
    match host_wasm::Site::open(unique("node-bad"), bad).await {
        Ok(_) => panic!("an unknown profile must be refused"),
        Err(e) => assert!(host_wasm::idb::js_error_text(&e).contains("nonsense")),
    }
}
