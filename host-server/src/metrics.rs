//! The server's metrics (`--metrics-listen`): counters, gauges and histograms served in the
//! Prometheus text format (OpenMetrics) on a listen address of their own, so the site's port never
//! exposes them.
//!
//! One process-wide set ([`install`]), off until the binary installs it: with no set installed
//! every recording call is a no-op, so nothing is counted when no one scrapes. Requests are
//! counted per endpoint family (the engine's route lookup, [`engine::Engine::route_family`]) and
//! status class; the writer's queue and commits by the group committer; connections and event
//! streams as they open and close; outbox deliveries as the delivery task performs them. What a
//! scrape reads from the engine (the response cache's lookups, the outbox backlog) is sampled
//! when the endpoint is asked ([`set_sampler`]). The README's "Operations" section lists the names.

use std::sync::atomic::Ordering;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// The labels of a request's metrics.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    /// The endpoint family (`content`, `search`, ...; `none` when no endpoint matched).
    family: &'static str,
    /// The status class: `2xx`, `3xx`, `4xx`, `5xx` (`1xx` never leaves the server).
    status: &'static str,
}

/// The label of a request that ended after store conflicts.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RunsLabels {
    /// How many runs it took (`2`, `3`, ...; the last counted value also counts longer ones).
    runs: String,
}

/// The label of an outbox delivery attempt.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    /// `delivered` or `failed` (a failed attempt is retried later or given up).
    outcome: &'static str,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// What a scrape reads from the engine at that moment.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// Response cache lookups that found an answer, and that did not, since start.
    pub cache_lookups: (u64, u64),
    /// Outbox deliveries queued, when it could be read.
    pub outbox_backlog: Option<usize>,
    /// Write requests prepared in parallel (`--parallel-writes`) that were found stale at commit
    /// and ran again on the writer thread, since start.
    pub prepared_reruns: u64,
    /// Requests that met an optimistic store's conflicts (PostgreSQL `--write-mode optimistic`),
    /// since start ([`engine::Engine::conflict_stats`]).
    pub conflicts: engine::ConflictStats,
}

type Sampler = Box<dyn Fn() -> Sample + Send + Sync>;

/// Every metric the server keeps.
struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: HistogramFamily<RequestLabels>,
    writer_queue: Gauge,
    commit_seconds: Histogram,
    group_size: Histogram,
    cache_hits: Counter,
    cache_misses: Counter,
    prepared_reruns: Counter,
    conflict_reruns: Counter,
    conflict_exhausted: Counter,
    conflict_settled: Family<RunsLabels, Counter>,
    outbox_backlog: Gauge,
    deliveries: Family<OutcomeLabels, Counter>,
    connections_open: Gauge,
    streams_open: Gauge,
    sampler: Mutex<Option<Sampler>>,
}

static METRICS: OnceLock<Metrics> = OnceLock::new();

fn request_histogram() -> Histogram {
    // 0.5 ms .. about 16 s, doubling.
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

impl Metrics {
    fn new() -> Self {
        let mut registry = Registry::with_prefix("host_server");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "Requests answered, per endpoint family and status class",
            requests.clone(),
        );
        let durations: HistogramFamily<RequestLabels> =
            Family::new_with_constructor(request_histogram as fn() -> Histogram);
        registry.register(
            "http_request_duration_seconds",
            "Time from receiving a request's head to its answer's head, per endpoint family and \
             status class",
            durations.clone(),
        );
        let writer_queue = Gauge::default();
        registry.register(
            "writer_queue_depth",
            "Write requests waiting for the writer thread (group commit)",
            writer_queue.clone(),
        );
        let commit_seconds = Histogram::new(exponential_buckets(0.0001, 2.0, 16));
        registry.register(
            "writer_commit_duration_seconds",
            "Time the writer thread takes for one group: running its requests and the commit",
            commit_seconds.clone(),
        );
        let group_size = Histogram::new(exponential_buckets(1.0, 2.0, 7));
        registry.register(
            "writer_group_size",
            "Write requests committed together in one group",
            group_size.clone(),
        );
        let cache_hits = Counter::default();
        registry.register(
            "response_cache_hits",
            "Read requests answered from the response cache",
            cache_hits.clone(),
        );
        let cache_misses = Counter::default();
        registry.register(
            "response_cache_misses",
            "Cacheable read requests the response cache had no answer for",
            cache_misses.clone(),
        );
        let prepared_reruns = Counter::default();
        registry.register(
            "writer_prepared_reruns",
            "Write requests prepared in parallel (--parallel-writes) that were stale at commit and \
             ran again on the writer thread",
            prepared_reruns.clone(),
        );
        let conflict_reruns = Counter::default();
        registry.register(
            "store_conflict_reruns",
            "Requests (or groups of them) run again after a store conflict (PostgreSQL optimistic \
             mode), one per re-run",
            conflict_reruns.clone(),
        );
        let conflict_exhausted = Counter::default();
        registry.register(
            "store_conflict_exhausted",
            "Requests (or groups of them) whose every allowed run met a store conflict, answered \
             503 Busy",
            conflict_exhausted.clone(),
        );
        let conflict_settled = Family::<RunsLabels, Counter>::default();
        registry.register(
            "store_conflict_settled",
            "Requests (or groups of them) that met a store conflict and then ended without one, \
             per runs taken",
            conflict_settled.clone(),
        );
        let outbox_backlog = Gauge::default();
        registry.register(
            "outbox_backlog",
            "Mails and webhooks queued for delivery (due now or retried later)",
            outbox_backlog.clone(),
        );
        let deliveries = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "outbox_deliveries",
            "Delivery attempts of mails and webhooks, per outcome (delivered, failed)",
            deliveries.clone(),
        );
        let connections_open = Gauge::default();
        registry.register(
            "connections_open",
            "Client connections open",
            connections_open.clone(),
        );
        let streams_open = Gauge::default();
        registry.register(
            "streams_open",
            "Change feed event streams open",
            streams_open.clone(),
        );
        Metrics {
            registry,
            requests,
            durations,
            writer_queue,
            commit_seconds,
            group_size,
            cache_hits,
            cache_misses,
            prepared_reruns,
            conflict_reruns,
            conflict_exhausted,
            conflict_settled,
            outbox_backlog,
            deliveries,
            connections_open,
            streams_open,
            sampler: Mutex::new(None),
        }
    }
}

