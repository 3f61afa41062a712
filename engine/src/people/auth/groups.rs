//! Groups (`G:<id>`): named sets of users and other groups that hold roles, globally and (through
//! sharing) locally on content. A user belongs to a group when it is a member, or a member of a
//! group that is a member, and so on; it then holds the group's global roles everywhere and the
//! group's local roles where they are granted.
//!
//! The groups Plone starts with exist from the start without being stored ([`BUILTIN`]):
//! `Administrators` (Manager), `Site Administrators` (Site Administrator), `Reviewers`
//! (Reviewer), and the virtual `AuthenticatedUsers`, whose members are every logged-in user (it
//! stores no members). A built-in group is stored once it is changed, and cannot be removed.
//! A Nick site starts with `Administrators` only (and the virtual group, which it does not list).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::core::error::Result;
use crate::core::events::Event;
use crate::core::keys;
use crate::core::security::{Role, User, AUTHENTICATED_USERS};
use crate::runtime::context::Ctx;
use crate::site::profile::SiteProfile;

use super::users::UserRecord;

/// A stored group.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct GroupRecord {
    /// Its id (also its name).
    pub id: String,
    /// Its title.
    #[serde(default)]
    pub title: String,
    /// Its description.
    #[serde(default)]
    pub description: String,
    /// Its e-mail address.
    #[serde(default)]
    pub email: String,
    /// The roles its members hold everywhere.
    #[serde(default)]
    pub roles: Vec<Role>,
    /// Its direct members: user logins and group ids, in the order they were added.
    #[serde(default)]
    pub members: Vec<String>,
}

/// The built-in groups: id, title, description, global role.
pub const BUILTIN: &[(&str, &str, &str, Option<Role>)] = &[
    ("Administrators", "Administrators", "", Some(Role::Manager)),
    ("Reviewers", "Reviewers", "", Some(Role::Reviewer)),
    (
        "Site Administrators",
        "Site Administrators",
        "",
        Some(Role::SiteAdministrator),
    ),
    (
        AUTHENTICATED_USERS,
        "Authenticated Users (Virtual Group)",
        "Automatic Group Provider",
        None,
    ),
];

/// Whether the built-in group `id` exists on a `profile` site: Nick starts with `Administrators`
/// only (and the virtual `AuthenticatedUsers`, which its listings leave out: [`listed`]).
fn builtin_on(profile: SiteProfile, id: &str) -> bool {
    !profile.is_nick() || id == "Administrators" || id == AUTHENTICATED_USERS
}

/// Whether `id` is a built-in group (which cannot be removed).
pub fn is_builtin(id: &str) -> bool {
    BUILTIN.iter().any(|(b, ..)| *b == id)
}

fn builtin(id: &str) -> Option<GroupRecord> {
    BUILTIN
        .iter()
        .find(|(b, ..)| *b == id)
        .map(|(id, title, description, role)| GroupRecord {
            id: id.to_string(),
            title: title.to_string(),
            description: description.to_string(),
            email: String::new(),
            roles: role.iter().copied().collect(),
            members: Vec::new(),
        })
}

/// The group `id`, if any (stored, or a built-in one's defaults).
pub fn get(ctx: &Ctx<'_>, id: &str) -> Result<Option<GroupRecord>> {
    match ctx.get_json(&keys::group(id))? {
        Some(g) => Ok(Some(g)),
        None => Ok(builtin(id).filter(|_| builtin_on(ctx.profile(), id))),
    }
}

/// Every group, by id (the built-in ones included).
pub fn all(ctx: &Ctx<'_>) -> Result<Vec<GroupRecord>> {
    let profile = ctx.profile();
    let mut by_id: BTreeMap<String, GroupRecord> = BUILTIN
        .iter()
        .filter(|(id, ..)| builtin_on(profile, id))
        .filter_map(|(id, ..)| builtin(id).map(|g| (g.id.clone(), g)))
        .collect();
    for g in ctx.values_with_prefix::<GroupRecord>(keys::GROUP_PREFIX)? {
        by_id.insert(g.id.clone(), g);
    }
    Ok(by_id.into_values().collect())
}

