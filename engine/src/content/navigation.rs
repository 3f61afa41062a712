//! Navigation and breadcrumbs: which objects the top navigation and the breadcrumbs of a context
//! show, read through the children index only (`c:<parent uid>:<pos>`), never the whole tree.
//!
//! The navigation lists the children of the navigation root ([`crate::content::multilingual::navigation_root`])
//! that the caller may view and that are not excluded from navigation, `depth` levels deep; only
//! folderish items are descended into, so a request reads the items it returns plus the siblings
//! it filters out. Each child is read from its catalog entry, the folder's children's entries
//! in one range scan of their listing copies (`x:c:`, [`crate::catalog::child_copies`]; in a
//! write request, where the catalog may be behind the tree, with the children's own keys,
//! [`crate::catalog::child_entries`]): its
//! `allowedRolesAndUsers` decide whether the caller may view it (no ancestors are read), and it
//! stands for the object's record unless the object has field values a catalog entry does not
//! keep (then the record is read too).

use serde::{Deserialize, Serialize};

use std::sync::Arc;

use crate::catalog::codec::{Known, ValueRef, View};
use crate::catalog::StoredEntry;
use crate::content::multilingual;
use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::model::{ContentRecord, ContentType, TypeRegistry};
use crate::core::security::{granting_roles, Permission};
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// An extra navigation entry configured in the navigation control panel (a link, not content).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ExtraItem {
    /// The link text.
    pub title: String,
    /// An absolute `http(s)` URL, or a site path starting with `/`.
    pub url: String,
    /// A short description.
    #[serde(default)]
    pub description: String,
}

/// What the top navigation shows besides the content of the navigation root (`s:navigation`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct NavigationSettings {
    /// Show a "Home" entry for the navigation root first.
    pub show_home: bool,
    /// Show non-folderish objects (pages) at the top level, not only folders.
    pub nonfolderish_tabs: bool,
    /// Only objects of these types appear (`None`: every type).
    pub displayed_types: Option<Vec<String>>,
    /// Links listed after "Home" and before the content.
    pub extra_items: Vec<ExtraItem>,
}

impl Default for NavigationSettings {
    fn default() -> Self {
        NavigationSettings {
            show_home: true,
            nonfolderish_tabs: true,
            displayed_types: None,
            extra_items: Vec::new(),
        }
    }
}

impl NavigationSettings {
    /// Check settings a client sent: known types, titled items, usable URLs.
    pub fn validate(&self, ctx: &Ctx<'_>) -> Result<()> {
        if let Some(types) = &self.displayed_types {
            let registry = ctx.types()?;
            if let Some(t) = types.iter().find(|t| registry.get(t).is_none()) {
                return Err(EngineError::bad_request(format!(
                    "'displayed_types': unknown content type '{t}'"
                )));
            }
        }
        for item in &self.extra_items {
            if item.title.trim().is_empty() {
                return Err(EngineError::bad_request(
                    "'extra_items': every item needs a non-empty 'title'",
                ));
            }
            let u = item.url.as_str();
            let ok = (u.starts_with('/') && !u.starts_with("//"))
                || ((u.starts_with("http://") || u.starts_with("https://")) && u.len() > 8);
            if !ok || u.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(EngineError::bad_request(format!(
                    "'extra_items': '{u}' is neither an http(s) URL nor a site path starting with '/'"
                )));
            }
        }
        Ok(())
    }

    /// The absolute URL of an extra item.
    pub fn item_url(ctx: &Ctx<'_>, item: &ExtraItem) -> String {
        if item.url.starts_with('/') {
            ctx.url(item.url.trim_end_matches('/'))
        } else {
            item.url.clone()
        }
    }
}

/// The navigation settings (defaults when never set).
pub fn settings(ctx: &Ctx<'_>) -> Result<NavigationSettings> {
    Ok(ctx
        .get_json(crate::core::keys::NAVIGATION)?
        .unwrap_or_default())
}

/// Store the navigation settings.
pub fn save_settings(ctx: &mut Ctx<'_>, s: &NavigationSettings) -> Result<()> {
    ctx.put_json(crate::core::keys::NAVIGATION, s)?;
    ctx.emit(crate::core::events::Event::SettingsChanged {
        settings: "navigation".into(),
    });
    Ok(())
}

