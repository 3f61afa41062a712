//! Content objects as JSON: the full representation (GET, POST and PATCH answers) and the summaries
//! used in listings (`items`, `parent`, `previous_item`/`next_item`).

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use super::batching::Batch;
use super::query::Query;
use super::summaries::{self, ItemJson, ItemKeys, JsonOut};
use crate::catalog::StoredEntry;
use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::model::fields::{FieldDef, FieldKind};
use crate::core::model::{language, ContentRecord, ContentType};
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// How a listing of children was asked for.
pub struct ListingRequest<'q> {
    /// The window.
    pub batch: Batch,
    /// The decoded query (for batching links and `metadata_fields`).
    pub query: &'q Query,
    /// The raw query string (for the batching `@id`).
    pub raw_query: &'q str,
    /// The route, when components may be expanded (`?expand=...`).
    pub route: Option<&'q super::Route>,
}

/// The `items` of a Collection: its query's results, sorted and limited as it says, batched as
/// the request asks (`b_start`/`b_size`), as `items`, `items_total` and `batching`.
fn collection_items(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    listing: &ListingRequest<'_>,
    out: &mut Map<String, Value>,
) -> Result<()> {
    let (page, total) = crate::catalog::querystring::collection_page(
        ctx,
        obj,
        listing.batch.start,
        listing.batch.size,
    )?;
    let fields = listing.query.all("metadata_fields");
    let keys = ItemKeys::new(&fields);
    let mut items = Vec::new();
    for e in &page {
        items.push(ItemJson::new(ctx, e.view()?, &keys)?.to_value()?);
    }
    out.insert("items".into(), Value::Array(items));
    out.insert("items_total".into(), json!(total));
    let url = ctx.url(&obj.path);
    if let Some(b) = listing
        .batch
        .links(&url, listing.raw_query, listing.query, total)
    {
        out.insert("batching".into(), serde_json::to_value(b)?);
    }
    Ok(())
}

/// The full representation of `obj`.
pub fn full(ctx: &Ctx<'_>, obj: &ContentRecord, listing: &ListingRequest<'_>) -> Result<Value> {
    let ty = ctx.type_of(obj)?;
    members(ctx, obj, &ty, listing, true, None)?.into_value()
}

/// The full representation of `obj` as the body of an answer: what [`full`] gives, written out
/// without building it as a tree first (the record's field values are written from the record;
/// a folder's `items` straight from the children's catalog entries, [`super::summaries`]).
pub fn full_response(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    listing: &ListingRequest<'_>,
    status: u16,
) -> Result<crate::core::http::Response> {
    let ty = ctx.type_of(obj)?;
    let mut items = None;
    let members = members(ctx, obj, &ty, listing, true, Some(&mut items))?;
    let mut out = JsonOut::new(items.as_ref().map_or(0, Vec::len) + 4096);
    members.write(&mut out, items.as_deref())?;
    Ok(crate::core::http::Response {
        status,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: out.buf,
        stream: None,
        lines: None,
    })
}

/// The full representation of `obj` without `items`, `items_total` and `batching` (no child is
/// read): the shape of the `navroot` object.
pub fn full_without_items(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    listing: &ListingRequest<'_>,
) -> Result<Value> {
    let ty = ctx.type_of(obj)?;
    members(ctx, obj, &ty, listing, false, None)?.into_value()
}

/// The members of a JSON object being built, in the order they were set; a name set twice keeps
/// its last value (as inserting into a [`Map`] does). Values are borrowed where they are the
/// record's own; some are JSON text, written where they were made.
struct Members<'a>(Vec<(Cow<'a, str>, Member<'a>)>);

