//! Querystring queries (what Volto's listing and search blocks and Collections store): rows of
//! `{i: index, o: operation, v: value}` turned into a catalog [`Query`], and the description of
//! the indexes and operations offered, which `@querystring` serves ([`describe`]): Plone's
//! registry (`querystring.json`: plone.app.querystring's indexes, operations, titles and help
//! texts), or on a Nick site Nick's (`querystring_nick.json`: its short operation ids, its
//! operations per index and their order, its titles and texts). Every index offered is a
//! catalog index ([`Index::from_name`]) or the `show_inactive` flag, and every operation offered
//! is one [`apply`] carries out; queries take Plone's dotted ids and Nick's short ones alike on
//! every site.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use chrono::{DateTime, Days, NaiveDate, NaiveTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{bad_param, Bound, Criterion, Index, IndexKind, Query, Sort, StoredEntry};
use crate::core::error::{EngineError, Result};
use crate::core::model::ContentRecord;
use crate::core::security::Role;
use crate::runtime::context::Ctx;
use crate::site::profile::SiteProfile;

/// One operation, as `@querystring` describes it.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct OperatorDef {
    /// Title shown in the query widget.
    pub title: String,
    /// Help text.
    pub description: Option<String>,
    /// The widget Volto renders for the value.
    pub widget: Option<String>,
    /// The parser of the operation (Plone's dotted function name, Nick's bare name).
    pub operation: String,
}

/// One index of a registry.
#[derive(Debug, Clone, Deserialize)]
pub struct IndexDef {
    /// Title.
    pub title: String,
    /// Description.
    pub description: String,
    /// Group in the widget (`Metadata`, `Text`, `Dates`).
    pub group: String,
    /// The operations offered, by the registry's ids, in the order the widget lists them.
    pub operations: Vec<String>,
    /// Whether results can be sorted on it.
    pub sortable: bool,
    /// Whether it is offered in the widget.
    pub enabled: bool,
    /// The vocabulary of its values, if any.
    pub vocabulary: Option<String>,
    /// Where its `values` come from: `types` (the content types), `states` (the workflow
    /// states), `roles` (the roles), or none.
    #[serde(default)]
    pub values_from: Option<String>,
}

/// A querystring registry: operations and indexes.
#[derive(Debug, Clone, Deserialize)]
pub struct QueryIndexes {
    /// Operations by id (Plone's dotted ids, or Nick's short ones).
    pub operators: BTreeMap<String, OperatorDef>,
    /// Indexes by name.
    pub indexes: BTreeMap<String, IndexDef>,
}

/// One index, as `@querystring` describes it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct IndexInfo {
    /// Title.
    pub title: String,
    /// Description.
    pub description: String,
    /// Group in the widget.
    pub group: String,
    /// Whether it is offered in the widget.
    pub enabled: bool,
    /// Whether the widget fetches its vocabulary (Plone's registry says so; Nick's leaves it out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetch_vocabulary: Option<bool>,
    /// Whether results can be sorted on it.
    pub sortable: bool,
    /// Its values with their titles (content types, workflow states, roles).
    pub values: BTreeMap<String, ValueTitle>,
    /// The vocabulary of its values, if any.
    pub vocabulary: Option<String>,
    /// The operations offered, in order.
    pub operations: Vec<String>,
    /// Each operation described.
    pub operators: BTreeMap<String, OperatorDef>,
}

/// The title of one value of an index.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ValueTitle {
    /// Title.
    pub title: String,
}

/// The registry a site with `profile` offers (`querystring.json` or `querystring_nick.json`,
/// read once; a unit test checks both).
pub fn registry(profile: SiteProfile) -> &'static QueryIndexes {
    static PLONE: OnceLock<QueryIndexes> = OnceLock::new();
    static NICK: OnceLock<QueryIndexes> = OnceLock::new();
    let read = |text: &str| {
        serde_json::from_str(text).unwrap_or(QueryIndexes {
            operators: BTreeMap::new(),
            indexes: BTreeMap::new(),
        })
    };
    match profile {
        SiteProfile::Plone => PLONE.get_or_init(|| read(include_str!("querystring.json"))),
        SiteProfile::Nick => NICK.get_or_init(|| read(include_str!("querystring_nick.json"))),
    }
}

