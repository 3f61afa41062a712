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

/// A body that arrives in the given chunks, then ends (or breaks, with `broken`).
struct Chunks {
    chunks: std::collections::VecDeque<Vec<u8>>,
    broken: bool,
}

impl engine::BodyStream for Chunks {
    type Chunk = Vec<u8>;

    async fn next_chunk(&mut self) -> Option<Result<Vec<u8>, String>> {
        match self.chunks.pop_front() {
            Some(c) => Some(Ok(c)),
            None if self.broken => {
                self.broken = false;
                Some(Err("reset".into()))
            }
            None => None,
        }
    }
}

/// Run a future that never waits.
fn ready<T>(f: impl std::future::Future<Output = T>) -> T {
    let mut f = std::pin::pin!(f);
    let waker = std::task::Waker::noop();
    match f.as_mut().poll(&mut std::task::Context::from_waker(waker)) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("the future waited"),
    }
}

/// The pieces `in_pieces` makes of `chunks` (piece size 4, first offset 10): each piece's
/// offset and bytes, and the answer; `fail_at` answers that piece 409.
fn pieces(chunks: &[&str], broken: bool, fail_at: Option<usize>) -> (Vec<(String, String)>, u16) {
    let mut opts = EngineOptions::for_tests();
    opts.max_body_bytes = 4;
    let e = Engine::new(MemStore::new(), opts).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    let routed = e.route(
        Request::new(Method::Patch, "/@tus-upload/abc", BASE)
            .header("Upload-Offset", "10")
            .header("Content-Length", "99"),
    );
    assert_eq!(
        routed.info().body,
        BodyKind::Pieces {
            offset: 10,
            piece: 4
        }
    );
    let mut body = Chunks {
        chunks: chunks.iter().map(|c| c.as_bytes().to_vec()).collect(),
        broken,
    };
    let mut seen = Vec::new();
    let handled = ready(routed.in_pieces(&mut body, |piece| {
        let req = piece.request();
        assert_eq!(req.header_value("content-length"), None);
        seen.push((
            req.header_value("upload-offset").unwrap_or("").to_string(),
            String::from_utf8(req.body.clone()).unwrap(),
        ));
        let status = if Some(seen.len()) == fail_at {
            409
        } else {
            204
        };
        std::future::ready(engine::engine::Handled {
            response: engine::Response::empty(status),
            refused_login: None,
        })
    }));
    (seen, handled.response.status)
}

#[test]
fn a_body_in_pieces_becomes_one_request_per_piece_at_the_offset_reached() {
    let p = |o: &str, b: &str| (o.to_string(), b.to_string());
    assert_eq!(
        pieces(&["ab", "cdefghi", "j"], false, None),
        (vec![p("10", "abcd"), p("14", "efgh"), p("18", "ij")], 204)
    );
    // A body that ends on a piece boundary sends no empty piece; an empty body sends one.
    assert_eq!(
        pieces(&["abcdefgh"], false, None),
        (vec![p("10", "abcd"), p("14", "efgh")], 204)
    );
    assert_eq!(pieces(&[], false, None), (vec![p("10", "")], 204));
    // The first refusal is the answer; nothing more is sent.
    assert_eq!(
        pieces(&["abcdefghij"], false, Some(1)),
        (vec![p("10", "abcd")], 409)
    );
    // A broken connection keeps what arrived and answers 400.
    assert_eq!(
        pieces(&["abcdef"], true, None),
        (vec![p("10", "abcd"), p("14", "ef")], 400)
    );
}

/// `Engine::route_family`: the endpoint family a request reaches (a host's per-family
/// metrics), for a GET routed without the table as for a write; `none` when nothing matches.
#[test]
fn route_family_names_the_endpoint_family() {
    let e = engine();
    let family = |m: Method, path: &str| e.route_family(&e.route(Request::new(m, path, BASE)));
    assert_eq!(family(Method::Get, "/"), "content");
    assert_eq!(family(Method::Post, "/"), "content");
    assert_eq!(family(Method::Get, "/@search"), "search");
    assert_eq!(family(Method::Post, "/@login"), "auth");
    assert_eq!(family(Method::Get, "/@no-such-endpoint"), "none");
}

/// `Engine::outbox_backlog` counts queued deliveries: none on a new site.
#[test]
fn outbox_backlog_of_a_new_site_is_empty() {
    let e = engine();
    assert_eq!(e.outbox_backlog(1000).unwrap(), 0);
    let bare = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    assert_eq!(bare.outbox_backlog(1000).unwrap(), 0, "no site yet");
}
