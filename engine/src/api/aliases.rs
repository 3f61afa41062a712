//! `@aliases`: list, add and remove URL aliases of an object (`<path>/@aliases`) or of the whole
//! site (`/@aliases`, which also exports and imports CSV). The rules are in [`crate::aliases`].
//!
//! Dates (`datetime` on import, `start`/`end` filters) are ISO 8601 (`2022-05-05`,
//! `2022-05-05T10:00:00`, with or without an offset; UTC when none) or the CSV export's
//! `2022/05/05 00:00:00 GMT+0`; anything else is a 400.

use serde_json::{json, Map, Value};

use super::batching::Batch;
use super::{json_body, Route};
use crate::aliases::{self, Alias};
use crate::context::Ctx;
use crate::error::{EngineError, Result};
use crate::http::{Request, Response};
use crate::model::ContentRecord;
use crate::permissions::Access;
use crate::security::Permission;

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

fn alias_json(a: &Alias) -> Value {
    json!({
        "datetime": a.datetime.format("%Y-%m-%dT%H:%M:%S").to_string(),
        "manual": a.manual,
        "path": a.path,
        "redirect-to": shown(&a.redirect_to),
    })
}

fn wants_csv(req: &Request) -> bool {
    req.header_value("accept")
        .is_some_and(|a| a.to_ascii_lowercase().contains("text/csv"))
}

fn date_filter(route: &Route, name: &str) -> Result<Option<chrono::DateTime<chrono::Utc>>> {
    match route.query.get(name) {
        None | Some("") => Ok(None),
        Some(s) => aliases::parse_date(s).map(Some).ok_or_else(|| {
            EngineError::bad_request(format!(
                "Query parameter '{name}' must be a date such as 2022-05-05 or 2022-05-05T10:00:00, got '{s}'"
            ))
        }),
    }
}

/// GET: the aliases of the object (or, at the root, of the whole site), filtered and batched.
pub fn get(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    obj: ContentRecord,
) -> Result<Response> {
    route.no_params("<path>/@aliases")?;
    let site_wide = obj.is_root();
    require_rights(ctx, &obj, Permission::View)?;
    let manual = match route.query.get("manual") {
        None | Some("") => None,
        Some("true") | Some("True") | Some("1") => Some(true),
        Some("false") | Some("False") | Some("0") => Some(false),
        Some(v) => {
            return Err(EngineError::bad_request(format!(
                "Query parameter 'manual' must be true or false, got '{v}'"
            )))
        }
    };
    let start = date_filter(route, "start")?;
    let end = date_filter(route, "end")?;
    let query = route.query.get("query").unwrap_or("").to_lowercase();
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
        let mut csv = String::from("old path,new path,datetime,manual\n");
        for a in &matching {
            csv.push_str(&format!(
                "{},{},{},{}\n",
                csv_field(&a.path),
                csv_field(shown(&a.redirect_to)),
                a.datetime.format("%Y/%m/%d %H:%M:%S GMT+0"),
                if a.manual { "True" } else { "False" }
            ));
        }
        return Ok(Response {
            status: 200,
            headers: vec![("Content-Type".into(), "text/csv; charset=utf-8".into())],
            body: csv.into_bytes(),
        });
    }
    let total = matching.len();
    let items: Vec<Value> = matching
        .iter()
        .skip(batch.start)
        .take(batch.size)
        .map(alias_json)
        .collect();
    let url = format!("{}/@aliases", ctx.url(&obj.path));
    let mut body = json!({"@id": url, "items": items, "items_total": total});
    if let Some(b) = batch.links(&url, &req.query, &route.query, total) {
        body["batching"] = b;
    }
    Ok(Response::json(200, &body))
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A path given as a site path or as an absolute URL under the site.
fn site_path(ctx: &Ctx<'_>, raw: &str) -> String {
    raw.strip_prefix(&ctx.base_url).unwrap_or(raw).to_string()
}

fn items(body: &Map<String, Value>) -> Result<&Vec<Value>> {
    body.get("items").and_then(Value::as_array).ok_or_else(|| {
        EngineError::bad_request("Property 'items' (an array of {\"path\": ...}) is required")
    })
}

fn item_str<'v>(item: &'v Value, name: &str) -> Result<Option<&'v str>> {
    let obj = item
        .as_object()
        .ok_or_else(|| EngineError::bad_request("Each item must be an object"))?;
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(EngineError::bad_request(format!(
            "'{name}' must be a string"
        ))),
    }
}

