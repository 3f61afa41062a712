//! Managing users and groups: the rules every path that creates, changes or removes them follows
//! (the api layer only translates requests into these calls).
//!
//! - Logins and group ids share one namespace (both can be granted local roles), so a login
//!   cannot be taken by a group and the other way round.
//! - Every password set (creation, self-registration, an edit, a reset with a token, a change of
//!   one's own password) must have at least [`SecuritySettings::min_password_length`] characters.
//! - Only grantable roles ([`Role::grantable`]) can be given to users and groups (unknown role
//!   names do not even decode).
//! - A group cannot contain itself, directly or through other groups.
//! - Some user must remain a Manager (by its own roles or through a group): a change that would
//!   leave none is refused, and changes nothing. Only Managers make or unmake Managers, or
//!   change a Manager's account (a Site Administrator manages the other users).
//! - Password resets: a one-time token (valid [`RESET_TOKEN_TTL_SECS`]) is stored as its SHA-256
//!   under `k:` and mailed to the user through the outbox ([`crate::automation::mail`]).
//!
//! The settings that govern this live in `s:security` ([`SecuritySettings`]) and `s:usergroup`
//! ([`UserGroupSettings`]).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::automation::mail;
use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::core::security::{Principal, Role, AUTHENTICATED_USERS};
use crate::people::auth::groups::{self, GroupRecord};
use crate::people::auth::password;
use crate::people::auth::users::{self, Portrait, UserRecord};
use crate::runtime::context::Ctx;
use crate::runtime::state::Mail;
use crate::site::profile::SiteProfile;

/// The security settings (`s:security`; the `security` control panel).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecuritySettings {
    /// Anonymous visitors may create their own account (`POST /@users`, as a Member).
    #[serde(default)]
    pub enable_self_reg: bool,
    /// Users choose their password when they register (otherwise they get a reset mail).
    #[serde(default = "yes")]
    pub enable_user_pwd_choice: bool,
    /// New accounts use their e-mail address as their login.
    #[serde(default)]
    pub use_email_as_login: bool,
    /// The shortest password accepted, on every path that sets one (1 to 128).
    #[serde(default = "default_min_password_length")]
    pub min_password_length: usize,
}

fn yes() -> bool {
    true
}

fn default_min_password_length() -> usize {
    8
}

impl Default for SecuritySettings {
    fn default() -> Self {
        SecuritySettings {
            enable_self_reg: false,
            enable_user_pwd_choice: true,
            use_email_as_login: false,
            min_password_length: default_min_password_length(),
        }
    }
}

/// The user and group settings (`s:usergroup`; the `usergroup` control panel): hints for user
/// interfaces of large sites (search instead of listing everyone).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserGroupSettings {
    /// Many users: search them rather than list them all.
    #[serde(default)]
    pub many_users: bool,
    /// Many groups: search them rather than list them all.
    #[serde(default)]
    pub many_groups: bool,
}

/// The security settings (defaults until first saved).
pub fn security_settings(ctx: &Ctx<'_>) -> Result<SecuritySettings> {
    Ok(ctx.get_json(keys::SECURITY)?.unwrap_or_default())
}

/// Store the security settings ([`Event::AccountSettingsChanged`]).
pub fn save_security_settings(ctx: &mut Ctx<'_>, s: &SecuritySettings) -> Result<()> {
    if !(1..=128).contains(&s.min_password_length) {
        return Err(EngineError::bad_request(
            "Invalid setting 'min_password_length': must be between 1 and 128",
        ));
    }
    ctx.put_json(keys::SECURITY, s)?;
    ctx.emit(Event::AccountSettingsChanged);
    Ok(())
}

/// The user and group settings (defaults until first saved).
pub fn usergroup_settings(ctx: &Ctx<'_>) -> Result<UserGroupSettings> {
    Ok(ctx.get_json(keys::USERGROUP)?.unwrap_or_default())
}

/// Store the user and group settings ([`Event::AccountSettingsChanged`]).
pub fn save_usergroup_settings(ctx: &mut Ctx<'_>, s: &UserGroupSettings) -> Result<()> {
    ctx.put_json(keys::USERGROUP, s)?;
    ctx.emit(Event::AccountSettingsChanged);
    Ok(())
}

/// Refuse a password shorter than the site's minimum.
pub fn check_password(ctx: &Ctx<'_>, pw: &str) -> Result<()> {
    let min = security_settings(ctx)?.min_password_length;
    if pw.chars().count() < min {
        return Err(EngineError::bad_request(format!(
            "The password must be at least {min} characters long"
        )));
    }
    Ok(())
}

fn hash(ctx: &Ctx<'_>, pw: &str) -> Result<String> {
    password::hash(
        pw,
        ctx.core.options.password_cost,
        ctx.core.entropy.as_ref(),
    )
}

