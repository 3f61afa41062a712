//! The logger action of a content rule writes its line to the host's log
//! (`EngineOptions::info_log`), with `&e`, `&c` and `&u` filled in; the scenarios cannot see the
//! log, so it is checked here. Also: a rule assignment goes with its object.

use std::sync::{Arc, Mutex};

use engine::{Engine, EngineOptions, MemStore, Method, Request, Response, SiteSetup};
use serde_json::{json, Value};

const BASE: &str = "http://localhost:8080";
const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";

fn call(e: &Engine<MemStore>, m: Method, path: &str, body: Value) -> Response {
    e.handle(
        Request::new(m, path, BASE)
            .header("Authorization", ADMIN)
            .json(&body),
    )
}

#[test]
fn the_logger_action_writes_to_the_hosts_log() {
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    let mut options = EngineOptions::for_tests();
    options.info_log = Some(Arc::new(move |l: &str| {
        sink.lock().unwrap().push(l.to_string());
    }));
    let e = Engine::new(MemStore::new(), options).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();

    let r = call(
        &e,
        Method::Post,
        "/@controlpanels/content-rules",
        json!({"title": "Log", "event": "onAfterAdd"}),
    );
    assert_eq!(r.status, 201);
    let r = call(
        &e,
        Method::Post,
        "/@controlpanels/content-rules/rule-1/action",
        json!({"type": "plone.actions.Logger", "targetLogger": "audit", "loggingLevel": 30,
               "message": "Caught &e at &c by &u"}),
    );
    assert_eq!(r.status, 201);
    assert_eq!(
        call(&e, Method::Post, "/@content-rules/rule-1", json!({})).status,
        201
    );
    assert!(lines.lock().unwrap().is_empty(), "nothing logged yet");

    let r = call(
        &e,
        Method::Post,
        "/",
        json!({"@type": "Page", "id": "p", "title": "P"}),
    );
    assert_eq!(r.status, 201);
    assert_eq!(
        *lines.lock().unwrap(),
        vec![format!("[audit 30] Caught onAfterAdd at {BASE}/p by admin")]
    );

    // An edit is not an add: nothing more.
    assert_eq!(
        call(&e, Method::Patch, "/p", json!({"title": "P2"})).status,
        204
    );
    assert_eq!(lines.lock().unwrap().len(), 1);
}

#[test]
fn an_objects_rule_assignments_go_with_it() {
    use engine::{Direction, Store as _};
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    let r = call(
        &e,
        Method::Post,
        "/@controlpanels/content-rules",
        json!({"title": "R", "event": "onAfterAdd"}),
    );
    assert_eq!(r.status, 201);
    let f = call(
        &e,
        Method::Post,
        "/",
        json!({"@type": "Folder", "id": "f", "title": "F"}),
    );
    let uid = f.json_body()["UID"].as_str().unwrap().to_string();
    assert_eq!(
        call(&e, Method::Post, "/f/@content-rules/rule-1", json!({})).status,
        201
    );
    let naming = |uid: &str| -> Vec<String> {
        let txn = e.store().begin_read().unwrap();
        txn.scan(b"", &[0xff; 4], Direction::Forward, usize::MAX)
            .unwrap()
            .into_iter()
            .map(|(k, _)| String::from_utf8_lossy(&k).into_owned())
            // The change log keeps the removal for its retention period (engine/tests/cleanup.rs).
            .filter(|k| k.contains(uid) && !k.starts_with("C:"))
            .collect()
    };
    assert!(naming(&uid).iter().any(|k| k.starts_with("R:a:")));
    assert_eq!(call(&e, Method::Delete, "/f", json!({})).status, 204);
    // Binned: it keeps its records until the bin is emptied.
    assert_eq!(
        call(&e, Method::Delete, "/@recyclebin", json!({})).status,
        204
    );
    assert_eq!(naming(&uid), Vec::<String>::new());
}