/// The indexes a site offers the query widget, by name: its registry's ([`registry`]), with
/// their operations described and their values (content types, workflow states, roles).
pub fn describe(ctx: &Ctx<'_>) -> Result<BTreeMap<String, IndexInfo>> {
    let profile = ctx.profile();
    let reg = registry(profile);
    let mut out = BTreeMap::new();
    for (name, def) in &reg.indexes {
        let operators = def
            .operations
            .iter()
            .filter_map(|op| reg.operators.get(op).map(|d| (op.clone(), d.clone())))
            .collect();
        let values = index_values(ctx, def)?
            .into_iter()
            .map(|(k, title)| (k, ValueTitle { title }))
            .collect();
        out.insert(
            name.clone(),
            IndexInfo {
                title: def.title.clone(),
                description: def.description.clone(),
                group: def.group.clone(),
                enabled: def.enabled,
                fetch_vocabulary: (!profile.is_nick()).then_some(true),
                sortable: def.sortable,
                values,
                vocabulary: def.vocabulary.clone(),
                operations: def.operations.clone(),
                operators,
            },
        );
    }
    Ok(out)
}

/// The `values` of an index for the query widget: title by value (content types, workflow
/// states, roles); empty for the others.
pub fn index_values(ctx: &Ctx<'_>, def: &IndexDef) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    match def.values_from.as_deref() {
        Some("types") => {
            for t in ctx.types()?.all() {
                out.insert(t.name.clone(), t.title.clone());
            }
        }
        Some("states") => {
            for t in ctx.types()?.all() {
                if let Some(w) = t
                    .workflow
                    .as_deref()
                    .and_then(|w| ctx.core.workflows.get(w))
                {
                    for (id, s) in &w.states {
                        out.insert(id.clone(), format!("{} [{id}]", s.title));
                    }
                }
            }
        }
        Some("roles") => {
            for r in Role::ALL {
                out.insert(r.name().to_string(), r.name().to_string());
            }
        }
        _ => {}
    }
    Ok(out)
}

/// The flag `show_inactive` is a row of its own (`plone.app.querystring`'s `_showInactive`),
/// not an index: inactive content is shown when the caller holds one of the roles named.
pub const SHOW_INACTIVE: &str = "show_inactive";

/// One row of a querystring query.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// The index.
    pub i: String,
    /// The operation (dotted name, `plone.app.querystring.operation.<kind>.<op>`).
    pub o: String,
    /// The value (a string, a list, or nothing, depending on the operation).
    #[serde(default)]
    pub v: Value,
}

const PREFIX: &str = "plone.app.querystring.operation.";

/// The catalog query of a querystring search: the criteria of `rows` (at `context`), sorted on
/// `sort_on` when that names a sortable index, in reverse when `reverse`, at most `limit`
/// results (none or 0: no limit).
pub fn build_query(
    ctx: &Ctx<'_>,
    context: &ContentRecord,
    rows: &[Row],
    sort_on: Option<&str>,
    reverse: bool,
    limit: Option<usize>,
) -> Result<Query> {
    let mut q = Query::default();
    apply(ctx, context, rows, &mut q)?;
    if let Some(key) = sort_on.filter(|s| !s.is_empty()) {
        if let Some(index) = Index::from_name(key).filter(|i| i.sortable()) {
            q.sort.push(Sort { index, reverse });
        }
    }
    q.limit = limit.filter(|l| *l > 0);
    Ok(q)
}

/// The results of a Collection's stored query (`query`, `sort_on`, `sort_reversed`, `limit`),
/// `size` of them from `start`, and how many there are in all. A Collection without a query has
/// none, and so has one whose stored query no longer parses (an operation since removed): that
/// is not the reader's error.
pub fn collection_page(
    ctx: &Ctx<'_>,
    collection: &ContentRecord,
    start: usize,
    size: usize,
) -> Result<(Vec<StoredEntry>, usize)> {
    let fields = &collection.fields;
    let rows: Vec<Row> = fields
        .get("query")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    if rows.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let sort_on = fields.get("sort_on").and_then(Value::as_str);
    let reverse = fields
        .get("sort_reversed")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let limit = fields
        .get("limit")
        .and_then(Value::as_u64)
        .and_then(|l| usize::try_from(l).ok());
    match build_query(ctx, collection, &rows, sort_on, reverse, limit) {
        Ok(q) => super::search_page(ctx, &q, start, size),
        Err(EngineError::BadRequest(_)) => Ok((Vec::new(), 0)),
        Err(e) => Err(e),
    }
}

