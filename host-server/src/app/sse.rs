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
use engine::Handled;
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

/// The query of `query` without `since` and `limit`, then `since` (if any, already encoded for a
/// query) and the page size.
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
        parts.push(format!("since={s}"));
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
    /// Read the feed from the cursor: the page, or `Err(answer)` when the engine refused.
    fn fetch(&self, since: Option<&str>) -> Result<FeedPage, Box<Handled>> {
        let mut req = self.request.clone();
        req.query = query_with(&self.request.query, since);
        let handled = self.engine.handle_routed(self.engine.route(req));
        if handled.response.status != 200 {
            return Err(Box::new(handled));
        }
        FeedPage::read(&handled.response.body).ok_or_else(|| {
            Box::new(Handled {
                response: engine::EngineError::Internal("the change feed answered no page".into())
                    .into_response(),
                refused_login: None,
            })
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
        let cursor = encode(&f.cursor);
        let page = f.fetch(Some(&cursor)).ok()?;
        f.cursor = page.cursor;
        f.more = page.more;
        if !page.changes.is_empty() {
            return Some((Ok(Bytes::from(events(&page.changes))), f));
        }
    }
}

/// Answer `request` (one the engine routed as [`engine::AnswerKind::EventStream`]) with the change
/// feed as Server-Sent Events; also the login whose password the first page refused, if any.
pub fn stream<S>(
    engine: Arc<Engine<S>>,
    cfg_wake: Option<watch::Receiver<u64>>,
    cfg_stop: Option<watch::Receiver<bool>>,
    mut request: engine::Request,
) -> (axum::response::Response, Option<String>)
where
    S: Store + Send + Sync + 'static,
{
    let since = since_of(&request.query)
        .map(str::to_string)
        .or_else(|| request.header_value("last-event-id").map(encode));
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
        Err(handled) => return (to_http(handled.response), handled.refused_login),
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
    (out, None)
}

/// The commit notifications and shutdown signal of `cfg`.
pub fn signals(cfg: &Config) -> (Option<watch::Receiver<u64>>, Option<watch::Receiver<bool>>) {
    (cfg.changes_wake.clone(), cfg.shutdown.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repeated_query_replaces_since_and_limit_and_keeps_the_rest() {
        assert_eq!(
            query_with("since=old&limit=5&x=1", Some("ab.3")),
            "x=1&since=ab.3&limit=1000"
        );
        assert_eq!(query_with("", None), "limit=1000");
        assert_eq!(encode("a b&c=d.e"), "a%20b%26c%3Dd.e");
        assert_eq!(since_of("x=1&since=ab.3"), Some("ab.3"));
        assert_eq!(since_of("since="), None);
    }

    #[test]
    fn entries_become_events() {
        let e = serde_json::json!({"cursor": "ab.7", "action": "added"});
        assert_eq!(
            String::from_utf8(events(&[e])).unwrap(),
            "id: ab.7\nevent: change\ndata: {\"action\":\"added\",\"cursor\":\"ab.7\"}\n\n"
        );
    }
}
