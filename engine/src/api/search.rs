//! Catalog search: `@search` (GET, and POST with the same parameters as a JSON object),
//! `@querystring` (the indexes and operations of the query widget), `@querystring-search` (GET
//! with `query`, and POST) and `@catalog` (the catalog entry of the context). Results come from
//! the catalog ([`crate::catalog`]): only items the caller may view, batched, as summaries with
//! the requested `metadata_fields`, or as full objects (`fullobjects`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::batching::{Batch, BatchLinks, BatchQuery};
use super::extract::Call;
use super::nick_items;
use super::query::{decode_component, encode_component, Query as UrlQuery};
use super::router::{RouteDef, RouteTable};
use super::serialize::{self, ListingRequest};
use super::summaries::{ItemJson, ItemKeys, JsonOut};
use super::Route;
use crate::catalog::{
    self, bad_param, querystring, Bound, Criterion, Index, IndexKind, Sort, StoredEntry,
};
use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register `@search`, `@querystring`, `@querystring-search`, `@catalog` and the `catalog`
/// component.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@search", get_search)
            .requires(Permission::View)
            .summary(
                "Search the catalog below the context (or under `path.query`): any index as a \
                 parameter (`portal_type`, `review_state`, `Subject`, `SearchableText`, `UID`, \
                 dates with `<index>.query` and `<index>.range=min|max|minmax`, ...), `path.depth`, \
                 `sort_on` (one or several), `sort_order`, `b_start`/`b_size`, `metadata_fields` \
                 (names or `_all`), `fullobjects`, `show_inactive`, `use_site_search_settings`. \
                 Unknown parameters and sort keys are ignored; only items the caller may view",
            )
            .query::<SearchQuery>()
            .answers::<SearchResults>(),
    );
    r.route(
        RouteDef::post("@search", post_search)
            .reads()
            .requires(Permission::View)
            .summary(
                "`@search` with its parameters as a JSON object (`{\"portal_type\": [\"Page\"], \
                 \"created\": {\"query\": \"2026-01-01\", \"range\": \"min\"}, ...}`)",
            )
            .answers::<SearchResults>(),
    );
    r.route(
        RouteDef::get("@querystring", get_querystring)
            .requires(Permission::View)
            .summary(
                "The indexes the query widget offers, with their operations, vocabularies and \
                 values, and the sortable indexes",
            )
            .answers::<QuerystringDoc>(),
    );
    r.route(
        RouteDef::get("@querystring-search", get_querystring_search)
            .requires(Permission::View)
            .summary(
                "Run a querystring query given as JSON in the `query` parameter \
                 (`{\"query\": [{\"i\", \"o\", \"v\"}], \"sort_on\", \"limit\", ...}`)",
            )
            .query::<QuerystringSearchQuery>()
            .answers::<SearchResults>(),
    );
    r.route(
        RouteDef::post("@querystring-search", post_querystring_search)
            .reads()
            .requires(Permission::View)
            .summary(
                "Run a querystring query: `query` rows `{i, o, v}`, `sort_on`, `sort_order`, \
                 `limit`, `b_start`, `b_size`, `fullobjects`, `metadata_fields`",
            )
            .body::<QuerystringSearch>()
            .answers::<SearchResults>(),
    );
    r.route(
        RouteDef::get("@catalog", get_catalog)
            .requires(Permission::View)
            .summary("The catalog entry of the context: every metadata column of a catalog item")
            .answers::<Map<String, Value>>(),
    );
    r.component("catalog", Some(catalog_component));
}