/// The value of one member.
enum Member<'a> {
    /// A value, the record's own (borrowed) or made for the answer.
    Value(Cow<'a, Value>),
    /// A string, borrowed.
    Str(&'a str),
    /// The value's JSON text.
    Text(Vec<u8>),
}

impl<'a> Members<'a> {
    fn set(&mut self, name: impl Into<Cow<'a, str>>, value: Value) {
        self.0.push((name.into(), Member::Value(Cow::Owned(value))));
    }

    fn set_ref(&mut self, name: impl Into<Cow<'a, str>>, value: &'a Value) {
        self.0
            .push((name.into(), Member::Value(Cow::Borrowed(value))));
    }

    fn set_str(&mut self, name: &'a str, value: &'a str) {
        self.0.push((Cow::Borrowed(name), Member::Str(value)));
    }

    fn set_text(&mut self, name: &'a str, text: Vec<u8>) {
        self.0.push((Cow::Borrowed(name), Member::Text(text)));
    }

    /// The positions of the members in name order (the order a [`Map`] keeps), each name once:
    /// the last set.
    fn order(&self) -> Vec<usize> {
        let names = &self.0;
        let mut order: Vec<(u64, usize)> = names
            .iter()
            .enumerate()
            .map(|(i, (name, _))| (name_prefix(name), i))
            .collect();
        order.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| names[a.1].0.cmp(&names[b.1].0))
                .then(a.1.cmp(&b.1))
        });
        let mut out: Vec<usize> = Vec::with_capacity(order.len());
        for (_, i) in order {
            match out.last_mut() {
                Some(last) if names[*last].0 == names[i].0 => *last = i,
                _ => out.push(i),
            }
        }
        out
    }

    /// The members as a JSON object into `out`; `items`, when given, is the JSON text of the
    /// member `items` (which holds `null` here, keeping its place in the order).
    fn write(&self, out: &mut JsonOut, items: Option<&[u8]>) -> Result<()> {
        out.open();
        for i in self.order() {
            let (name, value) = &self.0[i];
            out.any_key(name)?;
            match (value, items) {
                (_, Some(items)) if name == "items" => out.buf.extend_from_slice(items),
                (Member::Value(v), _) => out.json(v)?,
                (Member::Str(v), _) => out.string(v)?,
                (Member::Text(t), _) => out.buf.extend_from_slice(t),
            }
        }
        out.close();
        Ok(())
    }

    fn into_value(self) -> Result<Value> {
        let mut map = Map::new();
        for (k, v) in self.0 {
            let v = match v {
                Member::Value(v) => v.into_owned(),
                Member::Str(v) => Value::String(v.to_string()),
                Member::Text(t) => serde_json::from_slice(&t)?,
            };
            map.insert(k.into_owned(), v);
        }
        Ok(Value::Object(map))
    }
}

/// The first eight bytes of `name` as a number (zeros after a shorter name): names whose
/// numbers differ are in the order of their numbers (byte order, `str`'s order), so most
/// comparisons of the members' names are one of integers.
fn name_prefix(name: &str) -> u64 {
    let mut b = [0u8; 8];
    let n = name.len().min(8);
    b[..n].copy_from_slice(&name.as_bytes()[..n]);
    u64::from_be_bytes(b)
}

/// The `@components` member of `obj` (at `url`) as JSON text: each component's link
/// (`{"@id": "<url>/@<name>"}`) or its expanded answer ([`super::expansion::components`]).
fn components_text(
    ctx: &Ctx<'_>,
    listing: &ListingRequest<'_>,
    obj: &ContentRecord,
    url: &str,
) -> Result<Vec<u8>> {
    let components = super::expansion::components(ctx, listing.route, obj)?;
    let mut out = JsonOut::new(components.len() * (url.len() + 40));
    let plain_url = !summaries::needs_escape(url.as_bytes());
    out.open();
    for (name, expanded) in &components {
        out.any_key(name)?;
        match expanded {
            Some(v) => out.json(v)?,
            None if plain_url && !summaries::needs_escape(name.as_bytes()) => {
                out.buf.extend_from_slice(b"{\"@id\":\"");
                out.buf.extend_from_slice(url.as_bytes());
                out.buf.extend_from_slice(b"/@");
                out.buf.extend_from_slice(name.as_bytes());
                out.buf.extend_from_slice(b"\"}");
            }
            None => {
                out.open();
                out.key("@id");
                out.string(&format!("{url}/@{name}"))?;
                out.close();
            }
        }
    }
    out.close();
    Ok(out.buf)
}

/// A time as the JSON text of [`iso`].
fn iso_text(t: &chrono::DateTime<chrono::Utc>) -> Result<Vec<u8>> {
    use chrono::Timelike;
    let mut buf = Vec::with_capacity(40);
    match super::time::iso_bytes(t.timestamp(), t.nanosecond()) {
        Some(b) => {
            buf.push(b'"');
            buf.extend_from_slice(&b);
            buf.push(b'"');
        }
        None => summaries::write_string(&mut buf, &iso(t))?,
    }
    Ok(buf)
}

