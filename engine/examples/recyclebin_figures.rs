//! Prints timings of the recycle bin and `@replace` on a folder of N pages (default 1,000; the
//! first argument changes it), in process on `MemStore`:
//! `cargo run --release -p engine --example recyclebin_figures [N]`. Deleting the folder moves N+1
//! records into one bin item; listing the bin decodes every item; restoring writes them back and
//! reindexes them; `@replace` walks and (dry or not) rewrites every page.

use std::time::Instant;

use engine::{Engine, EngineOptions, MemStore, Method, Request, SiteSetup};
use serde_json::json;

const BASE: &str = "http://localhost:8080";

fn call(e: &Engine<MemStore>, m: Method, path: &str, body: serde_json::Value) -> engine::Response {
    let r = e.handle(
        Request::new(m, path, BASE)
            .header("Authorization", "Basic YWRtaW46c2VjcmV0")
            .json(&body),
    );
    assert!(
        r.status < 300,
        "{path}: {} {}",
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    r
}

fn timed(label: &str, f: impl FnOnce() -> engine::Response) -> engine::Response {
    let t = Instant::now();
    let r = f();
    println!("{label:40} {:>10.2} ms", t.elapsed().as_secs_f64() * 1000.0);
    r
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).expect("engine");
    e.create_site(&SiteSetup::new("secret")).expect("site");
    call(
        &e,
        Method::Post,
        "/",
        json!({"@type": "Folder", "title": "Big"}),
    );
    let block = |t: &str| json!({"b": {"@type": "slate", "plaintext": t, "value": [{"type": "p", "children": [{"text": t}]}]}});
    let reqs: Vec<Request> = (0..n)
        .map(|i| {
            Request::new(Method::Post, "/big", BASE)
                .header("Authorization", "Basic YWRtaW46c2VjcmV0")
                .json(
                    &json!({"@type": "Page", "title": format!("Page {i} about cats"),
                    "blocks": block("The cat sat on the mat"), "blocks_layout": {"items": ["b"]}}),
                )
        })
        .collect();
    let t = Instant::now();
    for chunk in reqs.chunks(500) {
        e.handle_group(chunk);
    }
    println!("created {n} pages in {:.2?}", t.elapsed());
    timed(
        &format!("DELETE /big ({} objects into the bin)", n + 1),
        || call(&e, Method::Delete, "/big", json!({})),
    );
    let bin = timed("GET /@recyclebin (one item)", || {
        call(&e, Method::Get, "/@recyclebin", json!({}))
    });
    let rid = bin.json_body()["items"][0]["recycle_id"]
        .as_str()
        .expect("item")
        .to_string();
    timed("POST restore", || {
        call(
            &e,
            Method::Post,
            &format!("/@recyclebin/{rid}/restore"),
            json!({}),
        )
    });
    timed("POST @replace dry run (cat → dog)", || {
        call(
            &e,
            Method::Post,
            "/@replace",
            json!({"pattern": "cat", "replacement": "dog", "dry_run": true}),
        )
    });
    timed("POST @replace (cat → dog)", || {
        call(
            &e,
            Method::Post,
            "/@replace",
            json!({"pattern": "cat", "replacement": "dog"}),
        )
    });
    timed("POST @replace regex (\\bdogs?\\b → cat)", || {
        call(
            &e,
            Method::Post,
            "/@replace",
            json!({"pattern": "\\bdogs?\\b", "replacement": "cat", "regex": true}),
        )
    });
    call(&e, Method::Delete, "/big", json!({}));
    timed("DELETE /@recyclebin (purge all)", || {
        call(&e, Method::Delete, "/@recyclebin", json!({}))
    });
}
