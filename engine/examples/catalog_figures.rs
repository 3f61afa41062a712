//! Figures of the catalog, in process (no network, no SQLite; `MemStore`):
//!
//! ```text
//! cargo run --release -p engine --example catalog_figures [-- --shape 5,5,4,100 --creates 1000 --repeat 200]
//! ```
//!
//! `--only fc|word|and|prefix|phrase|phrase2|or|not|group|queries` runs only that query (or only the queries) and no creates,
//! for profiling one of them. `PHASES=<runs>` also times `catalog::search_page` alone for the
//! folder contents query.
//!
//! - the catalog's bytes per object (keys and values under `x:`), next to all the bytes per object;
//! - the time of the catalog queries the benchmark runs over HTTP: Volto's folder contents query
//!   (`path.depth=1`, by position, `metadata_fields=_all`, batch 50) on a folder of 100, and
//!   `SearchableText` with one word, two words (AND), a prefix, phrases, `OR`, `AND NOT` and a
//!   group (p50 and p99 of `--repeat` runs);
//! - the CPU a create costs with the catalog and without it (the same engine with the `catalog`
//!   subscriber removed): `--creates` POSTs of a page into a folder already holding 1,000 pages,
//!   as the admin with a Bearer token; CPU from `/proc/self/stat` (user + system), wall time too.
//!
//! The site is shaped like the benchmark's (`--shape`, default 5,5,4,100: 10,130 objects, pages
//! with the seeder's text, every object published). The machine may be shared: compare the two
//! create figures of one run, not figures across runs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::core::clock::iso;
use engine::core::model::ContentRecord;
use engine::people::auth::password::PasswordCost;
use engine::{
    Direction, Engine, EngineOptions, FixedClock, MemStore, Method, Request, SeededEntropy,
    SiteSetup, Store,
};
use serde_json::{json, Map, Value};

const BASE: &str = "http://localhost:8080";

fn options() -> EngineOptions {
    EngineOptions {
        password_cost: PasswordCost::TESTING,
        clock: Arc::new(FixedClock::default()),
        entropy: Arc::new(SeededEntropy::new(42)),
        ..EngineOptions::production()
    }
}

