//! Content CRUD: GET, POST (add a child), PATCH (edit, reorder children), DELETE (a whole subtree).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::batching::Batch;
use super::extract::{self, Call};
use super::router::{RouteDef, RouteTable};
use super::serialize::{self, ListingRequest};
use super::{etag, Route};
use crate::content::operations::{self, Locks};
use crate::core::error::{EngineError, Result};
use crate::core::http::{Request, Response};
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register the content routes.
pub fn register(r: &mut RouteTable) {
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

impl ContentObject {
    /// The object this POST body asks to create: `@type` (required), an optional `id` (an
    /// empty one counts as none) and the field values, validated against the type by
    /// [`operations::create`].
    pub fn into_create(self) -> Result<operations::Create> {
        let mut body = self.0;
        let type_name = match body.remove("@type") {
            Some(Value::String(s)) => s,
            Some(_) => return Err(EngineError::bad_request("'@type' must be a string")),
            None => return Err(EngineError::bad_request("Property '@type' is required")),
        };
        let id = match body.remove("id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => return Err(EngineError::bad_request("'id' must be a string")),
        };
        Ok(operations::Create {
            type_name,
            id,
            fields: body,
            upload: None,
        })
    }
}

// The query's fields describe the OpenAPI document; the listing reads the raw query.
#[allow(dead_code)]
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
    /// The `@type` a client echoes back (it must be the object's own); not documented, as the
    /// reference does not document it either.
    #[schemars(skip)]
    pub type_name: Option<Value>,
    /// Field values (open: the type's fields).
    #[schemars(flatten)]
    pub fields: serde_json::Map<String, Value>,
}

impl ContentPatch {
    /// Parse a PATCH body into this type (the one parse of the body the schema above
    /// describes): `id`, `ordering` and `sort` are taken out, and the rest are field values,
    /// validated against the object's type by [`operations::edit`].
    pub fn parse(mut body: serde_json::Map<String, Value>) -> Result<Self> {
        let type_name = body.remove("@type");
        let id = match body.remove("id") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => Some(id),
            Some(_) => return Err(EngineError::bad_request("'id' must be a string")),
        };
        let ordering = match body.remove("ordering") {
            None | Some(Value::Null) => None,
            Some(v) => Some(sub_body::<OrderingRequest>(v, "ordering")?),
        };
        let sort = match body.remove("sort") {
            None | Some(Value::Null) => None,
            Some(v) => Some(sub_body::<SortRequest>(v, "sort")?),
        };
        Ok(ContentPatch {
            id,
            ordering,
            sort,
            type_name,
            fields: body,
        })
    }

    /// The edit this body asks for (fields and id), honouring the lock whose token the request
    /// presented; the reorder and re-sort it asks for are taken out, run by
    /// [`operations::reorder`] and [`operations::sort`] after it.
    pub fn into_commands(self, locks: &Locks) -> PatchCommands {
        PatchCommands {
            edit: operations::Edit {
                locks: locks.clone(),
                type_name: self.type_name,
                fields: self.fields,
                rename: self.id,
            },
            reorder: self.ordering.map(|o| operations::Reorder {
                obj_id: o.obj_id,
                delta: o.delta,
                subset_ids: o.subset_ids,
            }),
            sort: self.sort.map(|s| operations::Sort {
                on: s.on,
                order: s.order,
            }),
        }
    }
}

/// The content commands a PATCH body asks for, run in this order.
pub struct PatchCommands {
    /// Fields and id.
    pub edit: operations::Edit,
    /// Move one child within the order.
    pub reorder: Option<operations::Reorder>,
    /// Re-sort every child.
    pub sort: Option<operations::Sort>,
}

/// `ordering`: move `obj_id` by `delta` (`"top"`, `"bottom"` or a signed number of places),
/// within `subset_ids` when given (which must match the current relative order).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderingRequest {
    /// The id of the child to move.
    pub obj_id: String,
    /// Where to: `"top"`, `"bottom"` or a signed integer (also as a string).
    pub delta: operations::Delta,
    /// The ids the client sees, in its order.
    #[serde(default)]
    pub subset_ids: Option<Vec<String>>,
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
    let body = ContentObject(extract::json_object(call.req)?);
    // Who may not add here learns that before anything about the body.
    operations::check_can_add(ctx, &parent)?;
    let cmd = body.into_create()?;
    let rec = operations::create(ctx, &mut parent, cmd)?;
    let mut resp = serialize::full_response(ctx, &rec, &listing(ctx, call.req, call.route)?, 201)?
        .with_header("Location", &ctx.url(&rec.path));
    if ctx.profile().is_nick() {
        // Nick's answer names the components at the URL the object was posted to.
        resp.body = components_at(&resp.body, &ctx.url(&rec.path), &ctx.url(&parent.path))?;
    }
    Ok(etag::tagged(resp, &rec))
}

/// The JSON object `body` with the `@id` of each of its `@components` moved from `from` to
/// `to` (`<from>/@actions` becomes `<to>/@actions`).
fn components_at(body: &[u8], from: &str, to: &str) -> Result<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(body)?;
    let components = v.get_mut("@components").and_then(Value::as_object_mut);
    for c in components.into_iter().flat_map(|m| m.values_mut()) {
        if let Some(Value::String(id)) = c.get_mut("@id") {
            if let Some(rest) = id.strip_prefix(from).filter(|r| r.starts_with("/@")) {
                *id = format!("{to}{rest}");
            }
        }
    }
    Ok(serde_json::to_vec(&v)?)
}

/// PATCH `<path>`: edit fields, rename (`id`), reorder (`ordering`) or re-sort (`sort`) the
/// children. 204, or 200 with the object for `Prefer: return=representation`.
pub fn patch(ctx: &mut Ctx<'_>, call: &Call<'_>, mut obj: ContentRecord) -> Result<Response> {
    let locks = Locks::Honour(call.lock_token().map(str::to_string));
    let cmds = ContentPatch::parse(extract::json_object(call.req)?)?.into_commands(&locks);
    operations::edit(ctx, &mut obj, cmds.edit)?;
    if let Some(r) = &cmds.reorder {
        operations::reorder(ctx, &mut obj, r, &locks)?;
    }
    if let Some(s) = &cmds.sort {
        operations::sort(ctx, &mut obj, s, &locks, serialize::catalog_value)?;
    }
    if call.wants_representation() {
        let resp = serialize::full_response(ctx, &obj, &listing(ctx, call.req, call.route)?, 200)?;
        return Ok(etag::tagged(resp, &obj));
    }
    Ok(etag::tagged(Response::empty(204), &obj))
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

/// DELETE `<path>`: remove the object and everything below it (into the recycle bin when it is
/// on); 204.
pub fn delete(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let cmd = operations::Delete {
        locks: Locks::Honour(call.lock_token().map(str::to_string)),
        purge: false,
    };
    operations::delete(ctx, &obj, &cmd)?;
    Ok(Response::empty(204))
}
