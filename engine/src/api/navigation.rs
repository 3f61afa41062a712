//! `@navigation`: the top navigation of a context (the items of its navigation root), one level
//! deep unless `expand.navigation.depth` asks for more. Expandable as the `navigation` component.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::borrow::Cow;

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
#[cfg(test)]
use super::serialize::catalog_value;
#[cfg(test)]
use super::summaries::CATALOG_FIELDS;
use super::summaries::{self, IsoTime};
use super::Route;
use crate::catalog::codec::{Known, Raw, Time, ValueRef, View};
use crate::content::navigation::{self, NavEntry, NavItem, NavRef, NavSource, NavVisitor};
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register `@navigation` and the `navigation` component.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@navigation", get)
            .requires(Permission::View)
            .summary(
                "The top navigation: the items of the navigation root, one level deep unless \
                 `expand.navigation.depth` asks for more, plus the control panel's links",
            )
            .query::<NavigationQuery>()
            .answers::<NavigationDoc>(),
    );
    r.component("navigation", Some(component));
}

/// The query parameter naming the depth.
pub const DEPTH_PARAM: &str = "expand.navigation.depth";

/// The query of `@navigation`.
#[derive(Deserialize, JsonSchema)]
pub struct NavigationQuery {
    /// How many levels (a positive integer; default 1).
    #[serde(rename = "expand.navigation.depth", default)]
    pub depth: Option<String>,
}

// Some fields are accepted from clients or only describe the OpenAPI document; none is read.
#[allow(dead_code)]
/// The answer of `@navigation` (for the documentation): `{@id, items}`, each item a catalog item
/// plus `description`, `markdown`, `items`, `start`, `end`, `recurrence`.
#[derive(JsonSchema)]
pub struct NavigationDoc {
    /// `<object URL>/@navigation`.
    #[serde(rename = "@id")]
    pub id: String,
    /// The items.
    pub items: Vec<serde_json::Map<String, Value>>,
}

/// The requested depth: 1 unless `expand.navigation.depth` is given (a positive integer).
pub fn depth(route: &Route) -> Result<usize> {
    let q: NavigationQuery = super::extract::query(route)?;
    match q.depth.as_deref() {
        None => Ok(1),
        Some(raw) => raw
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|d| *d >= 1)
            .ok_or_else(|| {
                EngineError::bad_request(format!(
                    "Query parameter '{DEPTH_PARAM}' must be a positive integer, got '{raw}'"
                ))
            }),
    }
}

/// GET `<path>/@navigation`.
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    Ok(Response {
        status: 200,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: answer(ctx, call.route, &obj)?,
        stream: None,
        lines: None,
    })
}

/// The navigation of `obj` (the `navigation` component): `{@id, items}`.
fn component(ctx: &Ctx<'_>, route: &Route, obj: &ContentRecord) -> Result<Value> {
    Ok(serde_json::from_slice(&answer(ctx, route, obj)?)?)
}

/// A navigation entry that is not content: the Home link and the control panel's extra links.
#[derive(Serialize)]
struct NavLink<'a> {
    #[serde(rename = "@id")]
    id: String,
    description: &'a str,
    items: [(); 0],
    review_state: Option<String>,
    title: &'a str,
}

