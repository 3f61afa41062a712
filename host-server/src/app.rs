//! The HTTP side: an axum [`Router`] that hands every request to the engine.
//!
//! The router has no routes of its own and knows no endpoint. Every request, whatever its path
//! and method, is turned into an [`engine::Request`] (base URL worked out from the configuration
//! or the request's headers) and routed by the engine once ([`Engine::route`]), which tells this
//! module what it needs to carry it ([`engine::RouteInfo`]): how to read the body (whole up to the
//! engine's limit, or in pieces for a tus `PATCH`), whether it writes (then it goes to the one
//! writer thread, [`group`], in a group commit), how its answer goes out (whole, a file streamed
//! from the store, lines a language model produces, or the change feed as Server-Sent Events,
//! [`sse`]) and whether it is a password attempt. Reads are answered on the async worker that
//! received them, or on tokio's blocking pool with [`Config::blocking_reads`] and always for
//! answers that may be slow ([`engine::AnswerKind::Lines`]). CORS (when configured), security
//! headers, a body-read timeout and request logging (method and path only: never the query,
//! headers or body, which may carry tokens or passwords) wrap it as tower layers. Failed password
//! guesses are throttled here ([`throttle`]), keyed by the login the engine finds in the request
//! and counted when the engine reports the password refused.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::{Body, HttpBody as _};
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{request::Parts, Method as HttpMethod, StatusCode};
use axum::Router;
use engine::Routed;
use engine::{AnswerKind, BodyKind, Engine, EngineError, Method, Store, ThrottleClass};
use http_body_util::BodyExt;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::timeout::TimeoutBody;
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::Level;

use crate::error::ServerError;

mod group;
pub mod limits;
pub mod sse;
pub mod throttle;

use group::GroupCommitter;
use throttle::LoginThrottle;

/// The address of the client a request came from: the server's accept loop puts it in each
/// request's extensions (for the per-address login throttle); absent in in-process tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

/// The Content-Security-Policy of every answer: an API answers JSON and files, never a page; a
/// file opened in the browser (an uploaded HTML or SVG) runs no script, loads nothing and cannot
/// be framed.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; frame-ancestors 'none'; sandbox";

/// How the HTTP layer behaves (the part of the command line that concerns requests).
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The site's public base URL (`https://example.org`, or with a path prefix). When `None`, it
    /// is derived from each request: its `Host`, or, with [`Config::trust_forwarded`],
    /// `X-Forwarded-Proto` (else `http`) and `X-Forwarded-Host` (else `Host`).
    pub public_url: Option<String>,
    /// Take the base URL from `X-Forwarded-Proto`/`X-Forwarded-Host` (set this behind a reverse
    /// proxy that sets them). Off by default, as in Zope: any client can send those headers, and
    /// Volto's server-side rendering sends its own host without the port in `X-Forwarded-Host`,
    /// which would give it `@id`s it cannot map back to its routes.
    pub trust_forwarded: bool,
    /// Origins allowed by CORS (`*` for any). Empty: no CORS headers at all.
    pub cors_origins: Vec<String>,
    /// Run read requests on tokio's blocking pool instead of on the async worker that received
    /// them. Off by default: a read is a few SQLite lookups in memory, and handing it to another
    /// thread and back cost more CPU than the read itself (half the CPU of a cached GET went to
    /// thread switches). Turn it on when reads may wait on a slow disk, so one slow read cannot
    /// hold up the other connections of its worker. Writes always go to the writer thread.
    pub blocking_reads: bool,
    /// Failed login attempts allowed per minute, per login and per client address.
    pub login_limits: throttle::Limits,
    /// Longest wait for the next piece of a request body (`None`: no limit).
    pub body_timeout: Option<Duration>,
    /// Moves whenever a commit wrote change log entries (the server wires it to
    /// [`engine::EngineOptions::changes_notify`]): change feed streams ([`sse`]) wait on it.
    /// `None`: they look for changes at every keep-alive instead.
    pub changes_wake: Option<tokio::sync::watch::Receiver<u64>>,
    /// Becomes `true` when the server shuts down: change feed streams end then.
    pub shutdown: Option<tokio::sync::watch::Receiver<bool>>,
    /// How many change feed streams may be open (in all, per client address, anonymous).
    pub stream_limits: limits::StreamLimits,
    /// Reads may come from a lagging read replica (`--read-database`): answer every write with
    /// the cookie [`RW_GENERATION_COOKIE`] holding the store generation it reached, and read a
    /// request that carries it from a store at least that recent (see
    /// [`crate::postgres::ReplicatedStore`]), so a client reads its own writes.
    pub read_your_writes: bool,
    /// Single sign-on (`--oidc-config`): requests to `@login-oidc/<provider>` are answered by
    /// [`crate::oidc`]. `None`: no provider; those paths go to the engine like any other.
    pub sso: Option<Arc<crate::oidc::Sso>>,
}

