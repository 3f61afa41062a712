//! `@breadcrumbs`: the path from the navigation root down to the context. Expandable as the
//! `breadcrumbs` component.

use serde_json::{json, Value};

use super::Route;
use crate::context::Ctx;
use crate::error::Result;
use crate::http::{Request, Response};
use crate::model::ContentRecord;
use crate::navigation;
use crate::permissions::Access;
use crate::security::Permission;

/// GET `<path>/@breadcrumbs`.
pub fn get(ctx: &mut Ctx<'_>, _: &Request, route: &Route, obj: ContentRecord) -> Result<Response> {
    ctx.require(Permission::View, &obj)?;
    Ok(Response::json(200, &component(ctx, route, &obj)?))
}

/// The breadcrumbs of `obj` (the `breadcrumbs` component): `{@id, items: [{@id, title}], root}`.
pub fn component(ctx: &Ctx<'_>, _: &Route, obj: &ContentRecord) -> Result<Value> {
    let (root, items) = navigation::breadcrumbs(ctx, obj)?;
    let items: Vec<Value> = items
        .iter()
        .map(|r| json!({"@id": ctx.url(&r.path), "title": r.title()}))
        .collect();
    Ok(json!({
        "@id": format!("{}/@breadcrumbs", ctx.url(&obj.path)),
        "items": items,
        "root": ctx.url(&root.path),
    }))
}
