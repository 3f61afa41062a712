//! Runner 2: every scenario over HTTP against the real `host-server` binary (SQLite on disk).
//!
//! Per scenario: start `host-server --deterministic --listen 127.0.0.1:0 --data <fresh dir>` with
//! `ADMIN_PASSWORD=secret`, read its `listening on http://ADDR` line, run the scenario, kill it.
//! The binary is `$HOST_SERVER_BIN`, else `<target dir>/debug/host-server`; build it first with
//! `cargo build -p host-server`. A missing binary fails the test: it is never skipped.
//!
//! A second run does the same on data directories whose database already holds a site written at
//! schema 1 (`tests/fixtures/schema-v1/fresh-site.json`): the server upgrades it at start.
//!
//! A third run starts the server with `--database` on PostgreSQL instead (a fresh schema per
//! scenario) when `SCENARIO_DATABASE` (or `PG_TEST_URL`) holds the URL of a database whose user
//! may create schemas; without it that run is skipped, saying so, unless `PG_TEST_REQUIRED=1`
//! (set by `scripts/test.sh`), which makes it fail.
//!
//! `SCENARIO=<name>` runs one scenario.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use engine::{Request, Response};
use tests::{run_scenario, Tally, Target};

/// Bodies larger than this are sent with `Expect: 100-continue`.
const LARGE_BODY: usize = 1024 * 1024;

/// Where the server binary is.
fn server_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("HOST_SERVER_BIN") {
        return PathBuf::from(p);
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| {
            if p.is_relative() {
                // cargo resolves a relative CARGO_TARGET_DIR against the working directory of the
                // cargo invocation, which for `cargo test` in a workspace is the workspace root.
                workspace_root().join(p)
            } else {
                p
            }
        })
        .unwrap_or_else(|| workspace_root().join("target"));
    target_dir.join("debug").join("host-server")
}

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// Where a server under test keeps its site.
#[derive(Clone, Copy)]
enum Backend<'a> {
    /// SQLite in a fresh data directory; with a seed, its database first holds those pairs (a
    /// site written by an earlier schema version, which the server upgrades when it opens it).
    Sqlite(Option<&'a [(Vec<u8>, Vec<u8>)]>),
    /// A fresh schema in the PostgreSQL database at this URL.
    Postgres(&'a str),
}

/// A fresh schema on PostgreSQL for one server: its URL, dropped on drop.
struct PgSchema {
    admin_url: String,
    name: String,
}

impl PgSchema {
    fn create(admin_url: &str, scenario: &str) -> PgSchema {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "sc_{}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            scenario
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .take(30)
                .collect::<String>()
                .to_ascii_lowercase()
        );
        let mut c = postgres::Client::connect(admin_url, postgres::NoTls)
            .unwrap_or_else(|e| panic!("cannot connect to {admin_url}: {e}"));
        c.batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
        ))
        .unwrap_or_else(|e| panic!("cannot create schema {name}: {e}"));
        PgSchema {
            admin_url: admin_url.to_string(),
            name,
        }
    }

    /// The admin URL with `search_path` set to this schema.
    fn url(&self) -> String {
        let sep = if self.admin_url.contains('?') {
            '&'
        } else {
            '?'
        };
        format!(
            "{}{sep}options=-c%20search_path%3D{}",
            self.admin_url, self.name
        )
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin_url, postgres::NoTls) {
            let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
        }
    }
}

/// A running server on a fresh data directory; killed and cleaned up on drop.
struct Server {
    child: Child,
    data: PathBuf,
    /// Dropped after the child is killed.
    _schema: Option<PgSchema>,
    base: String,
    agent: ureq::Agent,
    stderr: mpsc::Receiver<String>,
}

impl Server {
    /// Start on a fresh data directory or PostgreSQL schema.
    fn start(bin: &PathBuf, scenario: &str, profiles: &[String], backend: Backend<'_>) -> Server {
        let seed = match backend {
            Backend::Sqlite(seed) => seed,
            Backend::Postgres(_) => None,
        };
        let data = std::env::temp_dir().join(format!(
            "contract-{}-{scenario}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&data).expect("create temp data dir");
        if let Some(pairs) = seed {
            write_database(&data, pairs);
        }
        let schema = match backend {
            Backend::Postgres(url) => Some(PgSchema::create(url, scenario)),
            Backend::Sqlite(_) => None,
        };
        let mut command = Command::new(bin);
        command
            .args(["--deterministic", "--embedding-model", "test"])
            .args(["--listen", "127.0.0.1:0"]);
        for p in profiles {
            command.arg("--profile").arg(p);
        }
        match &schema {
            Some(s) => command.arg("--database").arg(s.url()),
            None => command.arg("--data").arg(&data),
        };
        let mut child = command
            .env("ADMIN_PASSWORD", "secret")
            // info for upgraded sites: the test reads the line that reports the migration
            .env("RUST_LOG", if seed.is_some() { "info" } else { "warn" })
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let stdout = child.stdout.take().expect("stdout piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut stderr = child.stderr.take().expect("stderr piped");
        let (etx, erx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            let _ = etx.send(s);
        });
        let addr = loop {
            match rx.recv_timeout(Duration::from_secs(30)) {
                Ok(line) => {
                    if let Some(url) = line.trim().strip_prefix("listening on http://") {
                        break url.trim().to_string();
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let err = erx.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
                    panic!(
                        "{} did not print `listening on http://ADDR` within 30 s; stderr:\n{err}",
                        bin.display()
                    );
                }
            }
        };
        let agent = ureq::Agent::new_with_config(
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .max_redirects(0)
                .timeout_global(Some(Duration::from_secs(60)))
                .allow_non_standard_methods(true)
                .build(),
        );
        Server {
            child,
            data,
            _schema: schema,
            base: format!("http://{addr}"),
            agent,
            stderr: erx,
        }
    }

    /// Stop the server and return what it wrote to stderr.
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stderr
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_default()
    }
}

/// Write `pairs` into the database of data directory `data`, as a server would have stored them.
fn write_database(data: &std::path::Path, pairs: &[(Vec<u8>, Vec<u8>)]) {
    use engine::Store;
    let store = host_server::SqliteStore::open(
        host_server::db_path(data),
        host_server::SqliteOptions::default(),
    )
    .expect("open the seed database");
    let mut txn = store.begin_write().expect("begin write");
    for (k, v) in pairs {
        txn.put(k, v).expect("put");
    }
    txn.commit().expect("commit the seed database");
} // dropped: lock released for the server

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.data);
    }
}

