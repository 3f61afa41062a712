//! `@aliases`: list, add and remove URL aliases of an object (`<path>/@aliases`) or of the whole
//! site (`/@aliases`, which also exports and imports CSV). The rules are in [`crate::content::aliases`].
//!
//! Dates (`datetime` on import, `start`/`end` filters) are ISO 8601 (`2022-05-05`,
//! `2022-05-05T10:00:00`, with or without an offset; UTC when none) or the CSV export's
//! `2022/05/05 00:00:00 GMT+0`; anything else is a 400.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::batching::Batch;
use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use crate::content::aliases::{self, Alias};
use crate::core::error::{EngineError, Result};
use crate::core::http::{Request, Response};
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// Register the alias routes and the `aliases` component.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@aliases", get)
            .checked_by_handler()
            .summary(
                "The aliases of the object (View), or at the site root of the whole site \
                 (Manage portal; `Accept: text/csv` exports them as CSV); filtered and batched",
            )
            .query::<AliasQuery>()
            .answers::<AliasList>(),
    );
    r.route(
        RouteDef::post("@aliases", post)
            .checked_by_handler()
            .status(201)
            .summary(
                "Add aliases: `{items: [{path}]}` redirecting to the object (Modify), or at the \
                 root `{items: [{path, redirect-to, datetime?}]}` or a CSV file (Manage portal)",
            )
            .body::<AliasItems>(),
    );
    r.route(
        RouteDef::delete("@aliases", delete)
            .checked_by_handler()
            .status(204)
            .summary(
                "Remove aliases `{items: [{path}]}`; paths that are not aliases are answered \
                 200 `{type: \"error\", failed}` (the others are removed)",
            )
            .body::<AliasItems>(),
    );
    r.component("aliases", None);
}

// Some fields are accepted from clients or only describe the OpenAPI document; none is read.
#[allow(dead_code)]
/// The filters of an alias listing (plus `b_start` and `b_size`).
#[derive(Default, Deserialize, JsonSchema)]
pub struct AliasQuery {
    /// Text the old or new path contains.
    #[serde(default)]
    pub query: Option<String>,
    /// Only manual (`true`) or only automatic (`false`) aliases.
    #[serde(default)]
    pub manual: Option<String>,
    /// Only aliases made at or after this date.
    #[serde(default)]
    pub start: Option<String>,
    /// Only aliases made at or before this date.
    #[serde(default)]
    pub end: Option<String>,
    /// Batch start.
    #[serde(default)]
    pub b_start: Option<String>,
    /// Batch size.
    #[serde(default)]
    pub b_size: Option<String>,
}

/// A list of aliases to add or remove.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AliasItems {
    /// The aliases: a list of `{path, ...}` objects (see [`AliasItem`]) or of paths, or one path
    /// as a string (what Volto's per-page URL management sends, as Plone takes it).
    pub items: Option<Value>,
}

/// One alias to add or remove.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AliasItem {
    /// The old path (a site path or a URL under the site).
    pub path: Option<String>,
    /// Where it redirects (site root only).
    #[serde(rename = "redirect-to", default)]
    pub redirect_to: Option<String>,
    /// When it was made (site root only; default now).
    #[serde(default)]
    pub datetime: Option<String>,
}

/// One alias as listed.
#[derive(Serialize, JsonSchema)]
pub struct AliasJson {
    /// When it was made.
    pub datetime: String,
    /// Made by hand (true) or by a rename or move (false).
    pub manual: bool,
    /// The old path.
    pub path: String,
    /// Where it redirects.
    #[serde(rename = "redirect-to")]
    pub redirect_to: String,
}

/// An alias listing.
#[derive(Serialize, JsonSchema)]
pub struct AliasList {
    /// `<object URL>/@aliases`.
    #[serde(rename = "@id")]
    pub id: String,
    /// This batch.
    pub items: Vec<AliasJson>,
    /// How many match in all.
    pub items_total: usize,
    /// Links to the other batches, when there are several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batching: Option<super::batching::BatchLinks>,
}

/// Site-wide aliases (at the root) need Manage portal; an object's aliases need `perm` on it.
fn require_rights(ctx: &Ctx<'_>, obj: &ContentRecord, perm: Permission) -> Result<()> {
    if obj.is_root() {
        ctx.require(Permission::ManagePortal, obj)
    } else {
        ctx.require(perm, obj)
    }
}