/// Refuse an id for a new user or group: its characters, and whether a user or group has it.
fn check_new_id(ctx: &Ctx<'_>, id: &str, what: &str, spaces: bool) -> Result<()> {
    let ok_char = |c: char| {
        c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@') || (spaces && c == ' ')
    };
    if id.is_empty() || id.len() > 100 || !id.chars().all(ok_char) || id.trim() != id {
        return Err(EngineError::bad_request(format!(
            "Invalid {what} '{id}': use letters, digits, '-', '_', '.', '@'{}",
            if spaces { " and inner spaces" } else { "" }
        )));
    }
    if users::get(ctx, id)?.is_some() || groups::get(ctx, id)?.is_some() {
        return Err(EngineError::bad_request(format!(
            "The {what} '{id}' is taken by another user or group"
        )));
    }
    Ok(())
}

/// Refuse roles that cannot be granted to users and groups.
pub fn check_grantable(roles: &[Role]) -> Result<()> {
    match roles.iter().find(|r| !r.grantable()) {
        Some(r) => Err(EngineError::bad_request(format!(
            "The role '{}' cannot be granted: it is implicit or local",
            r.name()
        ))),
        None => Ok(()),
    }
}

fn dedup(roles: &[Role]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in roles {
        if !out.iter().any(|x| x == r.name()) {
            out.push(r.name().to_string());
        }
    }
    out
}

/// A user to create.
#[derive(Debug, Clone, Default)]
pub struct NewUser {
    /// Login (taken from the e-mail address when empty and the site uses e-mail logins).
    pub login: String,
    /// Password; `None` only when a reset mail is sent instead.
    pub password: Option<String>,
    /// Full name.
    pub fullname: String,
    /// E-mail address.
    pub email: String,
    /// Description.
    pub description: String,
    /// Home page.
    pub home_page: String,
    /// Location.
    pub location: String,
    /// Global roles (Member when empty).
    pub roles: Vec<Role>,
    /// Values of the user schema's further fields ([`check_properties`]).
    pub properties: BTreeMap<String, Value>,
}

/// Create a user ([`Event::UserAdded`]); with `send_reset`, also mail a password reset token
/// (then the password may be left out).
pub fn create_user(ctx: &mut Ctx<'_>, new: NewUser, send_reset: bool) -> Result<UserRecord> {
    let before = managers(ctx)?;
    let settings = security_settings(ctx)?;
    let login = if new.login.is_empty() && settings.use_email_as_login {
        new.email.clone()
    } else {
        new.login.clone()
    };
    if login.is_empty() {
        return Err(EngineError::bad_request("Property 'username' is required"));
    }
    check_new_id(ctx, &login, "username", false)?;
    check_grantable(&new.roles)?;
    check_properties(ctx, &new.properties)?;
    let password_hash = match &new.password {
        Some(pw) => {
            check_password(ctx, pw)?;
            hash(ctx, pw)?
        }
        None if send_reset => String::new(),
        None => return Err(EngineError::bad_request("Property 'password' is required")),
    };
    let roles = if new.roles.is_empty() {
        vec![Role::Member.name().to_string()]
    } else {
        dedup(&new.roles)
    };
    let user = UserRecord {
        uid: String::new(),
        credential_version: 0,
        login,
        fullname: new.fullname,
        email: new.email,
        description: new.description,
        home_page: new.home_page,
        location: new.location,
        password_hash,
        roles,
        portrait: None,
        properties: new.properties,
    };
    users::put(ctx, &user)?;
    check_managers(ctx, &before)?;
    if send_reset {
        request_reset(ctx, &user.login)?;
    }
    Ok(user)
}

/// Changes to a user's properties (`None`: unchanged).
#[derive(Debug, Clone, Default)]
pub struct UserChanges {
    /// New password.
    pub password: Option<String>,
    /// Full name.
    pub fullname: Option<String>,
    /// E-mail address.
    pub email: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Home page.
    pub home_page: Option<String>,
    /// Location.
    pub location: Option<String>,
    /// Global roles (the whole new list).
    pub roles: Option<Vec<Role>>,
    /// Values of the user schema's further fields to set ([`check_properties`]).
    pub properties: BTreeMap<String, Value>,
    /// A new portrait (`Some(None)` removes it; [`portrait`] checks an upload).
    pub portrait: Option<Option<PortraitUpload>>,
}

/// Largest portrait accepted (decoded bytes).
pub const MAX_PORTRAIT_BYTES: usize = 1024 * 1024;

/// The box a portrait uploaded with `scale: true` is made to fit (pixels).
pub const PORTRAIT_BOX: u32 = 200;

