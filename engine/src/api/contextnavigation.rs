//! `@contextnavigation`: the navigation portlet of a context: the tree below a start folder (by
//! default the first-level folder the context lies in), in folder order, from the catalog (only
//! items the caller may view, not excluded from navigation). Expandable as the
//! `contextnavigation` component.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use super::Route;
use crate::catalog::{self, Entry, Index, Sort};
use crate::core::error::Result;
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register `@contextnavigation` and its component.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@contextnavigation", get)
            .requires(Permission::View)
            .summary(
                "The navigation portlet of the context: the tree below the start folder \
                 (`expand.contextnavigation.topLevel`, default 1: the first-level folder holding \
                 the context; `root_path`, `includeTop`, `bottomLevel`, `currentFolderOnly`, \
                 `name`)",
            )
            .query::<ContextNavQuery>()
            .answers::<ContextNav>(),
    );
    r.component("contextnavigation", Some(component));
}

/// The parameters (all optional).
#[derive(Deserialize, JsonSchema, Default)]
pub struct ContextNavQuery {
    /// A title for the portlet (default "Navigation").
    #[serde(rename = "expand.contextnavigation.name", default)]
    pub name: Option<String>,
    /// A path below the navigation root to start from.
    #[serde(rename = "expand.contextnavigation.root_path", default)]
    pub root_path: Option<String>,
    /// Show the start folder itself as the first item.
    #[serde(rename = "expand.contextnavigation.includeTop", default)]
    pub include_top: Option<String>,
    /// Start this many levels below the navigation root (default 1).
    #[serde(rename = "expand.contextnavigation.topLevel", default)]
    pub top_level: Option<String>,
    /// Show at most this many levels below the navigation root (0, the default: all).
    #[serde(rename = "expand.contextnavigation.bottomLevel", default)]
    pub bottom_level: Option<String>,
    /// Start from the context's folder.
    #[serde(rename = "expand.contextnavigation.currentFolderOnly", default)]
    pub current_folder_only: Option<String>,
}

/// The answer.
#[derive(Serialize, JsonSchema)]
pub struct ContextNav {
    /// `<context>/@contextnavigation`.
    #[serde(rename = "@id")]
    pub id: String,
    /// Whether there is anything to show.
    pub available: bool,
    /// Whether `name` was given.
    pub has_custom_name: bool,
    /// The tree.
    pub items: Vec<NavNode>,
    /// The title.
    pub title: String,
    /// The site map of the navigation root.
    pub url: String,
}

/// One node of the tree.
#[derive(Serialize, JsonSchema)]
pub struct NavNode {
    /// Its URL.
    #[serde(rename = "@id")]
    pub id: String,
    /// Description.
    pub description: String,
    /// Its URL (again, for links).
    pub href: String,
    /// Icon (none).
    pub icon: String,
    /// Whether it is the context.
    pub is_current: bool,
    /// Whether it is folderish.
    pub is_folderish: bool,
    /// Whether it is an ancestor of the context.
    pub is_in_path: bool,
    /// Its children in the tree.
    pub items: Vec<NavNode>,
    /// Its id.
    pub normalized_id: String,
    /// Workflow state.
    pub review_state: Option<String>,
    /// Thumbnail (none).
    pub thumb: String,
    /// Title.
    pub title: String,
    /// Its type, normalized (`page`, `folder`).
    #[serde(rename = "type")]
    pub type_name: String,
}

/// The answer on a Nick site: the tree below the context itself, every item with Nick's
/// catalog columns and its children under `items`.
#[derive(Serialize, JsonSchema)]
pub struct NickContextNav {
    /// `<context>/@contextnavigation`.
    #[serde(rename = "@id")]
    pub id: String,
    /// The tree (with `includeTop`, the context first, without children).
    pub items: Vec<serde_json::Value>,
}

fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    if ctx.profile().is_nick() {
        return Ok(Response::json(200, &nick_build(ctx, call.route, &obj)?));
    }
    Ok(Response::json(200, &build(ctx, call.route, &obj)?))
}

fn component(ctx: &Ctx<'_>, route: &Route, obj: &ContentRecord) -> Result<serde_json::Value> {
    if ctx.profile().is_nick() {
        return Ok(serde_json::to_value(nick_build(ctx, route, obj)?)?);
    }
    Ok(serde_json::to_value(build(ctx, route, obj)?)?)
}

/// Levels a Nick context navigation shows when `bottomLevel` is 0 or not given (Nick's
/// "all").
const NICK_ALL_LEVELS: usize = 1000;

/// Nick's context navigation ([`NickContextNav`]): the navigation items below the context,
/// `bottomLevel` levels deep (0 or none: all), with `includeTop` the context first.
fn nick_build(ctx: &Ctx<'_>, route: &Route, obj: &ContentRecord) -> Result<NickContextNav> {
    let q: ContextNavQuery = super::extract::query(route)?;
    let depth = match level(&q.bottom_level, "expand.contextnavigation.bottomLevel", 0)? {
        0 => NICK_ALL_LEVELS,
        n => n.min(NICK_ALL_LEVELS),
    };
    let settings = crate::content::navigation::settings(ctx)?;
    let tree = crate::content::navigation::subtree(ctx, obj, depth, &settings)?;
    let mut items = Vec::new();
    if flag(&q.include_top) {
        let mut top = super::nick_items::item(ctx, obj)?;
        top.insert("items".into(), serde_json::Value::Array(Vec::new()));
        items.push(serde_json::Value::Object(top));
    }
    items.extend(super::navigation::nick_tree(ctx, &tree)?);
    Ok(NickContextNav {
        id: format!("{}/@contextnavigation", ctx.url(&obj.path)),
        items,
    })
}

