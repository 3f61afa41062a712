//! The recycle bin: when the site's setting says so ([`configuration::RECYCLEBIN_ENABLED`], on by
//! default), deleting content moves it, with everything below it, into the bin instead of
//! destroying it. An item of the bin (`z:<recycle id>`, [`BinItem`]) keeps the records of the
//! binned subtree, the aliases that pointed into it and the objects that linked into it; the
//! objects' versions, workflow history, comments and counters stay under their uids (the
//! subscribers ignore [`crate::core::events::Event::Binned`]). The catalog unindexes binned objects, so
//! search, navigation and listings never show them (they are not in the tree either).
//!
//! An item is restored to its old parent (followed by uid, so a moved parent still works), or to
//! a given folderish target when that parent is gone or the id is taken there; or purged, which
//! announces [`crate::core::events::Event::Removed`] for every object of it so each subscriber cleans
//! its own keys, as a plain delete does. [`purge_expired`] purges the items older than the
//! retention period ([`configuration::RECYCLEBIN_RETENTION_DAYS`]); the hosts run it (there is no
//! job scheduler yet).
//!
//! Who may see and act on an item: callers with Manage portal on the site root, and the user who
//! deleted it (as Nick documents).

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::catalog;
use crate::content::aliases::{self, Alias};
use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;
use crate::site::configuration;

/// One item of the recycle bin: a deleted object and everything that was below it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BinItem {
    /// Its id in the bin.
    pub recycle_id: String,
    /// Login of the user who deleted it.
    pub deleted_by: String,
    /// When it was deleted.
    pub deletion_date: DateTime<Utc>,
    /// The uid of the parent it had.
    pub parent_uid: Option<String>,
    /// The records of the subtree, the deleted object first (pre-order), as they were.
    pub members: Vec<ContentRecord>,
    /// The aliases that redirected to the subtree's paths (restored with it, to its new paths).
    #[serde(default)]
    pub aliases: Vec<Alias>,
    /// Per binned uid, the objects outside the subtree that linked to it (reindexed on restore,
    /// so link integrity sees their links again).
    #[serde(default)]
    pub linked_from: BTreeMap<String, Vec<String>>,
}

impl BinItem {
    /// The deleted object's record (the top of the subtree).
    pub fn top(&self) -> Result<&ContentRecord> {
        self.members
            .first()
            .ok_or_else(|| EngineError::Internal(format!("bin item {} is empty", self.recycle_id)))
    }

    /// The path the deleted object had.
    pub fn path(&self) -> &str {
        self.members.first().map(|m| m.path.as_str()).unwrap_or("")
    }

    /// The path its parent had.
    pub fn parent_path(&self) -> &str {
        let p = self.path();
        p.rsplit_once('/').map(|(parent, _)| parent).unwrap_or("")
    }
}

/// Whether deleting content moves it into the bin.
pub fn enabled(ctx: &Ctx<'_>) -> Result<bool> {
    configuration::flag(ctx, configuration::RECYCLEBIN_ENABLED)
}

/// How many days binned content is kept (0: until purged by hand).
pub fn retention_days(ctx: &Ctx<'_>) -> Result<i64> {
    Ok(
        configuration::get(ctx, configuration::RECYCLEBIN_RETENTION_DAYS)?
            .as_i64()
            .unwrap_or(0),
    )
}

/// Move `obj` and `members` (its subtree, as [`tree::subtree`] lists it; the caller checked
/// permissions and locks) into the bin; returns the new item's id.
pub fn bin(ctx: &mut Ctx<'_>, obj: &ContentRecord, members: Vec<ContentRecord>) -> Result<String> {
    let uids: BTreeSet<&str> = members.iter().map(|m| m.uid.as_str()).collect();
    let mut moved_aliases = Vec::new();
    let mut linked_from = BTreeMap::new();
    for m in &members {
        for a in aliases::for_target(ctx, &m.path)? {
            aliases::remove(ctx, &a.path)?;
            moved_aliases.push(a);
        }
        let sources: Vec<String> = catalog::linking_to(ctx, &m.uid)?
            .into_iter()
            .filter(|s| !uids.contains(s.as_str()))
            .collect();
        if !sources.is_empty() {
            linked_from.insert(m.uid.clone(), sources);
        }
    }
    tree::bin_members(ctx, obj, &members)?;
    let item = BinItem {
        recycle_id: ctx.new_uid(),
        deleted_by: ctx.principal.login().unwrap_or("").to_string(),
        deletion_date: ctx.now(),
        parent_uid: obj.parent.clone(),
        members,
        aliases: moved_aliases,
        linked_from,
    };
    ctx.put_json(&keys::recyclebin_item(&item.recycle_id), &item)?;
    Ok(item.recycle_id)
}