/// One navigation entry and the entries below it (empty beyond the requested depth): the tree
/// [`Navigation::tree`] and [`subtree`] build for the answers that are not written as the walk
/// goes (a Nick site's).
pub struct NavItem {
    /// Where its values come from: its catalog entry when the entry holds every field value of
    /// the object (the entry's size says so: the module's documentation), else its stored record.
    pub source: NavSource,
    /// Its navigation children.
    pub children: Vec<NavItem>,
}

impl NavItem {
    /// Hand `items` (and their children) to `visitor` as the walk would have.
    #[cfg(test)]
    pub fn visit_all<V: NavVisitor>(
        ctx: &Ctx<'_>,
        items: &[NavItem],
        visitor: &mut V,
    ) -> Result<()> {
        let types = ctx.types()?;
        for item in items {
            let view;
            let (source, type_name, size) = match &item.source {
                NavSource::Entry(stored) => {
                    view = stored.view()?;
                    let known = view.fields.known();
                    (
                        NavRef::Entry {
                            stored,
                            view: &view,
                            known,
                        },
                        view.type_name,
                        view.size,
                    )
                }
                NavSource::Record(rec) => (
                    NavRef::Record(rec),
                    rec.type_name.as_str(),
                    rec.fields_size(),
                ),
            };
            let ty = types.require(type_name)?;
            let entry = NavEntry {
                source,
                size,
                ty: &ty,
            };
            visitor.item(&entry, &mut |v| NavItem::visit_all(ctx, &item.children, v))?;
        }
        Ok(())
    }
}

/// The values of a navigation item.
pub enum NavSource {
    /// The object's catalog entry as stored, holding every field value the object has: read in
    /// place ([`StoredEntry::view`]) rather than decoded into a record.
    Entry(StoredEntry),
    /// The object's record (boxed: an entry is the common case). Never save it.
    Record(Box<ContentRecord>),
}

/// One navigation item as the walk hands it to a [`NavVisitor`], borrowed from what the walk
/// read to decide on it (nothing is read or decoded twice).
pub struct NavEntry<'a> {
    /// Where its values come from.
    pub source: NavRef<'a>,
    /// The size of its field values as JSON ([`ContentRecord::fields_size`], `getObjSize`).
    pub size: usize,
    /// Its type.
    pub ty: &'a ContentType,
}

/// The values of a navigation item, borrowed ([`NavSource`] as the walk holds it).
pub enum NavRef<'a> {
    /// Its catalog entry read in place, holding every field value the object has, with the
    /// listing fields summaries read ([`Fields::known`]).
    Entry {
        /// The entry as stored.
        stored: &'a StoredEntry,
        /// The entry.
        view: &'a View<'a>,
        /// Its listing fields.
        known: Known<'a>,
    },
    /// Its record.
    Record(&'a ContentRecord),
}

/// What the walk hands each navigation item to, in order, depth first.
pub trait NavVisitor {
    /// Take `item`; `children` hands its navigation children (none beyond the requested depth)
    /// to the visitor: call it once, so an answer can write an item's values before its
    /// children and after them.
    fn item(
        &mut self,
        item: &NavEntry<'_>,
        children: &mut dyn FnMut(&mut Self) -> Result<()>,
    ) -> Result<()>;
}

/// A visitor building the tree of [`NavItem`]s.
struct TreeBuilder {
    /// The items of each level being visited, the top level first.
    levels: Vec<Vec<NavItem>>,
}

impl Default for TreeBuilder {
    fn default() -> Self {
        TreeBuilder {
            levels: vec![Vec::new()],
        }
    }
}

impl NavVisitor for TreeBuilder {
    fn item(
        &mut self,
        item: &NavEntry<'_>,
        children: &mut dyn FnMut(&mut Self) -> Result<()>,
    ) -> Result<()> {
        self.levels.push(Vec::new());
        children(self)?;
        let kids = self.levels.pop().unwrap_or_default();
        let source = match &item.source {
            NavRef::Entry { stored, .. } => NavSource::Entry((*stored).clone()),
            NavRef::Record(rec) => NavSource::Record(Box::new((*rec).clone())),
        };
        let node = NavItem {
            source,
            children: kids,
        };
        match self.levels.last_mut() {
            Some(level) => level.push(node),
            None => self.levels.push(vec![node]),
        }
        Ok(())
    }
}

