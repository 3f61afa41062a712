//! Content CRUD: GET, POST (add a child), PATCH (edit, reorder children), DELETE (a whole subtree).

use serde_json::{json, Map, Value};

use super::batching::Batch;
use super::serialize::{self, ListingRequest};
use super::{json_body, Route};
use crate::context::Ctx;
use crate::error::{EngineError, Result};
use crate::http::{Request, Response};
use crate::model::{blocks, ids, ContentRecord, ContentType};
use crate::permissions::Access;
use crate::security::Permission;
use crate::tree;

/// Keys of the representation that clients echo back but that are computed, not stored; they are
/// accepted and ignored on POST and PATCH.
const READ_ONLY: &[&str] = &[
    "@id",
    "@components",
    "UID",
    "created",
    "modified",
    "review_state",
    "is_folderish",
    "items",
    "items_total",
    "batching",
    "parent",
    "lock",
    "type_title",
    "version",
    "versioning_enabled",
    "working_copy",
    "working_copy_of",
    "previous_item",
    "next_item",
    "owner",
];

fn listing<'q>(ctx: &Ctx<'_>, req: &'q Request, route: &'q Route) -> Result<ListingRequest<'q>> {
    Ok(ListingRequest {
        batch: Batch::for_route(ctx, route)?,
        query: &route.query,
        raw_query: &req.query,
        route: Some(route),
    })
}

/// GET `<path>`: the object.
pub fn get(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    obj: ContentRecord,
) -> Result<Response> {
    ctx.require(Permission::View, &obj)?;
    let body = serialize::full(ctx, &obj, &listing(ctx, req, route)?)?;
    Ok(Response::json(200, &body))
}

/// POST `<folder_path>`: add a child; 201 with `Location` and the new object.
pub fn post(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    mut parent: ContentRecord,
) -> Result<Response> {
    let mut body = json_body(req)?;
    let parent_type = ctx.type_of(&parent)?;
    if !parent_type.folderish {
        return Err(EngineError::bad_request(format!(
            "Cannot add content inside '{}': a {} is not folderish",
            ctx.url(&parent.path),
            parent_type.title
        )));
    }
    ctx.require(Permission::AddContent, &parent)?;

    let type_name = match body.remove("@type") {
        Some(Value::String(s)) => s,
        Some(_) => return Err(EngineError::bad_request("'@type' must be a string")),
        None => return Err(EngineError::bad_request("Property '@type' is required")),
    };
    let ty =
        ctx.core.types.get(&type_name).ok_or_else(|| {
            EngineError::bad_request(format!("Unknown content type '{type_name}'"))
        })?;
    if !parent_type.allows(ty) {
        return Err(EngineError::bad_request(format!(
            "Content type '{type_name}' may not be added inside a {}",
            parent_type.title
        )));
    }
    // A 400 on a site that is not multilingual; linked once the object exists.
    let translation_of = crate::multilingual::take_translation_of(ctx, &mut body)?;

    let requested_id = match body.remove("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => {
            ids::validate_id(&s)?;
            if tree::has_child(ctx, &parent, &s)? {
                return Err(EngineError::bad_request(format!(
                    "An object with id '{s}' already exists in '{}'",
                    ctx.url(&parent.path)
                )));
            }
            Some(s)
        }
        Some(_) => return Err(EngineError::bad_request("'id' must be a string")),
    };

    let login = ctx.principal.login().unwrap_or("").to_string();
    let mut rec = tree::new_record(ctx, ty, "", &login, Map::new());
    let written = apply_fields(ctx, ty, &mut rec, body, true)?;
    let change_note = written.change_note;
    if !rec.fields.contains_key("creators") {
        rec.fields.insert("creators".into(), json!([login]));
    }
    if !rec.fields.contains_key("language") && ty.field("language").is_some() {
        let lang = crate::multilingual::language_for_new_child(ctx, &parent)?;
        rec.fields.insert("language".into(), json!(lang));
    }
    rec.id = match requested_id {
        Some(id) => id,
        None => unique_id(
            ctx,
            &parent,
            &ids::normalize(if rec.title().is_empty() {
                &ty.name
            } else {
                rec.title()
            }),
        )?,
    };
    tree::add(ctx, &mut parent, &mut rec, change_note)?;
    if let Some(source) = &translation_of {
        crate::multilingual::link(ctx, source, &rec)?;
    }
    let body = serialize::full(ctx, &rec, &listing(ctx, req, route)?)?;
    Ok(Response::json(201, &body).with_header("Location", &ctx.url(&rec.path)))
}