/// The members of the representation. With `written`, a folder's `items` may come as JSON text
/// in it instead (the members then hold `null` under `items`, keeping its place in the order).
fn members<'a>(
    ctx: &Ctx<'_>,
    obj: &'a ContentRecord,
    ty: &'a ContentType,
    listing: &ListingRequest<'_>,
    with_items: bool,
    written: Option<&mut Option<Vec<u8>>>,
) -> Result<Members<'a>> {
    let url = ctx.url(&obj.path);
    let mut out = Members(Vec::with_capacity(ty.fields.len() + 32));

    out.set_text("@components", components_text(ctx, listing, obj, &url)?);

    for f in &ty.fields {
        let stored = if f.transient {
            None
        } else {
            obj.fields.get(&f.name)
        };
        match (f.kind, stored) {
            (FieldKind::Language, Some(Value::String(code))) => {
                out.set(f.name.as_str(), language::token_title(code))
            }
            // Served as stored unless a link in them is rewritten (no copy).
            (FieldKind::Blocks, Some(blocks))
                if !crate::content::links::has_stored_links(blocks) =>
            {
                out.set_ref(f.name.as_str(), blocks)
            }
            (FieldKind::Blocks, Some(blocks)) => {
                let mut blocks = blocks.clone();
                crate::content::links::to_public(ctx, &mut blocks)?;
                out.set(f.name.as_str(), blocks)
            }
            (FieldKind::File | FieldKind::Image, Some(value)) => out.set(
                f.name.as_str(),
                super::file_fields::field_json(&url, &f.name, f.kind, value),
            ),
            (FieldKind::Richtext, Some(value)) => out.set(f.name.as_str(), richtext_output(value)),
            // never read back, not even as a hash
            (FieldKind::Password, _) => out.set(f.name.as_str(), Value::Null),
            (FieldKind::Choice | FieldKind::MultipleChoice, Some(value)) => {
                out.set(f.name.as_str(), choice_output(f, value))
            }
            (FieldKind::RelationChoice, Some(Value::String(uid))) => {
                out.set(f.name.as_str(), relation_output(ctx, uid)?)
            }
            (_, Some(value)) => out.set_ref(f.name.as_str(), value),
            (kind, None) => {
                let value = match (kind, f.default_value()) {
                    (FieldKind::Language, Value::String(code)) => language::token_title(&code),
                    (FieldKind::Blocks, mut blocks) => {
                        crate::content::links::to_public(ctx, &mut blocks)?;
                        blocks
                    }
                    (FieldKind::File | FieldKind::Image, value) => {
                        super::file_fields::field_json(&url, &f.name, f.kind, &value)
                    }
                    (FieldKind::Choice | FieldKind::MultipleChoice, value) => {
                        choice_output(f, &value)
                    }
                    (_, value) => value,
                };
                out.set(f.name.as_str(), value)
            }
        }
    }
    if obj.fields.get("creators").is_none() {
        out.set("creators", json!([obj.owner]));
    }

    out.set("@id", Value::String(url.clone()));
    out.set_str("@type", &obj.type_name);
    out.set_str("UID", &obj.uid);
    out.set_str("id", &obj.id);
    out.set_text("created", iso_text(&obj.created)?);
    out.set_text("modified", iso_text(&obj.modified)?);
    out.set_str("owner", &obj.owner);
    out.set("is_folderish", json!(ty.folderish));
    let nick = ctx.profile().is_nick();
    match obj.fields.get("layout") {
        Some(layout) => out.set_ref("layout", layout),
        // Nick names every type's default view `view`.
        None if nick => out.set("layout", json!("view")),
        None => out.set("layout", json!(ty.layout)),
    }
    if nick {
        out.set("review_state", nick_review_state(obj));
        if obj.is_root() {
            out.set("effective", nick_effective(obj));
        }
    } else {
        match &obj.review_state {
            Some(state) => out.set_str("review_state", state),
            None => out.set("review_state", Value::Null),
        }
    }
    let tr = crate::site::i18n::Translator::for_request(ctx)?;
    out.set("type_title", json!(tr.t(&ty.title)));
    let lock = crate::content::locking::current(ctx, obj)?;
    out.set_text(
        "lock",
        serde_json::to_vec(&LockInfo::new(ctx, lock.as_ref()))?,
    );
    if !obj.is_root() {
        out.set("version", json!("current"));
    }
    if ty.field("changeNote").is_some() {
        out.set("versioning_enabled", json!(true));
    }
    out.set("working_copy", Value::Null);
    out.set("working_copy_of", Value::Null);

    let parent = tree::parent_for_representation(ctx, obj)?;
    out.set(
        "parent",
        match &parent {
            Some(p) => summary(ctx, p, &[])?,
            None => json!({}),
        },
    );
    if parent.is_some() {
        let (prev, next) = neighbours(ctx, obj, parent.as_ref())?;
        out.set("previous_item", prev);
        out.set("next_item", next);
    }

    if with_items
        && ty
            .field("query")
            .is_some_and(|f| f.kind == FieldKind::Querystring)
    {
        let mut items = Map::new();
        collection_items(ctx, obj, listing, &mut items)?;
        for (k, v) in items {
            out.set(k, v);
        }
    }
    if ty.folderish && with_items {
        let fields = listing.query.all("metadata_fields");
        // Only `getObjSize` measures every field value; other summaries need a few of them.
        let whole = fields.iter().any(|f| *f == "getObjSize" || *f == "_all");
        let total = match written {
            // Summaries from catalog entries write what `summary` builds from the entry's
            // record (`getObjSize` and Markdown read more of the object: those take the
            // records).
            Some(written) if !whole && !fields.contains(&summaries::MARKDOWN) => {
                let (items, total) = visible_entries(ctx, obj, listing.batch)?;
                let keys = ItemKeys::new(&fields);
                let mut w = JsonOut::new(64 + 512 * items.len());
                w.buf.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        w.buf.push(b',');
                    }
                    match item {
                        Listed::Entry(e) => ItemJson::new(ctx, e.view()?, &keys)?.write(&mut w)?,
                        Listed::Record(r) => w.value(&summary(ctx, r, &fields)?)?,
                    }
                }
                w.buf.push(b']');
                *written = Some(w.buf);
                out.set("items", Value::Null);
                total
            }
            _ => {
                let (items, total) = visible_children(ctx, obj, listing.batch, whole)?;
                let items: Result<Vec<Value>> =
                    items.iter().map(|c| summary(ctx, c, &fields)).collect();
                out.set("items", Value::Array(items?));
                total
            }
        };
        out.set("items_total", json!(total));
        if let Some(b) = listing
            .batch
            .links(&url, listing.raw_query, listing.query, total)
        {
            out.set("batching", serde_json::to_value(b)?);
        }
    }
    Ok(out)
}