/// A checked portrait upload, not yet stored.
#[derive(Debug, Clone)]
pub struct PortraitUpload {
    /// Its media type.
    pub content_type: String,
    /// Its file name.
    pub filename: String,
    /// The image.
    pub bytes: Vec<u8>,
}

/// A portrait from an upload: `data` in base64, of an image type (PNG, JPEG, GIF or WebP; not
/// SVG, which can carry scripts), at most [`MAX_PORTRAIT_BYTES`], and an image that decodes.
/// With `scale`, an image larger than [`PORTRAIT_BOX`] pixels either way is scaled down to fit
/// (JPEG stays JPEG, other types become PNG).
pub fn portrait(
    codec: &dyn crate::core::images::ImageCodec,
    content_type: &str,
    filename: &str,
    data: &str,
    scale: bool,
) -> Result<PortraitUpload> {
    use base64::Engine as _;
    const TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];
    let content_type = content_type.trim().to_ascii_lowercase();
    if !TYPES.contains(&content_type.as_str()) {
        return Err(EngineError::bad_request(format!(
            "Invalid property 'portrait.content-type': '{content_type}' is not one of {}",
            TYPES.join(", ")
        )));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| EngineError::bad_request(format!("Invalid property 'portrait.data': {e}")))?;
    if bytes.is_empty() || bytes.len() > MAX_PORTRAIT_BYTES {
        return Err(EngineError::bad_request(format!(
            "Invalid property 'portrait.data': from 1 byte to {MAX_PORTRAIT_BYTES} bytes"
        )));
    }
    let info = crate::content::files::read_image(codec, "portrait", &bytes)?;
    let (w, h) = (info.width, info.height);
    let fits = crate::content::files::ScaleSize {
        name: "portrait".into(),
        width: PORTRAIT_BOX,
        height: PORTRAIT_BOX,
    };
    let (sw, sh) = crate::content::files::fit(w, h, &fits);
    if scale && (sw, sh) != (w, h) {
        let scaled =
            crate::content::files::scale_image(codec, "portrait", &bytes, &info, &[(sw, sh)])?
                .pop()
                .unwrap_or_default();
        return Ok(PortraitUpload {
            content_type: info.kind.scale_mime().to_string(),
            filename: filename.to_string(),
            bytes: scaled,
        });
    }
    // nothing to scale: lets the codec drop what it kept of the image
    crate::content::files::scale_image(codec, "portrait", &bytes, &info, &[])?;
    Ok(PortraitUpload {
        content_type,
        filename: filename.to_string(),
        bytes,
    })
}

/// Store `upload` as `login`'s portrait blob, letting go of `old` (the blob of the portrait it
/// replaces, if any).
fn store_portrait(
    ctx: &mut Ctx<'_>,
    login: &str,
    old: Option<&Portrait>,
    upload: Option<PortraitUpload>,
) -> Result<Option<Portrait>> {
    let owner = users::portrait_owner(login);
    if let Some(old) = old {
        crate::content::blobs::release(ctx, &owner, &old.blob)?;
    }
    let Some(up) = upload else {
        return Ok(None);
    };
    let blob = crate::content::blobs::store(ctx, &owner, &up.bytes)?;
    Ok(Some(Portrait {
        content_type: up.content_type,
        filename: up.filename,
        blob,
        size: up.bytes.len() as u64,
    }))
}

/// The names of the user properties every user has (stored as [`UserRecord`]'s own fields),
/// and of the registration form's fields that are not stored (`password_ctl`, `mail_me`).
pub const BUILT_IN_USER_FIELDS: &[&str] = &[
    "username",
    "password",
    "password_ctl",
    "mail_me",
    "fullname",
    "email",
    "description",
    "home_page",
    "location",
    "portrait",
];

/// Whether `name` is a field the site added to the user schema: such values are stored in
/// [`UserRecord::properties`].
pub fn is_custom_user_field(ctx: &Ctx<'_>, name: &str) -> Result<bool> {
    Ok(custom_user_fields(ctx)?.iter().any(|f| f.name == name))
}

/// Refuse values of the site's user fields that do not have the field's JSON type (null
/// removes a value).
pub fn check_properties(ctx: &Ctx<'_>, properties: &BTreeMap<String, Value>) -> Result<()> {
    let all = custom_user_fields(ctx)?;
    for (name, value) in properties {
        let field = all
            .iter()
            .find(|f| f.name == *name)
            .ok_or_else(|| EngineError::bad_request(format!("Unknown user property '{name}'")))?;
        let ok = match field.kind.as_str() {
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "array" => value.is_array(),
            _ => true,
        } || value.is_null();
        if !ok {
            return Err(EngineError::bad_request(format!(
                "Invalid property '{name}': expected {}",
                field.kind
            )));
        }
    }
    Ok(())
}

