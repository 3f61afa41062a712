//! The response cache ([`engine::cache`]) never serves an answer that running the request again
//! would not give: every write moves the store generation, and the caller is part of the key.

use std::sync::atomic::{AtomicUsize, Ordering};

use engine::store::{ReadTxn, Store, StoreError, WriteTxn};
use engine::{Engine, EngineOptions, MemStore, Method, Request, SiteSetup};
use serde_json::json;

const ADMIN: &str = "Basic YWRtaW46c2VjcmV0LXBhc3N3b3Jk";
const BASE: &str = "http://localhost:8080";

fn engine(cache_bytes: usize) -> Engine<MemStore> {
    let mut options = EngineOptions::for_tests();
    options.test_clock = None; // the clock stays fixed, but nothing can move it over HTTP
    options.response_cache_bytes = cache_bytes;
    let e = Engine::new(MemStore::new(), options).unwrap();
    e.create_site(&SiteSetup::new("secret-password")).unwrap();
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
                .json(&json!({"login": "admin", "password": "secret-password"})),
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

/// Basic credentials remembered by the cache stop working the moment the password changes.
#[test]
fn cached_basic_credentials_follow_password_changes() {
    for cache_bytes in [1 << 20, 0] {
        let e = engine(cache_bytes);
        let get = |auth: &str| {
            e.handle(Request::new(Method::Get, "/", BASE).header("Authorization", auth))
                .status
        };
        assert_eq!(get(ADMIN), 200);
        assert_eq!(get(ADMIN), 200);
        let changed = e.handle(
            Request::new(Method::Patch, "/@users/admin", BASE)
                .header("Authorization", ADMIN)
                // Changing one's own password takes the current one.
                .json(&json!({"password": "another-secret", "old_password": "secret-password"})),
        );
        assert_eq!(changed.status, 204, "cache {cache_bytes}");
        assert_eq!(get(ADMIN), 401, "old password, cache {cache_bytes}");
        // admin:another-secret
        assert_eq!(get("Basic YWRtaW46YW5vdGhlci1zZWNyZXQ="), 200);
        assert_eq!(get("Basic YWRtaW46YW5vdGhlci1zZWNyZXQ="), 200);
    }
}

/// A store that counts the read transactions begun on it.
struct CountingStore {
    inner: MemStore,
    reads: AtomicUsize,
}

impl Store for CountingStore {
    fn begin_read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.begin_read()
    }
    fn begin_write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        self.inner.begin_write()
    }
}

/// A repeated GET whose answer is cached at the latest committed generation opens no store
/// transaction at all (anonymous, Bearer and Basic callers), and a write ends that.
#[test]
fn cached_answers_need_no_store_transaction() {
    let mut options = EngineOptions::for_tests();
    options.test_clock = None;
    options.response_cache_bytes = 1 << 20;
    let store = CountingStore {
        inner: MemStore::new(),
        reads: AtomicUsize::new(0),
    };
    let e = Engine::new(store, options).unwrap();
    e.create_site(&SiteSetup::new("secret-password")).unwrap();
    let login = e.handle(
        Request::new(Method::Post, "/@login", BASE)
            .json(&json!({"login": "admin", "password": "secret-password"})),
    );
    let token = login.json_body()["token"].as_str().unwrap().to_string();
    let bearer = format!("Bearer {token}");
    let reads = || e.store().reads.load(Ordering::SeqCst);
    for auth in [None, Some(bearer.as_str()), Some(ADMIN)] {
        let get = || {
            let mut r = Request::new(Method::Get, "/", BASE);
            if let Some(a) = auth {
                r = r.header("Authorization", a);
            }
            e.handle(r)
        };
        let first = get();
        assert_eq!(first.status, 200);
        let before = reads();
        let again = get();
        assert_eq!(again.body, first.body);
        assert_eq!(
            reads(),
            before,
            "{auth:?}: a cached answer opened a transaction"
        );
    }
    let patched = e.handle(
        Request::new(Method::Patch, "/", BASE)
            .header("Authorization", ADMIN)
            .json(&json!({"title": "Renamed"})),
    );
    assert_eq!(patched.status, 204);
    let before = reads();
    let after = e.handle(Request::new(Method::Get, "/", BASE));
    assert!(
        reads() > before,
        "after a write the answer is computed again"
    );
    assert_eq!(after.json_body()["title"], "Renamed");
}

/// Writes that arrive through group commit ([`Engine::handle_group`], as on the server) end
/// the cached answers too, without the engine opening a read transaction to learn it.
#[test]
fn group_commits_move_the_cached_generation_on() {
    let e = engine(1 << 20);
    let get = || e.handle(Request::new(Method::Get, "/", BASE).header("Authorization", ADMIN));
    let before = get();
    assert_eq!(get().body, before.body);
    let patch = |title: &str| {
        Request::new(Method::Patch, "/", BASE)
            .header("Authorization", ADMIN)
            .json(&json!({ "title": title }))
    };
    let answers = e.handle_group(&[patch("One"), patch("Two")]);
    assert!(answers.iter().all(|a| a.status == 204));
    assert_eq!(get().json_body()["title"], "Two");
    let answers = e.handle_group(&[patch("Three")]);
    assert_eq!(answers[0].status, 204);
    assert_eq!(get().json_body()["title"], "Three");
}