/// The children of `obj` the caller may view, within `batch`, and how many there are in all.
/// Unless `whole`, the children are decoded for a listing only
/// ([`crate::core::model::ContentRecord::from_json_for_listing`]).
pub fn visible_children(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    batch: Batch,
    whole: bool,
) -> Result<(Vec<ContentRecord>, usize)> {
    if sees_everything(ctx) {
        let kids = if whole {
            tree::children(ctx, &obj.uid, batch.start, batch.size)?
        } else {
            crate::catalog::child_entries(ctx, &obj.uid, batch.start, batch.size)?
                .into_iter()
                .map(|(uid, entry)| listing_record(ctx, &uid, entry))
                .collect::<Result<Vec<_>>>()?
        };
        return Ok((kids, obj.child_count as usize));
    }
    let decode = |bytes: &[u8]| -> Result<ContentRecord> {
        Ok(if whole {
            serde_json::from_slice(bytes)?
        } else {
            ContentRecord::from_json_for_listing(bytes)?
        })
    };
    visible_page(ctx, obj, batch, |uid, entry| match (entry, whole) {
        (Some(e), false) => e.record(),
        _ => decode(&tree::load_raw(ctx, uid)?.ok_or_else(|| missing(uid))?),
    })
}

/// The children of `obj` a caller who does not see everything may view, within `batch`, each
/// made by `item` from its uid and catalog entry, and how many there are in all. Every child is
/// checked, to count the visible ones: by the `allowedRolesAndUsers` of its catalog entry (the
/// front of a small binary value), else from its record. Only those on the page are made. The
/// children share their ancestors: `obj` and its own. An anonymous caller's total is the
/// catalog's count ([`crate::catalog::anonymous_child_count`]), so only the children up to the
/// end of the page are read.
fn visible_page<T>(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    batch: Batch,
    mut item: impl FnMut(&str, Option<StoredEntry>) -> Result<T>,
) -> Result<(Vec<T>, usize)> {
    let mut seen = 0;
    let mut page = Vec::new();
    let mut ancestors = None;
    let tokens = ctx.principal.search_tokens();
    let counted = crate::catalog::anonymous_tokens(&tokens)
        .then(|| crate::catalog::anonymous_child_count(ctx, &obj.uid))
        .transpose()?;
    let end = batch.start.saturating_add(batch.size);
    let mut read = 0;
    loop {
        // Without a count, every child (to count them); with one, those up to the end of the
        // page if all are visible, and more while some were not.
        let want = match counted {
            None => usize::MAX,
            Some(total) if seen >= total.min(end) => break,
            Some(_) => end.saturating_sub(seen).max(16),
        };
        let kids = crate::catalog::child_entries(ctx, &obj.uid, read, want)?;
        let got = kids.len();
        read += got;
        for (uid, entry) in kids {
            let on_page = seen >= batch.start && page.len() < batch.size;
            let visible = match &entry {
                Some(e) => e.visible_to(&tokens)?,
                None => {
                    let bytes = tree::load_raw(ctx, &uid)?.ok_or_else(|| missing(&uid))?;
                    let head = ContentRecord::from_json_for_permissions(&bytes)?;
                    ctx.permitted_within(Permission::View, &head, &mut ancestors)?
                }
            };
            if visible {
                if on_page {
                    page.push(item(&uid, entry)?);
                }
                seen += 1;
            }
        }
        if got < want || counted.is_none() {
            break;
        }
    }
    Ok((page, counted.unwrap_or(seen)))
}

