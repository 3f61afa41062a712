//! Benchmark figures for files (issue 17), printed as table rows for `bench/RESULTS.md`:
//!
//! - upload of a 50 MB file (`FILE_MB` to change) through tus (one `PATCH`, over loopback) and its download
//!   (`@@download`, streamed from the store): MB/s, and the server's peak RSS (`VmHWM`) after each;
//! - one scale (`preview`, 400 px wide) of a 4000x3000 JPEG: decode, resize and encode, in
//!   process (the work the server does per scale);
//! - a 4000x3000 JPEG uploaded as an Image over HTTP (base64 JSON), every scale of
//!   `plone.allowed_sizes` made at upload.
//!
//! ```text
//! cargo build --release -p host-server --bin host-server --example file_figures
//! target/release/examples/file_figures [path/to/host-server]
//! ```
//! The server binary defaults to `host-server` beside this example's directory (`../host-server`).

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use base64::Engine as _;

/// `admin:secret-password`
const ADMIN: &str = "Basic YWRtaW46c2VjcmV0LXBhc3N3b3Jk";
const MB: f64 = 1_000_000.0;
/// The upload's size in MB (`FILE_MB`, default 50).
fn size() -> u64 {
    std::env::var("FILE_MB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(50)
        * 1_000_000
}

/// Peak and current RSS of process `pid`, in MB.
fn rss(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// A reader of `len` bytes of a repeating pattern (the upload's body, never in memory whole).
struct Pattern {
    at: u64,
    len: u64,
}

impl Read for Pattern {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min((self.len - self.at) as usize);
        for (i, b) in buf[..n].iter_mut().enumerate() {
            *b = ((self.at + i as u64) % 251) as u8;
        }
        self.at += n as u64;
        Ok(n)
    }
}

fn jpeg_4000x3000() -> Vec<u8> {
    let img = image::RgbImage::from_fn(4000, 3000, |x, y| {
        image::Rgb([(x / 16) as u8, (y / 12) as u8, ((x ^ y) % 256) as u8])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(img)
        .write_with_encoder(image::codecs::jpeg::JpegEncoder::new_with_quality(
            &mut out, 85,
        ))
        .expect("encode");
    out.into_inner()
}

fn main() {
    let bin: PathBuf = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let me = std::env::current_exe().expect("exe");
            me.parent()
                .and_then(|p| p.parent())
                .expect("dir")
                .join("host-server")
        });
    let dir = std::env::temp_dir().join(format!("file-figures-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut child = Command::new(&bin)
        .args(["--listen", "127.0.0.1:0", "--log", "warn", "--data"])
        .arg(dir.join("data"))
        .env("ADMIN_PASSWORD", "secret-password")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let pid = child.id();
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let base = loop {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).expect("read") > 0,
            "server exited"
        );
        if let Some(a) = line.trim_end().strip_prefix("listening on ") {
            break a.to_string();
        }
    };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let (idle, _) = rss(pid);
    let size_bytes = size();

    // Upload 50 MB through tus in one PATCH.
    let resp = agent
        .post(&format!("{base}/@tus-upload"))
        .header("Authorization", ADMIN)
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Length", &size_bytes.to_string())
        .header("Upload-Metadata", "filename YmlnLmJpbg==")
        .send_empty()
        .expect("POST");
    assert_eq!(resp.status().as_u16(), 201);
    let upload = resp.headers()["location"]
        .to_str()
        .expect("loc")
        .to_string();
    let t = Instant::now();
    let resp = agent
        .patch(&upload)
        .header("Authorization", ADMIN)
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Offset", "0")
        .header("Content-Type", "application/offset+octet-stream")
        .header("Content-Length", &size_bytes.to_string())
        .send(ureq::SendBody::from_owned_reader(Pattern {
            at: 0,
            len: size_bytes,
        }))
        .expect("PATCH");
    let up = t.elapsed().as_secs_f64();
    assert_eq!(resp.status().as_u16(), 204);
    let file = resp.headers()["location"]
        .to_str()
        .expect("loc")
        .to_string();
    let (after_up, _) = rss(pid);

    // Download it.
    let t = Instant::now();
    let mut resp = agent
        .get(&format!("{file}/@@download/file"))
        .header("Authorization", ADMIN)
        .call()
        .expect("GET");
    let mut reader = resp.body_mut().with_config().limit(u64::MAX).reader();
    let mut buf = vec![0u8; 1 << 20];
    let mut got = 0u64;
    loop {
        let n = reader.read(&mut buf).expect("read");
        if n == 0 {
            break;
        }
        got += n as u64;
    }
    let down = t.elapsed().as_secs_f64();
    assert_eq!(got, size_bytes);
    let (after_down, _) = rss(pid);

    // One scale of a 4000x3000 JPEG, in process.
    let jpeg = jpeg_4000x3000();
    let t = Instant::now();
    let codec = engine::core::images::RustCodec::default();
    let info = engine::content::files::read_image(&codec, "image", &jpeg).expect("decode");
    let decoded = t.elapsed().as_secs_f64();
    let size = engine::content::files::parse_size("preview 400:65536").expect("size");
    let (w, h) = engine::content::files::fit(info.width, info.height, &size);
    let t2 = Instant::now();
    let bytes = engine::content::files::scale_image(&codec, "image", &jpeg, &info, &[(w, h)])
        .expect("scale");
    let scaling = t2.elapsed().as_secs_f64();
    assert!(!bytes[0].is_empty());

    // The same JPEG uploaded as an Image: every scale made at upload.
    let body = serde_json::json!({
        "@type": "Image", "id": "photo", "title": "Photo",
        "image": {"data": base64::engine::general_purpose::STANDARD.encode(&jpeg),
                  "encoding": "base64", "filename": "photo.jpg"}
    });
    let t = Instant::now();
    let resp = agent
        .post(&format!("{base}/"))
        .header("Authorization", ADMIN)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .send(body.to_string().as_bytes())
        .expect("POST image");
    let image_upload = t.elapsed().as_secs_f64();
    assert_eq!(resp.status().as_u16(), 201);
    let (after_image, _) = rss(pid);

    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);

    let mbs = size_bytes as f64 / MB;
    println!("| figure | value | server peak RSS MB |");
    println!("|---|---:|---:|");
    println!("| server idle | | {idle:.0} |");
    println!(
        "| upload {mbs:.0} MB via tus (one PATCH, loopback) | {:.1} MB/s ({up:.2} s) | {after_up:.0} |",
        mbs / up
    );
    println!(
        "| download {mbs:.0} MB via @@download (streamed) | {:.1} MB/s ({down:.2} s) | {after_down:.0} |",
        mbs / down
    );
    println!(
        "| one scale (preview, {w}x{h}) of a 4000x3000 JPEG ({:.1} MB), in process | decode {:.0} ms + resize and encode {:.0} ms | |",
        jpeg.len() as f64 / MB,
        decoded * 1000.0,
        scaling * 1000.0
    );
    println!(
        "| 4000x3000 JPEG uploaded as an Image (base64 JSON, all 11 scales made) | {:.0} ms | {after_image:.0} |",
        image_upload * 1000.0
    );
}