/// `base`, or `base-1`, `base-2`, ... : the first id not taken in `parent`.
fn unique_id(ctx: &Ctx<'_>, parent: &ContentRecord, base: &str) -> Result<String> {
    if !tree::has_child(ctx, parent, base)? {
        return Ok(base.to_string());
    }
    for n in 1.. {
        let candidate = format!("{base}-{n}");
        if !tree::has_child(ctx, parent, &candidate)? {
            return Ok(candidate);
        }
    }
    unreachable!("ids are unbounded")
}

/// What [`apply_fields`] wrote.
struct Written {
    fields: Vec<String>,
    change_note: Option<String>,
}

/// Validate `body` against the type's schema and write the values into `rec`.
fn apply_fields(
    ctx: &Ctx<'_>,
    ty: &ContentType,
    rec: &mut ContentRecord,
    body: Map<String, Value>,
    creating: bool,
) -> Result<Written> {
    let mut written = Vec::new();
    let mut change_note = None;
    for (key, value) in body {
        if READ_ONLY.contains(&key.as_str()) {
            continue;
        }
        if key == "layout" {
            let layout = value
                .as_str()
                .filter(|s| !s.is_empty() && !s.contains(['/', ' ']))
                .ok_or_else(|| {
                    EngineError::bad_request("'layout' must be a view name (a non-empty string)")
                })?;
            rec.fields.insert(key.clone(), json!(layout));
            written.push(key);
            continue;
        }
        let def = ty.field(&key).ok_or_else(|| {
            EngineError::bad_request(format!(
                "Unknown field '{key}' for content type '{}'",
                ty.name
            ))
        })?;
        let value = if key == "relatedItems" {
            normalize_related(ctx, &value)?
        } else {
            value
        };
        let stored = def.validate(&value)?;
        if def.transient {
            if key == "changeNote" {
                change_note = stored
                    .as_str()
                    .map(str::to_string)
                    .filter(|s| !s.is_empty());
            }
            continue;
        }
        rec.fields.insert(key.clone(), stored);
        written.push(key);
    }
    if creating {
        for def in ty.fields.iter().filter(|d| d.required) {
            let present = rec
                .fields
                .get(&def.name)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.trim().is_empty());
            if !present {
                return Err(EngineError::bad_request(format!(
                    "Field '{}' is required",
                    def.name
                )));
            }
        }
    }
    if let (Some(b), Some(l)) = (rec.fields.get("blocks"), rec.fields.get("blocks_layout")) {
        blocks::check_consistency(b, l)?;
    }
    Ok(Written {
        fields: written,
        change_note,
    })
}

/// `relatedItems` as UIDs: accepts UID strings or objects carrying `UID`; every UID must exist.
fn normalize_related(ctx: &Ctx<'_>, value: &Value) -> Result<Value> {
    let arr = value
        .as_array()
        .ok_or_else(|| EngineError::bad_request("Field 'relatedItems' must be an array of UIDs"))?;
    let mut out = Vec::new();
    for item in arr {
        let uid = match item {
            Value::String(s) => s.clone(),
            Value::Object(o) => o
                .get("UID")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| EngineError::bad_request("Each related item needs a 'UID'"))?,
            _ => {
                return Err(EngineError::bad_request(
                    "Field 'relatedItems' must be an array of UIDs",
                ))
            }
        };
        if tree::load(ctx, &uid)?.is_none() {
            return Err(EngineError::bad_request(format!(
                "Related item '{uid}' does not exist"
            )));
        }
        out.push(Value::String(uid));
    }
    Ok(Value::Array(out))
}

