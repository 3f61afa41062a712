//! Where discussion is decided: whether an object takes comments, who may reply, edit and delete,
//! and how comments are stored (`m:<uid>:<seq>`, in creation order).
//!
//! Discussion is off by default. It is on for an object when it is enabled for the site (the
//! discussion control panel's `globally_enabled`, the configuration record
//! [`crate::site::configuration::DISCUSSION_ENABLED`]), for the object's type (`allow_discussion` in the type registry) and
//! for the object itself (its `allow_discussion` field). A Nick site has no discussion settings:
//! every object takes comments unless it says `allow_discussion: false`. Comment text is plain text only, so nothing
//! a client sends is ever stored or served as markup.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;
use crate::runtime::subscriber::Subscriber;

/// Longest comment text accepted (characters).
pub const MAX_TEXT_CHARS: usize = 20_000;

/// A stored comment.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Comment {
    /// Position in the object's comment list (key suffix).
    pub seq: u64,
    /// The comment's id (a UUID).
    pub comment_id: String,
    /// The comment it replies to.
    pub in_reply_to: Option<String>,
    /// Author's login.
    pub author_username: String,
    /// Author's full name.
    pub author_name: String,
    /// Created.
    pub creation_date: DateTime<Utc>,
    /// Last edited.
    pub modification_date: DateTime<Utc>,
    /// The text (plain).
    pub text: String,
}

fn flag(v: Option<&Value>) -> bool {
    v.and_then(Value::as_bool).unwrap_or(false)
}

