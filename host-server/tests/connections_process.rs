//! Connection handling under abuse, on the real binary (issue 35, finding 1): a probe is still
//! answered quickly while 1,000 idle, slow and streaming connections are open; connections past
//! the per-address limit are closed at once; event streams are budgeted per address and for
//! anonymous callers; kept-alive connections stay open for the idle timeout, not the header one.
//!
//! The attacking connections come from other loopback addresses (127.0.0.2 and up: all of
//! 127.0.0.0/8 is the loopback interface on Linux) so that the per-address limits apply to them
//! and not to the probe from 127.0.0.1.
#![cfg(target_os = "linux")]

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdout, Command};
use std::time::{Duration, Instant};

mod common;

use common::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_host-server");
const PASSWORD: &str = "connections-secret";

/// The bound the issue sets for a probe answered while the server is under this load.
const PROBE_BOUND: Duration = Duration::from_millis(100);

struct Server {
    child: Child,
    _stdout: std::io::BufReader<ChildStdout>,
    addr: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(data: &Path, log: &Path, extra: &[&str]) -> Server {
    let common::Listening {
        child,
        stdout,
        base,
        ..
    } = common::spawn_listening(
        Command::new(BIN)
            .args(["--listen", "127.0.0.1:0", "--log", "warn", "--data"])
            .arg(data)
            .args(extra)
            .env("ADMIN_PASSWORD", PASSWORD),
        log,
    );
    let addr = base
        .strip_prefix("http://")
        .and_then(|a| a.parse().ok())
        .expect("the server's address");
    Server {
        child,
        _stdout: stdout,
        addr,
    }
}

/// A connection to `server` from the local address `from`.
fn connect_from(rt: &tokio::runtime::Runtime, from: Ipv4Addr, server: SocketAddr) -> TcpStream {
    let stream = rt
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(SocketAddr::new(IpAddr::V4(from), 0))?;
            socket.connect(server).await
        })
        .unwrap_or_else(|e| panic!("connecting from {from}: {e}"));
    let stream = stream.into_std().expect("a std socket");
    stream.set_nonblocking(false).expect("blocking mode");
    stream
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Whether the server closed `s` (or reset it) within `within`; `false` while it stays open.
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut buf = [0u8; 1024];
    while Instant::now() < deadline {
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .expect("a read timeout");
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return true,
        }
    }
    false
}

/// Whether `s` is still open (nothing to read, no end of stream).
fn still_open(s: &TcpStream) -> bool {
    s.set_nonblocking(true).expect("non-blocking");
    let mut buf = [0u8; 1];
    let open = matches!(s.peek(&mut buf), Err(e) if e.kind() == ErrorKind::WouldBlock)
        || matches!(s.peek(&mut buf), Ok(n) if n > 0);
    s.set_nonblocking(false).expect("blocking");
    open
}

/// Read from `s` until `text` has come (true) or `within` passed (false); what came.
fn read_until(s: &mut TcpStream, text: &str, within: Duration) -> (bool, String) {
    let deadline = Instant::now() + within;
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        if String::from_utf8_lossy(&seen).contains(text) {
            return (true, String::from_utf8_lossy(&seen).into_owned());
        }
        s.set_read_timeout(Some(Duration::from_millis(50)))
            .expect("a read timeout");
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    let text_seen = String::from_utf8_lossy(&seen).into_owned();
    (text_seen.contains(text), text_seen)
}