impl TreeBuilder {
    /// What the builder was handed at the top level.
    fn finish(mut self) -> Vec<NavItem> {
        self.levels.pop().unwrap_or_default()
    }
}

/// What the walk decides on, borrowed from a [`NavSource`].
struct Facts<'a> {
    path: &'a str,
    type_name: &'a str,
    excluded: bool,
    language: &'a str,
}

impl<'a> Facts<'a> {
    fn of_view(v: &View<'a>, f: &Known<'a>) -> Self {
        Facts {
            path: v.head.path,
            type_name: v.type_name,
            excluded: f
                .exclude_from_nav
                .is_some_and(|r| matches!(r.get(), ValueRef::Bool(true))),
            language: f.language.and_then(|r| r.as_str()).unwrap_or(""),
        }
    }

    fn of_record(rec: &'a ContentRecord) -> Self {
        Facts {
            path: &rec.path,
            type_name: &rec.type_name,
            excluded: rec
                .fields
                .get("exclude_from_nav")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
            language: multilingual::language_of(rec),
        }
    }
}

/// Whether the caller may view `obj`, given its ancestors (root first) for local roles.
pub fn can_view(ctx: &Ctx<'_>, obj: &ContentRecord, ancestors: &[ContentRecord]) -> Result<bool> {
    let ty = ctx.type_of(obj)?;
    let allowed = granting_roles(
        Permission::View,
        obj,
        ty.workflow.as_deref(),
        &ctx.core.workflows,
    );
    Ok(ctx.principal.holds_any(allowed, obj, ancestors))
}

fn within(context: &ContentRecord, path: &str) -> bool {
    context.path == path
        || context
            .path
            .strip_prefix(path)
            .is_some_and(|rest| rest.starts_with('/'))
}

fn missing(uid: &str) -> EngineError {
    EngineError::Internal(format!("child {uid} is listed but missing"))
}

/// A child of a folder as the walk reads it.
enum Child {
    /// Its catalog entry (the object's uid is in it).
    Entry(StoredEntry),
    /// A child without a catalog entry (an index behind the tree, in a write request): its uid.
    Unindexed(String),
}

/// The children of `folder_uid`, in order, from their listing copies alone in a read request
/// ([`crate::catalog::child_copies`]: the catalog is committed, so the copies are the
/// children), else from the children and their copies ([`crate::catalog::child_entries`]).
fn children(ctx: &Ctx<'_>, folder_uid: &str) -> Result<Vec<Child>> {
    if !ctx.is_write() {
        return Ok(crate::catalog::child_copies(ctx, folder_uid)?
            .into_iter()
            .map(Child::Entry)
            .collect());
    }
    Ok(
        crate::catalog::child_entries(ctx, folder_uid, 0, usize::MAX)?
            .into_iter()
            .map(|(uid, stored)| stored.map_or(Child::Unindexed(uid), Child::Entry))
            .collect(),
    )
}

struct Walk<'w> {
    context: &'w ContentRecord,
    depth: usize,
    settings: &'w NavigationSettings,
    /// In a multilingual site, only items of this language (or of none) are listed.
    language: Option<String>,
    /// The caller's search tokens ([`crate::core::security::Principal::search_tokens`]).
    tokens: Vec<String>,
    /// The type registry (read once for the walk).
    types: Arc<TypeRegistry>,
}

