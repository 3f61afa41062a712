//! A site generator over a read-counting store, shared by the navigation scale test and the
//! `navigation_figures` example.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use engine::core::model::ContentRecord;
use engine::{
    Direction, Engine, EngineOptions, MemStore, Method, ReadTxn, Request, SiteSetup, Store,
    StoreError, WriteTxn,
};
use serde_json::{json, Map, Value};

pub const BASE: &str = "http://localhost:8080";

/// Reads made through a [`Counting`] store.
#[derive(Default)]
pub struct Counts {
    pub gets: AtomicUsize,
    pub scans: AtomicUsize,
    pub scanned_rows: AtomicUsize,
}

impl Counts {
    pub fn reset(&self) {
        self.gets.store(0, Ordering::SeqCst);
        self.scans.store(0, Ordering::SeqCst);
        self.scanned_rows.store(0, Ordering::SeqCst);
    }
    pub fn get(&self) -> (usize, usize, usize) {
        (
            self.gets.load(Ordering::SeqCst),
            self.scans.load(Ordering::SeqCst),
            self.scanned_rows.load(Ordering::SeqCst),
        )
    }
}

/// A [`MemStore`] that counts the reads of its read transactions.
#[derive(Clone)]
pub struct Counting {
    pub inner: MemStore,
    pub counts: Arc<Counts>,
}

pub struct CountingRead<'a> {
    pub inner: Box<dyn ReadTxn + 'a>,
    pub counts: Arc<Counts>,
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
pub struct Shape {
    pub fanout: Vec<usize>,
}

/// What was generated, for the expectations.
pub struct Generated {
    pub objects: usize,
}

pub fn record(
    ctx: &engine::runtime::context::Ctx<'_>,
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
        block_local_roles: false,
        fields: f,
        rev: 0,
    }
}

/// Folder `i` of a level is private when `i % 10 == 9` and excluded from navigation when
/// `i % 10 == 5`; everything else is published and shown.
pub fn folder_fields(i: usize) -> (Option<&'static str>, Value) {
    let state = if i % 10 == 9 {
        Some("private")
    } else {
        Some("published")
    };
    (state, json!({"exclude_from_nav": i % 10 == 5}))
}

pub fn generate(engine: &Engine<Counting>, shape: &Shape) -> Generated {
    engine
        .with_write(|ctx| {
            let mut objects = 0;
            let mut level: Vec<ContentRecord> = vec![engine::content::tree::root(ctx)?];
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
                        engine::content::tree::insert(ctx, parent, &mut rec)?;
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

pub fn site(shape: &Shape) -> (Engine<Counting>, Arc<Counts>, Generated) {
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

pub fn count_items(items: &[Value]) -> usize {
    items
        .iter()
        .map(|i| 1 + count_items(i["items"].as_array().map(Vec::as_slice).unwrap_or(&[])))
        .sum()
}

/// Items read but not returned by a depth-3 navigation of the generated site: at each level the
/// hidden (excluded or, for anonymous, private) folders among the children of each shown folder.
pub fn filtered(shape: &Shape, anonymous: bool, depth: usize) -> usize {
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

pub struct Measured {
    pub returned: usize,
    pub gets: usize,
    pub scans: usize,
    pub rows: usize,
    pub micros: u128,
}

pub fn navigation(
    engine: &Engine<Counting>,
    counts: &Counts,
    auth: bool,
    depth: usize,
) -> Measured {
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

/// Reads a request makes besides the tree walk: the caller's user record and its groups (its
/// entry in the member index and the AuthenticatedUsers group: two reads for a user in no
/// group), the site and language settings, the context and navigation root by path, the type
/// registry's version (which keys the cached registry). (The site profile, `Ctx::profile`, is
/// read once per engine, not per request.)
pub const OVERHEAD: usize = 11;

pub fn check(shape: &Shape, engine: &Engine<Counting>, counts: &Counts, auth: bool) -> Measured {
    let m = navigation(engine, counts, auth, 3);
    let filtered = filtered(shape, !auth, 3);
    let read_budget = m.returned + filtered + OVERHEAD;
    assert!(
        m.gets <= read_budget,
        "navigation read {} records for {} items returned + {filtered} filtered",
        m.gets,
        m.returned
    );
    // Each child is two index rows: its `c:` key and the listing copy of its entry (`x:c:`).
    assert!(
        m.rows <= 2 * (m.returned + filtered) + OVERHEAD,
        "navigation scanned {} index rows for {} items returned + {filtered} filtered",
        m.rows,
        m.returned
    );
    // Two scans per folder descended into (the root and the shown folders above the last
    // level: its children and their entries), plus the caller's own lookups.
    assert!(m.scans <= 2 * (1 + m.returned) + OVERHEAD);
    m
}

pub fn expected_returned(shape: &Shape, anonymous: bool, depth: usize) -> usize {
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
