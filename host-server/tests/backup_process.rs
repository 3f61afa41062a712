//! `host-server backup` / `host-server restore` against the real binary: a backup taken while
//! writers are busy, one taken after the server was killed (kill -9), each restored into a new
//! directory that a server then serves with every write acknowledged before the backup began;
//! and the refusals (an existing backup file, a directory that holds a site, a running server,
//! a file that is not a backup).
#![cfg(unix)]

use std::io::BufReader;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;

use common::TempDir;

const PASSWORD: &str = "backup-secret";

struct Server {
    child: Child,
    _stdout: BufReader<ChildStdout>,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(data: &Path, log: &Path) -> Server {
    let l = common::spawn_listening(
        Command::new(common::server_bin())
            .args(["--listen", "127.0.0.1:0", "--log", "warn", "--data"])
            .arg(data)
            .env("ADMIN_PASSWORD", PASSWORD),
        log,
    );
    Server {
        child: l.child,
        _stdout: l.stdout,
        base: l.base,
    }
}

fn admin() -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"))
    )
}

/// Create a page titled `title` with id `id`; the status.
fn create(agent: &ureq::Agent, base: &str, id: &str, title: &str) -> u16 {
    let body = json!({"@type": "Page", "id": id, "title": title});
    common::request_json(agent, base, "POST", "/", Some(&admin()), Some(&body)).0
}

fn get(agent: &ureq::Agent, base: &str, path: &str) -> (u16, Value) {
    common::request_json(agent, base, "GET", path, Some(&admin()), None)
}

