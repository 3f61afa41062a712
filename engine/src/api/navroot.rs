//! `@navroot`: the navigation root of a context (the site root, or the language root folder in a
//! multilingual site) in full. Expandable as the `navroot` component.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::batching::Batch;
use super::extract::Call;
use super::query::Query;
use super::router::{RouteDef, RouteTable};
use super::serialize::{self, ListingRequest};
use super::Route;
use crate::content::multilingual;
use crate::core::error::Result;
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// Register `@navroot` and the `navroot` component.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@navroot", get)
            .requires(Permission::View)
            .summary("The navigation root of the object (site root, or its language root folder)")
            .answers::<NavRoot>(),
    );
    r.component("navroot", Some(component));
}

/// The navigation root of an object.
#[derive(Serialize, JsonSchema)]
pub struct NavRoot {
    /// `<object URL>/@navroot`.
    #[serde(rename = "@id")]
    pub id: String,
    /// The root, serialized like a content GET without `items` and `@components`.
    pub navroot: serde_json::Map<String, Value>,
}

/// GET `<path>/@navroot`.
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    Ok(Response::json(200, &component(ctx, call.route, &obj)?))
}

/// The `navroot` component of `obj`: `{@id, navroot}`, the root serialized like a content GET
/// without its `items` and `@components` (as the reference shows it).
fn component(ctx: &Ctx<'_>, _: &Route, obj: &ContentRecord) -> Result<Value> {
    let root = multilingual::navigation_root(ctx, obj)?;
    let query = Query::default();
    let listing = ListingRequest {
        batch: Batch { start: 0, size: 1 },
        query: &query,
        raw_query: "",
        route: None,
    };
    let mut navroot = match serialize::full_without_items(ctx, &root, &listing)? {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    navroot.remove("@components");
    if ctx.profile().is_nick() {
        // Nick's navigation root lists its children, each as an object without its own items.
        let mut items = Vec::new();
        for uid in crate::content::tree::child_uids(ctx, &root.uid, 0, usize::MAX)? {
            let Some(child) = crate::content::tree::load(ctx, &uid)? else {
                continue;
            };
            if !ctx.permitted(Permission::View, &child)? {
                continue;
            }
            let mut item = serialize::full_without_items(ctx, &child, &listing)?;
            if let Some(m) = item.as_object_mut() {
                m.remove("@components");
            }
            items.push(item);
        }
        navroot.insert("items".into(), Value::Array(items));
    }
    Ok(serde_json::to_value(NavRoot {
        id: format!("{}/@navroot", ctx.url(&obj.path)),
        navroot,
    })?)
}