/// PATCH `<path>`: edit fields, reorder (`ordering`) or re-sort (`sort`) the children.
/// 204, or 200 with the object for `Prefer: return=representation`.
pub fn patch(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    mut obj: ContentRecord,
) -> Result<Response> {
    let mut body = json_body(req)?;
    ctx.require(Permission::Modify, &obj)?;
    crate::locking::check_can_change(ctx, req.header_value("lock-token"), &obj)?;
    let ty = ctx.type_of(&obj)?;

    if let Some(t) = body.remove("@type") {
        if t.as_str() != Some(ty.name.as_str()) {
            return Err(EngineError::bad_request(
                "The content type of an object cannot be changed",
            ));
        }
    }
    let new_id = match body.remove("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) if id == obj.id => None,
        Some(Value::String(id)) => Some(id),
        Some(_) => return Err(EngineError::bad_request("'id' must be a string")),
    };
    if let Some(id) = &new_id {
        check_rename(ctx, &obj, id)?;
    }
    let ordering = body.remove("ordering");
    let sort = body.remove("sort");

    let written = apply_fields(ctx, ty, &mut obj, body, false)?;
    if !written.fields.is_empty() || written.change_note.is_some() {
        obj.modified = ctx.now();
        tree::save(
            ctx,
            &mut obj,
            tree::Change::Edit {
                fields: written.fields,
                change_note: written.change_note,
            },
        )?;
    }
    if let Some(id) = new_id {
        obj = rename(ctx, &obj, &id)?;
    }
    if let Some(o) = ordering {
        reorder(ctx, &mut obj, &o)?;
    }
    if let Some(s) = sort {
        resort(ctx, &mut obj, &s)?;
    }

    let wants_repr = req
        .header_value("prefer")
        .is_some_and(|p| p.split(',').any(|x| x.trim() == "return=representation"));
    if wants_repr {
        let body = serialize::full(ctx, &obj, &listing(ctx, req, route)?)?;
        return Ok(Response::json(200, &body));
    }
    Ok(Response::empty(204))
}

/// Refuse a rename that cannot happen: the root, an illegal or taken id, no right to add in the
/// parent.
fn check_rename(ctx: &Ctx<'_>, obj: &ContentRecord, id: &str) -> Result<()> {
    let parent = tree::parent(ctx, obj)?
        .ok_or_else(|| EngineError::bad_request("The site root cannot be renamed"))?;
    ids::validate_id(id)?;
    if tree::has_child(ctx, &parent, id)? {
        return Err(EngineError::bad_request(format!(
            "An object with id '{id}' already exists in '{}'",
            ctx.url(&parent.path)
        )));
    }
    ctx.require(Permission::AddContent, &parent)
}

/// Rename `obj` in place (keeping its position), leaving automatic aliases at the old paths of it
/// and its descendants. Returns the renamed record.
fn rename(ctx: &mut Ctx<'_>, obj: &ContentRecord, id: &str) -> Result<ContentRecord> {
    let parent_uid = obj.parent.clone().unwrap_or_default();
    let moves = tree::relocate(ctx, obj, &parent_uid, id)?;
    crate::aliases::record_moves(ctx, &moves)?;
    tree::load(ctx, &obj.uid)?
        .ok_or_else(|| EngineError::Internal("renamed object vanished".into()))
}

fn require_folderish(ctx: &Ctx<'_>, obj: &ContentRecord, what: &str) -> Result<()> {
    if ctx.type_of(obj)?.folderish {
        Ok(())
    } else {
        Err(EngineError::bad_request(format!(
            "'{what}' applies to the children of a folderish object; '{}' has none",
            ctx.url(&obj.path)
        )))
    }
}

