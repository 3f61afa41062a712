//! The replica driven against a second engine playing the server (its real API answers, with a
//! switch for "the network is down" and for canned 5xx answers), and against canned change
//! feed answers.

use std::sync::Arc;

use serde_json::{json, Value};

use super::*;
use crate::{Engine, EngineOptions, MemStore, Method, Request, Response, SeededEntropy, SiteSetup};

const SERVER: &str = "http://server.test";
const LOCAL: &str = "http://local.test";
const ADMIN: &str = "Basic YWRtaW46c2VjcmV0"; // admin:secret

struct Net {
    server: Engine<MemStore>,
    down: bool,
    /// Answer every replayed write with this status instead of running it.
    fail_writes: Option<u16>,
    /// Canned answers for `/@changes` (taken in order; none left: 404).
    feed: Vec<(u16, Value)>,
    sent: Vec<Outgoing>,
}

struct Replica {
    engine: Engine<MemStore>,
    sync: Sync,
    now: i64,
}

fn engine(seed: u64) -> Engine<MemStore> {
    let mut o = EngineOptions::for_tests();
    o.entropy = Arc::new(SeededEntropy::new(seed));
    let e = Engine::new(MemStore::new(), o).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    e
}

fn server_call(server: &Engine<MemStore>, method: &str, path: &str, body: Option<Value>) -> Response {
    let mut r = Request::new(Method::parse(method), path, SERVER)
        .header("Authorization", ADMIN)
        .header("Accept", "application/json");
    if let Some(b) = body {
        r = r.json(&b);
    }
    server.handle(r)
}

impl Net {
    fn new() -> Net {
        let server = engine(1);
        let r = server_call(&server, "POST", "/", Some(json!({"@type": "Folder", "title": "News"})));
        assert_eq!(r.status, 201);
        for t in ["Hello", "Old"] {
            let r = server_call(&server, "POST", "/news", Some(json!({"@type": "Page", "title": t})));
            assert_eq!(r.status, 201);
        }
        let r = server_call(&server, "POST", "/news/hello/@workflow/publish", None);
        assert_eq!(r.status, 200);
        Net {
            server,
            down: false,
            fail_writes: None,
            feed: Vec::new(),
            sent: Vec::new(),
        }
    }

    fn perform(&mut self, out: &Outgoing) -> Option<Incoming> {
        self.sent.push(out.clone());
        if self.down {
            return None;
        }
        let rest = out.url.strip_prefix(SERVER).expect("a server URL");
        if rest.starts_with("/@changes") {
            let (status, body) = if self.feed.is_empty() {
                (404, json!({"type": "NotFound", "message": "no feed"}))
            } else {
                self.feed.remove(0)
            };
            return Some(Incoming {
                status,
                headers: vec![],
                body: body.to_string().into_bytes(),
            });
        }
        if let (Step::Replay { .. }, Some(s)) = (&out.step, self.fail_writes) {
            return Some(Incoming {
                status: s,
                headers: vec![],
                body: json!({"type": "Unavailable", "message": "try later"})
                    .to_string()
                    .into_bytes(),
            });
        }
        let mut r = Request::new(Method::parse(&out.method), rest, SERVER);
        r.headers = out.headers.clone();
        r.body = out.body.clone().unwrap_or_default().into_bytes();
        let resp = self.server.handle(r);
        Some(Incoming {
            status: resp.status,
            headers: resp.headers.clone(),
            body: resp.body.clone(),
        })
    }

    fn get(&self, path: &str) -> Response {
        server_call(&self.server, "GET", path, None)
    }
}

impl Replica {
    fn new() -> Replica {
        let engine = engine(2);
        engine
            .with_write(|ctx| {
                set_config(
                    ctx,
                    &Config {
                        server: SERVER.into(),
                        login: "admin".into(),
                        token: None,
                    },
                )
            })
            .unwrap();
        Replica {
            engine,
            sync: Sync::new(Some("secret".into())),
            now: 1_000_000,
        }
    }