// Some fields are accepted from clients or only describe the OpenAPI document; none is read.
#[allow(dead_code)]
/// The fixed parameters of `@search` (for the documentation; any index name is a parameter too).
#[derive(Deserialize, JsonSchema)]
pub struct SearchQuery {
    /// Paths to search under (repeatable; default: the context).
    #[serde(rename = "path.query")]
    pub path_query: Option<Vec<String>>,
    /// Levels below each path: -1 (default) everything including the path, 0 the path itself,
    /// 1 its children, n (2 or more) the path and the objects up to n levels below (as Plone).
    #[serde(rename = "path.depth")]
    pub path_depth: Option<String>,
    /// Sort keys (repeatable).
    pub sort_on: Option<Vec<String>>,
    /// `ascending` (default), `descending` or `reverse`.
    pub sort_order: Option<String>,
    /// Offset of the batch.
    pub b_start: Option<String>,
    /// Size of the batch (at least 1; above the maximum, the maximum).
    pub b_size: Option<String>,
    /// Metadata columns to add to each item (repeatable; `_all` for every one).
    pub metadata_fields: Option<Vec<String>>,
    /// Answer full objects instead of summaries.
    pub fullobjects: Option<String>,
    /// Also items not yet effective or already expired.
    pub show_inactive: Option<String>,
    /// Leave out the types the site does not search (the site root).
    pub use_site_search_settings: Option<String>,
    /// Full-text query: every word must occur; `word*` matches words starting with `word`.
    #[serde(rename = "SearchableText")]
    pub searchable_text: Option<String>,
}

/// A page of search results (the documentation's view of it; items are open objects).
#[derive(Serialize, JsonSchema)]
pub struct SearchResults {
    /// This search, without its batching and sorting parameters.
    #[serde(rename = "@id")]
    pub id: String,
    /// The items of this batch.
    pub items: Vec<Value>,
    /// How many items match in all.
    pub items_total: usize,
    /// Links to the other batches, when there are several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batching: Option<BatchLinks>,
}

/// The query of `@querystring-search` by GET.
#[derive(Deserialize, JsonSchema)]
pub struct QuerystringSearchQuery {
    /// The query as JSON (the body of the POST form), URL-encoded.
    pub query: Option<String>,
}

/// The body of `@querystring-search`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuerystringSearch {
    /// The rows.
    #[serde(default)]
    pub query: Vec<querystring::Row>,
    /// Sort key.
    #[serde(default)]
    pub sort_on: Option<String>,
    /// `ascending`, `descending` or `reverse`.
    #[serde(default)]
    pub sort_order: Option<String>,
    /// Most results in all. A number, or a string of digits (`@plone/client` sends `"10"`).
    #[serde(default, deserialize_with = "count")]
    pub limit: Option<usize>,
    /// Offset of the batch. A number, or a string of digits (`@plone/client` sends `"10"`).
    #[serde(default, deserialize_with = "count")]
    pub b_start: Option<usize>,
    /// Size of the batch. A number, or a string of digits (`@plone/client` sends `"10"`).
    #[serde(default, deserialize_with = "count")]
    pub b_size: Option<usize>,
    /// Answer full objects.
    #[serde(default)]
    pub fullobjects: Option<Value>,
    /// Metadata columns to add (`_all` for every one).
    #[serde(default)]
    pub metadata_fields: Option<Value>,
}

/// A count given as a JSON number or as a string of digits (what Plone's form parsing accepts);
/// null or an empty string is no value.
fn count<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<usize>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Count {
        Number(usize),
        Text(String),
    }
    match Option::<Count>::deserialize(d)? {
        None => Ok(None),
        Some(Count::Number(n)) => Ok(Some(n)),
        Some(Count::Text(t)) if t.trim().is_empty() => Ok(None),
        Some(Count::Text(t)) => t.trim().parse().map(Some).map_err(|_| {
            serde::de::Error::custom(format!("expected a non-negative integer, got '{t}'"))
        }),
    }
}

/// The answer of `@querystring` (for the documentation).
#[derive(Serialize, JsonSchema)]
pub struct QuerystringDoc {
    /// `<context>/@querystring`.
    #[serde(rename = "@id")]
    pub id: String,
    /// Every index by name.
    pub indexes: BTreeMap<String, querystring::IndexInfo>,
    /// The sortable ones.
    pub sortable_indexes: BTreeMap<String, querystring::IndexInfo>,
}

// ---------------------------------------------------------------------------------------------
// @search