/// Add the criteria of `rows` to `q`; `context` is the object relative paths start from.
/// Rows naming an unknown index are left out (as the catalog ignores them); an unknown
/// operation, one that does not fit its index, or a malformed value is a 400 naming it.
pub fn apply(ctx: &Ctx<'_>, context: &ContentRecord, rows: &[Row], q: &mut Query) -> Result<()> {
    for (n, row) in rows.iter().enumerate() {
        let what = format!("query[{n}]");
        let op = row.o.strip_prefix(PREFIX).unwrap_or(&row.o);
        if !registry(SiteProfile::Plone)
            .operators
            .contains_key(&format!("{PREFIX}{op}"))
        {
            return Err(EngineError::bad_request(format!(
                "Invalid property '{what}.o': unknown operation '{}'",
                row.o
            )));
        }
        let unfit = || {
            EngineError::bad_request(format!(
                "Invalid property '{what}.o': the operation '{}' does not apply to the index '{}'",
                row.o, row.i
            ))
        };
        if row.i == SHOW_INACTIVE || op == "string.showInactive" {
            if row.i != SHOW_INACTIVE || op != "string.showInactive" {
                return Err(unfit());
            }
            if holds_any_role(ctx, context, &strings(&row.v, &what)?, &what)? {
                q.show_inactive = true;
            }
            continue;
        }
        let Some(index) = Index::from_name(&row.i) else {
            continue;
        };
        let (family, name) = op.split_once('.').unwrap_or((op, ""));
        let kind = index.kind();
        let now = ctx.now();
        let crit = match (family, name) {
            ("string", "absolutePath" | "relativePath" | "path") => {
                if kind != IndexKind::Path {
                    return Err(unfit());
                }
                path_row(ctx, context, name, &row.v, q, &what)?;
                continue;
            }
            ("selection", _) | ("string", "is" | "isNot" | "contains") | ("reference", "is") => {
                let values = strings(&row.v, &what)?;
                match (kind, name) {
                    (IndexKind::Text, "contains") => {
                        let text = values.join(" ");
                        if text.trim().trim_matches('*').trim().is_empty() {
                            continue; // an empty search box
                        }
                        Criterion::Text(index, text)
                    }
                    (IndexKind::Text, _)
                    | (
                        IndexKind::Date | IndexKind::Int | IndexKind::Bool | IndexKind::DateRange,
                        _,
                    ) => return Err(unfit()),
                    (IndexKind::Path, _) => Criterion::Any(Index::Path, values),
                    // "Tip: you can use * to autocomplete.": a value ending in `*` matches
                    // the values it starts.
                    (_, "is" | "isNot" | "any" | "all" | "none")
                        if values.iter().any(|v| v.ends_with('*')) =>
                    {
                        let mode = match name {
                            "all" => super::Glob::All,
                            "none" | "isNot" => super::Glob::None,
                            _ => super::Glob::Any,
                        };
                        Criterion::Glob(index, mode, values)
                    }
                    (_, "all") => Criterion::All(index, values),
                    (_, "none" | "isNot") => Criterion::NoneOf(index, values),
                    _ => Criterion::Any(index, values),
                }
            }
            ("string", "currentUser") => {
                if kind != IndexKind::Strings {
                    return Err(unfit());
                }
                let login = ctx.principal.login().unwrap_or("").to_string();
                Criterion::Any(index, vec![login])
            }
            ("date", _) => {
                if kind != IndexKind::Date {
                    return Err(unfit());
                }
                let start_of = |d: NaiveDate| d.and_time(NaiveTime::MIN).and_utc();
                let end_of = |d: NaiveDate| {
                    start_of(d) + chrono::Duration::days(1) - chrono::Duration::seconds(1)
                };
                let today = now.date_naive();
                let days = || -> Result<u64> {
                    let s = scalar(&row.v);
                    s.trim().parse::<u64>().map_err(|_| {
                        EngineError::bad_request(format!(
                            "Invalid property '{what}.v': a number of days is expected, got '{s}'"
                        ))
                    })
                };
                let (min, max) = match name {
                    "lessThan" => (None, Some(date(&scalar(&row.v), &what)?)),
                    "largerThan" => (Some(date(&scalar(&row.v), &what)?), None),
                    "between" => {
                        let v = strings(&row.v, &what)?;
                        let get = |i: usize| -> Result<Option<DateTime<Utc>>> {
                            match v.get(i).map(String::as_str) {
                                None | Some("") => Ok(None),
                                Some(s) => date(s, &what).map(Some),
                            }
                        };
                        (get(0)?, get(1)?)
                    }
                    "today" => (Some(start_of(today)), Some(end_of(today))),
                    "beforeToday" => (None, Some(start_of(today))),
                    "afterToday" => (Some(end_of(today)), None),
                    "lessThanRelativeDate" => {
                        let d = today.checked_add_days(Days::new(days()?)).unwrap_or(today);
                        (Some(now), Some(end_of(d)))
                    }
                    "largerThanRelativeDate" => {
                        let d = today.checked_sub_days(Days::new(days()?)).unwrap_or(today);
                        (Some(start_of(d)), Some(now))
                    }
                    "beforeRelativeDate" => {
                        let d = today.checked_sub_days(Days::new(days()?)).unwrap_or(today);
                        (None, Some(start_of(d)))
                    }
                    "afterRelativeDate" => {
                        let d = today.checked_add_days(Days::new(days()?)).unwrap_or(today);
                        (Some(end_of(d)), None)
                    }
                    _ => return Err(unfit()),
                };
                Criterion::Range(index, min.map(Bound::Date), max.map(Bound::Date))
            }
            ("int", _) => {
                if kind != IndexKind::Int {
                    return Err(unfit());
                }
                let s = scalar(&row.v);
                let n: i64 = s.trim().parse().map_err(|_| {
                    EngineError::bad_request(format!(
                        "Invalid property '{what}.v': an integer is expected, got '{s}'"
                    ))
                })?;
                match name {
                    "is" => Criterion::Range(index, Some(Bound::Int(n)), Some(Bound::Int(n))),
                    "lessThan" => Criterion::Range(index, None, Some(Bound::Int(n))),
                    _ => Criterion::Range(index, Some(Bound::Int(n)), None),
                }
            }
            ("boolean", _) => {
                if kind != IndexKind::Bool {
                    return Err(unfit());
                }
                Criterion::Bool(index, name == "isTrue")
            }
            _ => return Err(unfit()),
        };
        q.criteria.push(crit);
    }
    Ok(())
}