/// The answer `{"@id", "items"}` as JSON, written straight into one buffer (keys in the sorted
/// order a `serde_json::Value` object has): the Home link and the extra links as serde values,
/// the content items by [`ItemWriter`] as the walk hands them over.
fn answer(ctx: &Ctx<'_>, route: &Route, obj: &ContentRecord) -> Result<Vec<u8>> {
    let depth = depth(route)?;
    let settings = navigation::settings(ctx)?;
    let nav = navigation::navigation(ctx, obj, depth, &settings)?;
    if ctx.profile().is_nick() {
        return nick_answer(ctx, obj, &nav.tree(ctx)?);
    }
    let mut out = Vec::with_capacity(ANSWER_CAPACITY);
    out.extend_from_slice(b"{\"@id\":");
    string(&mut out, &format!("{}/@navigation", ctx.url(&obj.path)))?;
    out.extend_from_slice(b",\"items\":[");
    let mut first = true;
    let mut comma = |out: &mut Vec<u8>| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
    };
    if settings.show_home {
        comma(&mut out);
        let home = NavLink {
            id: ctx.url(&nav.root.path),
            description: "",
            items: [],
            review_state: None,
            title: "Home",
        };
        serde_json::to_writer(&mut out, &home)?;
    }
    for extra in &settings.extra_items {
        comma(&mut out);
        let link = NavLink {
            id: navigation::NavigationSettings::item_url(ctx, extra),
            description: &extra.description,
            items: [],
            review_state: None,
            title: &extra.title,
        };
        serde_json::to_writer(&mut out, &link)?;
    }
    let mut w = ItemWriter {
        ctx,
        out,
        comma: !first,
    };
    nav.visit(ctx, &mut w)?;
    let mut out = w.out;
    out.extend_from_slice(b"]}");
    Ok(out)
}

/// The answer as a Nick site gives it: no Home link, every item with Nick's catalog columns
/// ([`nick_items::item`]) and its children under `items`.
fn nick_answer(ctx: &Ctx<'_>, obj: &ContentRecord, items: &[NavItem]) -> Result<Vec<u8>> {
    #[derive(Serialize)]
    struct Answer {
        #[serde(rename = "@id")]
        id: String,
        items: Vec<Value>,
    }
    let answer = Answer {
        id: format!("{}/@navigation", ctx.url(&obj.path)),
        items: nick_tree(ctx, items)?,
    };
    Ok(serde_json::to_vec(&answer)?)
}

/// Navigation items (and their children, under `items`) in Nick's shape
/// ([`super::nick_items::item`]).
pub fn nick_tree(ctx: &Ctx<'_>, items: &[NavItem]) -> Result<Vec<Value>> {
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let loaded;
        let rec = match &item.source {
            NavSource::Record(rec) => rec.as_ref(),
            NavSource::Entry(stored) => {
                let uid = stored.view()?.uid;
                loaded = crate::content::tree::load(ctx, uid)?.ok_or_else(|| {
                    EngineError::Internal(format!("catalog entry {uid} has no object"))
                })?;
                &loaded
            }
        };
        let mut m = super::nick_items::item(ctx, rec)?;
        m.insert(
            "items".into(),
            Value::Array(nick_tree(ctx, &item.children)?),
        );
        out.push(Value::Object(m));
    }
    Ok(out)
}

/// `s` as a JSON string ([`summaries::write_string`]).
fn string(out: &mut Vec<u8>, s: &str) -> Result<()> {
    Ok(summaries::write_string(out, s)?)
}

/// The URL of `path` as a JSON string (what `string(out, &ctx.url(path))` writes).
fn url(out: &mut Vec<u8>, ctx: &Ctx<'_>, path: &str) -> Result<()> {
    let base = ctx.base_url.as_bytes();
    if plain(base) && plain(path.as_bytes()) {
        out.reserve(base.len() + path.len() + 2);
        out.push(b'"');
        out.extend_from_slice(base);
        out.extend_from_slice(path.as_bytes());
        out.push(b'"');
        Ok(())
    } else {
        string(out, &ctx.url(path))
    }
}

/// Whether `b` needs no escaping in a JSON string.
fn plain(b: &[u8]) -> bool {
    !summaries::needs_escape(b)
}

/// A JSON value, as serde_json writes it.
fn value<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) -> Result<()> {
    Ok(serde_json::to_writer(&mut *out, v)?)
}