/// The groups listings show (`@groups`, searches, the groups vocabulary): every group, but on a
/// Nick site without the virtual `AuthenticatedUsers` (Nick has no such group).
pub fn listed(ctx: &Ctx<'_>) -> Result<Vec<GroupRecord>> {
    let nick = ctx.profile().is_nick();
    Ok(all(ctx)?
        .into_iter()
        .filter(|g| !(nick && g.id == AUTHENTICATED_USERS))
        .collect())
}

/// The groups `member` (a login or a group id) is a direct member of (`M:<member>`).
pub fn direct_groups(ctx: &Ctx<'_>, member: &str) -> Result<Vec<String>> {
    Ok(ctx.get_json(&keys::member_of(member))?.unwrap_or_default())
}

/// Add (`true`) or remove `group` from the direct groups of `member` in the reverse index.
fn index(ctx: &mut Ctx<'_>, member: &str, group: &str, add: bool) -> Result<()> {
    let mut list = direct_groups(ctx, member)?;
    let had = list.iter().any(|g| g == group);
    if add && !had {
        list.push(group.to_string());
        list.sort();
    } else if !add && had {
        list.retain(|g| g != group);
    } else {
        return Ok(());
    }
    if list.is_empty() {
        ctx.delete(&keys::member_of(member))
    } else {
        ctx.put_json(&keys::member_of(member), &list)
    }
}

/// Create ([`Event::GroupAdded`]) or replace ([`Event::GroupModified`]) a group, keeping the
/// reverse index of members (`M:`) in step. The caller validates it ([`crate::people::accounts`]).
pub fn put(ctx: &mut Ctx<'_>, group: &GroupRecord) -> Result<()> {
    let key = keys::group(&group.id);
    let before = get(ctx, &group.id)?;
    let existed = ctx.get(&key)?.is_some() || is_builtin(&group.id);
    let old_members = before.map(|g| g.members).unwrap_or_default();
    for m in &old_members {
        if !group.members.contains(m) {
            index(ctx, m, &group.id, false)?;
        }
    }
    for m in &group.members {
        if !old_members.contains(m) {
            index(ctx, m, &group.id, true)?;
        }
    }
    ctx.put_json(&key, group)?;
    let id = group.id.clone();
    ctx.emit(if existed {
        Event::GroupModified { id }
    } else {
        Event::GroupAdded { id }
    });
    Ok(())
}

/// Remove a stored group ([`Event::GroupRemoved`]) and its members' index entries; the caller
/// takes it out of other groups.
pub fn remove(ctx: &mut Ctx<'_>, id: &str) -> Result<()> {
    if let Some(g) = get(ctx, id)? {
        for m in &g.members {
            index(ctx, m, id, false)?;
        }
    }
    ctx.delete(&keys::group(id))?;
    ctx.emit(Event::GroupRemoved { id: id.to_string() });
    Ok(())
}

/// The groups `member` (a login or a group id) belongs to, directly or through other groups,
/// given every group: in id order, without [`AUTHENTICATED_USERS`] (every user's implicitly).
pub fn containing<'g>(groups: &'g [GroupRecord], member: &str) -> Vec<&'g GroupRecord> {
    let mut found: Vec<&GroupRecord> = Vec::new();
    loop {
        let before = found.len();
        for g in groups {
            if found.iter().any(|f| f.id == g.id) {
                continue;
            }
            if g.members
                .iter()
                .any(|m| m == member || found.iter().any(|f| f.id == *m))
            {
                found.push(g);
            }
        }
        if found.len() == before {
            break;
        }
    }
    found.sort_by(|a, b| a.id.cmp(&b.id));
    found
}

