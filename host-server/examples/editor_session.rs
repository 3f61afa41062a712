//! "An editor's session" as a benchmark row: a fixed sequence of 50 requests, the ones Volto
//! sends while an editor logs in, opens the site, goes through a folder's contents and edits,
//! locks, publishes or retracts four pages in it, looks at their history, and logs out. Several
//! editors (threads, each with its own keep-alive connection) run sessions back to back for a
//! while; the figure is sessions per second, with the p50/p99 time of a session and the errors.
//!
//! ```text
//! cargo build --release -p host-server --example editor_session
//! target/release/examples/editor_session --url http://127.0.0.1:8080 --password PASSWORD \
//!     [--editors 8] [--seconds 10] [--shape 5,5,4,100]
//! ```
//!
//! The site must have the seeder's shape (`examples/seed.rs`): the bottom folders are
//! `/f<i>/f<j>/f<k>` with pages `p0`, `p1`, ... Editor `e` works in bottom folder
//! `e, e + editors, e + 2 * editors, ...` in turn, so two editors never edit the same page at the
//! same time. Every request must answer 2xx; anything else counts as an error (and is printed
//! once per kind).
//!
//! The 50 requests:
//! 1. `POST /@login`, `GET /@site`, `GET /?expand=actions,breadcrumbs,navigation,types,workflow`
//!    (Volto's boot request), `GET /@types`, `GET /@querystring`, the folder with the same expand,
//!    the folder contents query (`@search?path.depth=1&sort_on=getObjPositionInParent&...`): 7;
//! 2. for each of four pages: the page with expand, `GET /@types/Page` (the edit form),
//!    `POST @lock`, `PATCH` (title and blocks), `DELETE @lock`, the page again, `POST
//!    @workflow/publish` or `retract` (whichever applies), `GET @history`, `GET @workflow`, the
//!    folder contents again: 40;
//! 3. `GET /@navigation?expand.navigation.depth=3`, `GET <page>/@breadcrumbs`, `POST /@logout`: 3.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const EXPAND: &str = "expand=actions,breadcrumbs,navigation,types,workflow";
const CONTENTS: &str = "@search?path.depth=1&sort_on=getObjPositionInParent&metadata_fields=_all&show_inactive=true&b_size=50";

struct Args {
    url: String,
    password: String,
    editors: usize,
    seconds: u64,
    shape: Vec<usize>,
}

fn args() -> Args {
    let mut a = Args {
        url: "http://127.0.0.1:8080".into(),
        password: std::env::var("ADMIN_PASSWORD").unwrap_or_default(),
        editors: 8,
        seconds: 10,
        shape: vec![5, 5, 4, 100],
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => a.url = value.trim_end_matches('/').to_string(),
            "--password" => a.password = value,
            "--editors" => a.editors = value.parse().expect("--editors N"),
            "--seconds" => a.seconds = value.parse().expect("--seconds N"),
            "--shape" => {
                a.shape = value
                    .split(',')
                    .map(|n| n.parse().expect("--shape a,b,c,n"))
                    .collect()
            }
            other => panic!("unknown flag {other}"),
        }
    }
    a
}

/// The path of bottom folder number `n` of a site of `shape` (all levels but the last).
fn bottom_folder(shape: &[usize], mut n: usize) -> String {
    let levels = &shape[..shape.len() - 1];
    let total: usize = levels.iter().product();
    n %= total;
    let mut parts = Vec::new();
    for &width in levels.iter().rev() {
        parts.push(format!("f{}", n % width));
        n /= width;
    }
    parts.reverse();
    format!("/{}", parts.join("/"))
}

/// One editor's connection and what went wrong.
struct Editor {
    agent: ureq::Agent,
    base: String,
    token: String,
    errors: BTreeMap<String, usize>,
    requests: usize,
    /// The token of the lock the editor holds, sent as `Lock-Token` (as Volto does).
    lock: String,
}

impl Editor {
    fn send(&mut self, method: &str, path: &str, body: Option<Value>) -> Option<Value> {
        self.requests += 1;
        let url = format!("{}{}", self.base, path);
        let auth = format!("Bearer {}", self.token);
        let result = match (method, body) {
            ("GET", _) => self
                .agent
                .get(&url)
                .header("Accept", "application/json")
                .header("Authorization", &auth)
                .call(),
            ("DELETE", _) => self
                .agent
                .delete(&url)
                .header("Accept", "application/json")
                .header("Authorization", &auth)
                .header("Lock-Token", &self.lock)
                .call(),
            (m, body) => {
                let req = match m {
                    "POST" => self.agent.post(&url),
                    "PATCH" => self.agent.patch(&url),
                    _ => unreachable!("{m}"),
                };
                let req = req
                    .header("Accept", "application/json")
                    .header("Content-Type", "application/json");
                let req = if self.lock.is_empty() {
                    req
                } else {
                    req.header("Lock-Token", &self.lock)
                };
                let req = if self.token.is_empty() {
                    req
                } else {
                    req.header("Authorization", &auth)
                };
                req.send(body.unwrap_or_else(|| json!({})).to_string())
            }
        };
        match result {
            Ok(mut resp) => {
                let status = resp.status().as_u16();
                let text = resp.body_mut().read_to_string().unwrap_or_default();
                if !(200..300).contains(&status) {
                    self.error(format!("{method} {path}: {status}"));
                    return None;
                }
                serde_json::from_str(&text).ok().or(Some(Value::Null))
            }
            Err(e) => {
                self.error(format!("{method} {path}: {e}"));
                None
            }
        }
    }

