//! Structured fuzzing of the engine's request entry point (`Engine::handle`), across every route.
//!
//! The routes come from the engine's own OpenAPI document (`GET /@openapi`): every path, method,
//! path and query parameter and request body it publishes. Each generated request takes one
//! operation and fills it in: the context path and path parameters from a pool of real ids (the
//! fixtures below) and hostile strings, query parameters and JSON bodies shaped by their schemas
//! (resolved through `components`) and then broken on purpose (wrong types, missing and unknown
//! fields, invalid JSON, huge and deep values), with every kind of caller (admin, editor, member,
//! anonymous, bad credentials) and the headers the API reads (`If-Match`, `Lock-Token`,
//! `Idempotency-Key`, `Prefer`, `Accept`, `Content-Type`).
//!
//! Every answer must hold: no panic; a status in 200..=599 and never 500 (an internal error is a
//! bug); an error answer is a JSON error with a `type` and changed nothing in the store; a JSON
//! content type carries valid JSON.
//!
//! `FUZZ_CASES` (default 4,000: the CI run, about 5 s in debug) and `FUZZ_SEED` choose the run; a
//! failure prints the seed and the case number, which reproduce it (`FUZZ_SEED=S FUZZ_REPLAY=N`
//! sends only the site round that leads to case N). The long run:
//!
//! ```sh
//! FUZZ_CASES=2000000 FUZZ_SEED=$RANDOM cargo test --release -p engine --test fuzz -- --nocapture
//! ```

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use engine::{Engine, EngineOptions, MemStore, Method, Request, SiteSetup};
use serde_json::{json, Map, Value};

#[path = "support/answers.rs"]
mod answers;
use answers::{check_answer, snapshot};

const BASE: &str = "http://localhost:8080";
const ADMIN: &str = "Basic YWRtaW46Y29ycmVjdC1ob3JzZQ=="; // admin:correct-horse
const EDITOR: &str = "Basic ZWRpdG9yOmVkaXRvci1wYXNzd29yZA=="; // editor:editor-password
const MEMBER: &str = "Basic bWVtYmVyOm1lbWJlci1wYXNzd29yZA=="; // member:member-password

/// splitmix64: small, deterministic, good enough to spread choices; a seed reproduces a run.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Context paths: real objects, missing ones and hostile spellings.
const CONTEXTS: &[&str] = &[
    "",
    "",
    "",
    "folder",
    "folder",
    "folder/page",
    "folder/page",
    "page",
    "page",
    "folder/event",
    "missing",
    "folder/missing/deeper",
    "%2E%2E",
    "folder/%00",
    "a%20b",
    "%C3%A4",
    "++api++/folder",
    "folder/page/extra",
];

/// Real values for the path parameter `param` of the operation at `path` (most generated requests
/// name something that exists, so they get past the lookup).
fn real(path: &str, param: &str) -> &'static [&'static str] {
    let under = |endpoint: &str| path.contains(endpoint);
    match param {
        "{id}" if under("@users") => &["admin", "editor", "member"],
        "{id}" if under("@groups") => &["editors", "Reviewers", "Administrators"],
        "{id}" if under("@portrait") => &["admin", "editor"],
        "{id}" if under("@addons") => &["multilingual", "multilingual-content"],
        "{id}" => &["1", "0"],
        "{action}" => &["install", "uninstall", "upgrade"],
        "{transition}" => &["publish", "retract", "submit", "reject", "hide", "show"],
        "{type}" => &["Page", "Folder", "Event", "News Item"],
        "{name}" if under("@vocabularies") => &[
            "plone.app.vocabularies.ReallyUserFriendlyTypes",
            "plone.app.vocabularies.Keywords",
            "plone.app.vocabularies.Workflows",
            "events",
            "actions",
            "groups",
            "behaviors",
        ],
        "{name}" if under("@registry") => &["plone.site_title", "plone.email_from_address"],
        "{name}" if under("@types") => &["title", "description", "text", "custom"],
        "{name}" => &[
            "navigation",
            "language",
            "mail",
            "security",
            "site",
            "editing",
            "discussion",
            "search",
            "markup",
            "social",
            "usergroup",
            "recyclebin",
        ],
        "{rule}" => &["rule-1", "rule-2"],
        "{idx}" | "{version}" | "{recycle_id}" => &["0", "1", "2"],
        "{field}" => &["image", "file", "preview_image"],
        "{scale}" => &["preview", "mini", "thumb", "icon"],
        "{filename}" => &["image.png", "a.txt"],
        "{comment_id}" => &["1"],
        _ => &[],
    }
}