/// The cookie that carries the store generation a client's reads must see (with
/// [`Config::read_your_writes`]).
pub const RW_GENERATION_COOKIE: &str = "rw-generation";

/// The generation the request's [`RW_GENERATION_COOKIE`] asks for, if any.
fn required_generation(request: &engine::Request) -> Option<u64> {
    request
        .headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("cookie"))
        .flat_map(|(_, value)| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == RW_GENERATION_COOKIE)
        .filter_map(|(_, value)| value.trim().parse::<u64>().ok())
        .max()
}

impl Config {
    /// Check the values and normalise them (drop a trailing `/` from the public URL).
    pub fn validated(mut self) -> Result<Self, ServerError> {
        if let Some(url) = self.public_url.take() {
            let url = url.trim().trim_end_matches('/').to_string();
            let rest = url
                .strip_prefix("http://")
                .or_else(|| url.strip_prefix("https://"));
            match rest {
                Some(r)
                    if !r.is_empty()
                        && !r.starts_with('/')
                        && HeaderValue::from_str(&url).is_ok() => {}
                _ => {
                    return Err(ServerError::Config(format!(
                        "--public-url {url:?} must be an absolute http:// or https:// URL"
                    )))
                }
            }
            self.public_url = Some(url);
        }
        for origin in &self.cors_origins {
            let ok = origin == "*"
                || (origin
                    .strip_prefix("http://")
                    .or_else(|| origin.strip_prefix("https://"))
                    .is_some_and(|host| !host.is_empty() && !host.contains('/'))
                    && HeaderValue::from_str(origin).is_ok());
            if !ok {
                return Err(ServerError::Config(format!(
                    "--cors-origin {origin:?} must be `*` or an origin such as https://app.example.org \
                     (scheme and host, optional port, no path)"
                )));
            }
        }
        Ok(self)
    }
}

/// What every request shares, behind one [`Arc`] ([`AppState`]): axum clones the handler's state
/// for each request, and one reference count is then all that clone costs (the fields cloned and
/// dropped one by one, the writer's channel sender among them, were a measurable part of every
/// request).
struct Shared<S: Store> {
    engine: Arc<Engine<S>>,
    public_url: Option<String>,
    /// See [`Config::trust_forwarded`].
    trust_forwarded: bool,
    /// Write requests go here (group commit).
    writer: GroupCommitter,
    /// See [`Config::blocking_reads`].
    blocking_reads: bool,
    /// See [`Config::read_your_writes`].
    read_your_writes: bool,
    /// Failed password guesses.
    throttle: Arc<LoginThrottle>,
    /// See [`Config::sso`].
    sso: Option<Arc<crate::oidc::Sso>>,
    /// The open change feed streams.
    streams: Arc<limits::StreamBudget>,
    /// See [`Config::changes_wake`] and [`Config::shutdown`].
    signals: (
        Option<tokio::sync::watch::Receiver<u64>>,
        Option<tokio::sync::watch::Receiver<bool>>,
    ),
}

/// The handler's state: see [`Shared`].
type AppState<S> = Arc<Shared<S>>;

