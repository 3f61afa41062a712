//! Who may do what: principals, roles and permissions.
//!
//! A principal's roles on an object are its global roles, `Anonymous` (everyone) and
//! `Authenticated` (every logged-in user), plus the local roles granted to it on the object or any
//! ancestor (the creator of an object holds `Owner` there). A permission is granted when one of those
//! roles is among the roles the permission maps to: the object's workflow state decides that for the
//! permissions it manages (View, Modify portal content), the site defaults below for the rest.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::core::model::workflows::Workflows;
use crate::core::model::ContentRecord;

/// A permission, named as the reference names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// Read an object.
    View,
    /// Add content inside a folderish object.
    AddContent,
    /// Edit an object.
    Modify,
    /// Delete an object.
    Delete,
    /// Publish or send back content.
    Review,
    /// Submit or retract one's own content.
    RequestReview,
    /// Administer the site (users, settings, unlocking others' locks).
    ManagePortal,
    /// Grant and take away local roles on an object, and block their inheritance (sharing).
    DelegateRoles,
}

impl Permission {
    /// The reference's permission name.
    pub fn name(self) -> &'static str {
        match self {
            Permission::View => "View",
            Permission::AddContent => "Add portal content",
            Permission::Modify => "Modify portal content",
            Permission::Delete => "Delete objects",
            Permission::Review => "Review portal content",
            Permission::RequestReview => "Request review",
            Permission::ManagePortal => "Manage portal",
            Permission::DelegateRoles => "Sharing page: Delegate roles",
        }
    }

    /// Look a permission up by its reference name.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Permission::View,
            Permission::AddContent,
            Permission::Modify,
            Permission::Delete,
            Permission::Review,
            Permission::RequestReview,
            Permission::ManagePortal,
            Permission::DelegateRoles,
        ]
        .into_iter()
        .find(|p| p.name() == name)
    }

    /// Roles granted this permission where no workflow state says otherwise.
    pub fn default_roles(self) -> &'static [&'static str] {
        match self {
            Permission::View => &[
                "Anonymous",
                "Authenticated",
                "Manager",
                "Site Administrator",
                "Owner",
                "Editor",
                "Reader",
                "Contributor",
                "Reviewer",
            ],
            Permission::AddContent => &["Manager", "Site Administrator", "Owner", "Contributor"],
            Permission::Modify | Permission::Delete => {
                &["Manager", "Site Administrator", "Owner", "Editor"]
            }
            Permission::Review => &["Manager", "Site Administrator", "Reviewer"],
            Permission::RequestReview => &["Manager", "Site Administrator", "Owner", "Editor"],
            Permission::ManagePortal => &["Manager", "Site Administrator"],
            Permission::DelegateRoles => &["Manager", "Site Administrator", "Owner", "Editor"],
        }
    }
}

/// A role, as the reference names it. Stored and served by its name ([`Role::name`]), so records
/// written with role names read back unchanged; an unknown name does not decode (a 400 naming
/// the field when it comes from a request body).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum Role {
    /// Everyone, logged in or not.
    Anonymous,
    /// Every logged-in user.
    Authenticated,
    /// A site member (the default role of a new user).
    Member,
    /// The creator of an object (a local role, inherited below it).
    Owner,
    /// May add content.
    Contributor,
    /// May edit content.
    Editor,
    /// May view content.
    Reader,
    /// May publish and send back content.
    Reviewer,
    /// Administers the site, short of its code.
    #[serde(rename = "Site Administrator")]
    SiteAdministrator,
    /// May do everything. Nick calls it `Administrator`: that name is accepted as this role on
    /// every site ([`crate::people::roles`] shows it under Nick's name on a Nick site).
    #[serde(alias = "Administrator")]
    Manager,
}

impl Role {
    /// Every role, in the order listings show them.
    pub const ALL: [Role; 10] = [
        Role::Anonymous,
        Role::Authenticated,
        Role::Member,
        Role::Owner,
        Role::Contributor,
        Role::Editor,
        Role::Reader,
        Role::Reviewer,
        Role::SiteAdministrator,
        Role::Manager,
    ];

