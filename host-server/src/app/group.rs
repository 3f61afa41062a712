//! Group commit: one writer thread answers every write request, in groups.
//!
//! Write requests queue up on a channel. The writer thread takes the first waiting request and
//! every other one already queued (at most [`MAX_GROUP`]), hands them to
//! [`Engine::handle_routed_group`] — one store transaction, one savepoint per request, one commit, so
//! one fsync with `--sync full` — and only then sends each request its answer. A request is
//! therefore acknowledged only after its writes are durable, exactly as before, but concurrent
//! writers share the cost of the commit. Nothing waits on purpose: while one group commits, the
//! requests arriving meanwhile form the next group, so a lone writer sees no added latency.
//!
//! With parallel writes (`EngineOptions::parallel_writes`, `--parallel-writes`, SQLite only) a write request first
//! runs where its connection is served, against a snapshot of its own ([`Engine::prepare_write`]),
//! and only its write set goes to the writer thread, which validates and commits it with the
//! others of its group ([`Engine::commit_prepared`]). One that read what another committed
//! meanwhile runs again, at most [`engine::MAX_ATTEMPTS`] times in all; then it runs on the
//! writer thread itself, as without parallel writes, so it never fails for a conflict.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::Arc;

use engine::{Committed, Handled, Prepared, Routed};
use engine::{Engine, EngineError, Store};
use tokio::sync::oneshot;

/// Most requests committed together.
pub(crate) const MAX_GROUP: usize = 64;

/// What the writer thread is given: a request to run in a group, or a prepared one to commit.
enum Job {
    Serial(Routed, oneshot::Sender<Handled>),
    Prepared(Routed, Prepared, oneshot::Sender<Outcome>),
}

/// The writer's answer to a prepared request: its answer, or (a conflict) the request back.
enum Outcome {
    Done(Handled),
    Again(Routed),
}

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
        if self.tx.send(Job::Serial(req, tx)).is_err() {
            crate::metrics::writer_queue(-1);
            return internal("the writer is not running");
        }
        match rx.await {
            Ok(resp) => resp,
            Err(_) => internal("the writer dropped the request"),
        }
    }

    /// Answer the write `req`: with parallel writes on, run it here against a snapshot (on the
    /// blocking pool when `blocking`) and let the writer commit it; else, or after
    /// [`engine::MAX_ATTEMPTS`] conflicts, as [`GroupCommitter::submit`] does.
    pub async fn submit_write<S>(
        &self,
        engine: &Arc<Engine<S>>,
        req: Routed,
        blocking: bool,
    ) -> Handled
    where
        S: Store + Send + Sync + 'static,
    {
        if !engine.options().parallel_writes {
            return self.submit(req).await;
        }
        let mut req = req;
        for _ in 0..engine::MAX_ATTEMPTS {
            let (routed, prepared) = if blocking {
                let e = engine.clone();
                match tokio::task::spawn_blocking(move || {
                    let p = e.prepare_write(&req);
                    (req, p)
                })
                .await
                {
                    Ok(done) => done,
                    Err(_) => return internal("a write task failed"),
                }
            } else {
                let p = engine.prepare_write(&req);
                (req, p)
            };
            let (tx, rx) = oneshot::channel();
            crate::metrics::writer_queue(1);
            if self.tx.send(Job::Prepared(routed, prepared, tx)).is_err() {
                crate::metrics::writer_queue(-1);
                return internal("the writer is not running");
            }
            match rx.await {
                Ok(Outcome::Done(h)) => return h,
                Ok(Outcome::Again(r)) => req = r,
                Err(_) => return internal("the writer dropped the request"),
            }
        }
        self.submit(req).await
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
        let mut jobs = vec![first];
        while jobs.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        crate::metrics::writer_queue(-i64::try_from(jobs.len()).unwrap_or(0));
        let started = std::time::Instant::now();
        let count = jobs.len();
        let mut reqs = Vec::new();
        let mut replies = Vec::new();
        let mut prepared = Vec::new();
        for job in jobs {
            match job {
                Job::Serial(req, reply) => {
                    reqs.push(req);
                    replies.push(reply);
                }
                Job::Prepared(req, p, reply) => prepared.push((req, p, reply)),
            }
        }
        if !prepared.is_empty() {
            commit_prepared(engine, prepared);
        }
        if !reqs.is_empty() {
            // A panic inside the engine unwinds through the store's write transaction, which
            // rolls back; the group then answers 500 and the writer carries on.
            let answers = catch_unwind(AssertUnwindSafe(|| engine.handle_routed_group(&reqs)))
                .unwrap_or_else(|_| {
                    tracing::error!(requests = reqs.len(), "a write group panicked; rolled back");
                    reqs.iter().map(|_| failed()).collect()
                });
            for (reply, answer) in replies.into_iter().zip(answers) {
                // The client may have gone away; its write stands (it was committed).
                let _ = reply.send(answer);
            }
        }
        crate::metrics::group_committed(count, started.elapsed());
        tracing::trace!(requests = count, "group committed");
    }
}

/// Commit a group of prepared writes; each gets its answer, or its request back to run again.
fn commit_prepared<S: Store>(
    engine: &Engine<S>,
    prepared: Vec<(Routed, Prepared, oneshot::Sender<Outcome>)>,
) {
    let mut routes = Vec::with_capacity(prepared.len());
    let mut replies = Vec::with_capacity(prepared.len());
    let mut batch = Vec::with_capacity(prepared.len());
    for (req, p, reply) in prepared {
        routes.push(req);
        replies.push(reply);
        batch.push(p);
    }
    let outcomes = catch_unwind(AssertUnwindSafe(|| {
        engine.commit_prepared(routes.iter().zip(batch).collect())
    }))
    .unwrap_or_else(|_| {
        tracing::error!(
            requests = routes.len(),
            "a write group panicked; rolled back"
        );
        routes
            .iter()
            .map(|_| Committed::Answered(failed()))
            .collect()
    });
    for ((reply, outcome), req) in replies.into_iter().zip(outcomes).zip(routes) {
        let _ = reply.send(match outcome {
            Committed::Answered(h) => Outcome::Done(h),
            Committed::Conflict => Outcome::Again(req),
        });
    }
}