/// The complete HTTP application: every request goes to `engine`.
///
/// Write requests are answered by one writer thread in groups that share a single commit (see
/// [`Engine::handle_group`]); it stops when the router is dropped. Panics if that thread cannot be
/// started (the OS refuses to create a thread).
///
/// `cfg` should have passed [`Config::validated`]; an unusable CORS origin is skipped with a warning.
pub fn app<S>(engine: Arc<Engine<S>>, cfg: Config) -> Router
where
    S: Store + Send + Sync + 'static,
{
    let writer = GroupCommitter::start(engine.clone()).expect("cannot start the writer thread");
    let signals = sse::signals(&cfg);
    let state = Arc::new(Shared {
        signals,
        engine,
        public_url: cfg.public_url.map(|u| u.trim_end_matches('/').to_string()),
        trust_forwarded: cfg.trust_forwarded,
        writer,
        blocking_reads: cfg.blocking_reads,
        read_your_writes: cfg.read_your_writes,
        throttle: Arc::new(LoginThrottle::new(cfg.login_limits)),
        sso: cfg.sso.clone(),
        streams: limits::StreamBudget::new(cfg.stream_limits),
    });
    // The handler and the layers every request goes through are one service (one box in the
    // router), not a boxed route per layer: axum clones a route's whole stack for each request,
    // a box and a clone per layer.
    let body_timeout = cfg.body_timeout;
    let service = tower::ServiceBuilder::new()
        // The four security headers on every answer that does not set them itself.
        .map_response(security_headers)
        // A client that stops sending its body for this long gets a 400 and the connection
        // is freed (the timer restarts with every piece that arrives, so a long upload is fine).
        // A body that is already at its end (a GET's) is left as it is: the timeout's timer
        // would be armed and dropped for nothing on every such request.
        .map_request(move |req: axum::extract::Request| match body_timeout {
            Some(timeout) if !req.body().is_end_stream() => {
                req.map(|body| Body::new(TimeoutBody::new(timeout, body)))
            }
            _ => req,
        })
        .service(tower::service_fn(move |req: axum::extract::Request| {
            let state = state.clone();
            async move { Ok::<_, std::convert::Infallible>(handle(state, req).await) }
        }));
    // The engine enforces its own body limit (and answers with its JSON 413): the handler takes
    // the request whole, so axum's default limit, which applies to its body extractors, never
    // applies.
    let mut router = Router::new().fallback_service(service);
    if let Some(cors) = cors_layer(&cfg.cors_origins) {
        router = router.layer(cors);
    }
    // Request logging is at INFO; below that level the layer would only cost time (a span, a
    // clock read and a timer per request), so it is left out.
    if tracing::level_filters::LevelFilter::current() >= Level::INFO {
        router = router.layer(
            TraceLayer::new_for_http()
                // Method and path only: a query string may carry a token or a password.
                .make_span_with(|req: &axum::http::Request<Body>| {
                    let id = req
                        .extensions()
                        .get::<RequestId>()
                        .map_or("", |r| r.0.as_str());
                    tracing::info_span!(
                        "request",
                        method = %req.method(),
                        path = %req.uri().path(),
                        request_id = %id
                    )
                })
                .on_response(DefaultOnResponse::new().level(Level::INFO)),
        );
    }
    router.layer(axum::middleware::from_fn(request_id))
}

/// Put the security headers on an answer that does not set them itself: `nosniff`, no framing,
/// [`CONTENT_SECURITY_POLICY`], no referrer.
fn security_headers(mut resp: axum::response::Response) -> axum::response::Response {
    let headers = resp.headers_mut();
    for (name, value) in [
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::REFERRER_POLICY, "no-referrer"),
    ] {
        if !headers.contains_key(&name) {
            headers.insert(name, HeaderValue::from_static(value));
        }
    }
    resp
}

/// The header that carries a request's id, in the answer (and in the request when the client
/// or a proxy in front chose it).
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// A request's id ([`REQUEST_ID_HEADER`]), in its extensions: the one the client sent when it is
/// sane, else a new random one. Logged with every line about the request and sent back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub String);

/// Whether a client's request id can be kept: 1 to 128 characters from a safe set (it goes into
/// logs and a response header).
fn sane_request_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:+=/@".contains(&b))
}

