//! Time of a GET of a private page, in process, by who is asking and where their right to view it
//! comes from (no network, no SQLite, no response cache):
//!
//! ```text
//! cargo run --release -p engine --example permission_figures [requests]
//! ```
//!
//! The page is `/shared/sub/page` (private) in a site of 5 × 5 × 4 × 20 published objects.
//! Callers, each with a Bearer token: the admin (a global Manager: settled by the global roles),
//! `direct` (holds Reader locally on `/shared`, two levels up: the path that existed before
//! groups), `grouped` (a member of a group that holds Reader locally on `/shared`: the benchmark
//! row of issue 14), and `grouped-many` (the same with 20 other groups on the site, 5 of which it
//! belongs to). Prints the median of 5 runs of `requests` GETs each; with a caller (`admin`,
//! `direct`, `grouped`, `grouped-many`) as second argument, runs only its GETs once inside
//! `run_gets`, for instruction counts under callgrind.

use std::time::Instant;

use engine::{
    Engine, EngineOptions, FixedClock, MemStore, Method, Request, SeededEntropy, SiteSetup,
};
use serde_json::json;
use std::sync::Arc;

const BASE: &str = "http://localhost:8080";

fn call(
    e: &Engine<MemStore>,
    m: Method,
    path: &str,
    body: Option<serde_json::Value>,
) -> serde_json::Value {
    let mut r = Request::new(m, path, BASE).header("Authorization", "Basic YWRtaW46c2VjcmV0");
    if let Some(b) = body {
        r = r.json(&b);
    }
    let resp = e.handle(r);
    assert!(
        resp.status < 300,
        "{path}: {} {}",
        resp.status,
        String::from_utf8_lossy(&resp.body)
    );
    if resp.body.is_empty() {
        serde_json::Value::Null
    } else {
        resp.json_body()
    }
}

fn token(e: &Engine<MemStore>, login: &str, password: &str) -> String {
    let resp = e.handle(
        Request::new(Method::Post, "/@login", BASE)
            .json(&json!({"login": login, "password": password})),
    );
    assert_eq!(resp.status, 200);
    resp.json_body()["token"]
        .as_str()
        .expect("token")
        .to_string()
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let mut options = EngineOptions::production();
    options.clock = Arc::new(FixedClock::default());
    options.entropy = Arc::new(SeededEntropy::new(7));
    options.password_cost = engine::people::auth::password::PasswordCost::TESTING;
    let e = Engine::new(MemStore::new(), options).expect("engine");
    e.create_site(&SiteSetup::new("secret-password"))
        .expect("site");
    let post = |path: &str, body: serde_json::Value| call(&e, Method::Post, path, Some(body));
    for i in 0..5 {
        post(
            "/",
            json!({"@type": "Folder", "id": format!("f{i}"), "title": "F"}),
        );
        for j in 0..5 {
            post(
                &format!("/f{i}"),
                json!({"@type": "Folder", "id": format!("f{j}"), "title": "F"}),
            );
            for k in 0..4 {
                let p = format!("/f{i}/f{j}");
                post(
                    &p,
                    json!({"@type": "Folder", "id": format!("f{k}"), "title": "F"}),
                );
                for l in 0..20 {
                    let page = json!({"@type": "Page", "id": format!("p{l}"), "title": "P"});
                    post(&format!("{p}/f{k}"), page);
                }
            }
        }
    }
    post("/f0/@workflow/publish", json!({"include_children": true}));
    post(
        "/",
        json!({"@type": "Folder", "id": "shared", "title": "Shared"}),
    );
    post(
        "/shared",
        json!({"@type": "Folder", "id": "sub", "title": "Sub"}),
    );
    post(
        "/shared/sub",
        json!({"@type": "Page", "id": "page", "title": "Page"}),
    );
    for login in ["direct", "grouped", "grouped-many"] {
        post(
            "/@users",
            json!({"username": login, "password": "long-password"}),
        );
    }
    // The direct grant is written as stored (also on builds without `@sharing`, for comparison).
    e.with_write(|ctx| {
        let mut shared = engine::content::tree::at_path(ctx, "/shared")?.expect("/shared");
        shared
            .local_roles
            .insert("direct".into(), vec!["Reader".into()]);
        engine::content::tree::save(ctx, &mut shared, engine::content::tree::Change::LocalRoles)
    })
    .expect("grant");
    let mut callers = vec![
        (
            "admin (global Manager)",
            token(&e, "admin", "secret-password"),
        ),
        (
            "direct (user's local role 2 up)",
            token(&e, "direct", "long-password"),
        ),
    ];
    // GROUPS-BEGIN (left out of the comparison build without groups)
    post(
        "/@groups",
        json!({"groupname": "team", "users": ["grouped", "grouped-many"]}),
    );
    for g in 0..20 {
        let members = if g < 5 {
            json!(["grouped-many"])
        } else {
            json!([])
        };
        post(
            "/@groups",
            json!({"groupname": format!("g{g}"), "users": members}),
        );
    }
    let grant = json!({"id": "team", "type": "group", "roles": {"Reader": true}});
    post("/shared/@sharing", json!({"entries": [grant]}));
    callers.push((
        "grouped (group's local role 2 up)",
        token(&e, "grouped", "long-password"),
    ));
    callers.push((
        "grouped-many (same, in 6 of 21 groups)",
        token(&e, "grouped-many", "long-password"),
    ));
    // GROUPS-END
    // With a caller's label prefix as the second argument: only its GETs, once, inside
    // `run_gets` (for instruction counts: valgrind --tool=callgrind --toggle-collect='*run_gets*').
    if let Some(only) = std::env::args().nth(2) {
        let (label, tok) = callers
            .iter()
            .find(|(l, _)| l.starts_with(&only))
            .expect("a known caller");
        run_gets(&e, label, tok, n);
        return;
    }
    for (label, tok) in &callers {
        let mut runs = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            run_gets(&e, label, tok, n);
            runs.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
        }
        runs.sort_by(|a, b| a.total_cmp(b));
        println!("{label:40} {:8.2} µs per GET (median of 5 × {n})", runs[2]);
    }
}

/// `n` GETs of the private page with `tok`, each answered 200.
#[inline(never)]
fn run_gets(e: &Engine<MemStore>, label: &str, tok: &str, n: usize) {
    for _ in 0..n {
        let r = Request::new(Method::Get, "/shared/sub/page", BASE)
            .header("Authorization", &format!("Bearer {tok}"));
        let resp = e.handle(r);
        assert_eq!(resp.status, 200, "{label}");
    }
}