fn flag(v: &Option<String>) -> bool {
    matches!(
        v.as_deref().map(str::trim),
        Some("1" | "true" | "True" | "on" | "yes")
    )
}

fn level(v: &Option<String>, param: &str, default: usize) -> Result<usize> {
    match v.as_deref().map(str::trim) {
        None | Some("") => Ok(default),
        Some(s) => s.parse().map_err(|_| {
            catalog::bad_param(param, format!("expected a non-negative integer, got '{s}'"))
        }),
    }
}

/// Path segments of `path` below `root` (None when it is not inside it).
fn below(path: &str, root: &str) -> Option<usize> {
    if path == root {
        return Some(0);
    }
    let rest = if root.is_empty() {
        path
    } else {
        path.strip_prefix(root)?
    };
    rest.starts_with('/').then(|| rest.matches('/').count())
}

fn build(ctx: &Ctx<'_>, route: &Route, obj: &ContentRecord) -> Result<ContextNav> {
    let q: ContextNavQuery = super::extract::query(route)?;
    let top_level = level(&q.top_level, "expand.contextnavigation.topLevel", 1)?;
    let bottom_level = level(&q.bottom_level, "expand.contextnavigation.bottomLevel", 0)?;
    let nav_root = crate::content::multilingual::navigation_root(ctx, obj)?;
    let mut root_path = nav_root.path.clone();
    if let Some(p) = q
        .root_path
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty() && *p != "/")
    {
        root_path = format!("{root_path}/{}", p.trim_matches('/'));
    }
    // The folder the tree starts from.
    let start: Option<String> = if flag(&q.current_folder_only) {
        Some(if ctx.type_of(obj)?.folderish {
            obj.path.clone()
        } else {
            obj.parent_path().unwrap_or("").to_string()
        })
    } else {
        match below(&obj.path, &root_path) {
            Some(depth) if depth >= top_level => {
                let segs: Vec<&str> = obj.path[root_path.len()..]
                    .split('/')
                    .filter(|s| !s.is_empty())
                    .take(top_level)
                    .collect();
                Some(format!(
                    "{root_path}{}",
                    segs.iter().map(|s| format!("/{s}")).collect::<String>()
                ))
            }
            Some(_) | None if top_level == 0 => Some(root_path.clone()),
            _ => None,
        }
    };
    let start_depth = start
        .as_deref()
        .and_then(|s| below(s, &nav_root.path))
        .unwrap_or(0);
    let mut items = Vec::new();
    if let Some(start) = &start {
        if flag(&q.include_top) {
            if let Some(e) = entry_at(ctx, start)? {
                items.push(node(ctx, &e, obj, Vec::new())?);
            }
        }
        let mut budget = MAX_NODES;
        items.extend(children(
            ctx,
            start,
            obj,
            start_depth + 1,
            bottom_level,
            &mut budget,
        )?);
    }
    let has_custom_name = q.name.as_deref().is_some_and(|n| !n.is_empty());
    Ok(ContextNav {
        id: format!("{}/@contextnavigation", ctx.url(&obj.path)),
        available: !items.is_empty(),
        has_custom_name,
        items,
        title: q
            .name
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "Navigation".into()),
        url: format!("{}/sitemap", ctx.url(&nav_root.path)),
    })
}

fn entry_at(ctx: &Ctx<'_>, path: &str) -> Result<Option<Entry>> {
    let q = catalog::Query {
        paths: vec![path.to_string()],
        depth: Some(0),
        ..Default::default()
    };
    Ok(catalog::search(ctx, &q)?.into_iter().next())
}

/// Most nodes of a tree: past them, only folders on the context's path are expanded (a tree
/// expanded to every level on a large site would be huge).
const MAX_NODES: usize = 500;

/// The nodes for the children of `path` (at `depth` below the navigation root), each with its
/// own children down to `bottom` (0: no limit), within `budget` nodes for folders off the path.
fn children(
    ctx: &Ctx<'_>,
    path: &str,
    current: &ContentRecord,
    depth: usize,
    bottom: usize,
    budget: &mut usize,
) -> Result<Vec<NavNode>> {
    if bottom > 0 && depth > bottom {
        return Ok(Vec::new());
    }
    let q = catalog::Query {
        paths: vec![path.to_string()],
        depth: Some(1),
        sort: vec![Sort {
            index: Index::Position,
            reverse: false,
        }],
        ..Default::default()
    };
    let mut out = Vec::new();
    for e in catalog::search(ctx, &q)? {
        let excluded = e
            .fields
            .get("exclude_from_nav")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        if excluded && e.uid != current.uid {
            continue;
        }
        *budget = budget.saturating_sub(1);
        let on_path = e.uid == current.uid
            || e.path.is_empty()
            || current.path.starts_with(&format!("{}/", e.path));
        let kids = if e.folderish && (on_path || *budget > 0) {
            children(ctx, &e.path, current, depth + 1, bottom, budget)?
        } else {
            Vec::new()
        };
        out.push(node(ctx, &e, current, kids)?);
    }
    Ok(out)
}

fn node(ctx: &Ctx<'_>, e: &Entry, current: &ContentRecord, items: Vec<NavNode>) -> Result<NavNode> {
    let url = ctx.url(&e.path);
    let rec = e.record();
    Ok(NavNode {
        id: url.clone(),
        description: rec.description().to_string(),
        href: url,
        icon: String::new(),
        is_current: e.uid == current.uid,
        is_folderish: e.folderish,
        is_in_path: e.uid != current.uid
            && (e.path.is_empty() || current.path.starts_with(&format!("{}/", e.path))),
        items,
        normalized_id: e.id.clone(),
        review_state: e.review_state.clone(),
        thumb: String::new(),
        title: e.title().to_string(),
        type_name: e.type_name.to_lowercase().replace(' ', "-"),
    })
}
