//! The change feed as Server-Sent Events: `GET <context>/@changes?since=<cursor>` with
//! `Accept: text/event-stream` (or `Last-Event-ID: <cursor>` in place of `since`; neither:
//! from the current cursor on). Every entry of the feed ([`super::changes`]) is one event,
//!
//! ```text
//! id: <entry cursor>
//! event: change
//! data: <the entry's JSON on one line>
//! ```
//!
//! A [`ChangeStream`] is the engine's whole answer to such a request; a host that streams only
//! adapts it: it sends the opening answer, then waits for a commit notification
//! ([`crate::EngineOptions::changes_notify`]), a keep-alive tick ([`KEEP_ALIVE`]), the end of
//! the stream's life ([`MAX_STREAM`]) or its own shutdown, and asks the engine for the events
//! since the stream's cursor ([`crate::Engine::change_stream_next`]). Every read of the feed is
//! an ordinary request of the caller's (so the same authentication and permission filter
//! apply, and a token that expires ends the stream); a read that fails ends the stream (the
//! client reconnects with `Last-Event-ID` and gets that error as JSON). Errors before the stream
//! starts (a malformed or expired cursor, no permission) are the ordinary JSON error.
//!
//! The browser host answers the same request with the feed's JSON page (it does not stream).

use std::time::Duration;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::Deserialize;

use crate::core::http::Credentials;
use crate::core::http::{Request, Response};

/// How often a host sends [`ChangeStream::keep_alive`] while nothing changes.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long one stream lasts before the host ends it (the client reconnects).
pub const MAX_STREAM: Duration = Duration::from_secs(300);

/// Entries read per page of the feed.
const PAGE: u32 = 1000;

/// The first bytes of a stream: how long a client waits before it reconnects (ms).
const RETRY: &[u8] = b"retry: 2000\n\n";

/// The comment sent while nothing changes.
const KEEP_ALIVE_COMMENT: &[u8] = b": keep-alive\n\n";

/// What a query value keeps unencoded (cursors are plain, `Last-Event-ID` is the client's text).
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'.')
    .remove(b'-')
    .remove(b'_')
    .remove(b'~');

/// One page of the feed as the engine answers it in JSON.
#[derive(Deserialize)]
struct FeedPage {
    cursor: String,
    more: bool,
    changes: Vec<serde_json::Value>,
}

/// One entry, for its cursor (the event's `id`).
#[derive(Deserialize)]
struct EntryCursor {
    #[serde(default)]
    cursor: String,
}

/// A change feed followed as Server-Sent Events: the request it repeats as the caller and the
/// cursor it reached. Made by [`crate::Engine::open_change_stream`].
#[derive(Debug, Clone)]
pub struct ChangeStream {
    /// The feed request to repeat (JSON, without `since` and `limit`).
    request: Request,
    /// The cursor after the last event sent.
    cursor: String,
    /// Entries are waiting: read again without waiting for a commit.
    more: bool,
    /// The caller presented no credentials.
    anonymous: bool,
}

impl ChangeStream {
    /// Read the first page of the feed `request` asks for (with `read`, which answers a request
    /// as the engine does): the stream and its opening answer (headers and the first events),
    /// or the error the engine answered (as JSON, no stream).
    pub(crate) fn open(
        mut request: Request,
        read: impl FnOnce(Request) -> Response,
    ) -> Result<(ChangeStream, Response), Response> {
        let since = query_value(&request.query, "since")
            .map(str::to_string)
            .or_else(|| {
                request
                    .header_value("last-event-id")
                    .map(|v| utf8_percent_encode(v, QUERY_VALUE).to_string())
            });
        request.headers.retain(|(k, _)| {
            !k.eq_ignore_ascii_case("accept") && !k.eq_ignore_ascii_case("last-event-id")
        });
        request
            .headers
            .push(("Accept".into(), "application/json".into()));
        let anonymous = matches!(request.credentials(), Ok(Credentials::None));
        let mut stream = ChangeStream {
            request,
            cursor: String::new(),
            more: false,
            anonymous,
        };
        let page = stream.read_page(since.as_deref(), read)?;
        let mut body = RETRY.to_vec();
        body.extend(stream.take(page));
        let mut head = Response::empty(200)
            .with_header("Content-Type", "text/event-stream")
            .with_header("Cache-Control", "no-cache")
            .with_header("X-Accel-Buffering", "no");
        head.body = body;
        Ok((stream, head))
    }

    /// The events since the stream's cursor (possibly none), read with `read`; `None` when the
    /// read failed and the stream ends.
    pub(crate) fn next(&mut self, read: impl FnOnce(Request) -> Response) -> Option<Vec<u8>> {
        let since = utf8_percent_encode(&self.cursor, QUERY_VALUE).to_string();
        let page = self.read_page(Some(&since), read).ok()?;
        Some(self.take(page))
    }

    /// Whether entries are waiting: the host asks for them at once instead of waiting for a
    /// commit.
    pub fn waiting(&self) -> bool {
        self.more
    }

    /// Whether the caller presented no credentials (a host may budget anonymous streams apart).
    pub fn anonymous(&self) -> bool {
        self.anonymous
    }

