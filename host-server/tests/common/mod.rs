//! What the process tests (`process`, `security`, `ai_process`, `outbox_process`, `tus_process`)
//! share: a scratch directory removed on drop, an HTTP agent that hands back every status, and a
//! JSON request. Each test binary uses part of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

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
    let mut req = ureq::http::Request::builder()
        .method(method)
        .uri(format!("{base}{path}"))
        .header("Accept", "application/json");
    if let Some(a) = authorization {
        req = req.header("Authorization", a);
    }
    let mut resp = match body {
        Some(b) => agent
            .run(
                req.header("Content-Type", "application/json")
                    .body(b.to_string())
                    .unwrap(),
            )
            .unwrap(),
        None => agent.run(req.body(()).unwrap()).unwrap(),
    };
    let status = resp.status().as_u16();
    (status, resp.body_mut().read_to_string().unwrap())
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