/// Values for path parameters: real ids of every kind, then hostile strings.
const PARAMS: &[&str] = &[
    "admin",
    "editor",
    "member",
    "editors",
    "Reviewers",
    "publish",
    "retract",
    "submit",
    "Page",
    "Folder",
    "title",
    "image",
    "file",
    "preview",
    "mini",
    "1",
    "0",
    "-1",
    "99999999999999999999",
    "plone",
    "navigation",
    "language",
    "mail",
    "security",
    "rule-1",
    "multilingual-content",
    "install",
    "missing",
    "",
    "%",
    "%zz",
    "%2F",
    "..",
    "a b",
    "ä",
    "@",
    "{id}",
];

const STRINGS: &[&str] = &[
    "",
    "x",
    "Hello world",
    "folder",
    "/folder/page",
    "http://localhost:8080/folder",
    "2026-01-01T00:00:00Z",
    "2026-13-45",
    "yesterday",
    "admin",
    "a@example.org",
    "not-an-address",
    "Manager",
    "Page",
    "publish",
    "<script>alert(1)</script>",
    "\u{0}\r\n",
    "ä\u{1F600}",
    "%",
    "-1",
    "1e309",
];

/// A JSON value shaped by `schema` (resolved through the document's components), broken now and
/// then.
fn value(g: &mut Gen, doc: &Value, schema: &Value, depth: usize) -> Value {
    if depth > 6 || g.chance(12) {
        return wild(g, depth);
    }
    let schema = resolve(doc, schema);
    if let Some(options) = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)
    {
        if !options.is_empty() {
            let pick = g.pick(options).clone();
            return value(g, doc, &pick, depth + 1);
        }
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        if !values.is_empty() && !g.chance(6) {
            return g.pick(values).clone();
        }
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) if !ts.is_empty() => {
            g.pick(ts).as_str().unwrap_or("null").to_string()
        }
        _ if schema.get("properties").is_some() => "object".to_string(),
        _ => return wild(g, depth),
    };
    match ty.as_str() {
        "object" => {
            let mut m = Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (name, s) in props {
                    if !g.chance(3) {
                        m.insert(name.clone(), value(g, doc, s, depth + 1));
                    }
                }
            }
            if let Some(extra) = schema.get("additionalProperties").filter(|s| s.is_object()) {
                for _ in 0..g.below(3) {
                    let key = g.pick(STRINGS).to_string();
                    m.insert(key, value(g, doc, extra, depth + 1));
                }
            }
            if g.chance(8) {
                m.insert(g.pick(PARAMS).to_string(), wild(g, depth + 1));
            }
            Value::Object(m)
        }
        "array" => {
            let items = schema.get("items").cloned().unwrap_or(Value::Null);
            (0..g.below(4))
                .map(|_| value(g, doc, &items, depth + 1))
                .collect()
        }
        "string" => json!(g.pick(STRINGS)),
        "integer" => json!(*g.pick(&[0i64, 1, 2, 25, -1, 1000, 100_000, i64::MAX])),
        "number" => json!(*g.pick(&[0.0, 0.5, -1.0, 1e300])),
        "boolean" => json!(g.chance(2)),
        _ => Value::Null,
    }
}

/// Any JSON value, of no particular shape.
fn wild(g: &mut Gen, depth: usize) -> Value {
    match g.below(if depth > 4 { 5 } else { 8 }) {
        0 => Value::Null,
        1 => json!(g.chance(2)),
        2 => json!(*g.pick(&[0i64, -1, 7, i64::MIN])),
        3 => json!(1.5e308),
        4 => json!(g.pick(STRINGS)),
        5 => json!("x".repeat(g.below(70_000))),
        6 => (0..g.below(4)).map(|_| wild(g, depth + 1)).collect(),
        _ => {
            let mut m = Map::new();
            for _ in 0..g.below(4) {
                m.insert(g.pick(STRINGS).to_string(), wild(g, depth + 1));
            }
            Value::Object(m)
        }
    }
}

/// `schema` with a `$ref` to the document's components followed (one level at a time).
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    let mut s = schema;
    for _ in 0..8 {
        match s.get("$ref").and_then(Value::as_str) {
            Some(r) => match r
                .strip_prefix("#/")
                .and_then(|p| doc.pointer(&format!("/{p}")))
            {
                Some(target) => s = target,
                None => return s,
            },
            None => return s,
        }
    }
    s
}

/// One published operation.
struct Operation {
    method: String,
    path: String,
    query: Vec<(String, Value)>,
    body: Option<Value>,
}