/// A new request id: 32 lowercase hex digits, a random half drawn from the OS once per process
/// and a counter. Unique across restarts and servers (the random half) without asking the
/// kernel for 16 random bytes on every request, as a v4 uuid did.
fn new_request_id() -> String {
    static PREFIX: OnceLock<u64> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let prefix = *PREFIX.get_or_init(|| uuid::Uuid::new_v4().as_u64_pair().0);
    format!(
        "{prefix:016x}{:016x}",
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Give the request its id ([`RequestId`]) and put it on the answer.
async fn request_id(
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let name = HeaderName::from_static(REQUEST_ID_HEADER);
    let id = req
        .headers()
        .get(&name)
        .and_then(|v| v.to_str().ok())
        .filter(|v| sane_request_id(v))
        .map_or_else(new_request_id, str::to_string);
    let value = HeaderValue::from_str(&id).ok();
    req.extensions_mut().insert(RequestId(id));
    let mut resp = next.run(req).await;
    if let Some(value) = value {
        resp.headers_mut().insert(name, value);
    }
    resp
}

fn cors_layer(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow_origin = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        let list: Vec<HeaderValue> = origins
            .iter()
            .filter_map(|o| match HeaderValue::from_str(o) {
                Ok(v) => Some(v),
                Err(_) => {
                    tracing::warn!(origin = %o, "ignoring unusable CORS origin");
                    None
                }
            })
            .collect();
        AllowOrigin::list(list)
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow_origin)
            .allow_methods([
                HttpMethod::GET,
                HttpMethod::POST,
                HttpMethod::PATCH,
                HttpMethod::DELETE,
                HttpMethod::PUT,
                HttpMethod::OPTIONS,
            ])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header::ACCEPT,
                HeaderName::from_static("prefer"),
                HeaderName::from_static("lock-token"),
                HeaderName::from_static("idempotency-key"),
                HeaderName::from_static("if-match"),
                HeaderName::from_static("last-event-id"),
            ])
            .expose_headers([
                header::LOCATION,
                header::ETAG,
                HeaderName::from_static("idempotent-replayed"),
                HeaderName::from_static(REQUEST_ID_HEADER),
            ]),
    )
}

async fn handle<S>(state: AppState<S>, req: axum::extract::Request) -> axum::response::Response
where
    S: Store + Send + Sync + 'static,
{
    if !crate::metrics::enabled() {
        return handle_request(state, req, None).await;
    }
    let started = std::time::Instant::now();
    let mut family = "none";
    let resp = handle_request(state, req, Some(&mut family)).await;
    crate::metrics::request(family, resp.status().as_u16(), started.elapsed());
    resp
}

/// Answer one request; `family` (with metrics on) is set to the endpoint family it reaches.
async fn handle_request<S>(
    state: AppState<S>,
    req: axum::extract::Request,
    family: Option<&mut &'static str>,
) -> axum::response::Response
where
    S: Store + Send + Sync + 'static,
{
    let (parts, body) = req.into_parts();
    if parts.headers.get_all(header::HOST).iter().count() > 1 {
        return to_http(state.engine.error_answer(EngineError::bad_request(
            "The request has more than one Host header",
        )));
    }
    let client = client_address(&parts, state.trust_forwarded);
    let base_url = match base_url(state.public_url.as_deref(), state.trust_forwarded, &parts) {
        Some(url) => url,
        None => {
            return to_http(state.engine.error_answer(EngineError::bad_request(
                "The Host header is missing or malformed",
            )))
        }
    };
    // Single sign-on's endpoints run the OpenID Connect protocol here (network I/O, outside
    // any transaction); the engine then logs the user in.
    if let Some(sso) = state.sso.clone() {
        if let Some(target) = crate::oidc::target(parts.uri.path()) {
            // Boxed: the protocol's future is large, and every request's future would
            // otherwise be as large (and copied as such) for the few that reach it.
            let (resp, auth) =
                Box::pin(answer_sso(&state, &sso, target, &parts, body, &base_url)).await;
            if let (true, Some(family)) = (auth, family) {
                *family = "auth";
            }
            return resp;
        }
    }
    // The engine's one route lookup: what this request is, before its body is read.
    let mut routed = state.engine.route(engine::Request {
        method: Method::parse(parts.method.as_str()),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or("").to_string(),
        headers: header_list(&parts.headers),
        body: Vec::new(),
        base_url,
    });
    if let Some(family) = family {
        *family = state.engine.route_family(&routed);
    }
    let info = routed.info().clone();
    let limit = match info.body {
        BodyKind::Pieces { .. } => {
            let login = attempt(&routed);
            if let Some(refusal) = throttled(&state, login.as_deref(), client) {
                return refusal;
            }
            // Boxed, as the single sign-on branch above: a tus upload is rare, its future large.
            let mut frames = Frames(body);
            let handled =
                Box::pin(routed.in_pieces(&mut frames, |piece| state.writer.submit(piece))).await;
            count_failure(&state, handled.refused_login.as_deref(), client);
            return to_http(handled.response);
        }
        BodyKind::Whole { limit } => limit,
    };
    match read_body(body, &parts.headers, limit).await {
        Ok(body) => routed.set_body(body),
        Err(BodyError::TooLarge(size)) => {
            return to_http(
                state
                    .engine
                    .error_answer(EngineError::PayloadTooLarge { size, limit }),
            )
        }
        Err(BodyError::Read(e)) => {
            tracing::debug!(error = %e, "reading the request body failed");
            return to_http(state.engine.error_answer(EngineError::bad_request(format!(
                "Could not read the request body: {e}"
            ))));
        }
    };
    let login = attempt(&routed);
    if let Some(refusal) = throttled(&state, login.as_deref(), client) {
        return refusal;
    }
    let (resp, refused) = if info.answer == AnswerKind::EventStream {
        let (wake, stop) = state.signals.clone();
        sse::stream(state.engine.clone(), wake, stop, routed, |anonymous| {
            state.streams.try_open(client, anonymous)
        })
    } else {
        answer(&state, routed).await
    };
    // Every password reset request counts, whatever it answered (the same for any login).
    let counted = match info.throttle {
        Some(ThrottleClass::PasswordReset) => login,
        _ => refused,
    };
    count_failure(&state, counted.as_deref(), client);
    resp
}

