//! `@navigation` and `@breadcrumbs` read only what they return: a store wrapper counts every read
//! while the endpoints answer on a large generated site.
//!
//! `cargo test -p engine --test navigation_scale` checks the counts on a site of about 20,000
//! objects; `cargo test -p engine --release --test navigation_scale -- --ignored --nocapture`
//! prints the counts and timings on 100,000 objects (figures only, no timed assertions).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use engine::model::ContentRecord;
use engine::{
    Direction, Engine, EngineOptions, MemStore, Method, ReadTxn, Request, SiteSetup, Store,
    StoreError, WriteTxn,
};
use serde_json::{json, Map, Value};

const BASE: &str = "http://localhost:8080";

/// Reads made through a [`Counting`] store.
#[derive(Default)]
struct Counts {
    gets: AtomicUsize,
    scans: AtomicUsize,
    scanned_rows: AtomicUsize,
}

impl Counts {
    fn reset(&self) {
        self.gets.store(0, Ordering::SeqCst);
        self.scans.store(0, Ordering::SeqCst);
        self.scanned_rows.store(0, Ordering::SeqCst);
    }
    fn get(&self) -> (usize, usize, usize) {
        (
            self.gets.load(Ordering::SeqCst),
            self.scans.load(Ordering::SeqCst),
            self.scanned_rows.load(Ordering::SeqCst),
        )
    }
}

/// A [`MemStore`] that counts the reads of its read transactions.
#[derive(Clone)]
struct Counting {
    inner: MemStore,
    counts: Arc<Counts>,
}

struct CountingRead<'a> {
    inner: Box<dyn ReadTxn + 'a>,
    counts: Arc<Counts>,
}

impl ReadTxn for CountingRead<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.counts.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get(key)
    }
    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        dir: Direction,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, StoreError> {
        let rows = self.inner.scan(start, end, dir, limit)?;
        self.counts.scans.fetch_add(1, Ordering::SeqCst);
        self.counts
            .scanned_rows
            .fetch_add(rows.len(), Ordering::SeqCst);
        Ok(rows)
    }
}

impl Store for Counting {
    fn begin_read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        Ok(Box::new(CountingRead {
            inner: self.inner.begin_read()?,
            counts: self.counts.clone(),
        }))
    }
    fn begin_write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        self.inner.begin_write()
    }
}

/// The shape of the generated site: `fanout[i]` children per folder at level `i + 1`; the last
/// level holds pages, the others folders.
struct Shape {
    fanout: Vec<usize>,
}

/// What was generated, for the expectations.
struct Generated {
    objects: usize,
}

fn record(
    ctx: &engine::context::Ctx<'_>,
    type_name: &str,
    id: &str,
    fields: Value,
) -> ContentRecord {
    let now = ctx.now();
    let mut f: Map<String, Value> = fields.as_object().cloned().unwrap_or_default();
    f.insert("title".into(), json!(format!("Title {id}")));
    f.insert("language".into(), json!("en"));
    ContentRecord {
        uid: ctx.new_uid(),
        id: id.to_string(),
        path: String::new(),
        parent: None,
        type_name: type_name.into(),
        pos: 0,
        created: now,
        modified: now,
        owner: "admin".into(),
        review_state: Some("published".into()),
        child_count: 0,
        next_pos: 0,
        local_roles: Default::default(),
        fields: f,
    }
}

/// Folder `i` of a level is private when `i % 10 == 9` and excluded from navigation when
/// `i % 10 == 5`; everything else is published and shown.
fn folder_fields(i: usize) -> (Option<&'static str>, Value) {
    let state = if i % 10 == 9 {
        Some("private")
    } else {
        Some("published")
    };
    (state, json!({"exclude_from_nav": i % 10 == 5}))
}

fn generate(engine: &Engine<Counting>, shape: &Shape) -> Generated {
    engine
        .with_write(|ctx| {
            let mut objects = 0;
            let mut level: Vec<ContentRecord> = vec![engine::tree::root(ctx)?];
            let last = shape.fanout.len() - 1;
            for (depth, &n) in shape.fanout.iter().enumerate() {
                let mut next = Vec::new();
                for parent in level.iter_mut() {
                    for i in 0..n {
                        let mut rec = if depth == last {
                            record(ctx, "Page", &format!("page-{i}"), json!({}))
                        } else {
                            let (state, fields) = folder_fields(i);
                            let mut r = record(ctx, "Folder", &format!("folder-{i}"), fields);
                            r.review_state = state.map(str::to_string);
                            r
                        };
                        engine::tree::insert(ctx, parent, &mut rec)?;
                        objects += 1;
                        if depth != last {
                            next.push(rec);
                        }
                    }
                }
                level = next;
            }
            Ok(Generated { objects })
        })
        .expect("generate the site")
}

fn site(shape: &Shape) -> (Engine<Counting>, Arc<Counts>, Generated) {
    let counts = Arc::new(Counts::default());
    let store = Counting {
        inner: MemStore::new(),
        counts: counts.clone(),
    };
    let engine = Engine::new(store, EngineOptions::for_tests()).expect("engine");
    engine
        .create_site(&SiteSetup::new("secret"))
        .expect("create site");
    let generated = generate(&engine, shape);
    (engine, counts, generated)
}

fn count_items(items: &[Value]) -> usize {
    items
        .iter()
        .map(|i| 1 + count_items(i["items"].as_array().map(Vec::as_slice).unwrap_or(&[])))
        .sum()
}

