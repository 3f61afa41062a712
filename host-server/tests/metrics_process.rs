//! Operations against the real binary: the Prometheus endpoint (`--metrics-listen`) after some
//! traffic, and JSON logs (`--log-format json`) whose request lines carry the id the answer's
//! `X-Request-Id` header shows.
#![cfg(unix)]

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStdout, Command};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;

use common::TempDir;

const PASSWORD: &str = "metrics-secret";

struct Server {
    child: Child,
    _stdout: BufReader<ChildStdout>,
    base: String,
    /// `http://ADDR` of the metrics endpoint, when asked for.
    metrics: Option<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start the binary with `extra` arguments; read its `metrics on` (if any) and `listening on`
/// lines.
fn start(data: &Path, log: &Path, extra: &[&str]) -> Server {
    let common::Listening {
        child,
        stdout,
        base,
        before,
    } = common::spawn_listening(
        Command::new(common::server_bin())
            .args(["--listen", "127.0.0.1:0", "--data"])
            .arg(data)
            .args(extra)
            .env("ADMIN_PASSWORD", PASSWORD),
        log,
    );
    let mut metrics = None;
    for line in &before {
        match line.strip_prefix("metrics on ") {
            Some(addr) => metrics = Some(addr.to_string()),
            None => panic!("unexpected line on stdout: {line:?}"),
        }
    }
    Server {
        child,
        _stdout: stdout,
        base,
        metrics,
    }
}

fn admin() -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"))
    )
}

/// The scrape: each sample line's name with labels (as written) and its value.
fn scrape(server: &Server) -> (String, HashMap<String, f64>) {
    let url = format!("{}/metrics", server.metrics.as_deref().unwrap());
    let mut resp = common::agent().get(&url).call().unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(content_type.contains("text"), "{content_type}");
    let text = resp.body_mut().read_to_string().unwrap();
    let samples = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect();
    (text, samples)
}

fn value(samples: &HashMap<String, f64>, name: &str) -> f64 {
    samples.get(name).copied().unwrap_or(0.0)
}

/// A GET (Basic auth as admin when `auth`), with `X-Request-Id: id` when given: status and the
/// answer's X-Request-Id.
fn get(base: &str, path: &str, auth: bool, id: Option<&str>) -> (u16, String) {
    let mut req = common::agent().get(format!("{base}{path}"));
    req = req.header("Accept", "application/json");
    if auth {
        req = req.header("Authorization", admin());
    }
    if let Some(id) = id {
        req = req.header("X-Request-Id", id);
    }
    let resp = req.call().unwrap();
    let header = resp
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    (resp.status().as_u16(), header)
}

