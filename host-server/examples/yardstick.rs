//! The benchmarks' yardstick: the smallest useful axum server, answering every request with the
//! same 2 KB JSON body. `bench/run.sh` measures it in the same run as the real server, so every
//! scenario is also reported as a ratio to it (what the machine, the load generator and
//! axum/hyper alone can do), which stays comparable on a shared, noisy machine.
//!
//! ```text
//! cargo run --release -p host-server --example yardstick -- [127.0.0.1:0]
//! ```
//! Prints `listening on http://ADDR` once bound, like the server.

use std::io::Write;

use axum::http::header;
use axum::response::IntoResponse;
use axum::Router;

fn body() -> &'static str {
    static BODY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BODY.get_or_init(|| {
        let mut items = Vec::new();
        let mut len = 0;
        let mut i = 0;
        // About 2048 bytes of plausible JSON.
        while len < 1900 {
            let item = format!(
                "{{\"@id\":\"http://127.0.0.1/folder/page-{i}\",\"title\":\"Page {i}\",\"review_state\":\"published\"}}"
            );
            len += item.len() + 1;
            items.push(item);
            i += 1;
        }
        let s = format!("{{\"items\":[{}]}}", items.join(","));
        let pad = 2048usize.saturating_sub(s.len() + 12);
        format!("{{\"pad\":\"{}\",{}", "x".repeat(pad), &s[1..])
    })
}

async fn handler() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], body())
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_string());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&addr).await?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on http://{}", listener.local_addr()?)?;
        out.flush()?;
        drop(out);
        axum::serve(listener, Router::new().fallback(handler)).await
    })
}