fn operations(doc: &Value) -> Vec<Operation> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            let query = op["parameters"]
                .as_array()
                .map(|ps| {
                    ps.iter()
                        .filter(|p| p["in"] == "query")
                        .map(|p| {
                            (
                                p["name"].as_str().unwrap_or("").to_string(),
                                p["schema"].clone(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            let body = op
                .pointer("/requestBody/content/application~1json/schema")
                .cloned();
            out.push(Operation {
                method: method.to_uppercase(),
                path: path.clone(),
                query,
                body,
            });
        }
    }
    out
}

fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~:,".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn request(g: &mut Gen, doc: &Value, op: &Operation) -> Request {
    let method = if g.chance(12) {
        g.pick(&[
            "GET", "POST", "PATCH", "DELETE", "PUT", "HEAD", "OPTIONS", "BREW",
        ])
        .to_string()
    } else {
        op.method.clone()
    };
    let mut path = String::new();
    for seg in op.path.split('/').filter(|s| !s.is_empty()) {
        let filled = if seg == "{path}" {
            g.pick(CONTEXTS).to_string()
        } else if seg.starts_with('{') {
            let good = real(&op.path, seg);
            if good.is_empty() || g.chance(4) {
                g.pick(PARAMS).to_string()
            } else {
                g.pick(good).to_string()
            }
        } else {
            seg.to_string()
        };
        if !filled.is_empty() {
            path.push('/');
            path.push_str(&filled);
        }
    }
    if path.is_empty() {
        path.push('/');
    }
    let mut query = Vec::new();
    for (name, schema) in &op.query {
        if g.chance(3) {
            let v = value(g, doc, schema, 3);
            let text = match v {
                Value::Null if !g.chance(8) => continue,
                Value::String(s) => s,
                Value::Array(items) => items
                    .iter()
                    .map(|i| i.as_str().map(str::to_string).unwrap_or(i.to_string()))
                    .collect::<Vec<_>>()
                    .join(","),
                other => other.to_string(),
            };
            query.push(format!("{}={}", encode(name), encode(&text)));
        }
    }
    if g.chance(10) {
        query.push(
            g.pick(&[
                "b_size=0",
                "b_start=-3",
                "expand=navigation,breadcrumbs",
                "%ZZ=1",
            ])
            .to_string(),
        );
    }
    let target = if query.is_empty() {
        path
    } else {
        format!("{path}?{}", query.join("&"))
    };
    let mut req = Request::new(Method::parse(&method), &target, BASE);
    let auth = *g.pick(&[
        Some(ADMIN),
        Some(ADMIN),
        Some(ADMIN),
        Some(ADMIN),
        Some(EDITOR),
        Some(MEMBER),
        None,
        Some("Bearer x.y.z"),
        Some("Basic !!!"),
    ]);
    if let Some(a) = auth {
        req = req.header("Authorization", a);
    }
    let headers: [(&str, &[&str]); 5] = [
        ("If-Match", &["\"nope\"", "*", "W/\"1\""]),
        ("Lock-Token", &["nope", ""]),
        ("Idempotency-Key", &["k1", "k2", ""]),
        ("Prefer", &["return=representation", "return=minimal"]),
        ("Accept", &["text/event-stream", "text/csv", "*/*"]),
    ];
    for (name, values) in headers {
        if g.chance(12) {
            let value: &&str = g.pick(values);
            req = req.header(name, value);
        }
    }
    match (&op.body, g.below(16)) {
        (_, 0) => {
            req.body = vec![0xff, 0xfe, b'{', 0x00];
            req = req.header("Content-Type", "application/json");
        }
        (_, 1) => {
            req.body = b"{\"title\": ".to_vec();
            req = req.header("Content-Type", "application/json");
        }
        (_, 2) => {
            req.body = b"a,b\n1,2\n".to_vec();
            let media: &&str =
                g.pick(&["text/csv", "multipart/form-data; boundary=X", "text/plain"]);
            req = req.header("Content-Type", media);
        }
        (_, 3) => req = req.json(&wild(g, 0)),
        (Some(schema), _) => req = req.json(&value(g, doc, schema, 0)),
        (None, _) => {}
    }
    req
}

fn setup() -> (MemStore, Engine<MemStore>) {
    let store = MemStore::new();
    let engine = Engine::new(store.clone(), EngineOptions::for_tests()).expect("engine");
    engine
        .create_site(&SiteSetup::new("correct-horse"))
        .expect("site");
    let admin = |method: Method, path: &str, body: Value| {
        let r = engine.handle(
            Request::new(method, path, BASE)
                .header("Authorization", ADMIN)
                .json(&body),
        );
        assert!(r.status < 300, "fixture {path}: {}", r.status);
    };
    admin(
        Method::Post,
        "/",
        json!({"@type": "Folder", "id": "folder", "title": "Folder"}),
    );
    admin(
        Method::Post,
        "/",
        json!({"@type": "Page", "id": "page", "title": "Page"}),
    );
    admin(
        Method::Post,
        "/folder",
        json!({"@type": "Page", "id": "page", "title": "Inner page"}),
    );
    admin(
        Method::Post,
        "/folder",
        json!({"@type": "Event", "id": "event", "title": "Event",
               "start": "2026-01-01T10:00:00Z", "end": "2026-01-01T11:00:00Z"}),
    );
    admin(
        Method::Post,
        "/@users",
        json!({"username": "editor", "password": "editor-password", "email": "e@example.org",
               "roles": ["Editor"]}),
    );
    admin(
        Method::Post,
        "/@users",
        json!({"username": "member", "password": "member-password", "email": "m@example.org"}),
    );
    for rule in ["First rule", "Second rule"] {
        admin(
            Method::Post,
            "/@controlpanels/content-rules",
            json!({"title": rule, "event": "onAfterAdd"}),
        );
    }
    admin(
        Method::Post,
        "/@groups",
        json!({"groupname": "editors", "title": "Editors"}),
    );
    (store, engine)
}

#[test]
fn structured_requests_across_every_route_never_panic_and_errors_change_nothing() {
    let cases: usize = std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000);
    let seed: u64 = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5EED_CA5E);
    let (mut store, mut engine) = setup();
    let doc = engine
        .handle(Request::new(Method::Get, "/@openapi", BASE))
        .json_body();
    let ops = operations(&doc);
    assert!(ops.len() > 150, "only {} operations published", ops.len());
    let mut g = Gen(seed);
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    let mut reached: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    // FUZZ_REPLAY=N reproduces case N quickly: the requests do not depend on the answers, so the
    // ones before the site round that holds N are generated but not sent, and the run stops at N.
    let replay: Option<usize> = std::env::var("FUZZ_REPLAY")
        .ok()
        .and_then(|v| v.parse().ok());
    let round = 3 * ops.len();
    let cases = replay.map_or(cases, |n| n + 1);
    let first_sent = replay.map_or(0, |n| n - n % round);
    for i in 0..cases {
        // A fresh site every few rounds over the operations: the generated deletes and moves
        // would otherwise leave little for the later requests to act on.
        if i > 0 && i % round == 0 && i >= first_sent {
            (store, engine) = setup();
        }
        let op = &ops[i % ops.len()];
        let req = request(&mut g, &doc, op);
        if i < first_sent {
            continue;
        }
        let shown = format!(
            "seed {seed} case #{i} ({} {}): {} {}?{} body {}",
            op.method,
            op.path,
            req.method.as_str(),
            req.path,
            req.query,
            String::from_utf8_lossy(&req.body[..req.body.len().min(300)])
        );
        let before = snapshot(&store);
        let resp = catch_unwind(AssertUnwindSafe(|| engine.handle(req.clone())))
            .unwrap_or_else(|_| panic!("the engine panicked on {shown}"));
        *statuses.entry(resp.status).or_default() += 1;
        let seen = reached
            .entry(format!("{} {}", op.method, op.path))
            .or_default();
        seen.0 += 1;
        if resp.status < 300 {
            seen.1 += 1;
        }
        assert!(
            resp.status != 500,
            "{shown}: status {}: {}",
            resp.status,
            String::from_utf8_lossy(&resp.body)
        );
        check_answer(&shown, &req, &resp, &store, &before);
    }
    let succeeded = reached.values().filter(|(_, ok)| *ok > 0).count();
    eprintln!(
        "{cases} cases (seed {seed}) over {} operations, {succeeded} of them answered 2xx at least once; statuses {statuses:?}",
        ops.len()
    );
    // Every operation was tried, and the generator gets past validation for most of them (a
    // generator that only ever produced refusals would test little).
    if replay.is_none() && cases >= ops.len() {
        assert_eq!(reached.len(), ops.len());
        let never: Vec<&String> = reached
            .iter()
            .filter(|(_, (_, ok))| *ok == 0)
            .map(|(op, _)| op)
            .collect();
        assert!(
            succeeded * 2 > ops.len(),
            "only {succeeded} of {} operations ever answered 2xx; never: {never:?}",
            ops.len()
        );
    }
}
