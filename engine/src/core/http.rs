//! HTTP-shaped request and response values: what hosts hand to [`crate::Engine::handle`] and get back.
//! No HTTP library is involved, so the engine builds for every target.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde::Serialize;

/// An HTTP method the API knows about; anything else is carried as `Other` and answered with 405.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// GET
    Get,
    /// HEAD (served as GET without a body)
    Head,
    /// POST
    Post,
    /// PUT
    Put,
    /// PATCH
    Patch,
    /// DELETE
    Delete,
    /// OPTIONS
    Options,
    /// Any other method token.
    Other(String),
}

impl Method {
    /// Parse a method token (case-sensitive, as HTTP requires; lowercase is accepted for convenience).
    pub fn parse(s: &str) -> Self {
        match s.to_ascii_uppercase().as_str() {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "PATCH" => Method::Patch,
            "DELETE" => Method::Delete,
            "OPTIONS" => Method::Options,
            other => Method::Other(other.to_string()),
        }
    }

    /// The method token.
    pub fn as_str(&self) -> &str {
        match self {
            Method::Other(s) => s,
            known => known.known_token().unwrap_or(""),
        }
    }

    /// The token of a method the API knows (`None` for [`Method::Other`]).
    pub fn known_token(&self) -> Option<&'static str> {
        Some(match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Other(_) => return None,
        })
    }

    /// Methods that never change state.
    pub fn is_safe(&self) -> bool {
        matches!(self, Method::Get | Method::Head | Method::Options)
    }
}

/// A request as the engine sees it.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The URL path below the site root, percent-encoded as received (e.g. `/folder/@workflow`).
    pub path: String,
    /// The raw query string without `?` (may be empty).
    pub query: String,
    /// Header names (any case) and values.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
    /// The absolute URL of the site root as the client addresses it, without a trailing slash
    /// (e.g. `http://localhost:8080`). Every `@id` starts with it.
    pub base_url: String,
}

impl Request {
    /// A request with no headers and no body.
    pub fn new(method: Method, path_and_query: &str, base_url: &str) -> Self {
        let (path, query) = match path_and_query.split_once('?') {
            Some((p, q)) => (p.to_string(), q.to_string()),
            None => (path_and_query.to_string(), String::new()),
        };
        Request {
            method,
            path,
            query,
            headers: Vec::new(),
            body: Vec::new(),
            base_url: base_url.trim_end_matches('/').to_string(),
        }
    }

    /// Add a header (builder style).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Set a JSON body and its content type (builder style).
    pub fn json(mut self, body: &serde_json::Value) -> Self {
        self.body = body.to_string().into_bytes();
        self.headers
            .push(("Content-Type".into(), "application/json".into()));
        self
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header_value(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The language codes of `Accept-Language`, lower case, best first (`*` and `q=0` left out;
    /// equal weights keep their order).
    pub fn accepted_languages(&self) -> Vec<String> {
        let Some(header) = self.header_value("accept-language") else {
            return Vec::new();
        };
        let mut langs: Vec<(f32, usize, String)> = header
            .split(',')
            .enumerate()
            .filter_map(|(i, part)| {
                let mut bits = part.split(';');
                let code = bits.next()?.trim().to_ascii_lowercase();
                if code.is_empty() || code == "*" {
                    return None;
                }
                let q = bits
                    .filter_map(|b| b.trim().strip_prefix("q="))
                    .find_map(|q| q.trim().parse::<f32>().ok())
                    .unwrap_or(1.0);
                (q > 0.0).then_some((q, i, code))
            })
            .collect();
        langs.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        langs.into_iter().map(|(_, _, c)| c).collect()
    }
}

/// What the engine's route lookup ([`crate::Engine::route`]) tells a host about a request, before
/// its body is read: all a host needs to carry it without knowing the API's endpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteInfo {
    /// It runs in the write transaction: a host with a single writer queues it there (see
    /// [`crate::Engine::handle_routed_group`]).
    pub writes: bool,
    /// How its answer is carried.
    pub answer: AnswerKind,
    /// How its body is read.
    pub body: BodyKind,
    /// The throttle class it falls in, if any.
    pub throttle: Option<ThrottleClass>,
}

/// How a host carries an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerKind {
    /// Quick: the response comes back whole (or as a [`BlobStream`]).
    Whole,
    /// Possibly slow, and possibly [`Response::lines`] produced while the host sends them (a
    /// language model's answer): a host keeps it off the threads that serve other requests.
    Lines,
    /// A feed the client follows as `text/event-stream`: a host that streams answers it with
    /// `Engine::open_change_stream` and sends the events `Engine::change_stream_next` gives it
    /// as commits happen (host-server's `app::sse`); [`crate::Engine::handle_routed`] answers
    /// the feed's JSON page instead.
    EventStream,
}

/// How a host reads a request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// Whole, at most `limit` bytes (more is refused with [`crate::EngineError::PayloadTooLarge`]).
    Whole {
        /// The most bytes the engine takes in one request.
        limit: usize,
    },
    /// Of any length (a tus `PATCH`): the host hands the engine the body as a [`BodyStream`]
    /// (`Routed::in_pieces`), which makes each `piece` bytes (the last one shorter) their own
    /// request at the offset reached, starting at `offset`, and answers with the last piece's
    /// answer or the first that is not a success.
    Pieces {
        /// Where the first piece goes.
        offset: u64,
        /// Bytes per piece.
        piece: usize,
    },
}

