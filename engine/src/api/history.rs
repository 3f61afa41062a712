//! `@history`: an object's versions and workflow changes, reading an old version, reverting.

use serde_json::{json, Value};

use super::serialize::{self, ListingRequest};
use super::{batching::Batch, json_body, Route};
use crate::auth::users;
use crate::clock::iso;
use crate::context::Ctx;
use crate::error::{EngineError, Result};
use crate::http::{Request, Response};
use crate::locking;
use crate::model::ContentRecord;
use crate::permissions::Access;
use crate::security::Permission;
use crate::{tree, versioning, workflow};

fn actor(ctx: &Ctx<'_>, login: &str) -> Result<Value> {
    let fullname = users::get(ctx, login)?
        .map(|u| u.fullname)
        .filter(|f| !f.is_empty())
        .unwrap_or_else(|| login.to_string());
    Ok(json!({
        "@id": ctx.url(&format!("/@users/{login}")),
        "fullname": fullname,
        "id": login,
        "username": login,
    }))
}

fn parse_version(s: &str) -> Result<u32> {
    s.parse::<u32>().map_err(|_| {
        EngineError::bad_request(format!("A version is a non-negative integer, got '{s}'"))
    })
}

fn unknown_version(ctx: &Ctx<'_>, obj: &ContentRecord, v: impl std::fmt::Display) -> EngineError {
    EngineError::NotFound {
        url: ctx.url(&format!("{}/@history/{v}", obj.path)),
        context: Some(ctx.url(&obj.path)),
    }
}

/// GET `<path>/@history` (newest first) or `<path>/@history/<version>` (the object at that version).
pub fn get(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    obj: ContentRecord,
) -> Result<Response> {
    ctx.require(Permission::View, &obj)?;
    match route.params.as_slice() {
        [] => list(ctx, &obj),
        [v] => {
            let version = parse_version(v)?;
            let fields = versioning::fields_at(ctx, &obj.uid, version)?
                .ok_or_else(|| unknown_version(ctx, &obj, version))?;
            let mut old = obj.clone();
            old.fields = fields;
            let listing = ListingRequest {
                batch: Batch::for_route(ctx, route)?,
                query: &route.query,
                raw_query: &req.query,
                route: None,
            };
            let mut body = serialize::full(ctx, &old, &listing)?;
            body["version"] = json!(version);
            Ok(Response::json(200, &body))
        }
        _ => Err(EngineError::bad_request(
            "Expected <path>/@history/<version>",
        )),
    }
}

fn list(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Response> {
    let url = ctx.url(&obj.path);
    let may_revert = ctx.permitted(Permission::Modify, obj)?;
    // (history sequence, entry): newest first.
    let mut entries: Vec<(u64, Value)> = Vec::new();
    for v in versioning::list(ctx, &obj.uid)? {
        entries.push((
            v.seq,
            json!({
                "@id": format!("{url}/@history/{}", v.version),
                "action": "Edited",
                "actor": actor(ctx, &v.actor)?,
                "comments": v.comment,
                "may_revert": may_revert,
                "time": iso(&v.time),
                "transition_title": "Edited",
                "type": "versioning",
                "version": v.version,
            }),
        ));
    }
    let wf = workflow::workflow_of(ctx, obj)?;
    for e in workflow::history(ctx, &obj.uid)? {
        let (action, title) = match &e.action {
            None => ("Create".to_string(), "Create".to_string()),
            Some(a) => (
                a.clone(),
                wf.and_then(|w| w.transitions.get(a))
                    .map_or_else(|| a.clone(), |t| t.title.clone()),
            ),
        };
        entries.push((
            e.seq,
            json!({
                "action": action,
                "actor": actor(ctx, &e.actor)?,
                "comments": e.comments,
                "review_state": e.review_state,
                "state_title": workflow::state_title(ctx, obj, &e.review_state)?,
                "time": iso(&e.time),
                "transition_title": title,
                "type": "workflow",
            }),
        ));
    }
    entries.sort_by_key(|e| std::cmp::Reverse(e.0));
    let out: Vec<Value> = entries.into_iter().map(|(_, v)| v).collect();
    Ok(Response::json(200, &out))
}

/// PATCH `<path>/@history {"version": N}`: revert to version N (recorded as a new version).
pub fn patch(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    mut obj: ContentRecord,
) -> Result<Response> {
    if !route.params.is_empty() {
        return Err(EngineError::bad_request(
            "Revert with PATCH <path>/@history {\"version\": N}",
        ));
    }
    let body = json_body(req)?;
    ctx.require(Permission::Modify, &obj)?;
    let version = match body.get("version") {
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| EngineError::bad_request("'version' must be a non-negative integer"))?,
        Some(Value::String(s)) => parse_version(s)?,
        _ => {
            return Err(EngineError::bad_request(
                "Property 'version' (integer) is required",
            ))
        }
    };
    let fields = versioning::fields_at(ctx, &obj.uid, version)?
        .ok_or_else(|| unknown_version(ctx, &obj, version))?;
    locking::check_can_change(ctx, req.header_value("lock-token"), &obj)?;
    let ty = ctx.type_of(&obj)?;
    let mut changed = Vec::new();
    for def in &ty.fields {
        if def.transient {
            continue;
        }
        let target = fields
            .get(&def.name)
            .cloned()
            .unwrap_or_else(|| def.default_value());
        let current = obj
            .fields
            .get(&def.name)
            .cloned()
            .unwrap_or_else(|| def.default_value());
        if target != current
            || (fields.contains_key(&def.name) != obj.fields.contains_key(&def.name))
        {
            obj.fields.insert(def.name.clone(), target);
            changed.push(def.name.clone());
        }
    }
    if changed.is_empty() {
        // Nothing differs; still record the revert as a version of the full state.
        changed = obj.fields.keys().cloned().collect();
    }
    obj.modified = ctx.now();
    tree::save(
        ctx,
        &mut obj,
        tree::Change::Edit {
            fields: changed,
            change_note: Some(format!("Reverted to revision {version}")),
        },
    )?;
    Ok(Response::json(
        200,
        &json!({"message": format!("{} has been reverted to revision {version}.", obj.title())}),
    ))
}