/// How results are to be shown.
struct Presentation {
    batch: Batch,
    fullobjects: bool,
    metadata_fields: Vec<String>,
}

fn get_search(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let params: Vec<(String, String)> = call.route.query.pairs.clone();
    let url = endpoint_url(ctx, &obj, "@search");
    search_answer(ctx, &obj, &params, &url)
}

fn post_search(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let body = super::extract::json_object(call.req)?;
    let mut params = Vec::new();
    for (k, v) in body {
        flatten(&k, &v, &mut params);
    }
    let url = endpoint_url(ctx, &obj, "@search");
    search_answer(ctx, &obj, &params, &url)
}

/// A JSON body's property as query parameters: objects become `name.key`, lists repeat.
fn flatten(name: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                flatten(&format!("{name}.{k}"), v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| flatten(name, x, out)),
        Value::String(s) => out.push((name.to_string(), s.clone())),
        Value::Null => {}
        other => out.push((name.to_string(), other.to_string())),
    }
}

fn endpoint_url(ctx: &Ctx<'_>, obj: &ContentRecord, endpoint: &str) -> String {
    format!("{}/{endpoint}", ctx.url(&obj.path))
}

fn search_answer(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    params: &[(String, String)],
    url: &str,
) -> Result<Response> {
    let (q, presentation) = parse_search(ctx, obj, params)?;
    let b = presentation.batch;
    let (page, total) = catalog::search_page_in(ctx, &q, b.start, b.size, Some(obj))?;
    results_page(ctx, obj, url, &page, total, &presentation, params)
}

/// A parameter name without Zope's type suffixes (`created.query:record:list:date`).
fn plain_name(name: &str) -> &str {
    name.split(':').next().unwrap_or(name)
}

/// Parameters that are not index queries.
const CONTROL: &[&str] = &[
    "sort_on",
    "sort_order",
    "sort_limit",
    "b_start",
    "b_size",
    "metadata_fields",
    "fullobjects",
    "show_inactive",
    "use_site_search_settings",
    "expand",
];

fn truthy(param: &str, v: &str) -> Result<bool> {
    match v.trim() {
        "" | "1" | "true" | "True" | "on" | "yes" => Ok(true),
        "0" | "false" | "False" | "off" | "no" => Ok(false),
        other => Err(bad_param(
            param,
            format!("expected true or false, got '{other}'"),
        )),
    }
}