impl Walk<'_> {
    /// Hand the navigation items among the children of the folderish object `folder_uid` at
    /// `level` (and their children, as deep as the walk goes) to `visitor`.
    ///
    /// Each child is read from its catalog entry: the entry's `allowedRolesAndUsers` decide
    /// visibility (they meet the caller's search tokens exactly when it holds View, as for
    /// folder listings), and the entry holds the structural data and the listing fields
    /// ([`crate::core::model::LISTING_FIELDS`] that are set and not null). When those are all
    /// the object's field values (their JSON size is the entry's size, the size of all of them:
    /// any other field, or a listing field left out for being null, would make that larger),
    /// the entry stands for the record and is read in place, never decoded; otherwise (blocks,
    /// text, ...: the answer's `markdown` reads blocks) the record is read. Without an entry,
    /// the record is read and checked (`ancestors` caches the ancestors the siblings share).
    fn level<V: NavVisitor>(
        &self,
        ctx: &Ctx<'_>,
        folder_uid: &str,
        level: usize,
        visitor: &mut V,
    ) -> Result<()> {
        let mut ancestors = None;
        for child in children(ctx, folder_uid)? {
            let stored = match child {
                Child::Entry(stored) => stored,
                Child::Unindexed(uid) => {
                    let rec = tree::load(ctx, &uid)?.ok_or_else(|| missing(&uid))?;
                    if ctx.permitted_within(Permission::View, &rec, &mut ancestors)? {
                        self.record_item(ctx, &rec, level, visitor)?;
                    }
                    continue;
                }
            };
            let view = stored.view()?;
            if !view.head.visible_to(&self.tokens) {
                continue;
            }
            let uid = view.uid;
            let (known, size) = view.fields.known_and_json_size()?;
            if size != view.size {
                let rec = tree::load(ctx, uid)?.ok_or_else(|| missing(uid))?;
                self.record_item(ctx, &rec, level, visitor)?;
                continue;
            }
            let Some(ty) = self.shown(&Facts::of_view(&view, &known), level)? else {
                continue;
            };
            let entry = NavEntry {
                source: NavRef::Entry {
                    stored: &stored,
                    view: &view,
                    known,
                },
                size: view.size,
                ty: &ty,
            };
            self.visit(ctx, uid, &entry, level, visitor)?;
        }
        Ok(())
    }

    /// [`Walk::level`] for an object read from its record.
    fn record_item<V: NavVisitor>(
        &self,
        ctx: &Ctx<'_>,
        rec: &ContentRecord,
        level: usize,
        visitor: &mut V,
    ) -> Result<()> {
        let Some(ty) = self.shown(&Facts::of_record(rec), level)? else {
            return Ok(());
        };
        let entry = NavEntry {
            source: NavRef::Record(rec),
            size: rec.fields_size(),
            ty: &ty,
        };
        self.visit(ctx, &rec.uid, &entry, level, visitor)
    }

    /// Hand the listed item `entry` (the object `uid`) at `level` to `visitor`, with its
    /// children when the walk goes below it.
    fn visit<V: NavVisitor>(
        &self,
        ctx: &Ctx<'_>,
        uid: &str,
        entry: &NavEntry<'_>,
        level: usize,
        visitor: &mut V,
    ) -> Result<()> {
        let descend = level < self.depth && entry.ty.folderish;
        visitor.item(entry, &mut |v| {
            if descend {
                self.level(ctx, uid, level + 1, v)
            } else {
                Ok(())
            }
        })
    }

    /// Whether the settings show an item with `kid`'s values at `level` (then its type).
    fn shown(&self, kid: &Facts<'_>, level: usize) -> Result<Option<Arc<ContentType>>> {
        // Top-level tabs never show excluded items; deeper levels show them on the way to
        // the context.
        if kid.excluded && (level == 1 || !within(self.context, kid.path)) {
            return Ok(None);
        }
        let kid_type = self.types.require(kid.type_name)?;
        if level == 1 && !self.settings.nonfolderish_tabs && !kid_type.folderish {
            return Ok(None);
        }
        if let Some(types) = &self.settings.displayed_types {
            if !types.contains(&kid_type.name) {
                return Ok(None);
            }
        }
        if let Some(lang) = &self.language {
            if !kid.language.is_empty() && kid.language != lang {
                return Ok(None);
            }
        }
        Ok(Some(kid_type))
    }
}

/// The top navigation of a context: its navigation root and the walk below it
/// ([`navigation`]).
pub struct Navigation<'w> {
    /// The navigation root.
    pub root: ContentRecord,
    walk: Walk<'w>,
}

impl Navigation<'_> {
    /// Hand the navigation items to `visitor`, depth first.
    pub fn visit<V: NavVisitor>(&self, ctx: &Ctx<'_>, visitor: &mut V) -> Result<()> {
        if self.root.child_count == 0 || !ctx.type_of(&self.root)?.folderish {
            return Ok(());
        }
        self.walk.level(ctx, &self.root.uid, 1, visitor)
    }

    /// The navigation items as a tree.
    pub fn tree(&self, ctx: &Ctx<'_>) -> Result<Vec<NavItem>> {
        let mut b = TreeBuilder::default();
        self.visit(ctx, &mut b)?;
        Ok(b.finish())
    }
}

