//! Writes run side by side (`Engine::prepare_write` on any thread, `Engine::commit_prepared` one
//! at a time): writes of different objects both commit, a write that read what another committed
//! meanwhile is refused (and commits when run again), nothing is lost, and the hot keys (the
//! store generation, the change log's sequence) come out as if the writes had run one by one.

use engine::{
    Committed, Direction, Engine, EngineOptions, MemStore, Method, Request, SiteSetup, Store,
};
use serde_json::json;

const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";
const BASE: &str = "http://localhost:8080";

fn engine(parallel: bool) -> Engine<MemStore> {
    let options = EngineOptions {
        parallel_writes: parallel,
        ..EngineOptions::for_tests()
    };
    let e = Engine::new(MemStore::new(), options).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    e
}

fn post(path: &str, body: serde_json::Value) -> Request {
    Request::new(Method::Post, path, BASE)
        .header("Authorization", ADMIN)
        .json(&body)
}

fn patch(path: &str, title: &str) -> Request {
    Request::new(Method::Patch, path, BASE)
        .header("Authorization", ADMIN)
        .json(&json!({ "title": title }))
}

fn dump(e: &Engine<MemStore>) -> Vec<(Vec<u8>, Vec<u8>)> {
    e.store()
        .begin_read()
        .unwrap()
        .scan(b"", b"", Direction::Forward, usize::MAX)
        .unwrap()
}

fn get(e: &Engine<MemStore>, key: &[u8]) -> Option<Vec<u8>> {
    e.store().begin_read().unwrap().get(key).unwrap()
}

/// The status of a committed answer; panics on a conflict.
fn status(c: &Committed) -> u16 {
    match c {
        Committed::Answered(h) => h.response.status,
        Committed::Conflict => panic!("unexpected conflict"),
    }
}

fn title(e: &Engine<MemStore>, path: &str) -> String {
    let resp = e.handle(Request::new(Method::Get, path, BASE).header("Authorization", ADMIN));
    let v: serde_json::Value = serde_json::from_slice(&resp.body).unwrap();
    v["title"].as_str().unwrap_or_default().to_string()
}