    /// One sync round; how many requests it made.
    fn round(&mut self, net: &mut Net) -> usize {
        self.sync.begin_round();
        let mut n = 0;
        loop {
            let now = self.now;
            let out = self
                .engine
                .with_write(|ctx| self.sync.next_request(ctx, now))
                .unwrap();
            let Some(out) = out else { break };
            n += 1;
            assert!(n < 200, "the round does not end: {out:?}");
            match net.perform(&out) {
                Some(inc) => self
                    .engine
                    .with_write(|ctx| self.sync.receive(ctx, &out, &inc, now))
                    .unwrap(),
                None => self
                    .engine
                    .with_write(|ctx| self.sync.failed(ctx, &out, "connection refused", now))
                    .unwrap(),
            }
        }
        n
    }

    /// A request to the local site, as the browser host makes it: unsafe requests are recorded.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Response {
        let mut r = Request::new(Method::parse(method), path, LOCAL)
            .header("Authorization", ADMIN)
            .header("Accept", "application/json");
        if let Some(b) = body {
            r = r.json(&b);
        }
        if r.method.is_safe() {
            return self.engine.handle(r);
        }
        let draft = self
            .engine
            .with_write(|ctx| prepare_write(ctx, &r.path))
            .unwrap();
        let resp = self.engine.handle(r.clone());
        if (200..300).contains(&resp.status) {
            self.engine
                .with_write(|ctx| record_write(ctx, &r, draft, &resp))
                .unwrap();
        }
        resp
    }

    fn status(&self) -> Status {
        self.engine.with_write(|ctx| status(ctx)).unwrap().unwrap()
    }

    fn conflicts(&self) -> Vec<Conflict> {
        self.engine.with_write(|ctx| conflicts(ctx)).unwrap()
    }
}

fn title(r: &Response) -> String {
    r.json_body()["title"].as_str().unwrap_or("").to_string()
}

fn downloaded() -> (Net, Replica) {
    let mut net = Net::new();
    let mut rep = Replica::new();
    rep.round(&mut net);
    assert!(rep.status().downloaded, "{:?}", rep.status());
    (net, rep)
}

#[test]
fn a_full_download_keeps_the_servers_uids_paths_states_and_versions() {
    let (net, rep) = downloaded();
    let s = net.get("/news/hello");
    let l = rep.call("GET", "/news/hello", None);
    assert_eq!(l.status, 200);
    let (sj, lj) = (s.json_body(), l.json_body());
    for k in ["UID", "id", "title", "review_state", "created", "modified", "@type"] {
        assert_eq!(sj[k], lj[k], "{k}");
    }
    assert_eq!(s.header_value("etag"), l.header_value("etag"));
    assert_eq!(lj["@id"], json!(format!("{LOCAL}/news/hello")));
    // the folder lists both pages, in the server's order
    let items: Vec<String> = rep.call("GET", "/news", None).json_body()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["@id"].as_str().unwrap().rsplit('/').next().unwrap().to_string())
        .collect();
    assert_eq!(items, ["hello", "old"]);
    // local search finds what was replicated
    let found = rep.call("GET", "/@search?SearchableText=hello", None).json_body();
    assert_eq!(found["items_total"], json!(1));
    // nothing else than the user's own view came over: no server user records, no secret
    let server_secret = net.server.with_write(|ctx| ctx.get(keys::SITE)).unwrap();
    let local_secret = rep.engine.with_write(|ctx| ctx.get(keys::SITE)).unwrap();
    assert_ne!(server_secret, local_secret);
    // a second round with no change on the server fetches nothing but the root
    let mut net = net;
    net.sent.clear();
    let mut rep = rep;
    rep.round(&mut net);
    let fetched: Vec<_> = net
        .sent
        .iter()
        .filter(|o| matches!(o.step, Step::Fetch { .. }))
        .map(|o| o.url.clone())
        .collect();
    assert_eq!(fetched, [SERVER.to_string()]);
}

