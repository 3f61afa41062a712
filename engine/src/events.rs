//! Domain events. Every write emits events inside its transaction (object added, modified, removed,
//! ...); subscribers registered on the engine (history, content rules, catalog indexes) react to them
//! in the same transaction, so their writes commit or roll back with the request.

use crate::context::Ctx;
use crate::error::{EngineError, Result};

/// Something that happened to content during a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// An object was created (by POST, copy, ...).
    Added {
        /// Its uid.
        uid: String,
        /// Its path.
        path: String,
        /// Its type.
        type_name: String,
        /// The change note sent with the creation (`changeNote`), if any.
        change_note: Option<String>,
    },
    /// Fields of an object changed.
    Modified {
        /// Its uid.
        uid: String,
        /// Its path.
        path: String,
        /// Names of the fields that were written.
        fields: Vec<String>,
        /// The change note sent with the edit (`changeNote`), if any.
        change_note: Option<String>,
    },
    /// An object was removed (once per object of a deleted subtree, the top first).
    Removed {
        /// Its uid.
        uid: String,
        /// The path it had.
        path: String,
        /// Its type.
        type_name: String,
    },
    /// A workflow transition was taken.
    Transitioned {
        /// The object's uid.
        uid: String,
        /// Its path.
        path: String,
        /// The transition id.
        transition: String,
        /// The state before.
        from: String,
        /// The state after.
        to: String,
    },
    /// An object moved or was renamed (once per object of the moved subtree, the top first).
    Moved {
        /// Its uid.
        uid: String,
        /// The path it had.
        old_path: String,
        /// The path it has now.
        new_path: String,
    },
    /// A comment was added to an object.
    CommentAdded {
        /// The object's uid.
        uid: String,
        /// The object's path.
        path: String,
        /// The comment's id.
        comment_id: String,
    },
    /// A comment (and its replies) was removed.
    CommentRemoved {
        /// The object's uid.
        uid: String,
        /// The object's path.
        path: String,
        /// The comment's id.
        comment_id: String,
    },
    /// An object was locked.
    Locked {
        /// Its uid.
        uid: String,
        /// Its path.
        path: String,
    },
    /// An object was unlocked (by its owner, by force, or because it was removed).
    Unlocked {
        /// Its uid.
        uid: String,
        /// Its path.
        path: String,
    },
    /// The order of a folder's children changed.
    OrderChanged {
        /// The folder's uid.
        uid: String,
        /// The folder's path.
        path: String,
    },
}

/// Reacts to events inside the request's transaction. An error aborts the whole request.
pub trait Subscriber: Send + Sync {
    /// A short name, for error messages.
    fn name(&self) -> &'static str;
    /// Handle one event; may write through `ctx` and emit further events.
    fn on_event(&self, ctx: &mut Ctx<'_>, event: &Event) -> Result<()>;
}

/// Most rounds of events emitted by subscribers in reaction to events, before giving up (a
/// subscriber loop is a bug, not an infinite request).
const MAX_ROUNDS: usize = 16;

/// Deliver every pending event of `ctx` to every subscriber, including events they emit in turn.
pub fn dispatch(ctx: &mut Ctx<'_>, subscribers: &[Box<dyn Subscriber>]) -> Result<()> {
    for _ in 0..MAX_ROUNDS {
        let batch = ctx.take_events();
        if batch.is_empty() {
            return Ok(());
        }
        for event in &batch {
            for s in subscribers {
                s.on_event(ctx, event)?;
            }
        }
        ctx.record_delivered(batch);
    }
    Err(EngineError::Internal(
        "event subscribers kept emitting events".into(),
    ))
}
