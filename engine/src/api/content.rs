//! Content CRUD: GET, POST (add a child), PATCH (edit, reorder children), DELETE (a whole subtree).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::batching::Batch;
use super::extract::{self, Call};
use super::router::{Registry, RouteDef};
use super::serialize::{self, ListingRequest};
use super::{etag, Route};
use crate::content::links;
use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::http::{Request, Response};
use crate::core::model::fields::FieldKind;
use crate::core::model::{blocks, ids, ContentRecord, ContentType};
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// Register the content routes.
pub fn register(r: &mut Registry) {
    r.route(
        RouteDef::get("", get)
            .requires(Permission::View)
            .summary("The object, with its children batched (`b_start`, `b_size`) if folderish")
            .query::<ContentQuery>()
            .answers::<ContentObject>(),
    );
    r.route(
        RouteDef::post("", post)
            .checked_by_handler()
            .status(201)
            .summary("Add a child: `@type`, optional `id`, the type's fields; 201 with `Location`")
            .body::<ContentObject>()
            .answers::<ContentObject>(),
    );
    r.route(
        RouteDef::patch("", patch)
            .requires(Permission::Modify)
            .conditional()
            .status(204)
            .summary(
                "Edit fields, rename (`id`), reorder (`ordering`) or re-sort (`sort`) the \
                 children; 204, or 200 with the object for `Prefer: return=representation`",
            )
            .body::<ContentPatch>(),
    );
    r.route(
        RouteDef::delete("", delete)
            .requires(Permission::Delete)
            .conditional()
            .status(204)
            .summary(
                "Delete the object and everything below it (into the recycle bin when the site's \
                 `plone.recyclebin.enabled` is on, the default)",
            ),
    );
}

/// A content object: `@id`, `@type`, `UID`, the fields of its type and the computed properties
/// (`review_state`, `lock`, `items`, ...). Open: each type defines its own fields.
#[derive(JsonSchema)]
#[schemars(transparent)]
pub struct ContentObject(pub serde_json::Map<String, Value>);

/// The query of a content GET.
#[derive(Deserialize, JsonSchema)]
pub struct ContentQuery {
    /// Offset of the first child listed.
    pub b_start: Option<usize>,
    /// Most children listed.
    pub b_size: Option<usize>,
    /// Catalog metadata added to each listed child (`_all` for every one).
    pub metadata_fields: Option<Vec<String>>,
    /// Components to embed in `@components` (comma-separated, repeatable).
    pub expand: Option<Vec<String>>,
}

/// A PATCH body: the fields to change, plus these optional operations.
#[derive(JsonSchema)]
pub struct ContentPatch {
    /// A new id: renames the object in place (automatic aliases keep the old URLs working).
    pub id: Option<String>,
    /// Move one child within the folder's order.
    pub ordering: Option<OrderingRequest>,
    /// Re-sort every child of the folder.
    pub sort: Option<SortRequest>,
    /// Field values (open: the type's fields).
    #[schemars(flatten)]
    pub fields: serde_json::Map<String, Value>,
}

/// `ordering`: move `obj_id` by `delta` (`"top"`, `"bottom"` or a signed number of places),
/// within `subset_ids` when given (which must match the current relative order).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderingRequest {
    /// The id of the child to move.
    pub obj_id: String,
    /// Where to: `"top"`, `"bottom"` or a signed integer (also as a string).
    pub delta: Delta,
    /// The ids the client sees, in its order.
    #[serde(default)]
    pub subset_ids: Option<Vec<String>>,
}

/// How far a child moves.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Delta {
    /// A signed number of places.
    Places(i64),
    /// `"top"`, `"bottom"`, or a number written as a string.
    Word(String),
}

/// `sort`: re-sort the children on a catalog field.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SortRequest {
    /// The field (`sortable_title`, `modified`, `getObjPositionInParent`, any catalog metadata).
    pub on: String,
    /// `ascending` (default) or `descending` (`reverse`).
    #[serde(default)]
    pub order: Option<String>,
}

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
    // Volto's add and edit forms send their whole form state: the id of the block that had the
    // focus. Plone ignores it; so do we.
    "selected",
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
pub fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let resp = serialize::full_response(ctx, &obj, &listing(ctx, call.req, call.route)?, 200)?;
    Ok(etag::tagged(resp, &obj))
}

