//! `@related`: the items most similar to the context by their embedding vectors (the rules are
//! in [`crate::ai::related`]), and the `related` component.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use super::serialize::catalog_value;
use super::summaries::CATALOG_FIELDS;
use super::Route;
use crate::ai::related;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Items answered when the request gives no `b_size`.
const DEFAULT_SIZE: usize = 5;

/// Register `@related` and the `related` component.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@related", get)
            .requires(Permission::View)
            .summary(
                "The items most similar to the context by the embedding vectors of their title, \
                 description and text: catalog items with `similarity` (cosine), highest first, \
                 only items the caller may view, never the context; 5 unless `b_size` asks for \
                 more. 400 \"AI is disabled.\" when no embedding model is configured",
            )
            .query::<RelatedQuery>()
            .answers::<Related>(),
    );
    r.component("related", Some(component));
}

/// The query of `@related`.
#[derive(Deserialize, JsonSchema)]
pub struct RelatedQuery {
    /// How many items (at least 1; above the site's largest batch, that many). Default 5.
    pub b_size: Option<String>,
}

/// The related items of an object.
#[derive(Serialize, JsonSchema)]
pub struct Related {
    /// `<object URL>/@related`.
    #[serde(rename = "@id")]
    pub id: String,
    /// Catalog items (every catalog metadata field) with `similarity`, highest first.
    pub items: Vec<Map<String, Value>>,
}

/// GET `<path>/@related`.
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let q: RelatedQuery = call.query()?;
    let size = match q.b_size.as_deref() {
        None => DEFAULT_SIZE,
        Some(s) => match s.trim().parse::<usize>() {
            Ok(n) if n >= 1 => n.min(ctx.core.options.max_batch_size),
            _ => {
                return Err(EngineError::BadRequest(format!(
                    "b_size must be a positive integer, not {s:?}"
                )))
            }
        },
    };
    Ok(Response::json(200, &related_items(ctx, &obj, size)?))
}

/// The `related` component: expanded, the default answer of `@related`; without a model only its
/// `@id` (the object itself still answers).
fn component(ctx: &Ctx<'_>, _: &Route, obj: &ContentRecord) -> Result<Value> {
    if ctx.core.options.embedder.is_none() {
        return Ok(serde_json::json!({"@id": format!("{}/@related", ctx.url(&obj.path))}));
    }
    Ok(serde_json::to_value(related_items(
        ctx,
        obj,
        DEFAULT_SIZE,
    )?)?)
}

/// The answer for `obj`: its `size` nearest items.
pub fn related_items(ctx: &Ctx<'_>, obj: &ContentRecord, size: usize) -> Result<Related> {
    let mut items = Vec::new();
    for (rec, similarity) in related::nearest(ctx, obj, size)? {
        let mut m = Map::new();
        for name in CATALOG_FIELDS {
            if let Some(v) = catalog_value(ctx, &rec, name)? {
                m.insert((*name).to_string(), v);
            }
        }
        m.insert("similarity".into(), Value::from(similarity));
        items.push(m);
    }
    Ok(Related {
        id: format!("{}/@related", ctx.url(&obj.path)),
        items,
    })
}