/// Whether the caller holds one of `roles` (names, Nick's `Administrator` too) on `context`;
/// an unknown role is a 400 naming the row's value.
fn holds_any_role(
    ctx: &Ctx<'_>,
    context: &ContentRecord,
    roles: &[String],
    what: &str,
) -> Result<bool> {
    let mut wanted = Vec::new();
    for r in roles {
        match Role::from_name(r.trim()) {
            Some(role) => wanted.push(role.name()),
            None => {
                return Err(EngineError::bad_request(format!(
                    "Invalid property '{what}.v': unknown role '{r}'"
                )))
            }
        }
    }
    if wanted.is_empty() {
        return Ok(false);
    }
    let ancestors = crate::content::tree::ancestors_for_permissions(ctx, context)?;
    let held = ctx.principal.roles_on(context, &ancestors);
    Ok(wanted.iter().any(|r| held.contains(*r)))
}

/// A path row: `/a/b`, `/a/b::depth`, a uid, or (relative) `..`, `../x`, `x::1`.
fn path_row(
    ctx: &Ctx<'_>,
    context: &ContentRecord,
    op: &str,
    v: &Value,
    q: &mut Query,
    what: &str,
) -> Result<()> {
    let raw = scalar(v);
    let (p, depth) = match raw.split_once("::") {
        Some((p, d)) => {
            let d: i64 = d.trim().parse().map_err(|_| {
                EngineError::bad_request(format!(
                    "Invalid property '{what}.v': the depth after '::' must be an integer, got '{d}'"
                ))
            })?;
            (p.to_string(), Some(d))
        }
        None => (raw.clone(), None),
    };
    let path = match op {
        "relativePath" => {
            let mut segs: Vec<&str> = context.path.split('/').filter(|s| !s.is_empty()).collect();
            for part in p.split('/') {
                match part {
                    "" | "." => {}
                    ".." => {
                        segs.pop();
                    }
                    s => segs.push(s),
                }
            }
            segs.iter().map(|s| format!("/{s}")).collect::<String>()
        }
        _ => {
            let p = p.trim();
            let looks_like_uid = p.len() == 32 && p.bytes().all(|b| b.is_ascii_hexdigit());
            let base = if looks_like_uid {
                match super::entry(ctx, p)? {
                    Some(e) => e.path,
                    None => return Err(bad_param(what, format!("no object has the UID '{p}'"))),
                }
            } else {
                p.trim_end_matches('/').to_string()
            };
            if op == "path" && !looks_like_uid {
                let root = crate::content::multilingual::navigation_root(ctx, context)?;
                format!("{}{}", root.path, base)
            } else {
                base
            }
        }
    };
    q.paths.push(path);
    if let Some(d) = depth {
        q.depth = u32::try_from(d).ok();
    }
    Ok(())
}

