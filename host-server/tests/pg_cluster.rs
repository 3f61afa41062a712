//! Three `host-server` processes on one PostgreSQL database (`--database`), as behind a load
//! balancer: a change made through one is seen by the next request to any other (answers and
//! credentials), concurrent creates through all three lose no update and never hand out one id
//! twice, and every acknowledged write is still there after one of them is killed with SIGKILL
//! in the middle. Runs on a fresh database of the server at `PG_TEST_URL` (skipped, saying so,
//! when that is not set; failing when `PG_TEST_REQUIRED=1`), in both write modes.
#![cfg(unix)]

use std::collections::BTreeSet;
use std::io::BufReader;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{json, Value};

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_host-server");
const PASSWORD: &str = "cluster-secret";

struct Server {
    child: Child,
    _stdout: BufReader<ChildStdout>,
    base: String,
}

impl From<common::Listening> for Server {
    fn from(l: common::Listening) -> Self {
        Server {
            child: l.child,
            _stdout: l.stdout,
            base: l.base,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start a server on `url` and wait for its `listening on` line.
/// `mode` is a write mode, optionally with `+cache`: the response cache on (64 MiB).
fn start(url: &str, mode: &str, log: &std::path::Path) -> Server {
    let (mode, cache) = match mode.strip_suffix("+cache") {
        Some(m) => (m, "64"),
        None => (mode, "0"),
    };
    Server::from(common::spawn_listening(
        Command::new(BIN)
            .env("WEBHOOK_ALLOW", "127.0.0.1")
            .args(["--listen", "127.0.0.1:0", "--log", "warn"])
            .args(["--database", url, "--write-mode", mode])
            .args(["--response-cache-mb", cache])
            .args(["--database-connections", "6"])
            .env("ADMIN_PASSWORD", PASSWORD),
        log,
    ))
}

/// Three servers started at the same moment on the fresh database `url` (one of them creates
/// the site; the others find it).
fn start_three(url: &str, mode: &str, dir: &common::TempDir) -> Vec<Server> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|i| {
                let log = dir.0.join(format!("server-{i}.log"));
                s.spawn(move || start(url, mode, &log))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// A request that reports transport failures instead of panicking (a killed server).
fn try_request(
    agent: &ureq::Agent,
    base: &str,
    method: &str,
    path: &str,
    auth: &str,
    body: Option<&Value>,
) -> Result<(u16, Value), String> {
    let mut req = ureq::http::Request::builder()
        .method(method)
        .uri(format!("{base}{path}"))
        .header("Accept", "application/json");
    if !auth.is_empty() {
        req = req.header("Authorization", auth);
    }
    let resp = match body {
        Some(b) => agent.run(
            req.header("Content-Type", "application/json")
                .body(b.to_string())
                .map_err(|e| e.to_string())?,
        ),
        None => agent.run(req.body(()).map_err(|e| e.to_string())?),
    };
    let mut resp = resp.map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let text = resp
        .body_mut()
        .read_to_string()
        .map_err(|e| e.to_string())?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

fn admin() -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"))
    )
}

fn request(s: &Server, method: &str, path: &str, auth: &str, body: Option<Value>) -> (u16, Value) {
    try_request(&agent(), &s.base, method, path, auth, body.as_ref())
        .unwrap_or_else(|e| panic!("{method} {}{path}: {e}", s.base))
}

/// The tests take turns: each runs three servers, and the machine may have two cores.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn visibility_across_servers(mode: &str) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(admin_url) = common::pg_url("visibility_across_servers") else {
        return;
    };
    let db = common::PgDatabase::create(&admin_url, "vis");
    let dir = common::TempDir::new("pg-vis");
    let servers = start_three(&db.url, mode, &dir);
    let admin = admin();
    let (status, body) = request(
        &servers[0],
        "POST",
        "/",
        &admin,
        Some(json!({"@type": "Page", "id": "p", "title": "v0"})),
    );
    assert_eq!(status, 201, "{body}");
    // Answers: each change through one server, read at once through the two others (each
    // having read the page before, so a cache would hold the old answer).
    for round in 1..=9 {
        let (w, others) = (round % 3, [(round + 1) % 3, (round + 2) % 3]);
        for &o in &others {
            let (status, _) = request(&servers[o], "GET", "/p", &admin, None);
            assert_eq!(status, 200);
            let (status, _) = request(&servers[o], "GET", "/p", "", None);
            assert!(status == 401 || status == 200, "{status}");
        }
        let title = format!("v{round}");
        let (status, body) = request(
            &servers[w],
            "PATCH",
            "/p",
            &admin,
            Some(json!({"title": title})),
        );
        assert_eq!(status, 204, "{body}");
        for &o in &others {
            let (status, body) = request(&servers[o], "GET", "/p", &admin, None);
            assert_eq!(status, 200, "{body}");
            assert_eq!(
                body["title"], title,
                "server {o} answered the old page after server {w} changed it"
            );
        }
    }
    // Credentials: a token and a Basic login accepted by server 1, then the password changed
    // through server 0: server 1 and 2 refuse both at the next request.
    let (status, body) = request(
        &servers[0],
        "POST",
        "/@users",
        &admin,
        Some(
            json!({"username": "jane", "password": "jane-password-1", "email": "jane@example.com"}),
        ),
    );
    assert_eq!(status, 201, "{body}");
    let (status, body) = request(
        &servers[1],
        "POST",
        "/@login",
        "",
        Some(json!({"login": "jane", "password": "jane-password-1"})),
    );
    assert_eq!(status, 200, "{body}");
    let token = format!("Bearer {}", body["token"].as_str().unwrap());
    let basic = {
        use base64::Engine as _;
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("jane:jane-password-1")
        )
    };
    for s in &servers[1..] {
        assert_eq!(request(s, "GET", "/@users/jane", &token, None).0, 200);
        assert_eq!(request(s, "GET", "/@users/jane", &basic, None).0, 200);
    }
    let (status, body) = request(
        &servers[0],
        "PATCH",
        "/@users/jane",
        &admin,
        Some(json!({"password": "jane-password-2"})),
    );
    assert_eq!(status, 204, "{body}");
    for (i, s) in servers.iter().enumerate().skip(1) {
        assert_eq!(
            request(s, "GET", "/@users/jane", &token, None).0,
            401,
            "server {i} still accepts a token revoked through server 0"
        );
        assert_eq!(
            request(s, "GET", "/@users/jane", &basic, None).0,
            401,
            "server {i} still accepts a password changed through server 0"
        );
    }
}