fn fields(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn page_fields(i: usize) -> Map<String, Value> {
    let text = format!(
        "Page {i} of the benchmark site. It has a title, a description and two blocks of text, \
         about the size of a short article teaser."
    );
    fields(json!({
        "title": format!("Page {i}"),
        "description": format!("Description of page {i}"),
        "blocks": {"b1": {"@type": "title"},
                   "b2": {"@type": "slate", "plaintext": text,
                          "value": [{"type": "p", "children": [{"text": text}]}]}},
        "blocks_layout": {"items": ["b1", "b2"]},
        "creators": ["admin"],
        "language": "en",
    }))
}

fn record(
    ctx: &engine::runtime::context::Ctx<'_>,
    type_name: &str,
    id: &str,
    mut f: Map<String, Value>,
) -> ContentRecord {
    let ty = ctx
        .types()
        .expect("type registry")
        .get(type_name)
        .expect("known type");
    f.insert("effective".into(), json!(iso(&ctx.now())));
    let mut rec = engine::content::tree::new_record(ctx, &ty, id, "admin", f);
    rec.review_state = Some("published".into());
    rec
}

/// Build the site of `shape`, plus `/bench-posts` holding `posts` pages. Returns the objects.
fn build(engine: &Engine<MemStore>, shape: &[usize], posts: usize) -> usize {
    engine
        .with_write(|ctx| {
            let mut n = 1;
            let mut root = engine::content::tree::root(ctx)?;
            let mut level = vec![];
            let last = shape.len() - 1;
            for (depth, &count) in shape.iter().enumerate() {
                let mut next = Vec::new();
                let parents: Vec<ContentRecord> = if depth == 0 {
                    vec![root.clone()]
                } else {
                    std::mem::take(&mut level)
                };
                for mut parent in parents {
                    for i in 0..count {
                        let mut rec = if depth == last {
                            record(ctx, "Page", &format!("p{i}"), page_fields(i))
                        } else {
                            let t =
                                fields(json!({"title": format!("Folder {i}"), "language": "en"}));
                            record(ctx, "Folder", &format!("f{i}"), t)
                        };
                        engine::content::tree::insert(ctx, &mut parent, &mut rec)?;
                        n += 1;
                        if depth != last {
                            next.push(rec);
                        }
                    }
                }
                level = next;
            }
            if posts > 0 {
                root = engine::content::tree::root(ctx)?;
                let mut folder = record(
                    ctx,
                    "Folder",
                    "bench-posts",
                    fields(json!({"title": "Posts"})),
                );
                engine::content::tree::insert(ctx, &mut root, &mut folder)?;
                n += 1;
                for i in 0..posts {
                    let mut rec = record(ctx, "Page", &format!("old-{i}"), page_fields(i));
                    engine::content::tree::insert(ctx, &mut folder, &mut rec)?;
                    n += 1;
                }
            }
            Ok(n)
        })
        .expect("build the site")
}

fn token(engine: &Engine<MemStore>) -> String {
    let resp = engine.handle(
        Request::new(Method::Post, "/@login", BASE)
            .json(&json!({"login": "admin", "password": "secret-password"})),
    );
    resp.json_body()["token"]
        .as_str()
        .expect("a token")
        .to_string()
}

fn new_engine(with_catalog: bool) -> Engine<MemStore> {
    let mut e = Engine::new(MemStore::new(), options()).expect("engine");
    if !with_catalog {
        assert!(e.unsubscribe("catalog"));
    }
    e.create_site(&SiteSetup::new("secret-password"))
        .expect("site");
    e
}

/// CPU seconds (user + system) of this process so far, from `/proc/self/stat`.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn creates(engine: &Engine<MemStore>, n: usize, token: &str) -> (Duration, Option<f64>) {
    let reqs: Vec<Request> = (0..n)
        .map(|i| {
            let body = json!({"@type": "Page", "title": format!("Bench {i}"),
                "description": "A page created by the benchmark",
                "blocks": {"b1": {"@type": "slate", "plaintext": "Hello",
                                  "value": [{"type": "p", "children": [{"text": "Hello"}]}]}},
                "blocks_layout": {"items": ["b1"]}});
            Request::new(Method::Post, "/bench-posts", BASE)
                .header("Authorization", &format!("Bearer {token}"))
                .json(&body)
        })
        .collect();
    let cpu0 = cpu_seconds();
    let t0 = Instant::now();
    for r in reqs {
        let resp = engine.handle(r);
        assert_eq!(resp.status, 201, "{}", String::from_utf8_lossy(&resp.body));
    }
    let wall = t0.elapsed();
    let cpu = cpu0.zip(cpu_seconds()).map(|(a, b)| b - a);
    (wall, cpu)
}

