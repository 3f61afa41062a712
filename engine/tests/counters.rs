//! Per-object counters (`engine::content::counters`): numbers are never reused, and an object's counters
//! go with it.

use engine::{core::keys, Engine, EngineOptions, MemStore, Method, Request, SiteSetup, Store};
use serde_json::json;

const BASE: &str = "http://localhost:8080";
const ADMIN: (&str, &str) = ("Authorization", "Basic YWRtaW46c2VjcmV0"); // admin:secret

fn engine() -> Engine<MemStore> {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).expect("engine");
    e.create_site(&SiteSetup::new("secret")).expect("site");
    let r = e.handle(
        Request::new(Method::Patch, "/@controlpanels/discussion", BASE)
            .header(ADMIN.0, ADMIN.1)
            .json(&json!({"globally_enabled": true})),
    );
    assert!(r.status < 300, "{}", String::from_utf8_lossy(&r.body));
    e
}

fn send(e: &Engine<MemStore>, method: Method, path: &str, body: Option<serde_json::Value>) -> u16 {
    let mut req = Request::new(method, path, BASE).header(ADMIN.0, ADMIN.1);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = e.handle(req);
    assert!(
        r.status < 300,
        "{path}: {} {}",
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    r.status
}

fn raw(e: &Engine<MemStore>, key: &[u8]) -> Option<Vec<u8>> {
    e.store().begin_read().expect("read").get(key).expect("get")
}

fn comment_ids(e: &Engine<MemStore>, path: &str) -> Vec<String> {
    let r = e.handle(
        Request::new(Method::Get, &format!("{path}/@comments"), BASE).header(ADMIN.0, ADMIN.1),
    );
    r.json_body()["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|c| c["comment_id"].as_str().expect("comment_id").to_string())
        .collect()
}

#[test]
fn a_deleted_last_comment_does_not_give_its_position_back() {
    let e = engine();
    send(
        &e,
        Method::Post,
        "/",
        Some(json!({"@type": "Page", "title": "Talk", "allow_discussion": true})),
    );
    let uid = String::from_utf8(raw(&e, &keys::path("/talk")).expect("uid")).expect("utf8");
    send(
        &e,
        Method::Post,
        "/talk/@comments",
        Some(json!({"text": "one"})),
    );
    send(
        &e,
        Method::Post,
        "/talk/@comments",
        Some(json!({"text": "two"})),
    );
    let ids = comment_ids(&e, "/talk");
    assert_eq!(ids.len(), 2);
    assert!(raw(&e, &keys::comment(&uid, 1)).is_some());
    // delete the last comment, then add another: it takes position 2, not 1 again
    send(
        &e,
        Method::Delete,
        &format!("/talk/@comments/{}", ids[1]),
        None,
    );
    assert!(raw(&e, &keys::comment(&uid, 1)).is_none());
    send(
        &e,
        Method::Post,
        "/talk/@comments",
        Some(json!({"text": "three"})),
    );
    assert!(
        raw(&e, &keys::comment(&uid, 1)).is_none(),
        "position 1 was reused"
    );
    assert!(raw(&e, &keys::comment(&uid, 2)).is_some());
    assert_eq!(comment_ids(&e, "/talk").len(), 2);
}

#[test]
fn versions_and_history_are_numbered_by_counters_that_go_with_the_object() {
    let e = engine();
    send(
        &e,
        Method::Post,
        "/",
        Some(json!({"@type": "Page", "title": "Doc"})),
    );
    let uid = String::from_utf8(raw(&e, &keys::path("/doc")).expect("uid")).expect("utf8");
    send(&e, Method::Patch, "/doc", Some(json!({"title": "Doc 2"})));
    // versions 0 and 1 taken; history: the creation entry and both versions
    assert_eq!(raw(&e, &keys::version_counter(&uid)), Some(b"2".to_vec()));
    assert_eq!(raw(&e, &keys::history_counter(&uid)), Some(b"3".to_vec()));
    assert!(raw(&e, &keys::version(&uid, 1)).is_some());
    send(&e, Method::Delete, "/doc", None);
    // The delete moved it into the recycle bin (which keeps its counters); purging it removes it.
    assert!(raw(&e, &keys::version_counter(&uid)).is_some());
    send(&e, Method::Delete, "/@recyclebin", None);
    let txn = e.store().begin_read().expect("read");
    let prefix = keys::counters_prefix(&uid);
    let mut end = prefix.clone();
    *end.last_mut().expect("prefix") += 1;
    let left = txn
        .scan(&prefix, &end, engine::Direction::Forward, usize::MAX)
        .expect("scan");
    assert!(
        left.is_empty(),
        "counters of a removed object remain: {left:?}"
    );
}
