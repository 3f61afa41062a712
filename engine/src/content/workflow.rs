//! The workflow service: history, offered transitions, taking a transition. The workflow
//! definitions (states, transitions, the permissions each state grants) are data, in
//! [`crate::core::model::workflows`].

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::Serialize;
use serde_json::json;

use crate::content::locking;
use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
pub use crate::core::model::workflows::{Transition, Workflow};
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;
use crate::runtime::subscriber::Subscriber;

/// One entry of an object's workflow history (`w:<uid>:<seq>`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HistoryEntry {
    /// The transition id; `None` for the creation entry.
    pub action: Option<String>,
    /// Login of who did it.
    pub actor: String,
    /// The comment given.
    pub comments: String,
    /// The state after it.
    pub review_state: String,
    /// When.
    pub time: DateTime<Utc>,
    /// Position in the object's combined history.
    #[serde(default)]
    pub seq: u64,
}

/// The workflow of `obj`'s type, if it has one.
pub fn workflow_of<'c>(ctx: &Ctx<'c>, obj: &ContentRecord) -> Result<Option<&'c Workflow>> {
    let ty = ctx.type_of(obj)?;
    Ok(ty
        .workflow
        .as_deref()
        .and_then(|w| ctx.core.workflows.get(w)))
}

/// `obj`'s workflow history, oldest first.
pub fn history(ctx: &Ctx<'_>, uid: &str) -> Result<Vec<HistoryEntry>> {
    ctx.values_with_prefix(&keys::workflow_history_prefix(uid))
}

/// `obj`'s workflow history as the site shows it, oldest first: every entry on the default site;
/// on a Nick site only the state changes (a transition was taken), as the spec's history entry
/// of type `workflow` has the transition id as its `action` and the creation is no transition.
/// The stored history keeps the creation entry either way.
pub fn shown_history(ctx: &Ctx<'_>, uid: &str) -> Result<Vec<HistoryEntry>> {
    let mut out = history(ctx, uid)?;
    if ctx.profile().is_nick() {
        out.retain(|e| e.action.is_some());
    }
    Ok(out)
}

/// Append to `uid`'s workflow history.
pub fn append_history(ctx: &mut Ctx<'_>, uid: &str, entry: &HistoryEntry) -> Result<()> {
    let mut entry = entry.clone();
    entry.seq = crate::content::versioning::next_history_seq(ctx, uid)?;
    let last = ctx.last_with_prefix(&keys::workflow_history_prefix(uid))?;
    let seq = last
        .and_then(|(k, _)| keys::trailing_u32(&k))
        .map_or(0, |s| s + 1);
    ctx.put_json(&keys::workflow_history(uid, seq), &entry)
}

/// Remove `uid`'s workflow history.
pub fn remove_history(ctx: &mut Ctx<'_>, uid: &str) -> Result<()> {
    ctx.delete_prefix(&keys::workflow_history_prefix(uid))
}

/// The title of `state` in `obj`'s workflow (the id itself when unknown).
pub fn state_title(ctx: &Ctx<'_>, obj: &ContentRecord, state: &str) -> Result<String> {
    Ok(workflow_of(ctx, obj)?
        .and_then(|w| w.states.get(state))
        .map_or_else(|| state.to_string(), |s| s.title.clone()))
}

/// The transitions the current state offers that the caller may take, in the state's order.
pub fn available<'c>(ctx: &Ctx<'c>, obj: &ContentRecord) -> Result<Vec<(&'c str, &'c Transition)>> {
    let Some(wf) = workflow_of(ctx, obj)? else {
        return Ok(Vec::new());
    };
    let Some(state) = obj.review_state.as_deref().and_then(|s| wf.states.get(s)) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for t in &state.transitions {
        if let Some((id, tr)) = wf.transitions.get_key_value(t) {
            if may_take(ctx, obj, tr)? {
                out.push((id.as_str(), tr));
            }
        }
    }
    Ok(out)
}

fn may_take(ctx: &Ctx<'_>, obj: &ContentRecord, tr: &Transition) -> Result<bool> {
    match Permission::from_name(&tr.guard_permission) {
        Some(p) => ctx.permitted(p, obj),
        None => Ok(false),
    }
}

