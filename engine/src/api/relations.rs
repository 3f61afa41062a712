//! `@relations` on the site root: relation statistics, the relations per name, the broken ones
//! (`?onlyBroken=true`), adding and removing relations, and rebuilding the index, as
//! plone.restapi serves them for Volto's Relations control panel (the rules are in
//! [`crate::content::relations`]).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use super::serialize;
use crate::content::relations::{self, Filter, Relation};
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// Register `@relations`.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@relations", get)
            .requires(Permission::View)
            .root_only()
            .summary(
                "Without parameters: how many relations each name has (`stats`) and how many \
                 are broken (`broken`). With `source`, `target` (a path or a UID), `relation`, \
                 `query_source`, `query_target` (a path, or words of the text) and `max`: the \
                 relations the caller may view, by name. With `onlyBroken=true`: the broken \
                 relations by name as [source URL, target UID] pairs (204 when there are none)",
            )
            .query::<RelationsQuery>()
            .answers::<RelationsAnswer>(),
    );
    r.route(
        RouteDef::post("@relations", post)
            .requires(Permission::Modify)
            .root_only()
            .status(204)
            .summary(
                "Add relations (`items`: [{relation, source, target}], source and target by \
                 path or UID); `relatedItems` goes into the source's field. 422 naming every \
                 item that cannot be added, and then nothing is added",
            )
            .body::<RelationsBody>(),
    );
    r.route(
        RouteDef::post("@relations/rebuild", rebuild)
            .requires(Permission::ManagePortal)
            .root_only()
            .status(204)
            .summary(
                "Rebuild the index of `relatedItems` relations from the objects' fields; \
                 with `flush`, also drop the relations added through the API whose source or \
                 target is gone",
            )
            .body::<RebuildBody>(),
    );
    r.route(
        RouteDef::delete("@relations", delete)
            .requires(Permission::Modify)
            .root_only()
            .status(204)
            .summary(
                "Remove relations: the `items` named ([{relation, source, target}]), or every \
                 relation matching `relation`, `source` and `target` (those given). 422 naming \
                 every item that cannot be found, 409 for a link inside blocks (edit the \
                 blocks); then nothing is removed",
            )
            .body::<RelationsBody>(),
    );
}

/// The query of `GET @relations`.
#[derive(Deserialize, JsonSchema)]
pub struct RelationsQuery {
    /// Only relations from this object (a path starting with `/`, or a UID).
    pub source: Option<String>,
    /// Only relations to this object (a path starting with `/`, or a UID).
    pub target: Option<String>,
    /// Only relations of this name.
    pub relation: Option<String>,
    /// At most this many relations.
    pub max: Option<String>,
    /// `true`: the broken relations.
    #[serde(rename = "onlyBroken")]
    pub only_broken: Option<String>,
    /// Only relations from the objects under this path, or whose text has these words.
    pub query_source: Option<String>,
    /// Only relations to the objects under this path, or whose text has these words.
    pub query_target: Option<String>,
}

/// The answer of `GET @relations` (one of its three shapes).
#[derive(Serialize, JsonSchema)]
pub struct RelationsAnswer {
    /// This URL, with the query as sent.
    #[serde(rename = "@id")]
    pub id: String,
    /// Statistics: how many valid relations each name has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<BTreeMap<String, u64>>,
    /// Statistics: how many broken relations each name has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broken: Option<BTreeMap<String, u64>>,
    /// The relations, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relations: Option<BTreeMap<String, RelationList>>,
}

/// The relations of one name.
#[derive(Serialize, JsonSchema)]
pub struct RelationList {
    /// `{source, target}` summaries, or (broken ones) `[source URL, target UID]` pairs.
    pub items: Vec<Value>,
    /// How many.
    pub items_total: usize,
    /// When a relation name was asked for: whether relations can be changed here (always).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readonly: Option<bool>,
    /// When a relation name was asked for: the query restricting the targets a widget offers
    /// (`null`: none here).
    #[serde(
        rename = "staticCatalogVocabularyQuery",
        skip_serializing_if = "Option::is_none"
    )]
    pub static_query: Option<Value>,
}

/// One valid relation: the summaries of its ends.
#[derive(Serialize, JsonSchema)]
pub struct Pair {
    /// The source's summary (with `UID`).
    pub source: Value,
    /// The target's summary (with `UID`).
    pub target: Value,
}

/// One relation a client names.
#[derive(Deserialize, Serialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RelationItem {
    /// The relation's name.
    pub relation: String,
    /// The source: a path starting with `/`, or a UID.
    pub source: String,
    /// The target: a path starting with `/`, or a UID.
    pub target: String,
}

/// The body of `POST` and `DELETE @relations`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RelationsBody {
    /// The relations to add or remove.
    pub items: Option<Vec<RelationItem>>,
    /// `DELETE` without `items`: only relations of this name.
    pub relation: Option<String>,
    /// `DELETE` without `items`: only relations from this object.
    pub source: Option<String>,
    /// `DELETE` without `items`: only relations to this object.
    pub target: Option<String>,
}

