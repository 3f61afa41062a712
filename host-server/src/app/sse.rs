//! The change feed as Server-Sent Events: `GET <context>/@changes?since=<cursor>` with
//! `Accept: text/event-stream` (or `Last-Event-ID: <cursor>` in place of `since`; neither:
//! from the current cursor on) answers `text/event-stream`. Every entry of the feed is one event,
//!
//! ```text
//! id: <entry cursor>
//! event: change
//! data: <the entry's JSON on one line>
//! ```
//!
//! sent as soon as the commit that made it is durable: the engine tells the host about commits
//! that wrote change log entries ([`engine::EngineOptions::changes_notify`], a `watch` channel
//! here, [`Config::changes_wake`]) and the stream then reads the feed again from its cursor, as
//! the caller (so the same permission filter applies). Nothing is read while nothing commits; a
//! `: keep-alive` comment goes out every [`KEEP_ALIVE`]. The stream ends after [`MAX_STREAM`]
//! (clients reconnect with `Last-Event-ID`), when the server shuts down, or when a later read
//! of the feed fails (the reconnect then gets that error as JSON). Errors before the stream
//! starts (a malformed or expired cursor, no permission) answer the ordinary JSON error.
//!
//! The feed itself is the engine's (`engine::api::changes`): this module only turns its pages
//! into events.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header::{self, HeaderValue};
use engine::{Engine, Store};
use tokio::sync::watch;
use tokio::time::Instant;

use super::{to_http, Config};

/// How often a keep-alive comment is sent while nothing changes.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long one stream lasts before the server ends it (the client reconnects).
pub const MAX_STREAM: Duration = Duration::from_secs(300);

/// Entries read per page of the feed.
const PAGE: u32 = 1000;

/// Whether `request` asks for the change feed as a stream.
pub fn wants_stream(request: &engine::Request) -> bool {
    request.method == engine::Method::Get
        && request.path.trim_end_matches('/').ends_with("/@changes")
        && request
            .header_value("accept")
            .is_some_and(|a| a.to_ascii_lowercase().contains("text/event-stream"))
}

/// One page of the feed as the engine answers it.
struct FeedPage {
    cursor: String,
    more: bool,
    changes: Vec<serde_json::Value>,
}

impl FeedPage {
    fn read(body: &[u8]) -> Option<FeedPage> {
        let mut v: serde_json::Value = serde_json::from_slice(body).ok()?;
        Some(FeedPage {
            cursor: v.get("cursor")?.as_str()?.to_string(),
            more: v.get("more")?.as_bool()?,
            changes: match v.get_mut("changes")?.take() {
                serde_json::Value::Array(a) => a,
                _ => return None,
            },
        })
    }
}