/// A request to single sign-on's endpoint `target` ([`crate::oidc`]): its answer, and whether
/// the protocol answered it (else it is a 405).
async fn answer_sso<S>(
    state: &AppState<S>,
    sso: &crate::oidc::Sso,
    target: crate::oidc::Target<'_>,
    parts: &Parts,
    body: Body,
    base_url: &str,
) -> (axum::response::Response, bool)
where
    S: Store + Send + Sync + 'static,
{
    let body = match read_body(body, &parts.headers, 64 * 1024).await {
        Ok(body) => body,
        Err(BodyError::TooLarge(size)) => {
            let error = EngineError::PayloadTooLarge {
                size,
                limit: 64 * 1024,
            };
            return (to_http(error.into_response()), false);
        }
        Err(BodyError::Read(e)) => {
            let error = EngineError::bad_request(format!("Could not read the request body: {e}"));
            return (to_http(error.into_response()), false);
        }
    };
    let headers = header_list(&parts.headers);
    let answered = crate::oidc::handle(
        sso,
        &state.engine,
        parts.method.as_str(),
        target,
        (&headers, &body),
        base_url,
    )
    .await;
    if let Some(resp) = answered {
        return (to_http(resp), true);
    }
    let error = EngineError::MethodNotAllowed {
        method: parts.method.to_string(),
        allowed: match target {
            crate::oidc::Target::Login(_) => vec!["GET", "POST"],
            crate::oidc::Target::Logout(_) => vec!["GET"],
        },
    };
    (to_http(error.into_response()), false)
}

