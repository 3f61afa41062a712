//! Concurrent write requests through the router are group-committed by the writer thread: every
//! one is answered as if it ran alone, a failing one changes nothing, and all the others stand.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use engine::{EngineOptions, SiteSetup};
use host_server::{app, open_engine, Config, SqliteOptions};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";

fn post(uri: &str, body: Value) -> Request<Body> {
    Request::builder()
        .method("POST")
        .uri(uri)
        .header("host", "localhost:8080")
        .header("authorization", ADMIN)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_all_land_and_failures_stay_alone() {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "host-server-group-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let engine = open_engine(&dir, SqliteOptions::default(), EngineOptions::for_tests()).unwrap();
    engine.create_site(&SiteSetup::new("secret")).unwrap();
    let router = app(Arc::new(engine), Config::default());

    let resp = router
        .clone()
        .oneshot(post(
            "/",
            json!({"@type": "Folder", "id": "f", "title": "F"}),
        ))
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);

    let mut tasks = Vec::new();
    for i in 0..40 {
        let router = router.clone();
        // Every fifth request is invalid (an unknown type) and must fail alone.
        let body = if i % 5 == 4 {
            json!({"@type": "Nope", "title": format!("bad {i}")})
        } else {
            json!({"@type": "Page", "title": format!("page {i}")})
        };
        tasks.push(tokio::spawn(async move {
            router.oneshot(post("/f", body)).await.unwrap().status()
        }));
    }
    let mut created = 0;
    for (i, t) in tasks.into_iter().enumerate() {
        let status = t.await.unwrap();
        if i % 5 == 4 {
            assert_eq!(status, 400);
        } else {
            assert_eq!(status, 201);
            created += 1;
        }
    }
    let resp = router
        .oneshot(
            Request::builder()
                .uri("/f?b_size=100")
                .header("host", "localhost:8080")
                .header("authorization", ADMIN)
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let body: Value =
        serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(body["items_total"], created);
    let _ = std::fs::remove_dir_all(&dir);
}