/// Percent-encode a query value (cursors are plain, but `Last-Event-ID` is the client's text).
fn encode(value: &str) -> String {
    let mut out = String::new();
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The query of `query` without `since` and `limit`, then `since` (if any) and the page size.
fn query_with(query: &str, since: Option<&str>) -> String {
    let mut parts: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter(|p| {
            let name = p.split('=').next().unwrap_or("");
            name != "since" && name != "limit"
        })
        .map(str::to_string)
        .collect();
    if let Some(s) = since {
        parts.push(format!("since={}", encode(s)));
    }
    parts.push(format!("limit={PAGE}"));
    parts.join("&")
}

/// The `since` of the query string, if given.
fn since_of(query: &str) -> Option<&str> {
    query
        .split('&')
        .find_map(|p| p.strip_prefix("since="))
        .filter(|s| !s.is_empty())
}

/// What a stream carries between pieces.
struct Follow<S: Store> {
    engine: Arc<Engine<S>>,
    /// The request to repeat (JSON, without `since`).
    request: engine::Request,
    cursor: String,
    more: bool,
    wake: Option<watch::Receiver<u64>>,
    stop: Option<watch::Receiver<bool>>,
    deadline: Instant,
}

impl<S: Store> Follow<S> {
    /// Read the feed from the cursor: the page, or `Err(response)` when the engine refused.
    fn fetch(&self, since: Option<&str>) -> Result<FeedPage, engine::Response> {
        let mut req = self.request.clone();
        req.query = query_with(&self.request.query, since);
        let resp = self.engine.handle(req);
        if resp.status != 200 {
            return Err(resp);
        }
        FeedPage::read(&resp.body).ok_or_else(|| {
            engine::EngineError::Internal("the change feed answered no page".into()).into_response()
        })
    }

    /// Mark every commit so far as seen (the next read covers them).
    fn seen(&mut self) {
        if let Some(w) = &mut self.wake {
            w.borrow_and_update();
        }
    }
}

/// The events of `changes`.
fn events(changes: &[serde_json::Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in changes {
        let id = c.get("cursor").and_then(|v| v.as_str()).unwrap_or("");
        out.extend_from_slice(format!("id: {id}\nevent: change\ndata: {c}\n\n").as_bytes());
    }
    out
}

async fn changed(wake: &mut Option<watch::Receiver<u64>>) -> bool {
    match wake {
        Some(w) => w.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

async fn stopped(stop: &mut Option<watch::Receiver<bool>>) {
    match stop {
        Some(s) => {
            if s.wait_for(|v| *v).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}

/// The next piece of the stream: events, a keep-alive, or the end.
async fn next<S: Store + Send + Sync + 'static>(
    mut f: Follow<S>,
) -> Option<(Result<Bytes, std::io::Error>, Follow<S>)> {
    loop {
        if !f.more {
            tokio::select! {
                alive = changed(&mut f.wake) => {
                    if !alive {
                        return None;
                    }
                }
                () = tokio::time::sleep(KEEP_ALIVE) => {
                    if f.wake.is_none() {
                        // No commit notifications (an app built without them): look again.
                        f.more = true;
                    }
                    return Some((Ok(Bytes::from_static(b": keep-alive\n\n")), f));
                }
                () = stopped(&mut f.stop) => return None,
                () = tokio::time::sleep_until(f.deadline) => return None,
            }
        }
        f.seen();
        let cursor = f.cursor.clone();
        let page = f.fetch(Some(&cursor)).ok()?;
        f.cursor = page.cursor;
        f.more = page.more;
        if !page.changes.is_empty() {
            return Some((Ok(Bytes::from(events(&page.changes))), f));
        }
    }
}

/// Answer `request` (see [`wants_stream`]) with the change feed as Server-Sent Events.
pub fn stream<S>(
    engine: Arc<Engine<S>>,
    cfg_wake: Option<watch::Receiver<u64>>,
    cfg_stop: Option<watch::Receiver<bool>>,
    mut request: engine::Request,
) -> axum::response::Response
where
    S: Store + Send + Sync + 'static,
{
    let since = since_of(&request.query)
        .map(str::to_string)
        .or_else(|| request.header_value("last-event-id").map(str::to_string));
    request.headers.retain(|(k, _)| {
        !k.eq_ignore_ascii_case("accept") && !k.eq_ignore_ascii_case("last-event-id")
    });
    request
        .headers
        .push(("Accept".into(), "application/json".into()));
    let mut follow = Follow {
        engine,
        request,
        cursor: String::new(),
        more: false,
        wake: cfg_wake,
        stop: cfg_stop,
        deadline: Instant::now() + MAX_STREAM,
    };
    follow.seen();
    // The first page answers errors as JSON (before any event is sent).
    let first = match follow.fetch(since.as_deref()) {
        Ok(page) => page,
        Err(resp) => return to_http(resp),
    };
    follow.cursor = first.cursor;
    follow.more = first.more;
    let mut head = b"retry: 2000\n\n".to_vec();
    head.extend(events(&first.changes));
    let rest = futures_util::stream::unfold(follow, next);
    let body = futures_util::StreamExt::chain(
        futures_util::stream::once(async move { Ok::<_, std::io::Error>(Bytes::from(head)) }),
        rest,
    );
    let mut out = axum::response::Response::new(Body::from_stream(body));
    let headers = out.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    out
}

/// The commit notifications and shutdown signal of `cfg`.
pub fn signals(cfg: &Config) -> (Option<watch::Receiver<u64>>, Option<watch::Receiver<bool>>) {
    (cfg.changes_wake.clone(), cfg.shutdown.clone())
}
