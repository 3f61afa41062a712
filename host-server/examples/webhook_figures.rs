//! Benchmark figures for content rules with a webhook (issue 15), printed as Markdown rows:
//!
//! - delivery latency: one create at a time, 20 ms apart (`LATENCY_N`, default 100), the time from
//!   the create's 201 to the webhook's arrival at a local receiver (p50, p99, max);
//! - creates/s with one webhook rule assigned at the site root, against the same server without
//!   the rule (`CREATES`, default 1000, over `CLIENTS` threads, default 8), and how long the outbox
//!   took to deliver every webhook of the run.
//!
//! ```text
//! cargo build --release -p host-server --bin host-server --example webhook_figures
//! target/release/examples/webhook_figures [path/to/host-server]
//! ```
//! The server binary defaults to `host-server` beside this example's directory (`../host-server`).
//! The receiver answers 200 at once (a thread per connection), so the figures are the service's.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// `admin:secret-password`
const ADMIN: &str = "Basic YWRtaW46c2VjcmV0LXBhc3N3b3Jk";

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A receiver that answers 200 and reports each arrival (with the `X-Seq` of the page title).
fn receiver() -> (String, mpsc::Receiver<(String, Instant)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut w = stream.try_clone().unwrap();
                let mut r = BufReader::new(stream);
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut len = 0usize;
                    loop {
                        let mut h = String::new();
                        if r.read_line(&mut h).unwrap_or(0) == 0 {
                            return;
                        }
                        let h = h.trim_end();
                        if h.is_empty() {
                            break;
                        }
                        if let Some((n, v)) = h.split_once(':') {
                            if n.eq_ignore_ascii_case("content-length") {
                                len = v.trim().parse().unwrap_or(0);
                            }
                        }
                    }
                    let mut body = vec![0; len];
                    if r.read_exact(&mut body).is_err() {
                        return;
                    }
                    let at = Instant::now();
                    let doc: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let title = doc["object"]["title"].as_str().unwrap_or("").to_string();
                    let _ = w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
                    let _ = tx.send((title, at));
                }
            });
        }
    });
    (url, rx)
}

fn call(agent: &ureq::Agent, base: &str, method: &str, path: &str, body: Value) -> (u16, Value) {
    let req = ureq::http::Request::builder()
        .method(method)
        .uri(format!("{base}{path}"))
        .header("Accept", "application/json")
        .header("Authorization", ADMIN)
        .header("Content-Type", "application/json");
    let mut resp = agent.run(req.body(body.to_string()).unwrap()).unwrap();
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn creates_per_second(base: &str, folder: &str, n: usize, clients: usize) -> f64 {
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let next = next.clone();
            let base = base.to_string();
            let folder = folder.to_string();
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .build()
                    .into();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return;
                    }
                    let (s, b) = call(
                        &agent,
                        &base,
                        "POST",
                        &folder,
                        json!({"@type": "Page", "title": format!("{folder} {i}")}),
                    );
                    assert_eq!(s, 201, "{b}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    n as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let bin = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let exe = std::env::current_exe().unwrap();
            exe.parent().unwrap().parent().unwrap().join("host-server")
        });
    let latency_n = env_or("LATENCY_N", 100);
    let creates = env_or("CREATES", 1000);
    let clients = env_or("CLIENTS", 8);
    let dir = std::env::temp_dir().join(format!("webhook-figures-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut child = Command::new(&bin)
        .args(["--listen", "127.0.0.1:0", "--log", "warn", "--data"])
        .arg(dir.join("data"))
        .env("ADMIN_PASSWORD", "secret-password")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let base = loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "server exited early");
        if let Some(a) = line.trim_end().strip_prefix("listening on ") {
            break a.to_string();
        }
    };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let (hook, arrivals) = receiver();
    for f in ["plain", "hooked", "latency"] {
        let (s, b) = call(
            &agent,
            &base,
            "POST",
            "/",
            json!({"@type": "Folder", "id": f, "title": f}),
        );
        assert_eq!(s, 201, "{b}");
    }

    // Without a rule.
    let plain = creates_per_second(&base, "/plain", creates, clients);

    // One webhook rule, assigned at the site root (it applies everywhere).
    let (_, rule) = call(
        &agent,
        &base,
        "POST",
        "/@controlpanels/content-rules",
        json!({"title": "Hook", "event": "onAfterAdd"}),
    );
    let id = rule["id"].as_str().unwrap().to_string();
    call(
        &agent,
        &base,
        "POST",
        &format!("/@controlpanels/content-rules/{id}/action"),
        json!({"type": "nick.actions.Webhook", "url": hook}),
    );
    let (s, _) = call(
        &agent,
        &base,
        "POST",
        &format!("/@content-rules/{id}"),
        json!({}),
    );
    assert_eq!(s, 201);

    // Latency, one create at a time.
    let mut lat = Vec::new();
    for i in 0..latency_n {
        // A pause, so each create finds the delivery task idle (not still busy with the last).
        std::thread::sleep(Duration::from_millis(20));
        let title = format!("latency {i}");
        let (s, b) = call(
            &agent,
            &base,
            "POST",
            "/latency",
            json!({"@type": "Page", "title": title}),
        );
        assert_eq!(s, 201, "{b}");
        let answered = Instant::now();
        loop {
            let (t, at) = arrivals
                .recv_timeout(Duration::from_secs(30))
                .expect("a webhook");
            if t == title {
                lat.push(at.saturating_duration_since(answered));
                break;
            }
        }
    }
    lat.sort();

    // Throughput with the rule, and how long until every webhook arrived.
    let start = Instant::now();
    let hooked = creates_per_second(&base, "/hooked", creates, clients);
    let mut got = 0;
    while got < creates {
        let (t, _) = arrivals
            .recv_timeout(Duration::from_secs(60))
            .expect("every webhook of the run");
        if t.starts_with("/hooked") {
            got += 1;
        }
    }
    let drained = start.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("| figure | value |");
    println!("|---|---|");
    println!(
        "| webhook delivery after the create's 201 (n={latency_n}) | p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms |",
        ms(percentile(&lat, 0.5)),
        ms(percentile(&lat, 0.99)),
        ms(*lat.last().unwrap())
    );
    println!("| creates/s without rules ({creates} creates, {clients} clients) | {plain:.0} |");
    println!(
        "| creates/s with one webhook rule | {hooked:.0} ({:.0}% of without) |",
        hooked / plain * 100.0
    );
    println!(
        "| all {creates} webhooks of that run delivered after | {:.2} s ({:.0} webhooks/s end to end) |",
        drained.as_secs_f64(),
        creates as f64 / drained.as_secs_f64()
    );
}
