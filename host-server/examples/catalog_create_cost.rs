//! The CPU a create costs with the catalog and without it, on the real store (SQLite, WAL,
//! `--sync full` as the server runs it), through `Engine::handle` (no HTTP):
//!
//! ```text
//! cargo run --release -p host-server --example catalog_create_cost [-- --creates 2000] [--only with|without]
//! ```
//!
//! `--only with` (or `without`) runs one of the two, for counting instructions under callgrind
//! (`valgrind --tool=callgrind --toggle-collect='*Engine*handle*'`: load-independent).
//!
//! Two fresh databases under a temporary directory; in each, a folder of 1,000 pages, then
//! `--creates` POSTs of a page into it as the admin with a Bearer token. Without the catalog the
//! engine runs with its `catalog` subscriber removed (`Engine::unsubscribe`; never on a real
//! site). CPU is user + system time of this process from `/proc/self/stat` (the fsync waits are
//! not CPU); wall time is shown too. Run on a quiet machine, and compare the two figures of one
//! run.

use std::time::Instant;

use engine::{EngineOptions, Method, Request, SiteSetup};
use host_server::{open_engine, SqliteOptions, SyncMode};
use serde_json::json;

const BASE: &str = "http://localhost:8080";

fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / 100.0)
}

fn run(with_catalog: bool, creates: usize, dir: &std::path::Path) -> (f64, Option<f64>) {
    let sqlite = SqliteOptions {
        sync: SyncMode::Full,
        ..SqliteOptions::default()
    };
    let mut engine = open_engine(dir, sqlite, EngineOptions::production()).expect("open");
    if !with_catalog {
        assert!(engine.unsubscribe("catalog"));
    }
    engine
        .create_site(&SiteSetup::new("secret-password"))
        .expect("site");
    let login = engine.handle(
        Request::new(Method::Post, "/@login", BASE)
            .json(&json!({"login": "admin", "password": "secret-password"})),
    );
    let token = login.json_body()["token"]
        .as_str()
        .expect("token")
        .to_string();
    let auth = format!("Bearer {token}");
    let post = |path: &str, body: serde_json::Value| {
        let r = engine.handle(
            Request::new(Method::Post, path, BASE)
                .header("Authorization", &auth)
                .json(&body),
        );
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    };
    post(
        "/",
        json!({"@type": "Folder", "id": "posts", "title": "Posts"}),
    );
    for i in 0..1000 {
        post(
            "/posts",
            json!({"@type": "Page", "title": format!("Old {i}")}),
        );
    }
    let body = |i: usize| {
        json!({"@type": "Page", "title": format!("Bench {i}"),
               "description": "A page created by the benchmark",
               "blocks": {"b1": {"@type": "slate", "plaintext": "Hello",
                                 "value": [{"type": "p", "children": [{"text": "Hello"}]}]}},
               "blocks_layout": {"items": ["b1"]}})
    };
    let cpu0 = cpu_seconds();
    let t0 = Instant::now();
    for i in 0..creates {
        post("/posts", body(i));
    }
    let wall = t0.elapsed().as_secs_f64();
    (wall, cpu0.zip(cpu_seconds()).map(|(a, b)| b - a))
}

fn main() {
    let mut creates = 2000;
    let mut only: Option<bool> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--creates" => creates = args.next().and_then(|v| v.parse().ok()).unwrap_or(creates),
            "--only" => only = args.next().map(|v| v == "with"),
            other => panic!("unknown argument {other}"),
        }
    }
    let base = std::env::temp_dir().join(format!("catalog-create-cost-{}", std::process::id()));
    let mut figures = Vec::new();
    for with in [true, false] {
        if only.is_some_and(|o| o != with) {
            continue;
        }
        let dir = base.join(if with { "with" } else { "without" });
        let _ = std::fs::remove_dir_all(&dir);
        let (wall, cpu) = run(with, creates, &dir);
        let per = |s: f64| s * 1e6 / creates as f64;
        println!(
            "create ({} catalog, SQLite, sync full): {:.0} µs wall, {} per create ({creates} creates)",
            if with { "with" } else { "without" },
            per(wall),
            cpu.map_or("CPU unknown".into(), |c| format!("{:.0} µs CPU", per(c)))
        );
        figures.push((wall, cpu));
    }
    let _ = std::fs::remove_dir_all(&base);
    if figures.len() < 2 {
        return;
    }
    let ((w1, c1), (w0, c0)) = (figures[0], figures[1]);
    println!(
        "create cost of the catalog: wall {:+.0}%{}",
        (w1 / w0 - 1.0) * 100.0,
        c1.zip(c0).map_or(String::new(), |(a, b)| format!(
            ", CPU {:+.0}%",
            (a / b - 1.0) * 100.0
        ))
    );
}