/// A class of requests a host throttles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThrottleClass {
    /// A password attempt (`@login`, or `Authorization: Basic` on any request): keyed by the
    /// login (`Routed::attempted_login`) and the client's address; the engine reports a refused
    /// password (`Handled::refused_login`), and a host that refuses an attempt answers
    /// [`crate::EngineError::TooManyLoginAttempts`].
    Login,
    /// A password reset request (mail a token, or set a password with a token or the old one):
    /// keyed like [`ThrottleClass::Login`] (the login is the one in the path), and every request
    /// counts, whatever its answer (which is the same for known and unknown logins).
    PasswordReset,
}

/// A request body the host reads as it arrives, adapting its server's body type (host-server:
/// axum's body frames). The engine pulls from it where it takes a body in pieces
/// ([`BodyKind::Pieces`]: `Routed::in_pieces`, after [`crate::Engine::route`]).
pub trait BodyStream {
    /// A piece of bytes as the host has it (no copy needed).
    type Chunk: AsRef<[u8]>;
    /// The next bytes that arrived; `None` at the end of the body; `Err` (why) when the
    /// connection broke or the read failed.
    fn next_chunk(
        &mut self,
    ) -> impl std::future::Future<Output = Option<std::result::Result<Self::Chunk, String>>>;
}

/// A response as the engine produces it.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header names and values.
    pub headers: Vec<(String, String)>,
    /// The body bytes (JSON for every API answer, or empty).
    pub body: Vec<u8>,
    /// When set, the body is these bytes of a stored blob instead of [`Response::body`] (which
    /// is then empty): a download larger than [`crate::EngineOptions::stream_downloads_over`].
    /// The host reads it piece by piece with [`crate::Engine::read_stream`], so a large file is
    /// never whole in its memory.
    pub stream: Option<BlobStream>,
    /// When set, the body is these lines, produced while the host sends them (a language
    /// model's answer streamed by `@chat` and `@generate`, `crate::ai::assistant::AnswerLines`); hosts
    /// that cannot stream collect them.
    pub lines: Option<LineStream>,
}

/// A response body produced line by line while the host sends it ([`Response::lines`]).
#[derive(Clone)]
pub struct LineStream(std::sync::Arc<std::sync::Mutex<Box<dyn Iterator<Item = Vec<u8>> + Send>>>);

impl LineStream {
    /// The lines of `lines`.
    pub fn new(lines: impl Iterator<Item = Vec<u8>> + Send + 'static) -> Self {
        LineStream(std::sync::Arc::new(std::sync::Mutex::new(Box::new(lines))))
    }

    /// The next line (blocks while it is produced); `None` at the end.
    pub fn next_line(&self) -> Option<Vec<u8>> {
        self.0.lock().ok()?.next()
    }

    /// Every remaining line, for hosts that do not stream.
    pub fn collect_all(&self) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(line) = self.next_line() {
            out.extend_from_slice(&line);
        }
        out
    }
}

impl std::fmt::Debug for LineStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LineStream")
    }
}