    /// The roles the sharing page manages, in its order, with the titles it shows.
    pub const SHARABLE: [(Role, &'static str); 4] = [
        (Role::Contributor, "Can add"),
        (Role::Editor, "Can edit"),
        (Role::Reader, "Can view"),
        (Role::Reviewer, "Can review"),
    ];

    /// The reference's name of the role.
    pub fn name(self) -> &'static str {
        match self {
            Role::Anonymous => "Anonymous",
            Role::Authenticated => "Authenticated",
            Role::Member => "Member",
            Role::Owner => "Owner",
            Role::Contributor => "Contributor",
            Role::Editor => "Editor",
            Role::Reader => "Reader",
            Role::Reviewer => "Reviewer",
            Role::SiteAdministrator => "Site Administrator",
            Role::Manager => "Manager",
        }
    }

    /// The role called `name`.
    pub fn from_name(name: &str) -> Option<Role> {
        if name == "Administrator" {
            return Some(Role::Manager);
        }
        Role::ALL.into_iter().find(|r| r.name() == name)
    }

    /// Whether users and groups may hold the role everywhere (the others are implicit:
    /// Anonymous, Authenticated; or local: Owner). `@roles` lists these.
    pub fn grantable(self) -> bool {
        !matches!(self, Role::Anonymous | Role::Authenticated | Role::Owner)
    }
}

/// Every role the service knows, by name.
pub const ROLES: &[&str] = &[
    "Anonymous",
    "Authenticated",
    "Member",
    "Owner",
    "Contributor",
    "Editor",
    "Reader",
    "Reviewer",
    "Site Administrator",
    "Manager",
];

/// The group every logged-in user belongs to (virtual: its members are not stored).
pub const AUTHENTICATED_USERS: &str = "AuthenticatedUsers";

/// An authenticated user as seen by a request: resolved once per request (with the groups it
/// belongs to, directly or through other groups), then used by every permission decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// Login name.
    pub login: String,
    /// Full name.
    pub fullname: String,
    /// Roles held everywhere: the user's own global roles and those of its groups.
    pub roles: Vec<String>,
    /// The ids of the groups the user belongs to, [`AUTHENTICATED_USERS`] first; local roles
    /// granted to any of them on an object are the user's there too.
    pub groups: Vec<String>,
}

impl User {
    /// A user with its own global `roles`, in no group but [`AUTHENTICATED_USERS`].
    pub fn new(login: &str, fullname: &str, roles: Vec<String>) -> Self {
        User {
            login: login.to_string(),
            fullname: fullname.to_string(),
            roles,
            groups: vec![AUTHENTICATED_USERS.to_string()],
        }
    }

    /// Whether `id` names this user or one of its groups (a key of an object's local roles).
    fn is_or_has(&self, id: &str) -> bool {
        self.login == id || self.groups.iter().any(|g| g == id)
    }
}

/// Who is making a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// Nobody logged in.
    Anonymous,
    /// A logged-in user.
    User(User),
}

/// The objects whose local roles count on `obj`, given its ancestors (root first): `obj` and its
/// ancestors up to the nearest one that blocks inheritance (included); only `obj` when `obj`
/// blocks itself.
pub fn inherited_from<'a>(
    obj: &'a ContentRecord,
    ancestors: &'a [ContentRecord],
) -> impl Iterator<Item = &'a ContentRecord> {
    let from = if obj.block_local_roles {
        ancestors.len()
    } else {
        ancestors
            .iter()
            .rposition(|a| a.block_local_roles)
            .unwrap_or(0)
    };
    ancestors[from..].iter().chain(std::iter::once(obj))
}

impl Principal {
    /// The login, or `None` for anonymous.
    pub fn login(&self) -> Option<&str> {
        match self {
            Principal::Anonymous => None,
            Principal::User(u) => Some(&u.login),
        }
    }

    /// True for anonymous requests.
    pub fn is_anonymous(&self) -> bool {
        matches!(self, Principal::Anonymous)
    }

    /// What the catalog matches against an object's `allowedRolesAndUsers`
    /// ([`allowed_tokens`]): the roles held everywhere (the user's and its groups'), and
    /// `user:<id>` for the user itself and for each of its groups ([`AUTHENTICATED_USERS`]
    /// included). The caller may view an object exactly when one of these is among the
    /// object's.
    pub fn search_tokens(&self) -> Vec<String> {
        let mut tokens: Vec<String> = self.global_roles().into_iter().collect();
        if let Principal::User(u) = self {
            tokens.push(format!("user:{}", u.login));
            for g in &u.groups {
                tokens.push(format!("user:{g}"));
            }
        }
        tokens
    }

    /// Roles held everywhere (before local roles).
    pub fn global_roles(&self) -> BTreeSet<String> {
        let mut roles = BTreeSet::from(["Anonymous".to_string()]);
        if let Principal::User(u) = self {
            roles.insert("Authenticated".into());
            roles.extend(u.roles.iter().cloned());
        }
        roles
    }

