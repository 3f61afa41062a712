//! The outbox against the real binary: a content rule's webhook is delivered to a local HTTP
//! receiver after a create, signed with the rule's secret (HMAC-SHA256, checked here with the
//! `hmac` crate), retried after the receiver first answered 500, with the same idempotency key;
//! and its mail reaches a local SMTP listener (a minimal SMTP dialogue in a thread). `@jobs`
//! shows the outcomes.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_host-server");
const PASSWORD: &str = "outbox-secret";

struct Server {
    child: Child,
    base: String,
    dir: PathBuf,
    agent: ureq::Agent,
    /// Whether the data directory goes with the server.
    remove: bool,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn start() -> Server {
    start_named("hooks")
}

fn start_named(tag: &str) -> Server {
    let dir = std::env::temp_dir().join(format!("host-server-outbox-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // the tests' receivers listen on 127.0.0.1, which the policy refuses unless allow-listed
    let mut server = start_in(dir, "127.0.0.1");
    server.remove = true;
    server
}

/// A server on the data under `dir` (kept), allow-listing the webhook destinations `allow`.
fn start_in(dir: PathBuf, allow: &str) -> Server {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("server.log"))
        .unwrap();
    let mut child = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--log", "info", "--data"])
        .arg(dir.join("data"))
        .env("ADMIN_PASSWORD", PASSWORD)
        .env("WEBHOOK_ALLOW", allow)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let base = loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "server exited early");
        if let Some(addr) = line.trim_end().strip_prefix("listening on ") {
            break addr.to_string();
        }
    };
    // Keep reading stdout so the server never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = out.read_to_string(&mut sink);
    });
    let agent = common::agent();
    Server {
        child,
        base,
        dir,
        agent,
        remove: false,
    }
}

impl Server {
    fn anonymous(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        common::request_json(&self.agent, &self.base, method, path, None, body.as_ref())
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        use base64::Engine as _;
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"));
        common::request_json(
            &self.agent,
            &self.base,
            method,
            path,
            Some(&format!("Basic {auth}")),
            body.as_ref(),
        )
    }

    fn ok(&self, method: &str, path: &str, body: Option<Value>, want: u16) -> Value {
        let (status, v) = self.call(method, path, body);
        assert_eq!(status, want, "{method} {path}: {v}");
        v
    }
}

/// One mail as the SMTP sink received it: envelope and data.
#[derive(Debug)]
struct Mail {
    from: String,
    to: Vec<String>,
    data: String,
}

/// A minimal SMTP server (the commands lettre sends without TLS or authentication).
fn smtp_sink() -> (u16, mpsc::Receiver<Mail>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            if let Some(mail) = smtp_session(stream) {
                let _ = tx.send(mail);
            }
        }
    });
    (port, rx)
}

fn smtp_session(stream: TcpStream) -> Option<Mail> {
    let mut w = stream.try_clone().ok()?;
    let mut r = BufReader::new(stream);
    write!(w, "220 sink ESMTP\r\n").ok()?;
    let mut mail = Mail {
        from: String::new(),
        to: Vec::new(),
        data: String::new(),
    };
    let mut got = false;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            break;
        }
        let cmd = line.trim_end().to_string();
        let upper = cmd.to_ascii_uppercase();
        if upper.starts_with("EHLO") || upper.starts_with("HELO") {
            write!(w, "250-sink\r\n250 8BITMIME\r\n").ok()?;
        } else if upper.starts_with("MAIL FROM:") {
            mail.from = cmd[10..].trim().to_string();
            write!(w, "250 OK\r\n").ok()?;
        } else if upper.starts_with("RCPT TO:") {
            if upper.contains("NOBODY@") {
                // a permanent refusal, as a real server answers for an unknown mailbox
                write!(w, "550 5.1.1 no such mailbox\r\n").ok()?;
                continue;
            }
            mail.to.push(cmd[8..].trim().to_string());
            write!(w, "250 OK\r\n").ok()?;
        } else if upper == "DATA" {
            write!(w, "354 go ahead\r\n").ok()?;
            loop {
                let mut l = String::new();
                if r.read_line(&mut l).ok()? == 0 {
                    return None;
                }
                if l == ".\r\n" {
                    break;
                }
                mail.data.push_str(&l);
            }
            got = true;
            write!(w, "250 queued\r\n").ok()?;
        } else if upper == "QUIT" {
            write!(w, "221 bye\r\n").ok()?;
            break;
        } else {
            write!(w, "250 OK\r\n").ok()?;
        }
    }
    got.then_some(mail)
}

fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn webhook_is_signed_retried_and_mail_reaches_smtp() {
    let (hook_url, hooks) = common::webhook_receiver(1);
    let (smtp_port, mails) = smtp_sink();
    let server = start();
    server.ok(
        "PATCH",
        "/@controlpanels/mail",
        Some(json!({"smtp_host": "127.0.0.1", "smtp_port": smtp_port,
                    "email_from_address": "site@example.com"})),
        204,
    );
    let rule = server.ok(
        "POST",
        "/@controlpanels/content-rules",
        Some(json!({"title": "Announce", "event": "onAfterAdd", "secret": "hook-secret"})),
        201,
    );
    let id = rule["id"].as_str().unwrap().to_string();
    server.ok(
        "POST",
        &format!("/@controlpanels/content-rules/{id}/action"),
        Some(json!({"type": "nick.actions.Webhook", "url": hook_url})),
        201,
    );
    server.ok(
        "POST",
        &format!("/@controlpanels/content-rules/{id}/action"),
        Some(
            json!({"type": "plone.actions.Mail", "subject": "New: ${title}",
                    "recipients": "editors@example.com", "message": "See ${url}"}),
        ),
        201,
    );
    server.ok("POST", &format!("/@content-rules/{id}"), None, 201);

    let created = Instant::now();
    let page = server.ok(
        "POST",
        "/",
        Some(json!({"@type": "Page", "id": "hello", "title": "Hello"})),
        201,
    );
    assert_eq!(page["@id"], format!("{}/hello", server.base));

    // First attempt: the receiver answers 500; the job is queued again.
    let first = hooks
        .recv_timeout(Duration::from_secs(10))
        .expect("first attempt");
    assert_eq!(first.header("X-Delivery-Attempt"), Some("1"));
    let key = first.header("Idempotency-Key").unwrap().to_string();
    // Second attempt, after the backoff: delivered.
    let second = hooks.recv_timeout(Duration::from_secs(10)).expect("retry");
    assert_eq!(second.header("X-Delivery-Attempt"), Some("2"));
    assert_eq!(second.header("Idempotency-Key"), Some(key.as_str()));
    assert!(
        second.at.duration_since(first.at) >= Duration::from_millis(900),
        "the retry waited for the backoff"
    );
    assert_eq!(first.body, second.body, "every attempt posts the same body");
    assert_eq!(second.header("Content-Type"), Some("application/json"));

    // The signature is the HMAC-SHA256 of the body under the rule's secret.
    let mut mac = Hmac::<Sha256>::new_from_slice(b"hook-secret").unwrap();
    mac.update(&second.body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        second.header("X-Signature-256"),
        Some(format!("sha256={hex}").as_str())
    );
    let event: Value = serde_json::from_slice(&second.body).unwrap();
    assert_eq!(event["trigger"], "onAfterAdd");
    assert_eq!(event["rule"], id.as_str());
    assert_eq!(event["actor"], "admin");
    assert_eq!(event["object"]["@id"], format!("{}/hello", server.base));
    assert_eq!(event["object"]["@type"], "Page");
    assert_eq!(event["object"]["title"], "Hello");
    eprintln!(
        "webhook: first attempt {:?} after the create",
        first.at.duration_since(created)
    );

    // The job shows the outcome.
    let job = wait_for(
        "the webhook job to complete",
        Duration::from_secs(10),
        || {
            let job = server.ok("GET", &format!("/@jobs/{key}"), None, 200);
            (job["status"] == "completed").then_some(job)
        },
    );
    assert_eq!(job["attempts"], 2);
    assert_eq!(job["result"]["response_status"], 200);
    assert_eq!(job["kind"], "webhook");

    // The mail reached the SMTP sink, from the mail panel's sender.
    let mail = mails.recv_timeout(Duration::from_secs(10)).expect("a mail");
    assert_eq!(mail.from, "<site@example.com>");
    assert_eq!(mail.to, vec!["<editors@example.com>".to_string()]);
    assert!(mail.data.contains("Subject: New: Hello"), "{}", mail.data);
    assert!(
        mail.data.contains(&format!("See {}/hello", server.base)),
        "{}",
        mail.data
    );
    let jobs = server.ok("GET", "/@jobs", None, 200);
    let mail_job = jobs
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["kind"] == "mail")
        .unwrap()
        .clone();
    let uuid = mail_job["uuid"].as_str().unwrap();
    assert!(
        mail.data.contains(&format!("<{uuid}@outbox>")),
        "the Message-ID carries the idempotency key: {}",
        mail.data
    );
    wait_for("the mail job to complete", Duration::from_secs(10), || {
        let job = server.ok("GET", &format!("/@jobs/{uuid}"), None, 200);
        (job["status"] == "completed").then_some(())
    });
}

