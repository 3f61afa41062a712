//! Who may do what: principals, roles and permissions.
//!
//! A principal's roles on an object are its global roles, `Anonymous` (everyone) and
//! `Authenticated` (every logged-in user), plus the local roles granted to it on the object or any
//! ancestor (the creator of an object holds `Owner` there). A permission is granted when one of those
//! roles is among the roles the permission maps to: the object's workflow state decides that for the
//! permissions it manages (View, Modify portal content), the site defaults below for the rest.

use std::collections::BTreeSet;

use crate::model::workflows::Workflows;
use crate::model::ContentRecord;

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
        }
    }
}

/// Every role the service knows.
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

/// An authenticated user as seen by a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// Login name.
    pub login: String,
    /// Full name.
    pub fullname: String,
    /// Global roles.
    pub roles: Vec<String>,
}

/// Who is making a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// Nobody logged in.
    Anonymous,
    /// A logged-in user.
    User(User),
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
    /// ([`crate::permissions::allowed_roles_and_users`]): the roles held everywhere, and
    /// `user:<login>` for the user itself. The caller may view an object exactly when one of
    /// these is among the object's.
    pub fn search_tokens(&self) -> Vec<String> {
        let mut tokens: Vec<String> = self.global_roles().into_iter().collect();
        if let Principal::User(u) = self {
            tokens.push(format!("user:{}", u.login));
        }
        tokens
    }

    /// Roles held everywhere (before local roles).
    fn global_roles(&self) -> BTreeSet<String> {
        let mut roles = BTreeSet::from(["Anonymous".to_string()]);
        if let Principal::User(u) = self {
            roles.insert("Authenticated".into());
            roles.extend(u.roles.iter().cloned());
        }
        roles
    }

    /// Roles held on `obj`, given its ancestors (root first).
    pub fn roles_on(&self, obj: &ContentRecord, ancestors: &[ContentRecord]) -> BTreeSet<String> {
        let mut roles = self.global_roles();
        if let Principal::User(u) = self {
            for o in ancestors.iter().chain(std::iter::once(obj)) {
                if let Some(local) = o.local_roles.get(&u.login) {
                    roles.extend(local.iter().cloned());
                }
            }
        }
        roles
    }
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
        roles.any(|role| {
            self.has_global_role(role)
                || match self {
                    Principal::User(u) => ancestors.iter().chain(std::iter::once(obj)).any(|o| {
                        o.local_roles
                            .get(&u.login)
                            .is_some_and(|l| l.iter().any(|r| r == role))
                    }),
                    Principal::Anonymous => false,
                }
        })
    }
}

/// The roles granted `perm` on `obj` (by its workflow state, or the site defaults).
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
    fn permission_names_round_trip() {
        for p in [
            Permission::View,
            Permission::Modify,
            Permission::ManagePortal,
        ] {
            assert_eq!(Permission::from_name(p.name()), Some(p));
        }
    }

    fn rec(state: Option<&str>, local: &[(&str, &str)]) -> ContentRecord {
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
            fields: Default::default(),
            rev: 0,
        }
    }

    #[test]
    fn holds_any_agrees_with_roles_on() {
        let workflows = Workflows::builtin();
        let wf = Some("simple_publication_workflow");
        let user = |roles: &[&str]| {
            Principal::User(User {
                login: "bob".into(),
                fullname: String::new(),
                roles: roles.iter().map(|r| r.to_string()).collect(),
            })
        };
        let principals = [
            Principal::Anonymous,
            user(&[]),
            user(&["Member"]),
            user(&["Manager"]),
            user(&["Reviewer"]),
        ];
        let objects = [
            rec(Some("private"), &[]),
            rec(Some("published"), &[]),
            rec(Some("pending"), &[("bob", "Owner")]),
            rec(Some("private"), &[("alice", "Editor")]),
            rec(None, &[]),
        ];
        let parent = rec(Some("private"), &[("bob", "Reader")]);
        let perms = [
            Permission::View,
            Permission::Modify,
            Permission::AddContent,
            Permission::Review,
        ];
        for p in &principals {
            for o in &objects {
                for perm in perms {
                    for ancestors in [&[][..], std::slice::from_ref(&parent)] {
                        let set = p.roles_on(o, ancestors);
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

    #[test]
    fn anonymous_has_only_the_anonymous_role() {
        let roles = Principal::Anonymous.global_roles();
        assert_eq!(
            roles.into_iter().collect::<Vec<_>>(),
            vec!["Anonymous".to_string()]
        );
    }
}