/// Change a user ([`Event::UserModified`]); refused when no Manager would remain.
pub fn update_user(ctx: &mut Ctx<'_>, login: &str, changes: UserChanges) -> Result<UserRecord> {
    let before = if changes.roles.is_some() {
        managers(ctx)?
    } else {
        Vec::new()
    };
    let mut user = users::get(ctx, login)?
        .ok_or_else(|| EngineError::bad_request(format!("No user '{login}'")))?;
    if let Some(roles) = &changes.roles {
        check_grantable(roles)?;
        user.roles = dedup(roles);
    }
    if let Some(pw) = &changes.password {
        check_password(ctx, pw)?;
        user.password_hash = hash(ctx, pw)?;
    }
    if let Some(p) = changes.portrait {
        user.portrait = store_portrait(ctx, login, user.portrait.as_ref(), p)?;
    }
    check_properties(ctx, &changes.properties)?;
    for (name, value) in changes.properties {
        if value.is_null() {
            user.properties.remove(&name);
        } else {
            user.properties.insert(name, value);
        }
    }
    for (value, slot) in [
        (changes.fullname, &mut user.fullname),
        (changes.email, &mut user.email),
        (changes.description, &mut user.description),
        (changes.home_page, &mut user.home_page),
        (changes.location, &mut user.location),
    ] {
        if let Some(v) = value {
            *slot = v;
        }
    }
    users::put(ctx, &user)?;
    if changes.roles.is_some() {
        check_managers(ctx, &before)?;
    }
    Ok(user)
}

/// Where a Nick site keeps the logins of its system users.
const SYSTEM_USERS_KEY: &str = "nick.system_users";

/// The login Nick gives the visitor's account, a system user of every Nick site.
const NICK_VISITOR: &str = "anonymous";

/// Record the system users of a new Nick site: the account it was created with, and Nick's
/// visitor account name `anonymous` (here a visitor is no account; the name stays reserved for
/// one, as on Nick).
pub(crate) fn set_system_users(ctx: &mut Ctx<'_>, admin_login: &str) -> Result<()> {
    let mut logins = vec![admin_login.to_string()];
    if admin_login != NICK_VISITOR {
        logins.push(NICK_VISITOR.to_string());
    }
    ctx.put_json(&keys::config_record(SYSTEM_USERS_KEY), &logins)
}

/// The system users of the site: on a Nick site the account it was created with and
/// `anonymous`, which cannot be deleted (Nick's `systemUsers`); none on a Plone site.
pub fn system_users(ctx: &Ctx<'_>) -> Result<Vec<String>> {
    if !ctx.profile().is_nick() {
        return Ok(Vec::new());
    }
    Ok(ctx
        .get_json::<Vec<String>>(&keys::config_record(SYSTEM_USERS_KEY))?
        .unwrap_or_default())
}

/// Remove a user ([`Event::UserRemoved`]): out of every group, its reset tokens deleted;
/// refused when it is the last Manager, or a system user of a Nick site ([`system_users`]).
/// (Local roles granted to it on content stay.)
pub fn delete_user(ctx: &mut Ctx<'_>, login: &str) -> Result<()> {
    if system_users(ctx)?.iter().any(|u| u == login) {
        return Err(EngineError::Forbidden(format!(
            "You can’t delete system users: '{login}' is one"
        )));
    }
    let before = managers(ctx)?;
    users::remove(ctx, login)?;
    drop_member_everywhere(ctx, login)?;
    for (k, v) in ctx.scan_prefix(keys::RESET_TOKEN_PREFIX)? {
        if serde_json::from_slice::<ResetToken>(&v).is_ok_and(|t| t.login == login) {
            ctx.delete(&k)?;
        }
    }
    check_managers(ctx, &before)
}

fn drop_member_everywhere(ctx: &mut Ctx<'_>, member: &str) -> Result<()> {
    for mut g in groups::all(ctx)? {
        if g.members.iter().any(|m| m == member) {
            g.members.retain(|m| m != member);
            groups::put(ctx, &g)?;
        }
    }
    Ok(())
}

/// The logins of the users that hold Manager everywhere (by their own roles or a group's).
pub fn managers(ctx: &Ctx<'_>) -> Result<Vec<String>> {
    let all_groups = groups::all(ctx)?;
    Ok(users::all(ctx)?
        .iter()
        .map(|u| groups::resolve_with(&all_groups, u))
        .filter(|u| u.roles.iter().any(|r| r == Role::Manager.name()))
        .map(|u| u.login)
        .collect())
}

/// Whether the caller holds Manager everywhere (by its own roles or a group's).
fn caller_is_manager(ctx: &Ctx<'_>) -> bool {
    matches!(&ctx.principal, Principal::User(u) if u.roles.iter().any(|r| r == Role::Manager.name()))
}

