//! `@navigation`: the top navigation of a context (the items of its navigation root), one level
//! deep unless `expand.navigation.depth` asks for more. Expandable as the `navigation` component.

use serde_json::{json, Map, Value};

use super::serialize::{catalog_value, CATALOG_FIELDS};
use super::Route;
use crate::context::Ctx;
use crate::error::{EngineError, Result};
use crate::http::{Request, Response};
use crate::model::ContentRecord;
use crate::navigation::{self, NavItem};
use crate::security::Permission;

/// The query parameter naming the depth.
pub const DEPTH_PARAM: &str = "expand.navigation.depth";

/// The requested depth: 1 unless `expand.navigation.depth` is given (a positive integer).
pub fn depth(route: &Route) -> Result<usize> {
    match route.query.get(DEPTH_PARAM) {
        None => Ok(1),
        Some(raw) => raw
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|d| *d >= 1)
            .ok_or_else(|| {
                EngineError::bad_request(format!(
                    "Query parameter '{DEPTH_PARAM}' must be a positive integer, got '{raw}'"
                ))
            }),
    }
}

/// GET `<path>/@navigation`.
pub fn get(ctx: &mut Ctx<'_>, _: &Request, route: &Route, obj: ContentRecord) -> Result<Response> {
    ctx.require(Permission::View, &obj)?;
    Ok(Response::json(200, &component(ctx, route, &obj)?))
}

/// The navigation of `obj` (the `navigation` component): `{@id, items}`.
pub fn component(ctx: &Ctx<'_>, route: &Route, obj: &ContentRecord) -> Result<Value> {
    let depth = depth(route)?;
    let settings = navigation::settings(ctx)?;
    let (root, items) = navigation::navigation(ctx, obj, depth, &settings)?;
    let mut out = Vec::new();
    if settings.show_home {
        out.push(json!({
            "@id": ctx.url(&root.path),
            "description": "",
            "items": [],
            "review_state": null,
            "title": "Home",
        }));
    }
    for extra in &settings.extra_items {
        out.push(json!({
            "@id": navigation::NavigationSettings::item_url(ctx, extra),
            "description": extra.description,
            "items": [],
            "review_state": null,
            "title": extra.title,
        }));
    }
    for item in &items {
        out.push(item_json(ctx, item)?);
    }
    Ok(json!({
        "@id": format!("{}/@navigation", ctx.url(&obj.path)),
        "items": out,
    }))
}

/// One navigation item: the catalog item fields plus `description`, `markdown`, `items`, `start`,
/// `end` and `recurrence`.
fn item_json(ctx: &Ctx<'_>, item: &NavItem) -> Result<Value> {
    let mut m = Map::new();
    for name in CATALOG_FIELDS {
        if let Some(v) = catalog_value(ctx, &item.rec, name)? {
            m.insert(name.to_string(), v);
        }
    }
    m.insert("description".into(), json!(item.rec.description()));
    m.insert("markdown".into(), json!(""));
    m.insert("start".into(), Value::Null);
    m.insert("end".into(), Value::Null);
    m.insert("recurrence".into(), Value::Null);
    let children: Result<Vec<Value>> = item.children.iter().map(|c| item_json(ctx, c)).collect();
    m.insert("items".into(), Value::Array(children?));
    Ok(Value::Object(m))
}
