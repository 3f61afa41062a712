//! `@registry`: the configuration registry ([`crate::site::configuration`]), the named and typed
//! settings every control panel reads and writes.
//!
//! | method | path | query / body | answer |
//! |---|---|---|---|
//! | GET | `/@registry` | `q` (part of the name), `b_start`, `b_size` | 200, `{@id, items: [{name, schema: {properties}, value}], items_total, batching?}` |
//! | GET | `/@registry/<name>` | | 200, the record's value |
//! | PATCH | `/@registry` | `{<name>: value, ...}` | 204 |
//!
//! Only on the site root; the Manage portal permission is required. PATCH checks every value
//! against its record's kind: an unknown name or a value of the wrong type is a 400 naming it,
//! and nothing changes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::controlpanels::FieldSchema;

use super::batching::{Batch, BatchLinks};
use super::extract::{self, Call};
use super::router::{RouteDef, RouteTable};
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;
use crate::site::configuration::{self, RECORDS};

/// Register `@registry`.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@registry/{name?}", get)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary(
                "The configuration records (batched, `q` filters by name), or one record's value",
            )
            .query::<RegistryQuery>()
            .answers::<RecordList>(),
    );
    r.route(
        RouteDef::patch("@registry", patch)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Change several records at once: `{name: value}`")
            .body::<Map<String, Value>>(),
    );
}

// Some fields are accepted from clients or only describe the OpenAPI document; none is read.
#[allow(dead_code)]
/// The query of the listing.
#[derive(Deserialize, JsonSchema)]
pub struct RegistryQuery {
    /// Only records whose name contains this.
    #[serde(default)]
    pub q: Option<String>,
    /// Offset of the first record (default 0).
    #[serde(default)]
    pub b_start: Option<String>,
    /// Most records returned (default 25).
    #[serde(default)]
    pub b_size: Option<String>,
}

/// One record in the listing.
#[derive(Serialize, JsonSchema)]
pub struct RecordItem {
    /// Its name.
    pub name: &'static str,
    /// `{properties: <the field's JSON Schema>}`.
    pub schema: RecordSchema,
    /// Its value.
    pub value: Value,
}

/// A record's schema, as the reference nests it.
#[derive(Serialize, JsonSchema)]
pub struct RecordSchema {
    /// The field's JSON Schema.
    pub properties: FieldSchema,
}

/// The listing.
#[derive(Serialize, JsonSchema)]
pub struct RecordList {
    /// `<site>/@registry` with the query.
    #[serde(rename = "@id")]
    pub id: String,
    /// Links to the other batches, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batching: Option<BatchLinks>,
    /// This batch of records, by name.
    pub items: Vec<RecordItem>,
    /// How many records match.
    pub items_total: usize,
}

/// GET `/@registry` and `/@registry/<name>`.
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    if let Some(name) = call.param("name") {
        let Some(d) = configuration::def(name) else {
            return Err(EngineError::NotFound {
                url: call.route.url(&ctx.base_url),
                context: Some(ctx.url(&obj.path)),
            });
        };
        return Ok(Response::json(200, &configuration::read(ctx, d)?));
    }
    let q: RegistryQuery = call.query()?;
    let batch = Batch::for_route(ctx, call.route)?;
    let nick = ctx.profile().is_nick();
    let matching: Vec<_> = RECORDS
        .iter()
        .filter(|r| nick || !r.nick_only)
        .filter(|r| q.q.as_deref().is_none_or(|q| r.name.contains(q)))
        .collect();
    let mut items = Vec::new();
    for d in matching.iter().skip(batch.start).take(batch.size) {
        items.push(RecordItem {
            name: d.name,
            schema: RecordSchema {
                properties: super::controlpanels::field_schema(ctx, d),
            },
            value: configuration::read(ctx, d)?,
        });
    }
    let url = format!("{}/@registry", ctx.base_url);
    let raw = call.req.query.as_str();
    let list = RecordList {
        id: if raw.is_empty() {
            url.clone()
        } else {
            format!("{url}?{raw}")
        },
        batching: batch.links(&url, raw, &call.route.query, matching.len()),
        items,
        items_total: matching.len(),
    };
    Ok(Response::json(200, &list))
}

/// PATCH `/@registry`: every value is checked before any is written; 204.
fn patch(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let body = extract::json_object(call.req)?;
    for (name, value) in &body {
        let d = configuration::def(name)
            .ok_or_else(|| EngineError::bad_request(format!("Unknown registry record '{name}'")))?;
        d.kind.check(name, value)?;
    }
    for (name, value) in body {
        configuration::set(ctx, &name, &name, value)?;
    }
    Ok(Response::empty(204))
}