/// After a change: refuse (400) a site left without a Manager (some user must remain one, by
/// its own roles or a group's), on every path that can take Manager away: here, and a login
/// whose identity provider takes its user out of a group ([`crate::people::auth::external`]).
/// The Managers after the change.
pub fn check_some_manager_remains(ctx: &Ctx<'_>) -> Result<Vec<String>> {
    let after = managers(ctx)?;
    if after.is_empty() {
        return Err(EngineError::bad_request(
            "This would remove the last Manager of the site: some user must remain a Manager",
        ));
    }
    Ok(after)
}

/// After a change: refuse (400) a site left without a Manager ([`check_some_manager_remains`]), and (403) a change of who the
/// Managers are by a caller who is not one (a Site Administrator may manage users, not make or
/// unmake Managers). `before`: [`managers`] before the change.
fn check_managers(ctx: &Ctx<'_>, before: &[String]) -> Result<()> {
    let after = check_some_manager_remains(ctx)?;
    if after != before && !caller_is_manager(ctx) {
        return Err(EngineError::Forbidden(
            "Only Managers can make or unmake Managers".into(),
        ));
    }
    Ok(())
}

/// Refuse (403) a caller who is not a Manager administering the account of one (its properties,
/// password or removal): a Site Administrator cannot take over a Manager's account.
pub fn check_may_administer(ctx: &Ctx<'_>, login: &str) -> Result<()> {
    if !caller_is_manager(ctx) && managers(ctx)?.iter().any(|m| m == login) {
        return Err(EngineError::Forbidden(format!(
            "Only Managers can change the account of the Manager '{login}'"
        )));
    }
    Ok(())
}

/// Changes to a group (`None`: unchanged).
#[derive(Debug, Clone, Default)]
pub struct GroupChanges {
    /// Title.
    pub title: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// E-mail address.
    pub email: Option<String>,
    /// Global roles (the whole new list).
    pub roles: Option<Vec<Role>>,
    /// Members to add (users or groups).
    pub add: Vec<String>,
    /// Members to remove.
    pub remove: Vec<String>,
}

/// Create a group ([`Event::GroupAdded`]) with `changes` applied (its members are added).
pub fn create_group(ctx: &mut Ctx<'_>, id: &str, changes: GroupChanges) -> Result<GroupRecord> {
    check_new_id(ctx, id, "group name", true)?;
    let group = GroupRecord {
        id: id.to_string(),
        title: String::new(),
        description: String::new(),
        email: String::new(),
        roles: Vec::new(),
        members: Vec::new(),
    };
    apply_group(ctx, group, changes)
}

/// Change a group ([`Event::GroupModified`]).
pub fn update_group(ctx: &mut Ctx<'_>, id: &str, changes: GroupChanges) -> Result<GroupRecord> {
    let group = groups::get(ctx, id)?
        .ok_or_else(|| EngineError::bad_request(format!("No group '{id}'")))?;
    apply_group(ctx, group, changes)
}

fn apply_group(
    ctx: &mut Ctx<'_>,
    mut group: GroupRecord,
    changes: GroupChanges,
) -> Result<GroupRecord> {
    let before = managers(ctx)?;
    if let Some(roles) = &changes.roles {
        // Every group holds `Authenticated` (its members are logged in), as Plone reports it;
        // naming it, as Plone's clients send the roles they read back, changes nothing.
        let roles: Vec<Role> = roles
            .iter()
            .copied()
            .filter(|r| *r != Role::Authenticated)
            .collect();
        check_grantable(&roles)?;
        let mut out: Vec<Role> = Vec::new();
        for r in &roles {
            if !out.contains(r) {
                out.push(*r);
            }
        }
        group.roles = out;
    }
    for (value, slot) in [
        (changes.title, &mut group.title),
        (changes.description, &mut group.description),
        (changes.email, &mut group.email),
    ] {
        if let Some(v) = value {
            *slot = v;
        }
    }
    if group.id == AUTHENTICATED_USERS && !(changes.add.is_empty() && changes.remove.is_empty()) {
        return Err(EngineError::bad_request(
            "The members of AuthenticatedUsers are every logged-in user; they cannot be changed",
        ));
    }
    for m in &changes.add {
        if m == AUTHENTICATED_USERS {
            return Err(EngineError::bad_request(
                "AuthenticatedUsers cannot be a member of a group",
            ));
        }
        if users::get(ctx, m)?.is_none() && groups::get(ctx, m)?.is_none() {
            return Err(EngineError::bad_request(format!(
                "No user or group '{m}' to add to the group"
            )));
        }
        if !group.members.contains(m) {
            group.members.push(m.clone());
        }
    }
    group.members.retain(|m| !changes.remove.contains(m));
    let mut all = groups::all(ctx)?;
    all.retain(|g| g.id != group.id);
    all.push(group.clone());
    if group.members.contains(&group.id)
        || groups::containing(&all, &group.id)
            .iter()
            .any(|g| g.id == group.id)
    {
        return Err(EngineError::bad_request(format!(
            "The group '{}' would contain itself",
            group.id
        )));
    }
    groups::put(ctx, &group)?;
    check_managers(ctx, &before)?;
    // Members who lose a role the group gave them keep their sessions: roles are read on every
    // request, so the next one already goes without it.
    Ok(group)
}