/// A child in a listing: its catalog entry, or (without one) its record decoded for a listing.
enum Listed {
    Entry(StoredEntry),
    Record(Box<ContentRecord>),
}

/// The children of `obj` the caller may view, within `batch`, as their catalog entries, and how
/// many there are in all (what [`visible_children`] finds, not decoded).
fn visible_entries(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    batch: Batch,
) -> Result<(Vec<Listed>, usize)> {
    let listed = |uid: &str, entry: Option<StoredEntry>| -> Result<Listed> {
        Ok(match entry {
            Some(e) => Listed::Entry(e),
            None => Listed::Record(Box::new(ContentRecord::from_json_for_listing(
                &tree::load_raw(ctx, uid)?.ok_or_else(|| missing(uid))?,
            )?)),
        })
    };
    if sees_everything(ctx) {
        let kids = crate::catalog::child_entries(ctx, &obj.uid, batch.start, batch.size)?
            .into_iter()
            .map(|(uid, entry)| listed(&uid, entry))
            .collect::<Result<Vec<_>>>()?;
        return Ok((kids, obj.child_count as usize));
    }
    visible_page(ctx, obj, batch, listed)
}

fn missing(uid: &str) -> EngineError {
    EngineError::Internal(format!("child {uid} is listed but missing"))
}

/// The child `uid` decoded for a listing: from its catalog entry, else from its record.
fn listing_record(ctx: &Ctx<'_>, uid: &str, entry: Option<StoredEntry>) -> Result<ContentRecord> {
    match entry {
        Some(e) => e.record(),
        None => Ok(ContentRecord::from_json_for_listing(
            &tree::load_raw(ctx, uid)?.ok_or_else(|| missing(uid))?,
        )?),
    }
}

/// Whether the caller's global roles let it view every object (no per-item checks needed).
fn sees_everything(ctx: &Ctx<'_>) -> bool {
    match &ctx.principal {
        crate::core::security::Principal::User(u) => u
            .roles
            .iter()
            .any(|r| r == "Manager" || r == "Site Administrator"),
        crate::core::security::Principal::Anonymous => false,
    }
}