/// A value as one string (the first of a list).
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.first().map(scalar).unwrap_or_default(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A value as a list of strings.
fn strings(v: &Value, what: &str) -> Result<Vec<String>> {
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(a) => a
            .iter()
            .map(|x| match x {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                _ => Err(EngineError::bad_request(format!(
                    "Invalid property '{what}.v': expected strings"
                ))),
            })
            .collect(),
        Value::Null => Ok(Vec::new()),
        Value::Number(n) => Ok(vec![n.to_string()]),
        Value::Bool(b) => Ok(vec![b.to_string()]),
        Value::Object(_) => Err(EngineError::bad_request(format!(
            "Invalid property '{what}.v': expected a string or a list of strings"
        ))),
    }
}

/// A date value: ISO 8601, `YYYY/MM/DD` or `YYYY-MM-DD` (midnight UTC).
pub fn parse_date(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    crate::core::model::fields::parse_datetime(s).or_else(|| {
        ["%Y/%m/%d", "%Y-%m-%d"]
            .iter()
            .find_map(|f| NaiveDate::parse_from_str(s, f).ok())
            .map(|d| d.and_time(NaiveTime::MIN).and_utc())
    })
}

fn date(s: &str, what: &str) -> Result<DateTime<Utc>> {
    parse_date(s).ok_or_else(|| {
        EngineError::bad_request(format!(
            "Invalid property '{what}.v': '{s}' is not a date (use YYYY-MM-DD or ISO 8601)"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registries_read_and_name_known_indexes_and_operations() {
        let plone = registry(SiteProfile::Plone);
        for profile in [SiteProfile::Plone, SiteProfile::Nick] {
            let r = registry(profile);
            assert!(r.indexes.len() > 10, "{profile:?}");
            for (name, def) in &r.indexes {
                assert!(
                    name == SHOW_INACTIVE || Index::from_name(name).is_some(),
                    "{name} is no catalog index"
                );
                // What is offered as sortable, the catalog sorts on.
                if let Some(i) = Index::from_name(name).filter(|_| def.sortable) {
                    assert!(i.sortable(), "{profile:?} {name}");
                }
                for op in &def.operations {
                    assert!(r.operators.contains_key(op), "{profile:?} {name}: {op}");
                    // Every operation offered is one the query parser knows.
                    let short = op.strip_prefix(PREFIX).unwrap_or(op);
                    assert!(
                        plone.operators.contains_key(&format!("{PREFIX}{short}")),
                        "{profile:?} {name}: {op}"
                    );
                }
            }
        }
        let nick = registry(SiteProfile::Nick);
        assert!(nick.indexes.contains_key("start") && nick.indexes.contains_key("end"));
        assert!(nick.operators.contains_key("date.today"));
    }

    #[test]
    fn dates_parse_in_the_widget_forms() {
        assert!(parse_date("2026/01/02").is_some());
        assert!(parse_date("2026-01-02").is_some());
        assert!(parse_date("2026-01-02T10:00:00").is_some());
        assert!(parse_date("yesterday").is_none());
    }
}
