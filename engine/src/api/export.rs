//! Exports: `@export` (the object as a JSON document, for migrations and other services) and
//! `rss_view` (also `@rss_view`: an RSS 2.0 feed of what the caller may view at and below the
//! object) and `markdown_view` (also `@markdown_view`: the object's blocks as Markdown; both
//! made by [`crate::content::exports`]). Both are served as attachments unless `?disposition=inline`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use super::serialize::{self, ListingRequest};
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register `@export` and `rss_view`.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@export", export)
            .requires(Permission::View)
            .summary(
                "The object as a JSON document: its fields, `created`, `modified`, `owner`, \
                 `layout`, `type`, `uuid`, `workflow_state` (an attachment `<id>.json` unless \
                 `disposition=inline`)",
            )
            .query::<DispositionQuery>()
            .answers::<ExportDocument>(),
    );
    r.route(
        RouteDef::get("@markdown_view", markdown)
            .requires(Permission::View)
            .summary(
                "The object's blocks as Markdown (`text/markdown`): title, description, text \
                 with headings, lists, links and emphasis, images; `<path>/markdown_view` is the \
                 same",
            )
            .query::<DispositionQuery>(),
    );
    r.route(
        RouteDef::get("@rss_view", rss)
            .requires(Permission::View)
            .summary(
                "RSS 2.0 of the newest 50 objects the caller may view below this one \
                 (`application/rss+xml`); `<path>/rss_view` is the same",
            )
            .query::<DispositionQuery>(),
    );
}

/// `?disposition=attachment|inline`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DispositionQuery {
    /// `attachment` (the default) or `inline`.
    #[serde(default)]
    pub disposition: Option<String>,
}

fn disposition(call: &Call<'_>) -> Result<&'static str> {
    let q: DispositionQuery = call.query()?;
    match q.disposition.as_deref() {
        None | Some("attachment") => Ok("attachment"),
        Some("inline") => Ok("inline"),
        Some(other) => Err(EngineError::bad_request(format!(
            "Invalid query parameter 'disposition': '{other}' (attachment or inline)"
        ))),
    }
}

/// The JSON export of an object.
#[derive(Serialize, JsonSchema)]
pub struct ExportDocument {
    /// The values of the type's fields, as the object's representation shows them.
    #[serde(flatten)]
    pub fields: Map<String, Value>,
    /// When it was created.
    pub created: String,
    /// When it was last changed.
    pub modified: String,
    /// Its owner's login.
    pub owner: String,
    /// Its view.
    pub layout: Value,
    /// Its content type.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Its uid.
    pub uuid: String,
    /// Its workflow state.
    pub workflow_state: Option<String>,
}

fn file_name(obj: &ContentRecord) -> &str {
    if obj.is_root() {
        "site"
    } else {
        obj.id.as_str()
    }
}

/// GET `@export`.
fn export(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let disposition = disposition(call)?;
    let listing = ListingRequest {
        batch: super::batching::Batch::for_route(ctx, call.route)?,
        query: &call.route.query,
        raw_query: &call.req.query,
        route: Some(call.route),
    };
    let full = serialize::full_without_items(ctx, &obj, &listing)?;
    let ty = ctx.type_of(&obj)?;
    let mut fields = Map::new();
    for f in ty.fields.iter().filter(|f| !f.transient) {
        if let Some(v) = full.get(&f.name) {
            fields.insert(f.name.clone(), v.clone());
        }
    }
    let doc = ExportDocument {
        fields,
        created: super::time::iso(&obj.created),
        modified: super::time::iso(&obj.modified),
        owner: obj.owner.clone(),
        layout: full.get("layout").cloned().unwrap_or(Value::Null),
        type_name: obj.type_name.clone(),
        uuid: obj.uid.clone(),
        workflow_state: obj.review_state.clone(),
    };
    Ok(Response::json(200, &doc).with_header(
        "Content-Disposition",
        &format!("{disposition}; filename=\"{}.json\"", file_name(&obj)),
    ))
}

/// GET `<path>/rss_view`.
fn rss(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let disposition = disposition(call)?;
    let items = crate::content::exports::feed_items(ctx, &obj)?;
    let language = obj
        .fields
        .get("language")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_default();
    let text = crate::content::exports::rss(ctx, &obj, &language, &items)?;
    let mut resp = Response::empty(200);
    resp.body = text.into_bytes();
    Ok(resp
        .with_header("Content-Type", "application/rss+xml; charset=utf-8")
        .with_header(
            "Content-Disposition",
            &format!("{disposition}; filename=\"{}.xml\"", file_name(&obj)),
        ))
}

/// GET `<path>/markdown_view`.
fn markdown(_ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let disposition = disposition(call)?;
    let mut resp = Response::empty(200);
    resp.body = crate::content::exports::markdown(&obj).into_bytes();
    Ok(resp
        .with_header("Content-Type", "text/markdown; charset=utf-8")
        .with_header(
            "Content-Disposition",
            &format!("{disposition}; filename=\"{}.md\"", file_name(&obj)),
        ))
}
