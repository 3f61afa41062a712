//! The change feed as Server-Sent Events, carried: the engine answers a request it routed as
//! [`engine::AnswerKind::EventStream`] with an [`engine::ChangeStream`]
//! ([`Engine::open_change_stream`]) and gives the bytes of its events
//! ([`Engine::change_stream_next`]); this module only decides when to ask. It sends the opening
//! answer, then waits for a commit that wrote change log entries
//! ([`engine::EngineOptions::changes_notify`], a `watch` channel here, [`Config::changes_wake`])
//! and asks for the events since the stream's cursor (at once again while the engine says more
//! are waiting). Nothing is read while nothing commits; the engine's keep-alive goes out every
//! [`engine::CHANGE_STREAM_KEEP_ALIVE`]. The stream ends after
//! [`engine::CHANGE_STREAM_LIFETIME`], when the server shuts down, or when the engine says a read
//! failed. An open stream holds a permit of the server's stream budget
//! ([`super::limits::StreamBudget`]) until it ends.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use engine::{ChangeStream, Engine, Store, CHANGE_STREAM_KEEP_ALIVE, CHANGE_STREAM_LIFETIME};
use tokio::sync::watch;
use tokio::time::Instant;

use super::{to_http, Config};

/// What a stream carries between pieces.
struct Follow<S: Store, P> {
    engine: Arc<Engine<S>>,
    stream: ChangeStream,
    wake: Option<watch::Receiver<u64>>,
    stop: Option<watch::Receiver<bool>>,
    deadline: Instant,
    /// Held while the stream is open (released when the body is dropped).
    _permit: P,
}

impl<S: Store, P> Follow<S, P> {
    /// Mark every commit so far as seen (the next read covers them).
    fn seen(&mut self) {
        if let Some(w) = &mut self.wake {
            w.borrow_and_update();
        }
    }
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
async fn next<S: Store + Send + Sync + 'static, P>(
    mut f: Follow<S, P>,
) -> Option<(Result<Bytes, std::io::Error>, Follow<S, P>)> {
    loop {
        if !f.stream.waiting() {
            tokio::select! {
                alive = changed(&mut f.wake) => {
                    if !alive {
                        return None;
                    }
                }
                () = tokio::time::sleep(CHANGE_STREAM_KEEP_ALIVE) => {
                    let notified = f.wake.is_some();
                    let bytes = Bytes::from_static(f.stream.keep_alive(notified));
                    return Some((Ok(bytes), f));
                }
                () = stopped(&mut f.stop) => return None,
                () = tokio::time::sleep_until(f.deadline) => return None,
            }
        }
        f.seen();
        let events = f.engine.change_stream_next(&mut f.stream)?;
        if !events.is_empty() {
            return Some((Ok(Bytes::from(events)), f));
        }
    }
}

/// Answer `routed` (one the engine routed as [`engine::AnswerKind::EventStream`]) as an event
/// stream that holds what `permit` gives it (see [`super::limits::StreamBudget`]: `permit` is
/// asked once the engine has accepted the request, with whether the caller is anonymous, and
/// its refusal is the answer); also the login whose password the engine refused, if any.
pub fn stream<S, P>(
    engine: Arc<Engine<S>>,
    cfg_wake: Option<watch::Receiver<u64>>,
    cfg_stop: Option<watch::Receiver<bool>>,
    routed: engine::Routed,
    permit: impl FnOnce(bool) -> Result<P, engine::EngineError>,
) -> (axum::response::Response, Option<String>)
where
    S: Store + Send + Sync + 'static,
    P: Send + 'static,
{
    let mut wake = cfg_wake;
    if let Some(w) = &mut wake {
        // Commits before the first read are covered by it.
        w.borrow_and_update();
    }
    let (stream, head) = match engine.open_change_stream(routed) {
        Ok(opened) => opened,
        Err(handled) => return (to_http(handled.response), handled.refused_login),
    };
    let permit = match permit(stream.anonymous()) {
        Ok(p) => p,
        Err(e) => return (to_http(e.into_response()), None),
    };
    let follow = Follow {
        engine,
        stream,
        wake,
        stop: cfg_stop,
        deadline: Instant::now() + CHANGE_STREAM_LIFETIME,
        _permit: permit,
    };
    let mut head = head;
    let first = Bytes::from(std::mem::take(&mut head.body));
    let mut out = to_http(head);
    let rest = futures_util::stream::unfold(follow, next);
    let first = futures_util::stream::once(async move { Ok::<_, std::io::Error>(first) });
    *out.body_mut() = Body::from_stream(futures_util::StreamExt::chain(first, rest));
    (out, None)
}

/// The commit notifications and shutdown signal of `cfg`.
pub fn signals(cfg: &Config) -> (Option<watch::Receiver<u64>>, Option<watch::Receiver<bool>>) {
    (cfg.changes_wake.clone(), cfg.shutdown.clone())
}