/// Remove a group ([`Event::GroupRemoved`]), taking it out of other groups; the built-in groups
/// cannot be removed, nor the group that holds the last Manager.
pub fn delete_group(ctx: &mut Ctx<'_>, id: &str) -> Result<()> {
    if groups::is_builtin(id) {
        return Err(EngineError::bad_request(format!(
            "The group '{id}' is built in and cannot be removed"
        )));
    }
    let before = managers(ctx)?;
    groups::remove(ctx, id)?;
    drop_member_everywhere(ctx, id)?;
    check_managers(ctx, &before)?;
    Ok(())
}

/// How long a password reset token is valid.
pub const RESET_TOKEN_TTL_SECS: i64 = 24 * 3600;

/// A stored password reset token (`e:<sha256 of the token>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ResetToken {
    login: String,
    expires: i64,
}

fn digest(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Reset mails sent per login within [`RESET_WINDOW_SECS`]; more requests in that time send
/// nothing (and answer the same).
pub const RESET_MAILS_PER_WINDOW: usize = 3;
/// The window of [`RESET_MAILS_PER_WINDOW`]: an hour.
pub const RESET_WINDOW_SECS: i64 = 3600;

/// Start a password reset for `login` ([`Event::PasswordResetRequested`]): a one-time token is
/// stored and mailed to the user's address through the outbox ([`crate::automation::mail::queue`]; a user
/// without a valid address gets no mail, and the host's notice log says so). An unknown login,
/// or one that got [`RESET_MAILS_PER_WINDOW`] tokens in the last [`RESET_WINDOW_SECS`], gets
/// nothing and the caller learns nothing: the answer is the same (no user enumeration, no
/// mail flood; the host also throttles the route per client address).
pub fn request_reset(ctx: &mut Ctx<'_>, login: &str) -> Result<()> {
    let Some(user) = users::get(ctx, login)? else {
        return Ok(());
    };
    let since = ctx.now().timestamp() + RESET_TOKEN_TTL_SECS - RESET_WINDOW_SECS;
    let mut recent = 0;
    for (_, v) in ctx.scan_prefix(keys::RESET_TOKEN_PREFIX)? {
        if let Ok(t) = serde_json::from_slice::<ResetToken>(&v) {
            if t.login == login && t.expires > since {
                recent += 1;
            }
        }
    }
    if recent >= RESET_MAILS_PER_WINDOW {
        if let Some(log) = &ctx.core.options.info_log {
            log(&format!(
                "password reset of '{login}': not sent, {recent} tokens were mailed in the last hour"
            ));
        }
        return Ok(());
    }
    let token = ctx.new_uid();
    let record = ResetToken {
        login: login.to_string(),
        expires: ctx.now().timestamp() + RESET_TOKEN_TTL_SECS,
    };
    ctx.put_json(&keys::reset_token(&digest(&token)), &record)?;
    ctx.emit(Event::PasswordResetRequested {
        login: login.to_string(),
    });
    let to = if user.email.is_empty() {
        user.login.clone()
    } else {
        user.email.clone()
    };
    let subject = "Password reset".to_string();
    let body = format!(
        "Set a new password for '{login}' with POST {}/@users/{login}/reset-password \
         {{\"reset_token\": \"{token}\", \"new_password\": ...}} within 24 hours.",
        ctx.base_url
    );
    if mail::is_address(&to) {
        let mut params = Map::new();
        params.insert("via".into(), json!("reset-password"));
        params.insert("login".into(), json!(login));
        mail::queue(
            ctx,
            mail::from_site(ctx, vec![to.clone()], subject.clone(), body.clone())?,
            "reset-password",
            params,
        )?;
    } else if let Some(log) = &ctx.core.options.info_log {
        // Nothing can be delivered; the operator learns why (the token stays out of the log).
        log(&format!(
            "password reset of '{login}': mail not sent, the user has no valid e-mail address"
        ));
    }
    ctx.core.keep_test_mail(Mail {
        to,
        subject,
        body,
        token: Some(token),
    });
    Ok(())
}

/// Set a new password for `login` with a reset token (which is used up).
pub fn reset_with_token(ctx: &mut Ctx<'_>, login: &str, token: &str, new: &str) -> Result<()> {
    let key = keys::reset_token(&digest(token));
    let stored: Option<ResetToken> = ctx.get_json(&key)?;
    match stored {
        Some(t) if t.login == login && t.expires > ctx.now().timestamp() => {}
        _ => {
            return Err(EngineError::bad_request(
                "Invalid 'reset_token': unknown, used, expired or not this user's",
            ))
        }
    }
    ctx.delete(&key)?;
    update_user(
        ctx,
        login,
        UserChanges {
            password: Some(new.to_string()),
            ..Default::default()
        },
    )?;
    Ok(())
}

/// Refuse `old` unless it is `user`'s current password (changing one's own password).
pub fn check_old_password(user: &UserRecord, old: &str) -> Result<()> {
    if !password::verify(old, &user.password_hash) {
        return Err(EngineError::bad_request(
            "Invalid property 'old_password': it is not the current password",
        ));
    }
    Ok(())
}

/// Whether the caller may change `login`'s password by giving its current one
/// ([`change_own_password`]): the user itself; on a Nick site also a manager (`manager`: the
/// caller may manage the portal), as Nick lets whoever knows the old password set a new one.
pub fn may_change_with_old_password(ctx: &Ctx<'_>, login: &str, manager: bool) -> bool {
    ctx.principal.login() == Some(login) || (manager && ctx.profile().is_nick())
}

/// Change one's own password, given the current one.
pub fn change_own_password(ctx: &mut Ctx<'_>, login: &str, old: &str, new: &str) -> Result<()> {
    let user = users::get(ctx, login)?
        .ok_or_else(|| EngineError::bad_request(format!("No user '{login}'")))?;
    check_old_password(&user, old)?;
    update_user(
        ctx,
        login,
        UserChanges {
            password: Some(new.to_string()),
            ..Default::default()
        },
    )?;
    Ok(())
}

/// One field of the user forms: the built-in ones are declared by the data file
/// `engine/src/people/userschema.json`; a site adds its own ([`save_custom_user_fields`], stored at
/// `s:userschema`), whose values users then have as [`UserRecord::properties`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserField {
    /// The property name.
    pub name: String,
    /// Its label.
    pub title: String,
    /// Help text.
    #[serde(default)]
    pub description: String,
    /// JSON type (`string`, `boolean`).
    #[serde(rename = "type")]
    pub kind: String,
    /// The reference's field factory name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factory: Option<String>,
    /// The widget a form should use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub widget: Option<String>,
    /// The default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
    /// The forms it appears in: `profile`, `registration`.
    pub forms: Vec<UserForm>,
    /// Whether the form requires it.
    #[serde(default)]
    pub required: bool,
}