/// Site paths in aliases: `/` for the root.
fn shown(path: &str) -> &str {
    if path.is_empty() {
        "/"
    } else {
        path
    }
}

fn alias_json(a: &Alias) -> AliasJson {
    AliasJson {
        datetime: a.datetime.format("%Y-%m-%dT%H:%M:%S").to_string(),
        manual: a.manual,
        path: a.path.clone(),
        redirect_to: shown(&a.redirect_to).to_string(),
    }
}

fn wants_csv(req: &Request) -> bool {
    req.header_value("accept")
        .is_some_and(|a| a.to_ascii_lowercase().contains("text/csv"))
}

fn date_filter(value: Option<&str>, name: &str) -> Result<Option<chrono::DateTime<chrono::Utc>>> {
    match value {
        None | Some("") => Ok(None),
        Some(s) => aliases::parse_date(s).map(Some).ok_or_else(|| {
            EngineError::bad_request(format!(
                "Query parameter '{name}' must be a date such as 2022-05-05 or 2022-05-05T10:00:00, got '{s}'"
            ))
        }),
    }
}

/// GET: the aliases of the object (or, at the root, of the whole site), filtered and batched.
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let (req, route) = (call.req, call.route);
    let site_wide = obj.is_root();
    require_rights(ctx, &obj, Permission::View)?;
    let q: AliasQuery = call.query()?;
    let manual = match q.manual.as_deref() {
        None | Some("") => None,
        Some("true") | Some("True") | Some("1") => Some(true),
        Some("false") | Some("False") | Some("0") => Some(false),
        Some(v) => {
            return Err(EngineError::bad_request(format!(
                "Query parameter 'manual' must be true or false, got '{v}'"
            )))
        }
    };
    let start = date_filter(q.start.as_deref(), "start")?;
    let end = date_filter(q.end.as_deref(), "end")?;
    let query = q.query.as_deref().unwrap_or("").to_lowercase();
    let batch = Batch::for_route(ctx, route)?;
    let list = if site_wide {
        aliases::all(ctx)?
    } else {
        aliases::for_target(ctx, &obj.path)?
    };
    let matching: Vec<Alias> = list
        .into_iter()
        .filter(|a| manual.is_none_or(|m| a.manual == m))
        .filter(|a| start.is_none_or(|s| a.datetime >= s))
        .filter(|a| end.is_none_or(|e| a.datetime <= e))
        .filter(|a| {
            query.is_empty()
                || a.path.to_lowercase().contains(&query)
                || a.redirect_to.to_lowercase().contains(&query)
        })
        .collect();
    if site_wide && wants_csv(req) {
        return Ok(Response {
            status: 200,
            headers: vec![("Content-Type".into(), "text/csv; charset=utf-8".into())],
            body: export_csv(&matching)?,
            stream: None,
            lines: None,
        });
    }
    let total = matching.len();
    let items: Vec<AliasJson> = matching
        .iter()
        .skip(batch.start)
        .take(batch.size)
        .map(alias_json)
        .collect();
    let url = format!("{}/@aliases", ctx.url(&obj.path));
    let batching = batch.links(&url, &req.query, &route.query, total);
    let body = AliasList {
        id: url,
        items,
        items_total: total,
        batching,
    };
    Ok(Response::json(200, &body))
}

/// The CSV export: a header row, then `old path,new path,datetime,manual` per alias, quoted
/// where a field needs it (the import reads the same format back).
fn export_csv(list: &[Alias]) -> Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let fail = |e: csv::Error| EngineError::Internal(format!("writing CSV: {e}"));
    w.write_record(["old path", "new path", "datetime", "manual"])
        .map_err(fail)?;
    for a in list {
        let when = a.datetime.format("%Y/%m/%d %H:%M:%S GMT+0").to_string();
        w.write_record([
            a.path.as_str(),
            shown(&a.redirect_to),
            when.as_str(),
            if a.manual { "True" } else { "False" },
        ])
        .map_err(fail)?;
    }
    w.into_inner()
        .map_err(|e| EngineError::Internal(format!("writing CSV: {e}")))
}

/// A path given as a site path or as an absolute URL under the site.
fn site_path(ctx: &Ctx<'_>, raw: &str) -> String {
    raw.strip_prefix(&ctx.base_url).unwrap_or(raw).to_string()
}

