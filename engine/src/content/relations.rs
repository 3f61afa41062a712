//! Relations between content objects, as Plone's relation catalog holds them: a named, directed
//! link from a source object to a target object.
//!
//! Where they come from:
//! - `relatedItems`: each uid in an object's `relatedItems` field, and the object a Relation
//!   Choice field holds (the relation named after the field) (kept in the index by
//!   [`RelationsSubscriber`] as the object is added, edited, restored and removed);
//! - `isReferencing`: each link to another object inside an object's blocks (the catalog's link
//!   index, [`crate::catalog::linking_to`], which the catalog keeps current itself);
//! - any other name: relations added through `POST @relations` ([`create`]), which live only in
//!   the index.
//!
//! A relation whose target is gone (deleted, or in the recycle bin) is *broken*; one whose
//! source is gone is not listed. Keyspace: `L:s:<source>\0<name>\0<target>` (the value says
//! where it comes from) and its mirror `L:t:<target>\0<name>\0<source>`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

use crate::content::operations::{self, Edit, Locks};
use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::core::model::fields::FieldKind;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;
use crate::runtime::subscriber::Subscriber;

/// The relation of an object's `relatedItems` field.
pub const RELATED_ITEMS: &str = "relatedItems";
/// The relation of a link inside an object's blocks.
pub const IS_REFERENCING: &str = "isReferencing";

/// Stored value: the relation comes from a field of the source (`relatedItems`, a Relation
/// Choice).
const FROM_FIELD: &[u8] = b"f";
/// Stored value: the relation was added through the API.
const FROM_API: &[u8] = b"a";

/// One relation, by uids.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Relation {
    /// The relation's name (`relatedItems`, `isReferencing`, ...).
    pub name: String,
    /// The uid of the object it goes from.
    pub source: String,
    /// The uid of the object it points at.
    pub target: String,
}

/// Which relations to look at: each part that is given must match.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only relations from one of these objects (uids).
    pub sources: Option<Vec<String>>,
    /// Only relations to one of these objects (uids).
    pub targets: Option<Vec<String>>,
    /// Only relations of this name.
    pub name: Option<String>,
}

impl Filter {
    fn admits(&self, r: &Relation) -> bool {
        self.name.as_ref().is_none_or(|n| *n == r.name)
            && self.sources.as_ref().is_none_or(|s| s.contains(&r.source))
            && self.targets.as_ref().is_none_or(|t| t.contains(&r.target))
    }
}

/// A relation whose objects were looked up.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The relation.
    pub relation: Relation,
    /// Its source (`None`: gone).
    pub source: Option<ContentRecord>,
    /// Its target (`None`: gone, the relation is broken).
    pub target: Option<ContentRecord>,
}

/// Check a relation name a client sent: letters, digits, `_`, `-`, `.`, at most 100 characters.
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(EngineError::bad_request(format!(
            "'relation' must be a relation name (letters, digits, '_', '-', '.'; at most 100 \
             characters), not '{name}'"
        )))
    }
}

/// The parts of a relation key after its prefix: `<a>\0<name>\0<b>`.
fn split3(rest: &[u8]) -> Option<(String, String, String)> {
    let mut parts = rest.split(|b| *b == keys::TERM_END);
    let a = std::str::from_utf8(parts.next()?).ok()?.to_string();
    let n = std::str::from_utf8(parts.next()?).ok()?.to_string();
    let b = std::str::from_utf8(parts.next()?).ok()?.to_string();
    Some((a, n, b))
}