/// A field value of a navigation item, as its record or its catalog entry holds it.
#[derive(Clone, Copy)]
enum Val<'a> {
    /// A record's value (`null` when unset).
    Json(&'a Value),
    /// A catalog entry's value, read in place.
    Stored(Raw<'a>),
}

/// An unset field.
static NULL: Value = Value::Null;

impl<'a> Val<'a> {
    fn of_record(r: &'a ContentRecord, name: &str) -> Self {
        Val::Json(r.fields.get(name).unwrap_or(&NULL))
    }

    fn of_entry(raw: Option<Raw<'a>>) -> Self {
        raw.map_or(Val::Json(&NULL), Val::Stored)
    }

    fn is_null(self) -> bool {
        match self {
            Val::Json(v) => v.is_null(),
            Val::Stored(r) => r.is_null(),
        }
    }

    /// The first item of an array.
    fn first(self) -> Option<Val<'a>> {
        match self {
            Val::Json(v) => v.get(0).map(Val::Json),
            Val::Stored(r) => match r.get() {
                ValueRef::Array(mut items) => items.next().map(Val::Stored),
                _ => None,
            },
        }
    }
}

/// A field value as JSON (what `serde_json` writes for the value; a stored one by
/// [`summaries::write_raw`], without decoding it).
fn val(out: &mut Vec<u8>, v: Val<'_>) -> Result<()> {
    let r = match v {
        Val::Json(v) => return value(out, v),
        Val::Stored(r) => r,
    };
    Ok(summaries::write_raw(out, r)?)
}

/// The room an answer starts with (an item takes about 1 KB): a navigation this size is written
/// without the buffer growing, a larger one grows it (copying what was written).
const ANSWER_CAPACITY: usize = 64 * 1024;

/// A date field, or the string `None` when it is unset (`EffectiveDate`, `ExpirationDate`);
/// where its JSON text is in `out` when it is set.
fn date_or_none(out: &mut Vec<u8>, v: Val<'_>) -> Result<Option<std::ops::Range<usize>>> {
    if v.is_null() {
        string(out, "None")?;
        return Ok(None);
    }
    let start = out.len();
    val(out, v)?;
    Ok(Some(start..out.len()))
}

/// The value [`date_or_none`] wrote (`text`, where it is in `out`) again, or `null` when unset.
fn date_again(out: &mut Vec<u8>, text: Option<std::ops::Range<usize>>) {
    match text {
        Some(range) => out.extend_from_within(range),
        None => out.extend_from_slice(b"null"),
    }
}

/// Write `s` as a JSON string (after `out`'s current end), returning where it is.
fn string_at(out: &mut Vec<u8>, s: &str) -> Result<std::ops::Range<usize>> {
    let start = out.len();
    string(out, s)?;
    Ok(start..out.len())
}

/// What [`ItemWriter`] writes of one navigation item, borrowed from its record or read in place
/// from its catalog entry (which then holds every field value of the object).
struct ItemValues<'a> {
    uid: &'a str,
    id: &'a str,
    path: &'a str,
    type_name: &'a str,
    created: Time,
    modified: Time,
    owner: &'a str,
    review_state: Option<&'a str>,
    title: &'a str,
    description: &'a str,
    subjects: Val<'a>,
    effective: Val<'a>,
    expires: Val<'a>,
    exclude_from_nav: Val<'a>,
    creators: Option<Val<'a>>,
    /// The field values the file and image columns read: all of a record's, the object values
    /// (stored files and images) of an entry's (the others play no part in those columns).
    files: Cow<'a, Map<String, Value>>,
    markdown: Markdown<'a>,
}

/// The `markdown` of a navigation item.
enum Markdown<'a> {
    /// Made from its blocks ([`crate::content::exports::markdown`]).
    Made(String),
    /// An object without blocks: its title and description
    /// ([`crate::content::exports::markdown_without_blocks`]), written as the JSON string of
    /// that text without building it.
    Plain {
        title: &'a str,
        description: &'a str,
    },
}

impl Markdown<'_> {
    /// As a JSON string.
    fn write(&self, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Markdown::Made(s) => string(out, s),
            Markdown::Plain { title, description } => {
                // `# title\n` and, when the description is not blank, `\ndescription\n`:
                // JSON escapes each character alone, so the pieces escape as the whole does.
                out.extend_from_slice(b"\"# ");
                string_content(out, title)?;
                out.extend_from_slice(b"\\n");
                if !description.trim().is_empty() {
                    out.extend_from_slice(b"\\n");
                    string_content(out, description)?;
                    out.extend_from_slice(b"\\n");
                }
                out.push(b'"');
                Ok(())
            }
        }
    }
}

