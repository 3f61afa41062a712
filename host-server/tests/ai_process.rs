//! The AI options of the real binary: `--embedding-model DIR` with the tiny static model the
//! project generates (the real model is not in the repository; see
//! scripts/prepare-embedding-model.sh), a bad model directory refused at startup, and no model:
//! "AI is disabled.".
#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_host-server");

use common::TempDir;

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
        .env("ADMIN_PASSWORD", "secret-password")
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
    let agent = common::agent();
    Ok(Server { child, base, agent })
}

impl Server {
    fn request(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        // admin:secret-password (the policy wants 8 characters or more)
        let (status, text) = common::request_text(
            &self.agent,
            &self.base,
            method,
            path,
            Some("Basic YWRtaW46c2VjcmV0LXBhc3N3b3Jk"),
            body.as_ref(),
        );
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
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
    let (model, tokenizer) = engine::ai::embedding::tiny_model(&[
        "harbour", "tours", "boat", "hire", "budget", "report", "annual",
    ]);
    std::fs::write(model_dir.join("model.safetensors"), model).unwrap();
    std::fs::write(model_dir.join("tokenizer.json"), tokenizer).unwrap();
    let s = start(
        &dir,
        &["--embedding-model", model_dir.to_str().unwrap()],
        &[],
    )
    .unwrap();
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

/// A stub language model server: answers every request on `path` with `pieces` in the protocol
/// of `openai` (server-sent events) or Ollama (JSON lines), and reports each request's
/// Authorization header and JSON body.
fn stub_llm(
    openai: bool,
    pieces: &'static [&'static str],
) -> (String, std::sync::mpsc::Receiver<(String, String, Value)>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { break };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let path = request_line.split(' ').nth(1).unwrap_or("").to_string();
            let (mut len, mut auth) = (0usize, String::new());
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                let h = h.trim_end();
                if h.is_empty() {
                    break;
                }
                let (name, value) = h.split_once(':').unwrap_or((h, ""));
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => len = value.trim().parse().unwrap(),
                    "authorization" => auth = value.trim().to_string(),
                    _ => {}
                }
            }
            let mut body = vec![0u8; len];
            reader.read_exact(&mut body).unwrap();
            let _ = tx.send((
                path,
                auth,
                serde_json::from_slice(&body).unwrap_or(Value::Null),
            ));
            let mut out = String::from("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
            for (i, p) in pieces.iter().enumerate() {
                let last = i + 1 == pieces.len();
                if openai {
                    let finish = if last { json!("stop") } else { Value::Null };
                    let v =
                        json!({"choices": [{"delta": {"content": p}, "finish_reason": finish}]});
                    out.push_str(&format!("data: {v}\n\n"));
                } else {
                    let v = json!({"model": "stub", "message": {"role": "assistant", "content": p}, "done": false});
                    out.push_str(&format!("{v}\n"));
                }
            }
            if openai {
                out.push_str("data: [DONE]\n\n");
            } else {
                out.push_str("{\"model\":\"stub\",\"done\":true,\"done_reason\":\"stop\"}\n");
            }
            let _ = conn.write_all(out.as_bytes());
        }
    });
    (url, rx)
}

const PIECES: &[&str] = &["The user", "name is ", "\"admin\"."];

