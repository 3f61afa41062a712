//! Navigation and breadcrumbs: which objects the top navigation and the breadcrumbs of a context
//! show, read through the children index only (`c:<parent uid>:<pos>`), never the whole tree.
//!
//! The navigation lists the children of the navigation root ([`crate::content::multilingual::navigation_root`])
//! that the caller may view and that are not excluded from navigation, `depth` levels deep; only
//! folderish items are descended into, so a request reads the items it returns plus the siblings
//! it filters out. Each child is read from its catalog entry, the folder's children's entries
//! in one range scan ([`crate::catalog::child_entries`]: their listing copies, `x:c:`): its
//! `allowedRolesAndUsers` decide whether the caller may view it (no ancestors are read), and it
//! stands for the object's record unless the object has field values a catalog entry does not
//! keep (then the record is read too).

use serde::{Deserialize, Serialize};

use crate::catalog::codec::{ValueRef, View};
use crate::catalog::StoredEntry;
use crate::content::multilingual;
use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::model::ContentRecord;
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

/// One navigation entry and the entries below it (empty beyond the requested depth).
pub struct NavItem {
    /// Where its values come from: its catalog entry when the entry holds every field value of
    /// the object (the entry's size says so: the module's documentation), else its stored record.
    pub source: NavSource,
    /// The size of its field values as JSON ([`ContentRecord::fields_size`], `getObjSize`).
    pub size: usize,
    /// Its navigation children.
    pub children: Vec<NavItem>,
}

impl NavItem {
    /// An item without children.
    pub fn new(source: NavSource, size: usize) -> Self {
        NavItem {
            source,
            size,
            children: Vec::new(),
        }
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

/// What the walk decides on, borrowed from a [`NavSource`].
struct Facts<'a> {
    path: &'a str,
    type_name: &'a str,
    excluded: bool,
    language: &'a str,
}

impl<'a> Facts<'a> {
    fn of_view(v: &View<'a>) -> Self {
        let f = v.fields.known();
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

struct Walk<'w> {
    context: &'w ContentRecord,
    depth: usize,
    settings: &'w NavigationSettings,
    /// In a multilingual site, only items of this language (or of none) are listed.
    language: Option<String>,
    /// The caller's search tokens ([`crate::core::security::Principal::search_tokens`]).
    tokens: Vec<String>,
}

impl Walk<'_> {
    /// The navigation items among the children of the folderish object `folder_uid`.
    fn level(&self, ctx: &Ctx<'_>, folder_uid: &str, level: usize) -> Result<Vec<NavItem>> {
        let mut out = Vec::new();
        let mut ancestors = None;
        for (uid, stored) in crate::catalog::child_entries(ctx, folder_uid, 0, usize::MAX)? {
            let Some((mut item, folderish)) =
                self.listed(ctx, &uid, stored, level, &mut ancestors)?
            else {
                continue;
            };
            if level < self.depth && folderish {
                item.children = self.level(ctx, &uid, level + 1)?;
            }
            out.push(item);
        }
        Ok(out)
    }

    /// The child `uid` (with its catalog entry, `stored`) as a navigation item (its children
    /// not read yet) and whether it is folderish, if the caller may view it and the settings
    /// show it at `level`.
    ///
    /// Read from its catalog entry: the entry's `allowedRolesAndUsers` decide visibility (they
    /// meet the caller's search tokens exactly when it holds View, as for folder listings), and
    /// the entry holds the structural data and the listing fields
    /// ([`crate::core::model::LISTING_FIELDS`] that are set and not null). When those are all the
    /// object's field values (their JSON size is the entry's size, the size of all of them: any
    /// other field, or a listing field left out for being null, would make that larger), the
    /// entry stands for the record and is kept as stored (read in place, never decoded);
    /// otherwise (blocks, text, ...: the answer's `markdown` reads blocks) the record is read.
    /// Without an entry, the record is read and checked (`ancestors` caches the ancestors the
    /// siblings share).
    fn listed(
        &self,
        ctx: &Ctx<'_>,
        uid: &str,
        stored: Option<StoredEntry>,
        level: usize,
        ancestors: &mut Option<Vec<ContentRecord>>,
    ) -> Result<Option<(NavItem, bool)>> {
        let Some(stored) = stored else {
            let rec = tree::load(ctx, uid)?.ok_or_else(|| missing(uid))?;
            if !ctx.permitted_within(Permission::View, &rec, ancestors)? {
                return Ok(None);
            }
            return self.record_item(ctx, rec, level);
        };
        let v = stored.view()?;
        if !v.head.visible_to(&self.tokens) {
            return Ok(None);
        }
        if v.fields.json_size()? != v.size {
            let rec = tree::load(ctx, uid)?.ok_or_else(|| missing(uid))?;
            return self.record_item(ctx, rec, level);
        }
        let size = v.size;
        let Some(folderish) = self.shown(ctx, &Facts::of_view(&v), level)? else {
            return Ok(None);
        };
        Ok(Some((
            NavItem::new(NavSource::Entry(stored), size),
            folderish,
        )))
    }

    /// [`Walk::listed`] for an object read from its record.
    fn record_item(
        &self,
        ctx: &Ctx<'_>,
        rec: ContentRecord,
        level: usize,
    ) -> Result<Option<(NavItem, bool)>> {
        let Some(folderish) = self.shown(ctx, &Facts::of_record(&rec), level)? else {
            return Ok(None);
        };
        let size = rec.fields_size();
        Ok(Some((
            NavItem::new(NavSource::Record(Box::new(rec)), size),
            folderish,
        )))
    }

    /// Whether the settings show an item with `kid`'s values at `level` (then whether its type
    /// is folderish).
    fn shown(&self, ctx: &Ctx<'_>, kid: &Facts<'_>, level: usize) -> Result<Option<bool>> {
        // Top-level tabs never show excluded items; deeper levels show them on the way to
        // the context.
        if kid.excluded && (level == 1 || !within(self.context, kid.path)) {
            return Ok(None);
        }
        let kid_type = ctx.types()?.require(kid.type_name)?;
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
        Ok(Some(kid_type.folderish))
    }
}

/// The navigation root of `context` and its navigation items, `depth` (at least 1) levels deep,
/// filtered as `settings` say.
pub fn navigation(
    ctx: &Ctx<'_>,
    context: &ContentRecord,
    depth: usize,
    settings: &NavigationSettings,
) -> Result<(ContentRecord, Vec<NavItem>)> {
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
    };
    let items = if root.child_count == 0 || !ctx.type_of(&root)?.folderish {
        Vec::new()
    } else {
        walk.level(ctx, &root.uid, 1)?
    };
    Ok((root, items))
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
    };
    if folder.child_count == 0 || !ctx.type_of(folder)?.folderish {
        return Ok(Vec::new());
    }
    walk.level(ctx, &folder.uid, 2)
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