/// Every item of the bin, newest first.
pub fn all(ctx: &Ctx<'_>) -> Result<Vec<BinItem>> {
    let mut items: Vec<BinItem> = ctx.values_with_prefix(keys::RECYCLEBIN_PREFIX)?;
    items.sort_by(|a, b| {
        b.deletion_date
            .cmp(&a.deletion_date)
            .then_with(|| a.recycle_id.cmp(&b.recycle_id))
    });
    Ok(items)
}

/// Whether the caller may manage the whole bin (Manage portal on the site root).
pub fn manages_bin(ctx: &Ctx<'_>) -> Result<bool> {
    let root = tree::root(ctx)?;
    ctx.permitted(Permission::ManagePortal, &root)
}

/// Whether the caller may see and act on `item`: a bin manager, or the user who deleted it.
pub fn may_access(ctx: &Ctx<'_>, item: &BinItem) -> Result<bool> {
    if manages_bin(ctx)? {
        return Ok(true);
    }
    Ok(ctx.principal.login() == Some(item.deleted_by.as_str()) && !item.deleted_by.is_empty())
}

/// The items the caller may see, newest first. Anonymous callers get 401.
pub fn visible(ctx: &Ctx<'_>) -> Result<Vec<BinItem>> {
    if ctx.principal.is_anonymous() {
        return Err(ctx.denied(Permission::ManagePortal));
    }
    let mut out = Vec::new();
    for item in all(ctx)? {
        if may_access(ctx, &item)? {
            out.push(item);
        }
    }
    Ok(out)
}

/// The item `recycle_id` if the caller may see it: 404 when there is none (`url` names it), 401
/// or 403 when it is someone else's.
pub fn find(ctx: &Ctx<'_>, recycle_id: &str, url: &str) -> Result<BinItem> {
    let item: BinItem = ctx
        .get_json(&keys::recyclebin_item(recycle_id))?
        .ok_or_else(|| EngineError::NotFound {
            url: url.to_string(),
            context: Some(ctx.url("")),
        })?;
    if !may_access(ctx, &item)? {
        return Err(ctx.denied(Permission::ManagePortal));
    }
    Ok(item)
}

/// The item `recycle_id` asked for below `at`, a site path: the site root (`""`), or the path
/// the item's object had (its URL on a Nick site, `<old path>/@recyclebin/<id>`, answers even
/// though the object is gone). Another path is a 404 naming `url`, as is a missing item; 401 or
/// 403 when it is someone else's ([`find`]).
pub fn find_at(ctx: &Ctx<'_>, at: &str, recycle_id: &str, url: &str) -> Result<BinItem> {
    let item = find(ctx, recycle_id, url)?;
    if !at.is_empty() && at != item.path() {
        return Err(EngineError::NotFound {
            url: url.to_string(),
            context: Some(ctx.url("")),
        });
    }
    Ok(item)
}