#[test]
fn a_scheduled_webhook_runs_on_its_schedule() {
    let (hook_url, hooks) = common::webhook_receiver(0);
    let server = start_named("schedule");
    let job = server.ok(
        "POST",
        "/@scheduled-jobs",
        Some(json!({"id": "ping", "title": "Ping", "action": "webhook",
                    "params": {"url": hook_url, "secret": "tick-secret"},
                    "schedule": "* * * * * *"})),
        201,
    );
    assert_eq!(job["params"]["secret"], "********", "the key is not shown");
    // Every second, without anyone starting it.
    let first = hooks.recv_timeout(Duration::from_secs(10)).expect("a run");
    let second = hooks
        .recv_timeout(Duration::from_secs(10))
        .expect("another run");
    assert_ne!(
        first.header("Idempotency-Key"),
        second.header("Idempotency-Key"),
        "each run is its own job"
    );
    let mut mac = Hmac::<Sha256>::new_from_slice(b"tick-secret").unwrap();
    mac.update(&first.body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        first.header("X-Signature-256"),
        Some(format!("sha256={hex}").as_str())
    );
    let doc: Value = serde_json::from_slice(&first.body).unwrap();
    assert_eq!(doc["scheduled_job"], "ping");
    let s = server.ok("GET", "/@scheduled-jobs/ping", None, 200);
    assert!(s["last_run"].is_string(), "{s}");
}