/// Turn `@search` parameters into a catalog query and the presentation of its results.
fn parse_search(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    params: &[(String, String)],
) -> Result<(catalog::Query, Presentation)> {
    let mut by_name: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for (k, v) in params {
        let k = plain_name(k);
        if !by_name.contains_key(k) {
            order.push(k);
        }
        by_name.entry(k).or_default().push(v.as_str());
    }
    let one = |k: &str| by_name.get(k).and_then(|v| v.last().copied());
    let mut q = catalog::Query::default();

    // Paths and depth.
    let mut paths: Vec<String> = Vec::new();
    for k in ["path", "path.query"] {
        for p in by_name.get(k).into_iter().flatten() {
            paths.push(normalize_path(p));
        }
    }
    if paths.is_empty() {
        paths.push(obj.path.clone());
    }
    q.paths = paths;
    if let Some(d) = one("path.depth") {
        let n: i64 = d
            .trim()
            .parse()
            .map_err(|_| bad_param("path.depth", format!("expected an integer, got '{d}'")))?;
        q.depth = match n {
            -1 => None,
            n if n >= 0 => Some(u32::try_from(n).unwrap_or(u32::MAX)),
            _ => return Err(bad_param("path.depth", "must be -1 or more")),
        };
    }

    // Sorting.
    let orders: Vec<&str> = by_name.get("sort_order").cloned().unwrap_or_default();
    let mut reverse_flags = Vec::new();
    for o in &orders {
        reverse_flags.push(match o.trim() {
            "" | "ascending" | "asc" => false,
            "descending" | "desc" | "reverse" => true,
            other => {
                return Err(bad_param(
                    "sort_order",
                    format!("expected 'ascending', 'descending' or 'reverse', got '{other}'"),
                ))
            }
        });
    }
    let sort_keys: Vec<&str> = by_name
        .get("sort_on")
        .into_iter()
        .flatten()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    for (i, key) in sort_keys.iter().enumerate() {
        // Unknown sort keys are ignored (the documented fallback).
        if let Some(index) = Index::from_name(key).filter(|i| i.sortable()) {
            let reverse = reverse_flags
                .get(i)
                .or(reverse_flags.last())
                .copied()
                .unwrap_or(false);
            q.sort.push(Sort { index, reverse });
        }
    }
    if let Some(l) = one("sort_limit") {
        q.limit = Some(
            l.trim()
                .parse()
                .map_err(|_| bad_param("sort_limit", format!("expected a number, got '{l}'")))?,
        );
    }

    q.show_inactive = match one("show_inactive") {
        Some(v) => truthy("show_inactive", v)?,
        None => false,
    };
    if let Some(v) = one("use_site_search_settings") {
        if truthy("use_site_search_settings", v)? {
            let site_types: Vec<String> = ctx
                .types()?
                .all()
                .filter(|t| t.name == "Site")
                .map(|t| t.name.clone())
                .collect();
            q.criteria
                .push(Criterion::NoneOf(Index::PortalType, site_types));
        }
    }

    // Index queries.
    for name in &order {
        if CONTROL.contains(name) || name.starts_with("path") {
            continue;
        }
        let (base, sub) = match name.split_once('.') {
            Some((b, s)) => (b, Some(s)),
            None => (*name, None),
        };
        if !matches!(sub, None | Some("query")) {
            continue; // `.range`, `.operator`, `.not` are read with their index.
        }
        let Some(index) = Index::from_name(base) else {
            continue; // Unknown parameters are ignored.
        };
        if index == Index::Path {
            continue;
        }
        let values: Vec<String> = by_name
            .get(*name)
            .into_iter()
            .flatten()
            .map(|s| s.to_string())
            .collect();
        let range = one(&format!("{base}.range"));
        let operator = one(&format!("{base}.operator"));
        let param = format!("{base}{}", if sub.is_some() { ".query" } else { "" });
        q.criteria.extend(index_criteria(
            index, &param, base, values, range, operator,
        )?);
        if let Some(nots) = by_name.get(format!("{base}.not").as_str()) {
            q.criteria.push(Criterion::NoneOf(
                index,
                nots.iter().map(|s| s.to_string()).collect(),
            ));
        }
    }

    // Presentation.
    let batch = batch_of(ctx, one("b_start"), one("b_size"))?;
    let fullobjects = match one("fullobjects") {
        Some(v) => truthy("fullobjects", v)?,
        None => false,
    };
    let metadata_fields = by_name
        .get("metadata_fields")
        .into_iter()
        .flatten()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    Ok((
        q,
        Presentation {
            batch,
            fullobjects,
            metadata_fields,
        },
    ))
}

fn batch_of(ctx: &Ctx<'_>, start: Option<&str>, size: Option<&str>) -> Result<Batch> {
    let num = |name: &str, v: Option<&str>| -> Result<Option<usize>> {
        match v.map(str::trim) {
            None | Some("") => Ok(None),
            Some(s) => s.parse().map(Some).map_err(|_| {
                bad_param(name, format!("expected a non-negative integer, got '{s}'"))
            }),
        }
    };
    clamped_batch(ctx, num("b_start", start)?, num("b_size", size)?)
}

/// The window of a search: `b_size` 0 is a 400; above the maximum it is the maximum (Volto's
/// "All" page size asks for 100000000), the documented fallback.
fn clamped_batch(ctx: &Ctx<'_>, start: Option<usize>, size: Option<usize>) -> Result<Batch> {
    let max = ctx.core.options.max_batch_size;
    Batch::from_query(
        &BatchQuery {
            b_start: start,
            b_size: size.map(|s| i64::try_from(s.min(max)).unwrap_or(i64::MAX)),
        },
        ctx.core.options.default_batch_size,
        max,
    )
}