/// `s` as the inside of a JSON string (what [`string`] writes, without the quotes).
fn string_content(out: &mut Vec<u8>, s: &str) -> Result<()> {
    if plain(s.as_bytes()) {
        out.extend_from_slice(s.as_bytes());
        return Ok(());
    }
    let quoted = serde_json::to_vec(s)?;
    out.extend_from_slice(quoted.get(1..quoted.len() - 1).unwrap_or_default());
    Ok(())
}

impl<'a> ItemValues<'a> {
    fn of_record(r: &'a ContentRecord) -> Self {
        ItemValues {
            uid: &r.uid,
            id: &r.id,
            path: &r.path,
            type_name: &r.type_name,
            created: Time::of(&r.created),
            modified: Time::of(&r.modified),
            owner: &r.owner,
            review_state: r.review_state.as_deref(),
            title: r.title(),
            description: r.description(),
            subjects: Val::of_record(r, "subjects"),
            effective: Val::of_record(r, "effective"),
            expires: Val::of_record(r, "expires"),
            exclude_from_nav: Val::of_record(r, "exclude_from_nav"),
            creators: r.fields.get("creators").map(Val::Json),
            files: Cow::Borrowed(&r.fields),
            markdown: Markdown::Made(crate::content::exports::markdown(r)),
        }
    }

    /// The values of an entry that holds every field value of its object (so no blocks: its
    /// Markdown is its title and description).
    fn of_entry(v: &View<'a>, f: &Known<'a>) -> Self {
        let title = f.title.and_then(|r| r.as_str()).unwrap_or("");
        let description = f.description.and_then(|r| r.as_str()).unwrap_or("");
        let files = if f.objects {
            v.fields.objects()
        } else {
            Map::new()
        };
        ItemValues {
            uid: v.uid,
            id: v.id,
            path: v.head.path,
            type_name: v.type_name,
            created: v.created,
            modified: v.modified,
            owner: v.owner,
            review_state: v.review_state,
            title,
            description,
            subjects: Val::of_entry(f.subjects),
            effective: Val::of_entry(f.effective),
            expires: Val::of_entry(f.expires),
            exclude_from_nav: Val::of_entry(f.exclude_from_nav),
            creators: f.creators.map(Val::Stored),
            files: Cow::Owned(files),
            markdown: Markdown::Plain { title, description },
        }
    }
}

/// Writes each navigation item the walk hands it: the catalog item fields (as
/// [`super::serialize::catalog_value`] gives them for every name of
/// [`super::summaries::CATALOG_FIELDS`]) plus `description`, `markdown`, `items`, `start`, `end`
/// and `recurrence`, in sorted key order, its children inside its `items`.
struct ItemWriter<'c, 'x> {
    ctx: &'c Ctx<'x>,
    /// The answer so far.
    out: Vec<u8>,
    /// Whether the next item follows another in its list.
    comma: bool,
}