#[test]
fn offline_edit_create_delete_reach_the_server_when_it_comes_back() {
    let (mut net, mut rep) = downloaded();
    net.down = true;
    assert_eq!(
        rep.call("PATCH", "/news/hello", Some(json!({"title": "Hello offline"})))
            .status,
        204
    );
    let created = rep.call("POST", "/news", Some(json!({"@type": "Page", "title": "Fresh"})));
    assert_eq!(created.status, 201);
    let local_uid = created.json_body()["UID"].as_str().unwrap().to_string();
    // an edit of the page created offline, and of its folder
    assert_eq!(
        rep.call("PATCH", "/news/fresh", Some(json!({"description": "made offline"})))
            .status,
        204
    );
    assert_eq!(
        rep.call("PATCH", "/news", Some(json!({"title": "News (edited)"}))).status,
        204
    );
    assert_eq!(rep.call("DELETE", "/news/old", None).status, 204);
    // the UI sees everything at once
    assert_eq!(title(&rep.call("GET", "/news/hello", None)), "Hello offline");
    assert_eq!(rep.status().pending, 5);
    rep.round(&mut net);
    assert_eq!(rep.status().pending, 5, "nothing was sent while down");
    assert!(rep.status().last_error.unwrap().contains("no answer"));

    net.down = false;
    rep.now += MAX_BACKOFF_MS; // past the backoff of the first write
    rep.round(&mut net);
    let st = rep.status();
    assert_eq!((st.pending, st.conflicts), (0, 0), "{:?}", rep.conflicts());
    assert_eq!(title(&net.get("/news/hello")), "Hello offline");
    assert_eq!(title(&net.get("/news")), "News (edited)");
    let fresh = net.get("/news/fresh");
    assert_eq!(fresh.status, 200);
    assert_eq!(fresh.json_body()["description"], json!("made offline"));
    assert_eq!(net.get("/news/old").status, 404);
    // the local copy now holds the server's uid and version of the created page
    let local = rep.call("GET", "/news/fresh", None);
    assert_eq!(local.json_body()["UID"], fresh.json_body()["UID"]);
    assert_ne!(local.json_body()["UID"], json!(local_uid));
    assert_eq!(local.json_body()["description"], json!("made offline"));
    assert_eq!(local.header_value("etag"), fresh.header_value("etag"));
}

#[test]
fn each_write_carries_if_match_and_keeps_its_idempotency_key_across_retries() {
    let (mut net, mut rep) = downloaded();
    let etag = net.get("/news/hello").header_value("etag").unwrap().to_string();
    rep.call("PATCH", "/news/hello", Some(json!({"title": "Again"})));
    net.fail_writes = Some(503);
    net.sent.clear();
    rep.round(&mut net);
    let first: Vec<_> = net
        .sent
        .iter()
        .filter(|o| matches!(o.step, Step::Replay { .. }))
        .cloned()
        .collect();
    assert_eq!(first.len(), 1);
    let header = |o: &Outgoing, n: &str| {
        o.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(n))
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header(&first[0], "If-Match"), Some(etag));
    let key = header(&first[0], "Idempotency-Key").unwrap();
    let w = &rep.engine.with_write(|ctx| pending(ctx)).unwrap()[0];
    assert_eq!((w.attempts, w.next_try), (1, rep.now + 2000));
    // within the backoff the write is not sent again
    net.sent.clear();
    rep.round(&mut net);
    assert!(!net.sent.iter().any(|o| matches!(o.step, Step::Replay { .. })));
    // after it, with the same key
    net.fail_writes = None;
    rep.now += 2000;
    net.sent.clear();
    rep.round(&mut net);
    let again = net
        .sent
        .iter()
        .find(|o| matches!(o.step, Step::Replay { .. }))
        .unwrap();
    assert_eq!(header(again, "Idempotency-Key"), Some(key));
    assert_eq!(rep.status().pending, 0);
    assert_eq!(title(&net.get("/news/hello")), "Again");
}

