//! `Idempotency-Key` inside a group commit ([`Engine::handle_group`], what host-server's writer
//! does): two requests with the same key in one group run once, and a request that failed in a
//! group leaves no record behind.

use engine::{Engine, EngineOptions, MemStore, Method, Request, SiteSetup};
use serde_json::json;

const BASE: &str = "http://localhost:8080";
const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";

fn engine() -> Engine<MemStore> {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    e
}

fn create(title: &str, key: &str) -> Request {
    Request::new(Method::Post, "/", BASE)
        .header("Authorization", ADMIN)
        .header("Idempotency-Key", key)
        .json(&json!({"@type": "Page", "title": title}))
}

fn children(e: &Engine<MemStore>) -> u64 {
    let r = e.handle(Request::new(Method::Get, "/", BASE).header("Authorization", ADMIN));
    r.json_body()["items_total"].as_u64().unwrap()
}

#[test]
fn the_same_key_twice_in_one_group_runs_once() {
    let e = engine();
    let answers = e.handle_group(&[create("Once", "k-1"), create("Once", "k-1")]);
    assert_eq!(answers[0].status, 201);
    assert_eq!(answers[0].header_value("Idempotent-Replayed"), None);
    assert_eq!(answers[1].status, 201);
    assert_eq!(answers[1].header_value("Idempotent-Replayed"), Some("true"));
    assert_eq!(answers[0].body, answers[1].body);
    assert_eq!(
        answers[0].header_value("Location"),
        answers[1].header_value("Location")
    );
    assert_eq!(children(&e), 1);
    // And after the group's commit, a third time.
    let third = e.handle(create("Once", "k-1"));
    assert_eq!(third.header_value("Idempotent-Replayed"), Some("true"));
    assert_eq!(children(&e), 1);
}

#[test]
fn a_failed_request_in_a_group_leaves_no_record() {
    let e = engine();
    let bad = Request::new(Method::Post, "/", BASE)
        .header("Authorization", ADMIN)
        .header("Idempotency-Key", "k-2")
        .json(&json!({"@type": "NoSuchType"}));
    let answers = e.handle_group(&[bad, create("Other", "k-3"), create("Later", "k-2")]);
    assert_eq!(answers[0].status, 400);
    assert_eq!(answers[1].status, 201);
    assert_eq!(answers[2].status, 201);
    assert_eq!(answers[2].header_value("Idempotent-Replayed"), None);
    assert_eq!(children(&e), 2);
}

#[test]
fn keys_belong_to_their_caller() {
    let e = engine();
    assert_eq!(e.handle(create("Mine", "shared")).status, 201);
    let mia = json!({"username": "mia", "password": "mia-password", "email": "m@example.com",
                     "roles": ["Member", "Site Administrator"]});
    let r = e.handle(
        Request::new(Method::Post, "/@users", BASE)
            .header("Authorization", ADMIN)
            .json(&mia),
    );
    assert_eq!(r.status, 201);
    let theirs = e.handle(
        Request::new(Method::Post, "/", BASE)
            .header("Authorization", "Basic bWlhOm1pYS1wYXNzd29yZA==")
            .header("Idempotency-Key", "shared")
            .json(&json!({"@type": "Page", "title": "Theirs"})),
    );
    assert_eq!(
        theirs.status,
        201,
        "{}",
        String::from_utf8_lossy(&theirs.body)
    );
    assert_eq!(theirs.header_value("Idempotent-Replayed"), None);
    assert_eq!(
        theirs.header_value("Location"),
        Some("http://localhost:8080/theirs")
    );
    assert_eq!(children(&e), 2);
}

#[test]
fn the_same_key_with_another_body_is_a_422_and_changes_nothing() {
    let e = engine();
    let first = e.handle(create("First", "k1"));
    assert_eq!(first.status, 201);
    let again = e.handle(create("First", "k1"));
    assert_eq!(again.status, 201);
    assert_eq!(again.header_value("Idempotent-Replayed"), Some("true"));
    let other = e.handle(create("Second", "k1"));
    assert_eq!(
        other.status,
        422,
        "{}",
        String::from_utf8_lossy(&other.body)
    );
    let body = other.json_body();
    assert_eq!(body["type"], "Unprocessable", "{body}");
    assert!(body["message"].as_str().unwrap().contains("k1"), "{body}");
    assert_eq!(children(&e), 1, "the second write did not run");
}

#[test]
fn keys_belong_to_the_user_not_to_the_login_name() {
    let e = engine();
    let user = |e: &Engine<MemStore>, m: Method| {
        let mut r = Request::new(m.clone(), "/@users", BASE).header("Authorization", ADMIN);
        if m == Method::Post {
            r = r.json(&json!({"username": "mia", "password": "mia-password",
                               "email": "m@example.com", "roles": ["Site Administrator"]}));
        } else {
            r = Request::new(m, "/@users/mia", BASE).header("Authorization", ADMIN);
        }
        e.handle(r).status
    };
    let as_mia = |e: &Engine<MemStore>, title: &str| {
        e.handle(
            Request::new(Method::Post, "/", BASE)
                .header("Authorization", "Basic bWlhOm1pYS1wYXNzd29yZA==")
                .header("Idempotency-Key", "mine")
                .json(&json!({"@type": "Page", "title": title})),
        )
    };
    assert_eq!(user(&e, Method::Post), 201);
    assert_eq!(as_mia(&e, "Old").status, 201);
    assert_eq!(user(&e, Method::Delete), 204);
    // another user, with the same login: the old user's answer is not theirs
    assert_eq!(user(&e, Method::Post), 201);
    let new = as_mia(&e, "Old");
    assert_eq!(new.status, 201, "{}", String::from_utf8_lossy(&new.body));
    assert_eq!(new.header_value("Idempotent-Replayed"), None);
    assert_eq!(children(&e), 2);
}
