//! What the process tests (`process`, `security`, `ai_process`, `outbox_process`, `tus_process`,
//! `changes_process`, `pg_cluster`) share: a scratch directory removed on drop, starting the
//! server binary up to its `listening on` line, an HTTP agent that hands back every status, and a
//! JSON request, a webhook receiver, and which binary to start ([`server_bin`]: the debug build,
//! or the one `$PROCESS_TESTS_BIN` names). Each test binary uses part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use serde_json::Value;

/// The environment variable that names the server binary the process tests start (CI sets it to
/// the release build, `./scripts/test.sh`'s "process tests on the release binary" stage).
pub const BIN_ENV: &str = "PROCESS_TESTS_BIN";

/// The server binary to start: the one `$PROCESS_TESTS_BIN` names when it is set (it must exist),
/// else the debug binary cargo built for this test run. The choice is printed once per test
/// binary, so a log says which binary was tested.
pub fn server_bin() -> PathBuf {
    static SHOWN: std::sync::Once = std::sync::Once::new();
    let bin = match std::env::var_os(BIN_ENV).filter(|v| !v.is_empty()) {
        Some(path) => {
            let path = PathBuf::from(path);
            assert!(path.is_file(), "{BIN_ENV}={} is not a file", path.display());
            path
        }
        None => PathBuf::from(env!("CARGO_BIN_EXE_host-server")),
    };
    SHOWN.call_once(|| eprintln!("process tests start {}", bin.display()));
    bin
}

