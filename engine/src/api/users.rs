//! `@users`: user accounts.
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `/@users?query=&search=&groups_filter=` | | 200, `{@id, items: [user], items_total}` (managers; others 401) |
//! | GET | `/@users/<id>` | | 200, `{@id, id, username, fullname, email, description, home_page, location, portrait, roles, groups: {@id, items: [{id, title}], items_total}}` (managers, the user) |
//! | POST | `/@users` | `{username, password?, fullname?, email?, ..., roles?, sendPasswordReset?}` | 201, the user (managers; anonymous visitors when self-registration is on) |
//! | PATCH | `/@users/<id>` | any of the properties; `roles` as a list or `{role: bool}`; `password` (with `old_password` for one's own); `@id` and `groups`, as GET shows them, are ignored | 204 (managers; the user, except roles) |
//! | DELETE | `/@users/<id>` | | 204 (managers; not oneself, not the last Manager) |
//! | POST | `/@users/<id>/reset-password` | none (mail a reset token), `{reset_token, new_password}` or `{old_password, new_password}` | 200 |
//!
//! The rules (taken logins, password length, grantable roles, the last Manager) are
//! [`crate::people::accounts`]'.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::{self, Call};
use super::query::encode_component;
use super::router::{Carriage, RouteDef, RouteTable};
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::{Permission, Principal, Role, AUTHENTICATED_USERS};
use crate::people::accounts::{self, NewUser, UserChanges};
use crate::people::auth::{groups, users, users::UserRecord};
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// Register the user routes.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@users/{id?}", get)
            .root_only()
            .checked_by_handler()
            .summary(
                "The users (Manage portal; `query`/`search` and `groups_filter` filter), or one \
                 user (managers, the user)",
            )
            .query::<UserQuery>()
            .answers::<UserList>(),
    );
    r.route(
        RouteDef::post("@users", post)
            .root_only()
            .checked_by_handler()
            .status(201)
            .summary("Create a user (managers; anyone when self-registration is on)")
            .body::<UserBody>()
            .answers::<UserJson>(),
    );
    r.route(
        RouteDef::patch("@users/{id}", patch)
            .root_only()
            .checked_by_handler()
            .status(204)
            .summary("Edit a user (managers; the user itself, except roles)")
            .body::<UserBody>(),
    );
    r.route(
        RouteDef::delete("@users/{id}", delete)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Delete a user (not oneself, not the last Manager)"),
    );
    r.route(
        RouteDef::get("@portrait/{id}", get_portrait)
            .root_only()
            .summary("A user's portrait image (anyone); 404 when it has none"),
    );
    r.route(
        RouteDef::post("@users/{id}/reset-password", reset_password)
            .root_only()
            .carried(Carriage::Reset)
            .checked_by_handler()
            .summary(
                "Without a body: mail a one-time reset token; with `{reset_token, new_password}` \
                 or `{old_password, new_password}` (the user itself): set the password",
            )
            .body::<ResetBody>(),
    );
}

/// The query of the user list.
#[derive(Deserialize, JsonSchema)]
pub struct UserQuery {
    /// Text the login, full name or e-mail contains.
    #[serde(default)]
    pub query: Option<String>,
    /// The same as `query`.
    #[serde(default)]
    pub search: Option<String>,
    /// Only members of one of these groups (also `groups-filter:list`).
    #[serde(default, alias = "groups-filter")]
    pub groups_filter: Vec<String>,
}

/// Roles as PATCH takes them: the whole list, or `{role: bool}` to grant and take away.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RolesField {
    /// The whole list.
    List(Vec<Role>),
    /// Grant (`true`) or take away (`false`) each.
    Set(BTreeMap<Role, bool>),
}