#[test]
fn a_change_through_one_server_is_seen_by_the_next_request_to_any_other() {
    visibility_across_servers("locked");
}

#[test]
fn a_change_is_seen_across_servers_with_optimistic_writers() {
    visibility_across_servers("optimistic");
}

/// With the response cache on, every server checks the database's generation before it uses a
/// cached answer (`EngineOptions::shared_store`), so the others' writes are seen at once.
#[test]
fn a_change_is_seen_across_servers_with_the_response_cache_on() {
    visibility_across_servers("locked+cache");
}

fn concurrent_creates_and_sigkill(mode: &str) {
    const THREADS_PER_SERVER: usize = 3;
    const CREATES: usize = 15;
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(admin_url) = common::pg_url("concurrent_creates_and_sigkill") else {
        return;
    };
    let db = common::PgDatabase::create(&admin_url, "conc");
    let dir = common::TempDir::new("pg-conc");
    let mut servers = start_three(&db.url, mode, &dir);
    let admin = admin();
    let (status, body) = request(
        &servers[1],
        "POST",
        "/",
        &admin,
        Some(json!({"@type": "Folder", "id": "f", "title": "F"})),
    );
    assert_eq!(status, 201, "{body}");
    let bases: Vec<String> = servers.iter().map(|s| s.base.clone()).collect();
    let done = AtomicUsize::new(0);
    // Every create that answered 201: its @id. Every other outcome counted.
    let (acknowledged, refused, lost): (Vec<String>, usize, usize) = std::thread::scope(|s| {
        let workers: Vec<_> = (0..3 * THREADS_PER_SERVER)
            .map(|t| {
                let base = bases[t % 3].clone();
                let (admin, done) = (&admin, &done);
                s.spawn(move || {
                    let agent = agent();
                    let mut ids = Vec::new();
                    let (mut refused, mut lost) = (0, 0);
                    for _ in 0..CREATES {
                        // the same title everywhere: every create competes for the same id
                        let body = json!({"@type": "Page", "title": "Item"});
                        match try_request(&agent, &base, "POST", "/f", admin, Some(&body)) {
                            Ok((201, b)) => {
                                let id = b["@id"].as_str().unwrap();
                                ids.push(id.strip_prefix(&base).unwrap().to_string());
                            }
                            Ok((status, b)) => {
                                assert_eq!(status, 503, "a create answered {status}: {b}");
                                refused += 1;
                            }
                            Err(_) => lost += 1, // the server was killed
                        }
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    (ids, refused, lost)
                })
            })
            .collect();
        // Kill server 2 with SIGKILL once a third of the creates are done.
        while done.load(Ordering::Relaxed) < 3 * THREADS_PER_SERVER * CREATES / 3 {
            std::thread::sleep(Duration::from_millis(20));
        }
        servers[2].child.kill().unwrap();
        servers[2].child.wait().unwrap();
        let mut all = Vec::new();
        let (mut refused, mut lost) = (0, 0);
        for w in workers {
            let (ids, r, l) = w.join().unwrap();
            all.extend(ids);
            refused += r;
            lost += l;
        }
        (all, refused, lost)
    });
    servers.truncate(2);
    eprintln!(
        "{mode}: {} creates acknowledged, {refused} refused (503 busy), {lost} lost with the killed server",
        acknowledged.len()
    );
    let distinct: BTreeSet<&String> = acknowledged.iter().collect();
    assert_eq!(
        distinct.len(),
        acknowledged.len(),
        "one id was handed out twice"
    );
    assert!(
        acknowledged.len() >= 2 * THREADS_PER_SERVER * CREATES / 2,
        "too few creates went through: {}",
        acknowledged.len()
    );
    // Through each surviving server: the folder lists every acknowledged item exactly once.
    for s in &servers {
        let (status, body) = request(s, "GET", "/f?b_size=1000", &admin, None);
        assert_eq!(status, 200, "{body}");
        let listed: Vec<String> = body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                let id = i["@id"].as_str().unwrap();
                id.strip_prefix(&s.base).unwrap().to_string()
            })
            .collect();
        let listed_set: BTreeSet<&String> = listed.iter().collect();
        assert_eq!(
            listed_set.len(),
            listed.len(),
            "the folder lists an item twice"
        );
        assert_eq!(body["items_total"], listed.len());
        for id in &acknowledged {
            assert!(
                listed_set.contains(id),
                "acknowledged {id} is missing from the folder (a lost update)"
            );
        }
        // at most the creates in flight on the killed server are there unacknowledged
        assert!(
            listed.len() <= acknowledged.len() + lost,
            "{} listed",
            listed.len()
        );
        for path in acknowledged.iter().step_by(7) {
            assert_eq!(request(s, "GET", path, &admin, None).0, 200, "{path}");
        }
    }
}

