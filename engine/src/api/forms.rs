//! Form blocks: `@schemaform-data` takes a submission, `@form-data` serves the stored ones to
//! editors (JSON, or CSV with `Accept: text/csv`; `@form-data-export` is always CSV) and deletes
//! them (the rules are in [`crate::automation::forms`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::extract::Call;
use super::router::{Registry, RouteDef};
use crate::automation::forms;
use crate::core::clock::iso;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register the form routes.
pub fn register(r: &mut Registry) {
    r.route(
        RouteDef::post("@schemaform-data", submit)
            .requires(Permission::View)
            .status(204)
            .summary(
                "Submit the form block `block_id` of the object: `data` is checked against the \
                 block's schema (400 naming the field) and stored when the block has `store: true`",
            )
            .body::<SubmitRequest>(),
    );
    r.route(
        RouteDef::get("@form-data", list)
            .requires(Permission::Modify)
            .summary(
                "The stored submissions of the form block `block_id` (editors: Modify), oldest \
                 first; `Accept: text/csv` exports them as CSV",
            )
            .query::<FormDataQuery>()
            .answers::<FormData>(),
    );
    r.route(
        RouteDef::get("@form-data-export", export)
            .requires(Permission::Modify)
            .summary("The stored submissions of the form block `block_id` as CSV (editors: Modify)")
            .query::<FormDataQuery>(),
    );
    r.route(
        RouteDef::delete("@form-data", clear)
            .requires(Permission::Modify)
            .status(204)
            .summary("Delete the stored submissions of the form block `block_id` (editors: Modify)")
            .query::<FormDataQuery>(),
    );
}

/// A form submission.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitRequest {
    /// The id of the form block in the object's `blocks`.
    pub block_id: String,
    /// The values, by field name.
    pub data: Map<String, Value>,
}

/// Which form's data.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FormDataQuery {
    /// The id of the form block.
    pub block_id: String,
}

/// One stored submission: its values by field name, and `created`.
#[derive(Serialize, JsonSchema)]
#[serde(transparent)]
#[schemars(transparent)]
pub struct FormItem(pub Map<String, Value>);

/// The stored submissions of a form block.
#[derive(Serialize, JsonSchema)]
pub struct FormData {
    /// This endpoint's URL.
    #[serde(rename = "@id")]
    pub id: String,
    /// The submissions, oldest first.
    pub items: Vec<FormItem>,
    /// How many.
    pub items_total: usize,
    /// How many were dropped for being older than the form's retention (always 0: submissions
    /// are kept until deleted).
    pub expired_total: usize,
}

fn submit(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let body: SubmitRequest = call.body()?;
    forms::submit(ctx, &obj, &body.block_id, &body.data)?;
    Ok(Response::empty(204))
}

fn wants_csv(call: &Call<'_>) -> bool {
    call.req
        .header_value("accept")
        .is_some_and(|a| a.to_ascii_lowercase().contains("text/csv"))
}

fn list(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    if wants_csv(call) {
        return export(ctx, call, obj);
    }
    let q: FormDataQuery = call.query()?;
    forms::block(&obj, &q.block_id)?;
    let items: Vec<FormItem> = forms::submissions(ctx, &obj, &q.block_id)?
        .into_iter()
        .map(|s| {
            let mut m = s.data;
            m.insert("created".into(), Value::String(iso(&s.created)));
            FormItem(m)
        })
        .collect();
    Ok(Response::json(
        200,
        &FormData {
            id: format!("{}/@form-data", ctx.url(&obj.path)),
            items_total: items.len(),
            items,
            expired_total: 0,
        },
    ))
}

fn cell(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| cell(Some(x)))
            .collect::<Vec<_>>()
            .join(", "),
        Some(other) => other.to_string(),
    }
}

fn export(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let q: FormDataQuery = call.query()?;
    let block = forms::block(&obj, &q.block_id)?;
    let columns = forms::columns(block);
    let csv_err = |e: csv::Error| EngineError::Internal(format!("writing CSV: {e}"));
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<&str> = columns.iter().map(|(_, t)| t.as_str()).collect();
    header.push("created");
    w.write_record(&header).map_err(csv_err)?;
    for s in forms::submissions(ctx, &obj, &q.block_id)? {
        let mut row: Vec<String> = columns.iter().map(|(n, _)| cell(s.data.get(n))).collect();
        row.push(iso(&s.created));
        w.write_record(&row).map_err(csv_err)?;
    }
    let body = w
        .into_inner()
        .map_err(|e| EngineError::Internal(format!("writing CSV: {e}")))?;
    let name = format!(
        "{}-{}.csv",
        if obj.id.is_empty() { "site" } else { &obj.id },
        q.block_id
    );
    Ok(Response {
        status: 200,
        headers: vec![
            ("Content-Type".into(), "text/csv; charset=utf-8".into()),
            (
                "Content-Disposition".into(),
                format!("attachment; filename=\"{}\"", name.replace('"', "")),
            ),
        ],
        body,
        stream: None,
        lines: None,
    })
}

fn clear(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let q: FormDataQuery = call.query()?;
    forms::block(&obj, &q.block_id)?;
    forms::clear(ctx, &obj, &q.block_id)?;
    Ok(Response::empty(204))
}