/// A user's properties, as POST and PATCH take them.
#[derive(Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserBody {
    /// Login name (letters, digits, `-_.@`; cannot change).
    #[serde(default)]
    pub username: Option<String>,
    /// Password (at least the site's minimum length, 8 unless changed).
    #[serde(default)]
    pub password: Option<String>,
    /// The password again (the registration form's confirmation): must equal `password`.
    #[serde(default)]
    pub password_ctl: Option<String>,
    /// The current password, when changing one's own with `password`.
    #[serde(default)]
    pub old_password: Option<String>,
    /// Full name.
    #[serde(default)]
    pub fullname: Option<String>,
    /// E-mail address.
    #[serde(default)]
    pub email: Option<String>,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// Home page.
    #[serde(default)]
    pub home_page: Option<String>,
    /// Location.
    #[serde(default)]
    pub location: Option<String>,
    /// Global roles (managers only).
    #[serde(default)]
    pub roles: Option<RolesField>,
    /// A portrait to upload (`{data, encoding: "base64", filename, content-type}`), or null to
    /// remove it.
    #[serde(default, deserialize_with = "some")]
    pub portrait: Option<Option<PortraitUpload>>,
    /// POST: mail the new user a password reset token (then `password` may be left out).
    #[serde(default, rename = "sendPasswordReset", alias = "mail_me")]
    pub send_password_reset: bool,
}

/// A portrait upload.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PortraitUpload {
    /// The image, base64.
    pub data: String,
    /// Only `base64`.
    #[serde(default)]
    pub encoding: Option<String>,
    /// The file name.
    #[serde(default)]
    pub filename: Option<String>,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    #[serde(rename = "content-type")]
    pub content_type: String,
    /// Scale an image larger than 200x200 pixels down to fit (plone.restapi's flag).
    #[serde(default)]
    pub scale: bool,
}

/// Present (even as null) → `Some`.
fn some<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> std::result::Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A user as served.
#[derive(Serialize, JsonSchema)]
pub struct UserJson {
    /// `/@users/<login>`.
    #[serde(rename = "@id")]
    pub url: String,
    /// Login.
    pub id: String,
    /// Login.
    pub username: String,
    /// Full name; null when unset, as in Plone.
    pub fullname: Option<String>,
    /// E-mail address; null when unset, as in Plone.
    pub email: Option<String>,
    /// Description; null when unset, as in Plone.
    pub description: Option<String>,
    /// Home page; null when unset, as in Plone.
    pub home_page: Option<String>,
    /// Location; null when unset, as in Plone.
    pub location: Option<String>,
    /// The portrait's URL (`/@portrait/<login>`), or null.
    pub portrait: Option<String>,
    /// The user's global roles, its own and those it has through its groups, sorted (Plone's
    /// `getRoles()`, without the implicit `Anonymous` and `Authenticated`).
    pub roles: Vec<String>,
    /// Its groups (AuthenticatedUsers first); on a Nick site the ids of the groups it is a
    /// member of, as Nick lists them.
    pub groups: UserGroups,
    /// The values of the user schema's further fields (`engine/src/people/userschema.json`).
    #[serde(flatten)]
    pub properties: BTreeMap<String, serde_json::Value>,
}

/// The groups of a user as the site's profile shows them.
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
pub enum UserGroups {
    /// Plone's list object.
    Listed(GroupList),
    /// Nick's array of group ids.
    Ids(Vec<String>),
}

/// The groups of a user.
#[derive(Serialize, JsonSchema)]
pub struct GroupList {
    /// `/@users/<login>`.
    #[serde(rename = "@id")]
    pub id: String,
    /// The groups.
    pub items: Vec<GroupRef>,
    /// How many.
    pub items_total: usize,
}

/// A group a user belongs to.
#[derive(Serialize, JsonSchema)]
pub struct GroupRef {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
}