fn items(body: AliasItems) -> Result<Vec<AliasItem>> {
    let path_only = |path: String| AliasItem {
        path: Some(path),
        redirect_to: None,
        datetime: None,
    };
    let bad = |why: String| EngineError::bad_request(format!("Invalid property 'items': {why}"));
    match body.items {
        None | Some(Value::Null) => Err(EngineError::bad_request(
            "Property 'items' (an array of {\"path\": ...}) is required",
        )),
        Some(Value::String(path)) => Ok(vec![path_only(path)]),
        Some(Value::Array(list)) => list
            .into_iter()
            .map(|v| match v {
                Value::String(path) => Ok(path_only(path)),
                other => serde_json::from_value::<AliasItem>(other).map_err(|e| bad(e.to_string())),
            })
            .collect(),
        Some(_) => Err(bad(
            "expected a path, a list of paths or a list of {\"path\": ...}".into(),
        )),
    }
}

/// One alias to add: (path, target, datetime).
type NewAlias = (String, String, chrono::DateTime<chrono::Utc>);

/// POST: add aliases. `<path>/@aliases` takes `{items: [{path}]}`; the root takes
/// `{items: [{path, redirect-to, datetime?}]}` or a CSV file (multipart or text/csv). 201.
fn post(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let req = call.req;
    let site_wide = obj.is_root();
    require_rights(ctx, &obj, Permission::Modify)?;
    let now = ctx.now();
    let content_type = req
        .header_value("content-type")
        .unwrap_or("")
        .to_ascii_lowercase();
    let wanted: Vec<NewAlias> = if site_wide
        && (content_type.starts_with("multipart/form-data") || content_type.starts_with("text/csv"))
    {
        let text = if content_type.starts_with("text/csv") {
            String::from_utf8(req.body.clone())
                .map_err(|_| EngineError::bad_request("The CSV file is not valid UTF-8"))?
        } else {
            // The boundary is case-sensitive: take it from the header as sent, not lowercased.
            multipart_file(req.header_value("content-type").unwrap_or(""), &req.body)?
        };
        parse_csv(ctx, &text, now)?
    } else {
        let body: AliasItems = call.body()?;
        let mut out = Vec::new();
        for item in items(body)? {
            let path = item
                .path
                .ok_or_else(|| EngineError::bad_request("Each item needs a 'path'"))?;
            let path = aliases::normalize_path(&site_path(ctx, &path))?;
            let (target, when) = if site_wide {
                let t = item.redirect_to.ok_or_else(|| {
                    EngineError::bad_request("Each item needs a 'redirect-to' at the site root")
                })?;
                let t = target_path(&site_path(ctx, &t))?;
                let when = match item.datetime.as_deref() {
                    None => now,
                    Some(d) => aliases::parse_date(d).ok_or_else(|| {
                        EngineError::bad_request(format!(
                            "'datetime' must be a date such as 2022-05-05 or 2022-05-05T10:00:00, got '{d}'"
                        ))
                    })?,
                };
                (t, when)
            } else {
                (obj.path.clone(), now)
            };
            out.push((path, target, when));
        }
        out
    };
    for (path, target, when) in wanted {
        aliases::add_manual(ctx, &path, &target, when)?;
    }
    Ok(Response::empty(201))
}

fn target_path(raw: &str) -> Result<String> {
    if raw == "/" || raw.is_empty() {
        return Ok(String::new());
    }
    aliases::normalize_path(raw)
}

/// Read a CSV import: `old path,new path[,datetime[,manual]]` per line, an optional header row
/// (`old path,...`), quoted fields as the export writes them.
fn parse_csv(
    ctx: &Ctx<'_>,
    text: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<NewAlias>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let mut out = Vec::new();
    for (n, record) in reader.records().enumerate() {
        let line = n + 1;
        let record = record.map_err(|e| {
            EngineError::bad_request(format!("CSV line {line}: not readable as CSV: {e}"))
        })?;
        let cols: Vec<&str> = record.iter().collect();
        if cols.iter().all(|c| c.is_empty())
            || (n == 0 && cols[0].to_ascii_lowercase().starts_with("old path"))
        {
            continue;
        }
        if cols.len() < 2 {
            return Err(EngineError::bad_request(format!(
                "CSV line {line}: expected 'old path,new path[,datetime,manual]'"
            )));
        }
        let path = aliases::normalize_path(&site_path(ctx, cols[0]))?;
        let target = target_path(&site_path(ctx, cols[1]))?;
        let when = match cols.get(2).filter(|s| !s.is_empty()) {
            None => now,
            Some(d) => aliases::parse_date(d).ok_or_else(|| {
                EngineError::bad_request(format!("CSV line {line}: unreadable date '{d}'"))
            })?,
        };
        out.push((path, target, when));
    }
    Ok(out)
}

