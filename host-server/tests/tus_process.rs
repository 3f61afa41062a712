//! A 100 MB upload through tus against the real binary, with the connection dropped halfway:
//! what arrived before the drop is kept, `HEAD` tells where to resume, the rest completes the
//! File, and its download (streamed from the store) is every byte in order.
#![cfg(unix)]

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_host-server");
/// `admin:secret-password`
const ADMIN: &str = "Basic YWRtaW46c2VjcmV0LXBhc3N3b3Jk";
const LENGTH: u64 = 100_000_000;

/// Byte `i` of the uploaded file: a pattern that catches a piece in the wrong place.
fn byte(i: u64) -> u8 {
    (i.wrapping_mul(31) ^ (i >> 11)) as u8
}

fn bytes(from: u64, to: u64) -> Vec<u8> {
    (from..to).map(byte).collect()
}

struct Server {
    child: Child,
    _stdout: BufReader<ChildStdout>,
    addr: String,
    dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start() -> Server {
    let dir = std::env::temp_dir().join(format!("host-server-tus-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("log");
    let mut child = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--log", "warn", "--data"])
        .arg(dir.join("data"))
        .env("ADMIN_PASSWORD", "secret-password")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(File::create(&log).unwrap()))
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let addr = loop {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "server exited early: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        if let Some(a) = line.trim_end().strip_prefix("listening on http://") {
            break a.to_string();
        }
    };
    Server {
        child,
        _stdout: stdout,
        addr,
        dir,
    }
}

use common::agent;

/// Where the upload is (`HEAD`).
fn offset(server: &Server, upload: &str) -> u64 {
    let resp = agent()
        .head(upload)
        .header("Authorization", ADMIN)
        .header("Tus-Resumable", "1.0.0")
        .call()
        .unwrap();
    assert_eq!(
        resp.status().as_u16(),
        200,
        "HEAD {upload} on {}",
        server.addr
    );
    resp.headers()["upload-offset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_100_mb_tus_upload_survives_a_dropped_connection() {
    let server = start();
    let base = format!("http://{}", server.addr);
    let resp = agent()
        .post(&format!("{base}/@tus-upload"))
        .header("Authorization", ADMIN)
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Length", &LENGTH.to_string())
        .header("Upload-Metadata", "filename YmlnLmJpbg==")
        .send_empty()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let upload = resp.headers()["location"].to_str().unwrap().to_string();
    let path = upload.strip_prefix(&base).unwrap().to_string();

    // Send the headers and half of the body, then drop the connection.
    let half = LENGTH / 2;
    {
        let mut tcp = TcpStream::connect(&server.addr).unwrap();
        write!(
            tcp,
            "PATCH {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: {ADMIN}\r\n\
             Tus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\n\
             Content-Type: application/offset+octet-stream\r\nContent-Length: {LENGTH}\r\n\r\n",
            server.addr
        )
        .unwrap();
        let step = 1 << 20;
        let mut at = 0;
        while at < half {
            tcp.write_all(&bytes(at, (at + step).min(half))).unwrap();
            at += step;
        }
        tcp.flush().unwrap();
        tcp.shutdown(std::net::Shutdown::Both).unwrap();
    }
    // The server keeps what arrived: wait until the offset stops moving.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut reached = offset(&server, &upload);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = offset(&server, &upload);
        if now == reached && now > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the offset never settled");
        reached = now;
    }
    assert!(
        reached > 0 && reached <= half,
        "resume offset {reached} should be within the half sent ({half})"
    );

    // A piece at the old offset is refused; the rest from the offset completes the File.
    let wrong = agent()
        .patch(&upload)
        .header("Authorization", ADMIN)
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Offset", "0")
        .header("Content-Type", "application/offset+octet-stream")
        .send(&b"xyz"[..])
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 409);
    let rest = agent()
        .patch(&upload)
        .header("Authorization", ADMIN)
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Offset", &reached.to_string())
        .header("Content-Type", "application/offset+octet-stream")
        .send(&bytes(reached, LENGTH)[..])
        .unwrap();
    assert_eq!(rest.status().as_u16(), 204);
    assert_eq!(rest.headers()["upload-offset"], LENGTH.to_string().as_str());
    let file = rest.headers()["location"].to_str().unwrap().to_string();

    // The download is streamed (no body in the engine's answer) and is every byte in order.
    let mut resp = agent()
        .get(&format!("{file}/@@download/file"))
        .header("Authorization", ADMIN)
        .call()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.headers()["content-length"],
        LENGTH.to_string().as_str()
    );
    let mut reader = resp.body_mut().with_config().limit(u64::MAX).reader();
    let mut buf = vec![0u8; 1 << 20];
    let mut at = 0u64;
    loop {
        let n = reader.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        assert_eq!(&buf[..n], &bytes(at, at + n as u64)[..], "bytes from {at}");
        at += n as u64;
    }
    assert_eq!(at, LENGTH);

    // A range from the middle, across a chunk boundary.
    let mut part = agent()
        .get(&format!("{file}/@@download/file"))
        .header("Authorization", ADMIN)
        .header("Range", "bytes=52428795-52428804")
        .call()
        .unwrap();
    assert_eq!(part.status().as_u16(), 206);
    let got = part.body_mut().read_to_vec().unwrap();
    assert_eq!(got, bytes(52_428_795, 52_428_805));
}
