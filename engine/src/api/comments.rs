//! `@comments`: the discussion of an object (rules in [`crate::comments`]).

use serde_json::{json, Value};

use super::batching::Batch;
use super::{json_body, Route};
use crate::clock::iso;
use crate::comments::{self, Comment};
use crate::context::Ctx;
use crate::error::{EngineError, Result};
use crate::http::{Request, Response};
use crate::model::ContentRecord;
use crate::permissions::Access;
use crate::security::Permission;

fn comment_url(ctx: &Ctx<'_>, obj: &ContentRecord, id: &str) -> String {
    format!("{}/@comments/{id}", ctx.url(&obj.path))
}

fn comment_json(ctx: &Ctx<'_>, obj: &ContentRecord, c: &Comment, can_reply: bool) -> Result<Value> {
    let manage = comments::can_manage(ctx, obj, c)?;
    Ok(json!({
        "@id": comment_url(ctx, obj, &c.comment_id),
        "@parent": c.in_reply_to.as_ref().map(|p| comment_url(ctx, obj, p)),
        "@type": "Discussion Item",
        "author_image": null,
        "author_name": if c.author_name.is_empty() { &c.author_username } else { &c.author_name },
        "author_username": c.author_username,
        "can_reply": can_reply,
        "comment_id": c.comment_id,
        "creation_date": iso(&c.creation_date),
        "in_reply_to": c.in_reply_to,
        "is_deletable": manage,
        "is_editable": manage,
        "modification_date": iso(&c.modification_date),
        "text": {"data": c.text, "mime-type": "text/plain"},
        "user_notification": null,
    }))
}

fn one_param(route: &Route) -> Result<Option<&str>> {
    match route.params.as_slice() {
        [] => Ok(None),
        [id] => Ok(Some(id.as_str())),
        _ => Err(EngineError::bad_request(
            "Expected <path>/@comments[/<comment_id>]",
        )),
    }
}

/// GET `<path>/@comments`: the comments, oldest first, batched.
pub fn get(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    obj: ContentRecord,
) -> Result<Response> {
    ctx.require(Permission::View, &obj)?;
    if one_param(route)?.is_some() {
        return Err(EngineError::MethodNotAllowed {
            method: "GET".into(),
            allowed: vec!["POST", "PATCH", "DELETE"],
        });
    }
    let can_reply = comments::can_reply(ctx, &obj)?;
    let batch = Batch::for_route(ctx, route)?;
    let all = comments::list(ctx, &obj.uid)?;
    let items: Result<Vec<Value>> = all
        .iter()
        .skip(batch.start)
        .take(batch.size)
        .map(|c| comment_json(ctx, &obj, c, can_reply))
        .collect();
    let url = format!("{}/@comments", ctx.url(&obj.path));
    let mut body = json!({
        "@id": url,
        "items": items?,
        "items_total": all.len(),
        "permissions": {"can_reply": can_reply, "view_comments": true},
    });
    if let Some(b) = batch.links(&url, &req.query, &route.query, all.len()) {
        body["batching"] = b;
    }
    Ok(Response::json(200, &body))
}

fn require_reply(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<()> {
    ctx.require(Permission::View, obj)?;
    if !comments::enabled(ctx, obj)? {
        return Err(EngineError::Forbidden(format!(
            "Discussion is not enabled for '{}' (it needs allow_discussion on the site, the type and the object)",
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
pub fn post(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    obj: ContentRecord,
) -> Result<Response> {
    let parent = one_param(route)?.map(str::to_string);
    let body = json_body(req)?;
    require_reply(ctx, &obj)?;
    if let Some(p) = &parent {
        comments::find(ctx, &obj, p)?;
    }
    let text = comments::validate_text(&body)?;
    let c = comments::add(ctx, &obj, parent, text)?;
    let url = comment_url(ctx, &obj, &c.comment_id);
    Ok(Response::empty(204).with_header("Location", &url))
}

/// PATCH `<path>/@comments/<id> {text}`: edit (author or moderator); 204.
pub fn patch(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    obj: ContentRecord,
) -> Result<Response> {
    let id = one_param(route)?
        .ok_or_else(|| EngineError::bad_request("PATCH needs <path>/@comments/<comment_id>"))?
        .to_string();
    let body = json_body(req)?;
    ctx.require(Permission::View, &obj)?;
    let mut c = comments::find(ctx, &obj, &id)?;
    if !comments::can_manage(ctx, &obj, &c)? {
        return Err(ctx.denied(Permission::Review));
    }
    c.text = comments::validate_text(&body)?;
    c.modification_date = ctx.now();
    comments::save(ctx, &obj, &c)?;
    let url = comment_url(ctx, &obj, &id);
    Ok(Response::empty(204).with_header("Location", &url))
}

/// DELETE `<path>/@comments/<id>`: delete it and its replies (author or moderator); 204.
pub fn delete(
    ctx: &mut Ctx<'_>,
    _: &Request,
    route: &Route,
    obj: ContentRecord,
) -> Result<Response> {
    let id = one_param(route)?
        .ok_or_else(|| EngineError::bad_request("DELETE needs <path>/@comments/<comment_id>"))?
        .to_string();
    ctx.require(Permission::View, &obj)?;
    let c = comments::find(ctx, &obj, &id)?;
    if !comments::can_manage(ctx, &obj, &c)? {
        return Err(ctx.denied(Permission::Review));
    }
    comments::remove_thread(ctx, &obj, &id)?;
    Ok(Response::empty(204))
}
