//! The AI options of the real binary: `--embedding-model DIR` with the tiny static model the
//! project generates (the real model is not in the repository; see
//! scripts/prepare-embedding-model.sh), a bad model directory refused at startup, and no model:
//! "AI is disabled.".
#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_host-server");

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "host-server-ai-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Server {
    child: Child,
    base: String,
    agent: ureq::Agent,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start the binary with `extra` arguments; `Err(stderr)` when it exits before listening.
fn start(dir: &TempDir, extra: &[&str], env: &[(&str, &str)]) -> Result<Server, String> {
    let log = dir.0.join("log");
    let mut cmd = Command::new(BIN);
    cmd.args(["--listen", "127.0.0.1:0", "--log", "warn", "--data"])
        .arg(dir.0.join("data"))
        .args(extra)
        .env("ADMIN_PASSWORD", "secret")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let base = loop {
        let mut line = String::new();
        if stdout.read_line(&mut line).unwrap() == 0 {
            let _ = child.wait();
            return Err(std::fs::read_to_string(&log).unwrap_or_default());
        }
        if let Some(url) = line.trim().strip_prefix("listening on ") {
            break url.trim_end_matches('/').to_string();
        }
    };
    std::thread::spawn(move || {
        let mut sink = String::new();
        while stdout.read_line(&mut sink).unwrap_or(0) > 0 {
            sink.clear();
        }
    });
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    Ok(Server { child, base, agent })
}

impl Server {
    fn request(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let req = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("Accept", "application/json")
            // admin:secret
            .header("Authorization", "Basic YWRtaW46c2VjcmV0");
        let mut resp = match body {
            Some(b) => self
                .agent
                .run(
                    req.header("Content-Type", "application/json")
                        .body(b.to_string())
                        .unwrap(),
                )
                .unwrap(),
            None => self.agent.run(req.body(()).unwrap()).unwrap(),
        };
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    fn page(&self, title: &str, description: &str) {
        let (s, b) = self.request(
            "POST",
            "/",
            Some(json!({"@type": "Page", "title": title, "description": description})),
        );
        assert_eq!(s, 201, "{b}");
    }
}

#[test]
fn a_static_model_directory_answers_related() {
    let dir = TempDir::new("model");
    let model_dir = dir.0.join("tiny-model");
    std::fs::create_dir_all(&model_dir).unwrap();
    let (model, tokenizer) = engine::embedding::tiny_model(&[
        "harbour", "tours", "boat", "hire", "budget", "report", "annual",
    ]);
    std::fs::write(model_dir.join("model.safetensors"), model).unwrap();
    std::fs::write(model_dir.join("tokenizer.json"), tokenizer).unwrap();
    let s = start(&dir, &["--embedding-model", model_dir.to_str().unwrap()], &[]).unwrap();
    s.page("Harbour tours", "Boat tours of the harbour");
    s.page("Annual report", "The budget report");
    s.page("Boat hire", "Hire a boat in the harbour");
    let (status, body) = s.request("GET", "/harbour-tours/@related", None);
    assert_eq!(status, 200, "{body}");
    let items = body["items"].as_array().unwrap();
    assert_eq!(items[0]["@id"], format!("{}/boat-hire", s.base), "{body}");
    assert!(items[0]["similarity"].as_f64().unwrap() > items[1]["similarity"].as_f64().unwrap());
}

#[test]
fn a_bad_model_directory_is_refused_at_startup() {
    let dir = TempDir::new("bad-model");
    let missing = dir.0.join("no-such-model");
    let err = start(&dir, &["--embedding-model", missing.to_str().unwrap()], &[])
        .err()
        .expect("the server must not start");
    assert!(err.contains("model.safetensors"), "{err}");
}

#[test]
fn without_a_model_related_is_disabled() {
    let dir = TempDir::new("no-model");
    let s = start(&dir, &[], &[]).unwrap();
    s.page("Harbour tours", "Boat tours of the harbour");
    let (status, body) = s.request("GET", "/harbour-tours/@related", None);
    assert_eq!(status, 400);
    assert_eq!(body["message"], "AI is disabled.");
}