/// A request's headers as the engine takes them.
fn header_list(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_string(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// The login `routed` tries a password for, when it falls in the engine's login throttle class.
fn attempt(routed: &Routed) -> Option<String> {
    match routed.info().throttle {
        Some(ThrottleClass::Login | ThrottleClass::PasswordReset) => routed.attempted_login(),
        None => None,
    }
}

/// The 429 for an attempt whose login or address has used up its failures, if it has.
fn throttled<S: Store>(
    state: &AppState<S>,
    login: Option<&str>,
    client: Option<IpAddr>,
) -> Option<axum::response::Response> {
    let wait = state.throttle.wait(login?, client)?;
    let retry_after = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    Some(to_http(state.engine.error_answer(
        EngineError::TooManyLoginAttempts { retry_after },
    )))
}

/// Count a password the engine refused ([`engine::engine::Handled::refused_login`]).
fn count_failure<S: Store>(state: &AppState<S>, refused: Option<&str>, client: Option<IpAddr>) {
    if let Some(login) = refused {
        state.throttle.failed(login, client);
    }
}

/// Answer `routed` with the engine: writes through the group committer, reads here (or on the
/// blocking pool: when [`Config::blocking_reads`] says so, and always for answers the engine
/// says may be slow, [`AnswerKind::Lines`]). Also the login whose password it refused, if any.
async fn answer<S>(
    state: &AppState<S>,
    routed: Routed,
) -> (axum::response::Response, Option<String>)
where
    S: Store + Send + Sync + 'static,
{
    if routed.info().writes {
        // Boxed: the write's future is large, and every read's would be as large (and copied
        // as such) if it were held inline.
        let handled = Box::pin(state.writer.submit_write(
            &state.engine,
            routed,
            state.blocking_reads,
        ))
        .await;
        let mut resp = to_http(handled.response);
        if state.read_your_writes {
            // The latest generation this server committed: at least the one this write reached.
            if let Some(g) = state.engine.committed_generation() {
                if let Ok(cookie) = HeaderValue::from_str(&format!(
                    "{RW_GENERATION_COOKIE}={g}; Path=/; Max-Age=300; HttpOnly; SameSite=Lax"
                )) {
                    resp.headers_mut().append(header::SET_COOKIE, cookie);
                }
            }
        }
        return (resp, handled.refused_login);
    }
    // The language model may take long: its requests never hold an async worker.
    let slow = routed.info().answer == AnswerKind::Lines;
    if !state.blocking_reads && !slow {
        // Reads never wait for the writer (WAL snapshots) and the reader pool holds at least
        // as many connections as there are workers (see `main`), so this does not block.
        let handled = state.engine.handle_routed(routed);
        return (
            respond(&state.engine, handled.response),
            handled.refused_login,
        );
    }
    let engine = state.engine.clone();
    let need = if state.read_your_writes {
        required_generation(routed.request())
    } else {
        None
    };
    match tokio::task::spawn_blocking(move || {
        crate::postgres::with_min_generation(need, || engine.handle_routed(routed))
    })
    .await
    {
        Ok(handled) => (
            respond(&state.engine, handled.response),
            handled.refused_login,
        ),
        Err(e) => {
            tracing::error!(error = %e, "the engine task failed");
            (
                to_http(
                    EngineError::Internal("the request could not be completed".into())
                        .into_response(),
                ),
                None,
            )
        }
    }
}

/// axum's body as the engine reads a body in pieces ([`engine::BodyStream`]).
struct Frames(Body);

impl engine::BodyStream for Frames {
    type Chunk = axum::body::Bytes;

    async fn next_chunk(&mut self) -> Option<Result<axum::body::Bytes, String>> {
        loop {
            match self.0.frame().await? {
                Ok(frame) => {
                    if let Ok(data) = frame.into_data() {
                        return Some(Ok(data));
                    }
                }
                Err(e) => {
                    tracing::debug!(error = %e, "a body read in pieces ended early");
                    return Some(Err(e.to_string()));
                }
            }
        }
    }
}

/// The site root's absolute URL for this request, or `None` when the request does not say which
/// host it is for (or says it in a way that cannot be put in a URL).
fn base_url(public_url: Option<&str>, trust_forwarded: bool, parts: &Parts) -> Option<String> {
    if let Some(url) = public_url {
        return Some(url.to_string());
    }
    let forwarded = |name: &str| {
        if trust_forwarded {
            first_value(&parts.headers, name)
        } else {
            None
        }
    };
    let proto = forwarded("x-forwarded-proto")
        .map(|p| p.to_ascii_lowercase())
        .filter(|p| p == "http" || p == "https")
        .unwrap_or_else(|| "http".to_string());
    let host = forwarded("x-forwarded-host")
        .or_else(|| first_value(&parts.headers, header::HOST.as_str()))
        .or_else(|| parts.uri.authority().map(|a| a.as_str().to_string()))?;
    valid_host(&host).then(|| format!("{proto}://{host}"))
}

/// The client's address for the login throttle: the connection's peer, or, with
/// `--trust-forwarded` (behind a proxy, where every peer is the proxy), the last address of
/// `X-Forwarded-For` (the one the proxy added; earlier ones are the client's say-so).
fn client_address(parts: &Parts, trust_forwarded: bool) -> Option<IpAddr> {
    if trust_forwarded {
        let forwarded = parts
            .headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .last()
            .and_then(|a| a.trim().parse::<IpAddr>().ok());
        if forwarded.is_some() {
            return forwarded;
        }
    }
    parts.extensions.get::<ClientAddr>().map(|c| c.0)
}

/// The first comma-separated element of the first `name` header, trimmed, if non-empty.
fn first_value(headers: &HeaderMap, name: &str) -> Option<String> {
    let value = headers.get(name)?.to_str().ok()?;
    let first = value.split(',').next()?.trim();
    (!first.is_empty()).then(|| first.to_string())
}

/// `host[:port]` made only of characters that may appear there (names, IPv4, bracketed IPv6).
fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 255
        && host.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':' | b'[' | b']')
        })
}

