//! Permission decisions on stored content: whether the caller of a request holds a permission on
//! an object, given its workflow state and the local roles on it and on its ancestors (read from
//! the tree). The roles and permissions themselves are in [`crate::core::security`].
//!
//! The checks are methods of [`Access`], implemented for the request context, so a service or
//! handler writes `ctx.require(Permission::Modify, &obj)?` after `use crate::people::permissions::Access`.

use crate::core::error::{EngineError, Result};
use crate::core::model::ContentRecord;
use crate::runtime::context::Ctx;
use std::collections::BTreeSet;

use crate::content::tree;
use crate::core::security::{allowed_tokens, granting_roles, Permission, Principal};

/// Permission checks for the caller of a request.
pub trait Access {
    /// Whether the caller holds `perm` on `obj`.
    fn permitted(&self, perm: Permission, obj: &ContentRecord) -> Result<bool>;

    /// Whether the caller holds `perm` on `obj`, where `ancestors` caches the ancestors of `obj`
    /// (root first): read on first need when `None`, and then reused by the caller for siblings
    /// of `obj` (which share them).
    fn permitted_within(
        &self,
        perm: Permission,
        obj: &ContentRecord,
        ancestors: &mut Option<Vec<ContentRecord>>,
    ) -> Result<bool>;

    /// Fail with 401 (anonymous) or 403 (logged in) unless the caller holds `perm` on `obj`.
    fn require(&self, perm: Permission, obj: &ContentRecord) -> Result<()>;

    /// The error for a missing permission: 401 for anonymous callers, 403 otherwise.
    fn denied(&self, perm: Permission) -> EngineError;
}

impl Access for Ctx<'_> {
    fn permitted(&self, perm: Permission, obj: &ContentRecord) -> Result<bool> {
        let mut ancestors = None;
        self.permitted_within(perm, obj, &mut ancestors)
    }

    fn permitted_within(
        &self,
        perm: Permission,
        obj: &ContentRecord,
        ancestors: &mut Option<Vec<ContentRecord>>,
    ) -> Result<bool> {
        let ty = self.type_of(obj)?;
        let allowed = granting_roles(perm, obj, ty.workflow.as_deref(), &self.core.workflows);
        // The caller's roles here are its global roles plus its local roles on `obj` and on every
        // ancestor; a union, so the first part that grants `perm` settles it. Global roles and
        // the object's own local roles first: most checks end there without reading (and
        // decoding) the ancestors.
        if self.principal.holds_any(allowed, obj, &[]) {
            return Ok(true);
        }
        if self.principal.is_anonymous() || obj.block_local_roles {
            return Ok(false);
        }
        let chain = match ancestors {
            Some(a) => a,
            None => ancestors.insert(tree::ancestors(self, obj)?),
        };
        Ok(self.principal.holds_any(allowed, obj, chain))
    }

    fn require(&self, perm: Permission, obj: &ContentRecord) -> Result<()> {
        if self.permitted(perm, obj)? {
            return Ok(());
        }
        Err(self.denied(perm))
    }

    fn denied(&self, perm: Permission) -> EngineError {
        match &self.principal {
            Principal::Anonymous => {
                EngineError::Unauthorized("You are not authorized to access this resource.".into())
            }
            Principal::User(u) => EngineError::Forbidden(format!(
                "User '{}' lacks the permission '{}' here.",
                u.login,
                perm.name()
            )),
        }
    }
}

/// The catalog's `allowedRolesAndUsers` for `obj`, given its ancestors (root first): the roles
/// granted View on it, and `user:<id>` for every user or group that holds one of those roles
/// locally on `obj` or on an ancestor it inherits from (up to the nearest one that blocks
/// inheritance; [`crate::core::security::allowed_tokens`]). A caller may view `obj` exactly when one of
/// its [`Principal::search_tokens`] is among them: the same answer as [`Access::permitted`] for
/// [`Permission::View`], decided inside the index.
pub fn allowed_roles_and_users(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    ancestors: &[ContentRecord],
) -> Result<BTreeSet<String>> {
    let ty = ctx.type_of(obj)?;
    let viewing = granting_roles(
        Permission::View,
        obj,
        ty.workflow.as_deref(),
        &ctx.core.workflows,
    );
    Ok(allowed_tokens(viewing, obj, ancestors))
}