/// The URL the request asked for, without batching parameters and with its query form-encoded:
/// what Plone names the `groups` list of a user it serves (`@users?search=x`, `@users/noam`).
pub fn request_url(ctx: &Ctx<'_>, call: &Call<'_>) -> String {
    let mut path = call.route.object_path.clone();
    if let Some(e) = &call.route.endpoint {
        path.push_str("/@");
        path.push_str(e);
    }
    for p in &call.route.params {
        path.push('/');
        path.push_str(p);
    }
    let form = |s: &str| encode_component(s).replace("%20", "+");
    let query: Vec<String> = call
        .route
        .query
        .pairs
        .iter()
        .filter(|(k, _)| k != "b_start" && k != "b_size")
        .map(|(k, v)| format!("{}={}", form(k), form(v)))
        .collect();
    let mut url = ctx.url(&path);
    if !query.is_empty() {
        url.push('?');
        url.push_str(&query.join("&"));
    }
    url
}

/// The JSON of `u`, given every group; `listed_at` is the URL of the request that lists it (the
/// `@id` Plone gives the user's `groups`, [`request_url`]).
pub fn user_json(
    ctx: &Ctx<'_>,
    all_groups: &[groups::GroupRecord],
    u: &UserRecord,
    listed_at: &str,
) -> UserJson {
    let url = ctx.url(&format!("/@users/{}", u.login));
    let profile = ctx.profile();
    let resolved = groups::resolve_with(all_groups, u);
    let items: Vec<GroupRef> = resolved
        .groups
        .iter()
        .map(|id| GroupRef {
            id: id.clone(),
            title: if id == AUTHENTICATED_USERS {
                id.clone()
            } else {
                all_groups
                    .iter()
                    .find(|g| g.id == *id)
                    .map(|g| g.title.clone())
                    .filter(|t| !t.is_empty())
                    .unwrap_or_else(|| id.clone())
            },
        })
        .collect();
    UserJson {
        url,
        id: u.login.clone(),
        username: u.login.clone(),
        fullname: unset_is_null(&u.fullname),
        email: unset_is_null(&u.email),
        description: unset_is_null(&u.description),
        home_page: unset_is_null(&u.home_page),
        location: unset_is_null(&u.location),
        portrait: u
            .portrait
            .as_ref()
            .map(|_| ctx.url(&format!("/@portrait/{}", u.login))),
        roles: {
            let mut roles: Vec<String> = resolved
                .roles
                .iter()
                .filter(|r| !matches!(r.as_str(), "Anonymous" | "Authenticated"))
                .cloned()
                .collect();
            roles.sort();
            roles.dedup();
            crate::people::roles::shown_list(profile, roles.iter().map(String::as_str))
        },
        groups: if profile.is_nick() {
            UserGroups::Ids(
                items
                    .into_iter()
                    .map(|g| g.id)
                    .filter(|id| id != AUTHENTICATED_USERS)
                    .collect(),
            )
        } else {
            UserGroups::Listed(GroupList {
                id: listed_at.to_string(),
                items_total: items.len(),
                items,
            })
        },
        properties: u
            .properties
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    serde_json::Value::String(s) if s.is_empty() => serde_json::Value::Null,
                    other => other.clone(),
                };
                (k.clone(), v)
            })
            .collect(),
    }
}

/// A user property as Plone serializes it: an empty (unset) value is `null`, so that a form
/// that sends it back unchanged does not send an empty string its validation refuses (Volto's
/// `home_page` URL check).
fn unset_is_null(value: &str) -> Option<String> {
    Some(value).filter(|v| !v.is_empty()).map(str::to_string)
}

/// The list of users, as Plone answers `GET @users` (with or without a query).
#[derive(Serialize, JsonSchema)]
pub struct UserList {
    /// `/@users`.
    #[serde(rename = "@id")]
    pub id: String,
    /// The users.
    pub items: Vec<UserJson>,
    /// How many.
    pub items_total: usize,
}

/// Reading users without the right is a 401 for everyone, as in Plone (whose clients treat it
/// as "log in as someone who may"), not a 403 for the logged-in.
fn not_authorized() -> EngineError {
    EngineError::Unauthorized("You are not authorized to access this resource.".into())
}

