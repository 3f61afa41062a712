//! `@workflow`: the workflow status of an object and taking transitions.

use serde_json::{json, Map, Value};

use super::{json_body, opt_bool, Route};
use crate::clock::iso;
use crate::context::Ctx;
use crate::error::{EngineError, Result};
use crate::http::{Request, Response};
use crate::model::fields::{FieldDef, FieldKind};
use crate::model::ContentRecord;
use crate::permissions::Access;
use crate::security::Permission;
use crate::tree;
use crate::workflow::{self, HistoryEntry, TransitionOptions};

fn entry_json(ctx: &Ctx<'_>, obj: &ContentRecord, e: &HistoryEntry) -> Result<Value> {
    Ok(json!({
        "action": e.action,
        "actor": e.actor,
        "comments": e.comments,
        "review_state": e.review_state,
        "time": iso(&e.time),
        "title": workflow::state_title(ctx, obj, &e.review_state)?,
    }))
}

/// GET `<path>/@workflow`: history, current state and the transitions the caller may take.
pub fn get(ctx: &mut Ctx<'_>, _: &Request, route: &Route, obj: ContentRecord) -> Result<Response> {
    ctx.require(Permission::View, &obj)?;
    if !route.params.is_empty() {
        return Err(EngineError::MethodNotAllowed {
            method: "GET".into(),
            allowed: vec!["POST"],
        });
    }
    Ok(Response::json(200, &status(ctx, route, &obj)?))
}

/// The workflow status of `obj` (the `@workflow` component).
pub fn status(ctx: &Ctx<'_>, _: &Route, obj: &ContentRecord) -> Result<Value> {
    let obj = obj.clone();
    let url = ctx.url(&obj.path);
    let history: Result<Vec<Value>> = workflow::history(ctx, &obj.uid)?
        .iter()
        .map(|e| entry_json(ctx, &obj, e))
        .collect();
    let state = match &obj.review_state {
        Some(s) => json!({"id": s, "title": workflow::state_title(ctx, &obj, s)?}),
        None => Value::Null,
    };
    let transitions: Vec<Value> = workflow::available(ctx, &obj)?
        .into_iter()
        .map(|(id, t)| json!({"@id": format!("{url}/@workflow/{id}"), "title": t.title}))
        .collect();
    Ok(json!({
        "@id": format!("{url}/@workflow"),
        "history": history?,
        "state": state,
        "transitions": transitions,
    }))
}

fn options(body: &Map<String, Value>) -> Result<(TransitionOptions, bool)> {
    let comment = match body.get("comment") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(EngineError::bad_request("'comment' must be a string")),
    };
    let date = |name: &str| -> Result<Option<Value>> {
        match body.get(name) {
            None => Ok(None),
            Some(v) => {
                let def = FieldDef {
                    name: name.to_string(),
                    kind: FieldKind::Datetime,
                    required: false,
                    default: None,
                    transient: false,
                };
                def.validate(v).map(Some)
            }
        }
    };
    let include_children = opt_bool(body, "include_children", false)?;
    if let Some(k) = body
        .keys()
        .find(|k| !["comment", "effective", "expires", "include_children"].contains(&k.as_str()))
    {
        return Err(EngineError::bad_request(format!(
            "Unknown property '{k}'; a transition takes comment, effective, expires, include_children"
        )));
    }
    Ok((
        TransitionOptions {
            comment,
            effective: date("effective")?,
            expires: date("expires")?,
        },
        include_children,
    ))
}

/// POST `<path>/@workflow/<transition>`: take the transition (optionally on every descendant too).
pub fn post(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    mut obj: ContentRecord,
) -> Result<Response> {
    let transition = match route.params.as_slice() {
        [t] => t.clone(),
        [] => {
            return Err(EngineError::bad_request(
                "Name the transition: POST <path>/@workflow/<transition>",
            ))
        }
        _ => {
            return Err(EngineError::bad_request(
                "Expected <path>/@workflow/<transition>",
            ))
        }
    };
    ctx.require(Permission::View, &obj)?;
    let body = json_body(req)?;
    let (opts, include_children) = options(&body)?;
    let entry = workflow::take(
        ctx,
        req.header_value("lock-token"),
        &mut obj,
        &transition,
        &opts,
    )?;
    if include_children {
        for mut member in tree::subtree(ctx, &obj)?.into_iter().skip(1) {
            let offered = workflow::available(ctx, &member)?
                .iter()
                .any(|(id, _)| *id == transition);
            let unlocked = crate::locking::current(ctx, &member)?.is_none();
            if offered && unlocked {
                workflow::take(
                    ctx,
                    req.header_value("lock-token"),
                    &mut member,
                    &transition,
                    &opts,
                )?;
            }
        }
    }
    let out = entry_json(ctx, &obj, &entry)?;
    Ok(Response::json(200, &out))
}