impl Target for Server {
    async fn send(&mut self, req: Request) -> Response {
        let mut url = format!("{}{}", self.base, req.path);
        if !req.query.is_empty() {
            url.push('?');
            url.push_str(&req.query);
        }
        let mut builder = ureq::http::Request::builder()
            .method(req.method.as_str())
            .uri(&url);
        for (k, v) in &req.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        if req.body.len() > LARGE_BODY {
            // A server may refuse a large body from its Content-Length and close the connection
            // without reading it; waiting for `100 Continue` lets the client read that answer
            // instead of failing with a broken pipe while still sending.
            builder = builder.header("Expect", "100-continue");
        }
        let http_req = builder.body(req.body.clone()).unwrap_or_else(|e| {
            panic!(
                "cannot build the request {} {url}: {e}",
                req.method.as_str()
            )
        });
        let mut resp = match self.agent.run(http_req) {
            Ok(r) => r,
            // Not a panic: the step then fails with this answer, and the tally names the
            // scenario and shows the server's last stderr lines (a crash, usually).
            Err(e) => {
                return Response {
                    status: 599,
                    headers: Vec::new(),
                    body: format!(
                        "{} {url} failed at the transport level (no HTTP answer): {e}",
                        req.method.as_str()
                    )
                    .into_bytes(),
                    stream: None,
                    lines: None,
                }
            }
        };
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let body = resp
            .body_mut()
            .with_config()
            .limit(u64::MAX)
            .read_to_vec()
            .unwrap_or_else(|e| panic!("reading the body of {url}: {e}"));
        Response {
            status,
            headers,
            body,
            stream: None,
            lines: None,
        }
    }

    fn base_url(&self) -> String {
        self.base.clone()
    }
}

fn run_all(host: &'static str, backend: Backend<'_>) {
    let seed = match backend {
        Backend::Sqlite(seed) => seed,
        Backend::Postgres(_) => None,
    };
    let bin = server_binary();
    assert!(
        bin.is_file(),
        "the host-server binary is missing at {}: run `cargo build -p host-server` first \
         (with the same CARGO_TARGET_DIR), or point HOST_SERVER_BIN at it",
        bin.display()
    );
    let mut tally = Tally::new(host);
    let only = std::env::var("SCENARIO").ok();
    let scenarios = match seed {
        Some(_) => tally.select_for_existing_site(only.as_deref()),
        None => tally.select(only.as_deref()),
    };
    for s in scenarios {
        let mut server = Server::start(&bin, &s.name, &s.profiles, backend);
        let result = pollster::block_on(run_scenario(&mut server, &s));
        let stderr = server.stop();
        let result = result.map_err(|f| f.to_string()).and_then(|()| {
            if seed.is_some() && !stderr.contains("schema migrated") {
                Err(format!(
                    "{}: the server did not report migrating the schema-1 site",
                    s.name
                ))
            } else {
                Ok(())
            }
        });
        tally.record(result.map_err(|f| {
            let tail: Vec<&str> = stderr.lines().rev().take(10).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            if tail.is_empty() {
                f
            } else {
                format!(
                    "{f}\n    server stderr (last lines):\n      {}",
                    tail.join("\n      ")
                )
            }
        }));
    }
    eprintln!("{}", tally.summary());
    tally.assert_all_passed();
}

/// The two runs take turns. Run side by side, one could fork its next server process while the
/// other held the seed database's lock file open (in `write_database`); the forked child keeps the
/// lock until it execs, and the other run's server then found its database "in use".
static ONE_RUN_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn every_scenario_passes_against_the_server() {
    let _turn = ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    run_all("server", Backend::Sqlite(None));
}

/// The same scenarios with the server on PostgreSQL (`--database`), a fresh schema each.
#[test]
fn every_scenario_passes_against_the_server_on_postgres() {
    let url = ["SCENARIO_DATABASE", "PG_TEST_URL"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()));
    let Some(url) = url else {
        assert!(
            std::env::var("PG_TEST_REQUIRED").as_deref() != Ok("1"),
            "PG_TEST_REQUIRED=1 but neither SCENARIO_DATABASE nor PG_TEST_URL is set"
        );
        eprintln!(
            "every_scenario_passes_against_the_server_on_postgres: SKIPPED: set \
             SCENARIO_DATABASE=postgres://... to run the scenarios on PostgreSQL"
        );
        return;
    };
    let _turn = ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    run_all("server (PostgreSQL)", Backend::Postgres(&url));
}

/// The same scenarios on a data directory holding a site written at schema 1
/// (`tests/fixtures/schema-v1/fresh-site.json`), which the server upgrades at start.
#[test]
fn every_scenario_passes_against_the_server_on_a_migrated_schema_1_site() {
    let _turn = ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let pairs = tests::fixtures::pairs(tests::fixtures::SCHEMA_V1_FRESH_SITE).expect("fixture");
    run_all(
        "server (migrated schema-1 site)",
        Backend::Sqlite(Some(&pairs)),
    );
}