#[test]
fn a_write_the_server_refuses_is_kept_as_a_conflict_with_both_versions() {
    let (mut net, mut rep) = downloaded();
    rep.call("PATCH", "/news/hello", Some(json!({"title": "Mine"})));
    server_call(&net.server, "PATCH", "/news/hello", Some(json!({"title": "Theirs"})));
    rep.round(&mut net);
    let cs = rep.conflicts();
    assert_eq!(cs.len(), 1);
    let c = &cs[0];
    assert_eq!(c.status, 412);
    assert_eq!(c.local.as_ref().unwrap()["title"], json!("Mine"));
    assert_eq!(c.server.as_ref().unwrap()["title"], json!("Theirs"));
    assert_eq!(
        c.server_version.as_deref(),
        net.get("/news/hello").header_value("etag")
    );
    // nothing lost: the local copy still shows mine, the server theirs
    assert_eq!(title(&rep.call("GET", "/news/hello", None)), "Mine");
    assert_eq!(title(&net.get("/news/hello")), "Theirs");
    // keep mine: sent again with the server's version
    rep.engine
        .with_write(|ctx| resolve(ctx, c.id, Resolution::Mine))
        .unwrap();
    rep.round(&mut net);
    assert_eq!(rep.status().conflicts, 0);
    assert_eq!(title(&net.get("/news/hello")), "Mine");
}

#[test]
fn taking_the_servers_version_replaces_the_local_copy() {
    let (mut net, mut rep) = downloaded();
    rep.call("PATCH", "/news/hello", Some(json!({"title": "Mine"})));
    server_call(&net.server, "PATCH", "/news/hello", Some(json!({"title": "Theirs"})));
    rep.round(&mut net);
    let id = rep.conflicts()[0].id;
    rep.engine
        .with_write(|ctx| resolve(ctx, id, Resolution::Theirs))
        .unwrap();
    assert_eq!(title(&rep.call("GET", "/news/hello", None)), "Theirs");
    // a merge is "theirs" and then a new edit, based on the server's version
    rep.call("PATCH", "/news/hello", Some(json!({"title": "Theirs and mine"})));
    rep.round(&mut net);
    assert_eq!(rep.status().conflicts, 0);
    assert_eq!(title(&net.get("/news/hello")), "Theirs and mine");
}

#[test]
fn a_write_to_an_object_deleted_on_the_server_is_a_conflict_and_theirs_removes_it() {
    let (mut net, mut rep) = downloaded();
    rep.call("PATCH", "/news/old", Some(json!({"title": "Edited"})));
    assert_eq!(server_call(&net.server, "DELETE", "/news/old", None).status, 204);
    rep.round(&mut net);
    let cs = rep.conflicts();
    assert_eq!(cs.len(), 1);
    assert_eq!(cs[0].status, 404);
    assert!(cs[0].server.is_none() && cs[0].server_fetched);
    assert_eq!(rep.call("GET", "/news/old", None).status, 200, "kept while in conflict");
    rep.engine
        .with_write(|ctx| resolve(ctx, cs[0].id, Resolution::Theirs))
        .unwrap();
    assert_eq!(rep.call("GET", "/news/old", None).status, 404);
}

#[test]
fn a_corrupt_pending_entry_is_reported_not_replayed() {
    let (mut net, mut rep) = downloaded();
    rep.engine
        .with_write(|ctx| ctx.put(&keys::replica_write(99), b"{not json"))
        .unwrap();
    net.sent.clear();
    rep.round(&mut net);
    assert!(!net.sent.iter().any(|o| matches!(o.step, Step::Replay { .. })));
    let cs = rep.conflicts();
    assert_eq!(cs.len(), 1);
    assert_eq!((cs[0].id, cs[0].status), (99, 0));
    assert_eq!(cs[0].raw.as_deref(), Some("{not json"));
    assert!(rep
        .engine
        .with_write(|ctx| resolve(ctx, 99, Resolution::Mine))
        .is_err());
    rep.engine
        .with_write(|ctx| resolve(ctx, 99, Resolution::Theirs))
        .unwrap();
    assert_eq!(rep.status().conflicts, 0);
}

#[test]
fn changes_on_the_server_reach_the_replica_without_a_feed() {
    let (mut net, mut rep) = downloaded();
    // a listing tells changes by the modification time: let the server's clock move
    if let Some(c) = &net.server.core().options.test_clock {
        c.advance(5);
    }
    server_call(&net.server, "PATCH", "/news/hello", Some(json!({"title": "Changed there"})));
    server_call(&net.server, "DELETE", "/news/old", None);
    server_call(&net.server, "POST", "/news", Some(json!({"@type": "Page", "title": "New there"})));
    rep.round(&mut net);
    assert_eq!(title(&rep.call("GET", "/news/hello", None)), "Changed there");
    assert_eq!(rep.call("GET", "/news/old", None).status, 404);
    assert_eq!(title(&rep.call("GET", "/news/new-there", None)), "New there");
}