/// The content of the `file` part of a multipart/form-data body (parsed by `multer`; the body is
/// in memory, so its future completes on the first poll and needs no runtime).
fn multipart_file(content_type: &str, body: &[u8]) -> Result<String> {
    let bad = |what: String| EngineError::bad_request(format!("Unreadable multipart body: {what}"));
    let boundary = multer::parse_boundary(content_type).map_err(|e| bad(e.to_string()))?;
    let chunk: std::result::Result<bytes::Bytes, std::convert::Infallible> =
        Ok(bytes::Bytes::copy_from_slice(body));
    let mut parts = multer::Multipart::new(futures_util::stream::iter([chunk]), boundary);
    let found = complete(async move {
        while let Some(field) = parts.next_field().await? {
            if field.name() == Some("file") {
                return field.text().await.map(Some);
            }
        }
        Ok(None)
    });
    match found {
        Some(Ok(Some(text))) => Ok(text),
        Some(Ok(None)) => Err(EngineError::bad_request(
            "The multipart body has no 'file' part",
        )),
        Some(Err(e)) => Err(bad(e.to_string())),
        None => Err(EngineError::Internal(
            "the multipart parser waited on an in-memory body".into(),
        )),
    }
}

/// Drive `fut` to completion when it never waits (it only reads memory); `None` if it would.
fn complete<T>(fut: impl std::future::Future<Output = T>) -> Option<T> {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    // A future over an in-memory stream finishes within a few polls; never loop forever.
    for _ in 0..64 {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return Some(v);
        }
    }
    None
}

/// The answer of a DELETE that found some of the aliases gone already (Plone's shape).
#[derive(Serialize, JsonSchema)]
pub struct AliasesFailed {
    /// Always `error`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The paths that are not aliases (of this object).
    pub failed: Vec<String>,
}

/// DELETE `{items: [{path}]}`: remove aliases (of this object, or any at the root); 204. As in
/// Plone, a path that is not (or no longer) an alias (of this object) does not stop the others:
/// the answer is then 200 `{type: "error", failed: [path]}` (Volto's URL management removes the
/// aliases of a deleted page that way). A malformed path is a 400 and nothing is removed.
fn delete(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let site_wide = obj.is_root();
    require_rights(ctx, &obj, Permission::Modify)?;
    let body: AliasItems = call.body()?;
    let mut doomed = Vec::new();
    let mut failed = Vec::new();
    for item in items(body)? {
        let path = item
            .path
            .ok_or_else(|| EngineError::bad_request("Each item needs a 'path'"))?;
        let path = aliases::normalize_path(&site_path(ctx, &path))?;
        match aliases::get(ctx, &path)?.filter(|a| site_wide || a.redirect_to == obj.path) {
            Some(a) => doomed.push(a.path),
            None => failed.push(path),
        }
    }
    for p in doomed {
        aliases::remove(ctx, &p)?;
    }
    if failed.is_empty() {
        Ok(Response::empty(204))
    } else {
        Ok(Response::json(
            200,
            &AliasesFailed {
                kind: "error",
                failed,
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_export_reads_back_through_the_import() {
        let when = chrono::DateTime::UNIX_EPOCH;
        let list = vec![Alias {
            path: "/a,b \"quoted\"".into(),
            redirect_to: "/target, with comma".into(),
            datetime: when,
            manual: true,
        }];
        let text = String::from_utf8(export_csv(&list).unwrap()).unwrap();
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .from_reader(text.as_bytes());
        let row = reader.records().next().unwrap().unwrap();
        assert_eq!(&row[0], "/a,b \"quoted\"");
        assert_eq!(&row[1], "/target, with comma");
        assert_eq!(&row[3], "True");
    }

    #[test]
    fn multipart_boundaries_keep_their_case() {
        let body = "--AbC\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\n\r\n/a,/b\r\n--AbC--\r\n";
        let file = multipart_file("multipart/form-data; Boundary=AbC", body.as_bytes()).unwrap();
        assert_eq!(file, "/a,/b");
    }
}
