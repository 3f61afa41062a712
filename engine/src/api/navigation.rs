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
    Ok(Response::json(
        200,
        &Answer::new(ctx, &obj, &root, &items, &settings)?,
    ))
}

/// The navigation of `obj` (the `navigation` component): `{@id, items}`.
fn component(ctx: &Ctx<'_>, route: &Route, obj: &ContentRecord) -> Result<Value> {
    let (root, items, settings) = walk(ctx, route, obj)?;
    Ok(serde_json::to_value(Answer::new(
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

/// The answer, serialized straight from the records (keys in the sorted order a
/// `serde_json::Value` object has).
#[derive(Serialize)]
struct Answer<'a> {
    #[serde(rename = "@id")]
    id: String,
    items: Vec<Entry<'a>>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Entry<'a> {
    Link(NavLink),
    Item(ItemJson<'a>),
}

/// A navigation entry that is not content: the Home link and the control panel's extra links.
#[derive(Serialize)]
struct NavLink {
    #[serde(rename = "@id")]
    id: String,
    description: String,
    items: [(); 0],
    review_state: Option<String>,
    title: String,
}

impl<'a> Answer<'a> {
    fn new(
        ctx: &Ctx<'_>,
        obj: &ContentRecord,
        root: &ContentRecord,
        items: &'a [NavItem],
        settings: &navigation::NavigationSettings,
    ) -> Result<Self> {
        let mut out = Vec::new();
        if settings.show_home {
            out.push(Entry::Link(NavLink {
                id: ctx.url(&root.path),
                description: String::new(),
                items: [],
                review_state: None,
                title: "Home".into(),
            }));
        }
        for extra in &settings.extra_items {
            out.push(Entry::Link(NavLink {
                id: navigation::NavigationSettings::item_url(ctx, extra),
                description: extra.description.clone(),
                items: [],
                review_state: None,
                title: extra.title.clone(),
            }));
        }
        for item in items {
            out.push(Entry::Item(ItemJson::new(ctx, item)?));
        }
        Ok(Answer {
            id: format!("{}/@navigation", ctx.url(&obj.path)),
            items: out,
        })
    }
}

/// One navigation item: the catalog item fields (as [`catalog_value`] gives them for every name
/// of [`CATALOG_FIELDS`]) plus `description`, `markdown`, `items`, `start`, `end` and
/// `recurrence`.
struct ItemJson<'a> {
    rec: &'a ContentRecord,
    ty: std::sync::Arc<crate::model::ContentType>,
    url: String,
    markdown: String,
    created: String,
    modified: String,
    size: usize,
    children: Vec<ItemJson<'a>>,
}

impl<'a> ItemJson<'a> {
    fn new(ctx: &Ctx<'_>, item: &'a NavItem) -> Result<Self> {
        let rec = &item.rec;
        let ty = ctx.type_of(rec)?;
        Ok(ItemJson {
            rec,
            size: match super::files::primary_file(&ty, &rec.fields) {
                Some(f) => f.size as usize,
                None => rec.fields_size(),
            },
            ty,
            url: ctx.url(&rec.path),
            markdown: crate::exports::markdown(rec),
            created: iso(&rec.created),
            modified: iso(&rec.modified),
            children: item
                .children
                .iter()
                .map(|c| ItemJson::new(ctx, c))
                .collect::<Result<_>>()?,
        })
    }
}

impl Serialize for ItemJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        const NULL: Value = Value::Null;
        let r = self.rec;
        let field = |n: &str| r.fields.get(n).unwrap_or(&NULL);
        let date_or_none = |v: &'static str| -> std::result::Result<&Value, &str> {
            match field(v) {
                Value::Null => Err("None"),
                v => Ok(v),
            }
        };
        let creators = r.fields.get("creators");
        let owner = std::slice::from_ref(&r.owner);
        let mut m = s.serialize_map(Some(39))?;
        m.serialize_entry("@id", &self.url)?;
        m.serialize_entry("@type", &r.type_name)?;
        m.serialize_entry("CreationDate", &self.created)?;
        match creators.and_then(|c| c.get(0)) {
            Some(c) => m.serialize_entry("Creator", c)?,
            None => m.serialize_entry("Creator", &r.owner)?,
        }
        m.serialize_entry("Date", &self.modified)?;
        m.serialize_entry("Description", r.description())?;
        match date_or_none("effective") {
            Ok(v) => m.serialize_entry("EffectiveDate", v)?,
            Err(none) => m.serialize_entry("EffectiveDate", none)?,
        }
        match date_or_none("expires") {
            Ok(v) => m.serialize_entry("ExpirationDate", v)?,
            Err(none) => m.serialize_entry("ExpirationDate", none)?,
        }
        m.serialize_entry("ModificationDate", &self.modified)?;
        m.serialize_entry("Subject", field("subjects"))?;
        m.serialize_entry("Title", r.title())?;
        m.serialize_entry("Type", &r.type_name)?;
        m.serialize_entry("UID", &r.uid)?;
        m.serialize_entry("created", &self.created)?;
        m.serialize_entry("description", r.description())?;
        m.serialize_entry("effective", field("effective"))?;
        m.serialize_entry("end", &NULL)?;
        m.serialize_entry("exclude_from_nav", field("exclude_from_nav"))?;
        m.serialize_entry("expires", field("expires"))?;
        m.serialize_entry("getId", &r.id)?;
        m.serialize_entry("getObjSize", &self.size)?;
        let image_field = super::files::image_field(&self.ty, &r.fields);
        m.serialize_entry("hasPreviewImage", &image_field.is_some())?;
        m.serialize_entry("id", &r.id)?;
        m.serialize_entry("image_field", &image_field.unwrap_or_default())?;
        m.serialize_entry(
            "image_scales",
            &super::files::image_scales(&self.ty, &r.fields),
        )?;
        m.serialize_entry("is_folderish", &self.ty.folderish)?;
        m.serialize_entry("items", &self.children)?;
        match creators {
            Some(c) => m.serialize_entry("listCreators", c)?,
            None => m.serialize_entry("listCreators", owner)?,
        }
        m.serialize_entry("markdown", &self.markdown)?;
        match super::files::primary_file(&self.ty, &r.fields) {
            Some(f) => m.serialize_entry("mime_type", &f.content_type)?,
            None => m.serialize_entry("mime_type", "text/plain")?,
        }
        m.serialize_entry("modified", &self.modified)?;
        m.serialize_entry("path", if r.path.is_empty() { "/" } else { &r.path })?;
        m.serialize_entry("portal_type", &r.type_name)?;
        m.serialize_entry("recurrence", &NULL)?;
        m.serialize_entry("review_state", &r.review_state)?;
        m.serialize_entry("start", &NULL)?;
        m.serialize_entry("title", r.title())?;
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};

    /// An item as `catalog_value` builds it, name by name (the reference for [`ItemJson`]).
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
                    json!({"title": "A \"q\" é", "description": "d"}),
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
                        rec,
                        children: Vec::new(),
                    });
                }
                let mut top = NavItem {
                    rec: root.clone(),
                    children: kids,
                };
                top.rec.path = String::new();
                let built = serde_json::to_string(&ItemJson::new(ctx, &top)?)?;
                assert_eq!(built, serde_json::to_string(&reference(ctx, &top))?);
                Ok(())
            })
            .unwrap();
    }
}