#[test]
fn the_change_feed_is_followed_and_an_expired_cursor_downloads_again() {
    let mut net = Net::new();
    let hello = net.get("/news/hello").json_body();
    let old = net.get("/news/old").json_body();
    net.feed.push((200, json!({"@id": "x", "cursor": "c1", "more": false, "changes": []})));
    let mut rep = Replica::new();
    rep.round(&mut net);
    assert!(rep.status().downloaded);
    assert!(net.sent.iter().any(|o| o.url.ends_with("/@changes")));
    // the server changes a page and removes another; the feed says so
    server_call(&net.server, "PATCH", "/news/hello", Some(json!({"title": "Via the feed"})));
    let version = net.get("/news/hello").header_value("etag").unwrap().to_string();
    net.feed.push((
        200,
        json!({"@id": "x", "cursor": "c2", "more": false, "changes": [
            {"cursor": "c2a", "action": "modified", "UID": hello["UID"], "@id": hello["@id"],
             "path": "/news/hello", "parent": null, "version": version, "modified": "x"},
            {"cursor": "c2", "action": "removed", "UID": old["UID"], "@id": null, "path": null,
             "parent": null, "version": null, "modified": "x"}
        ]}),
    ));
    net.sent.clear();
    rep.round(&mut net);
    assert!(net.sent.iter().any(|o| o.url.contains("/@changes?since=c1&limit=")));
    assert_eq!(title(&rep.call("GET", "/news/hello", None)), "Via the feed");
    assert_eq!(rep.call("GET", "/news/old", None).status, 404);
    // an entry whose version the replica has is not fetched again
    net.feed.push((
        200,
        json!({"@id": "x", "cursor": "c3", "more": false, "changes": [
            {"cursor": "c3", "action": "modified", "UID": hello["UID"], "@id": hello["@id"],
             "path": "/news/hello", "parent": null, "version": version, "modified": "x"}]}),
    ));
    net.sent.clear();
    rep.round(&mut net);
    assert!(!net.sent.iter().any(|o| matches!(o.step, Step::Fetch { .. })));
    // 410: everything again, from a new cursor
    net.feed.push((410, json!({"type": "CursorExpired", "message": "too old"})));
    net.feed.push((200, json!({"@id": "x", "cursor": "c9", "more": false, "changes": []})));
    net.sent.clear();
    rep.round(&mut net);
    assert!(net.sent.iter().any(|o| matches!(o.step, Step::List { .. })));
    let st = rep.engine.with_write(|ctx| state(ctx)).unwrap();
    assert_eq!(st.cursor.as_deref(), Some("c9"));
    assert_eq!(st.phase, Phase::Following);
}

#[test]
fn refused_credentials_stop_the_round_and_are_not_retried() {
    let mut net = Net::new();
    let mut rep = Replica::new();
    rep.sync = Sync::new(Some("wrong".into()));
    let n = rep.round(&mut net);
    assert_eq!(n, 1);
    assert!(rep.status().last_error.unwrap().contains("refused the credentials"));
    assert_eq!(rep.round(&mut net), 0);
}

#[test]
fn object_paths_and_session_paths() {
    assert_eq!(object_path("/a/b/@workflow/publish"), "/a/b");
    assert_eq!(object_path("/"), "");
    assert_eq!(object_path("/@sharing"), "");
    assert!(is_session_path("/@login"));
    assert!(!is_session_path("/a/@lock"));
    assert_eq!(bump("\"abc-4\"").as_deref(), Some("\"abc-5\""));
    assert_eq!(server_path("http://s:1", "http://s:1/a/b").as_deref(), Some("/a/b"));
    assert_eq!(server_path("http://s:1", "http://s:1").as_deref(), Some(""));
    assert_eq!(server_path("http://s:1", "http://s:12/a"), None);
}