/// The stored relations (fields and API) that `filter` admits, read through the narrowest index.
fn stored(ctx: &Ctx<'_>, filter: &Filter) -> Result<Vec<(Relation, bool)>> {
    let mut out = Vec::new();
    let from_field = |v: &[u8]| v == FROM_FIELD;
    if let Some(sources) = &filter.sources {
        for s in sources {
            let prefix = keys::relations_of(s);
            for (k, v) in ctx.scan_prefix(&prefix)? {
                if let Some((_, name, target)) = split3(&k[keys::RELATION_PREFIX.len()..]) {
                    out.push((
                        Relation {
                            name,
                            source: s.clone(),
                            target,
                        },
                        from_field(&v),
                    ));
                }
            }
        }
    } else if let Some(targets) = &filter.targets {
        for t in targets {
            for (k, _) in ctx.scan_prefix(&keys::relations_to(t))? {
                if let Some((_, name, source)) = split3(&k[b"L:t:".len()..]) {
                    let v = ctx.get(&keys::relation(&source, &name, t))?;
                    out.push((
                        Relation {
                            name,
                            source,
                            target: t.clone(),
                        },
                        v.as_deref().is_some_and(from_field),
                    ));
                }
            }
        }
    } else {
        for (k, v) in ctx.scan_prefix(keys::RELATION_PREFIX)? {
            if let Some((source, name, target)) = split3(&k[keys::RELATION_PREFIX.len()..]) {
                out.push((
                    Relation {
                        name,
                        source,
                        target,
                    },
                    from_field(&v),
                ));
            }
        }
    }
    out.retain(|(r, _)| filter.admits(r));
    Ok(out)
}

/// The uids `uid` links to inside its blocks and rich text (the catalog's links of it, without
/// its `relatedItems`, which the catalog counts as links too); empty when it is gone.
fn content_links(ctx: &Ctx<'_>, uid: &str) -> Result<BTreeSet<String>> {
    let Some(mut obj) = tree::load(ctx, uid)? else {
        return Ok(BTreeSet::new());
    };
    obj.fields.remove(RELATED_ITEMS);
    crate::catalog::links_of(ctx, &obj)
}

/// The links inside blocks and rich text (`isReferencing`) that `filter` admits, from the
/// catalog's link index.
fn block_links(ctx: &Ctx<'_>, filter: &Filter) -> Result<Vec<Relation>> {
    if filter.name.as_deref().is_some_and(|n| n != IS_REFERENCING) {
        return Ok(Vec::new());
    }
    let mut pairs: Vec<(String, String)> = Vec::new();
    if let Some(targets) = &filter.targets {
        for t in targets {
            for s in crate::catalog::linking_to(ctx, t)? {
                pairs.push((s, t.clone()));
            }
        }
    } else {
        for (k, _) in ctx.scan_prefix(keys::BACKLINK_PREFIX)? {
            let rest = &k[keys::BACKLINK_PREFIX.len()..];
            let mut parts = rest.splitn(2, |b| *b == keys::TERM_END);
            let (Some(t), Some(s)) = (parts.next(), parts.next()) else {
                continue;
            };
            if let (Ok(t), Ok(s)) = (std::str::from_utf8(t), std::str::from_utf8(s)) {
                pairs.push((s.to_string(), t.to_string()));
            }
        }
    }
    let mut links: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut out = Vec::new();
    for (source, target) in pairs {
        let r = Relation {
            name: IS_REFERENCING.into(),
            source,
            target,
        };
        if !filter.admits(&r) {
            continue;
        }
        if !links.contains_key(&r.source) {
            let l = content_links(ctx, &r.source)?;
            links.insert(r.source.clone(), l);
        }
        if links.get(&r.source).is_some_and(|l| l.contains(&r.target)) {
            out.push(r);
        }
    }
    Ok(out)
}

/// Every relation `filter` admits, in name, source, target order, each with its objects looked
/// up (without permission checks), and whether it is a link inside the source's blocks that
/// only editing the blocks removes.
pub fn find(ctx: &Ctx<'_>, filter: &Filter) -> Result<Vec<(Resolved, bool)>> {
    let mut all: BTreeMap<Relation, bool> = BTreeMap::new();
    for (r, _) in stored(ctx, filter)? {
        all.insert(r, false);
    }
    for r in block_links(ctx, filter)? {
        all.entry(r).or_insert(true);
    }
    let mut cache: BTreeMap<String, Option<ContentRecord>> = BTreeMap::new();
    let mut load = |ctx: &Ctx<'_>, uid: &str| -> Result<Option<ContentRecord>> {
        if let Some(r) = cache.get(uid) {
            return Ok(r.clone());
        }
        let r = tree::load(ctx, uid)?;
        cache.insert(uid.to_string(), r.clone());
        Ok(r)
    };
    let mut out = Vec::new();
    for (relation, in_blocks) in all {
        let source = load(ctx, &relation.source)?;
        let target = load(ctx, &relation.target)?;
        out.push((
            Resolved {
                relation,
                source,
                target,
            },
            in_blocks,
        ));
    }
    Ok(out)
}