enum BodyError {
    TooLarge(usize),
    Read(axum::Error),
}

/// Read the whole body, refusing (without reading on) as soon as it is known to exceed `limit`.
async fn read_body(body: Body, headers: &HeaderMap, limit: usize) -> Result<Vec<u8>, BodyError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(len) = declared {
        if len > limit as u64 {
            return Err(BodyError::TooLarge(
                usize::try_from(len).unwrap_or(usize::MAX),
            ));
        }
    }
    let capacity = declared
        .and_then(|len| usize::try_from(len).ok())
        .unwrap_or(0)
        .min(limit);
    let mut buf = Vec::with_capacity(capacity);
    let mut body = body;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(BodyError::Read)?;
        if let Ok(data) = frame.into_data() {
            let size = buf.len().saturating_add(data.len());
            if size > limit {
                return Err(BodyError::TooLarge(size));
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf)
}

/// Bytes of a streamed download read from the store per step (a few of the engine's chunks).
const STREAM_PIECE: usize = 1024 * 1024;

/// Turn the engine's response into an HTTP response; a [`engine::BlobStream`] body is read from
/// the store a piece at a time while the client takes it (on the blocking pool), so a large
/// download never sits whole in memory. A piece that cannot be read (the file was deleted
/// meanwhile) ends the body with an error: the client sees a truncated transfer.
fn respond<S>(engine: &Arc<Engine<S>>, mut resp: engine::Response) -> axum::response::Response
where
    S: Store + Send + Sync + 'static,
{
    if let Some(lines) = resp.lines.take() {
        // A language model's answer: each line sent as the model produces it.
        let pieces = futures_util::stream::unfold(lines, |lines| async move {
            let next = lines.clone();
            match tokio::task::spawn_blocking(move || next.next_line()).await {
                Ok(Some(line)) => Some((
                    Ok::<_, std::io::Error>(axum::body::Bytes::from(line)),
                    lines,
                )),
                _ => None,
            }
        });
        let mut out = to_http(resp);
        *out.body_mut() = Body::from_stream(pieces);
        return out;
    }
    let Some(stream) = resp.stream.take() else {
        return to_http(resp);
    };
    let len = stream.len();
    let state = (engine.clone(), stream, 0u64);
    let pieces = futures_util::stream::unfold(state, |(engine, stream, offset)| async move {
        if offset >= stream.len() {
            return None;
        }
        let (e, s) = (engine.clone(), stream.clone());
        let piece = tokio::task::spawn_blocking(move || {
            // from the primary when reads may come from a lagging replica: the pieces of
            // a file found anywhere are there
            crate::postgres::with_min_generation(Some(crate::postgres::PRIMARY_ONLY), || {
                e.read_stream(&s, offset, STREAM_PIECE)
            })
        })
        .await;
        match piece {
            Ok(Ok(bytes)) if !bytes.is_empty() => {
                let next = offset + bytes.len() as u64;
                Some((Ok(axum::body::Bytes::from(bytes)), (engine, stream, next)))
            }
            Ok(Ok(_)) => Some((
                Err(std::io::Error::other("the file ended early")),
                (engine, stream, u64::MAX),
            )),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "reading a download from the store failed");
                Some((
                    Err(std::io::Error::other(e.to_string())),
                    (engine, stream, u64::MAX),
                ))
            }
            Err(e) => Some((
                Err(std::io::Error::other(e.to_string())),
                (engine, stream, u64::MAX),
            )),
        }
    });
    let mut out = to_http(resp);
    *out.body_mut() = Body::from_stream(pieces);
    if let Ok(v) = HeaderValue::from_str(&len.to_string()) {
        out.headers_mut().insert(header::CONTENT_LENGTH, v);
    }
    out
}

