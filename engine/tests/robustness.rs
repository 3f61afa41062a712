//! No input makes the engine panic: 20,000 generated requests — odd paths, escapes,
//! endpoints, methods, headers and bodies of every JSON shape (and of no valid shape) — each get an
//! HTTP answer with a JSON body, and an error answer never changes the store.

use std::panic::{catch_unwind, AssertUnwindSafe};

use engine::{Engine, EngineOptions, MemStore, Method, Request, SiteSetup};
use serde_json::{json, Value};

#[path = "support/answers.rs"]
mod answers;
use answers::{check_answer, snapshot};

const BASE: &str = "http://localhost:8080";

/// A small deterministic generator (xorshift), so a failure is reproducible from its seed.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

const SEGMENTS: &[&str] = &[
    "", "folder", "page", "missing", "++api++", "@workflow", "@history", "@lock", "@aliases",
    "@comments", "@copy", "@move", "@users", "@login", "@logout", "@login-renew", "@navigation",
    "@breadcrumbs", "@navroot", "@translations", "@translation-locator", "@controlpanels",
    "@addons", "@test-clock", "publish", "retract", "0", "-1", "99999999999", "language",
    "navigation", "admin", "%", "%zz", "%2F", "%00", "..", ".", "a b", "ä", "@", "@@", "++",
    "multilingual-content", "install",
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
];

const FIELDS: &[&str] = &[
    "@type",
    "id",
    "title",
    "description",
    "blocks",
    "blocks_layout",
    "subjects",
    "language",
    "effective",
    "expires",
    "exclude_from_nav",
    "allow_discussion",
    "relatedItems",
    "layout",
    "ordering",
    "sort",
    "changeNote",
    "translation_of",
    "text",
    "source",
    "items",
    "version",
    "timeout",
    "stealable",
    "force",
    "comment",
    "include_children",
    "login",
    "password",
    "username",
    "roles",
    "advance",
    "available_languages",
    "default_language",
    "show_home",
    "extra_items",
    "path",
    "redirect-to",
    "datetime",
    "obj_id",
    "delta",
    "subset_ids",
    "on",
];

fn value(g: &mut Gen, depth: usize) -> Value {
    match g.below(if depth > 2 { 7 } else { 10 }) {
        0 => Value::Null,
        1 => json!(g.below(2) == 0),
        2 => json!(g.next() as i64),
        3 => json!(-1.5e308),
        4 => json!(g.pick(&[
            "",
            "Page",
            "Folder",
            "Site",
            "top",
            "x/y",
            "2026-01-01",
            "en",
            "/folder",
            "secret"
        ])),
        5 => json!(g.pick(SEGMENTS).to_string()),
        6 => json!("\u{0}\u{1F600}\n\"'<script>"),
        7 => Value::Array((0..g.below(4)).map(|_| value(g, depth + 1)).collect()),
        _ => object(g, depth + 1),
    }
}

fn object(g: &mut Gen, depth: usize) -> Value {
    let mut m = serde_json::Map::new();
    for _ in 0..g.below(5) {
        let field: &str = g.pick(FIELDS);
        m.insert(field.to_string(), value(g, depth));
    }
    Value::Object(m)
}

fn request(g: &mut Gen) -> Request {
    let method: &str = g.pick(&[
        "GET", "POST", "PATCH", "DELETE", "PUT", "HEAD", "OPTIONS", "BREW",
    ]);
    let mut path = String::new();
    for _ in 0..g.below(5) {
        path.push('/');
        let seg: &str = g.pick(SEGMENTS);
        path.push_str(seg);
    }
    if path.is_empty() || g.below(10) == 0 {
        path.push('/');
    }
    let query = g.pick(&[
        "",
        "?b_size=0",
        "?b_start=-3",
        "?b_size=2&b_start=1",
        "?expand=navigation,breadcrumbs,workflow,translations,navroot",
        "?expand.navigation.depth=99",
        "?metadata_fields=_all",
        "?target_language=de",
        "?query=%ZZ",
        "?manual=maybe",
        "?start=yesterday",
    ]);
    let mut req = Request::new(Method::parse(method), &format!("{path}{query}"), BASE);
    match g.below(4) {
        0 => {}
        1 => req = req.header("Authorization", "Basic YWRtaW46c2VjcmV0"),
        2 => {
            let bad: &str = g.pick(&["Bearer x.y.z", "Basic !!!", "Digest a", "Bearer"]);
            req = req.header("Authorization", bad)
        }
        _ => {
            req = req
                .header("Authorization", "Basic YWRtaW46c2VjcmV0")
                .header("Lock-Token", "nope")
        }
    }
    if g.below(6) == 0 {
        req = req.header("Prefer", "return=representation");
    }
    match g.below(5) {
        0 => {}
        1 => {
            req.body = vec![0xff, 0xfe, b'{', 0x00];
            req = req.header("Content-Type", "application/json");
        }
        2 => req = req.json(&value(g, 0)),
        3 => {
            req.body = b"old path,new path\n/a,/b\n".to_vec();
            req = req.header(
                "Content-Type",
                g.pick(&["text/csv", "multipart/form-data; boundary=X", "text/plain"]),
            );
        }
        _ => req = req.json(&object(g, 0)),
    }
    req
}

#[test]
fn generated_requests_never_panic_and_errors_change_nothing() {
    let store = MemStore::new();
    let engine = Engine::new(store.clone(), EngineOptions::for_tests()).unwrap();
    engine.create_site(&SiteSetup::new("secret")).unwrap();
    // something to act on
    for body in [
        json!({"@type": "Folder", "id": "folder", "title": "Folder"}),
        json!({"@type": "Page", "id": "page", "title": "Page"}),
    ] {
        let r = engine.handle(
            Request::new(Method::Post, "/", BASE)
                .header("Authorization", "Basic YWRtaW46c2VjcmV0")
                .json(&body),
        );
        assert_eq!(r.status, 201);
    }
    let mut g = Gen(0x9E37_79B9_7F4A_7C15);
    let mut statuses = std::collections::BTreeMap::new();
    for i in 0..20_000 {
        let req = request(&mut g);
        let shown = format!("#{i}: {} {}?{}", req.method.as_str(), req.path, req.query);
        let before = snapshot(&store);
        let resp = catch_unwind(AssertUnwindSafe(|| engine.handle(req.clone())))
            .unwrap_or_else(|_| panic!("the engine panicked on {shown}"));
        *statuses.entry(resp.status).or_insert(0) += 1;
        check_answer(&shown, &req, &resp, &store, &before);
    }
    eprintln!("statuses: {statuses:?}");
    // the generator must reach both successes and several kinds of refusal
    assert!(statuses.keys().any(|s| *s < 300), "{statuses:?}");
    for s in [400, 401, 404, 405] {
        assert!(statuses.contains_key(&s), "no {s} among {statuses:?}");
    }
}