/// The body of `POST @relations/rebuild`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RebuildBody {
    /// Also drop the relations added through the API whose source or target is gone (Plone's
    /// option to rebuild from scratch, which leaves the broken ones out).
    #[serde(default)]
    pub flush: bool,
}

fn truthy(v: &Option<String>, name: &str) -> Result<bool> {
    match v.as_deref().map(str::trim) {
        None | Some("") | Some("false") | Some("0") | Some("False") => Ok(false),
        Some("true") | Some("1") | Some("True") => Ok(true),
        Some(other) => Err(EngineError::bad_request(format!(
            "Query parameter '{name}' must be true or false, not '{other}'"
        ))),
    }
}

fn summary(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Value> {
    serialize::summary(ctx, obj, &["UID"])
}

/// The object a query parameter names, or a 404 naming it.
fn named(ctx: &Ctx<'_>, reference: &str, param: &str) -> Result<ContentRecord> {
    match relations::resolve(ctx, reference)? {
        Some(obj) if ctx.permitted(Permission::View, &obj)? => Ok(obj),
        _ => Err(EngineError::NotFound {
            url: format!("{} ({param})", reference),
            context: Some(ctx.url("")),
        }),
    }
}

fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, _root: ContentRecord) -> Result<Response> {
    let q: RelationsQuery = call.query()?;
    let base = ctx.url("/@relations");
    if truthy(&q.only_broken, "onlyBroken")? {
        let broken = relations::broken(ctx)?;
        if broken.is_empty() {
            return Ok(Response::empty(204));
        }
        let mut lists = BTreeMap::new();
        for (name, items) in broken {
            let items: Vec<Value> = items
                .iter()
                .map(|b| Value::from(vec![ctx.url(&b.source.path), b.target.clone()]))
                .collect();
            lists.insert(
                name,
                RelationList {
                    items_total: items.len(),
                    items,
                    readonly: None,
                    static_query: None,
                },
            );
        }
        return Ok(Response::json(
            200,
            &RelationsAnswer {
                id: format!("{base}?onlyBroken=true"),
                stats: None,
                broken: None,
                relations: Some(lists),
            },
        ));
    }
    let nothing_asked = [
        &q.source,
        &q.target,
        &q.relation,
        &q.query_source,
        &q.query_target,
    ]
    .iter()
    .all(|v| v.as_deref().is_none_or(|s| s.trim().is_empty()));
    if nothing_asked {
        let (stats, broken) = relations::stats(ctx)?;
        return Ok(Response::json(
            200,
            &RelationsAnswer {
                id: base,
                stats: Some(stats),
                broken: Some(broken),
                relations: None,
            },
        ));
    }
    let max = match q.max.as_deref().map(str::trim).filter(|m| !m.is_empty()) {
        None => None,
        Some(m) => Some(m.parse::<usize>().map_err(|_| {
            EngineError::bad_request(format!(
                "Query parameter 'max' must be a whole number, not '{m}'"
            ))
        })?),
    };
    let mut filter = Filter::default();
    if let Some(name) = q.relation.as_deref().filter(|s| !s.is_empty()) {
        relations::check_name(name)?;
        filter.name = Some(name.to_string());
    }
    if let Some(s) = q.source.as_deref().filter(|s| !s.is_empty()) {
        filter.sources = Some(vec![named(ctx, s, "source")?.uid]);
    }
    if let Some(t) = q.target.as_deref().filter(|s| !s.is_empty()) {
        filter.targets = Some(vec![named(ctx, t, "target")?.uid]);
    }
    if let Some(qs) = q.query_source.as_deref().filter(|s| !s.trim().is_empty()) {
        filter.sources = Some(relations::matching(ctx, qs)?);
    }
    if let Some(qt) = q.query_target.as_deref().filter(|s| !s.trim().is_empty()) {
        filter.targets = Some(relations::matching(ctx, qt)?);
    }
    let found = relations::list(ctx, &filter, max)?;
    let mut lists = BTreeMap::new();
    for (name, pairs) in found {
        let mut items = Vec::with_capacity(pairs.len());
        for (s, t) in &pairs {
            items.push(serde_json::to_value(Pair {
                source: summary(ctx, s)?,
                target: summary(ctx, t)?,
            })?);
        }
        lists.insert(
            name,
            RelationList {
                items_total: items.len(),
                items,
                readonly: None,
                static_query: None,
            },
        );
    }
    if let Some(name) = &filter.name {
        let list = lists.entry(name.clone()).or_insert(RelationList {
            items: Vec::new(),
            items_total: 0,
            readonly: None,
            static_query: None,
        });
        list.readonly = Some(false);
        list.static_query = Some(Value::Null);
    }
    let id = if call.req.query.is_empty() {
        base
    } else {
        format!("{base}?{}", call.req.query)
    };
    Ok(Response::json(
        200,
        &RelationsAnswer {
            id,
            stats: None,
            broken: None,
            relations: Some(lists),
        },
    ))
}

