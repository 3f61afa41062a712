//! `@comments`: the discussion of an object (rules in [`crate::content::comments`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::batching::{Batch, BatchQuery};
use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use crate::content::comments::{self, Comment, CommentAction};
use crate::core::clock::iso;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// Register the comment routes.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@comments", get)
            .requires(Permission::View)
            .summary("The comments, oldest first, batched")
            .query::<BatchQuery>()
            .answers::<CommentList>(),
    );
    r.route(
        RouteDef::post("@comments/{comment_id?}", post)
            .requires(Permission::View)
            .status(204)
            .summary(
                "Add a comment (logged in, discussion enabled on the site, the type and the \
                 object), or a reply to `comment_id`; `Location` names it",
            )
            .body::<CommentText>(),
    );
    r.route(
        RouteDef::patch("@comments/{comment_id}", patch)
            .requires(Permission::View)
            .status(204)
            .summary("Edit a comment (its author, or a moderator: Review permission)")
            .body::<CommentText>(),
    );
    r.route(
        RouteDef::delete("@comments/{comment_id}", delete)
            .requires(Permission::View)
            .status(204)
            .summary("Delete a comment and its replies (its author, or a moderator)"),
    );
}

/// The text of a comment: a string, or `{data, mime-type}` (plain text only).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommentText {
    /// The text.
    pub text: Option<TextValue>,
    /// Its media type; only `text/plain`.
    #[serde(default)]
    pub mime_type: Option<String>,
}

/// A comment text as clients send it.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TextValue {
    /// Plain text.
    Plain(String),
    /// `{data, mime-type}`.
    Rich {
        /// The text.
        data: String,
        /// Its media type.
        #[serde(rename = "mime-type", default)]
        mime_type: Option<String>,
    },
}

/// A comment.
#[derive(Serialize, JsonSchema)]
pub struct CommentJson {
    /// `<object URL>/@comments/<comment_id>`.
    #[serde(rename = "@id")]
    pub id: String,
    /// The comment it replies to.
    #[serde(rename = "@parent")]
    pub parent: Option<String>,
    /// Always `Discussion Item`.
    #[serde(rename = "@type")]
    pub kind: &'static str,
    /// The author's portrait URL (`/@portrait/<login>`), or null when the author has none.
    pub author_image: Option<String>,
    /// The author's full name (the login when none).
    pub author_name: String,
    /// The author's login.
    pub author_username: String,
    /// Whether the caller may reply.
    pub can_reply: bool,
    /// The comment's id.
    pub comment_id: String,
    /// Created.
    pub creation_date: String,
    /// The id of the comment it replies to.
    pub in_reply_to: Option<String>,
    /// Whether the caller may delete it.
    pub is_deletable: bool,
    /// Whether the caller may edit it.
    pub is_editable: bool,
    /// Last edited.
    pub modification_date: String,
    /// The text.
    pub text: TextJson,
    /// Always null.
    pub user_notification: Option<bool>,
}

/// The text of a comment as served.
#[derive(Serialize, JsonSchema)]
pub struct TextJson {
    /// The text.
    pub data: String,
    /// `text/plain`.
    #[serde(rename = "mime-type")]
    pub mime_type: &'static str,
}

/// The comments of an object.
#[derive(Serialize, JsonSchema)]
pub struct CommentList {
    /// `<object URL>/@comments`.
    #[serde(rename = "@id")]
    pub id: String,
    /// This batch of comments.
    pub items: Vec<CommentJson>,
    /// How many there are in all.
    pub items_total: usize,
    /// What the caller may do.
    pub permissions: CommentPermissions,
    /// Links to the other batches, when there are several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batching: Option<super::batching::BatchLinks>,
}

/// What the caller may do with the comments.
#[derive(Serialize, JsonSchema)]
pub struct CommentPermissions {
    /// Add comments.
    pub can_reply: bool,
    /// Read them.
    pub view_comments: bool,
}

impl CommentText {
    /// The text, checked ([`comments::validate_text`]).
    fn checked(self) -> Result<String> {
        let (text, mime) = match self.text {
            None => return Err(EngineError::bad_request("Property 'text' is required")),
            Some(TextValue::Plain(t)) => (t, self.mime_type),
            Some(TextValue::Rich { data, mime_type }) => (data, mime_type.or(self.mime_type)),
        };
        comments::validate_text(&text, mime.as_deref().unwrap_or("text/plain"))
    }
}

fn comment_url(ctx: &Ctx<'_>, obj: &ContentRecord, id: &str) -> String {
    format!("{}/@comments/{id}", ctx.url(&obj.path))
}