/// Options of a transition request.
#[derive(Debug, Clone, Default)]
pub struct TransitionOptions {
    /// Comment for the history.
    pub comment: String,
    /// New effective date (normalized timestamp string), if given.
    pub effective: Option<serde_json::Value>,
    /// New expiry date (normalized timestamp string), if given.
    pub expires: Option<serde_json::Value>,
}

/// Take `transition` on `obj`: checks that the state offers it (400), that the caller may take it
/// (401/403) and that no lock stands in the way (403; the lock's owner may go ahead without its
/// token, [`locking::check_can_transition`]); then changes the state (the tree announces
/// it as [`Event::Transitioned`]) and records the history entry.
pub fn take(
    ctx: &mut Ctx<'_>,
    lock_token: Option<&str>,
    obj: &mut ContentRecord,
    transition: &str,
    opts: &TransitionOptions,
) -> Result<HistoryEntry> {
    let wf = workflow_of(ctx, obj)?.ok_or_else(|| {
        EngineError::bad_request(format!(
            "'{}' has no workflow; there are no transitions to take",
            ctx.url(&obj.path)
        ))
    })?;
    let from = obj.review_state.clone().unwrap_or_default();
    let offered = wf
        .states
        .get(&from)
        .map(|s| s.transitions.clone())
        .unwrap_or_default();
    let tr = wf
        .transitions
        .get(transition)
        .filter(|_| offered.iter().any(|t| t == transition))
        .ok_or_else(|| {
            EngineError::bad_request(format!(
                "Invalid transition '{transition}' for state '{from}': the state offers {}",
                if offered.is_empty() {
                    "none".to_string()
                } else {
                    offered.join(", ")
                }
            ))
        })?;
    if !may_take(ctx, obj, tr)? {
        let perm = Permission::from_name(&tr.guard_permission).unwrap_or(Permission::Review);
        return Err(ctx.denied(perm));
    }
    locking::check_can_transition(ctx, lock_token, obj)?;

    obj.review_state = Some(tr.new_state.clone());
    if let Some(e) = &opts.effective {
        obj.fields.insert("effective".into(), e.clone());
    } else if tr.new_state == "published"
        && obj
            .fields
            .get("effective")
            .is_none_or(serde_json::Value::is_null)
    {
        obj.fields.insert(
            "effective".into(),
            json!(crate::core::clock::iso(&ctx.now())),
        );
    }
    if let Some(x) = &opts.expires {
        obj.fields.insert("expires".into(), x.clone());
    }
    tree::save(
        ctx,
        obj,
        tree::Change::Transition {
            transition: transition.to_string(),
            from,
            to: tr.new_state.clone(),
        },
    )?;
    let entry = HistoryEntry {
        action: Some(transition.to_string()),
        actor: ctx.principal.login().unwrap_or("").to_string(),
        comments: opts.comment.clone(),
        review_state: tr.new_state.clone(),
        time: ctx.now(),
        seq: 0,
    };
    append_history(ctx, &obj.uid, &entry)?;
    Ok(entry)
}

/// Writes the creation entry of the workflow history when a workflowed object is added, and drops
/// the history of a removed object (the history `w:<uid>:` is this module's record).
pub struct WorkflowSubscriber;

impl Subscriber for WorkflowSubscriber {
    fn name(&self) -> &'static str {
        "workflow"
    }

    fn on_event(&self, ctx: &mut Ctx<'_>, event: &Event) -> Result<()> {
        if let Event::Removed { uid, .. } = event {
            return remove_history(ctx, uid);
        }
        if let Event::Added { uid, .. } = event {
            let Some(obj) = tree::load(ctx, uid)? else {
                return Ok(());
            };
            if let Some(state) = obj.review_state.clone() {
                let entry = HistoryEntry {
                    action: None,
                    actor: obj.owner.clone(),
                    comments: String::new(),
                    review_state: state,
                    time: obj.created,
                    seq: 0,
                };
                append_history(ctx, uid, &entry)?;
            }
        }
        Ok(())
    }
}