    /// Roles held on `obj`, given its ancestors (root first): the global roles, and the local
    /// roles granted to the user or one of its groups on `obj` and on the ancestors it inherits
    /// from ([`inherited_from`]).
    pub fn roles_on(&self, obj: &ContentRecord, ancestors: &[ContentRecord]) -> BTreeSet<String> {
        let mut roles = self.global_roles();
        if let Principal::User(u) = self {
            for o in inherited_from(obj, ancestors) {
                for (id, local) in &o.local_roles {
                    if u.is_or_has(id) {
                        roles.extend(local.iter().cloned());
                    }
                }
            }
        }
        roles
    }
}

/// The catalog's `allowedRolesAndUsers` of `obj`, given its ancestors (root first) and the roles
/// granted View on it: those roles, and `user:<id>` for every user or group holding one of them
/// locally on `obj` or an ancestor it inherits from ([`inherited_from`]).
pub fn allowed_tokens(
    viewing: GrantingRoles<'_>,
    obj: &ContentRecord,
    ancestors: &[ContentRecord],
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    viewing.any(|role| {
        out.insert(role.to_string());
        false
    });
    for o in inherited_from(obj, ancestors) {
        for (principal, roles) in &o.local_roles {
            if roles.iter().any(|r| viewing.any(|v| v == r)) {
                out.insert(format!("user:{principal}"));
            }
        }
    }
    out
}

/// The roles granted `perm` on `obj`, borrowed from the workflow state or the site defaults (what
/// [`roles_for`] returns, without copying it).
pub fn granting_roles<'w>(
    perm: Permission,
    obj: &ContentRecord,
    workflow_id: Option<&str>,
    workflows: &'w Workflows,
) -> GrantingRoles<'w> {
    if let (Some(state), Some(wf)) = (
        obj.review_state.as_deref(),
        workflow_id.and_then(|w| workflows.get(w)),
    ) {
        if let Some(roles) = wf
            .states
            .get(state)
            .and_then(|s| s.permissions.get(perm.name()))
        {
            return GrantingRoles::State(roles);
        }
    }
    GrantingRoles::Default(perm.default_roles())
}

/// Whether the principal holds, everywhere, a role granted `perm` on every object: a global role
/// that the site defaults and every state of every workflow naming `perm` grant it (whatever
/// [`granting_roles`] picks for an object then includes it). Local roles only add to that.
pub fn granted_everywhere(principal: &Principal, perm: Permission, workflows: &Workflows) -> bool {
    let everywhere = |role: &str| {
        perm.default_roles().contains(&role)
            && workflows.all().all(|(_, wf)| {
                wf.states.values().all(|s| {
                    s.permissions
                        .get(perm.name())
                        .is_none_or(|r| r.iter().any(|x| x == role))
                })
            })
    };
    match principal {
        Principal::Anonymous => everywhere("Anonymous"),
        Principal::User(u) => {
            ["Anonymous", "Authenticated"].into_iter().any(everywhere)
                || u.roles.iter().any(|r| everywhere(r))
        }
    }
}

/// The roles that grant a permission on one object ([`granting_roles`]).
#[derive(Debug, Clone, Copy)]
pub enum GrantingRoles<'w> {
    /// Set by the object's workflow state.
    State(&'w [String]),
    /// The site defaults.
    Default(&'static [&'static str]),
}

impl GrantingRoles<'_> {
    /// Whether `f` holds for one of the roles.
    pub fn any(&self, mut f: impl FnMut(&str) -> bool) -> bool {
        match self {
            GrantingRoles::State(r) => r.iter().any(|r| f(r)),
            GrantingRoles::Default(r) => r.iter().any(|r| f(r)),
        }
    }
}

impl Principal {
    /// Whether the principal holds `role` everywhere (before local roles).
    fn has_global_role(&self, role: &str) -> bool {
        role == "Anonymous"
            || matches!(self, Principal::User(u)
                if role == "Authenticated" || u.roles.iter().any(|r| r == role))
    }