/// A Choice's stored token as `{token, title}`, a Multiple Choice's tokens as a list of them (as
/// plone.restapi serializes a field's own vocabulary); a token the field no longer offers is
/// given as stored.
fn choice_output(f: &FieldDef, stored: &Value) -> Value {
    let term = |v: &Value| match v.as_str().and_then(|t| f.choice(t)) {
        Some(c) => json!({"token": c.token, "title": c.title}),
        None => v.clone(),
    };
    match stored {
        Value::Array(tokens) => Value::Array(tokens.iter().map(term).collect()),
        Value::Null => Value::Null,
        one => term(one),
    }
}

/// A Relation Choice's related object as Plone serializes a relation: the object's summary with
/// its `UID`; `null` when it is gone or the caller may not view it.
fn relation_output(ctx: &Ctx<'_>, uid: &str) -> Result<Value> {
    match tree::load(ctx, uid)? {
        Some(target) if ctx.permitted(Permission::View, &target)? => {
            summary(ctx, &target, &["UID"])
        }
        _ => Ok(Value::Null),
    }
}

/// The summary of `obj` used in listings, plus the requested catalog `metadata_fields`.
pub fn summary(ctx: &Ctx<'_>, obj: &ContentRecord, metadata_fields: &[&str]) -> Result<Value> {
    let ty = ctx.type_of(obj)?;
    let mut m = Map::new();
    m.insert("@id".into(), json!(ctx.url(&obj.path)));
    m.insert("@type".into(), json!(obj.type_name));
    m.insert("description".into(), json!(obj.description()));
    if obj.review_state.is_some() {
        m.insert("review_state".into(), json!(obj.review_state));
    }
    m.insert("title".into(), json!(obj.title()));
    let tr = crate::site::i18n::Translator::for_request(ctx)?;
    m.insert("type_title".into(), json!(tr.t(&ty.title)));
    let wanted: Vec<&str> = if metadata_fields.contains(&"_all") {
        CATALOG_FIELDS.to_vec()
    } else {
        metadata_fields.to_vec()
    };
    for name in wanted {
        if let Some(v) = catalog_value(ctx, obj, name)? {
            m.insert(name.to_string(), v);
        }
    }
    Ok(Value::Object(m))
}

use super::summaries::CATALOG_FIELDS;

/// One catalog metadata value of `obj` (`None` for names that are not catalog metadata).
pub fn catalog_value(ctx: &Ctx<'_>, obj: &ContentRecord, name: &str) -> Result<Option<Value>> {
    let ty = ctx.type_of(obj)?;
    let field = |n: &str| obj.fields.get(n).cloned().unwrap_or(Value::Null);
    let creators = obj
        .fields
        .get("creators")
        .cloned()
        .unwrap_or_else(|| json!([obj.owner]));
    let creator = creators.get(0).cloned().unwrap_or_else(|| json!(obj.owner));
    let date_or_none = |v: Value| if v.is_null() { json!("None") } else { v };
    let v = match name {
        "@id" => json!(ctx.url(&obj.path)),
        "@type" | "Type" | "portal_type" => json!(obj.type_name),
        "title" | "Title" => json!(obj.title()),
        "Description" | "description" => json!(obj.description()),
        "UID" => json!(obj.uid),
        "path" => json!(if obj.path.is_empty() {
            "/"
        } else {
            obj.path.as_str()
        }),
        "Subject" => field("subjects"),
        "is_folderish" => json!(ty.folderish),
        "exclude_from_nav" => field("exclude_from_nav"),
        "getId" | "id" => json!(obj.id),
        "Creator" => creator,
        "listCreators" => creators,
        "review_state" => json!(obj.review_state),
        "created" | "CreationDate" => json!(iso(&obj.created)),
        "modified" | "ModificationDate" | "Date" => json!(iso(&obj.modified)),
        "effective" => field("effective"),
        "EffectiveDate" => date_or_none(field("effective")),
        "expires" => field("expires"),
        "ExpirationDate" => date_or_none(field("expires")),
        "getObjSize" => match super::file_fields::primary_file(&ty, &obj.fields) {
            Some(f) => json!(f.size),
            None => json!(obj.fields_size()),
        },
        "mime_type" => match super::file_fields::primary_file(&ty, &obj.fields) {
            Some(f) => json!(f.content_type),
            None => json!("text/plain"),
        },
        "image_field" => {
            json!(super::file_fields::image_field(&ty, &obj.fields).unwrap_or_default())
        }
        "image_scales" => super::file_fields::image_scales(&ty, &obj.fields),
        "hasPreviewImage" => json!(super::file_fields::image_field(&ty, &obj.fields).is_some()),
        // Asked for by name only (not part of `_all`): it is built from the object's blocks.
        "markdown" => json!(crate::content::exports::markdown(obj)),
        _ => return Ok(None),
    };
    Ok(Some(v))
}