#[test]
fn three_servers_concurrent_creates_survive_sigkill_locked() {
    concurrent_creates_and_sigkill("locked");
}

#[test]
fn three_servers_concurrent_creates_survive_sigkill_optimistic() {
    concurrent_creates_and_sigkill("optimistic");
}

/// Start a SQLite server on `data` (as [`start`] does for PostgreSQL).
fn start_sqlite(data: &std::path::Path, log: &std::path::Path) -> Server {
    Server::from(common::spawn_listening(
        Command::new(BIN)
            .env("WEBHOOK_ALLOW", "127.0.0.1")
            .args(["--listen", "127.0.0.1:0", "--log", "warn", "--data"])
            .arg(data)
            .env("ADMIN_PASSWORD", PASSWORD),
        log,
    ))
}

/// `host-server migrate --from sqlite:DIR --to URL` copies a site (a page and a 3 MiB file) that
/// a server on PostgreSQL then serves byte for byte; a second copy onto the now non-empty target
/// is refused unless `--replace` is given.
#[test]
fn migrate_copies_a_sqlite_site_into_postgres() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(admin_url) = common::pg_url("migrate_copies_a_sqlite_site_into_postgres") else {
        return;
    };
    use base64::Engine as _;
    let db = common::PgDatabase::create(&admin_url, "mig");
    let dir = common::TempDir::new("pg-mig");
    let admin = admin();
    let file: Vec<u8> = (0..3 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    {
        let s = start_sqlite(&dir.data(), &dir.0.join("sqlite.log"));
        let (status, body) = request(
            &s,
            "POST",
            "/",
            &admin,
            Some(json!({"@type": "Page", "id": "moved", "title": "Moved over"})),
        );
        assert_eq!(status, 201, "{body}");
        let (status, body) = request(
            &s,
            "POST",
            "/",
            &admin,
            Some(
                json!({"@type": "File", "id": "big", "title": "Big", "file": {
                "data": base64::engine::general_purpose::STANDARD.encode(&file),
                "encoding": "base64", "filename": "big.bin",
                "content-type": "application/octet-stream"}}),
            ),
        );
        assert_eq!(status, 201, "{body}");
    } // stopped (SIGKILL: every acknowledged write is durable)
    let from = format!("sqlite:{}", dir.data().display());
    let out = Command::new(BIN)
        .args(["migrate", "--from", &from, "--to", &db.url])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "migrate failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("copied "), "{stdout}");
    // a second copy onto the non-empty target: refused, then allowed with --replace
    let again = Command::new(BIN)
        .args(["migrate", "--from", &from, "--to", &db.url])
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("--replace"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let replaced = Command::new(BIN)
        .args(["migrate", "--replace", "--from", &from, "--to", &db.url])
        .output()
        .unwrap();
    assert!(replaced.status.success());
    assert_eq!(
        String::from_utf8_lossy(&replaced.stdout)
            .split(" keys")
            .next(),
        stdout.split(" keys").next(),
        "the same number of keys the second time"
    );
    let s = start(&db.url, "locked", &dir.0.join("pg.log"));
    let (status, body) = request(&s, "GET", "/moved", &admin, None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["title"], "Moved over");
    let mut resp = agent()
        .get(format!("{}/big/@@download/file", s.base))
        .header("Authorization", &admin)
        .call()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let got = resp
        .body_mut()
        .with_config()
        .limit(u64::MAX)
        .read_to_vec()
        .unwrap();
    assert!(
        got == file,
        "the file came back different ({} bytes)",
        got.len()
    );
}

/// A delivery's `Idempotency-Key` and `X-Delivery-Attempt` (empty when missing).
fn key_and_attempt(hit: &common::Received) -> (String, String) {
    let header = |name| hit.header(name).unwrap_or_default().to_string();
    (header("Idempotency-Key"), header("X-Delivery-Attempt"))
}

/// Three servers deliver the shared outbox: each webhook job reaches the receiver exactly once
/// (every server polls and claims; a claim is a write, so only one server gets each job).
fn each_webhook_delivered_once(mode: &str) {
    const PAGES: usize = 24;
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(admin_url) = common::pg_url("each_webhook_delivered_once") else {
        return;
    };
    let db = common::PgDatabase::create(&admin_url, "hook");
    let dir = common::TempDir::new("pg-hook");
    let servers = start_three(&db.url, mode, &dir);
    let admin = admin();
    let (hook_url, hooks) = common::webhook_receiver(0);
    let (status, rule) = request(
        &servers[0],
        "POST",
        "/@controlpanels/content-rules",
        &admin,
        Some(json!({"title": "Announce", "event": "onAfterAdd", "secret": "hook-secret"})),
    );
    assert_eq!(status, 201, "{rule}");
    let id = rule["id"].as_str().unwrap();
    let (status, body) = request(
        &servers[0],
        "POST",
        &format!("/@controlpanels/content-rules/{id}/action"),
        &admin,
        Some(json!({"type": "nick.actions.Webhook", "url": hook_url})),
    );
    assert_eq!(status, 201, "{body}");
    let (status, body) = request(
        &servers[0],
        "POST",
        &format!("/@content-rules/{id}"),
        &admin,
        None,
    );
    assert_eq!(status, 201, "{body}");
    std::thread::scope(|s| {
        for (i, server) in servers.iter().enumerate() {
            let admin = &admin;
            s.spawn(move || {
                for n in 0..PAGES / 3 {
                    // optimistic writers may answer 503 (busy, nothing changed): try again
                    let mut tries = 0;
                    loop {
                        let (status, body) = request(
                            server,
                            "POST",
                            "/",
                            admin,
                            Some(json!({"@type": "Page", "title": format!("Page {i} {n}")})),
                        );
                        tries += 1;
                        if status == 503 && tries < 20 {
                            continue;
                        }
                        assert_eq!(status, 201, "{body}");
                        break;
                    }
                }
            });
        }
    });
    let mut seen: Vec<(String, String)> = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while seen.len() < PAGES && std::time::Instant::now() < deadline {
        if let Ok(hit) = hooks.recv_timeout(Duration::from_secs(1)) {
            seen.push(key_and_attempt(&hit));
        }
    }
    // every server polls every 250 ms: give a duplicate time to show
    std::thread::sleep(Duration::from_secs(2));
    seen.extend(hooks.try_iter().map(|hit| key_and_attempt(&hit)));
    let keys: BTreeSet<&String> = seen.iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys.len(),
        PAGES,
        "{} distinct deliveries of {PAGES}",
        keys.len()
    );
    assert_eq!(
        seen.len(),
        PAGES,
        "a webhook job was delivered more than once: {seen:?}"
    );
    assert!(seen.iter().all(|(_, attempt)| attempt == "1"), "{seen:?}");
}