fn is_manager(ctx: &Ctx<'_>, root: &ContentRecord) -> Result<bool> {
    ctx.permitted(Permission::ManagePortal, root)
}

fn not_found(ctx: &Ctx<'_>, login: &str) -> EngineError {
    EngineError::NotFound {
        url: ctx.url(&format!("/@users/{login}")),
        context: Some(ctx.url("")),
    }
}

fn load(ctx: &Ctx<'_>, login: &str) -> Result<UserRecord> {
    users::get(ctx, login)?.ok_or_else(|| not_found(ctx, login))
}

/// GET `/@users` (managers) or `/@users/<id>` (managers and the user).
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, root: ContentRecord) -> Result<Response> {
    let manager = is_manager(ctx, &root)?;
    let all_groups = groups::all(ctx)?;
    let listed_at = request_url(ctx, call);
    match call.param("id") {
        None => {
            if !manager {
                return Err(not_authorized());
            }
            let q: UserQuery = call.query()?;
            let text = q.query.or(q.search).unwrap_or_default().to_lowercase();
            let list: Vec<UserJson> = users::all(ctx)?
                .iter()
                .filter(|u| {
                    text.is_empty()
                        || u.login.to_lowercase().contains(&text)
                        || u.fullname.to_lowercase().contains(&text)
                        || u.email.to_lowercase().contains(&text)
                })
                .filter(|u| {
                    q.groups_filter.is_empty() || {
                        let r = groups::resolve_with(&all_groups, u);
                        q.groups_filter.iter().any(|g| r.groups.contains(g))
                    }
                })
                .map(|u| user_json(ctx, &all_groups, u, &listed_at))
                .collect();
            if ctx.profile().is_nick() {
                // Nick answers the bare array, ordered by full name.
                let mut list = list;
                list.sort_by(|a, b| (&a.fullname, &a.id).cmp(&(&b.fullname, &b.id)));
                return Ok(Response::json(200, &list));
            }
            Ok(Response::json(
                200,
                &UserList {
                    id: ctx.url("/@users"),
                    items_total: list.len(),
                    items: list,
                },
            ))
        }
        Some(login) => {
            if !manager && ctx.principal.login() != Some(login) {
                if ctx.profile().is_nick() {
                    return Err(EngineError::Unauthorized(
                        "You don’t have permissions to view this user.".into(),
                    ));
                }
                return Err(not_authorized());
            }
            let u = load(ctx, login)?;
            Ok(Response::json(
                200,
                &user_json(ctx, &all_groups, &u, &listed_at),
            ))
        }
    }
}

/// What `GET @users/<id>` shows that no one sets through the user: PATCH accepts and ignores
/// them, as Plone does, since Volto's personal information form sends back the user it read
/// (its `@id`, and its `groups`, which change through `@groups`).
const SHOWN_NOT_SET: &[&str] = &["@id", "groups"];

/// The body of POST and PATCH: the declared properties, and the values of the user schema's
/// further fields (any other property is refused, naming it; on PATCH, [`SHOWN_NOT_SET`] are
/// ignored).
fn user_body(
    ctx: &Ctx<'_>,
    call: &Call<'_>,
    patch: bool,
) -> Result<(UserBody, BTreeMap<String, serde_json::Value>)> {
    let mut map = extract::json_object(call.req)?;
    if patch {
        for name in SHOWN_NOT_SET {
            map.remove(*name);
        }
    }
    let mut custom = BTreeMap::new();
    let names: Vec<String> = map.keys().cloned().collect();
    for name in names {
        if accounts::is_custom_user_field(ctx, &name)? {
            if let Some(v) = map.remove(&name) {
                custom.insert(name, v);
            }
        }
    }
    let body = extract::from_value(serde_json::Value::Object(map), "property")?;
    Ok((body, custom))
}