impl PartialEq for LineStream {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Bytes `start..end` of blob `blob`: a response body the host streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobStream {
    /// The blob's id.
    pub blob: String,
    /// The first byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

impl BlobStream {
    /// How many bytes it holds.
    pub fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Response {
    /// A JSON response with `status`.
    pub fn json<T: Serialize + ?Sized>(status: u16, body: &T) -> Self {
        let body = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
        Response {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body,
            stream: None,
            lines: None,
        }
    }

    /// An empty response (204 and friends).
    pub fn empty(status: u16) -> Self {
        Response {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            stream: None,
            lines: None,
        }
    }

    /// Add a header (builder style).
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header_value(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON (`Null` when empty or not JSON).
    pub fn json_body(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// The origin (`scheme://host[:port]`) of an absolute URL.
fn origin_of(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => &url[..after_scheme + i],
        None => url,
    }
}

/// Credentials found on a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credentials {
    /// None.
    None,
    /// A bearer token (header or cookie).
    Bearer(String),
    /// Basic login and password.
    Basic(String, String),
}

impl Request {
    /// Cross-site request forgery: a browser sends the `auth_token` cookie on its own, also on
    /// requests another site makes it send. So the cookie is a credential for a write (any
    /// method but GET, HEAD, OPTIONS) only when the request says `Content-Type:
    /// application/json` (which another site cannot send without a CORS preflight) and, when it
    /// carries an `Origin`, that origin is the site's own (its base URL's scheme, host and port).
    /// `Authorization` headers are never sent by a browser on its own and need neither.
    fn check_cookie_write(&self) -> Result<(), String> {
        if self.method.is_safe() {
            return Ok(());
        }
        let json = self.header_value("content-type").is_some_and(|ct| {
            let ct = ct.trim().to_ascii_lowercase();
            ct.starts_with("application/json") || ct.contains("+json")
        });
        let origin_ok = self.header_value("origin").is_none_or(|origin| {
            let own = origin_of(&self.base_url);
            origin.trim().eq_ignore_ascii_case(own)
        });
        if json && origin_ok {
            Ok(())
        } else {
            Err(String::from(
                "The auth_token cookie is accepted for a write only with 'Content-Type: \
                 application/json' and the site's own Origin (a guard against cross-site \
                 requests); send the token as 'Authorization: Bearer <token>' instead",
            ))
        }
    }

    /// The credentials this request presents: `Authorization: Bearer`, `Authorization: Basic`,
    /// or the `auth_token` cookie. A malformed `Authorization` header is an error whose message
    /// says what is wrong (the engine answers it with a 401).
    pub fn credentials(&self) -> Result<Credentials, String> {
        if let Some(h) = self.header_value("authorization") {
            let h = h.trim();
            let (scheme, rest) = h.split_once(' ').unwrap_or((h, ""));
            let rest = rest.trim();
            if scheme.eq_ignore_ascii_case("bearer") && !rest.is_empty() {
                return Ok(Credentials::Bearer(rest.to_string()));
            }
            if scheme.eq_ignore_ascii_case("basic") {
                let decoded = B64
                    .decode(rest)
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .ok_or_else(|| String::from("Malformed Basic credentials"))?;
                let (login, pw) = decoded
                    .split_once(':')
                    .ok_or_else(|| String::from("Malformed Basic credentials"))?;
                return Ok(Credentials::Basic(login.to_string(), pw.to_string()));
            }
            return Err(String::from(
                "Unsupported Authorization scheme (use Bearer or Basic)",
            ));
        }
        if let Some(cookies) = self.header_value("cookie") {
            for c in cookies.split(';') {
                if let Some(tok) = c.trim().strip_prefix("auth_token=") {
                    if !tok.is_empty() {
                        self.check_cookie_write()?;
                        return Ok(Credentials::Bearer(tok.to_string()));
                    }
                }
            }
        }
        Ok(Credentials::None)
    }
}

#[cfg(test)]
mod cookie_tests {
    use super::*;

    fn req(method: Method, headers: &[(&str, &str)]) -> Request {
        let mut r = Request::new(method, "/@users", "http://site.test:8080");
        for (k, v) in headers {
            r = r.header(k, v);
        }
        r
    }

    #[test]
    fn the_auth_cookie_is_a_write_credential_only_with_json_from_the_own_origin() {
        let cookie = ("Cookie", "a=b; auth_token=tok");
        let bearer = Ok(Credentials::Bearer("tok".into()));
        assert_eq!(req(Method::Get, &[cookie]).credentials(), bearer);
        let json = ("Content-Type", "application/json; charset=utf-8");
        assert_eq!(req(Method::Post, &[cookie, json]).credentials(), bearer);
        let own = ("Origin", "http://site.test:8080");
        assert_eq!(
            req(Method::Post, &[cookie, json, own]).credentials(),
            bearer
        );
        for refused in [
            vec![cookie],
            vec![cookie, ("Content-Type", "text/plain")],
            vec![cookie, json, ("Origin", "http://evil.example")],
            vec![cookie, json, ("Origin", "https://site.test:8080")],
            vec![cookie, json, ("Origin", "null")],
        ] {
            for method in [Method::Post, Method::Patch, Method::Delete, Method::Put] {
                let r = req(method, &refused).credentials();
                assert!(r.is_err(), "{refused:?}: {r:?}");
            }
        }
        // A token in Authorization is never the browser's doing: no check.
        let header = ("Authorization", "Bearer tok");
        let evil = ("Origin", "http://evil.example");
        assert_eq!(req(Method::Post, &[header, evil]).credentials(), bearer);
        assert_eq!(origin_of("https://h.test/site/x"), "https://h.test");
        assert_eq!(origin_of("http://h.test:1"), "http://h.test:1");
    }
}
