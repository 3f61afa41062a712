//! The router driven in-process with `tower::ServiceExt::oneshot`, over a real SQLite store.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::Response;
use engine::{Engine, EngineOptions, SiteSetup};
use host_server::{app, open_engine, Config, SqliteOptions, SqliteStore};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

struct Site {
    engine: Arc<Engine<SqliteStore>>,
    dir: PathBuf,
}

impl Site {
    fn new() -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "host-server-app-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let engine =
            open_engine(&dir, SqliteOptions::default(), EngineOptions::for_tests()).unwrap();
        engine.create_site(&SiteSetup::new("secret")).unwrap();
        Site {
            engine: Arc::new(engine),
            dir,
        }
    }

    async fn send(&self, cfg: Config, req: Request<Body>) -> Response {
        app(self.engine.clone(), cfg).oneshot(req).await.unwrap()
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn get(uri: &str) -> axum::http::request::Builder {
    Request::builder()
        .uri(uri)
        .header("host", "localhost:8080")
        .header("accept", "application/json")
}

async fn json_body(resp: Response) -> Value {
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test]
async fn get_root_answers_with_the_site() {
    let site = Site::new();
    let resp = site
        .send(Config::default(), get("/").body(Body::empty()).unwrap())
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    let body = json_body(resp).await;
    assert_eq!(body["@id"], "http://localhost:8080");
}

#[tokio::test]
async fn api_prefix_reaches_the_same_object() {
    let site = Site::new();
    let resp = site
        .send(
            Config::default(),
            get("/++api++").body(Body::empty()).unwrap(),
        )
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(json_body(resp).await["@id"], "http://localhost:8080");
}

#[tokio::test]
async fn unknown_path_is_the_engines_json_404() {
    let site = Site::new();
    let resp = site
        .send(
            Config::default(),
            get("/no-such-thing").body(Body::empty()).unwrap(),
        )
        .await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    assert_eq!(json_body(resp).await["type"], "NotFound");
}

#[tokio::test]
async fn login_and_create_through_the_router() {
    let site = Site::new();
    let login = Request::post("/@login")
        .header("host", "localhost:8080")
        .header("content-type", "application/json")
        .body(Body::from(
            json!({"login": "admin", "password": "secret"}).to_string(),
        ))
        .unwrap();
    let resp = site.send(Config::default(), login).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let token = json_body(resp).await["token"].as_str().unwrap().to_string();

    let create = Request::post("/")
        .header("host", "localhost:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .header("authorization", format!("Bearer {token}"))
        .body(Body::from(
            json!({"@type": "Page", "title": "Hello"}).to_string(),
        ))
        .unwrap();
    let resp = site.send(Config::default(), create).await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let location = resp.headers()["location"].to_str().unwrap().to_string();
    assert!(location.starts_with("http://localhost:8080/"), "{location}");
    let path = location.trim_start_matches("http://localhost:8080");
    let resp = site
        .send(
            Config::default(),
            get(path)
                .header("authorization", format!("Bearer {token}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(json_body(resp).await["title"], "Hello");
}

#[tokio::test]
async fn oversized_body_is_the_engines_json_413() {
    let site = Site::new();
    let limit = site.engine.core().options.max_body_bytes;
    let big = vec![b'x'; limit + 1];
    let resp = site
        .send(
            Config::default(),
            Request::post("/")
                .header("host", "localhost:8080")
                .header("content-type", "application/json")
                .body(Body::from(big))
                .unwrap(),
        )
        .await;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let body = json_body(resp).await;
    assert_eq!(body["type"], "PayloadTooLarge");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains(&limit.to_string()),
        "{body}"
    );
}

#[tokio::test]
async fn oversized_streamed_body_without_length_is_413_too() {
    let site = Site::new();
    let limit = site.engine.core().options.max_body_bytes;
    // A body whose size is not declared up front: two chunks that only together exceed the limit.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        vec![Ok(vec![b'x'; limit / 2 + 1]), Ok(vec![b'x'; limit / 2 + 1])];
    let body = Body::from_stream(futures_stream(chunks));
    let req = Request::post("/")
        .header("host", "localhost:8080")
        .header("content-type", "application/json")
        .body(body)
        .unwrap();
    assert!(req.headers().get("content-length").is_none());
    let resp = site.send(Config::default(), req).await;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(json_body(resp).await["type"], "PayloadTooLarge");
}

/// A minimal stream over a vector (avoids a dependency on the `futures` crate).
fn futures_stream(
    items: Vec<Result<Vec<u8>, std::io::Error>>,
) -> impl futures_core::Stream<Item = Result<Vec<u8>, std::io::Error>> + Send + 'static {
    IterStream(items.into_iter())
}

struct IterStream<I>(I);

impl<I: Iterator + Unpin> futures_core::Stream for IterStream<I> {
    type Item = I::Item;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<I::Item>> {
        std::task::Poll::Ready(self.0.next())
    }
}

#[tokio::test]
async fn no_cors_headers_unless_configured() {
    let site = Site::new();
    let resp = site
        .send(
            Config::default(),
            get("/")
                .header("origin", "http://app.test")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers().get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn cors_preflight_when_configured() {
    let site = Site::new();
    let cfg = Config {
        cors_origins: vec!["http://app.test".into()],
        ..Config::default()
    };
    let preflight = Request::builder()
        .method("OPTIONS")
        .uri("/folder")
        .header("host", "localhost:8080")
        .header("origin", "http://app.test")
        .header("access-control-request-method", "PATCH")
        .header(
            "access-control-request-headers",
            "authorization, content-type, lock-token",
        )
        .body(Body::empty())
        .unwrap();
    let resp = site.send(cfg.clone(), preflight).await;
    assert!(resp.status().is_success(), "{}", resp.status());
    let h = resp.headers();
    assert_eq!(h["access-control-allow-origin"], "http://app.test");
    let methods = h["access-control-allow-methods"].to_str().unwrap();
    for m in ["GET", "POST", "PATCH", "DELETE", "PUT", "OPTIONS"] {
        assert!(methods.contains(m), "{methods}");
    }
    let headers = h["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    for name in [
        "authorization",
        "content-type",
        "accept",
        "prefer",
        "lock-token",
    ] {
        assert!(headers.contains(name), "{headers}");
    }

    // A simple cross-origin request gets the origin and the exposed Location header.
    let resp = site
        .send(
            cfg.clone(),
            get("/")
                .header("origin", "http://app.test")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(
        resp.headers()["access-control-allow-origin"],
        "http://app.test"
    );
    assert!(resp.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase()
        .contains("location"));

    // An origin that is not listed is not allowed.
    let resp = site
        .send(
            cfg,
            get("/")
                .header("origin", "http://evil.test")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert!(resp.headers().get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn cors_wildcard_allows_any_origin() {
    let site = Site::new();
    let cfg = Config {
        cors_origins: vec!["*".into()],
        ..Config::default()
    };
    let resp = site
        .send(
            cfg,
            get("/")
                .header("origin", "http://whoever.test")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(resp.headers()["access-control-allow-origin"], "*");
}

#[tokio::test]
async fn base_url_comes_from_host_or_trusted_forwarded_headers_or_config() {
    let site = Site::new();
    let id_for = |req: Request<Body>, cfg: Config| {
        let site = &site;
        async move { json_body(site.send(cfg, req).await).await["@id"].clone() }
    };

    let req = Request::get("/")
        .header("host", "cms.test:9000")
        .body(Body::empty())
        .unwrap();
    assert_eq!(id_for(req, Config::default()).await, "http://cms.test:9000");

    let forwarded = || {
        Request::get("/")
            .header("host", "127.0.0.1:9000")
            .header("x-forwarded-host", "www.example.org")
            .header("x-forwarded-proto", "https")
            .body(Body::empty())
            .unwrap()
    };
    // By default the forwarded headers are not trusted: any client can send them.
    assert_eq!(
        id_for(forwarded(), Config::default()).await,
        "http://127.0.0.1:9000"
    );
    let trusting = Config {
        trust_forwarded: true,
        ..Config::default()
    };
    assert_eq!(
        id_for(forwarded(), trusting).await,
        "https://www.example.org"
    );

    let cfg = Config {
        public_url: Some("https://public.example.org/site".into()),
        ..Config::default()
    };
    let req = Request::get("/")
        .header("host", "127.0.0.1:9000")
        .header("x-forwarded-host", "ignored.example.org")
        .body(Body::empty())
        .unwrap();
    assert_eq!(id_for(req, cfg).await, "https://public.example.org/site");
}

#[tokio::test]
async fn malformed_host_is_a_json_400() {
    let site = Site::new();
    let req = Request::get("/")
        .header("host", "bad host")
        .body(Body::empty())
        .unwrap();
    let resp = site.send(Config::default(), req).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json_body(resp).await["type"], "BadRequest");
}