fn role_list(field: Option<RolesField>, current: &[String]) -> Option<Vec<Role>> {
    match field? {
        RolesField::List(l) => Some(l),
        RolesField::Set(map) => {
            let mut out: Vec<Role> = current.iter().filter_map(|r| Role::from_name(r)).collect();
            for (role, on) in map {
                if on && !out.contains(&role) {
                    out.push(role);
                } else if !on {
                    out.retain(|r| *r != role);
                }
            }
            Some(out)
        }
    }
}

/// POST `/@users`: create a user (managers; anyone when self-registration is on); 201.
fn post(ctx: &mut Ctx<'_>, call: &Call<'_>, root: ContentRecord) -> Result<Response> {
    let manager = is_manager(ctx, &root)?;
    let (body, properties) = user_body(ctx, call, false)?;
    if body.password_ctl.is_some() && body.password_ctl != body.password {
        return Err(EngineError::bad_request(
            "Invalid property 'password_ctl': the passwords differ",
        ));
    }
    if !manager {
        let settings = accounts::security_settings(ctx)?;
        if !settings.enable_self_reg || !ctx.principal.is_anonymous() {
            return Err(ctx.denied(Permission::ManagePortal));
        }
        if body.roles.is_some() {
            return Err(EngineError::bad_request(
                "Invalid property 'roles': only managers give roles",
            ));
        }
        if body.password.is_some() && !settings.enable_user_pwd_choice {
            return Err(EngineError::bad_request(
                "Invalid property 'password': this site mails new users a link to set it \
                 (send 'sendPasswordReset': true)",
            ));
        }
    }
    if body.portrait.is_some() {
        return Err(EngineError::bad_request(
            "Invalid property 'portrait': upload it with PATCH once the user exists",
        ));
    }
    let new = NewUser {
        login: body.username.unwrap_or_default(),
        password: body.password,
        fullname: body.fullname.unwrap_or_default(),
        email: body.email.unwrap_or_default(),
        description: body.description.unwrap_or_default(),
        home_page: body.home_page.unwrap_or_default(),
        location: body.location.unwrap_or_default(),
        roles: role_list(body.roles, &[]).unwrap_or_default(),
        properties,
    };
    let user = accounts::create_user(ctx, new, body.send_password_reset)?;
    let url = ctx.url(&format!("/@users/{}", user.login));
    let all_groups = groups::all(ctx)?;
    let listed_at = request_url(ctx, call);
    let mut answer = user_json(ctx, &all_groups, &user, &listed_at);
    if ctx.profile().is_nick() {
        // Nick answers the account record it inserted, before its roles are attached (its
        // documented `POST /@users` answer lists none); `GET` shows them.
        answer.roles.clear();
    }
    Ok(Response::json(201, &answer).with_header("Location", &url))
}

/// PATCH `/@users/<id>`: edit (managers, or the user without `roles`); 204.
fn patch(ctx: &mut Ctx<'_>, call: &Call<'_>, root: ContentRecord) -> Result<Response> {
    let login = call.param("id").unwrap_or_default().to_string();
    let manager = is_manager(ctx, &root)?;
    let own = ctx.principal.login() == Some(login.as_str());
    if !manager && !own {
        return Err(ctx.denied(Permission::ManagePortal));
    }
    let (body, properties) = user_body(ctx, call, true)?;
    let user = load(ctx, &login)?;
    if body.username.as_ref().is_some_and(|u| *u != login) {
        return Err(EngineError::bad_request("A username cannot be changed"));
    }
    if body.roles.is_some() && !manager {
        return Err(EngineError::Forbidden(
            "Only managers can change roles".into(),
        ));
    }
    if !own {
        accounts::check_may_administer(ctx, &login)?;
    }
    if body.password.is_some() && own {
        let old = body.old_password.as_deref().ok_or_else(|| {
            EngineError::bad_request(
                "Property 'old_password' is required to change one's own password",
            )
        })?;
        accounts::check_old_password(&user, old)?;
    }
    let changes = UserChanges {
        password: body.password,
        fullname: body.fullname,
        email: body.email,
        description: body.description,
        home_page: body.home_page,
        location: body.location,
        roles: role_list(body.roles, &user.roles),
        properties,
        portrait: match body.portrait {
            None => None,
            Some(None) => Some(None),
            Some(Some(up)) => {
                if up.encoding.as_deref().is_some_and(|e| e != "base64") {
                    return Err(EngineError::bad_request(
                        "Invalid property 'portrait.encoding': only 'base64'",
                    ));
                }
                let name = up.filename.unwrap_or_default();
                Some(Some(accounts::portrait(
                    ctx.core.options.images.as_ref(),
                    &up.content_type,
                    &name,
                    &up.data,
                    up.scale,
                )?))
            }
        },
    };
    accounts::update_user(ctx, &login, changes)?;
    Ok(Response::empty(204))
}

