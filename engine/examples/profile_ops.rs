//! Runs one engine operation many times in process, for instruction-count profiles of the request
//! paths the benchmark measures (no network, no SQLite):
//!
//! ```text
//! cargo build --release -p engine --example profile_ops
//! valgrind --tool=callgrind --dump-instr=no --collect-atstart=no --toggle-collect='*run_ops*' \
//!     target/release/examples/profile_ops create 200
//! ```
//!
//! Operations: `create` (POST a Page into `/bench-posts`, which already holds 1,000 pages, as the
//! admin with a Bearer token), `folder` and `folder100` (anonymous GET of a folder of 100 pages,
//! default batch and `b_size=100`), `nav` (anonymous `@navigation?expand.navigation.depth=3`),
//! `page` (anonymous GET of the page `/f0/f0/f0/p0`), `fc` (Volto's folder contents `@search`
//! of that folder, `metadata_fields=_all`, `b_size=50`, as the admin with a Bearer token).
//! `dump DIR` writes the answers of listing and search URLs for anonymous, a member and the
//! admin into DIR (compare two builds with `diff -r`).
//! The site is shaped like the benchmark's: 5 folders × 5 subfolders × 4 subsubfolders × 100
//! pages, every object published. Options are production ones (no response cache) with cheap
//! password hashing, a fixed clock and seeded ids. Only the requests are inside `run_ops`; the setup is outside it.

use engine::core::clock::iso;
use engine::core::model::ContentRecord;
use engine::people::auth::password::PasswordCost;
use engine::{
    Engine, EngineOptions, FixedClock, MemStore, Method, Request, SeededEntropy, SiteSetup,
};
use serde_json::{json, Map, Value};
use std::sync::Arc;

const BASE: &str = "http://localhost:8080";
const SHAPE: [usize; 4] = [5, 5, 4, 100];
const BENCH_POSTS: usize = 1000;

fn page_fields(title: &str) -> Map<String, Value> {
    let v = json!({
        "title": title,
        "description": "A page created by the benchmark",
        "blocks": {"b1": {"@type": "slate", "plaintext": "Hello",
                          "value": [{"type": "p", "children": [{"text": "Hello"}]}]}},
        "blocks_layout": {"items": ["b1"]},
        "creators": ["admin"],
        "language": "en",
    });
    v.as_object().cloned().unwrap_or_default()
}

fn folder_fields(title: &str) -> Map<String, Value> {
    let v = json!({"title": title, "creators": ["admin"], "language": "en"});
    v.as_object().cloned().unwrap_or_default()
}

/// A published record of `type_name` as the API would have stored it.
fn record(
    ctx: &engine::runtime::context::Ctx<'_>,
    type_name: &str,
    id: &str,
    mut fields: Map<String, Value>,
) -> ContentRecord {
    let ty = ctx
        .types()
        .expect("type registry")
        .get(type_name)
        .expect("known type");
    fields.insert("effective".into(), json!(iso(&ctx.now())));
    let mut rec = engine::content::tree::new_record(ctx, &ty, id, "admin", fields);
    rec.review_state = Some("published".into());
    rec
}

fn build(engine: &Engine<MemStore>, bench_posts: usize) {
    engine
        .with_write(|ctx| {
            let mut root = engine::content::tree::root(ctx)?;
            let mut level = Vec::new();
            for i in 0..SHAPE[0] {
                let id = format!("f{i}");
                let mut rec = record(ctx, "Folder", &id, folder_fields(&format!("Folder {id}")));
                engine::content::tree::insert(ctx, &mut root, &mut rec)?;
                level.push(rec);
            }
            for (depth, &n) in SHAPE.iter().enumerate().skip(1) {
                let last = depth == SHAPE.len() - 1;
                let mut next = Vec::new();
                for parent in level.iter_mut() {
                    for i in 0..n {
                        let mut rec = if last {
                            let id = format!("p{i}");
                            record(ctx, "Page", &id, page_fields(&format!("Page {id}")))
                        } else {
                            let id = format!("f{i}");
                            record(ctx, "Folder", &id, folder_fields(&format!("Folder {id}")))
                        };
                        engine::content::tree::insert(ctx, parent, &mut rec)?;
                        if !last {
                            next.push(rec);
                        }
                    }
                }
                level = next;
            }
            if bench_posts == 0 {
                return Ok(());
            }
            let mut posts = record(ctx, "Folder", "bench-posts", folder_fields("Bench posts"));
            engine::content::tree::insert(ctx, &mut root, &mut posts)?;
            for i in 0..bench_posts {
                let id = format!("bench-old-{i}");
                let mut rec = record(ctx, "Page", &id, page_fields(&format!("Bench old {i}")));
                engine::content::tree::insert(ctx, &mut posts, &mut rec)?;
            }
            Ok(())
        })
        .expect("build the site");
}