/// `ordering: {obj_id, delta: "top" | "bottom" | integer, subset_ids?}`.
fn reorder(ctx: &mut Ctx<'_>, folder: &mut ContentRecord, spec: &Value) -> Result<()> {
    require_folderish(ctx, folder, "ordering")?;
    let spec = spec
        .as_object()
        .ok_or_else(|| EngineError::bad_request("'ordering' must be an object {obj_id, delta}"))?;
    let obj_id = spec
        .get("obj_id")
        .and_then(Value::as_str)
        .ok_or_else(|| EngineError::bad_request("'ordering.obj_id' must be a string"))?;
    let kids = tree::children(ctx, &folder.uid, 0, usize::MAX)?;
    let order: Vec<&str> = kids.iter().map(|k| k.id.as_str()).collect();
    if !order.contains(&obj_id) {
        return Err(EngineError::bad_request(format!(
            "'ordering.obj_id': '{obj_id}' is not an item of this folder"
        )));
    }
    let subset: Vec<String> = match spec.get("subset_ids") {
        None | Some(Value::Null) => order.iter().map(|s| s.to_string()).collect(),
        Some(Value::Array(a)) => {
            let ids: Option<Vec<String>> =
                a.iter().map(|v| v.as_str().map(str::to_string)).collect();
            let ids = ids.ok_or_else(|| {
                EngineError::bad_request("'ordering.subset_ids' must be an array of ids")
            })?;
            let server: Vec<&str> = order
                .iter()
                .copied()
                .filter(|id| ids.iter().any(|s| s == id))
                .collect();
            if server.len() != ids.len() || server.iter().zip(&ids).any(|(a, b)| a != b) {
                return Err(EngineError::bad_request(
                    "Client/server ordering mismatch: 'subset_ids' does not match the current order",
                ));
            }
            ids
        }
        Some(_) => {
            return Err(EngineError::bad_request(
                "'ordering.subset_ids' must be an array of ids",
            ))
        }
    };
    let from = subset
        .iter()
        .position(|s| s == obj_id)
        .ok_or_else(|| EngineError::bad_request("'ordering.obj_id' must be one of 'subset_ids'"))?;
    let last = subset.len() - 1;
    let to = match spec.get("delta") {
        Some(Value::String(s)) if s == "top" => 0,
        Some(Value::String(s)) if s == "bottom" => last,
        Some(Value::Number(n)) if n.is_i64() => {
            let d = n.as_i64().unwrap_or(0);
            (from as i64 + d).clamp(0, last as i64) as usize
        }
        Some(Value::String(s)) if s.parse::<i64>().is_ok() => {
            let d: i64 = s.parse().unwrap_or(0);
            (from as i64 + d).clamp(0, last as i64) as usize
        }
        _ => {
            return Err(EngineError::bad_request(
                "'ordering.delta' must be \"top\", \"bottom\" or an integer",
            ))
        }
    };
    let mut new_subset = subset.clone();
    let moved = new_subset.remove(from);
    new_subset.insert(to, moved);
    // The subset keeps the slots it occupied; only its internal order changes.
    let mut it = new_subset.into_iter();
    let new_ids: Vec<String> = order
        .iter()
        .map(|id| {
            if subset.iter().any(|s| s == id) {
                it.next().unwrap_or_else(|| id.to_string())
            } else {
                id.to_string()
            }
        })
        .collect();
    let uids: Vec<String> = new_ids
        .iter()
        .filter_map(|id| kids.iter().find(|k| &k.id == id).map(|k| k.uid.clone()))
        .collect();
    tree::set_order(ctx, folder, &uids)
}

/// `sort: {on: <catalog field>, order: "ascending" | "descending"}`.
fn resort(ctx: &mut Ctx<'_>, folder: &mut ContentRecord, spec: &Value) -> Result<()> {
    require_folderish(ctx, folder, "sort")?;
    let on = spec.get("on").and_then(Value::as_str).ok_or_else(|| {
        EngineError::bad_request("'sort.on' must name a field, e.g. \"modified\"")
    })?;
    let descending = match spec.get("order").and_then(Value::as_str) {
        None | Some("ascending") => false,
        Some("descending") | Some("reverse") => true,
        Some(o) => {
            return Err(EngineError::bad_request(format!(
                "'sort.order' must be \"ascending\" or \"descending\", got '{o}'"
            )))
        }
    };
    let kids = tree::children(ctx, &folder.uid, 0, usize::MAX)?;
    let mut keyed = Vec::with_capacity(kids.len());
    for k in &kids {
        let v = match on {
            "sortable_title" => Some(json!(k.title().to_lowercase())),
            "getObjPositionInParent" => Some(json!(k.pos)),
            _ => serialize::catalog_value(ctx, k, on)?,
        }
        .ok_or_else(|| EngineError::bad_request(format!("'sort.on': cannot sort on '{on}'")))?;
        keyed.push((sort_key(&v), k.uid.clone()));
    }
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    if descending {
        keyed.reverse();
    }
    let uids: Vec<String> = keyed.into_iter().map(|(_, u)| u).collect();
    tree::set_order(ctx, folder, &uids)
}

fn sort_key(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_lowercase(),
        Value::Number(n) => format!("{:020}", n.as_f64().unwrap_or(0.0) as i64),
        other => other.to_string(),
    }
}

/// DELETE `<path>`: remove the object and everything below it; 204.
pub fn delete(
    ctx: &mut Ctx<'_>,
    req: &Request,
    _route: &Route,
    obj: ContentRecord,
) -> Result<Response> {
    if obj.is_root() {
        return Err(EngineError::bad_request("The site root cannot be deleted"));
    }
    ctx.require(Permission::Delete, &obj)?;
    // A locked object, or a folder holding one, is deleted only with the lock's token.
    let members = tree::subtree(ctx, &obj)?;
    for member in &members {
        crate::locking::check_can_change(ctx, req.header_value("lock-token"), member)?;
    }
    tree::remove_members(ctx, &obj, &members)?;
    Ok(Response::empty(204))
}