/// DELETE `/@users/<id>` (managers; not oneself); 204.
fn delete(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let login = call.param("id").unwrap_or_default().to_string();
    if let Principal::User(u) = &ctx.principal {
        if u.login == login {
            return Err(EngineError::bad_request(
                "You cannot delete your own account",
            ));
        }
    }
    load(ctx, &login)?;
    accounts::check_may_administer(ctx, &login)?;
    accounts::delete_user(ctx, &login)?;
    Ok(Response::empty(204))
}

/// What `reset-password` takes: nothing (request a mail), a token, or the old password.
#[derive(Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetBody {
    /// The token from the reset mail.
    #[serde(default)]
    pub reset_token: Option<String>,
    /// The current password (the user itself).
    #[serde(default)]
    pub old_password: Option<String>,
    /// The new password.
    #[serde(default)]
    pub new_password: Option<String>,
}

/// POST `/@users/<id>/reset-password`: 200.
fn reset_password(ctx: &mut Ctx<'_>, call: &Call<'_>, root: ContentRecord) -> Result<Response> {
    let login = call.param("id").unwrap_or_default().to_string();
    let body: ResetBody = call.body()?;
    let asks_for_mail = matches!(
        (&body.reset_token, &body.old_password, &body.new_password),
        (None, None, None)
    );
    if !asks_for_mail {
        load(ctx, &login)?;
    }
    match (body.reset_token, body.old_password, body.new_password) {
        // The same answer for a known and an unknown login (no user enumeration).
        (None, None, None) => accounts::request_reset(ctx, &login)?,
        (Some(token), None, Some(new)) => accounts::reset_with_token(ctx, &login, &token, &new)?,
        (None, Some(old), Some(new)) => {
            let manager = is_manager(ctx, &root)?;
            if !accounts::may_change_with_old_password(ctx, &login, manager) {
                return Err(match ctx.principal {
                    Principal::Anonymous => EngineError::Unauthorized(
                        "Log in as the user to change its password with 'old_password'".into(),
                    ),
                    Principal::User(_) => EngineError::Forbidden(
                        "Only the user itself can change its password with 'old_password'".into(),
                    ),
                });
            }
            accounts::change_own_password(ctx, &login, &old, &new)?
        }
        _ => {
            return Err(EngineError::bad_request(
                "Send no body (mail a reset token), {\"reset_token\", \"new_password\"} or \
                 {\"old_password\", \"new_password\"}",
            ))
        }
    }
    Ok(Response::empty(200))
}

/// GET `/@portrait/<login>`: the image, served as a file's bytes are (`ETag`, `If-None-Match`,
/// `Range`; inline).
fn get_portrait(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let login = call.param("id").unwrap_or_default();
    let none = || EngineError::NotFound {
        url: call.route.url(&ctx.base_url),
        context: Some(ctx.url("")),
    };
    let user = users::get(ctx, login)?.ok_or_else(none)?;
    let p = user.portrait.ok_or_else(none)?;
    let served = crate::content::files::Served::Blob {
        id: p.blob,
        size: p.size,
        content_type: p.content_type,
    };
    super::files::serve(ctx, call, served, Some(&p.filename), "inline")
}