/// Turn the engine's response into an HTTP response.
fn to_http(resp: engine::Response) -> axum::response::Response {
    let status = StatusCode::from_u16(resp.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut out = axum::response::Response::new(Body::from(resp.body));
    *out.status_mut() = status;
    let headers = out.headers_mut();
    for (name, value) in resp.headers {
        match (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            (Ok(name), Ok(value)) => {
                headers.append(name, value);
            }
            _ => {
                tracing::warn!(header = %name, "dropping a response header that is not valid HTTP")
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut b = axum::http::Request::builder().uri("/x");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    #[test]
    fn new_request_ids_are_32_hex_digits_sharing_a_prefix_and_never_repeat() {
        let ids: Vec<String> = (0..1000).map(|_| new_request_id()).collect();
        for id in &ids {
            assert_eq!(id.len(), 32, "{id}");
            assert!(id
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
            assert!(sane_request_id(id));
            assert_eq!(id[..16], ids[0][..16]);
        }
        let distinct: std::collections::BTreeSet<&String> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len());
    }

    #[test]
    fn base_url_prefers_configuration_then_forwarded_when_trusted_then_host() {
        let p = parts(&[("host", "a.test:8080"), ("x-forwarded-host", "b.test")]);
        assert_eq!(
            base_url(Some("https://pub.test"), true, &p).unwrap(),
            "https://pub.test"
        );
        assert_eq!(base_url(None, true, &p).unwrap(), "http://b.test");
        assert_eq!(base_url(None, false, &p).unwrap(), "http://a.test:8080");
        let p = parts(&[
            ("host", "a.test:8080"),
            ("x-forwarded-proto", "HTTPS, http"),
        ]);
        assert_eq!(base_url(None, true, &p).unwrap(), "https://a.test:8080");
        assert_eq!(base_url(None, false, &p).unwrap(), "http://a.test:8080");
        let p = parts(&[("host", "[::1]:8080"), ("x-forwarded-proto", "gopher")]);
        assert_eq!(base_url(None, true, &p).unwrap(), "http://[::1]:8080");
    }

    #[test]
    fn the_client_address_is_the_peer_or_the_proxy_s_last_forwarded_one() {
        let mut p = parts(&[("x-forwarded-for", "10.9.9.9, 192.0.2.7")]);
        p.extensions
            .insert(ClientAddr(IpAddr::from([127, 0, 0, 1])));
        assert_eq!(
            client_address(&p, false),
            Some(IpAddr::from([127, 0, 0, 1]))
        );
        assert_eq!(client_address(&p, true), Some(IpAddr::from([192, 0, 2, 7])));
        let mut p = parts(&[("x-forwarded-for", "not an address")]);
        p.extensions
            .insert(ClientAddr(IpAddr::from([127, 0, 0, 1])));
        assert_eq!(client_address(&p, true), Some(IpAddr::from([127, 0, 0, 1])));
    }

    #[test]
    fn malformed_or_missing_host_gives_no_base_url() {
        assert_eq!(base_url(None, false, &parts(&[])), None);
        assert_eq!(
            base_url(None, false, &parts(&[("host", "a.test/evil")])),
            None
        );
        assert_eq!(base_url(None, false, &parts(&[("host", "a b")])), None);
    }

    #[test]
    fn config_validation() {
        let ok = Config {
            public_url: Some("https://example.org/site/".into()),
            cors_origins: vec!["*".into(), "http://localhost:3000".into()],
            ..Config::default()
        }
        .validated()
        .unwrap();
        assert_eq!(ok.public_url.as_deref(), Some("https://example.org/site"));
        for bad in ["example.org", "ftp://x", "http://", "https:///x"] {
            let cfg = Config {
                public_url: Some(bad.into()),
                ..Config::default()
            };
            assert!(cfg.validated().is_err(), "{bad}");
        }
        for bad in ["localhost:3000", "http://x/path", ""] {
            let cfg = Config {
                cors_origins: vec![bad.into()],
                ..Config::default()
            };
            assert!(cfg.validated().is_err(), "{bad}");
        }
    }
}
