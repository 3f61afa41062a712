//! `@inherit`: behavior data inherited from the closest object (the context, then its ancestors
//! up to the root) whose type has the behavior and which the caller may view
//! ([`crate::content::inherit`]). Expandable as the `inherit` component.
//!
//! | method | path | query | answer |
//! |---|---|---|---|
//! | GET | `<path>/@inherit` | `expand.inherit.behaviors` (comma-separated behavior names) | 200, `{@id, <behavior>: {data: {<field>: value}, from: {@id, title}}}` |
//!
//! Behaviors no object on the chain has, and unknown names, are left out.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use super::Route;
use crate::core::error::Result;
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register `@inherit` and the `inherit` component.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@inherit", get)
            .requires(Permission::View)
            .summary("Behavior data inherited from the closest object on the chain to the root that has the behavior")
            .query::<InheritQuery>()
            .answers::<Map<String, Value>>(),
    );
    r.component("inherit", Some(component));
}

/// The query of `@inherit`.
#[derive(Deserialize, JsonSchema)]
pub struct InheritQuery {
    /// Comma-separated behavior names.
    #[serde(rename = "expand.inherit.behaviors", default)]
    pub behaviors: Option<String>,
}

/// Where a behavior's data came from.
#[derive(Serialize)]
struct From {
    #[serde(rename = "@id")]
    id: String,
    title: String,
}

#[derive(Serialize)]
struct Found {
    data: Map<String, Value>,
    from: From,
}

fn answer(ctx: &Ctx<'_>, route: &Route, obj: &ContentRecord) -> Result<Value> {
    let q: InheritQuery = super::extract::query(route)?;
    // The names asked for, and the behaviors they name (Nick's names taken too).
    let mut asked: Vec<&str> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for b in q
        .behaviors
        .as_deref()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
    {
        let name = match nick_behavior(b) {
            Some(plone) if !crate::content::inherit::is_behavior(ctx, b)? => plone,
            _ => b,
        };
        if crate::content::inherit::is_behavior(ctx, name)? {
            asked.push(b);
            names.push(name.to_string());
        }
    }
    let mut out = Map::new();
    let mut id = format!("{}/@inherit", ctx.url(&obj.path));
    // Nick's `@id` is the bare endpoint; Plone's repeats the behaviors asked for.
    if let Some(b) = q.behaviors.as_ref().filter(|_| !ctx.profile().is_nick()) {
        id.push_str("?expand.inherit.behaviors=");
        let encoded: Vec<String> = b.split(',').map(super::query::encode_component).collect();
        id.push_str(&encoded.join(","));
    }
    out.insert("@id".into(), Value::String(id));
    let found = crate::content::inherit::inherit(ctx, obj, &names)?;
    for (name, (_, found)) in asked.into_iter().zip(found) {
        if let Some(f) = found {
            let v = Found {
                data: f.data,
                from: From {
                    id: ctx.url(&f.from.path),
                    title: f.from.title().to_string(),
                },
            };
            out.insert(name.to_string(), serde_json::to_value(v)?);
        }
    }
    Ok(Value::Object(out))
}

/// GET `<path>/@inherit`.
/// The behavior a Nick behavior name stands for, where it differs (Nick's `navigation_root` is
/// `plone.navigationroot`); the answer keeps the name asked for.
fn nick_behavior(name: &str) -> Option<&'static str> {
    match name {
        "navigation_root" => Some("plone.navigationroot"),
        _ => None,
    }
}

fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    Ok(Response::json(200, &answer(ctx, call.route, &obj)?))
}

/// The `inherit` component: the same as GET `@inherit`.
fn component(ctx: &Ctx<'_>, route: &Route, obj: &ContentRecord) -> Result<Value> {
    answer(ctx, route, obj)
}