/// The navigation root of `context` and the walk of its navigation items, `depth` (at least 1)
/// levels deep, filtered as `settings` say.
pub fn navigation<'w>(
    ctx: &Ctx<'_>,
    context: &'w ContentRecord,
    depth: usize,
    settings: &'w NavigationSettings,
) -> Result<Navigation<'w>> {
    let root = multilingual::navigation_root(ctx, context)?;
    let s = multilingual::settings(ctx)?;
    let language = if s.is_multilingual() {
        match multilingual::language_of(context) {
            "" => None,
            l => Some(l.to_string()),
        }
    } else {
        None
    };
    let walk = Walk {
        context,
        depth: depth.max(1),
        settings,
        language,
        tokens: ctx.principal.search_tokens(),
        types: ctx.types()?,
    };
    Ok(Navigation { root, walk })
}

/// The navigation items below `folder` itself (not below its navigation root), `depth` (at
/// least 1) levels deep, filtered as `settings` say, with no rule of the top tabs: the tree of
/// a Nick site's context navigation. Items excluded from navigation are left out.
pub fn subtree(
    ctx: &Ctx<'_>,
    folder: &ContentRecord,
    depth: usize,
    settings: &NavigationSettings,
) -> Result<Vec<NavItem>> {
    let s = multilingual::settings(ctx)?;
    let language = match multilingual::language_of(folder) {
        l if s.is_multilingual() && !l.is_empty() => Some(l.to_string()),
        _ => None,
    };
    // Levels count from the navigation root's children (1, the top tabs); the walk starts one
    // below, so the tabs' rules do not apply.
    let walk = Walk {
        context: folder,
        depth: depth.max(1).saturating_add(1),
        settings,
        language,
        tokens: ctx.principal.search_tokens(),
        types: ctx.types()?,
    };
    if folder.child_count == 0 || !ctx.type_of(folder)?.folderish {
        return Ok(Vec::new());
    }
    let mut b = TreeBuilder::default();
    walk.level(ctx, &folder.uid, 2, &mut b)?;
    Ok(b.finish())
}

/// The navigation root of `context` and the breadcrumbs from below it down to `context` (which is
/// included unless it is the root), skipping objects the caller may not view.
pub fn breadcrumbs(
    ctx: &Ctx<'_>,
    context: &ContentRecord,
) -> Result<(ContentRecord, Vec<ContentRecord>)> {
    let mut chain = tree::ancestors(ctx, context)?;
    chain.push(context.clone());
    // The root is on the chain: the deepest language root folder, else the site root.
    let s = multilingual::settings(ctx)?;
    let root = chain
        .iter()
        .rev()
        .find(|r| s.root_language(&r.uid).is_some())
        .or_else(|| chain.first())
        .cloned()
        .unwrap_or_else(|| context.clone());
    let mut items = Vec::new();
    for (i, rec) in chain.iter().enumerate() {
        let below_root = rec.path.len() > root.path.len()
            && rec
                .path
                .strip_prefix(&root.path)
                .is_some_and(|rest| rest.starts_with('/'));
        if below_root && can_view(ctx, rec, &chain[..i])? {
            items.push(rec.clone());
        }
    }
    Ok((root, items))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    fn rec(path: &str) -> ContentRecord {
        ContentRecord {
            uid: "u".into(),
            id: path.rsplit('/').next().unwrap_or("").into(),
            path: path.into(),
            parent: None,
            type_name: "Folder".into(),
            pos: 0,
            created: chrono::DateTime::UNIX_EPOCH,
            modified: chrono::DateTime::UNIX_EPOCH,
            owner: String::new(),
            review_state: None,
            child_count: 0,
            next_pos: 0,
            local_roles: Default::default(),
            block_local_roles: false,
            fields: Map::new(),
            rev: 0,
        }
    }

    #[test]
    fn within_means_self_or_below() {
        assert!(within(&rec("/a/b"), "/a"));
        assert!(within(&rec("/a"), "/a"));
        assert!(!within(&rec("/ab"), "/a"));
        assert!(!within(&rec("/a"), "/a/b"));
    }
}
