//! Logging in through an external identity provider (single sign-on with OpenID Connect).
//!
//! The host runs the protocol (discovery, the authorization code flow with PKCE, checking the
//! state, verifying the ID token's signature, nonce and expiry against the provider's keys) and
//! hands the engine what the verified token says, mapped to a [`ExternalIdentity`]; the engine
//! decides the rest here: which user that is (created on the first login, its name and e-mail
//! kept in step afterwards), which groups it belongs to (when the operator maps a groups claim),
//! and the token it gets. No network I/O happens here.

use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::security::{Role, AUTHENTICATED_USERS};
use crate::people::accounts;
use crate::runtime::context::Ctx;

use super::groups::{self, GroupRecord};
use super::users::{self, UserRecord};

/// Who a provider says logged in, as the host mapped its verified ID token's claims.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExternalIdentity {
    /// The provider's id ([`crate::runtime::state::LoginProvider::id`]).
    pub provider: String,
    /// The login here (the mapped claim: `sub`, `preferred_username`, `email`, ...).
    pub login: String,
    /// The full name, when the provider gave one (`None`: the stored one is kept).
    pub fullname: Option<String>,
    /// The e-mail address, when the provider gave one (`None`: the stored one is kept).
    pub email: Option<String>,
    /// The groups the user belongs to here, when the operator maps a groups claim: its direct
    /// groups become exactly these (missing groups are created). `None`: groups are not touched.
    pub groups: Option<Vec<String>>,
    /// A user with this login that has a password here (a local account) may be logged in as
    /// (the operator's `link_existing_users`); otherwise such a login is refused, so a provider
    /// whose users choose their own names cannot take over a local account.
    pub link_existing: bool,
}

/// The longest login or group id taken from a provider.
const MAX_NAME: usize = 200;

/// A login or group id from a provider that can be stored here: not empty, not too long, no
/// control characters, no `/` (they are path segments of `@users/<login>` and `@groups/<id>`).
fn usable(name: &str) -> bool {
    !name.trim().is_empty()
        && name.len() <= MAX_NAME
        && !name.chars().any(|c| c.is_control() || c == '/')
}

/// Log in the user a provider vouched for: create it on its first login (role Member, no
/// password), update its full name and e-mail when the provider's differ, set its direct groups
/// to the provider's when they are mapped, and issue a token ([`Event::UserLoggedIn`]).
///
/// Refused: an unknown provider (404), a login or group id that cannot be stored (401, naming
/// the claim's value), and a local account with a password unless
/// [`ExternalIdentity::link_existing`] (403), and groups that would leave the site without a
/// Manager (400, [`keep_groups`]). Nothing is written when it is refused.
pub fn log_in(ctx: &mut Ctx<'_>, identity: &ExternalIdentity) -> Result<String> {
    if !ctx
        .core
        .options
        .login
        .providers
        .iter()
        .any(|p| p.id == identity.provider)
    {
        return Err(EngineError::NotFound {
            url: format!("@login-oidc/{}", identity.provider),
            context: None,
        });
    }
    if !usable(&identity.login) {
        return Err(EngineError::Unauthorized(format!(
            "The identity provider '{}' gave no usable login ({:?})",
            identity.provider, identity.login
        )));
    }
    let wanted_groups = match &identity.groups {
        Some(list) => {
            let mut wanted: Vec<String> = Vec::new();
            for g in list {
                if !usable(g) {
                    return Err(EngineError::Unauthorized(format!(
                        "The identity provider '{}' gave a group that cannot be used ({g:?})",
                        identity.provider
                    )));
                }
                // Every logged-in user is in the virtual group already; it stores no members.
                if g != AUTHENTICATED_USERS && !wanted.contains(g) {
                    wanted.push(g.clone());
                }
            }
            Some(wanted)
        }
        None => None,
    };
    let user = match users::get(ctx, &identity.login)? {
        Some(existing) => {
            if !existing.password_hash.is_empty() && !identity.link_existing {
                return Err(EngineError::Forbidden(format!(
                    "A local account '{}' with a password exists; the identity provider '{}' may \
                     not log in as it (the operator can allow it with link_existing_users)",
                    identity.login, identity.provider
                )));
            }
            let mut changed = existing.clone();
            if let Some(name) = &identity.fullname {
                changed.fullname = name.clone();
            }
            if let Some(email) = &identity.email {
                changed.email = email.clone();
            }
            if changed != existing {
                users::put(ctx, &changed)?;
            }
            changed
        }
        None => {
            let user = UserRecord {
                login: identity.login.clone(),
                fullname: identity.fullname.clone().unwrap_or_default(),
                email: identity.email.clone().unwrap_or_default(),
                description: String::new(),
                home_page: String::new(),
                location: String::new(),
                password_hash: String::new(),
                uid: String::new(),
                credential_version: 0,
                roles: vec![Role::Member.name().to_string()],
                portrait: None,
                properties: Default::default(),
            };
            users::put(ctx, &user)?;
            // `put` gave it its uid: the token names it.
            users::get(ctx, &identity.login)?.unwrap_or(user)
        }
    };
    if let Some(wanted) = wanted_groups {
        keep_groups(ctx, &user.login, &wanted)?;
    }
    let token = super::issue_token(ctx, &user)?;
    ctx.emit(Event::UserLoggedIn {
        login: user.login.clone(),
    });
    Ok(token)
}

/// Make `wanted` the direct groups of `login`: join the missing ones (created when they do not
/// exist, titled with their id), leave the others. Leaving a group may take Manager away (the
/// provider no longer lists `Administrators`): refused, as on every other path, when no Manager
/// would remain ([`accounts::check_some_manager_remains`]); the login is then refused and
/// nothing is written. (Who the Managers are is the provider's to say here: the operator mapped
/// its groups claim; the caller is not logged in yet, so the rule that only Managers make or
/// unmake Managers does not apply.)
fn keep_groups(ctx: &mut Ctx<'_>, login: &str, wanted: &[String]) -> Result<()> {
    let current = groups::direct_groups(ctx, login)?;
    for id in wanted {
        if current.contains(id) {
            continue;
        }
        let mut group = groups::get(ctx, id)?.unwrap_or_else(|| GroupRecord {
            id: id.clone(),
            title: id.clone(),
            description: String::new(),
            email: String::new(),
            roles: Vec::new(),
            members: Vec::new(),
        });
        group.members.push(login.to_string());
        groups::put(ctx, &group)?;
    }
    let mut left = false;
    for id in current.iter().filter(|g| !wanted.contains(g)) {
        if let Some(mut group) = groups::get(ctx, id)? {
            group.members.retain(|m| m != login);
            groups::put(ctx, &group)?;
            left = true;
        }
    }
    if left {
        accounts::check_some_manager_remains(ctx)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_a_provider_must_be_storable() {
        assert!(usable("alice"));
        assert!(usable("alice@example.org"));
        assert!(!usable(""));
        assert!(!usable("  "));
        assert!(!usable("a/b"));
        assert!(!usable("a\nb"));
        assert!(!usable(&"x".repeat(MAX_NAME + 1)));
    }
}
