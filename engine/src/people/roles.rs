//! Role names as a site shows them. Roles are stored under Plone's names on every site (the
//! permission tables use them); a Nick site shows Nick's names and role set instead:
//! `Manager` is Nick's `Administrator`, the roles listed (`@roles`, sharing, the roles
//! vocabulary) are the eight of Nick's core profile, in its order, and Plone's `Member` (the
//! default role of a new account, which grants nothing of its own) is not shown. Nick's input
//! name `Administrator` is read as `Manager` on every site ([`Role::from_name`] and the serde
//! alias of [`Role::Manager`]).

use crate::core::security::{Role, ROLES};
use crate::site::profile::SiteProfile;

/// Nick's roles, in the order its core profile (`roles.json`) lists them.
const NICK_ROLES: [Role; 8] = [
    Role::Anonymous,
    Role::Authenticated,
    Role::Owner,
    Role::Reader,
    Role::Contributor,
    Role::Editor,
    Role::Reviewer,
    Role::Manager,
];

/// The name `profile` shows for `role`.
pub fn shown(profile: SiteProfile, role: Role) -> &'static str {
    match (profile, role) {
        (SiteProfile::Nick, Role::Manager) => "Administrator",
        _ => role.name(),
    }
}

/// The name `profile` shows for the stored role name `name` (unknown names as stored).
pub fn shown_name(profile: SiteProfile, name: &str) -> &str {
    match Role::from_name(name) {
        Some(role) => shown(profile, role),
        None => name,
    }
}

/// Whether a user's or group's global role `name` is shown on a `profile` site (Nick has no
/// `Member` role).
pub fn visible(profile: SiteProfile, name: &str) -> bool {
    !(profile.is_nick() && name == Role::Member.name())
}

/// Global role names as `profile` shows them: the hidden ones left out, renamed, in order,
/// without duplicates.
pub fn shown_list<'a>(
    profile: SiteProfile,
    names: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        if !visible(profile, name) {
            continue;
        }
        let s = shown_name(profile, name).to_string();
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// The roles `@roles` lists: Plone's grantable roles, or Nick's eight.
pub fn listed(profile: SiteProfile) -> Vec<Role> {
    match profile {
        SiteProfile::Plone => Role::ALL.into_iter().filter(|r| r.grantable()).collect(),
        SiteProfile::Nick => NICK_ROLES.to_vec(),
    }
}

/// The roles the sharing page shows, with their titles: Plone's four with its "Can ..."
/// titles, or Nick's eight titled by name.
pub fn sharing(profile: SiteProfile) -> Vec<(Role, &'static str)> {
    match profile {
        SiteProfile::Plone => Role::SHARABLE.to_vec(),
        SiteProfile::Nick => NICK_ROLES
            .iter()
            .map(|r| (*r, shown(profile, *r)))
            .collect(),
    }
}

/// The tokens of the roles vocabulary: every role Plone knows, or Nick's eight sorted by title.
pub fn vocabulary(profile: SiteProfile) -> Vec<&'static str> {
    match profile {
        SiteProfile::Plone => ROLES.to_vec(),
        SiteProfile::Nick => {
            let mut names: Vec<&'static str> =
                NICK_ROLES.iter().map(|r| shown(profile, *r)).collect();
            names.sort_unstable();
            names
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nick_shows_administrator_and_hides_member() {
        let nick = SiteProfile::Nick;
        assert_eq!(shown_name(nick, "Manager"), "Administrator");
        assert_eq!(shown_name(SiteProfile::Plone, "Manager"), "Manager");
        assert_eq!(
            shown_list(nick, ["Member", "Manager", "Reader"]),
            vec!["Administrator", "Reader"]
        );
        assert_eq!(
            shown_list(SiteProfile::Plone, ["Member", "Manager"]),
            vec!["Member", "Manager"]
        );
        assert_eq!(vocabulary(nick)[0], "Administrator");
        assert_eq!(listed(nick).len(), 8);
        assert_eq!(sharing(SiteProfile::Plone).len(), 4);
    }

    #[test]
    fn administrator_is_read_as_manager() {
        assert_eq!(Role::from_name("Administrator"), Some(Role::Manager));
        let r: Role = serde_json::from_str("\"Administrator\"").unwrap();
        assert_eq!(r, Role::Manager);
    }
}
