//! The change feed on the real binary: Server-Sent Events pushed when a commit is done (and
//! resumed with `Last-Event-ID`), keep-alives, streams ended by a shutdown, and cursors that
//! survive a restart on the same data directory.
#![cfg(unix)]

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStdout, Command};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;

use common::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_host-server");
const PASSWORD: &str = "changes-secret";

struct Server {
    child: Child,
    _stdout: BufReader<ChildStdout>,
    base: String,
    addr: String,
    agent: ureq::Agent,
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn start(data: &Path, log: &Path) -> Server {
    let common::Listening {
        child,
        stdout,
        base,
        ..
    } = common::spawn_listening(
        Command::new(BIN)
            .args(["--listen", "127.0.0.1:0", "--log", "info", "--data"])
            .arg(data)
            .env("ADMIN_PASSWORD", PASSWORD),
        log,
    );
    let addr = base.strip_prefix("http://").unwrap().to_string();
    let agent = common::agent();
    let (status, body) = common::request_json(
        &agent,
        &base,
        "POST",
        "/@login",
        None,
        Some(&json!({"login": "admin", "password": PASSWORD})),
    );
    assert_eq!(status, 200, "{body}");
    let token = body["token"].as_str().unwrap().to_string();
    Server {
        child,
        _stdout: stdout,
        base,
        addr,
        agent,
        token,
    }
}

impl Server {
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let auth = format!("Bearer {}", self.token);
        common::request_json(
            &self.agent,
            &self.base,
            method,
            path,
            Some(&auth),
            body.as_ref(),
        )
    }

    fn cursor(&self) -> String {
        let (status, body) = self.call("GET", "/@changes", None);
        assert_eq!(status, 200, "{body}");
        body["cursor"].as_str().unwrap().to_string()
    }

    fn create(&self, title: &str) -> String {
        let (status, body) = self.call("POST", "/", Some(json!({"@type": "Page", "title": title})));
        assert_eq!(status, 201, "{body}");
        body["UID"].as_str().unwrap().to_string()
    }

    /// Open `GET /@changes` as an event stream with `extra` header lines.
    fn stream(&self, query: &str, extra: &str) -> Events {
        let mut tcp = TcpStream::connect(&self.addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        write!(
            tcp,
            "GET /@changes{query} HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n\
             Authorization: Bearer {}\r\n{extra}\r\n",
            self.addr, self.token
        )
        .unwrap();
        let mut events = Events {
            tcp,
            seen: String::new(),
        };
        assert!(
            events.wait_for("\r\n\r\n", Duration::from_secs(10)),
            "no answer: {}",
            events.seen
        );
        let head = events.seen.to_ascii_lowercase();
        assert!(head.starts_with("http/1.1 200"), "{}", events.seen);
        assert!(head.contains("content-type: text/event-stream"), "{head}");
        events
    }
}

/// What an event stream sent so far.
struct Events {
    tcp: TcpStream,
    seen: String,
}

impl Events {
    /// Read until `text` has been received (true) or `within` passed (false).
    fn wait_for(&mut self, text: &str, within: Duration) -> bool {
        let until = Instant::now() + within;
        let mut buf = [0u8; 4096];
        while !self.seen.contains(text) {
            if Instant::now() > until {
                return false;
            }
            match self.tcp.read(&mut buf) {
                Ok(0) => return self.seen.contains(text),
                Ok(n) => self.seen.push_str(&String::from_utf8_lossy(&buf[..n])),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => panic!("reading the stream: {e}"),
            }
        }
        true
    }

    /// The events received so far: (id, data as JSON).
    fn events(&self) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        let mut id = String::new();
        for line in self.seen.lines() {
            if let Some(i) = line.strip_prefix("id: ") {
                id = i.to_string();
            } else if let Some(d) = line.strip_prefix("data: ") {
                out.push((id.clone(), serde_json::from_str(d).unwrap()));
            }
        }
        out
    }
}