impl NavVisitor for ItemWriter<'_, '_> {
    fn item(
        &mut self,
        item: &NavEntry<'_>,
        children: &mut dyn FnMut(&mut Self) -> Result<()>,
    ) -> Result<()> {
        if self.comma {
            self.out.push(b',');
        }
        let r = match &item.source {
            NavRef::Entry { view, known, .. } => ItemValues::of_entry(view, known),
            NavRef::Record(rec) => ItemValues::of_record(rec),
        };
        let ty = item.ty;
        // Without files (the common case) there is nothing for the file columns to find.
        let files = !r.files.is_empty();
        let primary = files
            .then(|| super::file_fields::primary_file(ty, &r.files))
            .flatten();
        let image_field = files
            .then(|| super::file_fields::image_field(ty, &r.files))
            .flatten();
        let created = IsoTime::of(r.created)?;
        let modified = IsoTime::of(r.modified)?;

        let out = &mut self.out;
        out.extend_from_slice(b"{\"@id\":");
        url(out, self.ctx, r.path)?;
        out.extend_from_slice(b",\"@type\":");
        string(out, r.type_name)?;
        out.extend_from_slice(b",\"CreationDate\":");
        created.write(out)?;
        out.extend_from_slice(b",\"Creator\":");
        match r.creators.and_then(Val::first) {
            Some(c) => val(out, c)?,
            None => string(out, r.owner)?,
        }
        out.extend_from_slice(b",\"Date\":");
        modified.write(out)?;
        out.extend_from_slice(b",\"Description\":");
        let description = string_at(out, r.description)?;
        out.extend_from_slice(b",\"EffectiveDate\":");
        let effective = date_or_none(out, r.effective)?;
        out.extend_from_slice(b",\"ExpirationDate\":");
        let expires = date_or_none(out, r.expires)?;
        out.extend_from_slice(b",\"ModificationDate\":");
        modified.write(out)?;
        out.extend_from_slice(b",\"Subject\":");
        val(out, r.subjects)?;
        out.extend_from_slice(b",\"Title\":");
        let title = string_at(out, r.title)?;
        out.extend_from_slice(b",\"Type\":");
        string(out, r.type_name)?;
        out.extend_from_slice(b",\"UID\":");
        string(out, r.uid)?;
        out.extend_from_slice(b",\"created\":");
        created.write(out)?;
        out.extend_from_slice(b",\"description\":");
        out.extend_from_within(description);
        out.extend_from_slice(b",\"effective\":");
        date_again(out, effective);
        out.extend_from_slice(b",\"end\":null,\"exclude_from_nav\":");
        val(out, r.exclude_from_nav)?;
        out.extend_from_slice(b",\"expires\":");
        date_again(out, expires);
        out.extend_from_slice(b",\"getId\":");
        string(out, r.id)?;
        out.extend_from_slice(b",\"getObjSize\":");
        match &primary {
            Some(f) => value(out, &f.size)?,
            None => value(out, &item.size)?,
        }
        out.extend_from_slice(if image_field.is_some() {
            b",\"hasPreviewImage\":true,\"id\":"
        } else {
            b",\"hasPreviewImage\":false,\"id\":"
        });
        string(out, r.id)?;
        out.extend_from_slice(b",\"image_field\":");
        string(out, image_field.as_deref().unwrap_or_default())?;
        out.extend_from_slice(b",\"image_scales\":");
        if files {
            value(out, &super::file_fields::image_scales(ty, &r.files))?;
        } else {
            out.extend_from_slice(b"{}");
        }
        out.extend_from_slice(if ty.folderish {
            b",\"is_folderish\":true,\"items\":["
        } else {
            b",\"is_folderish\":false,\"items\":["
        });
        self.comma = false;
        children(self)?;
        let out = &mut self.out;
        out.extend_from_slice(b"],\"listCreators\":");
        match r.creators {
            Some(c) => val(out, c)?,
            None => {
                out.push(b'[');
                string(out, r.owner)?;
                out.push(b']');
            }
        }
        out.extend_from_slice(b",\"markdown\":");
        r.markdown.write(out)?;
        out.extend_from_slice(b",\"mime_type\":");
        match &primary {
            Some(f) => string(out, &f.content_type)?,
            None => string(out, "text/plain")?,
        }
        out.extend_from_slice(b",\"modified\":");
        modified.write(out)?;
        out.extend_from_slice(b",\"path\":");
        string(out, if r.path.is_empty() { "/" } else { r.path })?;
        out.extend_from_slice(b",\"portal_type\":");
        string(out, r.type_name)?;
        out.extend_from_slice(b",\"recurrence\":null,\"review_state\":");
        match r.review_state {
            Some(s) => string(out, s)?,
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"start\":null,\"title\":");
        out.extend_from_within(title);
        out.extend_from_slice(if uses_view_action(r.type_name) {
            b",\"use_view_action_in_listings\":true}"
        } else {
            b",\"use_view_action_in_listings\":false}"
        });
        self.comma = true;
        Ok(())
    }
}