/// Items read but not returned by a depth-3 navigation of the generated site: at each level the
/// hidden (excluded or, for anonymous, private) folders among the children of each shown folder.
fn filtered(shape: &Shape, anonymous: bool, depth: usize) -> usize {
    let hidden = |n: usize| {
        (0..n)
            .filter(|i| i % 10 == 5 || (anonymous && i % 10 == 9))
            .count()
    };
    let mut shown_parents = 1;
    let mut total = 0;
    for &n in shape.fanout.iter().take(depth) {
        total += shown_parents * hidden(n);
        shown_parents *= n - hidden(n);
    }
    total
}

struct Measured {
    returned: usize,
    gets: usize,
    scans: usize,
    rows: usize,
    micros: u128,
}

fn navigation(engine: &Engine<Counting>, counts: &Counts, auth: bool, depth: usize) -> Measured {
    let mut req = Request::new(
        Method::Get,
        &format!("/@navigation?expand.navigation.depth={depth}"),
        BASE,
    );
    if auth {
        req = req.header("Authorization", "Basic YWRtaW46c2VjcmV0");
        // Warm the verified-credentials cache so the measured request reads what navigation reads.
        engine.handle(req.clone());
    }
    counts.reset();
    let t = std::time::Instant::now();
    let resp = engine.handle(req);
    let micros = t.elapsed().as_micros();
    let (gets, scans, rows) = counts.get();
    assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
    let body = resp.json_body();
    let items = body["items"].as_array().expect("items");
    // The Home tab is not read from the tree.
    let returned = count_items(items) - 1;
    Measured {
        returned,
        gets,
        scans,
        rows,
        micros,
    }
}

/// Reads a request makes besides the tree walk: the caller's user record, the site and language
/// settings, the context and navigation root by path.
const OVERHEAD: usize = 8;

fn check(shape: &Shape, engine: &Engine<Counting>, counts: &Counts, auth: bool) -> Measured {
    let m = navigation(engine, counts, auth, 3);
    let filtered = filtered(shape, !auth, 3);
    let read_budget = m.returned + filtered + OVERHEAD;
    assert!(
        m.gets <= read_budget,
        "navigation read {} records for {} items returned + {filtered} filtered",
        m.gets,
        m.returned
    );
    assert!(
        m.rows <= m.returned + filtered + OVERHEAD,
        "navigation scanned {} index rows for {} items returned + {filtered} filtered",
        m.rows,
        m.returned
    );
    // One children scan per folder descended into (the root and the shown folders above the last
    // level), plus the caller's own lookups.
    assert!(m.scans <= 1 + m.returned + OVERHEAD);
    m
}

fn expected_returned(shape: &Shape, anonymous: bool, depth: usize) -> usize {
    let shown = |n: usize| {
        (0..n)
            .filter(|i| !(i % 10 == 5 || (anonymous && i % 10 == 9)))
            .count()
    };
    let mut parents = 1;
    let mut total = 0;
    for &n in shape.fanout.iter().take(depth) {
        parents *= shown(n);
        total += parents;
    }
    total
}

#[test]
fn navigation_depth_3_reads_only_what_it_returns() {
    let shape = Shape {
        fanout: vec![10, 10, 10, 20],
    };
    let (engine, counts, generated) = site(&shape);
    assert!(generated.objects > 20_000);
    for auth in [true, false] {
        let m = check(&shape, &engine, &counts, auth);
        assert_eq!(m.returned, expected_returned(&shape, !auth, 3));
        // Nothing of the 20,000 pages below level 3 is read.
        assert!(m.gets < generated.objects / 10);
    }
}

#[test]
fn breadcrumbs_read_only_the_ancestors() {
    let shape = Shape {
        fanout: vec![10, 10, 10, 20],
    };
    let (engine, counts, _) = site(&shape);
    let req = Request::new(
        Method::Get,
        "/folder-1/folder-2/folder-3/page-7/@breadcrumbs",
        BASE,
    )
    .header("Authorization", "Basic YWRtaW46c2VjcmV0");
    engine.handle(req.clone());
    counts.reset();
    let resp = engine.handle(req);
    assert_eq!(resp.status, 200);
    let body = resp.json_body();
    assert_eq!(body["items"].as_array().map(Vec::len), Some(4));
    assert_eq!(body["root"], BASE);
    let (gets, _, rows) = counts.get();
    // The context and its 4 ancestors are read by path (2 reads each) twice: once for the View
    // check on the context, once for the breadcrumbs; plus the user and the settings.
    assert!(
        gets <= 2 * 2 * 5 + OVERHEAD,
        "breadcrumbs made {gets} reads"
    );
    assert!(rows <= OVERHEAD, "breadcrumbs scanned {rows} rows");
}

/// Figures on 100,000 objects (run in release with `--ignored --nocapture`).
#[test]
#[ignore]
fn navigation_on_100k_objects_prints_figures() {
    let shape = Shape {
        fanout: vec![10, 10, 10, 99],
    };
    let t = std::time::Instant::now();
    let (engine, counts, generated) = site(&shape);
    println!(
        "generated {} objects in {:.2?}",
        generated.objects,
        t.elapsed()
    );
    for auth in [true, false] {
        for depth in [1, 2, 3] {
            let m = navigation(&engine, &counts, auth, depth);
            println!(
                "@navigation depth {depth} as {:9}: {:5} items returned, {:5} gets, {:4} scans, \
                 {:5} index rows, {:>8.3} ms",
                if auth { "admin" } else { "anonymous" },
                m.returned,
                m.gets,
                m.scans,
                m.rows,
                m.micros as f64 / 1000.0
            );
        }
        check(&shape, &engine, &counts, auth);
    }
}
