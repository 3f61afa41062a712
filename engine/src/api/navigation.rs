//! `@navigation`: the top navigation of a context (the items of its navigation root), one level
//! deep unless `expand.navigation.depth` asks for more. Expandable as the `navigation` component.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::Call;
use super::router::{Registry, RouteDef};
use super::serialize::iso;
#[cfg(test)]
use super::serialize::{catalog_value, CATALOG_FIELDS};
use super::summaries;
use super::Route;
use crate::context::Ctx;
use crate::error::{EngineError, Result};
use crate::http::Response;
use crate::model::ContentRecord;
use crate::navigation::{self, NavItem};
use crate::security::Permission;

/// Register `@navigation` and the `navigation` component.
pub fn register(r: &mut Registry) {
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
    let (root, items, settings) = walk(ctx, call.route, &obj)?;
    Ok(Response {
        status: 200,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: answer(ctx, &obj, &root, &items, &settings)?,
        stream: None,
        lines: None,
    })
}

/// The navigation of `obj` (the `navigation` component): `{@id, items}`.
fn component(ctx: &Ctx<'_>, route: &Route, obj: &ContentRecord) -> Result<Value> {
    let (root, items, settings) = walk(ctx, route, obj)?;
    Ok(serde_json::from_slice(&answer(
        ctx, obj, &root, &items, &settings,
    )?)?)
}