use super::time::iso;

/// The workflow state a Nick site shows for `obj`: its own, and `published` for the site root
/// (which has no workflow here and is public from its creation on, as Nick's root is
/// published).
pub fn nick_review_state(obj: &ContentRecord) -> Value {
    match (&obj.review_state, obj.is_root()) {
        (Some(s), _) => json!(s),
        (None, true) => json!("published"),
        (None, false) => Value::Null,
    }
}

/// The effective date a Nick site shows for `obj`: the stored one, or for the site root its
/// creation time (see [`nick_review_state`]).
pub fn nick_effective(obj: &ContentRecord) -> Value {
    match obj.fields.get("effective") {
        Some(v) if !v.is_null() => v.clone(),
        _ if obj.is_root() => json!(iso(&obj.created)),
        _ => Value::Null,
    }
}

/// `previous_item` and `next_item`: sibling summaries when the parent enables next/previous
/// navigation, `{}` otherwise.
fn neighbours(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    parent: Option<&ContentRecord>,
) -> Result<(Value, Value)> {
    let enabled = parent
        .and_then(|p| p.fields.get("nextPreviousEnabled"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let Some(parent) = parent.filter(|_| enabled) else {
        return Ok((json!({}), json!({})));
    };
    let (before, after) = tree::neighbours(ctx, &parent.uid, obj.pos)?;
    let sib = |rec: Option<ContentRecord>| -> Result<Value> {
        match rec {
            Some(rec) => {
                let mut s = summary(ctx, &rec, &[])?;
                if let Some(m) = s.as_object_mut() {
                    m.remove("review_state");
                }
                Ok(s)
            }
            None => Ok(json!({})),
        }
    };
    Ok((sib(before)?, sib(after)?))
}

/// The lock status of an object. Unlocked objects show only `locked: false, stealable: true`;
/// the token is shown to the lock's owner only.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct LockInfo {
    /// When it was taken or last refreshed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// Login of its owner.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creator: Option<String>,
    /// Full name of its owner (the login when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creator_name: Option<String>,
    /// URL of its owner.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creator_url: Option<String>,
    /// Whether the object is locked.
    pub locked: bool,
    /// The lock type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'static str>,
    /// Whether others with edit rights may break it.
    pub stealable: bool,
    /// When it was taken: seconds since the epoch (Plone), or an ISO timestamp (Nick, and the
    /// spec's Lock table).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<LockTime>,
    /// Seconds it lasts from `created`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// The token changes to the object must send in `Lock-Token` (owner only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// The `time` of a lock as the site's profile shows it.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum LockTime {
    /// Seconds since the epoch (Plone's `time`).
    Seconds(f64),
    /// An ISO timestamp (Nick's `time`).
    Iso(String),
}

impl LockInfo {
    /// What the caller of `ctx` may see of `lock`. A Nick site links its owner as
    /// `<site>/@users/<login>` and gives `time` as an ISO timestamp; Plone links the author
    /// page and counts seconds.
    pub fn new(ctx: &Ctx<'_>, lock: Option<&crate::content::locking::Lock>) -> Self {
        let Some(l) = lock else {
            return LockInfo {
                created: None,
                creator: None,
                creator_name: None,
                creator_url: None,
                locked: false,
                name: None,
                stealable: true,
                time: None,
                timeout: None,
                token: None,
            };
        };
        let name = if l.creator_name.is_empty() {
            &l.creator
        } else {
            &l.creator_name
        };
        let (creator_url, time) = if ctx.profile().is_nick() {
            (
                ctx.url(&format!("/@users/{}", l.creator)),
                LockTime::Iso(iso(&l.created)),
            )
        } else {
            (
                ctx.url(&format!("/author/{}", l.creator)),
                LockTime::Seconds(l.created.timestamp_millis() as f64 / 1000.0),
            )
        };
        LockInfo {
            created: Some(iso(&l.created)),
            creator: Some(l.creator.clone()),
            creator_name: Some(name.clone()),
            creator_url: Some(creator_url),
            locked: true,
            name: Some("plone.locking.stealable"),
            stealable: l.stealable,
            time: Some(time),
            timeout: Some(l.timeout),
            token: (ctx.principal.login() == Some(l.creator.as_str())).then(|| l.token.clone()),
        }
    }
}

/// A rich text value as Plone serializes it: its `data` is the text's HTML output. Plain text
/// (`text/plain`) is HTML-escaped and wrapped in a paragraph, each line break a `<br />` (what
/// Plone's plain-text-to-HTML transform gives), so a client can insert `data` as HTML; the
/// `content-type` stays the one the text was written in. HTML is given as stored.
fn richtext_output(value: &Value) -> Value {
    let plain = value
        .get("content-type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/plain"));
    match (plain, value.get("data").and_then(Value::as_str)) {
        (true, Some(text)) => {
            let mut out = value.clone();
            out["data"] = Value::String(plain_text_as_html(text));
            out
        }
        _ => value.clone(),
    }
}