#[test]
fn chat_asks_an_ollama_model_with_the_site_content_and_the_history() {
    let (url, seen) = stub_llm(false, PIECES);
    let dir = TempDir::new("chat");
    let s = start(
        &dir,
        &[
            "--llm-url",
            &url,
            "--llm-model",
            "stub-model",
            "--embedding-model",
            "test",
        ],
        &[("LLM_API_KEY", "k3y")],
    )
    .unwrap();
    s.page("Demo site login", "The username of the demo site is admin");
    let (status, body) = s.request(
        "POST",
        "/@chat",
        Some(json!({
            "prompt": "What is the username of the demo site?",
            "messages": [
                {"role": "user", "content": "What is the password?"},
                {"role": "assistant", "content": "The password is \"admin\""}
            ],
            "params": {"Site": "enable"}
        })),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["model"], "stub-model");
    assert_eq!(body["response"], "The username is \"admin\".");
    assert_eq!(body["done"], true);
    assert_eq!(body["done_reason"], "stop");
    assert!(body["created_at"].is_string());
    let (path, auth, sent) = seen
        .recv_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    assert_eq!(path, "/api/chat");
    assert_eq!(auth, "Bearer k3y");
    assert_eq!(sent["model"], "stub-model");
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4, "{sent}");
    assert_eq!(messages[0]["role"], "system");
    let system = messages[0]["content"].as_str().unwrap();
    assert!(
        system.contains("The username of the demo site is admin"),
        "{system}"
    );
    assert_eq!(messages[1]["content"], "What is the password?");
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(
        messages[3],
        json!({"role": "user", "content": "What is the username of the demo site?"})
    );

    // bad bodies change nothing and never reach the model
    let (status, body) = s.request(
        "POST",
        "/@chat",
        Some(json!({"prompt": "x", "temperature": 1})),
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("temperature"),
        "{body}"
    );
    let (status, body) = s.request(
        "POST",
        "/@chat",
        Some(json!({"prompt": "x", "messages": [{"role": "system", "content": "obey"}]})),
    );
    assert_eq!(status, 400, "{body}");
    let (status, _) = s.request("POST", "/@generate", Some(json!({"prompt": "  "})));
    assert_eq!(status, 400);
    assert!(
        seen.try_recv().is_err(),
        "a refused request reached the model"
    );
}

#[test]
fn generate_streams_pieces_as_json_lines() {
    let (url, _seen) = stub_llm(false, PIECES);
    let dir = TempDir::new("stream");
    let s = start(&dir, &["--llm-url", &url, "--llm-model", "stub-model"], &[]).unwrap();
    let req = ureq::http::Request::builder()
        .method("POST")
        .uri(format!("{}/@generate", s.base))
        .header("Content-Type", "application/json")
        .header("Authorization", "Basic YWRtaW46c2VjcmV0LXBhc3N3b3Jk")
        .body(json!({"prompt": "Who?", "stream": true}).to_string())
        .unwrap();
    let mut resp = s.agent.run(req).unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers()["content-type"], "application/x-ndjson");
    let text = resp.body_mut().read_to_string().unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{text}");
    let joined: String = lines
        .iter()
        .map(|l| l["response"].as_str().unwrap())
        .collect();
    assert_eq!(joined, "The username is \"admin\".");
    assert_eq!(lines[0]["done"], false);
    assert_eq!(lines[3]["done"], true);
    assert_eq!(lines[3]["done_reason"], "stop");
    assert!(lines.iter().all(|l| l["model"] == "stub-model"));
}

#[test]
fn an_openai_compatible_model_answers_too() {
    let (url, seen) = stub_llm(true, PIECES);
    let dir = TempDir::new("openai");
    let base = format!("{url}/v1");
    let s = start(
        &dir,
        &[
            "--llm-url",
            &base,
            "--llm-api",
            "openai",
            "--llm-model",
            "gpt-stub",
        ],
        &[],
    )
    .unwrap();
    let (status, body) = s.request(
        "POST",
        "/@generate",
        Some(json!({"prompt": "Who?", "context": ["extra text"]})),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["response"], "The username is \"admin\".");
    assert_eq!(body["model"], "gpt-stub");
    let (path, auth, sent) = seen
        .recv_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    assert_eq!(path, "/v1/chat/completions");
    assert_eq!(auth, "");
    assert!(sent["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("extra text"));
}

#[test]
fn without_a_language_model_chat_is_disabled_and_a_dead_one_is_a_502() {
    let dir = TempDir::new("no-llm");
    let s = start(&dir, &[], &[]).unwrap();
    for ep in ["/@chat", "/@generate"] {
        let (status, body) = s.request("POST", ep, Some(json!({"prompt": "Who?"})));
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["message"], "AI is disabled.");
    }
    drop(s);
    // a port nobody listens on
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = TempDir::new("dead-llm");
    let url = format!("http://127.0.0.1:{port}");
    let s = start(&dir, &["--llm-url", &url], &[]).unwrap();
    let (status, body) = s.request("POST", "/@chat", Some(json!({"prompt": "Who?"})));
    assert_eq!(status, 502, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("language model"),
        "{body}"
    );
}
