//! Subscribers to domain events ([`crate::core::events`]) and the [`Registry`] that delivers events to
//! them. The list of subscribers the engine runs is [`crate::site::registry::builtin`].
//!
//! Each subscriber owns its records and cleans only those: versioning its versions, workflow its
//! history, locking the lock, comments the comments, translations the group entries.

use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::runtime::context::Ctx;

/// Reacts to events inside the request's transaction. An error aborts the whole request.
pub trait Subscriber: Send + Sync {
    /// A short name, for error messages and listings.
    fn name(&self) -> &'static str;
    /// Handle one event; may write through `ctx` and emit further events.
    fn on_event(&self, ctx: &mut Ctx<'_>, event: &Event) -> Result<()>;
}

/// Most rounds of events emitted by subscribers in reaction to events, before giving up (a
/// subscriber loop is a bug, not an infinite request).
const MAX_ROUNDS: usize = 16;

/// The subscribers of an engine, in delivery order.
#[derive(Default)]
pub struct Registry {
    subscribers: Vec<Box<dyn Subscriber>>,
}

impl Registry {
    /// A registry with no subscribers.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Add `s` after the subscribers already registered.
    pub fn register(&mut self, s: Box<dyn Subscriber>) {
        self.subscribers.push(s);
    }

    /// Remove the subscriber called `name` (benchmarks measure the cost of one); whether there
    /// was one.
    pub fn remove(&mut self, name: &str) -> bool {
        let before = self.subscribers.len();
        self.subscribers.retain(|s| s.name() != name);
        self.subscribers.len() != before
    }

    /// The names of the subscribers, in delivery order.
    pub fn names(&self) -> Vec<&'static str> {
        self.subscribers.iter().map(|s| s.name()).collect()
    }

    /// Deliver every pending event of `ctx` to every subscriber, including events they emit in
    /// turn.
    pub fn dispatch(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        for _ in 0..MAX_ROUNDS {
            let (batch, causes) = ctx.take_events_with_causes();
            if batch.is_empty() {
                return Ok(());
            }
            for (event, cause) in batch.iter().zip(causes) {
                ctx.event_cause = cause;
                for s in &self.subscribers {
                    s.on_event(ctx, event)?;
                }
            }
            ctx.event_cause = Vec::new();
            ctx.record_delivered(batch);
        }
        Err(EngineError::Internal(
            "event subscribers kept emitting events".into(),
        ))
    }
}