/// A scratch directory under the system's temp dir, unique per process and call, removed on
/// drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A fresh, empty directory named after `tag`.
    pub fn new(tag: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "host-server-test-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// The data directory a server is started on (`<dir>/data`).
    pub fn data(&self) -> PathBuf {
        self.0.join("data")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server process started by [`spawn_listening`].
pub struct Listening {
    /// The process.
    pub child: Child,
    /// Its standard output, kept open (the server writes to it).
    pub stdout: BufReader<ChildStdout>,
    /// The base URL it printed (`http://127.0.0.1:<port>`).
    pub base: String,
    /// The lines it printed on standard output before that one.
    pub before: Vec<String>,
}

/// Start `cmd` (the server binary with its arguments and environment) with `RUST_LOG` unset, its
/// standard error in the file `log`, and wait for its `listening on <url>` line; panics with the
/// log when it exits before listening.
pub fn spawn_listening(cmd: &mut Command, log: &Path) -> Listening {
    let mut child = cmd
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(std::fs::File::create(log).unwrap()))
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut before = Vec::new();
    let base = loop {
        let mut line = String::new();
        if stdout.read_line(&mut line).unwrap() == 0 {
            let status = child.wait().unwrap();
            panic!(
                "server exited ({status}) before listening; log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        let line = line.trim_end();
        if let Some(addr) = line.strip_prefix("listening on ") {
            break addr.to_string();
        }
        before.push(line.to_string());
    };
    Listening {
        child,
        stdout,
        base,
        before,
    }
}

/// An HTTP agent that answers every status as a response (the tests check 4xx and 5xx).
pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

/// `method base+path` with `Accept: application/json`, the `Authorization` header when given, and
/// `body` as JSON when given: the status and the body as text.
pub fn request_text(
    agent: &ureq::Agent,
    base: &str,
    method: &str,
    path: &str,
    authorization: Option<&str>,
    body: Option<&Value>,
) -> (u16, String) {
    let headers: Vec<(&str, &str)> = authorization
        .map(|a| ("Authorization", a))
        .into_iter()
        .collect();
    let mut resp = send(agent, &format!("{base}{path}"), method, &headers, body);
    let status = resp.status().as_u16();
    (status, resp.body_mut().read_to_string().unwrap())
}

/// `method url` with `Accept: application/json`, `headers`, and `body` as JSON when given: the
/// response as it came (panics when there is no HTTP answer).
pub fn send(
    agent: &ureq::Agent,
    url: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> ureq::http::Response<ureq::Body> {
    let mut req = ureq::http::Request::builder()
        .method(method)
        .uri(url)
        .header("Accept", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    match body {
        Some(b) => agent
            .run(
                req.header("Content-Type", "application/json")
                    .body(b.to_string())
                    .unwrap(),
            )
            .unwrap(),
        None => agent.run(req.body(()).unwrap()).unwrap(),
    }
}

/// [`request_text`] with the body parsed as JSON (`null` when it is not JSON).
pub fn request_json(
    agent: &ureq::Agent,
    base: &str,
    method: &str,
    path: &str,
    authorization: Option<&str>,
    body: Option<&Value>,
) -> (u16, Value) {
    let (status, text) = request_text(agent, base, method, path, authorization, body);
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The PostgreSQL server the tests may use (`PG_TEST_URL`, a `postgres://` URL whose user may
/// create databases and schemas), or `None` when it is not set: the caller then skips, saying
/// so. When `PG_TEST_REQUIRED=1` (set by `scripts/test.sh`, which starts a throw-away cluster)
/// a missing URL fails the test instead.
pub fn pg_url(test: &str) -> Option<String> {
    match std::env::var("PG_TEST_URL").ok().filter(|u| !u.is_empty()) {
        Some(url) => Some(url),
        None => {
            assert!(
                std::env::var("PG_TEST_REQUIRED").as_deref() != Ok("1"),
                "{test}: PG_TEST_REQUIRED=1 but PG_TEST_URL is not set (no PostgreSQL to test on)"
            );
            eprintln!("{test}: SKIPPED: set PG_TEST_URL=postgres://... to run it on PostgreSQL");
            None
        }
    }
}

/// `url` with its database name replaced by `dbname` (the path of a `postgres://` URL).
pub fn pg_url_with_db(url: &str, dbname: &str) -> String {
    let (scheme, rest) = url
        .split_once("://")
        .expect("PG_TEST_URL is a postgres:// URL");
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    let authority = before_query.split('/').next().unwrap_or("");
    let mut out = format!("{scheme}://{authority}/{dbname}");
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// A fresh database on the test server, dropped (with its connections) when this is dropped.
pub struct PgDatabase {
    admin_url: String,
    name: String,
    /// URL of the fresh database.
    pub url: String,
}

impl PgDatabase {
    /// Create a database named after `tag` (unique per process and call).
    pub fn create(admin_url: &str, tag: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "t_{tag}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let mut admin = postgres::Client::connect(admin_url, postgres::NoTls)
            .unwrap_or_else(|e| panic!("cannot connect to PG_TEST_URL {admin_url}: {e}"));
        // (one statement per call: CREATE DATABASE cannot run in a transaction block)
        for sql in [
            format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            format!("CREATE DATABASE {name}"),
        ] {
            admin
                .batch_execute(&sql)
                .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        }
        PgDatabase {
            admin_url: admin_url.to_string(),
            url: pg_url_with_db(admin_url, &name),
            name,
        }
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        if let Ok(mut admin) = postgres::Client::connect(&self.admin_url, postgres::NoTls) {
            let _ = admin.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// One HTTP request as the receiver saw it.
#[derive(Debug)]
pub struct Received {
    /// The headers, names as sent.
    pub headers: Vec<(String, String)>,
    /// The body (`Content-Length` bytes).
    pub body: Vec<u8>,
    /// When it was read.
    pub at: Instant,
}

impl Received {
    /// The value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A webhook receiver: answers the first `fail_first` requests with 500, the others with 200, and
/// sends every request it read to the channel.
pub fn webhook_receiver(fail_first: usize) -> (String, mpsc::Receiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { continue };
            let Some(req) = read_http(&stream) else {
                continue;
            };
            let status = if n < fail_first {
                "500 Internal Server Error"
            } else {
                "200 OK"
            };
            let mut s = stream;
            let _ = write!(
                s,
                "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = tx.send(req);
        }
    });
    (url, rx)
}

/// One HTTP/1.1 request read from `stream` (`None` when it is cut short or malformed).
pub fn read_http(stream: &TcpStream) -> Option<Received> {
    let mut r = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (n, v) = h.split_once(':')?;
        headers.push((n.trim().to_string(), v.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(Received {
        headers,
        body,
        at: Instant::now(),
    })
}