/// The portrait URL of the comment's author (`/@portrait/<login>`), when the author is a user
/// of the site with a portrait.
fn author_image(ctx: &Ctx<'_>, login: &str) -> Result<Option<String>> {
    if login.is_empty() {
        return Ok(None);
    }
    Ok(crate::people::auth::users::get(ctx, login)?
        .and_then(|u| u.portrait)
        .map(|_| ctx.url(&format!("/@portrait/{login}"))))
}

fn comment_json(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    c: &Comment,
    can_reply: bool,
) -> Result<CommentJson> {
    let editable = comments::may(ctx, obj, c, CommentAction::Edit)?;
    let deletable = comments::may(ctx, obj, c, CommentAction::Delete)?;
    Ok(CommentJson {
        id: comment_url(ctx, obj, &c.comment_id),
        parent: c.in_reply_to.as_ref().map(|p| comment_url(ctx, obj, p)),
        kind: "Discussion Item",
        author_image: author_image(ctx, &c.author_username)?,
        author_name: if c.author_name.is_empty() {
            c.author_username.clone()
        } else {
            c.author_name.clone()
        },
        author_username: c.author_username.clone(),
        can_reply,
        comment_id: c.comment_id.clone(),
        creation_date: iso(&c.creation_date),
        in_reply_to: c.in_reply_to.clone(),
        is_deletable: deletable,
        is_editable: editable,
        modification_date: iso(&c.modification_date),
        text: TextJson {
            data: c.text.clone(),
            mime_type: "text/plain",
        },
        user_notification: None,
    })
}

/// GET `<path>/@comments`: the comments, oldest first, batched.
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let can_reply = comments::can_reply(ctx, &obj)?;
    let batch = Batch::for_route(ctx, call.route)?;
    let all = comments::list(ctx, &obj.uid)?;
    let items = all
        .iter()
        .skip(batch.start)
        .take(batch.size)
        .map(|c| comment_json(ctx, &obj, c, can_reply))
        .collect::<Result<Vec<_>>>()?;
    let url = format!("{}/@comments", ctx.url(&obj.path));
    let batching = batch.links(&url, &call.req.query, &call.route.query, all.len());
    let body = CommentList {
        id: url,
        items,
        items_total: all.len(),
        permissions: CommentPermissions {
            can_reply,
            view_comments: true,
        },
        batching,
    };
    Ok(Response::json(200, &body))
}

fn require_reply(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<()> {
    if !comments::enabled(ctx, obj)? {
        let why = if ctx.profile().is_nick() {
            "the object says allow_discussion: false"
        } else {
            "it needs comments enabled for the site in the discussion control panel, and allow_discussion on the type and the object"
        };
        return Err(EngineError::Forbidden(format!(
            "Discussion is not enabled for '{}' ({why})",
            ctx.url(&obj.path)
        )));
    }
    if ctx.principal.is_anonymous() {
        return Err(EngineError::Unauthorized("Log in to comment.".into()));
    }
    Ok(())
}

/// POST `<path>/@comments` (a new thread) or `<path>/@comments/<id>` (a reply); 204 with
/// `Location` of the new comment.
fn post(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let parent = call.param("comment_id").map(str::to_string);
    let body: CommentText = call.body()?;
    require_reply(ctx, &obj)?;
    if let Some(p) = &parent {
        comments::find(ctx, &obj, p)?;
    }
    let text = body.checked()?;
    let c = comments::add(ctx, &obj, parent, text)?;
    let url = comment_url(ctx, &obj, &c.comment_id);
    Ok(Response::empty(204).with_header("Location", &url))
}

/// PATCH `<path>/@comments/<id> {text}`: edit (author or moderator); 204.
fn patch(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let id = call.param("comment_id").unwrap_or_default().to_string();
    let body: CommentText = call.body()?;
    let mut c = comments::find(ctx, &obj, &id)?;
    if !comments::may(ctx, &obj, &c, CommentAction::Edit)? {
        return Err(ctx.denied(Permission::Review));
    }
    c.text = body.checked()?;
    c.modification_date = ctx.now();
    comments::save(ctx, &obj, &c)?;
    let url = comment_url(ctx, &obj, &id);
    Ok(Response::empty(204).with_header("Location", &url))
}

/// DELETE `<path>/@comments/<id>`: delete it and its replies (author or moderator); 204.
fn delete(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let id = call.param("comment_id").unwrap_or_default().to_string();
    let c = comments::find(ctx, &obj, &id)?;
    if !comments::may(ctx, &obj, &c, CommentAction::Delete)? {
        return Err(ctx.denied(Permission::Review));
    }
    comments::remove_thread(ctx, &obj, &id)?;
    Ok(Response::empty(204))
}
