//! Sharing: the local roles users and groups hold on one object, where each comes from (granted
//! here, acquired from above, or held everywhere), changing them, and whether the object
//! inherits the local roles granted above it. Changes are saved through the tree
//! ([`tree::Change::LocalRoles`], [`crate::core::events::Event::LocalRolesChanged`]), on which the
//! catalog reindexes the subtree.

use std::collections::BTreeSet;

use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::model::ContentRecord;
use crate::core::security::{inherited_from, Permission, Role, AUTHENTICATED_USERS};
use crate::people::auth::groups::{self, GroupRecord};
use crate::people::auth::users::{self, UserRecord};
use crate::people::permissions::Access;
use crate::people::roles;
use crate::runtime::context::Ctx;

/// Whether a sharing entry names a user or a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A group.
    Group,
    /// A user.
    User,
}

/// Where a principal's role on an object comes from (the strongest source wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RoleState {
    /// Not held.
    No,
    /// Granted on this object.
    Local,
    /// Granted on an ancestor this object inherits from.
    Acquired,
    /// Held everywhere (by the principal, or through one of its groups).
    Global,
}

/// One row of the sharing page: a user or group and its state for each sharable role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The principal's id (login or group id).
    pub id: String,
    /// Its title (full name or group title; the id when it has none).
    pub title: String,
    /// User or group.
    pub kind: Kind,
    /// For each role the sharing page shows ([`roles::sharing`]), in its order.
    pub roles: Vec<(Role, RoleState)>,
}

/// A principal found by a search ([`search`]).
#[cfg(any(test, feature = "internals"))]
pub enum Found {
    /// A user.
    User(UserRecord),
    /// A group.
    Group(GroupRecord),
}

/// Users and groups whose id, name, title or e-mail contains `text` (case-insensitive): users
/// by login, then groups by id.
pub fn search(ctx: &Ctx<'_>, text: &str) -> Result<(Vec<UserRecord>, Vec<GroupRecord>)> {
    let needle = text.to_lowercase();
    let hit = |fields: &[&str]| fields.iter().any(|f| f.to_lowercase().contains(&needle));
    let users = users::all(ctx)?
        .into_iter()
        .filter(|u| hit(&[&u.login, &u.fullname, &u.email]))
        .collect();
    let groups = groups::listed(ctx)?
        .into_iter()
        .filter(|g| hit(&[&g.id, &g.title, &g.email]))
        .collect();
    Ok((users, groups))
}

/// The sharing entries of `obj`: [`AUTHENTICATED_USERS`], every principal with local roles on
/// it or acquired from above, and those matching `search`; groups first, each kind by id.
pub fn entries(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    search_text: Option<&str>,
) -> Result<Vec<Entry>> {
    let ancestors = tree::ancestors(ctx, obj)?;
    let all_groups = groups::all(ctx)?;
    let profile = ctx.profile();
    let shown_roles = roles::sharing(profile);
    // Plone always shows the logged-in users' row; Nick shows only principals that hold a role
    // here or match the search.
    let mut ids: BTreeSet<String> = if profile.is_nick() {
        BTreeSet::new()
    } else {
        BTreeSet::from([AUTHENTICATED_USERS.to_string()])
    };
    for o in inherited_from(obj, &ancestors) {
        for (id, roles) in &o.local_roles {
            if roles
                .iter()
                .any(|r| shown_roles.iter().any(|(s, _)| s.name() == r))
            {
                ids.insert(id.clone());
            }
        }
    }
    if let Some(text) = search_text.filter(|t| !t.trim().is_empty()) {
        let (us, gs) = search(ctx, text.trim())?;
        ids.extend(us.into_iter().map(|u| u.login));
        ids.extend(gs.into_iter().map(|g| g.id));
    }
    let mut out = Vec::new();
    for id in ids {
        let (kind, title, global) = if let Some(g) = all_groups.iter().find(|g| g.id == id) {
            let title = if id == AUTHENTICATED_USERS {
                "Logged-in users".to_string()
            } else if g.title.is_empty() {
                id.clone()
            } else {
                g.title.clone()
            };
            let roles: Vec<String> = g.roles.iter().map(|r| r.name().to_string()).collect();
            (Kind::Group, title, roles)
        } else if let Some(u) = users::get(ctx, &id)? {
            let resolved = groups::resolve_with(&all_groups, &u);
            let title = if u.fullname.is_empty() {
                id.clone()
            } else {
                u.fullname.clone()
            };
            (Kind::User, title, resolved.roles)
        } else {
            // Local roles of a principal that no longer exists: nothing to show or change.
            continue;
        };
        let roles = shown_roles
            .iter()
            .map(|(role, _)| {
                let name = role.name();
                // The implicit roles are nobody's global role.
                let implicit = matches!(role, Role::Anonymous | Role::Authenticated);
                let granted = |o: &ContentRecord| {
                    o.local_roles
                        .get(&id)
                        .is_some_and(|l| l.iter().any(|r| r == name))
                };
                let acquired = !obj.block_local_roles
                    && inherited_from(obj, &ancestors)
                        .filter(|o| o.uid != obj.uid)
                        .any(granted);
                let state = if !implicit && global.iter().any(|r| r == name) {
                    RoleState::Global
                } else if acquired {
                    RoleState::Acquired
                } else if granted(obj) {
                    RoleState::Local
                } else {
                    RoleState::No
                };
                (*role, state)
            })
            .collect();
        out.push(Entry {
            id,
            title,
            kind,
            roles,
        });
    }
    if profile.is_nick() {
        // Nick orders its rows by title.
        out.sort_by(|a, b| (&a.title, &a.id).cmp(&(&b.title, &b.id)));
    } else {
        out.sort_by(|a, b| (a.kind, &a.id).cmp(&(b.kind, &b.id)));
    }
    Ok(out)
}

