//! In-process checks of workflow, history and locking working together (the contract scenarios
//! pin the exact shapes on every host).

use engine::{Engine, EngineOptions, MemStore, Method, Request, Response, SiteSetup};
use serde_json::{json, Value};

const BASE: &str = "http://localhost:8080";
const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";

fn engine() -> Engine<MemStore> {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    e
}

fn call(
    e: &Engine<MemStore>,
    m: Method,
    path: &str,
    body: Option<Value>,
    extra: &[(&str, &str)],
) -> Response {
    let mut r = Request::new(m, path, BASE).header("Authorization", ADMIN);
    if let Some(b) = body {
        r = r.json(&b);
    }
    for (k, v) in extra {
        r = r.header(k, v);
    }
    e.handle(r)
}

#[test]
fn publish_makes_content_visible_to_anonymous() {
    let e = engine();
    assert_eq!(
        call(
            &e,
            Method::Post,
            "/",
            Some(json!({"@type": "Page", "title": "Doc"})),
            &[]
        )
        .status,
        201
    );
    assert_eq!(
        e.handle(Request::new(Method::Get, "/doc", BASE)).status,
        401
    );
    let wf = call(&e, Method::Get, "/doc/@workflow", None, &[]).json_body();
    let titles: Vec<&str> = wf["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, vec!["Publish", "Submit for publication"]);
    let r = call(
        &e,
        Method::Post,
        "/doc/@workflow/publish",
        Some(json!({"comment": "go"})),
        &[],
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json_body()["review_state"], "published");
    assert_eq!(
        e.handle(Request::new(Method::Get, "/doc", BASE)).status,
        200
    );
    let bad = call(&e, Method::Post, "/doc/@workflow/publish", None, &[]);
    assert_eq!(bad.status, 400);
    let wf = call(&e, Method::Get, "/doc/@workflow", None, &[]).json_body();
    let titles: Vec<&str> = wf["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, vec!["Send back", "Retract"]);
}

#[test]
fn edits_are_versioned_and_revertible() {
    let e = engine();
    call(
        &e,
        Method::Post,
        "/",
        Some(json!({"@type": "Page", "title": "One"})),
        &[],
    );
    let r = call(
        &e,
        Method::Patch,
        "/one",
        Some(json!({"title": "Two", "changeNote": "retitled"})),
        &[],
    );
    assert_eq!(r.status, 204);
    let h = call(&e, Method::Get, "/one/@history", None, &[]).json_body();
    let versions: Vec<i64> = h
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["version"].as_i64())
        .collect();
    assert_eq!(versions, vec![1, 0]);
    assert_eq!(h[0]["comments"], "retitled");
    let v0 = call(&e, Method::Get, "/one/@history/0", None, &[]).json_body();
    assert_eq!(v0["title"], "One");
    assert_eq!(
        call(&e, Method::Get, "/one/@history/7", None, &[]).status,
        404
    );
    let r = call(
        &e,
        Method::Patch,
        "/one/@history",
        Some(json!({"version": 0})),
        &[],
    );
    assert_eq!(
        r.json_body()["message"],
        "One has been reverted to revision 0."
    );
    assert_eq!(
        call(&e, Method::Get, "/one", None, &[]).json_body()["title"],
        "One"
    );
}

#[test]
fn locked_objects_need_the_token() {
    let e = engine();
    call(
        &e,
        Method::Post,
        "/",
        Some(json!({"@type": "Page", "title": "L"})),
        &[],
    );
    let lock = call(
        &e,
        Method::Post,
        "/l/@lock",
        Some(json!({"timeout": 3600, "stealable": false})),
        &[],
    )
    .json_body();
    assert_eq!(lock["timeout"], 3600);
    assert_eq!(lock["stealable"], false);
    let token = lock["token"].as_str().unwrap().to_string();
    let r = call(&e, Method::Patch, "/l", Some(json!({"title": "x"})), &[]);
    assert_eq!(r.status, 403);
    assert_eq!(
        call(&e, Method::Get, "/l", None, &[]).json_body()["title"],
        "L"
    );
    let r = call(
        &e,
        Method::Patch,
        "/l",
        Some(json!({"title": "x"})),
        &[("Lock-Token", &token)],
    );
    assert_eq!(r.status, 204);
    assert_eq!(
        call(&e, Method::Get, "/l", None, &[]).json_body()["lock"]["locked"],
        true
    );
    let r = call(&e, Method::Delete, "/l/@lock", None, &[]);
    assert_eq!(r.json_body(), json!({"locked": false, "stealable": true}));
}

#[test]
fn expand_embeds_the_workflow_component() {
    let e = engine();
    call(
        &e,
        Method::Post,
        "/",
        Some(json!({"@type": "Page", "title": "E"})),
        &[],
    );
    let plain = call(&e, Method::Get, "/e", None, &[]).json_body();
    assert_eq!(
        plain["@components"]["workflow"],
        json!({"@id": "http://localhost:8080/e/@workflow"})
    );
    let expanded = call(&e, Method::Get, "/e?expand=workflow", None, &[]).json_body();
    assert_eq!(
        expanded["@components"]["workflow"]["state"]["id"],
        "private"
    );
    assert_eq!(
        expanded["@components"]["navigation"],
        json!({"@id": "http://localhost:8080/e/@navigation"})
    );
}
