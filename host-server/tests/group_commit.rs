//! Concurrent write requests through the router are group-committed by the writer thread: every
//! one is answered as if it ran alone, a failing one changes nothing, and all the others stand.
//! On SQLite, and on PostgreSQL in both write modes when `PG_TEST_URL` is set.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use engine::{Engine, EngineOptions, SiteSetup, Store};
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
    concurrent_creates(engine, Config::default()).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same with parallel writes (prepared on the request's thread, committed by the writer):
/// creates in one folder always meet on the folder's record, so most run again on the writer.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_all_land_with_parallel_writes() {
    let dir = std::env::temp_dir().join(format!("host-server-group-par-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let options = EngineOptions {
        parallel_writes: true,
        ..EngineOptions::for_tests()
    };
    let engine = open_engine(&dir, SqliteOptions::default(), options).unwrap();
    concurrent_creates(engine, Config::default()).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same on PostgreSQL (reads on the blocking pool, as the server runs them there).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_on_postgres_in_both_write_modes() {
    let Some(admin_url) = common::pg_url("concurrent_creates_on_postgres") else {
        return;
    };
    for mode in [
        host_server::WriteMode::Locked,
        host_server::WriteMode::Optimistic,
    ] {
        let url = admin_url.clone();
        let (db, engine) = tokio::task::spawn_blocking(move || {
            let db = common::PgDatabase::create(&url, "group");
            let pg = host_server::PgOptions {
                write_mode: mode,
                ..host_server::PgOptions::default()
            };
            let engine =
                host_server::open_engine_postgres(&db.url, pg, EngineOptions::for_tests()).unwrap();
            (db, engine)
        })
        .await
        .unwrap();
        let cfg = Config {
            blocking_reads: true,
            ..Config::default()
        };
        concurrent_creates(engine, cfg).await;
        tokio::task::spawn_blocking(move || drop(db)).await.unwrap();
    }
}

async fn concurrent_creates<S: Store + Send + Sync + 'static>(engine: Engine<S>, cfg: Config) {
    let engine = tokio::task::spawn_blocking(move || {
        engine.create_site(&SiteSetup::new("secret")).unwrap();
        engine
    })
    .await
    .unwrap();
    let router = app(Arc::new(engine), cfg);

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
}