fn walk(
    ctx: &Ctx<'_>,
    route: &Route,
    obj: &ContentRecord,
) -> Result<(ContentRecord, Vec<NavItem>, navigation::NavigationSettings)> {
    let depth = depth(route)?;
    let settings = navigation::settings(ctx)?;
    let (root, items) = navigation::navigation(ctx, obj, depth, &settings)?;
    Ok((root, items, settings))
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
/// the content items by [`write_item`].
fn answer(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    root: &ContentRecord,
    items: &[NavItem],
    settings: &navigation::NavigationSettings,
) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(64 + 1024 * count(items));
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
            id: ctx.url(&root.path),
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
    for item in items {
        comma(&mut out);
        write_item(&mut out, ctx, item)?;
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}

/// How many items there are, at every level.
fn count(items: &[NavItem]) -> usize {
    items.iter().map(|i| 1 + count(&i.children)).sum()
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

/// One navigation item: the catalog item fields (as [`super::serialize::catalog_value`] gives
/// them for every name of [`super::serialize::CATALOG_FIELDS`]) plus `description`, `markdown`,
/// `items`, `start`, `end` and `recurrence`, in sorted key order, then its children.
fn write_item(out: &mut Vec<u8>, ctx: &Ctx<'_>, item: &NavItem) -> Result<()> {
    const NULL: Value = Value::Null;
    let r = &item.rec;
    let ty = ctx.type_of(r)?;
    let field = |n: &str| r.fields.get(n).unwrap_or(&NULL);
    let created = iso(&r.created);
    let modified = iso(&r.modified);
    let primary = super::files::primary_file(&ty, &r.fields);
    let image_field = super::files::image_field(&ty, &r.fields);
    let creators = r.fields.get("creators");
    let title = r.title();
    let description = r.description();

    out.extend_from_slice(b"{\"@id\":");
    url(out, ctx, &r.path)?;
    out.extend_from_slice(b",\"@type\":");
    string(out, &r.type_name)?;
    out.extend_from_slice(b",\"CreationDate\":");
    string(out, &created)?;
    out.extend_from_slice(b",\"Creator\":");
    match creators.and_then(|c| c.get(0)) {
        Some(c) => value(out, c)?,
        None => string(out, &r.owner)?,
    }
    out.extend_from_slice(b",\"Date\":");
    string(out, &modified)?;
    out.extend_from_slice(b",\"Description\":");
    string(out, description)?;
    out.extend_from_slice(b",\"EffectiveDate\":");
    match field("effective") {
        Value::Null => string(out, "None")?,
        v => value(out, v)?,
    }
    out.extend_from_slice(b",\"ExpirationDate\":");
    match field("expires") {
        Value::Null => string(out, "None")?,
        v => value(out, v)?,
    }
    out.extend_from_slice(b",\"ModificationDate\":");
    string(out, &modified)?;
    out.extend_from_slice(b",\"Subject\":");
    value(out, field("subjects"))?;
    out.extend_from_slice(b",\"Title\":");
    string(out, title)?;
    out.extend_from_slice(b",\"Type\":");
    string(out, &r.type_name)?;
    out.extend_from_slice(b",\"UID\":");
    string(out, &r.uid)?;
    out.extend_from_slice(b",\"created\":");
    string(out, &created)?;
    out.extend_from_slice(b",\"description\":");
    string(out, description)?;
    out.extend_from_slice(b",\"effective\":");
    value(out, field("effective"))?;
    out.extend_from_slice(b",\"end\":null,\"exclude_from_nav\":");
    value(out, field("exclude_from_nav"))?;
    out.extend_from_slice(b",\"expires\":");
    value(out, field("expires"))?;
    out.extend_from_slice(b",\"getId\":");
    string(out, &r.id)?;
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
    string(out, &r.id)?;
    out.extend_from_slice(b",\"image_field\":");
    string(out, image_field.as_deref().unwrap_or_default())?;
    out.extend_from_slice(b",\"image_scales\":");
    value(out, &super::files::image_scales(&ty, &r.fields))?;
    out.extend_from_slice(if ty.folderish {
        b",\"is_folderish\":true,\"items\":["
    } else {
        b",\"is_folderish\":false,\"items\":["
    });
    for (i, child) in item.children.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_item(out, ctx, child)?;
    }
    out.extend_from_slice(b"],\"listCreators\":");
    match creators {
        Some(c) => value(out, c)?,
        None => {
            out.push(b'[');
            string(out, &r.owner)?;
            out.push(b']');
        }
    }
    out.extend_from_slice(b",\"markdown\":");
    string(out, &crate::exports::markdown(r))?;
    out.extend_from_slice(b",\"mime_type\":");
    match &primary {
        Some(f) => string(out, &f.content_type)?,
        None => string(out, "text/plain")?,
    }
    out.extend_from_slice(b",\"modified\":");
    string(out, &modified)?;
    out.extend_from_slice(b",\"path\":");
    string(out, if r.path.is_empty() { "/" } else { &r.path })?;
    out.extend_from_slice(b",\"portal_type\":");
    string(out, &r.type_name)?;
    out.extend_from_slice(b",\"recurrence\":null,\"review_state\":");
    match &r.review_state {
        Some(s) => string(out, s)?,
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"start\":null,\"title\":");
    string(out, title)?;
    out.push(b'}');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};

    /// An item as `catalog_value` builds it, name by name (the reference for [`write_item`]).
    fn reference(ctx: &Ctx<'_>, item: &NavItem) -> Value {
        let mut m = Map::new();
        for name in CATALOG_FIELDS {
            if let Some(v) = catalog_value(ctx, &item.rec, name).unwrap() {
                m.insert(name.to_string(), v);
            }
        }
        m.insert("description".into(), json!(item.rec.description()));
        m.insert(
            "markdown".into(),
            json!(crate::exports::markdown(&item.rec)),
        );
        m.insert("start".into(), Value::Null);
        m.insert("end".into(), Value::Null);
        m.insert("recurrence".into(), Value::Null);
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
                let root = crate::tree::root(ctx)?;
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
                        crate::tree::new_record(ctx, &ty, &format!("f{i}"), "bob", fields);
                    if i == 3 {
                        rec.review_state = None;
                    }
                    kids.push(NavItem {
                        size: rec.fields_size(),
                        rec,
                        children: Vec::new(),
                    });
                }
                let mut top = NavItem {
                    size: root.fields_size(),
                    rec: root.clone(),
                    children: kids,
                };
                top.rec.path = String::new();
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
}
