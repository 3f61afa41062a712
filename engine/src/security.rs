//! Who may do what: principals, roles and permissions.
//!
//! A principal's roles on an object are its global roles, `Anonymous` (everyone) and
//! `Authenticated` (every logged-in user), plus the local roles granted to it on the object or any
//! ancestor (the creator of an object holds `Owner` there). A permission is granted when one of those
//! roles is among the roles the permission maps to: the object's workflow state decides that for the
//! permissions it manages (View, Modify portal content), the site defaults below for the rest.

use std::collections::BTreeSet;

use crate::model::ContentRecord;
use crate::workflow::Workflows;

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

/// The roles granted `perm` on `obj` (by its workflow state, or the site defaults).
pub fn roles_for(
    perm: Permission,
    obj: &ContentRecord,
    workflow_id: Option<&str>,
    workflows: &Workflows,
) -> Vec<String> {
    if let (Some(state), Some(wf)) = (
        obj.review_state.as_deref(),
        workflow_id.and_then(|w| workflows.get(w)),
    ) {
        if let Some(roles) = wf
            .states
            .get(state)
            .and_then(|s| s.permissions.get(perm.name()))
        {
            return roles.clone();
        }
    }
    perm.default_roles().iter().map(|r| r.to_string()).collect()
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

    #[test]
    fn anonymous_has_only_the_anonymous_role() {
        let roles = Principal::Anonymous.global_roles();
        assert_eq!(
            roles.into_iter().collect::<Vec<_>>(),
            vec!["Anonymous".to_string()]
        );
    }
}