/// Where `item` is restored to: `target` if given, else its old parent (by uid). A missing old
/// parent, a target that is not folderish or does not allow the item's type, an id taken there,
/// or a caller without Add portal content there is refused (400, 401/403) before anything
/// changes.
pub fn restore_target(
    ctx: &Ctx<'_>,
    item: &BinItem,
    target: Option<ContentRecord>,
) -> Result<ContentRecord> {
    let top = item.top()?;
    let given = target.is_some();
    let parent = match target {
        Some(t) => t,
        None => {
            let old = match &item.parent_uid {
                Some(uid) => tree::load(ctx, uid)?,
                None => None,
            };
            old.ok_or_else(|| {
                EngineError::bad_request(format!(
                    "The original parent '{}' of '{}' no longer exists: give a 'target_path' to \
                     restore it into",
                    display(item.parent_path()),
                    top.id
                ))
            })?
        }
    };
    if !ctx.type_of(&parent)?.folderish {
        return Err(EngineError::bad_request(format!(
            "Invalid property 'target_path': '{}' is not folderish and cannot contain '{}'",
            display(&parent.path),
            top.id
        )));
    }
    let parent_type = ctx.type_of(&parent)?;
    if !parent_type.allows(ctx.type_of(top)?.as_ref()) {
        return Err(EngineError::bad_request(format!(
            "{}'{}' ({}) does not allow a {} inside",
            if given {
                "Invalid property 'target_path': "
            } else {
                ""
            },
            display(&parent.path),
            parent_type.name,
            top.type_name
        )));
    }
    ctx.require(Permission::AddContent, &parent)?;
    if tree::has_child(ctx, &parent, &top.id)? {
        return Err(EngineError::bad_request(if given {
            format!(
                "Invalid property 'target_path': '{}' already contains an object with the id '{}'",
                display(&parent.path),
                top.id
            )
        } else {
            format!(
                "'{}' already contains an object with the id '{}': give a 'target_path' to \
                 restore it into",
                display(&parent.path),
                top.id
            )
        }));
    }
    Ok(parent)
}

/// `/` for the root's empty path.
fn display(path: &str) -> &str {
    if path.is_empty() {
        "/"
    } else {
        path
    }
}

/// Put `item` back into the tree below `parent` (checked by [`restore_target`]), with its
/// aliases pointing at the new paths; the item leaves the bin. Returns the restored top record.
pub fn restore(
    ctx: &mut Ctx<'_>,
    item: BinItem,
    mut parent: ContentRecord,
) -> Result<ContentRecord> {
    let old_prefix = item.path().to_string();
    let restored = tree::restore_members(ctx, &mut parent, item.members, &item.linked_from)?;
    let top = restored
        .first()
        .cloned()
        .ok_or_else(|| EngineError::Internal("restored an empty bin item".into()))?;
    for a in &item.aliases {
        let target = format!(
            "{}{}",
            top.path,
            &a.redirect_to[old_prefix.len().min(a.redirect_to.len())..]
        );
        aliases::reinstate(ctx, a, &target)?;
    }
    ctx.delete(&keys::recyclebin_item(&item.recycle_id))?;
    Ok(top)
}

/// Purge `item` for good: every object of it is announced as removed, so the subscribers drop
/// their records about it (versions, history, comments, counters, translations, locks).
pub fn purge(ctx: &mut Ctx<'_>, item: &BinItem) -> Result<()> {
    ctx.delete(&keys::recyclebin_item(&item.recycle_id))?;
    for m in &item.members {
        ctx.emit(Event::Removed {
            uid: m.uid.clone(),
            path: m.path.clone(),
            type_name: m.type_name.clone(),
            parent: m.parent.clone(),
        });
    }
    Ok(())
}

/// Purge every item of the bin; how many there were.
pub fn purge_all(ctx: &mut Ctx<'_>) -> Result<usize> {
    let items = all(ctx)?;
    for item in &items {
        purge(ctx, item)?;
    }
    Ok(items.len())
}

/// Purge the items deleted longer ago than the retention period (none when it is 0); how many.
pub fn purge_expired(ctx: &mut Ctx<'_>) -> Result<usize> {
    let days = retention_days(ctx)?;
    if days <= 0 {
        return Ok(0);
    }
    let cutoff = ctx.now() - chrono::Duration::days(days);
    let mut n = 0;
    for item in all(ctx)? {
        if item.deletion_date < cutoff {
            purge(ctx, &item)?;
            n += 1;
        }
    }
    Ok(n)
}
