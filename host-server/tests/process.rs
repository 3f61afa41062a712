//! The real binary, started as a child process: durability across SIGKILL, graceful SIGTERM,
//! and clear startup errors.
#![cfg(unix)]

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};

use serde_json::{json, Value};

mod common;

use common::TempDir;

/// A running server. Killed (SIGKILL) on drop if still running, so a failing test leaves nothing.
struct Server {
    child: Child,
    _stdout: BufReader<ChildStdout>,
    base: String,
    generated_password: Option<String>,
    log: PathBuf,
    agent: ureq::Agent,
}

/// Start the binary on a free port with `data` as its data directory and wait for its
/// `listening on` line. `admin_password: None` leaves ADMIN_PASSWORD unset.
fn start(data: &Path, log: &Path, admin_password: Option<&str>) -> Server {
    start_with(data, log, admin_password, &[])
}

/// [`start`] with extra command-line arguments.
fn start_with(data: &Path, log: &Path, admin_password: Option<&str>, extra: &[&str]) -> Server {
    let mut cmd = Command::new(common::server_bin());
    cmd.args(["--listen", "127.0.0.1:0", "--log", "info", "--data"])
        .arg(data)
        .args(extra)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(File::create(log).unwrap()));
    match admin_password {
        Some(p) => cmd.env("ADMIN_PASSWORD", p),
        None => cmd.env_remove("ADMIN_PASSWORD"),
    };
    let mut child = cmd.spawn().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut generated_password = None;
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
        if let Some((_, pw)) = line.split_once("generated password: ") {
            generated_password = Some(pw.to_string());
        } else {
            panic!("unexpected line on stdout: {line:?}");
        }
    };
    let agent = common::agent();
    Server {
        child,
        _stdout: stdout,
        base,
        generated_password,
        log: log.to_path_buf(),
        agent,
    }
}

impl Server {
    fn request(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let auth = token.map(|t| format!("Bearer {t}"));
        common::request_json(
            &self.agent,
            &self.base,
            method,
            path,
            auth.as_deref(),
            body.as_ref(),
        )
    }