/// `/a/b/`, `a/b` → `/a/b`; `/` → the root (`""`).
fn normalize_path(p: &str) -> String {
    let t = p.trim().trim_end_matches('/');
    if t.is_empty() {
        String::new()
    } else if t.starts_with('/') {
        t.to_string()
    } else {
        format!("/{t}")
    }
}

/// The criteria of one index parameter.
fn index_criteria(
    index: Index,
    param: &str,
    base: &str,
    values: Vec<String>,
    range: Option<&str>,
    operator: Option<&str>,
) -> Result<Vec<Criterion>> {
    let kind = index.kind();
    if let Some(r) = range {
        let r = r.trim();
        if !matches!(r, "min" | "max" | "minmax") {
            return Err(bad_param(
                &format!("{base}.range"),
                format!("expected 'min', 'max' or 'minmax', got '{r}'"),
            ));
        }
        let bounds: Vec<Bound> = values
            .iter()
            .map(|v| bound(kind, param, v))
            .collect::<Result<_>>()?;
        let (min, max) = match (r, bounds.as_slice()) {
            ("min", [b]) => (Some(b.clone()), None),
            ("max", [b]) => (None, Some(b.clone())),
            ("minmax", [a, b]) => (Some(a.clone()), Some(b.clone())),
            _ => {
                return Err(bad_param(
                    param,
                    format!(
                        "the range '{r}' takes {} value(s), got {}",
                        if r == "minmax" { 2 } else { 1 },
                        bounds.len()
                    ),
                ))
            }
        };
        return Ok(vec![Criterion::Range(index, min, max)]);
    }
    if values.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![match kind {
        IndexKind::Text => {
            let text = values.join(" ");
            if text.trim().trim_matches('*').trim().is_empty() {
                return Ok(Vec::new()); // an empty search box searches nothing out
            }
            Criterion::Text(index, text)
        }
        IndexKind::Bool => Criterion::Bool(index, truthy(param, &values[0])?),
        IndexKind::DateRange => match values.as_slice() {
            [v] => Criterion::Holds(
                index,
                querystring::parse_date(v)
                    .ok_or_else(|| bad_param(param, format!("'{v}' is not a date (ISO 8601)")))?,
            ),
            _ => return Err(bad_param(param, "give one date")),
        },
        IndexKind::Date | IndexKind::Int => {
            let b = values
                .iter()
                .map(|v| bound(kind, param, v))
                .collect::<Result<Vec<_>>>()?;
            if b.len() != 1 {
                return Err(bad_param(param, "give one value, or a range"));
            }
            Criterion::Range(index, Some(b[0].clone()), Some(b[0].clone()))
        }
        IndexKind::Strings if index == Index::Language && values.iter().any(|v| v == "all") => {
            return Ok(Vec::new())
        }
        IndexKind::Strings | IndexKind::Path => match operator.map(str::trim) {
            None | Some("or") => Criterion::Any(index, values),
            Some("and") => Criterion::All(index, values),
            Some(other) => {
                return Err(bad_param(
                    &format!("{base}.operator"),
                    format!("expected 'and' or 'or', got '{other}'"),
                ))
            }
        },
    }])
}

fn bound(kind: IndexKind, param: &str, v: &str) -> Result<Bound> {
    match kind {
        IndexKind::Date => querystring::parse_date(v)
            .map(Bound::Date)
            .ok_or_else(|| bad_param(param, format!("'{v}' is not a date (ISO 8601)"))),
        IndexKind::Int => v
            .trim()
            .parse()
            .map(Bound::Int)
            .map_err(|_| bad_param(param, format!("'{v}' is not an integer"))),
        IndexKind::Strings => Ok(Bound::Str(v.to_string())),
        _ => Err(bad_param(param, "this index takes no range")),
    }
}

