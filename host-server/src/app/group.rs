//! Group commit: one writer thread answers every write request, in groups.
//!
//! Write requests queue up on a channel. The writer thread takes the first waiting request and
//! every other one already queued (at most [`MAX_GROUP`]), hands them to
//! [`Engine::handle_routed_group`] — one store transaction, one savepoint per request, one commit, so
//! one fsync with `--sync full` — and only then sends each request its answer. A request is
//! therefore acknowledged only after its writes are durable, exactly as before, but concurrent
//! writers share the cost of the commit. Nothing waits on purpose: while one group commits, the
//! requests arriving meanwhile form the next group, so a lone writer sees no added latency.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::Arc;

use engine::{Engine, EngineError, Store};
use engine::{Handled, Routed};
use tokio::sync::oneshot;

/// Most requests committed together.
pub(crate) const MAX_GROUP: usize = 64;

type Job = (Routed, oneshot::Sender<Handled>);

/// The queue in front of the writer thread. The thread ends when the last clone is dropped.
#[derive(Clone)]
pub(crate) struct GroupCommitter {
    tx: mpsc::Sender<Job>,
}

impl GroupCommitter {
    /// Start the writer thread for `engine`.
    pub fn start<S>(engine: Arc<Engine<S>>) -> std::io::Result<Self>
    where
        S: Store + Send + Sync + 'static,
    {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("group-commit".into())
            .spawn(move || writer_loop(&engine, &rx))?;
        Ok(GroupCommitter { tx })
    }

    /// Queue `req` (routed by the engine) and wait for its answer (sent once its group has
    /// committed).
    pub async fn submit(&self, req: Routed) -> Handled {
        let (tx, rx) = oneshot::channel();
        crate::metrics::writer_queue(1);
        if self.tx.send((req, tx)).is_err() {
            crate::metrics::writer_queue(-1);
            return internal("the writer is not running");
        }
        match rx.await {
            Ok(resp) => resp,
            Err(_) => internal("the writer dropped the request"),
        }
    }
}

fn internal(why: &str) -> Handled {
    tracing::error!("{why}");
    failed()
}

/// The answer to a request whose group could not be answered.
fn failed() -> Handled {
    Handled {
        response: EngineError::Internal("the request could not be completed".into())
            .into_response(),
        refused_login: None,
    }
}

fn writer_loop<S: Store>(engine: &Engine<S>, rx: &mpsc::Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        let mut reqs = vec![first.0];
        let mut replies = vec![first.1];
        while reqs.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok((req, reply)) => {
                    reqs.push(req);
                    replies.push(reply);
                }
                Err(_) => break,
            }
        }
        crate::metrics::writer_queue(-i64::try_from(reqs.len()).unwrap_or(0));
        let started = std::time::Instant::now();
        // A panic inside the engine unwinds through the store's write transaction, which rolls
        // back; the group then answers 500 and the writer carries on.
        let answers = catch_unwind(AssertUnwindSafe(|| engine.handle_routed_group(&reqs)))
            .unwrap_or_else(|_| {
                tracing::error!(requests = reqs.len(), "a write group panicked; rolled back");
                reqs.iter().map(|_| failed()).collect()
            });
        crate::metrics::group_committed(reqs.len(), started.elapsed());
        tracing::trace!(requests = reqs.len(), "group committed");
        for (reply, answer) in replies.into_iter().zip(answers) {
            // The client may have gone away; its write stands (it was committed).
            let _ = reply.send(answer);
        }
    }
}