/// One alias to add: (path, target, datetime).
type NewAlias = (String, String, chrono::DateTime<chrono::Utc>);

/// POST: add aliases. `<path>/@aliases` takes `{items: [{path}]}`; the root takes
/// `{items: [{path, redirect-to, datetime?}]}` or a CSV file (multipart or text/csv). 201.
pub fn post(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    obj: ContentRecord,
) -> Result<Response> {
    route.no_params("<path>/@aliases")?;
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
        let body = json_body(req)?;
        let mut out = Vec::new();
        for item in items(&body)? {
            let path = item_str(item, "path")?
                .ok_or_else(|| EngineError::bad_request("Each item needs a 'path'"))?;
            let path = aliases::normalize_path(&site_path(ctx, path))?;
            let (target, when) = if site_wide {
                let t = item_str(item, "redirect-to")?.ok_or_else(|| {
                    EngineError::bad_request("Each item needs a 'redirect-to' at the site root")
                })?;
                let t = target_path(&site_path(ctx, t))?;
                let when = match item_str(item, "datetime")? {
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

fn parse_csv(
    ctx: &Ctx<'_>,
    text: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<NewAlias>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || (n == 0 && line.to_ascii_lowercase().starts_with("old path")) {
            continue;
        }
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        if cols.len() < 2 {
            return Err(EngineError::bad_request(format!(
                "CSV line {}: expected 'old path,new path[,datetime,manual]'",
                n + 1
            )));
        }
        let path = aliases::normalize_path(&site_path(ctx, cols[0]))?;
        let target = target_path(&site_path(ctx, cols[1]))?;
        let when = match cols.get(2).filter(|s| !s.is_empty()) {
            None => now,
            Some(d) => aliases::parse_date(d).ok_or_else(|| {
                EngineError::bad_request(format!("CSV line {}: unreadable date '{d}'", n + 1))
            })?,
        };
        out.push((path, target, when));
    }
    Ok(out)
}

/// The content of the `file` part of a multipart/form-data body.
fn multipart_file(content_type: &str, body: &[u8]) -> Result<String> {
    let boundary = content_type
        .split(';')
        .filter_map(|p| {
            let p = p.trim();
            p.get(..9)
                .filter(|k| k.eq_ignore_ascii_case("boundary="))
                .map(|_| &p[9..])
        })
        .next()
        .map(|b| b.trim_matches('"').to_string())
        .ok_or_else(|| EngineError::bad_request("multipart/form-data without a boundary"))?;
    let text = String::from_utf8_lossy(body);
    let delim = format!("--{boundary}");
    for part in text.split(delim.as_str()) {
        let Some((head, content)) = part
            .split_once("\r\n\r\n")
            .or_else(|| part.split_once("\n\n"))
        else {
            continue;
        };
        if head.to_ascii_lowercase().contains("name=\"file\"") {
            return Ok(content.trim_end_matches("--").trim_end().to_string());
        }
    }
    Err(EngineError::bad_request(
        "The multipart body has no 'file' part",
    ))
}

/// DELETE `{items: [{path}]}`: remove aliases (of this object, or any at the root); 204. Every
/// path must be an existing alias (of this object), else a 400 and nothing is removed.
pub fn delete(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    obj: ContentRecord,
) -> Result<Response> {
    route.no_params("<path>/@aliases")?;
    let site_wide = obj.is_root();
    require_rights(ctx, &obj, Permission::Modify)?;
    let body = json_body(req)?;
    let mut doomed = Vec::new();
    for item in items(&body)? {
        let path = item_str(item, "path")?
            .ok_or_else(|| EngineError::bad_request("Each item needs a 'path'"))?;
        let path = aliases::normalize_path(&site_path(ctx, path))?;
        let a = aliases::get(ctx, &path)?
            .filter(|a| site_wide || a.redirect_to == obj.path)
            .ok_or_else(|| {
                EngineError::bad_request(format!(
                    "'{path}' is not an alias of '{}'",
                    ctx.url(&obj.path)
                ))
            })?;
        doomed.push(a.path);
    }
    for p in doomed {
        aliases::remove(ctx, &p)?;
    }
    Ok(Response::empty(204))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_boundaries_keep_their_case() {
        let body = "--AbC\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\n\r\n/a,/b\r\n--AbC--\r\n";
        let file = multipart_file("multipart/form-data; Boundary=AbC", body.as_bytes()).unwrap();
        assert_eq!(file, "/a,/b");
    }
}