/// One navigation item and its children as [`ItemWriter`] writes them.
#[cfg(test)]
fn write_item(out: &mut Vec<u8>, ctx: &Ctx<'_>, item: &NavItem) -> Result<()> {
    let mut w = ItemWriter {
        ctx,
        out: std::mem::take(out),
        comma: false,
    };
    NavItem::visit_all(ctx, std::slice::from_ref(item), &mut w)?;
    *out = w.out;
    Ok(())
}

/// The types whose listings link to their `/view` (the file or image page) rather than the
/// object's URL (which serves the bytes): Plone's `plone.types_use_view_action_in_listings`
/// default, which navigation items report as `use_view_action_in_listings`.
const VIEW_ACTION_IN_LISTINGS: &[&str] = &["Image", "File"];

/// Whether items of `type_name` carry `use_view_action_in_listings: true`.
fn uses_view_action(type_name: &str) -> bool {
    VIEW_ACTION_IN_LISTINGS.contains(&type_name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};

    /// An item as `catalog_value` builds it, name by name (the reference for [`write_item`]).
    fn reference(ctx: &Ctx<'_>, item: &NavItem) -> Value {
        let NavSource::Record(rec) = &item.source else {
            panic!("the reference is built from records")
        };
        let mut m = Map::new();
        for name in CATALOG_FIELDS {
            if let Some(v) = catalog_value(ctx, rec, name).unwrap() {
                m.insert(name.to_string(), v);
            }
        }
        m.insert("description".into(), json!(rec.description()));
        m.insert(
            "markdown".into(),
            json!(crate::content::exports::markdown(rec)),
        );
        m.insert("start".into(), Value::Null);
        m.insert("end".into(), Value::Null);
        m.insert("recurrence".into(), Value::Null);
        m.insert(
            "use_view_action_in_listings".into(),
            json!(uses_view_action(&rec.type_name)),
        );
        let children: Vec<Value> = item.children.iter().map(|c| reference(ctx, c)).collect();
        m.insert("items".into(), Value::Array(children));
        Value::Object(m)
    }

    #[test]
    fn plain_strings_are_those_serde_json_copies() {
        let mut samples: Vec<String> = (0u8..=0x7f)
            .map(|c| format!("abcdefghijk{}lmnop", c as char))
            .collect();
        samples
            .extend(["", "é", "a\"", "0123456789abcdef", "\u{7f}\u{80}ü", "x\\"].map(String::from));
        for c in 0u8..=0x7f {
            for at in 0..17 {
                let mut s = "a".repeat(16);
                s.insert(at, c as char);
                samples.push(s);
            }
        }
        for s in &samples {
            let mut built = Vec::new();
            string(&mut built, s).unwrap();
            assert_eq!(built, serde_json::to_vec(s).unwrap(), "{s:?}");
            let escaped = serde_json::to_string(s).unwrap();
            assert_eq!(plain(s.as_bytes()), escaped.len() == s.len() + 2, "{s:?}");
        }
    }

    #[test]
    fn items_serialize_as_the_catalog_values() {
        let engine =
            crate::Engine::new(crate::MemStore::new(), crate::EngineOptions::for_tests()).unwrap();
        engine
            .create_site(&crate::SiteSetup::new("secret"))
            .unwrap();
        engine
            .with_write(|ctx| {
                let root = crate::content::tree::root(ctx)?;
                let ty = ctx.types()?.require("Folder")?;
                let variants = [
                    json!({"title": "A \"q\" é", "description": "d\n\u{1}\\"}),
                    json!({"title": "B", "creators": ["x", "y"], "subjects": ["s"],
                           "effective": "2026-01-02T00:00:00+00:00", "exclude_from_nav": false}),
                    json!({"creators": [], "expires": "2027-01-01T00:00:00+00:00"}),
                    json!({"creators": "not a list", "effective": null}),
                ];
                let mut kids = Vec::new();
                for (i, f) in variants.iter().enumerate() {
                    let fields = f.as_object().cloned().unwrap_or_default();
                    let mut rec =
                        crate::content::tree::new_record(ctx, &ty, &format!("f{i}"), "bob", fields);
                    if i == 3 {
                        rec.review_state = None;
                    }
                    kids.push(NavItem {
                        source: NavSource::Record(Box::new(rec)),
                        children: Vec::new(),
                    });
                }
                let mut top_rec = root.clone();
                top_rec.path = String::new();
                let top = NavItem {
                    source: NavSource::Record(Box::new(top_rec)),
                    children: kids,
                };
                let mut built = Vec::new();
                write_item(&mut built, ctx, &top)?;
                assert_eq!(
                    String::from_utf8_lossy(&built),
                    serde_json::to_string(&reference(ctx, &top))?
                );
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn items_read_from_entries_serialize_as_from_records() {
        let engine =
            crate::Engine::new(crate::MemStore::new(), crate::EngineOptions::for_tests()).unwrap();
        engine
            .create_site(&crate::SiteSetup::new("secret"))
            .unwrap();
        let variants = [
            json!({"title": "A \"q\" é", "description": "d\n\u{1}\\"}),
            json!({"title": "B", "description": "  ", "creators": ["x", "y"],
                   "subjects": ["s", "t"], "effective": "2026-01-02T00:00:00+00:00",
                   "exclude_from_nav": true, "language": "de"}),
            json!({"creators": [], "expires": "2027-01-01T00:00:00+00:00", "subjects": []}),
            json!({"creators": "not a list", "title": "no state"}),
            json!({"title": "null effective", "effective": null}),
            json!({"title": "blocks", "blocks": {"b": {"@type": "title"}},
                   "blocks_layout": {"items": ["b"]}}),
        ];
        engine
            .with_write(|ctx| {
                let mut root = crate::content::tree::root(ctx)?;
                for (i, f) in variants.iter().enumerate() {
                    let ty = ctx
                        .types()?
                        .require(if i == 2 { "Page" } else { "Folder" })?;
                    let fields = f.as_object().cloned().unwrap_or_default();
                    let mut rec =
                        crate::content::tree::new_record(ctx, &ty, &format!("f{i}"), "bob", fields);
                    if i == 3 {
                        rec.review_state = None;
                    }
                    crate::content::tree::insert(ctx, &mut root, &mut rec)?;
                }
                Ok(())
            })
            .unwrap();
        engine
            .with_write(|ctx| {
                let root = crate::content::tree::root(ctx)?;
                let mut entries = Vec::new();
                for uid in crate::content::tree::child_uids(ctx, &root.uid, 0, usize::MAX)? {
                    let rec = crate::content::tree::load(ctx, &uid)?.unwrap();
                    let stored = crate::catalog::stored_entry(ctx, &uid)?.unwrap();
                    let v = stored.view()?;
                    let stands = v.fields.json_size()? == v.size;
                    // The entry holds every field value exactly when the record has no others
                    // (blocks) and no null listing field (left out of the entry).
                    let only_listing = rec.fields.iter().all(|(k, v)| {
                        crate::core::model::LISTING_FIELDS.contains(&k.as_str()) && !v.is_null()
                    });
                    assert_eq!(stands, only_listing, "{}", rec.id);
                    if !stands {
                        continue;
                    }
                    assert_eq!(v.size, rec.fields_size());
                    entries.push((rec, stored));
                }
                assert_eq!(entries.len(), 4);
                for (rec, stored) in entries {
                    let from_record = NavItem {
                        source: NavSource::Record(Box::new(rec)),
                        children: Vec::new(),
                    };
                    let from_entry = NavItem {
                        source: NavSource::Entry(stored),
                        children: Vec::new(),
                    };
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    write_item(&mut a, ctx, &from_record)?;
                    write_item(&mut b, ctx, &from_entry)?;
                    assert_eq!(String::from_utf8_lossy(&b), String::from_utf8_lossy(&a));
                    assert_eq!(
                        serde_json::from_slice::<Value>(&a)?,
                        reference(ctx, &from_record)
                    );
                }
                Ok(())
            })
            .unwrap();
    }
}
