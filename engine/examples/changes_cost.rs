//! What the change log ([`engine::sync::changes`]) costs a create: pages POSTed into a folder in
//! process (MemStore, no HTTP), with the `changes` subscriber and without it (removed with
//! `Engine::unsubscribe`; never on a real site), alternating rounds so machine load hits both
//! alike. Also the time to read the whole log back through `GET /@changes` in pages of 1,000.
//!
//! ```text
//! cargo run --release -p engine --example changes_cost [-- <creates per round, default 2000>]
//! ```

use std::time::Instant;

use engine::{Engine, EngineOptions, MemStore, Method, Request, SiteSetup};
use serde_json::json;

const BASE: &str = "http://localhost:8080";
const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";

fn round(with_changes: bool, creates: usize) -> (f64, Option<(f64, usize)>) {
    let mut e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    if !with_changes {
        assert!(e.unsubscribe("changes"));
    }
    e.create_site(&SiteSetup::new("secret")).unwrap();
    let post = |path: &str, body: serde_json::Value| {
        let r = e.handle(
            Request::new(Method::Post, path, BASE)
                .header("Authorization", ADMIN)
                .json(&body),
        );
        assert_eq!(r.status, 201);
    };
    post("/", json!({"@type": "Folder", "id": "f", "title": "F"}));
    let t0 = Instant::now();
    for i in 0..creates {
        post("/f", json!({"@type": "Page", "title": format!("Page {i}")}));
    }
    let per_create = t0.elapsed().as_secs_f64() / creates as f64;
    if !with_changes {
        return (per_create, None);
    }
    let start =
        e.handle(Request::new(Method::Get, "/@changes", BASE).header("Authorization", ADMIN));
    let epoch = start.json_body()["cursor"]
        .as_str()
        .unwrap()
        .split('.')
        .next()
        .unwrap()
        .to_string();
    let t1 = Instant::now();
    let mut cursor = format!("{epoch}.0");
    let mut listed = 0;
    loop {
        let r = e.handle(
            Request::new(
                Method::Get,
                &format!("/@changes?since={cursor}&limit=1000"),
                BASE,
            )
            .header("Authorization", ADMIN),
        );
        let page = r.json_body();
        listed += page["changes"].as_array().unwrap().len();
        cursor = page["cursor"].as_str().unwrap().to_string();
        if page["more"] != true {
            break;
        }
    }
    (per_create, Some((t1.elapsed().as_secs_f64(), listed)))
}

fn main() {
    let creates: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let (w, read) = round(true, creates);
        with.push(w);
        if let Some((secs, n)) = read {
            println!(
                "read the whole log back: {n} entries in {:.1} ms",
                secs * 1000.0
            );
        }
        without.push(round(false, creates).0);
    }
    let best = |v: &[f64]| v.iter().cloned().fold(f64::MAX, f64::min) * 1e6;
    println!(
        "{creates} creates per round, best of 3: with the change log {:.1} µs/create, without {:.1} µs/create",
        best(&with),
        best(&without)
    );
}