#[test]
fn metrics_endpoint_counts_requests_writes_cache_and_streams() {
    let tmp = TempDir::new("metrics");
    let server = start(
        &tmp.data(),
        &tmp.0.join("server.log"),
        &["--log", "warn", "--metrics-listen", "127.0.0.1:0"],
    );
    assert_ne!(
        server.metrics.as_deref().unwrap(),
        server.base,
        "metrics are on their own address"
    );
    // The site's port does not serve them.
    let (status, _) = get(&server.base, "/metrics", false, None);
    assert_eq!(status, 404);

    let (text, before) = scrape(&server);
    for name in [
        "host_server_writer_queue_depth",
        "host_server_outbox_backlog",
        "host_server_connections_open",
        "host_server_streams_open",
        "host_server_response_cache_hits_total",
        "host_server_response_cache_misses_total",
        "host_server_writer_prepared_reruns_total",
    ] {
        assert!(before.contains_key(name), "{name} missing:\n{text}");
    }
    let content_ok = r#"host_server_http_requests_total{family="content",status="2xx"}"#;
    let search_ok = r#"host_server_http_requests_total{family="search",status="2xx"}"#;
    let content_4xx = r#"host_server_http_requests_total{family="content",status="4xx"}"#;

    // Traffic: reads (the same one three times: the cache), a search, a 404, writes.
    for _ in 0..3 {
        assert_eq!(get(&server.base, "/", false, None).0, 200);
    }
    assert_eq!(get(&server.base, "/@search", true, None).0, 200);
    assert_eq!(get(&server.base, "/no-such-page", true, None).0, 404);
    let agent = common::agent();
    for n in 0..3 {
        let body = json!({"@type": "Page", "id": format!("m{n}"), "title": "Metered"});
        let (status, answer) = common::request_json(
            &agent,
            &server.base,
            "POST",
            "/",
            Some(&admin()),
            Some(&body),
        );
        assert_eq!(status, 201, "{answer}");
    }
    // A change feed stream, open while we scrape.
    let addr = server.base.strip_prefix("http://").unwrap();
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        tcp,
        "GET /@changes HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
         Authorization: {}\r\n\r\n",
        admin()
    )
    .unwrap();
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&head).contains("\r\n\r\n") {
        let n = tcp.read(&mut buf).unwrap();
        assert!(n > 0, "the stream closed");
        head.extend_from_slice(&buf[..n]);
    }
    assert!(
        String::from_utf8_lossy(&head).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );

    let (text, after) = scrape(&server);
    assert!(
        value(&after, content_ok) >= value(&before, content_ok) + 6.0,
        "3 reads + 3 creates of the content family:\n{text}"
    );
    assert!(value(&after, search_ok) >= 1.0, "{text}");
    assert!(value(&after, content_4xx) >= 1.0, "{text}");
    let hist = r#"host_server_http_request_duration_seconds_count{family="content",status="2xx"}"#;
    assert!(value(&after, hist) >= 6.0, "{text}");
    assert!(
        value(&after, "host_server_writer_commit_duration_seconds_count") >= 1.0,
        "{text}"
    );
    assert!(
        value(&after, "host_server_writer_group_size_sum") >= 3.0,
        "three writes committed:\n{text}"
    );
    assert_eq!(
        value(&after, "host_server_writer_queue_depth"),
        0.0,
        "{text}"
    );
    // Without --parallel-writes no write is prepared ahead, so none runs again.
    assert_eq!(
        value(&after, "host_server_writer_prepared_reruns_total"),
        0.0,
        "{text}"
    );
    let lookups = |s: &HashMap<String, f64>| {
        value(s, "host_server_response_cache_hits_total")
            + value(s, "host_server_response_cache_misses_total")
    };
    assert!(lookups(&after) > lookups(&before), "{text}");
    assert!(
        value(&after, "host_server_response_cache_hits_total") >= 1.0,
        "the repeated read was answered from the cache:\n{text}"
    );
    assert_eq!(value(&after, "host_server_streams_open"), 1.0, "{text}");
    assert!(
        value(&after, "host_server_connections_open") >= 1.0,
        "{text}"
    );

    // The stream closed: the gauge goes back down.
    drop(tcp);
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let (text, now) = scrape(&server);
        if value(&now, "host_server_streams_open") == 0.0 {
            break;
        }
        assert!(
            Instant::now() < until,
            "the stream is still counted:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn json_logs_carry_the_request_id_the_answer_shows() {
    let tmp = TempDir::new("jsonlog");
    let log = tmp.0.join("server.log");
    let server = start(
        &tmp.data(),
        &log,
        &["--log", "info", "--log-format", "json"],
    );
    assert!(server.metrics.is_none(), "metrics are off by default");
    // Ours is made up.
    let (status, made) = get(&server.base, "/", false, None);
    assert_eq!(status, 200);
    assert_eq!(made.len(), 32, "{made:?}");
    assert!(made.bytes().all(|b| b.is_ascii_hexdigit()), "{made:?}");
    // A sane one the client sends is kept; an insane one is replaced.
    let (_, kept) = get(&server.base, "/", false, Some("client-chose-this.1"));
    assert_eq!(kept, "client-chose-this.1");
    let (_, replaced) = get(&server.base, "/", false, Some("no spaces <or> brackets"));
    assert_ne!(replaced, "no spaces <or> brackets");
    assert_eq!(replaced.len(), 32, "{replaced:?}");
    assert_ne!(replaced, made);

    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    for id in [&made, &kept] {
        let line = lines
            .iter()
            .find(|l| l["span"]["request_id"] == id.as_str())
            .unwrap_or_else(|| panic!("no log line with request_id {id}:\n{text}"));
        assert_eq!(line["level"], "INFO", "{line}");
        assert_eq!(line["span"]["path"], "/", "{line}");
        assert_eq!(line["span"]["method"], "GET", "{line}");
        assert!(line["timestamp"].is_string(), "{line}");
    }
}