    fn login(&self, password: &str) -> String {
        let (status, body) = self.request(
            "POST",
            "/@login",
            None,
            Some(json!({"login": "admin", "password": password})),
        );
        assert_eq!(status, 200, "login failed: {body}");
        body["token"].as_str().unwrap().to_string()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn sigkill(mut self) -> ExitStatus {
        self.child.kill().unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[test]
fn acknowledged_write_survives_sigkill() {
    let tmp = TempDir::new("durable");
    let log = tmp.0.join("server.log");
    let server = start(&tmp.data(), &log, Some("durable-secret"));
    assert_eq!(server.generated_password, None);
    let token = server.login("durable-secret");
    let (status, created) = server.request(
        "POST",
        "/",
        Some(&token),
        Some(json!({"@type": "Page", "title": "Durable"})),
    );
    assert_eq!(status, 201, "{created}");
    let id = created["@id"].as_str().unwrap().to_string();
    let path = id.strip_prefix(&server.base).unwrap().to_string();

    let status = server.sigkill();
    assert_eq!(
        status.signal(),
        Some(9),
        "expected death by SIGKILL, got {status}"
    );

    // Same directory; a different ADMIN_PASSWORD must not matter because the site exists.
    let server = start(&tmp.data(), &log, Some("another-password"));
    assert_eq!(server.generated_password, None);
    let token = server.login("durable-secret");
    let (status, page) = server.request("GET", &path, Some(&token), None);
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["title"], "Durable");
    assert_eq!(page["@type"], "Page");
}

#[test]
fn sigterm_shuts_down_gracefully_with_exit_code_0() {
    let tmp = TempDir::new("term");
    let log = tmp.0.join("server.log");
    let server = start(&tmp.data(), &log, None);
    let password = server
        .generated_password
        .clone()
        .expect("a generated password on stdout when ADMIN_PASSWORD is unset");
    server.login(&password);

    let mut server = server;
    let killed = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = server.child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "exit status {status}; log:\n{}",
        server.log()
    );
    let log = server.log();
    assert!(log.contains("SIGTERM received"), "{log}");
    drop(server);

    // The generated password was stored: a restart prints no new one and accepts the old one.
    let server = start(&tmp.data(), &tmp.0.join("server2.log"), None);
    assert_eq!(server.generated_password, None);
    server.login(&password);
}

/// Start the binary with `args` and expect it to fail before listening; returns its stderr.
fn expect_startup_failure(args: &[&str]) -> String {
    let mut child = Command::new(common::server_bin())
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .env("ADMIN_PASSWORD", "x")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    if stdout.contains("listening on") {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the server started although it should have refused: {stdout}");
    }
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn unusable_data_dir_is_a_clear_error() {
    let tmp = TempDir::new("nodir");
    let file = tmp.0.join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let data = file.join("data");
    let stderr = expect_startup_failure(&["--data", data.to_str().unwrap()]);
    assert!(stderr.contains("cannot use the data directory"), "{stderr}");
}

#[test]
fn corrupt_database_is_a_clear_error() {
    let tmp = TempDir::new("corrupt");
    std::fs::create_dir_all(tmp.data()).unwrap();
    std::fs::write(tmp.data().join("site.sqlite3"), vec![0x5Au8; 16384]).unwrap();
    let stderr = expect_startup_failure(&["--data", tmp.data().to_str().unwrap()]);
    assert!(stderr.contains("not a SQLite database"), "{stderr}");
}

#[test]
fn newer_schema_version_is_refused() {
    use engine::Store;
    let tmp = TempDir::new("schema");
    std::fs::create_dir_all(tmp.data()).unwrap();
    {
        let store = host_server::SqliteStore::open(
            host_server::db_path(&tmp.data()),
            host_server::SqliteOptions::default(),
        )
        .unwrap();
        let mut w = store.begin_write().unwrap();
        w.put(engine::host::keyspace::SCHEMA, b"999").unwrap();
        w.commit().unwrap();
    }
    let stderr = expect_startup_failure(&["--data", tmp.data().to_str().unwrap()]);
    assert!(stderr.contains("newer version"), "{stderr}");
}

#[test]
fn second_server_on_the_same_data_dir_is_refused() {
    let tmp = TempDir::new("twice");
    let first = start(
        &tmp.data(),
        &tmp.0.join("server.log"),
        Some("pw-long-enough"),
    );
    let stderr = expect_startup_failure(&["--data", tmp.data().to_str().unwrap()]);
    assert!(stderr.contains("in use by another process"), "{stderr}");
    first.login("pw-long-enough");
}

#[test]
fn help_documents_every_option() {
    let out = Command::new(common::server_bin())
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for opt in [
        "--listen",
        "--data",
        "--public-url",
        "--cors-origin",
        "--readers",
        "--sync",
        "--deterministic",
        "--log",
        "ADMIN_PASSWORD",
        "CONTRACT TESTS ONLY",
    ] {
        assert!(help.contains(opt), "--help lacks {opt}:\n{help}");
    }
}

fn item_ids(server: &Server, token: &str, path: &str) -> Vec<String> {
    let (status, body) = server.request("GET", path, Some(token), None);
    assert_eq!(status, 200, "{body}");
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            i["@id"]
                .as_str()
                .unwrap()
                .trim_start_matches(&server.base)
                .to_string()
        })
        .collect()
}

#[test]
fn profile_flags_make_a_multilingual_site_new_or_existing() {
    let args = ["--profile", "multilingual-content", "--languages", "en,de"];
    // A new site created with the profile has one language root per language.
    let tmp = TempDir::new("profile-new");
    let log = tmp.0.join("server.log");
    let server = start_with(&tmp.data(), &log, Some("pw-long-enough"), &args);
    let token = server.login("pw-long-enough");
    assert_eq!(item_ids(&server, &token, "/"), vec!["/en", "/de"]);
    let (status, navroot) = server.request("GET", "/de/@navroot", Some(&token), None);
    assert_eq!(status, 200, "{navroot}");
    assert_eq!(navroot["navroot"]["@id"], format!("{}/de", server.base));
    drop(server);

    // An existing plain site gets the profile when restarted with the flags, once.
    let tmp = TempDir::new("profile-existing");
    let log = tmp.0.join("server.log");
    let server = start(&tmp.data(), &log, Some("pw-long-enough"));
    let token = server.login("pw-long-enough");
    assert!(item_ids(&server, &token, "/").is_empty());
    drop(server);
    for _ in 0..2 {
        let server = start_with(&tmp.data(), &log, None, &args);
        let token = server.login("pw-long-enough");
        assert_eq!(item_ids(&server, &token, "/"), vec!["/en", "/de"]);
    }
}

#[test]
fn unknown_profile_is_a_usage_error() {
    let out = Command::new(common::server_bin())
        .args(["--listen", "127.0.0.1:0", "--profile", "nonsense"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("nonsense") && stderr.contains("multilingual-content"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("listening on"));
}