    /// Whether the principal holds one of `roles` on `obj`, given its ancestors (root first):
    /// the same answer as checking [`Principal::roles_on`], without building the set.
    pub fn holds_any(
        &self,
        roles: GrantingRoles<'_>,
        obj: &ContentRecord,
        ancestors: &[ContentRecord],
    ) -> bool {
        match self {
            Principal::Anonymous => roles.any(|role| role == "Anonymous"),
            Principal::User(u) => {
                roles.any(|role| self.has_global_role(role))
                    || inherited_from(obj, ancestors).any(|o| {
                        o.local_roles.iter().any(|(id, local)| {
                            u.is_or_has(id) && local.iter().any(|r| roles.any(|g| g == r))
                        })
                    })
            }
        }
    }
}

/// The roles granted `perm` on `obj` (by its workflow state, or the site defaults).
#[cfg(any(test, feature = "internals"))]
pub fn roles_for(
    perm: Permission,
    obj: &ContentRecord,
    workflow_id: Option<&str>,
    workflows: &Workflows,
) -> Vec<String> {
    match granting_roles(perm, obj, workflow_id, workflows) {
        GrantingRoles::State(roles) => roles.to_vec(),
        GrantingRoles::Default(roles) => roles.iter().map(|r| r.to_string()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn granted_everywhere_needs_a_role_every_state_grants() {
        let builtin = Workflows::builtin();
        let user = |roles: &[&str]| {
            Principal::User(User::new(
                "u",
                "U",
                roles.iter().map(|r| r.to_string()).collect(),
            ))
        };
        assert!(granted_everywhere(
            &user(&["Manager"]),
            Permission::View,
            &builtin
        ));
        assert!(!granted_everywhere(
            &user(&["Member"]),
            Permission::View,
            &builtin
        ));
        assert!(!granted_everywhere(
            &Principal::Anonymous,
            Permission::View,
            &builtin
        ));
        let owner_only = Workflows::from_json(
            r#"{"w": {"title": "W", "initial_state": "s", "transitions": {},
                "states": {"s": {"title": "S", "permissions": {"View": ["Owner"]}}}}}"#,
        )
        .unwrap();
        assert!(!granted_everywhere(
            &user(&["Manager"]),
            Permission::View,
            &owner_only
        ));
        assert!(
            granted_everywhere(&user(&["Owner"]), Permission::View, &owner_only)
                == Permission::View.default_roles().contains(&"Owner")
        );
    }

    #[test]
    fn permission_names_round_trip() {
        for p in [
            Permission::View,
            Permission::Modify,
            Permission::ManagePortal,
        ] {
            assert_eq!(Permission::from_name(p.name()), Some(p));
        }
    }

    #[test]
    fn roles_are_stored_by_name() {
        for r in Role::ALL {
            assert_eq!(Role::from_name(r.name()), Some(r));
            assert_eq!(serde_json::to_value(r).unwrap(), r.name());
            assert!(ROLES.contains(&r.name()));
        }
        assert_eq!(ROLES.len(), Role::ALL.len());
        assert!(serde_json::from_value::<Role>(serde_json::json!("Overlord")).is_err());
    }

    fn rec(state: Option<&str>, local: &[(&str, &str)], block: bool) -> ContentRecord {
        ContentRecord {
            uid: "u".into(),
            id: "x".into(),
            path: "/x".into(),
            parent: Some("r".into()),
            type_name: "Page".into(),
            pos: 0,
            created: chrono::DateTime::UNIX_EPOCH,
            modified: chrono::DateTime::UNIX_EPOCH,
            owner: "o".into(),
            review_state: state.map(str::to_string),
            child_count: 0,
            next_pos: 0,
            local_roles: local
                .iter()
                .map(|(l, r)| (l.to_string(), vec![r.to_string()]))
                .collect(),
            block_local_roles: block,
            fields: Default::default(),
            rev: 0,
        }
    }

    fn user(roles: &[&str], groups: &[&str]) -> Principal {
        let mut u = User::new("bob", "", roles.iter().map(|r| r.to_string()).collect());
        u.groups.extend(groups.iter().map(|g| g.to_string()));
        Principal::User(u)
    }

    fn principals() -> Vec<Principal> {
        vec![
            Principal::Anonymous,
            user(&[], &[]),
            user(&["Member"], &[]),
            user(&["Manager"], &[]),
            user(&["Reviewer"], &[]),
            user(&["Member"], &["editors"]),
            user(&["Member", "Reviewer"], &["editors", "readers"]),
        ]
    }

    /// Objects in every state, with local roles for the user, its groups, AuthenticatedUsers and
    /// strangers, blocking or not.
    fn objects() -> Vec<ContentRecord> {
        let mut out = Vec::new();
        for state in [Some("private"), Some("published"), Some("pending"), None] {
            for local in [
                &[][..],
                &[("bob", "Owner")],
                &[("alice", "Editor")],
                &[("editors", "Editor")],
                &[("readers", "Reader")],
                &[("AuthenticatedUsers", "Reader")],
                &[("editors", "Contributor"), ("alice", "Reader")],
            ] {
                for block in [false, true] {
                    out.push(rec(state, local, block));
                }
            }
        }
        out
    }

    /// Chains of ancestors (root first) granting roles above, with and without a block between.
    fn chains() -> Vec<Vec<ContentRecord>> {
        let p = |local: &[(&str, &str)], block| rec(Some("private"), local, block);
        vec![
            vec![],
            vec![p(&[("bob", "Reader")], false)],
            vec![p(&[("editors", "Editor")], false), p(&[], false)],
            vec![p(&[("editors", "Editor")], false), p(&[], true)],
            vec![
                p(&[("editors", "Editor")], true),
                p(&[("bob", "Reader")], false),
            ],
            vec![
                p(&[("readers", "Reader")], false),
                p(&[("alice", "Editor")], true),
            ],
        ]
    }

    #[test]
    fn holds_any_agrees_with_roles_on() {
        let workflows = Workflows::builtin();
        let wf = Some("simple_publication_workflow");
        let perms = [
            Permission::View,
            Permission::Modify,
            Permission::AddContent,
            Permission::Review,
        ];
        for p in &principals() {
            for o in &objects() {
                for ancestors in &chains() {
                    let set = p.roles_on(o, ancestors);
                    for perm in perms {
                        let expected = roles_for(perm, o, wf, &workflows)
                            .iter()
                            .any(|r| set.contains(r));
                        let roles = granting_roles(perm, o, wf, &workflows);
                        assert_eq!(p.holds_any(roles, o, ancestors), expected);
                    }
                }
            }
        }
    }

    /// The catalog invariant: for every principal and object, View is permitted exactly when the
    /// caller's search tokens meet the object's allowedRolesAndUsers (groups, local roles on
    /// ancestors, blocked inheritance).
    #[test]
    fn search_tokens_meet_allowed_tokens_exactly_when_view_is_permitted() {
        let workflows = Workflows::builtin();
        let wf = Some("simple_publication_workflow");
        let mut granted = 0;
        let mut refused = 0;
        for p in &principals() {
            let tokens: BTreeSet<String> = p.search_tokens().into_iter().collect();
            for o in &objects() {
                for ancestors in &chains() {
                    let viewing = granting_roles(Permission::View, o, wf, &workflows);
                    let allowed = allowed_tokens(viewing, o, ancestors);
                    let may_view = p.holds_any(viewing, o, ancestors);
                    assert_eq!(
                        !tokens.is_disjoint(&allowed),
                        may_view,
                        "{p:?} on {o:?} below {ancestors:?}: tokens {tokens:?}, allowed {allowed:?}"
                    );
                    if may_view {
                        granted += 1;
                    } else {
                        refused += 1;
                    }
                }
            }
        }
        // Both answers occur, so the comparison above is not vacuous.
        assert!(granted > 100 && refused > 100, "{granted} / {refused}");
    }

    #[test]
    fn blocking_cuts_inherited_roles_only() {
        let workflows = Workflows::builtin();
        let wf = Some("simple_publication_workflow");
        let member = user(&["Member"], &["editors"]);
        let folder = rec(Some("private"), &[("editors", "Editor")], false);
        let page = |block| rec(Some("private"), &[], block);
        let modify = |o: &ContentRecord| granting_roles(Permission::Modify, o, wf, &workflows);
        let open = page(false);
        let blocked = page(true);
        assert!(member.holds_any(modify(&open), &open, std::slice::from_ref(&folder)));
        assert!(!member.holds_any(modify(&blocked), &blocked, std::slice::from_ref(&folder)));
        // A blocking object keeps its own local roles.
        let own = rec(Some("private"), &[("editors", "Editor")], true);
        assert!(member.holds_any(modify(&own), &own, std::slice::from_ref(&folder)));
        // Global roles are not local: blocking never takes them away.
        let manager = user(&["Manager"], &[]);
        assert!(manager.holds_any(modify(&blocked), &blocked, std::slice::from_ref(&folder)));
    }

    #[test]
    fn anonymous_has_only_the_anonymous_role() {
        let roles = Principal::Anonymous.global_roles();
        assert_eq!(
            roles.into_iter().collect::<Vec<_>>(),
            vec!["Anonymous".to_string()]
        );
    }
}