/// The answer: a batch of results with the total and the batching links, written as JSON
/// straight from the stored entries ([`ItemJson`]). A Nick site answers as Nick does
/// ([`nick_results_page`]).
fn results_page(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    url: &str,
    page: &[StoredEntry],
    total: usize,
    p: &Presentation,
    params: &[(String, String)],
) -> Result<Response> {
    if ctx.profile().is_nick() {
        return nick_results_page(ctx, obj, page, p);
    }
    let fields: Vec<&str> = p.metadata_fields.iter().map(String::as_str).collect();
    let keys = ItemKeys::new(&fields);
    let query = UrlQuery {
        pairs: params.to_vec(),
    };
    let raw: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{}={}", encode_component(k), encode_component(v)))
        .collect();
    let raw = raw.join("&");
    let canonical: Vec<String> = params
        .iter()
        .filter(|(k, _)| {
            !matches!(
                plain_name(k),
                "b_start" | "b_size" | "sort_on" | "sort_order" | "sort_limit"
            )
        })
        .map(|(k, v)| format!("{}={}", encode_component(k), encode_component(v)))
        .collect();
    let id = if canonical.is_empty() {
        url.to_string()
    } else {
        format!("{url}?{}", canonical.join("&"))
    };
    let batching = p.batch.links(url, &raw, &query, total);
    // The same text `serde_json` writes for a [`SearchResults`] with these items.
    let mut out = JsonOut::new(512 + 1600 * page.len());
    out.open();
    out.key("@id");
    out.string(&id)?;
    out.key("items");
    out.buf.push(b'[');
    for (i, e) in page.iter().enumerate() {
        if i > 0 {
            out.buf.push(b',');
        }
        write_item(ctx, e, p.fullobjects, &keys, &mut out)?;
    }
    out.buf.push(b']');
    out.key("items_total");
    out.value(&total)?;
    if let Some(b) = &batching {
        out.key("batching");
        out.value(b)?;
    }
    out.close();
    Ok(Response {
        status: 200,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: out.buf,
        stream: None,
        lines: None,
    })
}

/// A page of results as Nick answers it (`@search` and `@querystring-search` alike): `@id` is the
/// context's bare `@search` URL, every item has all of Nick's catalog columns
/// ([`nick_items::item`]) unless `fullobjects` asks for the objects, and `items_total` counts
/// the items of this batch.
fn nick_results_page(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    page: &[StoredEntry],
    p: &Presentation,
) -> Result<Response> {
    let mut items = Vec::with_capacity(page.len());
    for e in page {
        let uid = e.view()?.uid;
        let item = if p.fullobjects {
            full_item(ctx, uid)?
        } else {
            match tree::load(ctx, uid)? {
                Some(rec) => Some(Value::Object(nick_items::item(ctx, &rec)?)),
                None => None,
            }
        };
        items.extend(item);
    }
    Ok(Response::json(
        200,
        &SearchResults {
            id: endpoint_url(ctx, obj, "@search"),
            items_total: items.len(),
            items,
            batching: None,
        },
    ))
}

/// The full object of a result (`fullobjects`), if it still exists.
fn full_item(ctx: &Ctx<'_>, uid: &str) -> Result<Option<Value>> {
    let Some(obj) = tree::load(ctx, uid)? else {
        return Ok(None);
    };
    let q = UrlQuery::default();
    let listing = ListingRequest {
        batch: Batch {
            start: 0,
            size: ctx.core.options.default_batch_size,
        },
        query: &q,
        raw_query: "",
        route: None,
    };
    Ok(Some(serialize::full(ctx, &obj, &listing)?))
}

/// One result: the summary with the requested metadata (from the entry, no object load), or the
/// full object.
fn write_item(
    ctx: &Ctx<'_>,
    e: &StoredEntry,
    full: bool,
    keys: &ItemKeys<'_>,
    out: &mut JsonOut,
) -> Result<()> {
    let v = e.view()?;
    if full {
        if let Some(obj) = full_item(ctx, v.uid)? {
            return Ok(out.value(&obj)?);
        }
    }
    Ok(ItemJson::new(ctx, v, keys)?.write(out)?)
}

// ---------------------------------------------------------------------------------------------
// @querystring