#[test]
fn reset_and_visitor_mail_reach_smtp_as_the_site_and_a_refused_recipient_fails_at_once() {
    let (smtp_port, mails) = smtp_sink();
    let server = start_named("reset");
    server.ok(
        "PATCH",
        "/@controlpanels/mail",
        Some(json!({"smtp_host": "127.0.0.1", "smtp_port": smtp_port,
                    "email_from_address": "site@example.com", "email_from_name": "The Site"})),
        204,
    );
    server.ok(
        "POST",
        "/@users",
        Some(json!({"username": "rosa", "email": "rosa@example.com",
                    "password": "rosa-password"})),
        201,
    );
    // A reset answers the same for a known and an unknown login, and the known one gets a mail.
    let known = server.anonymous("POST", "/@users/rosa/reset-password", None);
    let unknown = server.anonymous("POST", "/@users/ghost/reset-password", None);
    assert_eq!(known.0, 200, "{known:?}");
    assert_eq!(known, unknown);
    let reset = mails
        .recv_timeout(Duration::from_secs(10))
        .expect("the reset mail");
    assert_eq!(reset.from, "<site@example.com>");
    assert_eq!(reset.to, vec!["<rosa@example.com>".to_string()]);
    assert!(
        reset.data.contains("Subject: Password reset"),
        "{}",
        reset.data
    );
    assert!(reset.data.contains("The Site"), "{}", reset.data);

    // A visitor's message is sent as the site, with the visitor in Reply-To.
    let (status, v) = server.anonymous(
        "POST",
        "/@email-notification",
        Some(json!({"from": "visitor@example.net", "message": "Hello there"})),
    );
    assert_eq!(status, 204, "{v}");
    let note = mails
        .recv_timeout(Duration::from_secs(10))
        .expect("the visitor's mail");
    assert_eq!(
        note.from, "<site@example.com>",
        "the envelope sender is the site"
    );
    let header = |name: &str| {
        note.data
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with(&format!("{name}:")))
            .unwrap_or_default()
            .to_string()
    };
    assert!(header("from").contains("The Site"), "{}", note.data);
    assert!(
        header("from").contains("<site@example.com>"),
        "{}",
        note.data
    );
    assert!(
        header("reply-to").contains("visitor@example.net"),
        "{}",
        note.data
    );

    // A recipient the SMTP server refuses for good (550) fails at once, with the reason.
    server.ok(
        "POST",
        "/@email-send",
        Some(json!({"to": "nobody@example.com", "from": "site@example.com", "message": "Hi"})),
        204,
    );
    let failed = wait_for("the refused mail to fail", Duration::from_secs(10), || {
        let jobs = server.ok("GET", "/@jobs", None, 200);
        jobs.as_array()
            .unwrap()
            .iter()
            .find(|j| j["params"]["to"] == json!(["nobody@example.com"]) && j["status"] == "failed")
            .cloned()
    });
    assert_eq!(failed["attempts"], 1, "{failed}");
    assert_eq!(failed["result"]["permanent"], true, "{failed}");
    assert!(
        failed["result"]["error"].as_str().unwrap().contains("550"),
        "{failed}"
    );

    // Reset requests are throttled per login and client address (every request counts).
    let mut statuses = Vec::new();
    for _ in 0..12 {
        statuses.push(
            server
                .anonymous("POST", "/@users/ghost/reset-password", None)
                .0,
        );
    }
    assert!(statuses.contains(&429), "{statuses:?}");
}

/// A receiver that answers every request with `status` and `extra` headers, counting them.
fn answering(status: &'static str, extra: String) -> (String, mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            if common::read_http(&stream).is_none() {
                continue;
            }
            let mut s = stream;
            let _ = write!(
                s,
                "HTTP/1.1 {status}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = tx.send(());
        }
    });
    (url, rx)
}

/// The job of the rule action's webhook to `url`, once it is `status`.
fn webhook_job(server: &Server, url: &str, status: &str) -> Value {
    wait_for(
        &format!("the webhook to {url} to be {status}"),
        Duration::from_secs(10),
        || {
            let jobs = server.ok("GET", "/@jobs", None, 200);
            jobs.as_array()
                .unwrap()
                .iter()
                .find(|j| j["params"]["url"] == url && j["status"] == status)
                .cloned()
        },
    )
}

fn webhook_rule(server: &Server, urls: &[&str]) -> Vec<u16> {
    let rule = server.ok(
        "POST",
        "/@controlpanels/content-rules",
        Some(json!({"title": "Hooks", "event": "onAfterAdd"})),
        201,
    );
    let id = rule["id"].as_str().unwrap().to_string();
    let statuses = urls
        .iter()
        .map(|url| {
            server
                .call(
                    "POST",
                    &format!("/@controlpanels/content-rules/{id}/action"),
                    Some(json!({"type": "nick.actions.Webhook", "url": url})),
                )
                .0
        })
        .collect();
    server.ok("POST", &format!("/@content-rules/{id}"), None, 201);
    statuses
}