fn query_times(
    engine: &Engine<MemStore>,
    path: &str,
    token: &str,
    repeat: usize,
) -> (f64, f64, usize) {
    let mut times = Vec::with_capacity(repeat);
    let mut total = 0;
    for _ in 0..repeat {
        let r = Request::new(Method::Get, path, BASE)
            .header("Authorization", &format!("Bearer {token}"));
        let t0 = Instant::now();
        let resp = engine.handle(r);
        times.push(t0.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
        total = resp.json_body()["items_total"].as_u64().unwrap_or(0) as usize;
    }
    times.sort_by(f64::total_cmp);
    let p = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    (p(0.5), p(0.99), total)
}

fn main() {
    let mut shape = vec![5, 5, 4, 100];
    let mut n_creates = 1000;
    let mut repeat = 200;
    let mut only: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().unwrap_or_default();
        match a.as_str() {
            "--shape" => shape = v.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
            "--creates" => n_creates = v.parse().unwrap_or(n_creates),
            "--repeat" => repeat = v.parse().unwrap_or(repeat),
            "--only" => only = Some(v),
            other => panic!("unknown argument {other}"),
        }
    }
    // The site, with the catalog: size and queries.
    let e = new_engine(true);
    let t0 = Instant::now();
    let objects = build(&e, &shape, 0);
    println!(
        "site: shape {shape:?}, {objects} objects, built and indexed in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let txn = e.store().begin_read().expect("read");
    let (mut all, mut cat, mut keys) = (0usize, 0usize, 0usize);
    for (k, v) in txn
        .scan(b"", &[0xff; 4], Direction::Forward, usize::MAX)
        .expect("scan")
    {
        all += k.len() + v.len();
        if k.starts_with(b"x:") {
            cat += k.len() + v.len();
            keys += 1;
        }
    }
    drop(txn);
    println!(
        "bytes per object: catalog {:.0} ({:.1} keys per object), everything {:.0}",
        cat as f64 / objects as f64,
        keys as f64 / objects as f64,
        all as f64 / objects as f64
    );
    let bearer = token(&e);
    let folder: String = shape[..shape.len() - 1].iter().map(|_| "/f0").collect();
    for (key, name, path) in [
        ("fc", "folder contents (depth 1, by position, _all, batch 50)", format!("{folder}/@search?path.depth=1&sort_on=getObjPositionInParent&metadata_fields=_all&show_inactive=true&b_size=50")),
        ("word", "SearchableText one word (42)", "/@search?SearchableText=42".to_string()),
        ("and", "SearchableText two words AND (page 42)", "/@search?SearchableText=page%2042".to_string()),
        ("prefix", "SearchableText prefix (4*)", "/@search?SearchableText=4*".to_string()),
        ("phrase", "SearchableText phrase (\"page 42\")", "/@search?SearchableText=%22page%2042%22".to_string()),
        ("phrase2", "SearchableText phrase of frequent words (\"of the benchmark\")", "/@search?SearchableText=%22of%20the%20benchmark%22".to_string()),
        ("or", "SearchableText OR (42 OR 43)", "/@search?SearchableText=42%20OR%2043".to_string()),
        ("not", "SearchableText AND NOT (42 AND NOT description)", "/@search?SearchableText=42%20AND%20NOT%20description".to_string()),
        ("group", "SearchableText group ((42 OR 43) AND page)", "/@search?SearchableText=%2842%20OR%2043%29%20AND%20page".to_string()),
    ] {
        if only.as_deref().is_some_and(|o| o != key && o != "queries") {
            continue;
        }
        let (p50, p99, total) = query_times(&e, &path, &bearer, repeat);
        println!("{name}: p50 {p50:.2} ms, p99 {p99:.2} ms ({total} results)");
    }
    if std::env::var("PHASES").is_ok() {
        phase_times(&e, &folder);
    }
    drop(e);
    if only.is_some() {
        return;
    }

    // Create CPU with and without the catalog, on the same small site.
    let mut figures = Vec::new();
    for with in [true, false] {
        let e = new_engine(with);
        build(&e, &[1], 1000);
        let bearer = token(&e);
        let (wall, cpu) = creates(&e, n_creates, &bearer);
        let per = |d: f64| d * 1e6 / n_creates as f64;
        println!(
            "create ({} catalog): {:.0} µs wall, {} per create ({n_creates} creates)",
            if with { "with" } else { "without" },
            per(wall.as_secs_f64()),
            cpu.map_or("CPU unknown".into(), |c| format!("{:.0} µs CPU", per(c)))
        );
        figures.push((wall.as_secs_f64(), cpu));
    }
    let (w1, c1) = figures[0];
    let (w0, c0) = figures[1];
    println!(
        "create cost of the catalog: wall {:+.0}%{}",
        (w1 / w0 - 1.0) * 100.0,
        c1.zip(c0).map_or(String::new(), |(a, b)| format!(
            ", CPU {:+.0}%",
            (a / b - 1.0) * 100.0
        ))
    );
}

/// The time of `catalog::search_page` alone for the folder contents query (`PHASES=<runs>`).
fn phase_times(e: &Engine<MemStore>, folder: &str) {
    e.with_write(|ctx| {
        ctx.principal = engine::core::security::Principal::User(engine::core::security::User {
            login: "admin".into(),
            fullname: String::new(),
            roles: vec!["Manager".into()],
            groups: Vec::new(),
        });
        let q = engine::catalog::Query {
            paths: vec![folder.to_string()],
            depth: Some(1),
            sort: vec![engine::catalog::Sort {
                index: engine::catalog::Index::Position,
                reverse: false,
            }],
            show_inactive: true,
            ..Default::default()
        };
        let n: usize = std::env::var("PHASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3000);
        let t0 = Instant::now();
        for _ in 0..n {
            let (p, t) = engine::catalog::search_page(ctx, &q, 0, 50)?;
            assert_eq!((p.len(), t), (50, 100));
        }
        println!(
            "search_page alone: {:.1} µs",
            t0.elapsed().as_secs_f64() * 1e6 / n as f64
        );
        Ok(())
    })
    .expect("phase");
}