/// Turn metrics on for this process (the binary does, with `--metrics-listen`). Idempotent.
pub fn install() {
    METRICS.get_or_init(Metrics::new);
}

/// Whether metrics are on.
pub fn enabled() -> bool {
    METRICS.get().is_some()
}

/// What a scrape reads from the engine: `sampler` is called once per scrape (on a blocking
/// thread: it may read the store).
pub fn set_sampler(sampler: impl Fn() -> Sample + Send + Sync + 'static) {
    if let Some(m) = METRICS.get() {
        *m.sampler.lock().unwrap_or_else(PoisonError::into_inner) = Some(Box::new(sampler));
    }
}

fn status_class(status: u16) -> &'static str {
    match status {
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        500..=599 => "5xx",
        _ => "other",
    }
}

/// Count a request of endpoint family `family` answered with `status` after `elapsed`.
pub fn request(family: &'static str, status: u16, elapsed: Duration) {
    if let Some(m) = METRICS.get() {
        let labels = RequestLabels {
            family,
            status: status_class(status),
        };
        m.requests.get_or_create(&labels).inc();
        m.durations
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
    }
}

/// A write request joined the writer's queue (`+1`) or the writer took it (`-1`).
pub fn writer_queue(delta: i64) {
    if let Some(m) = METRICS.get() {
        m.writer_queue.inc_by(delta);
    }
}

/// The writer committed a group of `size` requests in `elapsed`.
pub fn group_committed(size: usize, elapsed: Duration) {
    if let Some(m) = METRICS.get() {
        m.commit_seconds.observe(elapsed.as_secs_f64());
        m.group_size.observe(size as f64);
    }
}

/// An outbox delivery attempt ended: delivered or not.
pub fn delivery(delivered: bool) {
    if let Some(m) = METRICS.get() {
        let outcome = if delivered { "delivered" } else { "failed" };
        m.deliveries.get_or_create(&OutcomeLabels { outcome }).inc();
    }
}

/// A client connection opened (`+1`) or closed (`-1`).
pub fn connections(delta: i64) {
    if let Some(m) = METRICS.get() {
        m.connections_open.inc_by(delta);
    }
}

/// A change feed event stream opened (`+1`) or closed (`-1`).
pub fn streams(delta: i64) {
    if let Some(m) = METRICS.get() {
        m.streams_open.inc_by(delta);
    }
}

/// The content type of [`render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Every metric as text (sampling the engine first); empty when metrics are off.
pub fn render() -> String {
    let Some(m) = METRICS.get() else {
        return String::new();
    };
    let sample = m
        .sampler
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .map(|s| s())
        .unwrap_or_default();
    m.cache_hits
        .inner()
        .store(sample.cache_lookups.0, Ordering::Relaxed);
    m.cache_misses
        .inner()
        .store(sample.cache_lookups.1, Ordering::Relaxed);
    m.prepared_reruns
        .inner()
        .store(sample.prepared_reruns, Ordering::Relaxed);
    m.conflict_reruns
        .inner()
        .store(sample.conflicts.reruns, Ordering::Relaxed);
    m.conflict_exhausted
        .inner()
        .store(sample.conflicts.exhausted, Ordering::Relaxed);
    for (runs, &n) in sample.conflicts.settled.iter().enumerate() {
        if n > 0 {
            let labels = RunsLabels {
                runs: runs.to_string(),
            };
            m.conflict_settled
                .get_or_create(&labels)
                .inner()
                .store(n, Ordering::Relaxed);
        }
    }
    if let Some(n) = sample.outbox_backlog {
        m.outbox_backlog.set(i64::try_from(n).unwrap_or(i64::MAX));
    }
    let mut out = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &m.registry) {
        tracing::warn!(error = %e, "encoding the metrics failed");
    }
    out
}

/// Serve [`render`] at `GET /metrics` on `listener` until the process ends.
pub async fn serve(listener: tokio::net::TcpListener) {
    let router = axum::Router::new().route(
        "/metrics",
        axum::routing::get(|| async {
            let text = tokio::task::spawn_blocking(render)
                .await
                .unwrap_or_default();
            ([(axum::http::header::CONTENT_TYPE, CONTENT_TYPE)], text)
        }),
    );
    if let Err(e) = axum::serve(listener, router).await {
        tracing::warn!(error = %e, "the metrics endpoint stopped");
    }
}