/// Whether `obj` takes comments: on a Plone site when the site, the type and the object all
/// allow it; on a Nick site (which has no discussion settings: every object takes comments)
/// unless the object itself says `allow_discussion: false`.
pub fn enabled(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<bool> {
    if ctx.profile().is_nick() {
        return Ok(obj.fields.get("allow_discussion").and_then(Value::as_bool) != Some(false));
    }
    let ty = ctx.type_of(obj)?;
    if !ty.allow_discussion {
        return Ok(false);
    }
    Ok(
        crate::site::configuration::flag(ctx, crate::site::configuration::DISCUSSION_ENABLED)?
            && flag(obj.fields.get("allow_discussion")),
    )
}

/// Whether the caller may add comments to `obj` (logged in, may view it, discussion enabled).
pub fn can_reply(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<bool> {
    Ok(!ctx.principal.is_anonymous()
        && enabled(ctx, obj)?
        && ctx.permitted(Permission::View, obj)?)
}

/// What the caller may do to a comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommentAction {
    /// Change its text.
    Edit,
    /// Delete it with its replies.
    Delete,
}

/// Whether the caller may `action` `c`: a moderator (Review permission) always; its author when
/// the discussion settings let authors (`edit_comment_enabled`, `delete_own_comment_enabled`).
pub fn may(ctx: &Ctx<'_>, obj: &ContentRecord, c: &Comment, action: CommentAction) -> Result<bool> {
    if ctx.principal.login() == Some(c.author_username.as_str()) {
        let setting = match action {
            CommentAction::Edit => crate::site::configuration::COMMENT_EDIT_OWN,
            CommentAction::Delete => crate::site::configuration::COMMENT_DELETE_OWN,
        };
        if crate::site::configuration::flag(ctx, setting)? {
            return Ok(true);
        }
    }
    ctx.permitted(Permission::Review, obj)
}

/// Every comment of `uid`, oldest first.
pub fn list(ctx: &Ctx<'_>, uid: &str) -> Result<Vec<Comment>> {
    ctx.values_with_prefix(&keys::comments_prefix(uid))
}

/// The comment `comment_id` of `obj`, or a 404.
pub fn find(ctx: &Ctx<'_>, obj: &ContentRecord, comment_id: &str) -> Result<Comment> {
    list(ctx, &obj.uid)?
        .into_iter()
        .find(|c| c.comment_id == comment_id)
        .ok_or_else(|| EngineError::NotFound {
            url: ctx.url(&format!("{}/@comments/{comment_id}", obj.path)),
            context: Some(ctx.url(&obj.path)),
        })
}

/// Check comment text: a non-empty string of at most [`MAX_TEXT_CHARS`] characters, plain text
/// (`mime` must be `text/plain`). Returns the text.
pub fn validate_text(text: &str, mime: &str) -> Result<String> {
    if mime != "text/plain" {
        return Err(EngineError::bad_request(format!(
            "Comments are plain text; mime type '{mime}' is not accepted"
        )));
    }
    if text.trim().is_empty() {
        return Err(EngineError::bad_request(
            "A comment's text must not be empty",
        ));
    }
    if text.chars().count() > MAX_TEXT_CHARS {
        return Err(EngineError::bad_request(format!(
            "A comment's text must be at most {MAX_TEXT_CHARS} characters"
        )));
    }
    Ok(text.to_string())
}

/// Store a new comment on `obj`; returns it. Its position comes from the counter `n:<uid>:m`
/// ([`crate::content::counters`]): never one an earlier comment had, even a deleted one.
pub fn add(
    ctx: &mut Ctx<'_>,
    obj: &ContentRecord,
    in_reply_to: Option<String>,
    text: String,
) -> Result<Comment> {
    let seq = crate::content::counters::next(ctx, &keys::comment_counter(&obj.uid))?;
    let login = ctx.principal.login().unwrap_or("").to_string();
    let author_name = crate::people::auth::users::get(ctx, &login)?
        .map(|u| u.fullname)
        .unwrap_or_default();
    let now = ctx.now();
    let c = Comment {
        seq,
        comment_id: ctx.core.entropy.uuid().to_string(),
        in_reply_to,
        author_username: login,
        author_name,
        creation_date: now,
        modification_date: now,
        text,
    };
    ctx.put_json(&keys::comment(&obj.uid, seq), &c)?;
    ctx.emit(Event::CommentAdded {
        uid: obj.uid.clone(),
        path: obj.path.clone(),
        comment_id: c.comment_id.clone(),
    });
    Ok(c)
}

/// Write back an edited comment ([`Event::CommentModified`]).
pub fn save(ctx: &mut Ctx<'_>, obj: &ContentRecord, c: &Comment) -> Result<()> {
    ctx.put_json(&keys::comment(&obj.uid, c.seq), c)?;
    ctx.emit(Event::CommentModified {
        uid: obj.uid.clone(),
        path: obj.path.clone(),
        comment_id: c.comment_id.clone(),
    });
    Ok(())
}

/// Remove `comment_id` and every reply below it.
pub fn remove_thread(ctx: &mut Ctx<'_>, obj: &ContentRecord, comment_id: &str) -> Result<()> {
    let all = list(ctx, &obj.uid)?;
    let mut doomed = vec![comment_id.to_string()];
    let mut i = 0;
    while i < doomed.len() {
        let parent = doomed[i].clone();
        doomed.extend(
            all.iter()
                .filter(|c| c.in_reply_to.as_deref() == Some(parent.as_str()))
                .map(|c| c.comment_id.clone()),
        );
        i += 1;
    }
    for c in all.iter().filter(|c| doomed.contains(&c.comment_id)) {
        ctx.delete(&keys::comment(&obj.uid, c.seq))?;
    }
    ctx.emit(Event::CommentRemoved {
        uid: obj.uid.clone(),
        path: obj.path.clone(),
        comment_id: comment_id.to_string(),
    });
    Ok(())
}

/// Drops the comments of removed objects (the comments `m:<uid>:` are this module's record).
pub struct CommentsSubscriber;

impl Subscriber for CommentsSubscriber {
    fn name(&self) -> &'static str {
        "comments"
    }

    fn on_event(&self, ctx: &mut Ctx<'_>, event: &Event) -> Result<()> {
        if let Event::Removed { uid, .. } = event {
            ctx.delete_prefix(&keys::comments_prefix(uid))?;
        }
        Ok(())
    }
}