/// Why one item cannot be carried out, or its objects.
fn item_objects(
    ctx: &Ctx<'_>,
    item: &RelationItem,
    doing: &str,
) -> Result<std::result::Result<(ContentRecord, ContentRecord), String>> {
    relations::check_name(&item.relation)?;
    let source = relations::resolve(ctx, &item.source)?;
    let target = relations::resolve(ctx, &item.target)?;
    Ok(match (source, target) {
        (Some(s), Some(t)) => Ok((s, t)),
        (None, None) => Err(format!(
            "Failed on {doing} a relation. Source and target not found."
        )),
        (None, _) => Err(format!("Failed on {doing} a relation. Source not found.")),
        (_, None) => Err(format!("Failed on {doing} a relation. Target not found.")),
    })
}

fn failed(what: &str, failures: &[(RelationItem, String)]) -> EngineError {
    let list: Vec<String> = failures
        .iter()
        .map(|(i, why)| {
            format!(
                "{} from '{}' to '{}': {why}",
                i.relation, i.source, i.target
            )
        })
        .collect();
    EngineError::Unprocessable(format!(
        "Failed on {what} relations; nothing was changed. {}",
        list.join(" ")
    ))
}

fn post(ctx: &mut Ctx<'_>, call: &Call<'_>, _root: ContentRecord) -> Result<Response> {
    let body: RelationsBody = call.body()?;
    if body.relation.is_some() || body.source.is_some() || body.target.is_some() {
        return Err(EngineError::bad_request(
            "POST @relations takes only 'items' (a list of {relation, source, target})",
        ));
    }
    let items = body.items.filter(|i| !i.is_empty()).ok_or_else(|| {
        EngineError::bad_request("Missing 'items' (a list of {relation, source, target})")
    })?;
    let mut resolved = Vec::new();
    let mut failures = Vec::new();
    for item in &items {
        match item_objects(ctx, item, "creating")? {
            Ok(pair) => resolved.push((item, pair)),
            Err(why) => failures.push((item.clone(), why)),
        }
    }
    if !failures.is_empty() {
        return Err(failed("creating", &failures));
    }
    for (item, (mut source, target)) in resolved {
        // An earlier item may have edited the same source: work on its current record.
        if let Some(current) = crate::content::tree::load(ctx, &source.uid)? {
            source = current;
        }
        relations::create(ctx, &item.relation, &mut source, &target)?;
    }
    Ok(Response::empty(204))
}

fn rebuild(ctx: &mut Ctx<'_>, call: &Call<'_>, _root: ContentRecord) -> Result<Response> {
    let body: RebuildBody = call.body()?;
    relations::rebuild(ctx, body.flush)?;
    Ok(Response::empty(204))
}

fn delete(ctx: &mut Ctx<'_>, call: &Call<'_>, _root: ContentRecord) -> Result<Response> {
    let body: RelationsBody = call.body()?;
    let targets: Vec<Relation> = match body.items {
        Some(items) => {
            if items.is_empty() {
                return Err(EngineError::bad_request(
                    "'items' must name at least one relation ({relation, source, target})",
                ));
            }
            if body.relation.is_some() || body.source.is_some() || body.target.is_some() {
                return Err(EngineError::bad_request(
                    "Send either 'items' or 'relation', 'source' and 'target', not both",
                ));
            }
            let mut out = Vec::new();
            let mut failures = Vec::new();
            for item in &items {
                match item_objects(ctx, item, "deleting")? {
                    Ok((s, t)) => out.push(Relation {
                        name: item.relation.clone(),
                        source: s.uid,
                        target: t.uid,
                    }),
                    Err(why) => failures.push((item.clone(), why)),
                }
            }
            if !failures.is_empty() {
                return Err(failed("deleting", &failures));
            }
            out
        }
        None => {
            let mut filter = Filter::default();
            if let Some(name) = &body.relation {
                relations::check_name(name)?;
                filter.name = Some(name.clone());
            }
            for (value, param) in [(&body.source, "source"), (&body.target, "target")] {
                let Some(reference) = value else { continue };
                let obj = relations::resolve(ctx, reference)?.ok_or_else(|| {
                    EngineError::Unprocessable(format!(
                        "Failed on deleting relations. {} not found: {reference}",
                        if param == "source" {
                            "Source"
                        } else {
                            "Target"
                        }
                    ))
                })?;
                if param == "source" {
                    filter.sources = Some(vec![obj.uid]);
                } else {
                    filter.targets = Some(vec![obj.uid]);
                }
            }
            if filter.name.is_none() && filter.sources.is_none() && filter.targets.is_none() {
                return Err(EngineError::bad_request(
                    "Name the relations to delete: 'items', or at least one of 'relation', \
                     'source' and 'target'",
                ));
            }
            // Links inside blocks are the blocks' content: a bulk removal leaves them.
            relations::find(ctx, &filter)?
                .into_iter()
                .filter(|(_, in_blocks)| !in_blocks)
                .map(|(r, _)| r.relation)
                .collect()
        }
    };
    for r in &targets {
        relations::delete(ctx, r)?;
    }
    Ok(Response::empty(204))
}