fn run(args: &[&str]) -> Output {
    Command::new(common::server_bin())
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Run `host-server backup` and expect success.
fn backup(data: &Path, to: &Path) -> String {
    let out = run(&["backup", "--data", path_str(data), "--to", path_str(to)]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "backup failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("backed up "), "{stdout}");
    stdout
}

/// Run `host-server restore` and expect success.
fn restore(from: &Path, data: &Path) {
    let out = run(&[
        "restore",
        "--from",
        path_str(from),
        "--data",
        path_str(data),
    ]);
    assert!(
        out.status.success(),
        "restore failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Four writers create pages as fast as the server takes them; a backup is taken meanwhile.
/// Restored, the site holds every page whose creation was acknowledged before the backup
/// started, and the writers went on being served during the backup.
#[test]
fn backup_while_writers_are_busy_keeps_every_acknowledged_write() {
    let tmp = TempDir::new("backup-busy");
    let server = start(&tmp.data(), &tmp.0.join("server.log"));
    let stop = Arc::new(AtomicBool::new(false));
    // (id, when its 201 arrived)
    let acked: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (stop, acked, base) = (stop.clone(), acked.clone(), server.base.clone());
            std::thread::spawn(move || {
                let agent = common::agent();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    let id = format!("w{w}-{n}");
                    let status = create(&agent, &base, &id, &format!("Writer {w} page {n}"));
                    assert_eq!(status, 201, "{id}");
                    acked.lock().unwrap().push((id, Instant::now()));
                    n += 1;
                }
            })
        })
        .collect();
    // Wait for acknowledged writes rather than for a fixed time: a loaded machine (a debug build
    // beside other test binaries) may take seconds for its first few creates.
    let waited = Instant::now();
    while acked.lock().unwrap().len() < 8 {
        assert!(
            waited.elapsed() < Duration::from_secs(120),
            "the writers got fewer than 8 writes acknowledged in 120 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let file = tmp.0.join("site.backup");
    let began = Instant::now();
    backup(&tmp.data(), &file);
    let ended = Instant::now();
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let before: Vec<&String> = acked
        .iter()
        .filter(|(_, at)| *at < began)
        .map(|(id, _)| id)
        .collect();
    let during = acked
        .iter()
        .filter(|(_, at)| *at >= began && *at <= ended)
        .count();
    assert!(before.len() >= 4, "only {} writes before", before.len());
    eprintln!(
        "{} writes acknowledged before the backup, {during} during it ({:?})",
        before.len(),
        ended - began
    );
    drop(server);

    let restored = tmp.0.join("restored");
    restore(&file, &restored);
    let server = start(&restored, &tmp.0.join("restored.log"));
    let agent = common::agent();
    for id in &before {
        let (status, body) = get(&agent, &server.base, &format!("/{id}"));
        assert_eq!(
            status, 200,
            "{id} acknowledged before the backup is missing: {body}"
        );
        assert_eq!(body["@type"], "Page");
    }
    // The restored site takes writes.
    assert_eq!(create(&agent, &server.base, "after", "After restore"), 201);
}

/// A server killed with SIGKILL right after its writes: a backup of its directory, restored,
/// serves every acknowledged write (the log is replayed when the backup opens the database), and
/// the admin's password still works (the secrets came along).
#[test]
fn backup_after_sigkill_restores_a_serving_site() {
    let tmp = TempDir::new("backup-kill");
    let server = start(&tmp.data(), &tmp.0.join("server.log"));
    let agent = common::agent();
    for n in 0..20 {
        assert_eq!(
            create(&agent, &server.base, &format!("p{n}"), &format!("Page {n}")),
            201
        );
    }
    let mut server = server;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    drop(server);

    let file = tmp.0.join("killed.backup");
    let said = backup(&tmp.data(), &file);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "the backup is private, mode {mode:o}");
    }
    assert!(
        !tmp.0.join("killed.backup.partial").exists(),
        "no partial file left: {said}"
    );
    let restored = tmp.0.join("restored");
    restore(&file, &restored);
    let server = start(&restored, &tmp.0.join("restored.log"));
    for n in 0..20 {
        let (status, body) = get(&agent, &server.base, &format!("/p{n}"));
        assert_eq!(status, 200, "p{n}: {body}");
        assert_eq!(body["title"], format!("Page {n}"));
    }
    let (status, body) = common::request_json(
        &agent,
        &server.base,
        "POST",
        "/@login",
        None,
        Some(&json!({"login": "admin", "password": PASSWORD})),
    );
    assert_eq!(status, 200, "{body}");
}

/// What `backup` and `restore` refuse, each with exit status 1 and a message saying why, leaving
/// things as they were.
#[test]
fn backup_and_restore_refuse_what_would_lose_data() {
    let tmp = TempDir::new("backup-refuse");
    let server = start(&tmp.data(), &tmp.0.join("server.log"));
    let agent = common::agent();
    assert_eq!(create(&agent, &server.base, "kept", "Kept"), 201);
    let file = tmp.0.join("one.backup");
    backup(&tmp.data(), &file);
    let size = std::fs::metadata(&file).unwrap().len();

    let failed = |out: Output, needle: &str| {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(needle), "expected {needle:?} in: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    };
    // An existing backup file is never overwritten.
    failed(
        run(&[
            "backup",
            "--data",
            path_str(&tmp.data()),
            "--to",
            path_str(&file),
        ]),
        "exists",
    );
    assert_eq!(std::fs::metadata(&file).unwrap().len(), size);
    // No site in the directory.
    let empty = tmp.0.join("empty");
    std::fs::create_dir(&empty).unwrap();
    failed(
        run(&[
            "backup",
            "--data",
            path_str(&empty),
            "--to",
            path_str(&tmp.0.join("x")),
        ]),
        "no site",
    );
    // A directory that holds a site, without --replace.
    failed(
        run(&[
            "restore",
            "--from",
            path_str(&file),
            "--data",
            path_str(&tmp.data()),
        ]),
        "--replace",
    );
    // With --replace, while the server runs on it: the lock refuses.
    failed(
        run(&[
            "restore",
            "--replace",
            "--from",
            path_str(&file),
            "--data",
            path_str(&tmp.data()),
        ]),
        "in use",
    );
    // A file that is not a backup.
    let junk = tmp.0.join("junk");
    std::fs::write(&junk, b"this is not a database, not even close to one").unwrap();
    let other = tmp.0.join("other");
    failed(
        run(&[
            "restore",
            "--from",
            path_str(&junk),
            "--data",
            path_str(&other),
        ]),
        "junk",
    );
    assert!(!other.join("site.sqlite3").exists(), "nothing restored");
    // The site is untouched and still serving.
    let (status, _) = get(&agent, &server.base, "/kept");
    assert_eq!(status, 200);

    // Stopped, --replace brings the backup back over a site that changed since.
    assert_eq!(create(&agent, &server.base, "later", "Later"), 201);
    drop(server);
    let out = run(&[
        "restore",
        "--replace",
        "--from",
        path_str(&file),
        "--data",
        path_str(&tmp.data()),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let server = start(&tmp.data(), &tmp.0.join("server2.log"));
    assert_eq!(get(&agent, &server.base, "/kept").0, 200);
    assert_eq!(
        get(&agent, &server.base, "/later").0,
        404,
        "the backup is older"
    );
}
