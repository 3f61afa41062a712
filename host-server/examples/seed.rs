//! Bulk-load a site for the benchmarks, through the API itself.
//!
//! ```text
//! cargo run --release -p host-server --example seed -- --data DIR --shape 5,5,4,100 [--group 2000]
//! ```
//!
//! `--shape a,b,c,...` builds a tree level by level: `a` folders under the root, `b` folders in
//! each of those, ..., and the last number of pages in each folder of the level before. Folder `i`
//! of a level is `/f<i>`, page `i` is `p<i>` (so `/f0/f1/f2/p3`). Every folder and page is
//! published (folders one by one, each bottom folder with `include_children`).
//!
//! The data goes in through [`Engine::handle_group`]: ordinary `POST` and `@workflow` requests
//! authenticated as the admin, thousands per store transaction (one commit, one fsync per group
//! instead of one per request). Records, keys, version and workflow history are therefore exactly
//! what the same requests sent over HTTP one at a time produce — only the uids, timestamps and the
//! grouping into transactions differ. The site is created first when the data directory has none
//! (admin password `$ADMIN_PASSWORD`, default `admin-password`). Prints the object count and the time taken.

use std::path::PathBuf;
use std::time::Instant;

use engine::{Engine, EngineOptions, Method, Request, SiteSetup};
use host_server::{open_engine, SqliteOptions, SqliteStore, SyncMode};
use serde_json::json;

const BASE: &str = "http://127.0.0.1";

struct Args {
    data: PathBuf,
    shape: Vec<usize>,
    group: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut data = None;
    let mut shape = vec![5, 5, 4, 100];
    let mut group = 2000;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--data" => data = Some(PathBuf::from(val()?)),
            "--shape" => {
                shape = val()?
                    .split(',')
                    .map(|n| {
                        n.trim()
                            .parse::<usize>()
                            .map_err(|e| format!("--shape: {e}"))
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--group" => group = val()?.parse().map_err(|e| format!("--group: {e}"))?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if shape.is_empty() || shape.contains(&0) {
        return Err("--shape needs positive numbers".into());
    }
    Ok(Args {
        data: data.ok_or("--data DIR is required")?,
        shape,
        group: group.max(1),
    })
}

/// Sends requests in groups and checks every answer.
struct Loader<'e> {
    engine: &'e Engine<SqliteStore>,
    auth: String,
    pending: Vec<Request>,
    group: usize,
    objects: usize,
}

impl Loader<'_> {
    fn send(&mut self, method: Method, path: &str, body: serde_json::Value) -> Result<(), String> {
        let req = Request::new(method, path, BASE)
            .header("Authorization", &self.auth)
            .json(&body);
        self.pending.push(req);
        if self.pending.len() >= self.group {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        let reqs = std::mem::take(&mut self.pending);
        for (req, resp) in reqs.iter().zip(self.engine.handle_group(&reqs)) {
            if resp.status >= 300 {
                return Err(format!(
                    "{} {} answered {}: {}",
                    req.method.as_str(),
                    req.path,
                    resp.status,
                    String::from_utf8_lossy(&resp.body)
                ));
            }
            if resp.status == 201 {
                self.objects += 1;
            }
        }
        Ok(())
    }
}

fn page_body(i: usize) -> serde_json::Value {
    let text = format!(
        "Page {i} of the benchmark site. It has a title, a description and two blocks of text, \
         about the size of a short article teaser."
    );
    json!({
        "@type": "Page",
        "id": format!("p{i}"),
        "title": format!("Page {i}"),
        "description": format!("Description of page {i}"),
        "blocks": {
            "b1": {"@type": "title"},
            "b2": {"@type": "slate", "plaintext": text,
                   "value": [{"type": "p", "children": [{"text": text}]}]}
        },
        "blocks_layout": {"items": ["b1", "b2"]}
    })
}

fn run(args: Args) -> Result<(), String> {
    let password = std::env::var("ADMIN_PASSWORD").unwrap_or_else(|_| "admin-password".into());
    let sqlite = SqliteOptions {
        sync: SyncMode::Full,
        writer_cache_kib: 512 * 1024,
        ..SqliteOptions::default()
    };
    let engine =
        open_engine(&args.data, sqlite, EngineOptions::production()).map_err(|e| e.to_string())?;
    if !engine.site_exists().map_err(|e| e.to_string())? {
        engine
            .create_site(&SiteSetup::new(&password))
            .map_err(|e| e.to_string())?;
    }
    let token = {
        use base64_free::encode;
        format!("Basic {}", encode(&format!("admin:{password}")))
    };
    let started = Instant::now();
    let mut loader = Loader {
        engine: &engine,
        auth: token,
        pending: Vec::new(),
        group: args.group,
        objects: 0,
    };
    // Folder levels: paths of the folders of the current level.
    let mut level = vec![String::new()];
    let last = args.shape.len() - 1;
    for (depth, &n) in args.shape.iter().enumerate() {
        let mut next = Vec::with_capacity(level.len() * n);
        for parent in &level {
            let at = if parent.is_empty() { "/" } else { parent };
            for i in 0..n {
                if depth == last {
                    loader.send(Method::Post, at, page_body(i))?;
                } else {
                    loader.send(
                        Method::Post,
                        at,
                        json!({"@type": "Folder", "id": format!("f{i}"), "title": format!("Folder {i}")}),
                    )?;
                    next.push(format!("{parent}/f{i}"));
                }
            }
            if depth == last {
                if parent.is_empty() {
                    for i in 0..n {
                        loader.send(
                            Method::Post,
                            &format!("/p{i}/@workflow/publish"),
                            json!({}),
                        )?;
                    }
                } else {
                    // A bottom folder: published together with its pages.
                    loader.send(
                        Method::Post,
                        &format!("{parent}/@workflow/publish"),
                        json!({"include_children": true}),
                    )?;
                }
            }
        }
        // Folders above the bottom level are published one by one.
        if depth + 1 < last {
            for f in &next {
                loader.send(Method::Post, &format!("{f}/@workflow/publish"), json!({}))?;
            }
        }
        level = next;
        if level.len() > 1_000_000 {
            return Err("the shape has more than a million folders on one level".into());
        }
    }
    loader.flush()?;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "seeded {} objects in {secs:.1} s ({:.0} objects/s)",
        loader.objects,
        loader.objects as f64 / secs
    );
    Ok(())
}

/// Minimal base64 (standard alphabet, padded) so the example needs no extra dependency.
mod base64_free {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    pub fn encode(s: &str) -> String {
        let b = s.as_bytes();
        let mut out = String::new();
        for chunk in b.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |acc, (i, &x)| acc | (u32::from(x) << (16 - 8 * i)));
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }
}

fn main() {
    match parse_args().and_then(run) {
        Ok(()) => {}
        Err(e) => {
            eprintln!("seed: {e}");
            std::process::exit(1);
        }
    }
}
