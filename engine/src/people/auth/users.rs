//! User records (`u:<login>`).

use serde::{Deserialize, Serialize};

use crate::core::error::Result;
use crate::core::events::Event;
use crate::core::keys;
use crate::runtime::context::Ctx;

/// A stored user.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct UserRecord {
    /// Login name.
    pub login: String,
    /// Full name.
    #[serde(default)]
    pub fullname: String,
    /// E-mail address.
    #[serde(default)]
    pub email: String,
    /// Free-text description.
    #[serde(default)]
    pub description: String,
    /// Home page URL.
    #[serde(default)]
    pub home_page: String,
    /// Location.
    #[serde(default)]
    pub location: String,
    /// argon2id PHC string.
    pub password_hash: String,
    /// Given when the user is created and never changed ([`put`]): tokens carry it, so a token
    /// of a deleted user never works for a later user with the same login. Empty for users
    /// stored before it existed (their tokens carry none either).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Moved on ([`put`]) when the password changes or the user logs out of all sessions (not
    /// when roles change: they are read per request): every token names the version it was issued at and stops working when
    /// it moves on.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub credential_version: u64,
    /// Global roles.
    #[serde(default)]
    pub roles: Vec<String>,
    /// The user's portrait, if one was uploaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub portrait: Option<Portrait>,
    /// Values of the user schema's further fields (those the data file adds to the built-in
    /// ones, [`crate::people::accounts::user_fields`]), by name.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub properties: std::collections::BTreeMap<String, serde_json::Value>,
}

/// A user's portrait image: its bytes are a blob ([`crate::content::blobs`]) owned by
/// [`portrait_owner`] of the user, so the user record read on every authenticated request stays
/// small.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Portrait {
    /// Its media type (`image/png`, ...).
    pub content_type: String,
    /// Its file name.
    #[serde(default)]
    pub filename: String,
    /// The blob holding the image (its id is also the image's `ETag`).
    pub blob: String,
    /// Its size in bytes.
    pub size: u64,
}

/// The blob owner a user's portrait is stored under (`@portrait:<login>`; object owners are uids,
/// which never start with `@`).
pub fn portrait_owner(login: &str) -> String {
    format!("@portrait:{login}")
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The user `login`, if any.
pub fn get(ctx: &Ctx<'_>, login: &str) -> Result<Option<UserRecord>> {
    ctx.get_json(&keys::user(login))
}

/// Every user, by login (in login order).
pub fn all(ctx: &Ctx<'_>) -> Result<Vec<UserRecord>> {
    ctx.values_with_prefix(keys::USER_PREFIX)
}

/// End every session (token) of `login` at once: its credential version moves on
/// ([`Event::UserModified`]).
pub fn end_sessions(ctx: &mut Ctx<'_>, login: &str) -> Result<()> {
    if let Some(mut user) = get(ctx, login)? {
        user.credential_version += 1;
        put(ctx, &user)?;
    }
    Ok(())
}

/// Remove a user ([`Event::UserRemoved`]).
pub fn remove(ctx: &mut Ctx<'_>, login: &str) -> Result<()> {
    ctx.delete(&keys::user(login))?;
    ctx.emit(Event::UserRemoved {
        login: login.to_string(),
    });
    Ok(())
}

/// Create ([`Event::UserAdded`]) or replace ([`Event::UserModified`]) a user. A new user gets a
/// fresh [`UserRecord::uid`]; a stored one keeps its own, and its
/// [`UserRecord::credential_version`] moves on when the password changes (which ends every token
/// of the user). Roles are not credentials: they are read on every request, so a change of
/// roles ends no session and takes effect on the next request.
pub fn put(ctx: &mut Ctx<'_>, user: &UserRecord) -> Result<()> {
    let key = keys::user(&user.login);
    let before: Option<UserRecord> = ctx.get_json(&key)?;
    let existed = before.is_some();
    let mut user = user.clone();
    match before {
        Some(old) => {
            user.uid = old.uid;
            let version = user.credential_version.max(old.credential_version);
            user.credential_version = if old.password_hash != user.password_hash {
                version + 1
            } else {
                version
            };
        }
        None => user.uid = ctx.new_uid(),
    }
    ctx.put_json(&key, &user)?;
    let login = user.login.clone();
    ctx.emit(if existed {
        Event::UserModified { login }
    } else {
        Event::UserAdded { login }
    });
    Ok(())
}