#[test]
fn prepared_one_by_one_leave_what_the_serial_path_leaves() {
    let reqs = || {
        vec![
            post("/", json!({"@type": "Folder", "title": "News"})),
            post("/news", json!({"@type": "Page", "title": "One"})),
            post("/news", json!({"@type": "Nope", "title": "Bad"})),
            patch("/news/one", "One again"),
            Request::new(Method::Post, "/news/one/@workflow/publish", BASE)
                .header("Authorization", ADMIN),
            Request::new(Method::Delete, "/news/one", BASE).header("Authorization", ADMIN),
        ]
    };
    let serial = engine(false);
    let answers: Vec<_> = reqs().into_iter().map(|r| serial.handle(r)).collect();
    let parallel = engine(true);
    for (req, expected) in reqs().into_iter().zip(answers) {
        let routed = parallel.route(req);
        let prepared = parallel.prepare_write(&routed);
        let mut done = parallel.commit_prepared(vec![(&routed, prepared)]);
        match done.pop() {
            Some(Committed::Answered(h)) => {
                assert_eq!(h.response.status, expected.status);
                assert_eq!(h.response.body, expected.body);
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(dump(&serial) == dump(&parallel), "the stores differ");
}

#[test]
fn writes_of_different_objects_do_not_conflict() {
    let e = engine(true);
    for id in ["a", "b"] {
        let r = e.handle(post("/", json!({"@type": "Folder", "id": id, "title": id})));
        assert_eq!(r.status, 201);
    }
    let generation = get(&e, b"s:generation");
    let seq = get(&e, b"C:n").unwrap();
    // Both run on the same snapshot, before either commits.
    let ra = e.route(patch("/a", "A2"));
    let rb = e.route(post("/b", json!({"@type": "Page", "title": "In b"})));
    let pa = e.prepare_write(&ra);
    let pb = e.prepare_write(&rb);
    assert_eq!(status(&e.commit_prepared(vec![(&ra, pa)])[0]), 204);
    assert_eq!(status(&e.commit_prepared(vec![(&rb, pb)])[0]), 201);
    assert_eq!(title(&e, "/a"), "A2");
    assert_eq!(title(&e, "/b/in-b"), "In b");
    // The generation moved once per commit, the change log's sequence once per touched object
    // (a: 1, b's page and b: 2), as if they had run one by one.
    let before: u64 = String::from_utf8(generation.unwrap())
        .unwrap()
        .parse()
        .unwrap();
    let after: u64 = String::from_utf8(get(&e, b"s:generation").unwrap())
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(after, before + 2);
    let seq_before = u64::from_be_bytes(seq.try_into().unwrap());
    let seq_after = u64::from_be_bytes(get(&e, b"C:n").unwrap().try_into().unwrap());
    assert_eq!(seq_after, seq_before + 3);
}

fn field(e: &Engine<MemStore>, path: &str, name: &str) -> serde_json::Value {
    let resp = e.handle(Request::new(Method::Get, path, BASE).header("Authorization", ADMIN));
    let v: serde_json::Value = serde_json::from_slice(&resp.body).unwrap();
    v[name].clone()
}

#[test]
fn a_write_that_read_what_another_committed_runs_again() {
    let e = engine(true);
    assert_eq!(
        e.handle(post(
            "/",
            json!({"@type": "Folder", "id": "a", "title": "a"})
        ))
        .status,
        201
    );
    let r1 = e.route(patch("/a", "first"));
    let r2 = e.route(
        Request::new(Method::Patch, "/a", BASE)
            .header("Authorization", ADMIN)
            .json(&json!({"description": "described"})),
    );
    let p1 = e.prepare_write(&r1);
    let p2 = e.prepare_write(&r2);
    // In one batch: the second read the record the first wrote. Applying its write set would
    // put the old title back; it runs again instead, after the first.
    let done = e.commit_prepared(vec![(&r1, p1), (&r2, p2)]);
    assert_eq!(status(&done[0]), 204);
    assert_eq!(status(&done[1]), 204);
    assert_eq!(title(&e, "/a"), "first");
    assert_eq!(field(&e, "/a", "description"), "described");
    assert_eq!(e.prepared_reruns(), 1);
}

fn page(title: &str) -> serde_json::Value {
    json!({"@type": "Page", "title": title, "description": "A page",
           "blocks": {"b1": {"@type": "slate", "plaintext": "Hello"}},
           "blocks_layout": {"items": ["b1"]}})
}

#[test]
fn creates_in_one_folder_do_not_conflict() {
    let folder = || post("/", json!({"@type": "Folder", "id": "a", "title": "a"}));
    let creates = || ["x", "y", "z"].map(|t| post("/a", page(t)));
    // What one writer leaves.
    let serial = engine(false);
    assert_eq!(serial.handle(folder()).status, 201);
    for r in creates() {
        assert_eq!(serial.handle(r).status, 201);
    }
    // Prepared on one snapshot, committed in one group or one by one: each takes its own
    // position, the folder's counters are merged at commit, and none runs again.
    for one_group in [true, false] {
        let e = engine(true);
        assert_eq!(e.handle(folder()).status, 201);
        let routed: Vec<_> = creates().into_iter().map(|r| e.route(r)).collect();
        let prepared: Vec<_> = routed.iter().map(|r| e.prepare_write(r)).collect();
        let done: Vec<_> = if one_group {
            e.commit_prepared(routed.iter().zip(prepared).collect())
        } else {
            routed
                .iter()
                .zip(prepared)
                .flat_map(|(r, p)| e.commit_prepared(vec![(r, p)]))
                .collect()
        };
        assert!(done.iter().all(|c| status(c) == 201));
        assert_eq!(e.prepared_reruns(), 0);
        assert_eq!(field(&e, "/a", "items_total"), 3);
        assert!(dump(&serial) == dump(&e), "the stores differ");
    }
}

#[test]
fn a_create_still_meets_another_change_of_its_folder() {
    // The edit writes the folder's record outright: whichever commits second ran on a record
    // the other changed, and runs again; nothing is lost.
    for edit_first in [true, false] {
        let e = engine(true);
        let r = e.handle(post(
            "/",
            json!({"@type": "Folder", "id": "a", "title": "a"}),
        ));
        assert_eq!(r.status, 201);
        let create = e.route(post("/a", page("x")));
        let edit = e.route(patch("/a", "A2"));
        let pc = e.prepare_write(&create);
        let pe = e.prepare_write(&edit);
        let (first, second) = if edit_first {
            ((&edit, pe), (&create, pc))
        } else {
            ((&create, pc), (&edit, pe))
        };
        for (routed, prepared) in [first, second] {
            let done = e.commit_prepared(vec![(routed, prepared)]);
            assert!(matches!(status(&done[0]), 201 | 204));
        }
        assert_eq!(e.prepared_reruns(), 1);
        assert_eq!(title(&e, "/a"), "A2");
        assert_eq!(field(&e, "/a", "items_total"), 1);
        assert_eq!(title(&e, "/a/x"), "x");
    }
}

#[test]
fn a_commit_the_log_did_not_see_makes_older_snapshots_run_again() {
    let e = engine(true);
    assert_eq!(
        e.handle(post(
            "/",
            json!({"@type": "Folder", "id": "a", "title": "a"})
        ))
        .status,
        201
    );
    let r = e.route(
        Request::new(Method::Patch, "/a", BASE)
            .header("Authorization", ADMIN)
            .json(&json!({"description": "described"})),
    );
    let p = e.prepare_write(&r);
    // Written behind the engine's back (the log never hears of it): the title, in a copy of
    // the record the request read.
    let key = {
        let t = e.store().begin_read().unwrap();
        let uid = t.get(b"p:/a").unwrap().unwrap();
        [b"o:".as_slice(), &uid].concat()
    };
    let mut t = e.store().begin_write().unwrap();
    let mut rec: serde_json::Value =
        serde_json::from_slice(&t.get(&key).unwrap().unwrap()).unwrap();
    rec["fields"]["title"] = json!("behind");
    t.put(&key, &serde_json::to_vec(&rec).unwrap()).unwrap();
    let g: u64 = String::from_utf8(t.get(b"s:generation").unwrap().unwrap())
        .unwrap()
        .parse()
        .unwrap();
    t.put(b"s:generation", (g + 1).to_string().as_bytes())
        .unwrap();
    t.commit().unwrap();
    assert_eq!(status(&e.commit_prepared(vec![(&r, p)])[0]), 204);
    assert_eq!(field(&e, "/a", "description"), "described");
    assert_eq!(title(&e, "/a"), "behind");
}

#[test]
fn many_threads_lose_no_write() {
    let e = std::sync::Arc::new(engine(true));
    const THREADS: usize = 6;
    const EACH: usize = 8;
    for t in 0..THREADS {
        let r = e.handle(post(
            "/",
            json!({"@type": "Folder", "id": format!("f{t}"), "title": "f"}),
        ));
        assert_eq!(r.status, 201);
    }
    let start =
        e.handle(Request::new(Method::Get, "/@changes", BASE).header("Authorization", ADMIN));
    let start: serde_json::Value = serde_json::from_slice(&start.body).unwrap();
    let cursor = start["cursor"].as_str().unwrap().to_string();
    let committer = std::sync::Mutex::new(());
    let conflicts = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let e = &e;
            let committer = &committer;
            let conflicts = &conflicts;
            s.spawn(move || {
                for i in 0..EACH {
                    // Half into the thread's own folder, half into a shared one.
                    let folder = if i % 2 == 0 {
                        format!("/f{t}")
                    } else {
                        "/f0".into()
                    };
                    let routed = e.route(post(
                        &folder,
                        json!({"@type": "Page", "id": format!("p{t}-{i}"), "title": "p"}),
                    ));
                    loop {
                        let prepared = e.prepare_write(&routed);
                        let _one = committer.lock().unwrap();
                        match e.commit_prepared(vec![(&routed, prepared)]).pop() {
                            Some(Committed::Answered(h)) => {
                                assert_eq!(h.response.status, 201);
                                break;
                            }
                            _ => {
                                conflicts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                        }
                    }
                }
            });
        }
    });
    for t in 0..THREADS {
        for i in 0..EACH {
            let folder = if i % 2 == 0 {
                format!("/f{t}")
            } else {
                "/f0".into()
            };
            let r = e.handle(
                Request::new(Method::Get, &format!("{folder}/p{t}-{i}"), BASE)
                    .header("Authorization", ADMIN),
            );
            assert_eq!(r.status, 200, "{folder}/p{t}-{i}");
        }
    }
    // Every create reached the change feed, in order, without gaps in what it lists.
    let resp = e.handle(
        Request::new(
            Method::Get,
            &format!("/@changes?since={cursor}&limit=1000"),
            BASE,
        )
        .header("Authorization", ADMIN),
    );
    assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
    let text = String::from_utf8_lossy(&resp.body);
    for t in 0..THREADS {
        for i in 0..EACH {
            assert!(
                text.contains(&format!("p{t}-{i}")),
                "p{t}-{i} not in the feed"
            );
        }
    }
}

/// An engine with parallel writes whose stale prepared writes tell why
/// (`EngineOptions::stale_log`), and the reasons it gave.
fn engine_telling(
    options: EngineOptions,
    password: &str,
) -> (
    Engine<MemStore>,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) {
    let told = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = told.clone();
    let options = EngineOptions {
        parallel_writes: true,
        stale_log: Some(std::sync::Arc::new(move |why: &str| {
            sink.lock().unwrap().push(why.to_string())
        })),
        ..options
    };
    let e = Engine::new(MemStore::new(), options).unwrap();
    e.create_site(&SiteSetup::new(password)).unwrap();
    (e, told)
}

/// A Bearer token for admin, as the benchmark logs in.
fn bearer(e: &Engine<MemStore>) -> String {
    let resp = e.handle(
        Request::new(Method::Post, "/@login", BASE)
            .json(&json!({"login": "admin", "password": "bench-secret"})),
    );
    assert_eq!(resp.status, 200);
    let v: serde_json::Value = serde_json::from_slice(&resp.body).unwrap();
    format!("Bearer {}", v["token"].as_str().unwrap())
}

/// The benchmark's create (`bench/compare.sh`, row `post`), with its Bearer token.
fn bench_post(token: &str, title: &str) -> Request {
    Request::new(Method::Post, "/bench-posts", BASE)
        .header("Authorization", token)
        .json(&page(title))
}

/// The benchmark's creates: eight prepared on one snapshot of a folder that already holds
/// pages, committed one by one, as the server's writer does when they arrive together.
fn bench_round(e: &Engine<MemStore>, token: &str, titles: &[String]) -> Vec<u16> {
    let routed: Vec<_> = titles
        .iter()
        .map(|t| e.route(bench_post(token, t)))
        .collect();
    let prepared: Vec<_> = routed.iter().map(|r| e.prepare_write(r)).collect();
    routed
        .iter()
        .zip(prepared)
        .flat_map(|(r, p)| e.commit_prepared(vec![(r, p)]))
        .map(|c| status(&c))
        .collect()
}

#[test]
fn the_benchmarks_creates_with_a_bearer_token_do_not_conflict() {
    bench_creates(EngineOptions::for_tests());
}

#[test]
fn the_benchmarks_creates_on_a_real_clock_do_not_conflict() {
    bench_creates(EngineOptions {
        password_cost: engine::people::auth::password::PasswordCost::TESTING,
        ..EngineOptions::production()
    });
}

fn bench_creates(options: EngineOptions) {
    let (e, told) = engine_telling(options, "bench-secret");
    let token = bearer(&e);
    let r = e.handle(
        Request::new(Method::Post, "/", BASE)
            .header("Authorization", &token)
            .json(&json!({"@type": "Folder", "id": "bench-posts", "title": "Bench posts"})),
    );
    assert_eq!(r.status, 201);
    let mut n = 0;
    for _round in 0..3 {
        let titles: Vec<String> = (0..8)
            .map(|_| {
                n += 1;
                format!("Bench {} {n}", 1000 + n * 7)
            })
            .collect();
        assert!(bench_round(&e, &token, &titles).iter().all(|s| *s == 201));
    }
    assert_eq!(*told.lock().unwrap(), Vec::<String>::new());
    assert_eq!(e.prepared_reruns(), 0);
    let resp =
        e.handle(Request::new(Method::Get, "/bench-posts", BASE).header("Authorization", &token));
    let v: serde_json::Value = serde_json::from_slice(&resp.body).unwrap();
    assert_eq!(v["items_total"], 24);
}

#[test]
fn creates_of_one_title_in_one_folder_do_not_conflict() {
    // The benchmark's load generator sends each title from two threads at once: both creates
    // would find the title's id free in their snapshots. The first prepared holds it, the
    // second takes the next id without reading the first's; none runs again, and the store
    // is what the serial path leaves.
    let folder = || post("/", json!({"@type": "Folder", "id": "a", "title": "a"}));
    let titles = [
        "Bench 1 1",
        "Bench 1 1",
        "Bench 2 2",
        "Bench 2 2",
        "Bench 1 1",
    ];
    let serial = engine(false);
    assert_eq!(serial.handle(folder()).status, 201);
    for t in titles {
        assert_eq!(serial.handle(post("/a", page(t))).status, 201);
    }
    for one_group in [true, false] {
        let (e, told) = engine_telling(EngineOptions::for_tests(), "secret");
        assert_eq!(e.handle(folder()).status, 201);
        let routed: Vec<_> = titles
            .iter()
            .map(|t| e.route(post("/a", page(t))))
            .collect();
        let prepared: Vec<_> = routed.iter().map(|r| e.prepare_write(r)).collect();
        let done: Vec<_> = if one_group {
            e.commit_prepared(routed.iter().zip(prepared).collect())
        } else {
            routed
                .iter()
                .zip(prepared)
                .flat_map(|(r, p)| e.commit_prepared(vec![(r, p)]))
                .collect()
        };
        assert!(done.iter().all(|c| status(c) == 201));
        assert_eq!(*told.lock().unwrap(), Vec::<String>::new());
        assert_eq!(e.prepared_reruns(), 0);
        for path in [
            "/a/bench-1-1",
            "/a/bench-1-1-1",
            "/a/bench-1-1-2",
            "/a/bench-2-2-1",
        ] {
            assert!(!title(&e, path).is_empty(), "{path}");
        }
        assert!(dump(&serial) == dump(&e), "the stores differ");
    }
}