#[test]
fn changes_are_pushed_as_server_sent_events_and_resume_from_last_event_id() {
    let tmp = TempDir::new("changes-sse");
    let server = start(&tmp.data(), &tmp.0.join("server.log"));
    let c0 = server.cursor();
    let mut stream = server.stream(&format!("?since={c0}"), "");
    assert!(stream.wait_for("retry:", Duration::from_secs(5)));
    assert!(stream.events().is_empty(), "{}", stream.seen);

    // A change made through another request arrives on the open stream.
    let started = Instant::now();
    let uid = server.create("Pushed");
    assert!(
        stream.wait_for(&uid, Duration::from_secs(10)),
        "the new page never arrived: {}",
        stream.seen
    );
    assert!(stream.wait_for("\n\n", Duration::from_secs(1)));
    println!(
        "event received {:?} after the POST began",
        started.elapsed()
    );
    let events = stream.events();
    let (page_id, page) = events
        .iter()
        .find(|(_, e)| e["UID"] == uid.as_str())
        .unwrap()
        .clone();
    assert_eq!(page["action"], "added");
    assert_eq!(page["path"], "/pushed");
    assert_eq!(page["cursor"], page_id.as_str());
    assert!(stream.seen.contains("event: change\n"), "{}", stream.seen);
    let (status, got) = server.call("GET", "/pushed", None);
    assert_eq!(status, 200);
    assert_eq!(page["UID"], got["UID"]);
    drop(stream);

    // Reconnect after the page's event: what came after it (the root, whose child list
    // changed), then a new change.
    let mut again = server.stream("", &format!("Last-Event-ID: {page_id}\r\n"));
    assert!(again.wait_for("retry:", Duration::from_secs(5)));
    assert!(again.wait_for("\n\n", Duration::from_secs(5)));
    let first = again.events();
    assert_eq!(first.len(), 1, "{}", again.seen);
    assert_eq!(first[0].1["path"], "/");
    assert!(!again.seen.contains(&uid), "{}", again.seen);
    let (status, _) = server.call("PATCH", "/pushed", Some(json!({"title": "Edited"})));
    assert_eq!(status, 204);
    assert!(
        again.wait_for(&uid, Duration::from_secs(10)),
        "the edit never arrived: {}",
        again.seen
    );
    assert!(again.wait_for("\n\n", Duration::from_secs(1)));
    let edit = again.events().pop().unwrap().1;
    assert_eq!(edit["action"], "modified");

    // Nothing changes for a while: a keep-alive comment.
    assert!(
        again.wait_for(": keep-alive", Duration::from_secs(20)),
        "no keep-alive: {}",
        again.seen
    );

    // A stream does not hold up a shutdown.
    let stopping = Instant::now();
    let mut server = server;
    assert!(Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let status = server.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(
        stopping.elapsed() < Duration::from_secs(10),
        "shutdown took {:?} with a stream open",
        stopping.elapsed()
    );
}

#[test]
fn errors_before_the_stream_are_json() {
    let tmp = TempDir::new("changes-sse-errors");
    let server = start(&tmp.data(), &tmp.0.join("server.log"));
    let mut tcp = TcpStream::connect(&server.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        tcp,
        "GET /@changes?since=nonsense HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n\
         Connection: close\r\n\r\n",
        server.addr
    )
    .unwrap();
    let mut answer = String::new();
    let _ = tcp.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("application/json"), "{answer}");
    assert!(answer.contains("since"), "{answer}");
}

#[test]
fn change_cursors_survive_a_restart() {
    let tmp = TempDir::new("changes-restart");
    let log = tmp.0.join("server.log");
    let server = start(&tmp.data(), &log);
    let c0 = server.cursor();
    let first = server.create("Before");
    let c1 = server.cursor();
    assert_ne!(c0, c1);
    drop(server);

    let server = start(&tmp.data(), &log);
    assert_eq!(server.cursor(), c1, "the log's end is where it was");
    let (status, page) = server.call("GET", &format!("/@changes?since={c1}"), None);
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["changes"], json!([]));
    assert_eq!(page["cursor"], c1.as_str());
    let (status, page) = server.call("GET", &format!("/@changes?since={c0}"), None);
    assert_eq!(status, 200, "{page}");
    let uids: Vec<&str> = page["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["UID"].as_str().unwrap())
        .collect();
    assert!(uids.contains(&first.as_str()), "{page}");
    let second = server.create("After");
    let (status, page) = server.call("GET", &format!("/@changes?since={c1}"), None);
    assert_eq!(status, 200, "{page}");
    let added: Vec<&Value> = page["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["action"] == "added")
        .collect();
    assert_eq!(added.len(), 1, "{page}");
    assert_eq!(added[0]["UID"], second.as_str());
}