fn token(engine: &Engine<MemStore>) -> String {
    let resp = engine.handle(
        Request::new(Method::Post, "/@login", BASE)
            .json(&json!({"login": "admin", "password": "secret-password"})),
    );
    assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
    resp.json_body()["token"]
        .as_str()
        .expect("a token")
        .to_string()
}

/// The requests of `op`, built before the measured loop.
fn requests(op: &str, range: std::ops::Range<usize>, token: &str) -> Vec<(Request, u16)> {
    range
        .map(|i| match op {
            "create" => {
                let body = format!(
                    r#"{{"@type": "Page", "title": "Bench 1 t1 n{i}", "description": "A page created by the benchmark", "blocks": {{"b1": {{"@type": "slate", "plaintext": "Hello", "value": [{{"type": "p", "children": [{{"text": "Hello"}}]}}]}}}}, "blocks_layout": {{"items": ["b1"]}}}}"#
                );
                let mut r = Request::new(Method::Post, "/bench-posts", BASE)
                    .header("Content-Type", "application/json")
                    .header("Authorization", &format!("Bearer {token}"));
                r.body = body.into_bytes();
                (r, 201)
            }
            "folder" => (Request::new(Method::Get, "/f0/f0/f0", BASE), 200),
            "folder100" => (Request::new(Method::Get, "/f0/f0/f0?b_size=100", BASE), 200),
            "nav" => (
                Request::new(Method::Get, "/@navigation?expand.navigation.depth=3", BASE),
                200,
            ),
            "page" => page_request(),
            "fc" => (folder_contents(token), 200),
            other => panic!(
                "unknown operation {other:?} (create, folder, folder100, nav, page, fc)"
            ),
        })
        .collect()
}

/// Volto's folder contents query of a folder of 100 pages, as the admin with a Bearer token.
fn folder_contents(token: &str) -> Request {
    Request::new(Method::Get, FC_PATH, BASE).header("Authorization", &format!("Bearer {token}"))
}

const FC_PATH: &str = "/f0/f0/f0/@search?path.depth=1&sort_on=getObjPositionInParent\
                       &metadata_fields=_all&show_inactive=true&b_size=50";

/// `dump DIR`: the site plus a member, private and retracted items and a local role in
/// `/f0/f0/f0`, then the answers of the listing and search URLs below for anonymous, the member
/// and the admin, one file each in DIR (to compare two builds' answers byte for byte).
fn dump(engine: &Engine<MemStore>, dir: &str, admin: &str) {
    let send = |method: Method, path: &str, body: Option<Value>, tok: Option<&str>| {
        let mut r = Request::new(method, path, BASE);
        if let Some(t) = tok {
            r = r.header("Authorization", &format!("Bearer {t}"));
        }
        if let Some(b) = body {
            r = r.json(&b);
        }
        engine.handle(r)
    };
    let ok = |resp: engine::Response| {
        assert!(resp.status < 300, "{}", String::from_utf8_lossy(&resp.body));
        resp
    };
    ok(send(
        Method::Post,
        "/@users",
        Some(json!({"username": "member", "password": "long-password"})),
        Some(admin),
    ));
    let member = {
        let resp = ok(send(
            Method::Post,
            "/@login",
            Some(json!({"login": "member", "password": "long-password"})),
            None,
        ));
        resp.json_body()["token"]
            .as_str()
            .expect("a token")
            .to_string()
    };
    for (id, title) in [("draft-a", "Draft A"), ("draft-b", "Draft B")] {
        ok(send(
            Method::Post,
            "/f0/f0/f0",
            Some(json!({"@type": "Page", "id": id, "title": title, "subjects": ["x"]})),
            Some(admin),
        ));
    }
    ok(send(
        Method::Post,
        "/f0/f0/f0",
        Some(json!({"@type": "Folder", "id": "sub", "title": "Sub"})),
        Some(admin),
    ));
    for p in ["p3", "p40"] {
        ok(send(
            Method::Post,
            &format!("/f0/f0/f0/{p}/@workflow/retract"),
            None,
            Some(admin),
        ));
    }
    engine
        .with_write(|ctx| {
            let mut d = engine::content::tree::at_path(ctx, "/f0/f0/f0/draft-b")?.expect("draft-b");
            d.local_roles.insert("member".into(), vec!["Reader".into()]);
            engine::content::tree::save(ctx, &mut d, engine::content::tree::Change::LocalRoles)
        })
        .expect("grant");
    let urls = [
        "/f0/f0/f0",
        "/f0/f0/f0?b_size=100",
        "/f0/f0/f0?b_start=90",
        "/f0/f0/f0?b_start=25&b_size=10",
        "/f0/f0/f0?fullobjects=1",
        FC_PATH,
        "/f0/f0/f0/@search?path.depth=1&sort_on=getObjPositionInParent&metadata_fields=_all\
         &show_inactive=true&b_size=50&b_start=50",
        "/f0/f0/f0/@search?path.depth=1&sort_on=getObjPositionInParent&metadata_fields=_all&b_size=50",
        "/f0/f0/f0/@search?path.depth=1&sort_on=sortable_title&sort_order=reverse&metadata_fields=UID",
        "/f0/f0/f0/@search?path.depth=1&metadata_fields=_all&fullobjects=1&b_size=5",
        "/f0/f0/f0/@search?path.depth=1",
        "/f0/f0/@search?path.depth=2&sort_on=getObjPositionInParent&b_size=20&metadata_fields=_all",
    ];
    std::fs::create_dir_all(dir).expect("dump dir");
    for (who, tok) in [
        ("anon", None),
        ("member", Some(member.as_str())),
        ("admin", Some(admin)),
    ] {
        for (i, url) in urls.iter().enumerate() {
            let resp = send(Method::Get, url, None, tok);
            let mut out = format!("{} {url}\n", resp.status).into_bytes();
            out.extend_from_slice(&resp.body);
            std::fs::write(format!("{dir}/{who}-{i:02}.txt"), out).expect("write");
        }
    }
    println!("dumped {} answers into {dir}", urls.len() * 3);
}

