//! `@breadcrumbs`: the path from the navigation root down to the context. Expandable as the
//! `breadcrumbs` component.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use super::Route;
use crate::content::navigation;
use crate::core::error::Result;
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register `@breadcrumbs` and the `breadcrumbs` component.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@breadcrumbs", get)
            .requires(Permission::View)
            .summary("The path from the navigation root down to the object")
            .answers::<Breadcrumbs>(),
    );
    r.component("breadcrumbs", Some(component));
}

/// The breadcrumbs of an object.
#[derive(Serialize, JsonSchema)]
pub struct Breadcrumbs {
    /// `<object URL>/@breadcrumbs`.
    #[serde(rename = "@id")]
    pub id: String,
    /// From below the navigation root down to the object.
    pub items: Vec<Crumb>,
    /// The navigation root's URL (on a Nick site its path, `/` for the site root).
    pub root: String,
}

/// One step.
#[derive(Serialize, JsonSchema)]
pub struct Crumb {
    /// Its URL.
    #[serde(rename = "@id")]
    pub id: String,
    /// Its title.
    pub title: String,
}

/// GET `<path>/@breadcrumbs`.
fn get(ctx: &mut Ctx<'_>, _: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    Ok(Response::json(200, &breadcrumbs(ctx, &obj)?))
}

fn component(ctx: &Ctx<'_>, _: &Route, obj: &ContentRecord) -> Result<Value> {
    Ok(serde_json::to_value(breadcrumbs(ctx, obj)?)?)
}

/// The breadcrumbs of `obj`.
pub fn breadcrumbs(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Breadcrumbs> {
    let (root, items) = navigation::breadcrumbs(ctx, obj)?;
    Ok(Breadcrumbs {
        id: format!("{}/@breadcrumbs", ctx.url(&obj.path)),
        items: items
            .iter()
            .map(|r| Crumb {
                id: ctx.url(&r.path),
                title: r.title().to_string(),
            })
            .collect(),
        // Nick names the navigation root by its path (`/` for the site root), Plone by its URL.
        root: if ctx.profile().is_nick() {
            if root.path.is_empty() {
                "/".to_string()
            } else {
                root.path.clone()
            }
        } else {
            ctx.url(&root.path)
        },
    })
}
