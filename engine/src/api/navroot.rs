//! `@navroot`: the navigation root of a context (the site root, or the language root folder in a
//! multilingual site) in full. Expandable as the `navroot` component.

use serde_json::{json, Value};

use super::batching::Batch;
use super::query::Query;
use super::serialize::{self, ListingRequest};
use super::Route;
use crate::context::Ctx;
use crate::error::Result;
use crate::http::{Request, Response};
use crate::model::ContentRecord;
use crate::multilingual;
use crate::permissions::Access;
use crate::security::Permission;

/// GET `<path>/@navroot`.
pub fn get(ctx: &mut Ctx<'_>, _: &Request, route: &Route, obj: ContentRecord) -> Result<Response> {
    ctx.require(Permission::View, &obj)?;
    Ok(Response::json(200, &component(ctx, route, &obj)?))
}

/// The `navroot` component of `obj`: `{@id, navroot}`, the root serialized like a content GET
/// without its `items` and `@components` (as the reference shows it).
pub fn component(ctx: &Ctx<'_>, _: &Route, obj: &ContentRecord) -> Result<Value> {
    let root = multilingual::navigation_root(ctx, obj)?;
    let query = Query::default();
    let listing = ListingRequest {
        batch: Batch { start: 0, size: 1 },
        query: &query,
        raw_query: "",
        route: None,
    };
    let mut body = serialize::full_without_items(ctx, &root, &listing)?;
    if let Some(m) = body.as_object_mut() {
        m.remove("@components");
    }
    Ok(json!({
        "@id": format!("{}/@navroot", ctx.url(&obj.path)),
        "navroot": body,
    }))
}