/// POST `<folder_path>`: add a child; 201 with `Location` and the new object.
pub fn post(ctx: &mut Ctx<'_>, call: &Call<'_>, mut parent: ContentRecord) -> Result<Response> {
    let mut body = extract::json_object(call.req)?;
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
    let ty = ctx
        .types()?
        .get(&type_name)
        .ok_or_else(|| EngineError::bad_request(format!("Unknown content type '{type_name}'")))?;
    if !parent_type.allows(&ty) {
        return Err(EngineError::bad_request(format!(
            "Content type '{type_name}' may not be added inside a {}",
            parent_type.title
        )));
    }
    // A 400 on a site that is not multilingual; linked once the object exists.
    let translation_of = crate::content::multilingual::take_translation_of(ctx, &mut body)?;

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
    let mut rec = tree::new_record(ctx, &ty, "", &login, Map::new());
    let written = apply_fields(ctx, &ty, &mut rec, body, true)?;
    let change_note = written.change_note;
    if !rec.fields.contains_key("creators") {
        rec.fields.insert("creators".into(), json!([login]));
    }
    if !rec.fields.contains_key("language") && ty.field("language").is_some() {
        let lang = crate::content::multilingual::language_for_new_child(ctx, &parent)?;
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
        crate::content::multilingual::link(ctx, source, &rec)?;
    }
    let resp = serialize::full_response(ctx, &rec, &listing(ctx, call.req, call.route)?, 201)?
        .with_header("Location", &ctx.url(&rec.path));
    Ok(etag::tagged(resp, &rec))
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
    ctx: &mut Ctx<'_>,
    ty: &ContentType,
    rec: &mut ContentRecord,
    body: Map<String, Value>,
    creating: bool,
) -> Result<Written> {
    let mut written = Vec::new();
    let mut change_note = None;
    for (key, value) in body {
        // Read-only properties, and `@`-prefixed metadata other than `@type` (Volto's forms send
        // back `@static_behaviors`), are ignored as Plone ignores them.
        if READ_ONLY.contains(&key.as_str()) || (key.starts_with('@') && key != "@type") {
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
        let value = if matches!(def.kind, FieldKind::File | FieldKind::Image) {
            crate::content::files::accept(
                ctx,
                &rec.uid,
                def,
                value,
                rec.fields.get(&key),
                crate::content::versioning::is_versioned(ty),
            )?
        } else {
            value
        };
        let mut stored = def.validate(&value)?;
        if def.kind == FieldKind::Blocks {
            links::to_stored(ctx, &mut stored)?;
        }
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
            let present = match rec.fields.get(&def.name) {
                None | Some(Value::Null) => false,
                Some(Value::String(s)) => !s.trim().is_empty(),
                Some(_) => true,
            };
            if present {
                continue;
            }
            match def.default.as_ref().filter(|d| !d.is_null()) {
                // A required field with a default starts with it.
                Some(d) => {
                    rec.fields.insert(def.name.clone(), d.clone());
                    written.push(def.name.clone());
                }
                None => {
                    return Err(EngineError::bad_request(format!(
                        "Field '{}' is required",
                        def.name
                    )))
                }
            }
        }
    }
    if ty.has_behavior(crate::content::calendar::EVENT_BEHAVIOR) {
        crate::content::calendar::check_dates(&rec.fields)?;
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
pub fn patch(ctx: &mut Ctx<'_>, call: &Call<'_>, mut obj: ContentRecord) -> Result<Response> {
    let mut body = extract::json_object(call.req)?;
    crate::content::locking::check_can_change(ctx, call.lock_token(), &obj)?;
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
    let ordering = match body.remove("ordering") {
        None | Some(Value::Null) => None,
        Some(v) => Some(sub_body::<OrderingRequest>(v, "ordering")?),
    };
    let sort = match body.remove("sort") {
        None | Some(Value::Null) => None,
        Some(v) => Some(sub_body::<SortRequest>(v, "sort")?),
    };

    let written = apply_fields(ctx, &ty, &mut obj, body, false)?;
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
    if let Some(o) = &ordering {
        reorder(ctx, &mut obj, o)?;
    }
    if let Some(s) = &sort {
        resort(ctx, &mut obj, s)?;
    }

    if call.wants_representation() {
        let resp = serialize::full_response(ctx, &obj, &listing(ctx, call.req, call.route)?, 200)?;
        return Ok(etag::tagged(resp, &obj));
    }
    Ok(etag::tagged(Response::empty(204), &obj))
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
    crate::content::aliases::record_moves(ctx, &moves)?;
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

/// A nested object of a PATCH body as `T`; a mismatch is a 400 naming `name.<property>`.
fn sub_body<T: serde::de::DeserializeOwned>(value: Value, name: &str) -> Result<T> {
    if !value.is_object() {
        return Err(EngineError::bad_request(format!(
            "'{name}' must be an object, got {}",
            crate::core::model::fields::json_kind(&value)
        )));
    }
    extract::from_value(value, &format!("property of '{name}'"))
}

/// `ordering: {obj_id, delta: "top" | "bottom" | integer, subset_ids?}`.
fn reorder(ctx: &mut Ctx<'_>, folder: &mut ContentRecord, spec: &OrderingRequest) -> Result<()> {
    require_folderish(ctx, folder, "ordering")?;
    let obj_id = spec.obj_id.as_str();
    let kids = tree::children(ctx, &folder.uid, 0, usize::MAX)?;
    let order: Vec<&str> = kids.iter().map(|k| k.id.as_str()).collect();
    if !order.contains(&obj_id) {
        return Err(EngineError::bad_request(format!(
            "'ordering.obj_id': '{obj_id}' is not an item of this folder"
        )));
    }
    let subset: Vec<String> = match &spec.subset_ids {
        None => order.iter().map(|s| s.to_string()).collect(),
        Some(ids) => {
            let ids = ids.clone();
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
    };
    let from = subset
        .iter()
        .position(|s| s == obj_id)
        .ok_or_else(|| EngineError::bad_request("'ordering.obj_id' must be one of 'subset_ids'"))?;
    let last = subset.len() - 1;
    let places = |d: i64| (from as i64).saturating_add(d).clamp(0, last as i64) as usize;
    let to = match &spec.delta {
        Delta::Word(s) if s == "top" => 0,
        Delta::Word(s) if s == "bottom" => last,
        Delta::Places(d) => places(*d),
        Delta::Word(s) if s.parse::<i64>().is_ok() => places(s.parse().unwrap_or(0)),
        Delta::Word(_) => {
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
fn resort(ctx: &mut Ctx<'_>, folder: &mut ContentRecord, spec: &SortRequest) -> Result<()> {
    require_folderish(ctx, folder, "sort")?;
    let on = spec.on.as_str();
    let descending = match spec.order.as_deref() {
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
        keyed.push((SortKey::of(&v), k.uid.clone()));
    }
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    if descending {
        keyed.reverse();
    }
    let uids: Vec<String> = keyed.into_iter().map(|(_, u)| u).collect();
    tree::set_order(ctx, folder, &uids)
}

/// What children are sorted by: nulls first, then booleans, numbers by value (negative and
/// fractional ones included), strings case-insensitively, anything else by its JSON text.
#[derive(Debug, Clone, PartialEq)]
enum SortKey {
    Null,
    Bool(bool),
    Number(f64),
    Text(String),
}

impl SortKey {
    fn of(v: &Value) -> Self {
        match v {
            Value::Null => SortKey::Null,
            Value::Bool(b) => SortKey::Bool(*b),
            Value::Number(n) => SortKey::Number(n.as_f64().unwrap_or(0.0)),
            Value::String(s) => SortKey::Text(s.to_lowercase()),
            other => SortKey::Text(other.to_string()),
        }
    }

    fn rank(&self) -> u8 {
        match self {
            SortKey::Null => 0,
            SortKey::Bool(_) => 1,
            SortKey::Number(_) => 2,
            SortKey::Text(_) => 3,
        }
    }

    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (self, other) {
            (SortKey::Bool(a), SortKey::Bool(b)) => a.cmp(b),
            (SortKey::Number(a), SortKey::Number(b)) => a.total_cmp(b),
            (SortKey::Text(a), SortKey::Text(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

/// DELETE `<path>`: remove the object and everything below it (into the recycle bin when it is
/// on); 204.
pub fn delete(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    if obj.is_root() {
        return Err(EngineError::bad_request("The site root cannot be deleted"));
    }
    // A locked object, or a folder holding one, is deleted only with the lock's token.
    let members = tree::subtree(ctx, &obj)?;
    for member in &members {
        crate::content::locking::check_can_change(ctx, call.lock_token(), member)?;
    }
    if crate::content::recyclebin::enabled(ctx)? {
        crate::content::recyclebin::bin(ctx, &obj, members)?;
    } else {
        tree::remove_members(ctx, &obj, &members)?;
    }
    Ok(Response::empty(204))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_sort_by_value_including_negative_and_fractional() {
        let mut keys: Vec<SortKey> = [json!(10), json!(-2), json!(2.5), json!(-0.5), json!(2)]
            .iter()
            .map(SortKey::of)
            .collect();
        keys.sort_by(SortKey::cmp);
        let order: Vec<f64> = keys
            .iter()
            .map(|k| match k {
                SortKey::Number(n) => *n,
                _ => f64::NAN,
            })
            .collect();
        assert_eq!(order, vec![-2.0, -0.5, 2.0, 2.5, 10.0]);
        assert_eq!(
            SortKey::of(&json!("B")).cmp(&SortKey::of(&json!("a"))),
            std::cmp::Ordering::Greater
        );
        assert_eq!(
            SortKey::of(&Value::Null).cmp(&SortKey::of(&json!(-5))),
            std::cmp::Ordering::Less
        );
    }
}