/// A form the user schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum UserForm {
    /// A user's own profile (and managers' edit form).
    Profile,
    /// Self-registration.
    Registration,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserSchemaData {
    fields: Vec<UserField>,
}

/// The built-in user fields as `profile` describes them: Plone's texts
/// (`engine/src/people/userschema.json`), or Nick's (`userschema_nick.json`: its titles, help
/// texts and order, and the portrait in the profile form). Both describe the same properties.
fn builtin_user_fields(profile: SiteProfile) -> Result<Vec<UserField>> {
    let (name, text) = match profile {
        SiteProfile::Plone => ("userschema.json", include_str!("userschema.json")),
        SiteProfile::Nick => ("userschema_nick.json", include_str!("userschema_nick.json")),
    };
    let data: UserSchemaData =
        serde_json::from_str(text).map_err(|e| EngineError::Internal(format!("{name}: {e}")))?;
    Ok(data.fields)
}

/// The fields the site added to the user forms (`s:userschema`; none until set).
pub fn custom_user_fields(ctx: &Ctx<'_>) -> Result<Vec<UserField>> {
    Ok(ctx.get_json(keys::USERSCHEMA)?.unwrap_or_default())
}

/// Replace the fields the site adds to the user forms ([`Event::AccountSettingsChanged`]).
/// Refused: a built-in field's name, a name twice, a name that is not an identifier, an unknown
/// type, a field in no form. Values users already have for fields taken away stay stored (and
/// come back with the field).
pub fn save_custom_user_fields(ctx: &mut Ctx<'_>, fields: &[UserField]) -> Result<()> {
    let mut builtin = builtin_user_fields(SiteProfile::Plone)?;
    builtin.extend(builtin_user_fields(SiteProfile::Nick)?);
    for (i, f) in fields.iter().enumerate() {
        let bad = |why: &str| {
            Err(EngineError::bad_request(format!(
                "Invalid property 'fields[{i}]' ('{}'): {why}",
                f.name
            )))
        };
        if f.name.is_empty()
            || !f
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
            || f.name.starts_with(|c: char| c.is_ascii_digit())
        {
            return bad("a name is letters, digits and '_', not starting with a digit");
        }
        if builtin.iter().any(|b| b.name == f.name)
            || BUILT_IN_USER_FIELDS.contains(&f.name.as_str())
        {
            return bad("a built-in field has this name");
        }
        if fields[..i].iter().any(|g| g.name == f.name) {
            return bad("the name is given twice");
        }
        if !["string", "boolean", "integer", "number"].contains(&f.kind.as_str()) {
            return bad("the type must be string, boolean, integer or number");
        }
        if f.forms.is_empty() {
            return bad("it must appear in a form (profile, registration)");
        }
    }
    ctx.put_json(keys::USERSCHEMA, &fields)?;
    ctx.emit(Event::AccountSettingsChanged);
    Ok(())
}