/// The request-level view of `user`: its own global roles plus those of its groups (and of
/// [`AUTHENTICATED_USERS`]), and its groups, [`AUTHENTICATED_USERS`] first. Resolved once per
/// request (and cached with verified credentials, see [`crate::runtime::state::Core`]) through the
/// reverse index (`M:`): it reads the user's own groups, not every group. The same answer as
/// [`resolve_with`] given every group.
pub fn resolve(ctx: &Ctx<'_>, user: &UserRecord) -> Result<User> {
    let mut found: Vec<String> = Vec::new();
    let mut queue = direct_groups(ctx, &user.login)?;
    while let Some(g) = queue.pop() {
        if found.contains(&g) {
            continue;
        }
        queue.extend(direct_groups(ctx, &g)?);
        found.push(g);
    }
    found.sort();
    let mut u = User::new(&user.login, &user.fullname, user.roles.clone());
    for id in std::iter::once(AUTHENTICATED_USERS).chain(found.iter().map(String::as_str)) {
        let Some(roles) = roles_of(ctx, id)? else {
            continue;
        };
        if id != AUTHENTICATED_USERS {
            u.groups.push(id.to_string());
        }
        for r in roles {
            if !u.roles.iter().any(|x| x == r.name()) {
                u.roles.push(r.name().to_string());
            }
        }
    }
    Ok(u)
}

/// The roles of group `id` (`None`: no such group), decoding only them of its record (a large
/// group's members are skipped, not built).
fn roles_of(ctx: &Ctx<'_>, id: &str) -> Result<Option<Vec<Role>>> {
    #[derive(Deserialize)]
    struct Roles {
        #[serde(default)]
        roles: Vec<Role>,
    }
    match ctx.get(&keys::group(id))? {
        Some(bytes) => Ok(Some(serde_json::from_slice::<Roles>(&bytes)?.roles)),
        None => Ok(builtin(id).map(|g| g.roles)),
    }
}

/// [`resolve`] given every group.
pub fn resolve_with(groups: &[GroupRecord], user: &UserRecord) -> User {
    let mut u = User::new(&user.login, &user.fullname, user.roles.clone());
    let authenticated = groups.iter().find(|g| g.id == AUTHENTICATED_USERS);
    for g in authenticated
        .into_iter()
        .chain(containing(groups, &user.login))
    {
        if g.id != AUTHENTICATED_USERS {
            u.groups.push(g.id.clone());
        }
        for r in &g.roles {
            if !u.roles.iter().any(|x| x == r.name()) {
                u.roles.push(r.name().to_string());
            }
        }
    }
    u
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(id: &str, roles: &[Role], members: &[&str]) -> GroupRecord {
        GroupRecord {
            id: id.into(),
            title: id.into(),
            description: String::new(),
            email: String::new(),
            roles: roles.to_vec(),
            members: members.iter().map(|m| m.to_string()).collect(),
        }
    }

    #[test]
    fn membership_is_transitive_and_brings_roles() {
        let groups = vec![
            group("a", &[Role::Editor], &["bob"]),
            group("b", &[Role::Reviewer], &["a"]),
            group("c", &[Role::Manager], &["alice"]),
            group(AUTHENTICATED_USERS, &[Role::Reader], &[]),
        ];
        let bob = UserRecord {
            uid: String::new(),
            credential_version: 0,
            login: "bob".into(),
            fullname: String::new(),
            email: String::new(),
            description: String::new(),
            home_page: String::new(),
            location: String::new(),
            password_hash: String::new(),
            roles: vec!["Member".into()],
            portrait: None,
            properties: Default::default(),
        };
        let u = resolve_with(&groups, &bob);
        assert_eq!(u.groups, vec![AUTHENTICATED_USERS, "a", "b"]);
        assert_eq!(u.roles, vec!["Member", "Reader", "Editor", "Reviewer"]);
        let ids: Vec<&str> = containing(&groups, "a")
            .iter()
            .map(|g| g.id.as_str())
            .collect();
        assert_eq!(ids, vec!["b"]);
    }
}
