//! A failure inside the service (here: a stored record that does not decode) answers a bare 500
//! whose detail goes to the host's error log, never into the response body.

use std::sync::{Arc, Mutex};

use engine::{Engine, EngineOptions, MemStore, Method, Request, SiteSetup};
use serde_json::json;

#[test]
fn a_corrupt_record_is_a_500_with_the_detail_in_the_log_only() {
    let logged: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = logged.clone();
    let options = EngineOptions {
        error_log: Some(Arc::new(move |d: &str| {
            sink.lock().unwrap().push(d.to_string())
        })),
        ..EngineOptions::for_tests()
    };
    let engine = Engine::new(MemStore::new(), options).unwrap();
    engine.create_site(&SiteSetup::new("secret")).unwrap();
    let base = "http://localhost:8080";
    let created = engine.handle(
        Request::new(Method::Post, "/", base)
            .header("Authorization", "Basic YWRtaW46c2VjcmV0")
            .json(&json!({"@type": "Page", "title": "Doc"})),
    );
    assert_eq!(created.status, 201);
    let uid = created.json_body()["UID"].as_str().unwrap().to_string();
    engine
        .with_write(|ctx| ctx.put(format!("o:{uid}").as_bytes(), b"{\"uid\": 42, oops"))
        .unwrap();
    let resp = engine.handle(
        Request::new(Method::Get, "/doc", base).header("Authorization", "Basic YWRtaW46c2VjcmV0"),
    );
    assert_eq!(resp.status, 500);
    let body = resp.json_body();
    assert_eq!(body["type"], "InternalError");
    let text = String::from_utf8_lossy(&resp.body);
    assert!(!text.contains("corrupt") && !text.contains("oops") && !text.contains("line"));
    let log = logged.lock().unwrap();
    assert_eq!(log.len(), 1, "{log:?}");
    assert!(
        log[0].contains("GET /doc") && log[0].contains("corrupt stored record"),
        "{log:?}"
    );
}