/// The fields of `form`: the built-in ones in the data file's order, then the site's own.
pub fn user_fields(ctx: &Ctx<'_>, form: UserForm) -> Result<Vec<UserField>> {
    let mut all = builtin_user_fields(ctx.profile())?;
    all.extend(custom_user_fields(ctx)?);
    Ok(all
        .into_iter()
        .filter(|f| f.forms.contains(&form))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Engine, EngineOptions, MemStore, SiteSetup};

    /// The reverse index of members answers what scanning every group answers, through
    /// creations, nesting, removals of members, users and groups.
    #[test]
    fn the_member_index_agrees_with_the_groups() {
        let engine = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
        engine.create_site(&SiteSetup::new("secret")).unwrap();
        let check = |engine: &Engine<MemStore>| {
            engine
                .with_write(|ctx| {
                    let all = groups::all(ctx)?;
                    for u in users::all(ctx)? {
                        assert_eq!(groups::resolve(ctx, &u)?, groups::resolve_with(&all, &u));
                    }
                    Ok(())
                })
                .unwrap()
        };
        let user = |login: &str| NewUser {
            login: login.into(),
            password: Some("long-enough".into()),
            ..Default::default()
        };
        let add = |members: &[&str]| GroupChanges {
            add: members.iter().map(|m| m.to_string()).collect(),
            ..Default::default()
        };
        engine
            .with_write(|ctx| {
                for login in ["ann", "bob", "cy"] {
                    create_user(ctx, user(login), false)?;
                }
                create_group(ctx, "a", add(&["ann"]))?;
                create_group(ctx, "b", add(&["a", "bob"]))?;
                create_group(ctx, "c", add(&["b"]))?;
                update_group(ctx, "Reviewers", add(&["c", "cy"]))?;
                Ok(())
            })
            .unwrap();
        check(&engine);
        engine
            .with_write(|ctx| {
                let ann = groups::resolve(ctx, &users::get(ctx, "ann")?.unwrap())?;
                assert_eq!(
                    ann.groups,
                    [AUTHENTICATED_USERS, "Reviewers", "a", "b", "c"]
                );
                assert!(ann.roles.iter().any(|r| r == "Reviewer"));
                update_group(
                    ctx,
                    "b",
                    GroupChanges {
                        remove: vec!["a".into()],
                        ..Default::default()
                    },
                )?;
                Ok(())
            })
            .unwrap();
        check(&engine);
        engine
            .with_write(|ctx| {
                delete_group(ctx, "c")?;
                delete_user(ctx, "bob")?;
                Ok(())
            })
            .unwrap();
        check(&engine);
        engine
            .with_write(|ctx| {
                assert!(ctx.scan_prefix(b"M:")?.iter().all(|(k, _)| {
                    let k = String::from_utf8_lossy(k);
                    k != "M:bob" && k != "M:c"
                }));
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn the_user_schema_data_reads() {
        let nick = builtin_user_fields(SiteProfile::Nick).unwrap();
        let nick_profile: Vec<&str> = nick
            .iter()
            .filter(|f| f.forms.contains(&UserForm::Profile))
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(
            nick_profile,
            [
                "fullname",
                "email",
                "description",
                "home_page",
                "location",
                "portrait"
            ]
        );
        assert!(nick
            .iter()
            .all(|f| BUILT_IN_USER_FIELDS.contains(&f.name.as_str())));
        let fields = builtin_user_fields(SiteProfile::Plone).unwrap();
        let profile: Vec<&str> = fields
            .iter()
            .filter(|f| f.forms.contains(&UserForm::Profile))
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(
            profile,
            ["fullname", "email", "home_page", "description", "location"]
        );
        assert!(fields
            .iter()
            .all(|f| BUILT_IN_USER_FIELDS.contains(&f.name.as_str())));
        assert!(fields.iter().any(|f| f.name == "password" && f.required));
    }
}