    /// The bytes to send when nothing changed for [`KEEP_ALIVE`]. A host without commit
    /// notifications says so (`notified == false`): the stream then looks for changes again
    /// at the next [`crate::Engine::change_stream_next`].
    pub fn keep_alive(&mut self, notified: bool) -> &'static [u8] {
        if !notified {
            self.more = true;
        }
        KEEP_ALIVE_COMMENT
    }

    /// Read one page from `since` (encoded for a query), or the error answer.
    fn read_page(
        &self,
        since: Option<&str>,
        read: impl FnOnce(Request) -> Response,
    ) -> Result<FeedPage, Response> {
        let mut req = self.request.clone();
        req.query = query_with(&self.request.query, since);
        let response = read(req);
        if response.status != 200 {
            return Err(response);
        }
        serde_json::from_slice(&response.body).map_err(|e| {
            crate::core::error::EngineError::Internal(format!(
                "the change feed answered no page: {e}"
            ))
            .into_response()
        })
    }

    /// Move to the end of `page`: its entries as events.
    fn take(&mut self, page: FeedPage) -> Vec<u8> {
        self.cursor = page.cursor;
        self.more = page.more;
        events(&page.changes)
    }
}

/// The events of `changes`.
fn events(changes: &[serde_json::Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in changes {
        let id = EntryCursor::deserialize(c)
            .map(|e| e.cursor)
            .unwrap_or_default();
        out.extend_from_slice(format!("id: {id}\nevent: change\ndata: {c}\n\n").as_bytes());
    }
    out
}

/// The query `query` without `since` and `limit`, then `since` (if any, already encoded for a
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

/// The non-empty value of `name` in the query string, as written there.
fn query_value<'q>(query: &'q str, name: &str) -> Option<&'q str> {
    query
        .split('&')
        .find_map(|p| p.strip_prefix(name)?.strip_prefix('='))
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::http::Method;

    #[test]
    fn the_repeated_query_replaces_since_and_limit_and_keeps_the_rest() {
        assert_eq!(
            query_with("since=old&limit=5&x=1", Some("ab.3")),
            "x=1&since=ab.3&limit=1000"
        );
        assert_eq!(query_with("", None), "limit=1000");
        assert_eq!(
            utf8_percent_encode("a b&c=d.e", QUERY_VALUE).to_string(),
            "a%20b%26c%3Dd.e"
        );
        assert_eq!(query_value("x=1&since=ab.3", "since"), Some("ab.3"));
        assert_eq!(query_value("since=", "since"), None);
        assert_eq!(query_value("sinced=4", "since"), None);
    }

    #[test]
    fn entries_become_events() {
        let e = serde_json::json!({"cursor": "ab.7", "action": "added"});
        assert_eq!(
            String::from_utf8(events(&[e])).unwrap_or_default(),
            "id: ab.7\nevent: change\ndata: {\"action\":\"added\",\"cursor\":\"ab.7\"}\n\n"
        );
    }

    fn page(cursor: &str, more: bool, entries: &[&str]) -> Response {
        let changes: Vec<serde_json::Value> = entries
            .iter()
            .map(|c| serde_json::json!({ "cursor": c }))
            .collect();
        Response::json(
            200,
            &serde_json::json!({"cursor": cursor, "more": more, "changes": changes}),
        )
    }

    #[test]
    fn a_stream_reads_from_last_event_id_then_from_its_cursor_as_json() {
        let req = Request::new(Method::Get, "/@changes", "http://h.test")
            .header("Accept", "text/event-stream")
            .header("Last-Event-ID", "e 1");
        let (mut stream, head) = ChangeStream::open(req, |r| {
            assert_eq!(r.query, "since=e%201&limit=1000");
            assert_eq!(r.header_value("accept"), Some("application/json"));
            assert_eq!(r.header_value("last-event-id"), None);
            page("e.2", true, &["e.2"])
        })
        .unwrap_or_else(|_| panic!("refused"));
        assert_eq!(head.status, 200);
        assert_eq!(head.header_value("content-type"), Some("text/event-stream"));
        assert!(head.body.starts_with(RETRY));
        assert!(stream.waiting());
        assert!(stream.anonymous());
        let next = stream.next(|r| {
            assert_eq!(r.query, "since=e.2&limit=1000");
            page("e.2", false, &[])
        });
        assert_eq!(next, Some(Vec::new()));
        assert!(!stream.waiting());
        assert_eq!(stream.keep_alive(true), KEEP_ALIVE_COMMENT);
        assert!(!stream.waiting());
        stream.keep_alive(false);
        assert!(stream.waiting(), "without notifications: look again");
        assert_eq!(stream.next(|_| Response::empty(401)), None);
    }

    #[test]
    fn an_error_before_the_first_event_is_the_engine_s_answer() {
        let req = Request::new(Method::Get, "/@changes?since=bad", "http://h.test")
            .header("Authorization", "Bearer x");
        let refused = ChangeStream::open(req, |r| {
            assert_eq!(r.query, "since=bad&limit=1000");
            Response::empty(400)
        });
        assert!(matches!(refused, Err(r) if r.status == 400));
    }
}
