//! In-process checks of aliases, copy/move/rename and comments working together (the contract
//! scenarios pin the exact shapes on every host).

use engine::{Engine, EngineOptions, MemStore, Method, Request, Response, SiteSetup};
use serde_json::{json, Value};

const BASE: &str = "http://localhost:8080";
const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";

fn engine() -> Engine<MemStore> {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    e
}

fn call(e: &Engine<MemStore>, m: Method, path: &str, body: Option<Value>) -> Response {
    let mut r = Request::new(m, path, BASE).header("Authorization", ADMIN);
    if let Some(b) = body {
        r = r.json(&b);
    }
    e.handle(r)
}

fn add(e: &Engine<MemStore>, parent: &str, ty: &str, title: &str) {
    let r = call(
        e,
        Method::Post,
        parent,
        Some(json!({"@type": ty, "title": title})),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
}

#[test]
fn rename_leaves_aliases_that_redirect() {
    let e = engine();
    add(&e, "/", "Folder", "A");
    add(&e, "/a", "Page", "P");
    let r = call(&e, Method::Patch, "/a", Some(json!({"id": "b"})));
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(call(&e, Method::Get, "/b/p", None).status, 200);
    let r = call(&e, Method::Get, "/a/p/@workflow?x=1", None);
    assert_eq!(r.status, 301);
    assert_eq!(
        r.header_value("location"),
        Some("http://localhost:8080/b/p/@workflow?x=1")
    );
    let al = call(&e, Method::Get, "/b/p/@aliases", None).json_body();
    assert_eq!(al["items"][0]["path"], "/a/p");
    assert_eq!(al["items"][0]["manual"], false);
    // transitive: renaming again rewrites the old alias
    assert_eq!(
        call(&e, Method::Patch, "/b", Some(json!({"id": "c"}))).status,
        204
    );
    let all = call(&e, Method::Get, "/@aliases", None).json_body();
    let targets: Vec<(&str, &str)> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["path"].as_str().unwrap(),
                i["redirect-to"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        targets,
        vec![
            ("/a", "/c"),
            ("/a/p", "/c/p"),
            ("/b", "/c"),
            ("/b/p", "/c/p")
        ]
    );
}

#[test]
fn copy_and_move_are_atomic() {
    let e = engine();
    add(&e, "/", "Folder", "F");
    add(&e, "/", "Page", "Doc");
    let r = call(&e, Method::Post, "/@copy", Some(json!({"source": "/doc"})));
    assert_eq!(
        r.json_body()[0]["target"],
        "http://localhost:8080/copy_of_doc"
    );
    let r = call(
        &e,
        Method::Post,
        "/f/@move",
        Some(json!({"source": ["/doc", "/missing"]})),
    );
    assert_eq!(r.status, 400);
    assert_eq!(call(&e, Method::Get, "/doc", None).status, 200);
    let r = call(
        &e,
        Method::Post,
        "/f/@move",
        Some(json!({"source": ["/doc", "http://localhost:8080/copy_of_doc"]})),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        call(&e, Method::Get, "/f", None).json_body()["items_total"],
        2
    );
    let r = call(&e, Method::Post, "/f/@move", Some(json!({"source": "/"})));
    assert_eq!(r.status, 400);
    let r = call(&e, Method::Post, "/f/@move", Some(json!({"source": "/f"})));
    assert_eq!(r.status, 400);
}

#[test]
fn comments_need_discussion_enabled() {
    let e = engine();
    add(&e, "/", "Page", "Talk");
    let r = call(
        &e,
        Method::Post,
        "/talk/@comments",
        Some(json!({"text": "hi"})),
    );
    assert_eq!(r.status, 403);
    assert_eq!(
        call(
            &e,
            Method::Patch,
            "/@controlpanels/discussion",
            Some(json!({"globally_enabled": true}))
        )
        .status,
        204
    );
    assert_eq!(
        call(
            &e,
            Method::Patch,
            "/talk",
            Some(json!({"allow_discussion": true}))
        )
        .status,
        204
    );
    let r = call(
        &e,
        Method::Post,
        "/talk/@comments",
        Some(json!({"text": "hi"})),
    );
    assert_eq!(r.status, 204);
    let loc = r.header_value("location").unwrap().to_string();
    let id = loc.rsplit('/').next().unwrap().to_string();
    let r = call(
        &e,
        Method::Post,
        &format!("/talk/@comments/{id}"),
        Some(json!({"text": "re"})),
    );
    assert_eq!(r.status, 204);
    let list = call(&e, Method::Get, "/talk/@comments", None).json_body();
    assert_eq!(list["items_total"], 2);
    assert_eq!(list["items"][1]["in_reply_to"], id.as_str());
    assert_eq!(
        call(&e, Method::Delete, &format!("/talk/@comments/{id}"), None).status,
        204
    );
    assert_eq!(
        call(&e, Method::Get, "/talk/@comments", None).json_body()["items_total"],
        0
    );
}
