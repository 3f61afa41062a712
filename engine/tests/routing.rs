//! `Engine::route`: the one route lookup a host makes per request, and what it tells the host
//! (how to read the body, how the answer goes out, whether it writes, its throttle class), and
//! the login outcome `Engine::handle_routed` reports.

use engine::{
    AnswerKind, BodyKind, Engine, EngineError, EngineOptions, MemStore, Method, Request, SiteSetup,
    ThrottleClass,
};
use serde_json::json;

const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";
const WRONG: &str = "Basic YWRtaW46d3Jvbmc=";
const BASE: &str = "http://localhost:8080";

fn engine() -> Engine<MemStore> {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    e
}

#[test]
fn only_event_stream_gets_of_the_feed_are_event_streams() {
    let e = engine();
    let answer = |m: Method, path: &str, accept: &str| {
        e.route(Request::new(m, path, BASE).header("Accept", accept))
            .info()
            .answer
    };
    let stream = AnswerKind::EventStream;
    assert_eq!(
        answer(Method::Get, "/@changes?since=a", "text/event-stream"),
        stream
    );
    assert_eq!(
        answer(Method::Get, "/++api++/f/@changes", "Text/Event-Stream"),
        stream
    );
    assert_eq!(
        answer(Method::Get, "/@changes", "application/json"),
        AnswerKind::Whole
    );
    assert_eq!(
        answer(Method::Get, "/@changes-x", "text/event-stream"),
        AnswerKind::Whole
    );
    assert_eq!(
        answer(Method::Post, "/@changes", "text/event-stream"),
        AnswerKind::Whole
    );
}

#[test]
fn language_model_answers_are_lines_and_reads() {
    let e = engine();
    for path in ["/@chat", "/folder/@generate"] {
        let routed = e.route(Request::new(Method::Post, path, BASE));
        assert_eq!(routed.info().answer, AnswerKind::Lines, "{path}");
        assert!(!routed.info().writes, "{path}");
    }
    let routed = e.route(Request::new(Method::Post, "/", BASE));
    assert_eq!(routed.info().answer, AnswerKind::Whole);
    assert!(routed.info().writes);
}

#[test]
fn a_tus_patch_with_an_offset_is_read_in_pieces() {
    let e = engine();
    let limit = e.core().options.max_body_bytes;
    let patch = || Request::new(Method::Patch, "/f/@tus-upload/abc", BASE);
    let routed = e.route(patch().header("Upload-Offset", "12"));
    assert_eq!(
        routed.info().body,
        BodyKind::Pieces {
            offset: 12,
            piece: engine::engine::BODY_PIECE.min(limit)
        }
    );
    assert!(routed.info().writes);
    // Without a usable offset it is an ordinary request (the engine answers the error).
    for r in [patch(), patch().header("Upload-Offset", "x")] {
        assert_eq!(e.route(r).info().body, BodyKind::Whole { limit });
    }
    // Another PATCH is read whole.
    let other = Request::new(Method::Patch, "/f", BASE).header("Upload-Offset", "12");
    assert_eq!(e.route(other).info().body, BodyKind::Whole { limit });
    // A piece is the same request at the offset reached, with its own body.
    let piece = routed.piece(b"abc".to_vec(), 40);
    let req = piece.request();
    assert_eq!(req.body, b"abc");
    assert_eq!(req.header_value("upload-offset"), Some("40"));
    assert_eq!(
        req.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("upload-offset"))
            .count(),
        1
    );
    assert_eq!(piece.info(), routed.info());
}

#[test]
fn password_attempts_are_throttled_by_the_login_the_engine_finds() {
    let e = engine();
    let mut login = e.route(Request::new(Method::Post, "/@login", BASE));
    assert_eq!(login.info().throttle, Some(ThrottleClass::Login));
    assert_eq!(login.attempted_login(), None, "no body yet");
    login.set_body(
        json!({"login": "admin", "password": "x"})
            .to_string()
            .into_bytes(),
    );
    assert_eq!(login.attempted_login().as_deref(), Some("admin"));
    let basic = e.route(Request::new(Method::Get, "/", BASE).header("Authorization", ADMIN));
    assert_eq!(basic.info().throttle, Some(ThrottleClass::Login));
    assert_eq!(basic.attempted_login().as_deref(), Some("admin"));
    let mut other = e.route(Request::new(Method::Post, "/", BASE));
    other.set_body(json!({"login": "admin"}).to_string().into_bytes());
    assert_eq!(other.info().throttle, None);
    assert_eq!(other.attempted_login(), None);
}

#[test]
fn the_engine_reports_a_refused_password() {
    let e = engine();
    let login = |password: &str| {
        let req = Request::new(Method::Post, "/@login", BASE)
            .json(&json!({"login": "admin", "password": password}));
        e.handle_routed(e.route(req))
    };
    let refused = login("wrong");
    assert_eq!(refused.response.status, 401);
    assert_eq!(refused.refused_login.as_deref(), Some("admin"));
    let ok = login("secret");
    assert_eq!(ok.response.status, 200);
    assert_eq!(ok.refused_login, None);
    let basic = |auth: &str| {
        e.handle_routed(e.route(Request::new(Method::Get, "/", BASE).header("Authorization", auth)))
    };
    assert_eq!(basic(WRONG).refused_login.as_deref(), Some("admin"));
    assert_eq!(basic(ADMIN).refused_login, None);
    // Through the group commit likewise.
    let group = e.handle_routed_group(&[e.route(
        Request::new(Method::Post, "/@login", BASE)
            .json(&json!({"login": "admin", "password": "nope"})),
    )]);
    assert_eq!(group[0].refused_login.as_deref(), Some("admin"));
}

#[test]
fn the_throttle_refusal_is_an_engine_error() {
    let resp = EngineError::TooManyLoginAttempts { retry_after: 7 }.into_response();
    assert_eq!(resp.status, 429);
    assert_eq!(resp.header_value("Retry-After"), Some("7"));
    assert_eq!(
        resp.json_body(),
        json!({
            "type": "TooManyRequests",
            "message": "Too many failed login attempts for this login or from this address; \
                        try again in 7 seconds"
        })
    );
}
