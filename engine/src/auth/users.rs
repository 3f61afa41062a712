//! User records (`u:<login>`).

use serde::{Deserialize, Serialize};

use crate::context::Ctx;
use crate::error::Result;
use crate::keys;
use crate::security::User;

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
    /// Global roles.
    #[serde(default)]
    pub roles: Vec<String>,
}

impl UserRecord {
    /// The request-level view of this user.
    pub fn to_user(&self) -> User {
        User {
            login: self.login.clone(),
            fullname: self.fullname.clone(),
            roles: self.roles.clone(),
        }
    }
}

/// The user `login`, if any.
pub fn get(ctx: &Ctx<'_>, login: &str) -> Result<Option<UserRecord>> {
    ctx.get_json(&keys::user(login))
}

/// Every user, by login (in login order).
pub fn all(ctx: &Ctx<'_>) -> Result<Vec<UserRecord>> {
    ctx.values_with_prefix(keys::USER_PREFIX)
}

/// Remove a user.
pub fn remove(ctx: &mut Ctx<'_>, login: &str) -> Result<()> {
    ctx.delete(&keys::user(login))
}

/// Create or replace a user.
pub fn put(ctx: &mut Ctx<'_>, user: &UserRecord) -> Result<()> {
    ctx.put_json(&keys::user(&user.login), user)
}
