//! `Engine::handle_group`: several requests in one store transaction, each in its own savepoint.
//! It must leave exactly what handling the same requests one by one leaves, answer each the same,
//! and undo only the writes of a request that fails.

use engine::{Direction, Engine, EngineOptions, MemStore, Method, Request, SiteSetup, Store};
use serde_json::json;

const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";
const BASE: &str = "http://localhost:8080";

fn engine() -> Engine<MemStore> {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    e
}

fn dump(e: &Engine<MemStore>) -> Vec<(Vec<u8>, Vec<u8>)> {
    e.store()
        .begin_read()
        .unwrap()
        .scan(b"", b"", Direction::Forward, usize::MAX)
        .unwrap()
}

fn requests() -> Vec<Request> {
    let post = |path: &str, body: serde_json::Value| {
        Request::new(Method::Post, path, BASE)
            .header("Authorization", ADMIN)
            .json(&body)
    };
    vec![
        post("/", json!({"@type": "Folder", "title": "News"})),
        post("/news", json!({"@type": "Page", "title": "One"})),
        // Fails after nothing was written (unknown type) ...
        post("/news", json!({"@type": "Nope", "title": "Bad"})),
        // ... and this one fails on a field after the id was checked.
        post("/news", json!({"@type": "Page", "title": 42})),
        post("/news", json!({"@type": "Page", "title": "Two"})),
        Request::new(Method::Patch, "/news/one", BASE)
            .header("Authorization", ADMIN)
            .json(&json!({"title": "One again"})),
        Request::new(Method::Post, "/news/one/@workflow/publish", BASE)
            .header("Authorization", ADMIN),
        // A read in the group is answered from committed state, outside the group.
        Request::new(Method::Get, "/news", BASE).header("Authorization", ADMIN),
        Request::new(Method::Delete, "/news/two", BASE).header("Authorization", ADMIN),
    ]
}

#[test]
fn a_group_leaves_what_the_same_requests_one_by_one_leave() {
    let one_by_one = engine();
    let singles: Vec<_> = requests()
        .into_iter()
        .filter(|r| one_by_one.writes(r))
        .map(|r| one_by_one.handle(r))
        .collect();

    let grouped = engine();
    let reqs = requests();
    let answers = grouped.handle_group(&reqs);
    assert_eq!(answers.len(), reqs.len());
    let writes: Vec<_> = reqs
        .iter()
        .zip(&answers)
        .filter(|(r, _)| grouped.writes(r))
        .map(|(_, a)| a)
        .collect();
    assert_eq!(writes.len(), singles.len());
    for (g, s) in writes.iter().zip(&singles) {
        assert_eq!(g.status, s.status);
        assert_eq!(g.body, s.body);
    }
    let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    assert_eq!(statuses, vec![201, 201, 400, 400, 201, 204, 200, 404, 204]);
    assert_eq!(dump(&grouped), dump(&one_by_one));
}

#[test]
fn writes_tells_write_endpoints_from_reads() {
    let e = engine();
    let r = |m: Method, p: &str| Request::new(m, p, BASE);
    assert!(e.writes(&r(Method::Post, "/")));
    assert!(e.writes(&r(Method::Patch, "/x/@lock")));
    assert!(!e.writes(&r(Method::Get, "/")));
    // A login writes: it emits UserLoggedIn, which subscribers (content rules) handle.
    assert!(e.writes(&r(Method::Post, "/@login")));
    assert!(!e.writes(&r(Method::Post, "/@userschema")));
    assert!(!e.writes(&r(Method::Post, "/@nope")));
}