fn get_querystring(ctx: &mut Ctx<'_>, _call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let indexes = querystring::describe(ctx)?;
    let sortable_indexes = indexes
        .iter()
        .filter(|(_, i)| i.sortable)
        .map(|(k, i)| (k.clone(), i.clone()))
        .collect();
    Ok(Response::json(
        200,
        &QuerystringDoc {
            id: endpoint_url(ctx, &obj, "@querystring"),
            indexes,
            sortable_indexes,
        },
    ))
}

// ---------------------------------------------------------------------------------------------
// @querystring-search

fn get_querystring_search(
    ctx: &mut Ctx<'_>,
    call: &Call<'_>,
    obj: ContentRecord,
) -> Result<Response> {
    let q: QuerystringSearchQuery = call.query()?;
    let raw = q.query.unwrap_or_default();
    // Clients encode the JSON once more (`%7B...`): decode until it reads as JSON.
    let text = if raw.trim_start().starts_with('{') {
        raw
    } else {
        decode_component(&raw, false)?
    };
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| bad_param("query", format!("not a JSON object: {e}")))?;
    if !value.is_object() {
        return Err(bad_param("query", "not a JSON object"));
    }
    let body: QuerystringSearch = super::extract::from_value(value, "property")?;
    let url = format!(
        "{}?{}",
        endpoint_url(ctx, &obj, "@querystring-search"),
        call.req.query
    );
    querystring_answer(ctx, &obj, &body, &url, &[])
}

fn post_querystring_search(
    ctx: &mut Ctx<'_>,
    call: &Call<'_>,
    obj: ContentRecord,
) -> Result<Response> {
    let body: QuerystringSearch = call.body()?;
    let url = endpoint_url(ctx, &obj, "@querystring-search");
    querystring_answer(ctx, &obj, &body, &url, &call.route.query.pairs)
}

fn querystring_answer(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    body: &QuerystringSearch,
    url: &str,
    params: &[(String, String)],
) -> Result<Response> {
    let (page, total, p) = run_querystring(ctx, obj, body)?;
    results_page(ctx, obj, url, &page, total, &p, params)
}

/// Run a querystring search.
fn run_querystring(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    body: &QuerystringSearch,
) -> Result<(Vec<StoredEntry>, usize, Presentation)> {
    let reverse = match body.sort_order.as_deref().map(str::trim) {
        None | Some("" | "ascending" | "asc") => false,
        Some("descending" | "desc" | "reverse") => true,
        Some(other) => {
            return Err(EngineError::bad_request(format!(
                "Invalid property 'sort_order': expected 'ascending', 'descending' or 'reverse', \
                 got '{other}'"
            )))
        }
    };
    let q = querystring::build_query(
        ctx,
        obj,
        &body.query,
        body.sort_on.as_deref(),
        reverse,
        body.limit,
    )?;
    let batch = clamped_batch(ctx, body.b_start, body.b_size)?;
    let fullobjects = match &body.fullobjects {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_i64() != Some(0),
        Some(Value::String(s)) => truthy("fullobjects", s)?,
        Some(_) => {
            return Err(EngineError::bad_request(
                "Invalid property 'fullobjects': expected a boolean",
            ))
        }
    };
    let metadata_fields = match &body.metadata_fields {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        Some(_) => {
            return Err(EngineError::bad_request(
                "Invalid property 'metadata_fields': expected a string or a list of strings",
            ))
        }
    };
    let (page, total) = catalog::search_page_in(ctx, &q, batch.start, batch.size, Some(obj))?;
    Ok((
        page,
        total,
        Presentation {
            batch,
            fullobjects,
            metadata_fields,
        },
    ))
}

// ---------------------------------------------------------------------------------------------
// @catalog

fn get_catalog(ctx: &mut Ctx<'_>, _call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    Ok(Response::json(200, &catalog_doc(ctx, &obj)?))
}

fn catalog_component(ctx: &Ctx<'_>, _route: &Route, obj: &ContentRecord) -> Result<Value> {
    catalog_doc(ctx, obj)
}