#[test]
fn webhooks_keep_to_the_destination_policy() {
    // Without an allow-list: internal destinations are refused when the rule is saved.
    let dir =
        std::env::temp_dir().join(format!("host-server-outbox-policy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let strict = start_in(dir.clone(), "");
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:22/",
        "http://localhost:6379/",
        "http://2130706433/",
        "http://10.0.0.1/",
    ] {
        let rule = strict.ok(
            "POST",
            "/@controlpanels/content-rules",
            Some(json!({"title": "Leak", "event": "onAfterAdd"})),
            201,
        );
        let id = rule["id"].as_str().unwrap();
        let (status, v) = strict.call(
            "POST",
            &format!("/@controlpanels/content-rules/{id}/action"),
            Some(json!({"type": "nick.actions.Webhook", "url": url})),
        );
        assert_eq!(status, 400, "{url}: {v}");
        assert!(
            v["message"].as_str().unwrap().contains("'url'"),
            "{url}: {v}"
        );
        let rule = strict.ok(
            "GET",
            &format!("/@controlpanels/content-rules/{id}"),
            None,
            200,
        );
        assert_eq!(rule["actions"], json!([]), "nothing was added for {url}");
    }
    drop(strict);

    // Allow-listed (as the tests' own receivers are): a closed port and a redirect elsewhere.
    let server = start_in(dir.clone(), "127.0.0.1");
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/hook", l.local_addr().unwrap())
    };
    let (elsewhere, elsewhere_hits) = answering("200 OK", String::new());
    let elsewhere = elsewhere.replace("127.0.0.1", "127.0.0.2");
    let (redirecting, redirect_hits) = answering("302 Found", format!("Location: {elsewhere}\r\n"));
    let (later, later_hits) = answering("204 No Content", String::new());
    assert_eq!(
        webhook_rule(&server, &[&closed, &redirecting, &later]),
        vec![201, 201, 201]
    );
    server.ok(
        "POST",
        "/",
        Some(json!({"@type": "Page", "id": "p1", "title": "One"})),
        201,
    );
    // the closed port: a retry, and an error that does not say "refused"
    let j = webhook_job(&server, &closed, "queued");
    assert_eq!(
        j["result"]["error"], "could not connect to the receiver",
        "{j}"
    );
    assert!(j["result"].get("response_status").is_none(), "{j}");
    // the redirect to another host is not followed: the 302 is the receiver's final answer
    let j = webhook_job(&server, &redirecting, "failed");
    assert_eq!(j["result"]["response_status"], 302, "{j}");
    assert_eq!(j["result"]["permanent"], true, "{j}");
    assert!(redirect_hits.recv_timeout(Duration::from_secs(1)).is_ok());
    assert!(
        elsewhere_hits
            .recv_timeout(Duration::from_millis(500))
            .is_err(),
        "the redirect was followed to another host"
    );
    webhook_job(&server, &later, "completed");
    assert!(later_hits.recv_timeout(Duration::from_secs(1)).is_ok());
    drop(server);

    // The allow-list is gone: a rule saved before is checked again at delivery, and refused.
    let strict = start_in(dir.clone(), "");
    strict.ok(
        "POST",
        "/",
        Some(json!({"@type": "Page", "id": "p2", "title": "Two"})),
        201,
    );
    let j = wait_for("the refused delivery", Duration::from_secs(10), || {
        let jobs = strict.ok("GET", "/@jobs", None, 200);
        jobs.as_array()
            .unwrap()
            .iter()
            .find(|j| {
                j["params"]["url"] == later
                    && j["params"]["object"]
                        .as_str()
                        .is_some_and(|o| o.ends_with("/p2"))
                    && j["attempts"].as_u64() >= Some(1)
                    && j["status"] != "running"
            })
            .cloned()
    });
    let error = j["result"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("destination policy"), "{j}");
    assert!(
        later_hits.recv_timeout(Duration::from_millis(500)).is_err(),
        "a refused destination was called"
    );
    drop(strict);
    let _ = std::fs::remove_dir_all(&dir);
}