/// The relations `filter` admits whose source and target both exist and that the caller may
/// view both ends of, grouped by name; at most `max` in all when given.
pub fn list(
    ctx: &Ctx<'_>,
    filter: &Filter,
    max: Option<usize>,
) -> Result<BTreeMap<String, Vec<(ContentRecord, ContentRecord)>>> {
    let mut out: BTreeMap<String, Vec<(ContentRecord, ContentRecord)>> = BTreeMap::new();
    let mut count = 0usize;
    for (r, _) in find(ctx, filter)? {
        let (Some(source), Some(target)) = (r.source, r.target) else {
            continue;
        };
        if max.is_some_and(|m| count >= m) {
            break;
        }
        count += 1;
        if !ctx.permitted(Permission::View, &source)?
            || !ctx.permitted(Permission::View, &target)?
        {
            continue;
        }
        out.entry(r.relation.name)
            .or_default()
            .push((source, target));
    }
    Ok(out)
}

/// A broken relation: its source, and the uid of the target that is gone.
#[derive(Debug, Clone)]
pub struct Broken {
    /// The source object.
    pub source: ContentRecord,
    /// The uid of the missing target.
    pub target: String,
}

/// The broken relations (source present, target gone) whose source the caller may view, by
/// name.
pub fn broken(ctx: &Ctx<'_>) -> Result<BTreeMap<String, Vec<Broken>>> {
    let mut out: BTreeMap<String, Vec<Broken>> = BTreeMap::new();
    for (r, _) in find(ctx, &Filter::default())? {
        if let (Some(source), None) = (r.source, r.target) {
            if ctx.permitted(Permission::View, &source)? {
                out.entry(r.relation.name).or_default().push(Broken {
                    source,
                    target: r.relation.target,
                });
            }
        }
    }
    Ok(out)
}

/// How many relations each name has: the valid ones and the broken ones (Plone's relation
/// statistics: counted over the whole site).
pub fn stats(ctx: &Ctx<'_>) -> Result<(BTreeMap<String, u64>, BTreeMap<String, u64>)> {
    let mut valid = BTreeMap::new();
    let mut broken = BTreeMap::new();
    for (r, _) in find(ctx, &Filter::default())? {
        match (&r.source, &r.target) {
            (Some(_), Some(_)) => *valid.entry(r.relation.name).or_insert(0) += 1,
            (Some(_), None) => *broken.entry(r.relation.name).or_insert(0) += 1,
            _ => {}
        }
    }
    Ok((valid, broken))
}

/// Store relation `r` in both directions and announce it ([`Event::RelationChanged`]).
fn put(ctx: &mut Ctx<'_>, r: &Relation, value: &[u8]) -> Result<()> {
    ctx.put(&keys::relation(&r.source, &r.name, &r.target), value)?;
    ctx.put(
        &keys::relation_by_target(&r.target, &r.name, &r.source),
        b"",
    )?;
    announce(ctx, r, true);
    Ok(())
}

/// Drop relation `r` in both directions and announce it ([`Event::RelationChanged`]).
fn remove(ctx: &mut Ctx<'_>, r: &Relation) -> Result<()> {
    ctx.delete(&keys::relation(&r.source, &r.name, &r.target))?;
    ctx.delete(&keys::relation_by_target(&r.target, &r.name, &r.source))?;
    announce(ctx, r, false);
    Ok(())
}