/// `page`: the anonymous GET of one page of the shape (uncached: production options keep no
/// response cache).
fn page_request() -> (Request, u16) {
    (Request::new(Method::Get, "/f0/f0/f0/p0", BASE), 200)
}

/// The measured part: answer every request, returning the bytes answered and a checksum of the
/// bodies (FNV-1a; equal across builds for the GET operations, whose answers are deterministic).
#[inline(never)]
fn run_ops(engine: &Engine<MemStore>, reqs: Vec<(Request, u16)>) -> (usize, u64) {
    let mut bytes = 0;
    let mut sum: u64 = 0xcbf29ce484222325;
    for (req, status) in reqs {
        let resp = engine.handle(req);
        assert_eq!(
            resp.status,
            status,
            "{}",
            String::from_utf8_lossy(&resp.body)
        );
        bytes += resp.body.len();
        for b in &resp.body {
            sum = (sum ^ u64::from(*b)).wrapping_mul(0x100000001b3);
        }
    }
    (bytes, sum)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let op = args.next().unwrap_or_else(|| "create".into());
    let n: usize = if op == "dump" {
        0
    } else {
        args.next().and_then(|s| s.parse().ok()).unwrap_or(100)
    };
    // Production options, but cheap password hashing and a fixed clock and seeded ids, so that
    // the answers (and their checksum) are the same from run to run and build to build.
    let options = EngineOptions {
        password_cost: PasswordCost::TESTING,
        clock: Arc::new(FixedClock::default()),
        entropy: Arc::new(SeededEntropy::new(42)),
        ..EngineOptions::production()
    };
    let engine = Engine::new(MemStore::new(), options).expect("engine");
    engine
        .create_site(&SiteSetup::new("secret-password"))
        .expect("create site");
    // `/bench-posts` (a top-level folder) only where it is written to, so that the navigation
    // shows the 130 folders of the shape alone.
    build(&engine, if op == "create" { BENCH_POSTS } else { 0 });
    let token = token(&engine);
    if op == "dump" {
        let dir = args.next().unwrap_or_else(|| "/tmp/profile-dump".into());
        dump(&engine, &dir, &token);
        return;
    }
    // One warm-up request outside the measured part.
    run_ops(&engine, requests(op.as_str(), n..n + 1, &token));
    let reqs = requests(op.as_str(), 0..n, &token);
    let t = std::time::Instant::now();
    let (bytes, sum) = run_ops(&engine, reqs);
    let elapsed = t.elapsed();
    println!(
        "{op}: {n} requests, {bytes} bytes answered (checksum {sum:016x}), {:.1} µs per request \
         (wall, indicative)",
        elapsed.as_secs_f64() * 1e6 / n.max(1) as f64
    );
}
