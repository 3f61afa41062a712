//! The response cache ([`engine::runtime::cache`]) never serves an answer that running the request again
//! would not give: every write moves the store generation, and the caller is part of the key.

use std::sync::atomic::{AtomicUsize, Ordering};

use engine::core::store::{ReadTxn, Store, StoreError, WriteTxn};
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

/// A small deterministic random number generator (the test must repeat exactly).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

/// Hundreds of random writes of every kind that changes what others see (edits, workflow,
/// locks, creates, deletes, moves, local and global roles, the root), each followed by the
/// same reads as three callers, on an engine with the cache and one without: every answer is
/// the same. A write drops only the cached answers that read what it wrote, so this is where
/// a dependence the cache missed would show.
#[test]
fn random_writes_never_leave_a_stale_cached_answer() {
    let cached = engine(4 << 20);
    let fresh = engine(0);
    const MEMBER: &str = "Basic amFuZTpqYW5lLXBhc3N3b3Jk"; // jane:jane-password
    let both = |r: Request| (cached.handle(r.clone()), fresh.handle(r));
    let admin = |m: Method, path: &str, body: Option<serde_json::Value>| {
        let mut r = Request::new(m, path, BASE).header("Authorization", ADMIN);
        if let Some(b) = body {
            r = r.json(&b);
        }
        r
    };
    let setup = [
        admin(
            Method::Post,
            "/@users",
            Some(
                json!({"username": "jane", "password": "jane-password", "email": "j@example.org", "roles": ["Member"]}),
            ),
        ),
        admin(
            Method::Post,
            "/",
            Some(json!({"@type": "Folder", "id": "f1", "title": "One"})),
        ),
        admin(
            Method::Post,
            "/",
            Some(json!({"@type": "Folder", "id": "f2", "title": "Two"})),
        ),
        admin(
            Method::Post,
            "/f1",
            Some(json!({"@type": "Page", "id": "p1", "title": "Alpha page"})),
        ),
        admin(
            Method::Post,
            "/f1",
            Some(json!({"@type": "Page", "id": "p2", "title": "Beta page"})),
        ),
        admin(
            Method::Post,
            "/f2",
            Some(json!({"@type": "Page", "id": "q1", "title": "Gamma page"})),
        ),
    ];
    for r in setup {
        let (a, b) = both(r);
        assert_eq!((a.status, &a.body), (b.status, &b.body));
    }
    let login = |e: &Engine<MemStore>| {
        let r = e.handle(
            Request::new(Method::Post, "/@login", BASE)
                .json(&json!({"login": "jane", "password": "jane-password"})),
        );
        format!("Bearer {}", r.json_body()["token"].as_str().unwrap())
    };
    let (token_cached, token_fresh) = (login(&cached), login(&fresh));
    let mut paths: Vec<String> = ["/f1", "/f2", "/f1/p1", "/f1/p2", "/f2/q1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let folders = ["/f1", "/f2", "/f1/p1"];
    let reads = [
        "{p}",
        "{p}?expand=breadcrumbs,navigation,actions,workflow",
        "{p}/@breadcrumbs",
        "{p}/@contextnavigation",
        "{p}/@sharing",
        "{p}/@history",
        "{p}/@workflow",
        "/@navigation?expand.navigation.depth=3",
        "/@search?portal_type=Page&sort_on=sortable_title&metadata_fields=_all",
        "/@search?SearchableText=page",
        "/f1/@search?path.depth=1&sort_on=getObjPositionInParent&show_inactive=true",
        "/@users",
        "/@users/jane",
        "/",
    ];
    let mut rng = Lcg(20261124);
    let mut created = 0;
    for step in 0..160 {
        let pick = |rng: &mut Lcg, v: &[String]| v[rng.next(v.len())].clone();
        let target = pick(&mut rng, &paths);
        let write = match rng.next(12) {
            0 => admin(
                Method::Patch,
                &target,
                Some(json!({"title": format!("Title {step}")})),
            ),
            1 => admin(Method::Post, &format!("{target}/@workflow/publish"), None),
            2 => admin(Method::Post, &format!("{target}/@workflow/retract"), None),
            3 => admin(Method::Post, &format!("{target}/@lock"), Some(json!({}))),
            4 => admin(Method::Delete, &format!("{target}/@lock"), None),
            5 => {
                created += 1;
                let folder = folders[rng.next(folders.len())];
                let id = format!("n{created}");
                paths.push(format!("{folder}/{id}"));
                admin(
                    Method::Post,
                    folder,
                    Some(
                        json!({"@type": "Page", "id": id, "title": format!("New page {created}")}),
                    ),
                )
            }
            6 => admin(Method::Delete, &target, None),
            7 => {
                let to = folders[rng.next(2)];
                admin(
                    Method::Post,
                    &format!("{to}/@move"),
                    Some(json!({"source": target})),
                )
            }
            8 => {
                let on = ["Reader", "Editor", "Contributor"][rng.next(3)];
                let grant = rng.next(2) == 0;
                admin(
                    Method::Post,
                    &format!("{}/@sharing", folders[rng.next(2)]),
                    Some(
                        json!({"entries": [{"id": "jane", "type": "user", "roles": {on: grant}}]}),
                    ),
                )
            }
            9 => {
                let roles = [
                    json!(["Member"]),
                    json!(["Member", "Site Administrator"]),
                    json!(["Member", "Reviewer"]),
                ];
                admin(
                    Method::Patch,
                    "/@users/jane",
                    Some(json!({"roles": roles[rng.next(3)].clone()})),
                )
            }
            10 => admin(
                Method::Patch,
                "/",
                Some(json!({"title": format!("Site {step}")})),
            ),
            _ => admin(
                Method::Post,
                &format!("{target}/@workflow/publish"),
                Some(json!({"include_children": true})),
            ),
        };
        let what = format!("step {step}: {} {}", write.method.as_str(), write.path);
        let (a, b) = both(write);
        assert_eq!((a.status, &a.body), (b.status, &b.body), "{what}");
        // Paths move and vanish: read every path ever known, and each read twice (the second
        // comes from the cache when the first was kept).
        for round in 0..2 {
            for p in &paths {
                for template in reads {
                    let path = template.replace("{p}", p);
                    for (auth_cached, auth_fresh) in [
                        (None, None),
                        (Some(ADMIN), Some(ADMIN)),
                        (Some(MEMBER), Some(MEMBER)),
                        (Some(token_cached.as_str()), Some(token_fresh.as_str())),
                    ] {
                        if !template.contains("{p}") && p != &paths[0] {
                            continue;
                        }
                        let req = |auth: Option<&str>| {
                            let mut r = Request::new(Method::Get, &path, BASE);
                            if let Some(a) = auth {
                                r = r.header("Authorization", a);
                            }
                            r
                        };
                        let x = cached.handle(req(auth_cached));
                        let y = fresh.handle(req(auth_fresh));
                        assert_eq!(
                            (x.status, String::from_utf8_lossy(&x.body)),
                            (y.status, String::from_utf8_lossy(&y.body)),
                            "{what}, round {round}: GET {path} as {auth_cached:?}"
                        );
                    }
                }
            }
        }
    }
    let (held, _, _) = cached.core().responses.usage();
    assert!(held > 0, "the cache kept answers");
}

/// A write drops only the answers it can change: after a PATCH of one page, the cached
/// answers about another page (and about a folder listing that does not show the title)
/// are still served without a store transaction, while the patched page's is computed again.
#[test]
fn a_write_keeps_the_answers_it_cannot_change() {
    let mut options = EngineOptions::for_tests();
    options.test_clock = None;
    options.response_cache_bytes = 1 << 20;
    let store = CountingStore {
        inner: MemStore::new(),
        reads: AtomicUsize::new(0),
    };
    let e = Engine::new(store, options).unwrap();
    e.create_site(&SiteSetup::new("secret-password")).unwrap();
    let admin = |m: Method, path: &str, body: Option<serde_json::Value>| {
        let mut r = Request::new(m, path, BASE).header("Authorization", ADMIN);
        if let Some(b) = body {
            r = r.json(&b);
        }
        e.handle(r)
    };
    for (parent, ty, id) in [
        ("/", "Folder", "a"),
        ("/", "Folder", "b"),
        ("/a", "Page", "p"),
        ("/b", "Page", "q"),
    ] {
        let r = admin(
            Method::Post,
            parent,
            Some(json!({"@type": ty, "id": id, "title": id})),
        );
        assert_eq!(r.status, 201);
    }
    for folder in ["/a", "/b"] {
        let r = admin(
            Method::Post,
            &format!("{folder}/@workflow/publish"),
            Some(json!({"include_children": true})),
        );
        assert_eq!(r.status, 200);
    }
    let reads = || e.store().reads.load(Ordering::SeqCst);
    for auth in [None, Some(ADMIN)] {
        let get = |path: &str| {
            let mut r = Request::new(Method::Get, path, BASE);
            if let Some(a) = auth {
                r = r.header("Authorization", a);
            }
            e.handle(r)
        };
        for path in ["/a/p", "/b/q", "/b"] {
            get(path);
        }
        let patched = admin(Method::Patch, "/a/p", Some(json!({"title": "changed"})));
        assert_eq!(patched.status, 204);
        for path in ["/b/q", "/b"] {
            let before = reads();
            let again = get(path);
            assert_eq!(
                reads(),
                before,
                "{auth:?}: {path} was computed again ({})",
                again.status
            );
        }
        let before = reads();
        get("/a/p");
        assert!(
            reads() > before,
            "{auth:?}: the patched page is computed again"
        );
    }
}

/// `Engine::response_cache_lookups` counts each cacheable request once: a miss, then hits;
/// nothing while the cache is off.
#[test]
fn lookups_count_each_request_once() {
    let cached = engine(1 << 20);
    let (hits, misses) = cached.response_cache_lookups();
    for _ in 0..3 {
        assert_eq!(send(&cached, Method::Get, "/", true, None).status, 200);
    }
    let (h, m) = cached.response_cache_lookups();
    assert_eq!((h - hits, m - misses), (2, 1));
    let off = engine(0);
    for _ in 0..3 {
        send(&off, Method::Get, "/", true, None);
    }
    assert_eq!(off.response_cache_lookups(), (0, 0));
}