/// A change to one principal's local roles: each named sharable role granted (`true`) or
/// taken away (`false`); roles not named stay as they are.
#[derive(Debug, Clone)]
pub struct Grant {
    /// The user or group.
    pub id: String,
    /// The roles to set.
    pub roles: Vec<(Role, bool)>,
}

/// Apply `grants` and the `inherit` flag to `obj` and save it if anything changed. The caller
/// holds the permission to delegate roles here ([`Permission::DelegateRoles`]); granting or
/// taking away Reviewer also needs [`Permission::Review`], Manager (Nick's Administrator)
/// [`Permission::ManagePortal`]. Unknown principals and roles the sharing page does not manage
/// ([`roles::sharing`]: Plone's four, Nick's eight) are refused; nothing changes then.
pub fn update(
    ctx: &mut Ctx<'_>,
    mut obj: ContentRecord,
    inherit: Option<bool>,
    grants: &[Grant],
) -> Result<()> {
    let before = (obj.local_roles.clone(), obj.block_local_roles);
    let may_review = ctx.permitted(Permission::Review, &obj)?;
    let may_manage = ctx.permitted(Permission::ManagePortal, &obj)?;
    let profile = ctx.profile();
    let managed = roles::sharing(profile);
    for grant in grants {
        if users::get(ctx, &grant.id)?.is_none() && groups::get(ctx, &grant.id)?.is_none() {
            return Err(EngineError::bad_request(format!(
                "Invalid entry '{}': no such user or group",
                grant.id
            )));
        }
        let local = obj.local_roles.entry(grant.id.clone()).or_default();
        for (role, on) in &grant.roles {
            if !managed.iter().any(|(s, _)| s == role) {
                let names: Vec<&str> = managed
                    .iter()
                    .map(|(r, _)| roles::shown(profile, *r))
                    .collect();
                return Err(EngineError::bad_request(format!(
                    "Invalid role '{}' in the entry of '{}': sharing manages {}",
                    roles::shown(profile, *role),
                    grant.id,
                    names.join(", ")
                )));
            }
            let has = local.iter().any(|r| r == role.name());
            if *on && !has {
                local.push(role.name().to_string());
            } else if !*on && has {
                local.retain(|r| r != role.name());
            } else {
                continue;
            }
            if *role == Role::Reviewer && !may_review {
                return Err(ctx.denied(Permission::Review));
            }
            // Nick's sharing also grants Administrator here: only to those who hold it.
            if *role == Role::Manager && !may_manage {
                return Err(ctx.denied(Permission::ManagePortal));
            }
        }
        if obj.local_roles.get(&grant.id).is_some_and(Vec::is_empty) {
            obj.local_roles.remove(&grant.id);
        }
    }
    if let Some(inherit) = inherit {
        obj.block_local_roles = !inherit;
    }
    if (obj.local_roles.clone(), obj.block_local_roles) != before {
        tree::save(ctx, &mut obj, tree::Change::LocalRoles)?;
    }
    Ok(())
}