/// A whole request on a fresh connection from 127.0.0.1 (`Connection: close`): its status line
/// and how long the answer took, from connecting to its last byte.
fn probe(addr: SocketAddr, path: &str) -> (String, Duration) {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).expect("the probe connects");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a read timeout");
    s.write_all(
        format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .expect("the probe is sent");
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let took = started.elapsed();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer.lines().next().unwrap_or("").to_string();
    (status, took)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Issue 35: "A test opens 1,000 idle, slow and streaming connections and shows a probe request
/// still answered within 100 ms." 20 attacking addresses open 50 connections each, a third of
/// them silent, a third dripping a request head a byte at a time, a third anonymous change
/// feed streams; while all are open, probes from 127.0.0.1 are answered and the median of
/// their times is within the bound. The header timeout is raised so that no attacking connection
/// is cut off during the test (the point is that they are all held).
#[test]
fn a_probe_is_answered_quickly_while_1000_idle_slow_and_streaming_connections_are_open() {
    // 1,000 sockets and the server's as many: more than a default soft limit of 1,024.
    let files = rlimit::increase_nofile_limit(4096).expect("the open-file limit");
    assert!(
        files >= 1100,
        "the open-file limit ({files}) is too low for 1,000 connections"
    );
    let tmp = TempDir::new("abuse");
    let server = start(
        &tmp.data(),
        &tmp.0.join("server.log"),
        &["--header-timeout", "120"],
    );
    let addr = server.addr;
    let rt = runtime();
    let (mut idle, mut slow, mut streams) = (Vec::new(), Vec::new(), Vec::new());
    for a in 0..20u8 {
        let from = Ipv4Addr::new(127, 0, 0, 2 + a);
        for i in 0..50 {
            let mut s = connect_from(&rt, from, addr);
            match i % 3 {
                0 => idle.push(s),
                1 => {
                    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                        .expect("a slow head starts");
                    slow.push(s);
                }
                _ => {
                    s.write_all(
                        format!(
                            "GET /@changes HTTP/1.1\r\nHost: {addr}\r\n\
                             Accept: text/event-stream\r\n\r\n"
                        )
                        .as_bytes(),
                    )
                    .expect("a stream request");
                    streams.push(s);
                }
            }
        }
    }
    assert_eq!(idle.len() + slow.len() + streams.len(), 1000);
    // Every stream request is answered: the anonymous budget's worth open, the rest refused.
    let (mut open_streams, mut refused) = (0, 0);
    for s in &mut streams {
        let (whole, seen) = read_until(s, "\r\n\r\n", Duration::from_secs(30));
        assert!(whole, "a stream request got no answer head: {seen:?}");
        if seen.starts_with("HTTP/1.1 200") {
            assert!(seen.contains("text/event-stream"), "{seen}");
            open_streams += 1;
        } else {
            assert!(seen.starts_with("HTTP/1.1 429"), "{seen}");
            refused += 1;
        }
    }
    assert_eq!(open_streams, 32, "the default anonymous stream budget");
    assert_eq!(refused, streams.len() - 32);

    // Probes while the slow heads go on dripping.
    let mut times = Vec::new();
    for round in 0..15 {
        for s in &mut slow {
            let _ = s.write_all(b"x");
        }
        let path = if round % 2 == 0 { "/" } else { "/@site" };
        let (status, took) = probe(addr, path);
        assert!(status.starts_with("HTTP/1.1 200"), "{path}: {status:?}");
        times.push(took);
        std::thread::sleep(Duration::from_millis(100));
    }
    let m = median(times.clone());
    let ms: Vec<u128> = times.iter().map(|t| t.as_millis()).collect();
    println!(
        "probe latency with 1000 idle/slow/streaming connections open: median {} ms, all {ms:?} ms",
        m.as_millis()
    );
    let held = idle.iter().chain(&slow).filter(|s| still_open(s)).count();
    assert_eq!(
        held,
        idle.len() + slow.len(),
        "idle and slow connections were dropped: the test did not hold them"
    );
    assert!(
        m <= PROBE_BOUND,
        "median probe latency {} ms exceeds {} ms (all: {ms:?} ms)",
        m.as_millis(),
        PROBE_BOUND.as_millis()
    );
}

/// A connection past `--max-connections-per-address` is closed at once; other addresses are
/// served, and the address gets a connection again once one of its own closes.
#[test]
fn connections_past_the_per_address_limit_are_closed_at_once() {
    let tmp = TempDir::new("per-address");
    let server = start(
        &tmp.data(),
        &tmp.0.join("server.log"),
        &["--max-connections-per-address", "4"],
    );
    let addr = server.addr;
    let rt = runtime();
    let from = Ipv4Addr::new(127, 0, 0, 9);
    let mut held: Vec<TcpStream> = (0..4).map(|_| connect_from(&rt, from, addr)).collect();
    let mut fifth = connect_from(&rt, from, addr);
    assert!(
        closed_within(&mut fifth, Duration::from_secs(3)),
        "a fifth connection from one address stayed open"
    );
    let (status, _) = probe(addr, "/@site");
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert!(held.iter().all(still_open), "the first four were closed");
    drop(held.pop());
    std::thread::sleep(Duration::from_millis(200));
    let mut again = connect_from(&rt, from, addr);
    again
        .write_all(
            format!("GET /@site HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .expect("a request");
    let (ok, seen) = read_until(&mut again, "HTTP/1.1 200", Duration::from_secs(10));
    assert!(ok, "{seen}");
}

fn basic_admin() -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"))
}

/// Open a change feed stream from `from`; the head of its answer.
fn open_stream(
    rt: &tokio::runtime::Runtime,
    from: Ipv4Addr,
    addr: SocketAddr,
    auth: bool,
) -> (TcpStream, String) {
    let mut s = connect_from(rt, from, addr);
    let auth = if auth {
        format!("Authorization: Basic {}\r\n", basic_admin())
    } else {
        String::new()
    };
    s.write_all(
        format!(
            "GET /@changes HTTP/1.1\r\nHost: {addr}\r\n{auth}Accept: text/event-stream\r\n\r\n"
        )
        .as_bytes(),
    )
    .expect("a stream request");
    let (_, seen) = read_until(&mut s, "\r\n\r\n", Duration::from_secs(10));
    (s, seen)
}

/// Event streams are budgeted: anonymous ones can be refused altogether, and one address holds
/// at most `--max-streams-per-address`; a refusal is the engine's 429 JSON with Retry-After,
/// and a closed stream gives its place back.
#[test]
fn event_streams_are_budgeted_per_address_and_for_anonymous_callers() {
    let tmp = TempDir::new("stream-budget");
    let server = start(
        &tmp.data(),
        &tmp.0.join("server.log"),
        &[
            "--max-anonymous-streams",
            "0",
            "--max-streams-per-address",
            "2",
        ],
    );
    let addr = server.addr;
    let rt = runtime();
    let from = Ipv4Addr::new(127, 0, 0, 10);
    let (_anon, head) = open_stream(&rt, from, addr, false);
    assert!(head.starts_with("HTTP/1.1 429"), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("retry-after: 60"),
        "{head}"
    );
    let (one, head) = open_stream(&rt, from, addr, true);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let (_two, head) = open_stream(&rt, from, addr, true);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let (mut three, head) = open_stream(&rt, from, addr, true);
    assert!(head.starts_with("HTTP/1.1 429"), "{head}");
    let (_, rest) = read_until(&mut three, "}", Duration::from_secs(1));
    let body = head + &rest;
    assert!(body.contains("\"TooManyRequests\""), "{body}");
    assert!(body.contains("from this address"), "{body}");
    let (_other, head) = open_stream(&rt, Ipv4Addr::new(127, 0, 0, 11), addr, true);
    assert!(head.starts_with("HTTP/1.1 200"), "another address: {head}");
    drop(one);
    std::thread::sleep(Duration::from_millis(300));
    let (_again, head) = open_stream(&rt, from, addr, true);
    assert!(head.starts_with("HTTP/1.1 200"), "after one closed: {head}");
}

/// Issue 35: idle keep-alive connections were closed after about 10 s (the header timeout)
/// although the README says 60 s (the idle timeout). A kept-alive connection now serves a request
/// sent after more than the header timeout; a new connection that sends nothing is still closed
/// after the header timeout.
#[test]
fn kept_alive_connections_last_the_idle_timeout_and_silent_ones_the_header_timeout() {
    let tmp = TempDir::new("keep-alive");
    let server = start(
        &tmp.data(),
        &tmp.0.join("server.log"),
        &["--header-timeout", "1", "--idle-timeout", "10"],
    );
    let addr = server.addr;
    let mut kept = TcpStream::connect(addr).expect("a connection");
    let request =
        format!("GET /@site HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\n\r\n");
    kept.write_all(request.as_bytes()).expect("a request");
    let (ok, seen) = read_until(&mut kept, "HTTP/1.1 200", Duration::from_secs(10));
    assert!(ok, "{seen}");
    let mut silent = TcpStream::connect(addr).expect("a connection");
    let started = Instant::now();
    assert!(
        closed_within(&mut silent, Duration::from_secs(4)),
        "a silent new connection stayed open past the header timeout"
    );
    println!(
        "a silent connection was closed after {} ms",
        started.elapsed().as_millis()
    );
    // Drain the first answer, wait past the header timeout, and use the connection again.
    let _ = read_until(&mut kept, "\"@id\"", Duration::from_secs(1));
    std::thread::sleep(Duration::from_millis(2500));
    kept.write_all(request.as_bytes())
        .expect("the kept-alive connection takes a second request");
    let (ok, seen) = read_until(&mut kept, "HTTP/1.1 200", Duration::from_secs(10));
    assert!(
        ok,
        "a kept-alive connection idle for 2.5 s was closed: {seen:?}"
    );
}