fn announce(ctx: &mut Ctx<'_>, r: &Relation, added: bool) {
    ctx.emit(Event::RelationChanged {
        source: r.source.clone(),
        name: r.name.clone(),
        target: r.target.clone(),
        added,
    });
}

/// The uids in `obj`'s `relatedItems` field.
fn related_uids(obj: &ContentRecord) -> Vec<String> {
    obj.fields
        .get(RELATED_ITEMS)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Write the field `name` of `source` through the content edit (as [`edit_related`]).
fn edit_field(
    ctx: &mut Ctx<'_>,
    source: &mut ContentRecord,
    name: &str,
    value: Value,
) -> Result<()> {
    let mut fields = Map::new();
    fields.insert(name.into(), value);
    operations::edit(
        ctx,
        source,
        Edit {
            locks: Locks::Honour(None),
            type_name: None,
            fields,
            rename: None,
        },
    )
}

/// Write `relatedItems` of `source` through the content edit (the same one `PATCH` runs: lock,
/// permission-free here, validation, versioning, events).
fn edit_related(ctx: &mut Ctx<'_>, source: &mut ContentRecord, uids: Vec<String>) -> Result<()> {
    edit_field(ctx, source, RELATED_ITEMS, json!(uids))
}

/// Add the relation `name` from `source` to `target` (the caller must be allowed to edit the
/// source). `relatedItems` goes into the source's field (as an edit of it), as does the name of
/// a Relation Choice field of the source's type (the target replaces the object it held); other
/// names are kept in the index. Adding a relation that exists changes nothing.
pub fn create(
    ctx: &mut Ctx<'_>,
    name: &str,
    source: &mut ContentRecord,
    target: &ContentRecord,
) -> Result<()> {
    check_name(name)?;
    ctx.require(Permission::Modify, source)?;
    if name == RELATED_ITEMS {
        if ctx.type_of(source)?.field(RELATED_ITEMS).is_none() {
            return Err(EngineError::bad_request(format!(
                "'{}' ({}) has no field 'relatedItems'",
                ctx.url(&source.path),
                source.type_name
            )));
        }
        let mut uids = related_uids(source);
        if !uids.contains(&target.uid) {
            uids.push(target.uid.clone());
            edit_related(ctx, source, uids)?;
        }
        return Ok(());
    }
    if relation_choice_fields(ctx, source)?
        .iter()
        .any(|n| n == name)
    {
        // the field holds one object: the new one replaces it
        return edit_field(ctx, source, name, json!(target.uid));
    }
    let r = Relation {
        name: name.into(),
        source: source.uid.clone(),
        target: target.uid.clone(),
    };
    if ctx
        .get(&keys::relation(&r.source, &r.name, &r.target))?
        .is_none()
    {
        put(ctx, &r, FROM_API)?;
    }
    Ok(())
}

/// Remove the relation `r` (the caller must be allowed to edit its source, when the source
/// exists). A `relatedItems` relation leaves the source's field (as an edit of it), a Relation
/// Choice's empties its field; a link inside
/// the source's blocks is refused (409: edit the blocks); a relation that does not exist is a
/// 422.
pub fn delete(ctx: &mut Ctx<'_>, r: &Relation) -> Result<()> {
    let source = tree::load(ctx, &r.source)?;
    if let Some(s) = &source {
        ctx.require(Permission::Modify, s)?;
    }
    let stored = ctx.get(&keys::relation(&r.source, &r.name, &r.target))?;
    let in_blocks = r.name == IS_REFERENCING && content_links(ctx, &r.source)?.contains(&r.target);
    match (stored.as_deref(), source) {
        (Some(FROM_FIELD), Some(mut source)) if r.name == RELATED_ITEMS => {
            let uids = related_uids(&source)
                .into_iter()
                .filter(|u| *u != r.target)
                .collect();
            edit_related(ctx, &mut source, uids)
        }
        // a Relation Choice field: emptied
        (Some(FROM_FIELD), Some(mut source)) => edit_field(ctx, &mut source, &r.name, Value::Null),
        (Some(_), _) => remove(ctx, r),
        (None, Some(source)) if in_blocks => Err(EngineError::Conflict(format!(
            "'{}' links to the target inside its blocks; remove the link by editing the blocks",
            ctx.url(&source.path)
        ))),
        _ => Err(EngineError::Unprocessable(format!(
            "There is no relation '{}' from '{}' to '{}'; nothing was changed",
            r.name, r.source, r.target
        ))),
    }
}

/// The object a client names by uid or by site path (`/a/b`; the site's URL in front is
/// accepted too), when there is one.
pub fn resolve(ctx: &Ctx<'_>, reference: &str) -> Result<Option<ContentRecord>> {
    let reference = reference.trim();
    let path = reference
        .strip_prefix(ctx.base_url.as_str())
        .filter(|p| p.is_empty() || p.starts_with('/'))
        .unwrap_or(reference);
    if path.starts_with('/') {
        let path = path.trim_end_matches('/');
        return tree::at_path(ctx, path);
    }
    if path.is_empty() || !path.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Ok(None);
    }
    tree::load(ctx, path)
}