/// Every metadata column of the context's catalog entry, with `@id` naming the endpoint (on a
/// Nick site, Nick's columns: [`nick_items::item`]).
fn catalog_doc(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Value> {
    if ctx.profile().is_nick() {
        let mut m = nick_items::item(ctx, obj)?;
        m.insert("@id".into(), json!(endpoint_url(ctx, obj, "@catalog")));
        return Ok(Value::Object(m));
    }
    let e = catalog::entry(ctx, &obj.uid)?
        .ok_or_else(|| EngineError::Internal(format!("{} has no catalog entry", obj.path)))?;
    let mut v = serialize::summary(ctx, &e.record(), &["_all"])?;
    if let Some(m) = v.as_object_mut() {
        m.insert("getObjSize".into(), json!(e.size));
        m.insert("getObjPositionInParent".into(), json!(e.pos));
        m.insert(
            "sortable_title".into(),
            json!(catalog::sortable_title(e.title())),
        );
        m.insert("@id".into(), json!(endpoint_url(ctx, obj, "@catalog")));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`ItemJson`] writes what `serialize::summary` builds from the entry's record.
    #[test]
    fn items_serialize_as_the_summaries() {
        let engine =
            crate::Engine::new(crate::MemStore::new(), crate::EngineOptions::for_tests()).unwrap();
        engine
            .create_site(&crate::SiteSetup::new("secret"))
            .unwrap();
        engine
            .with_write(|ctx| {
                let ty = ctx.types()?.require("Folder")?;
                let variants = [
                    json!({"title": "A \"q\" é", "description": "d\n"}),
                    json!({"title": "B", "creators": ["x", "y"], "subjects": ["s", "t\u{1}"],
                           "effective": "2026-01-02T00:00:00+00:00", "exclude_from_nav": false}),
                    json!({"creators": [], "expires": "2027-01-01T00:00:00+00:00",
                           "effective": null}),
                    json!({"creators": "not a list", "exclude_from_nav": 2.5}),
                    json!({"creators": {"a": [1, -2, null]}, "subjects": []}),
                ];
                let field_sets: [&[&str]; 5] = [
                    &[],
                    &["_all"],
                    &["UID", "created", "description", "Description", "nonsense"],
                    &["review_state", "getObjSize", "Creator", "listCreators"],
                    &["_all", "title"],
                ];
                for (i, f) in variants.iter().enumerate() {
                    let fields = f.as_object().cloned().unwrap_or_default();
                    let mut rec = tree::new_record(ctx, &ty, &format!("f{i}"), "bob", fields);
                    rec.path = format!("/f{i}");
                    if i == 3 {
                        rec.review_state = None;
                    }
                    let root = tree::root(ctx)?;
                    catalog::index_object(ctx, &rec, std::slice::from_ref(&root))?;
                    let e = catalog::entry(ctx, &rec.uid)?.expect("indexed");
                    let stored = catalog::stored_entry(ctx, &rec.uid)?.expect("indexed");
                    for set in field_sets {
                        let mut expected = serialize::summary(ctx, &e.record(), set)?;
                        if let Some(m) = expected.as_object_mut() {
                            if m.contains_key("getObjSize") {
                                m.insert("getObjSize".into(), json!(e.size));
                            }
                            // Catalog items always carry review_state (null without a
                            // workflow), as Plone's brains; object summaries leave it out.
                            m.entry("review_state").or_insert(Value::Null);
                        }
                        let keys = ItemKeys::new(set);
                        let mut out = JsonOut::new(0);
                        ItemJson::new(ctx, stored.view()?, &keys)?.write(&mut out)?;
                        assert_eq!(
                            String::from_utf8(out.buf).unwrap(),
                            serde_json::to_string(&expected)?,
                            "{set:?}"
                        );
                        assert_eq!(
                            ItemJson::new(ctx, stored.view()?, &keys)?.to_value()?,
                            expected
                        );
                    }
                }
                Ok(())
            })
            .unwrap();
    }
}