    fn error(&mut self, what: String) {
        // Pages and folders differ per session: count by the kind of request.
        let kind: String = what
            .split('/')
            .filter(|p| {
                let numbered = p.len() > 1 && p[1..].bytes().all(|b| b.is_ascii_digit());
                !(numbered && (p.starts_with('f') || p.starts_with('p')))
            })
            .collect::<Vec<_>>()
            .join("/");
        *self.errors.entry(kind).or_default() += 1;
    }

    /// One session of 50 requests in `folder`.
    fn session(&mut self, folder: &str, password: &str, n: usize) {
        self.token.clear();
        let login = self.send(
            "POST",
            "/@login",
            Some(json!({"login": "admin", "password": password})),
        );
        self.token = login
            .as_ref()
            .and_then(|v| v["token"].as_str())
            .unwrap_or_default()
            .to_string();
        self.send("GET", "/@site", None);
        self.send("GET", &format!("/?{EXPAND}"), None);
        self.send("GET", "/@types", None);
        self.send("GET", "/@querystring", None);
        self.send("GET", &format!("{folder}?{EXPAND}"), None);
        self.send("GET", &format!("{folder}/{CONTENTS}"), None);
        for p in 0..4 {
            let page = format!("{folder}/p{p}");
            let state = self
                .send("GET", &format!("{page}?{EXPAND}"), None)
                .and_then(|v| v["review_state"].as_str().map(str::to_string))
                .unwrap_or_default();
            self.send("GET", "/@types/Page", None);
            self.lock = self
                .send("POST", &format!("{page}/@lock"), Some(json!({})))
                .and_then(|v| v["token"].as_str().map(str::to_string))
                .unwrap_or_default();
            self.send(
                "PATCH",
                &page,
                Some(json!({
                    "title": format!("Edited in session {n}"),
                    "blocks": {"b1": {"@type": "slate", "plaintext": format!("Text {n}"),
                        "value": [{"type": "p", "children": [{"text": format!("Text {n}")}]}]}},
                    "blocks_layout": {"items": ["b1"]}
                })),
            );
            self.send("DELETE", &format!("{page}/@lock"), None);
            self.lock.clear();
            self.send("GET", &format!("{page}?{EXPAND}"), None);
            let transition = if state == "published" {
                "retract"
            } else {
                "publish"
            };
            self.send("POST", &format!("{page}/@workflow/{transition}"), None);
            self.send("GET", &format!("{page}/@history"), None);
            self.send("GET", &format!("{page}/@workflow"), None);
            self.send("GET", &format!("{folder}/{CONTENTS}"), None);
        }
        self.send("GET", "/@navigation?expand.navigation.depth=3", None);
        self.send("GET", &format!("{folder}/p0/@breadcrumbs"), None);
        self.send("POST", "/@logout", None);
    }
}

fn main() {
    let a = args();
    let stop = Arc::new(AtomicBool::new(false));
    let times = Arc::new(Mutex::new(Vec::new()));
    let errors = Arc::new(Mutex::new(BTreeMap::<String, usize>::new()));
    let requests = Arc::new(Mutex::new(0usize));
    let started = Instant::now();
    let threads: Vec<_> = (0..a.editors)
        .map(|e| {
            let (stop, times, errors, requests) = (
                stop.clone(),
                times.clone(),
                errors.clone(),
                requests.clone(),
            );
            let (base, password, shape, editors) = (
                a.url.clone(),
                a.password.clone(),
                a.shape.clone(),
                a.editors,
            );
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_global(Some(Duration::from_secs(30)))
                    .build()
                    .into();
                let mut ed = Editor {
                    agent,
                    base,
                    token: String::new(),
                    errors: BTreeMap::new(),
                    requests: 0,
                    lock: String::new(),
                };
                let mut n = 0;
                let mut mine = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let folder = bottom_folder(&shape, e + n * editors);
                    let t0 = Instant::now();
                    ed.session(&folder, &password, n);
                    mine.push(t0.elapsed());
                    n += 1;
                }
                times.lock().unwrap().extend(mine);
                let mut all = errors.lock().unwrap();
                for (k, v) in ed.errors {
                    *all.entry(k).or_default() += v;
                }
                *requests.lock().unwrap() += ed.requests;
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(a.seconds));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("editor thread");
    }
    let elapsed = started.elapsed().as_secs_f64();
    let mut times = times.lock().unwrap().clone();
    times.sort();
    let pct = |p: f64| {
        times
            .get(((times.len() as f64 * p) as usize).min(times.len().saturating_sub(1)))
            .map(|d| d.as_secs_f64() * 1000.0)
            .unwrap_or(0.0)
    };
    let errors = errors.lock().unwrap();
    let requests = *requests.lock().unwrap();
    println!(
        "| editor's session (50 requests) | {} editors | {:.1} sessions/s | {:.0} requests/s | p50 {:.1} ms | p99 {:.1} ms | {} sessions | {} errors |",
        a.editors,
        times.len() as f64 / elapsed,
        requests as f64 / elapsed,
        pct(0.5),
        pct(0.99),
        times.len(),
        errors.values().sum::<usize>()
    );
    for (kind, count) in errors.iter() {
        println!("  error: {kind} x{count}");
    }
}