/// `text` as an HTML paragraph: `& < > " '` escaped, line breaks as `<br />`.
fn plain_text_as_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str("<p>");
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            '\n' => out.push_str("<br />"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out.push_str("</p>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    #[test]
    fn members_are_written_in_name_order_each_name_once_with_its_last_value() {
        let mut m = Members(Vec::new());
        let names = [
            "working_copy_of",
            "b",
            "working_copy",
            "",
            "a\u{0}",
            "a",
            "é",
            "ab",
            "b",
            "@id",
            "Z",
            "abcdefghij",
            "abcdefgh",
            "abcdefghi",
        ];
        for (i, n) in names.iter().enumerate() {
            m.set(*n, json!(i));
        }
        let mut expected = Map::new();
        for (i, n) in names.iter().enumerate() {
            expected.insert(n.to_string(), json!(i));
        }
        let mut out = JsonOut::new(64);
        m.write(&mut out, None).unwrap_or_default();
        assert_eq!(out.buf, serde_json::to_vec(&expected).unwrap_or_default());
        assert_eq!(m.into_value().unwrap_or_default(), Value::Object(expected));
    }

    #[test]
    fn plain_rich_text_is_served_as_escaped_html() {
        let v = json!({"data": "It's <b>&\"x\"\nnext", "content-type": "text/plain", "encoding": "utf-8"});
        assert_eq!(
            richtext_output(&v),
            json!({"data": "<p>It&#x27;s &lt;b&gt;&amp;&quot;x&quot;<br />next</p>", "content-type": "text/plain", "encoding": "utf-8"})
        );
        let html = json!({"data": "<p>It's</p>", "content-type": "text/html"});
        assert_eq!(richtext_output(&html), html);
    }

    #[test]
    fn iso_agrees_with_the_clock_module() {
        let times = [
            Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(1999, 12, 31, 23, 59, 59).unwrap(),
            Utc.with_ymd_and_hms(5, 2, 3, 4, 5, 6).unwrap(),
            Utc.with_ymd_and_hms(12345, 1, 1, 0, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(-1, 1, 1, 0, 0, 0).unwrap(),
            Utc.timestamp_opt(1_700_000_000, 999_999_999).unwrap(),
            Utc.with_ymd_and_hms(2000, 2, 29, 0, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(1900, 3, 1, 1, 2, 3).unwrap(),
            Utc.with_ymd_and_hms(0, 1, 1, 0, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(9999, 12, 31, 23, 59, 59).unwrap(),
            Utc.with_ymd_and_hms(1969, 12, 31, 23, 59, 59).unwrap(),
            chrono::NaiveDate::from_ymd_opt(2016, 12, 31)
                .unwrap()
                .and_hms_nano_opt(23, 59, 59, 1_500_000_000)
                .unwrap()
                .and_utc(),
        ];
        for t in &times {
            assert_eq!(iso(t), crate::core::clock::iso(t));
        }
    }
}