#[test]
fn three_servers_deliver_each_webhook_once_locked() {
    each_webhook_delivered_once("locked");
}

#[test]
fn three_servers_deliver_each_webhook_once_optimistic() {
    each_webhook_delivered_once("optimistic");
}

/// A database that cannot be reached stops the server at start with a message that says so
/// (no PostgreSQL needed).
#[test]
fn an_unreachable_database_is_reported_at_start() {
    let out = Command::new(BIN)
        .env("WEBHOOK_ALLOW", "127.0.0.1")
        .args(["--listen", "127.0.0.1:0", "--log", "error"])
        .args([
            "--database",
            "postgres://nobody@127.0.0.1:1/nothing?connect_timeout=5",
        ])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot connect to PostgreSQL"),
        "stderr: {stderr}"
    );
    let out = Command::new(BIN)
        .args(["--database", "mysql://x"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("invalid PostgreSQL URL"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `--read-database`: reads come from the replica (here a second database, a copy of the
/// primary made by the test, which then lags behind), and a client carrying the
/// `rw-generation` cookie of its write reads its own write from the primary meanwhile.
#[test]
fn reads_from_a_replica_and_the_writer_reads_its_own_writes() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(admin_url) = common::pg_url("reads_from_a_replica") else {
        return;
    };
    use host_server::postgres::{PgOptions, PgStore};
    let primary = common::PgDatabase::create(&admin_url, "prim");
    let replica = common::PgDatabase::create(&admin_url, "repl");
    let dir = common::TempDir::new("pg-repl");
    let admin = admin();
    drop(start(&primary.url, "locked", &dir.0.join("create.log"))); // creates the site
    let replicate = || {
        let from = PgStore::open(&primary.url, PgOptions::default()).unwrap();
        let to = PgStore::open(&replica.url, PgOptions::default()).unwrap();
        host_server::migrate::copy_site(&from, &to, true, |_, _| {}).unwrap();
    };
    replicate();
    let server = Server::from(common::spawn_listening(
        Command::new(BIN)
            .env("WEBHOOK_ALLOW", "127.0.0.1")
            .args(["--listen", "127.0.0.1:0", "--log", "warn"])
            .args(["--database", &primary.url, "--read-database", &replica.url]),
        &dir.0.join("repl.log"),
    ));
    let agent = agent();
    let mut resp = agent
        .post(format!("{}/", server.base))
        .header("Authorization", &admin)
        .header("Accept", "application/json")
        .header("Content-Type", "application/json")
        .send(json!({"@type": "Page", "id": "fresh", "title": "Fresh"}).to_string())
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let cookie = resp
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("a write answers with the rw-generation cookie")
        .split(';')
        .next()
        .unwrap()
        .to_string();
    assert!(cookie.starts_with("rw-generation="), "{cookie}");
    let _ = resp.body_mut().read_to_string();
    let get = |cookie: Option<&str>| {
        let mut req = agent
            .get(format!("{}/fresh", server.base))
            .header("Authorization", &admin)
            .header("Accept", "application/json");
        if let Some(c) = cookie {
            req = req.header("Cookie", c);
        }
        req.call().unwrap().status().as_u16()
    };
    assert_eq!(
        get(None),
        404,
        "a read without the cookie comes from the lagging replica"
    );
    assert_eq!(
        get(Some(&cookie)),
        200,
        "the writer, carrying its cookie, reads its own write"
    );
    assert_eq!(get(Some("other=1; rw-generation=0")), 404);
    replicate(); // the replica catches up
    assert_eq!(get(None), 200);
    assert_eq!(get(Some(&cookie)), 200);
}

/// A job scheduled every second, with three servers each looking every second: each due time
/// runs once (no two runs in the same second), not once per server.
fn schedule_runs_once_per_due_time(mode: &str) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(admin_url) = common::pg_url("schedule_runs_once_per_due_time") else {
        return;
    };
    let db = common::PgDatabase::create(&admin_url, "sched");
    let dir = common::TempDir::new("pg-sched");
    let servers = start_three(&db.url, mode, &dir);
    let (hook_url, hooks) = common::webhook_receiver(0);
    let (status, body) = request(
        &servers[2],
        "POST",
        "/@scheduled-jobs",
        &admin(),
        Some(json!({"id": "tick", "title": "Tick", "action": "webhook",
                    "params": {"url": hook_url, "secret": "s"},
                    "schedule": "* * * * * *"})),
    );
    assert_eq!(status, 201, "{body}");
    let window = std::time::Instant::now() + Duration::from_secs(6);
    let mut seconds = Vec::new();
    while std::time::Instant::now() < window {
        if let Ok(hit) = hooks.recv_timeout(Duration::from_millis(200)) {
            let doc: Value = serde_json::from_slice(&hit.body).unwrap();
            let time = doc["time"].as_str().unwrap().to_string();
            seconds.push(time.chars().take(19).collect::<String>());
        }
    }
    let distinct: BTreeSet<&String> = seconds.iter().collect();
    assert!(seconds.len() >= 3, "too few runs in 6 s: {seconds:?}");
    assert_eq!(
        distinct.len(),
        seconds.len(),
        "a due time ran more than once: {seconds:?}"
    );
}

#[test]
fn three_servers_run_a_schedule_once_per_due_time_locked() {
    schedule_runs_once_per_due_time("locked");
}

#[test]
fn three_servers_run_a_schedule_once_per_due_time_optimistic() {
    schedule_runs_once_per_due_time("optimistic");
}

/// The README's PostgreSQL backup: `pg_dump --format=custom` of a database servers write to,
/// `pg_restore --no-owner` into a new database, and a server on the restored one serves every
/// page acknowledged before the dump started.
#[test]
fn pg_dump_and_pg_restore_bring_a_site_back() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(admin_url) = common::pg_url("pg_dump_and_pg_restore_bring_a_site_back") else {
        return;
    };
    let source = common::PgDatabase::create(&admin_url, "dump");
    let target = common::PgDatabase::create(&admin_url, "restored");
    let dir = common::TempDir::new("pg-dump");
    let admin = admin();
    let s = start(&source.url, "locked", &dir.0.join("source.log"));
    for n in 0..10 {
        let (status, body) = request(
            &s,
            "POST",
            "/",
            &admin,
            Some(json!({"@type": "Page", "id": format!("d{n}"), "title": format!("Dumped {n}")})),
        );
        assert_eq!(status, 201, "{body}");
    }
    let dump = dir.0.join("site.pgdump");
    let out = Command::new("pg_dump")
        .args(["--format=custom", "--file"])
        .arg(&dump)
        .arg(&source.url)
        .output()
        .expect("pg_dump (PostgreSQL's client tools) is installed");
    assert!(
        out.status.success(),
        "pg_dump: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A write after the dump is not in it.
    let (status, _) = request(
        &s,
        "POST",
        "/",
        &admin,
        Some(json!({"@type": "Page", "id": "later", "title": "Later"})),
    );
    assert_eq!(status, 201);
    drop(s);
    let out = Command::new("pg_restore")
        .args(["--no-owner", "--dbname", &target.url])
        .arg(&dump)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pg_restore: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = start(&target.url, "locked", &dir.0.join("restored.log"));
    for n in 0..10 {
        let (status, body) = request(&s, "GET", &format!("/d{n}"), &admin, None);
        assert_eq!(status, 200, "d{n}: {body}");
        assert_eq!(body["title"], format!("Dumped {n}"));
    }
    assert_eq!(request(&s, "GET", "/later", &admin, None).0, 404);
}