/// The uids of the objects the caller may view that `query` names: a site path (`/a/b`: the
/// object and everything below it), else words of their text (as `SearchableText`).
pub fn matching(ctx: &Ctx<'_>, query: &str) -> Result<Vec<String>> {
    let query = query.trim();
    let q = if query.starts_with('/') {
        crate::catalog::Query {
            paths: vec![query.trim_end_matches('/').to_string()],
            ..Default::default()
        }
    } else {
        crate::catalog::Query {
            criteria: vec![crate::catalog::Criterion::Text(
                crate::catalog::Index::SearchableText,
                query.to_string(),
            )],
            ..Default::default()
        }
    };
    Ok(crate::catalog::search(ctx, &q)?
        .into_iter()
        .map(|e| e.uid)
        .collect())
}

/// The relations an object's fields make, as `(name, target)`: each uid of its `relatedItems`,
/// and the object each Relation Choice field of its type holds (named after the field).
fn field_relations(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<BTreeSet<(String, String)>> {
    let mut out: BTreeSet<(String, String)> = related_uids(obj)
        .into_iter()
        .map(|t| (RELATED_ITEMS.to_string(), t))
        .collect();
    for f in ctx
        .type_of(obj)?
        .fields
        .iter()
        .filter(|f| f.kind == FieldKind::RelationChoice)
    {
        if let Some(Value::String(target)) = obj.fields.get(&f.name) {
            out.insert((f.name.clone(), target.clone()));
        }
    }
    Ok(out)
}

/// The names of the Relation Choice fields of `obj`'s type.
fn relation_choice_fields(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Vec<String>> {
    Ok(ctx
        .type_of(obj)?
        .fields
        .iter()
        .filter(|f| f.kind == FieldKind::RelationChoice)
        .map(|f| f.name.clone())
        .collect())
}

/// Bring the relations of `uid` that come from its fields in line with them (no object: none).
fn sync_field(ctx: &mut Ctx<'_>, uid: &str) -> Result<()> {
    let wanted: BTreeSet<(String, String)> = match tree::load(ctx, uid)? {
        Some(obj) => field_relations(ctx, &obj)?,
        None => BTreeSet::new(),
    };
    let prefix = keys::relations_of(uid);
    let mut have = BTreeSet::new();
    for (k, v) in ctx.scan_prefix(&prefix)? {
        if v != FROM_FIELD {
            continue;
        }
        let mut parts = k[prefix.len()..].splitn(2, |b| *b == keys::TERM_END);
        let name = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
        let target = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
        let pair = (name, target);
        if !wanted.contains(&pair) {
            remove(
                ctx,
                &Relation {
                    name: pair.0.clone(),
                    source: uid.into(),
                    target: pair.1.clone(),
                },
            )?;
        }
        have.insert(pair);
    }
    for (name, target) in wanted.difference(&have) {
        put(
            ctx,
            &Relation {
                name: name.clone(),
                source: uid.into(),
                target: target.clone(),
            },
            FROM_FIELD,
        )?;
    }
    Ok(())
}

/// Drop every relation from `uid` (an object removed for good).
fn drop_source(ctx: &mut Ctx<'_>, uid: &str) -> Result<()> {
    for (r, _) in stored(
        ctx,
        &Filter {
            sources: Some(vec![uid.to_string()]),
            ..Filter::default()
        },
    )? {
        remove(ctx, &r)?;
    }
    Ok(())
}

/// Rebuild the index of `relatedItems` relations from every object's field (`POST
/// @relations/rebuild`); with `flush`, also drop the relations added through the API whose source
/// or target is gone. Returns how many objects were read.
pub fn rebuild(ctx: &mut Ctx<'_>, flush: bool) -> Result<usize> {
    let root = tree::root(ctx)?;
    let mut n = 0;
    let mut stack = vec![root];
    while let Some(obj) = stack.pop() {
        sync_field(ctx, &obj.uid)?;
        n += 1;
        stack.extend(tree::children(ctx, &obj.uid, 0, usize::MAX)?);
    }
    if flush {
        for (r, from_field) in stored(ctx, &Filter::default())? {
            if !from_field
                && (tree::load(ctx, &r.source)?.is_none() || tree::load(ctx, &r.target)?.is_none())
            {
                remove(ctx, &r)?;
            }
        }
    }
    Ok(n)
}

/// Keeps the `relatedItems` relations in line with the objects' fields: an object added, edited
/// (its `relatedItems`), or restored from the recycle bin is read again; an object removed for
/// good takes its relations with it. Relations *to* a removed object stay, broken.
pub struct RelationsSubscriber;

impl Subscriber for RelationsSubscriber {
    fn name(&self) -> &'static str {
        "relations"
    }

    fn on_event(&self, ctx: &mut Ctx<'_>, event: &Event) -> Result<()> {
        match event {
            Event::Added { uid, .. } | Event::Restored { uid, .. } => sync_field(ctx, uid),
            Event::Modified { uid, fields, .. } => {
                let touched = fields.iter().any(|f| f == RELATED_ITEMS)
                    || match tree::load(ctx, uid)? {
                        Some(obj) => relation_choice_fields(ctx, &obj)?
                            .iter()
                            .any(|n| fields.contains(n)),
                        None => false,
                    };
                if touched {
                    sync_field(ctx, uid)
                } else {
                    Ok(())
                }
            }
            Event::Removed { uid, .. } => drop_source(ctx, uid),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Engine, EngineOptions, MemStore, SiteSetup};

    #[test]
    fn rebuild_indexes_related_items_stored_before_the_index() {
        let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
        e.create_site(&SiteSetup::new("secret")).unwrap();
        e.with_write(|ctx| {
            // The subscriber has not run yet (events are delivered after this write), so the
            // index is as a site from before it has it.
            let ty = ctx.types()?.require("Page")?;
            let mut root = tree::root(ctx)?;
            let mut a = tree::new_record(ctx, &ty, "a", "admin", Map::new());
            tree::insert(ctx, &mut root, &mut a)?;
            let mut fields = Map::new();
            fields.insert(RELATED_ITEMS.into(), json!([a.uid]));
            let mut root = tree::root(ctx)?;
            let mut b = tree::new_record(ctx, &ty, "b", "admin", fields);
            tree::insert(ctx, &mut root, &mut b)?;
            assert_eq!(stats(ctx)?.0.get(RELATED_ITEMS), None);
            rebuild(ctx, false)?;
            assert_eq!(stats(ctx)?.0.get(RELATED_ITEMS), Some(&1));
            let found = find(ctx, &Filter::default())?;
            assert_eq!(found.len(), 1);
            assert_eq!(found[0].0.relation.source, b.uid);
            assert_eq!(found[0].0.relation.target, a.uid);
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("comprisesComponentPart").is_ok());
        assert!(check_name("").is_err());
        assert!(check_name("a b").is_err());
        assert!(check_name(&"x".repeat(101)).is_err());
    }
}
