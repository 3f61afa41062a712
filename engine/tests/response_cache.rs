//! The response cache ([`engine::cache`]) never serves an answer that running the request again
//! would not give: every write moves the store generation, and the caller is part of the key.

use engine::{Engine, EngineOptions, MemStore, Method, Request, SiteSetup};
use serde_json::json;

const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";
const BASE: &str = "http://localhost:8080";

fn engine(cache_bytes: usize) -> Engine<MemStore> {
    let mut options = EngineOptions::for_tests();
    options.test_clock = None; // the clock stays fixed, but nothing can move it over HTTP
    options.response_cache_bytes = cache_bytes;
    let e = Engine::new(MemStore::new(), options).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    e
}

fn send(
    e: &Engine<MemStore>,
    method: Method,
    path: &str,
    auth: bool,
    body: Option<serde_json::Value>,
) -> engine::Response {
    let mut r = Request::new(method, path, BASE);
    if auth {
        r = r.header("Authorization", ADMIN);
    }
    if let Some(b) = body {
        r = r.json(&b);
    }
    e.handle(r)
}

/// The same conversation with and without the cache gives the same answers.
#[test]
fn cached_answers_equal_fresh_ones_across_writes() {
    let cached = engine(1 << 20);
    let fresh = engine(0);
    let script: Vec<(Method, &str, bool, Option<serde_json::Value>)> = vec![
        (
            Method::Post,
            "/",
            true,
            Some(json!({"@type": "Folder", "id": "f", "title": "F"})),
        ),
        (
            Method::Post,
            "/f",
            true,
            Some(json!({"@type": "Page", "id": "p", "title": "P"})),
        ),
        (Method::Get, "/f/p", true, None),
        (Method::Get, "/f/p", true, None),
        (Method::Get, "/f/p", false, None), // private: 401 for anonymous, never cached
        (Method::Post, "/f/p/@workflow/publish", true, None),
        (Method::Post, "/f/@workflow/publish", true, None),
        (Method::Get, "/f/p", false, None),
        (Method::Get, "/f/p", false, None),
        (Method::Patch, "/f/p", true, Some(json!({"title": "P2"}))),
        (Method::Get, "/f/p", false, None),
        (Method::Get, "/f/p", true, None),
        (
            Method::Get,
            "/@navigation?expand.navigation.depth=3",
            false,
            None,
        ),
        (Method::Post, "/f/p/@lock", true, Some(json!({}))),
        (
            Method::Get,
            "/@navigation?expand.navigation.depth=3",
            false,
            None,
        ),
        (Method::Get, "/f/p", true, None),
        (Method::Delete, "/f/p/@lock", true, None),
        (Method::Get, "/f/p", true, None),
        (Method::Head, "/f/p", true, None),
        (Method::Get, "/f", false, None),
        (Method::Delete, "/f/p", true, None),
        (Method::Get, "/f", false, None),
        (Method::Get, "/f/p", false, None),
    ];
    for (i, (m, path, auth, body)) in script.into_iter().enumerate() {
        let a = send(&cached, m.clone(), path, auth, body.clone());
        let b = send(&fresh, m, path, auth, body);
        assert_eq!(a.status, b.status, "step {i} {path}");
        assert_eq!(a.body, b.body, "step {i} {path}");
        assert_eq!(a.headers, b.headers, "step {i} {path}");
    }
}

/// A cached bearer token stops working the moment it is revoked or its user changes.
#[test]
fn verified_tokens_follow_logout_and_user_changes() {
    for cache_bytes in [1 << 20, 0] {
        let e = engine(cache_bytes);
        let login = e.handle(
            Request::new(Method::Post, "/@login", BASE)
                .json(&json!({"login": "admin", "password": "secret"})),
        );
        assert_eq!(login.status, 200);
        let token = login.json_body()["token"].as_str().unwrap().to_string();
        let bearer = |m: Method, path: &str| {
            Request::new(m, path, BASE).header("Authorization", &format!("Bearer {token}"))
        };
        for _ in 0..2 {
            assert_eq!(e.handle(bearer(Method::Get, "/@users/admin")).status, 200);
        }
        assert_eq!(e.handle(bearer(Method::Post, "/@logout")).status, 204);
        let after = e.handle(bearer(Method::Get, "/@users/admin"));
        assert_eq!(after.status, 401, "cache {cache_bytes}");
    }
}
