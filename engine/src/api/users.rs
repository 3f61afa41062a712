//! `@users`: user accounts. Managers list, create, edit and delete users; a user may read and edit
//! their own account (but not their roles).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::Call;
use super::router::{Registry, RouteDef};
use crate::auth::{password, users, users::UserRecord};
use crate::context::Ctx;
use crate::error::{EngineError, Result};
use crate::http::Response;
use crate::model::ContentRecord;
use crate::permissions::Access;
use crate::security::{Permission, Principal, ROLES};

/// Register the user routes.
pub fn register(r: &mut Registry) {
    r.route(
        RouteDef::get("@users/{id?}", get)
            .root_only()
            .checked_by_handler()
            .summary("The users (Manage portal; `query` filters), or one user (managers, the user)")
            .query::<UserQuery>()
            .answers::<UserJson>(),
    );
    r.route(
        RouteDef::post("@users", post)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(201)
            .summary("Create a user")
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
            .summary("Delete a user (not oneself)"),
    );
}

/// The query of the user list.
#[derive(Deserialize, JsonSchema)]
pub struct UserQuery {
    /// Text the login, full name or e-mail contains.
    #[serde(default)]
    pub query: Option<String>,
}

/// A user's properties, as POST and PATCH take them.
#[derive(Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserBody {
    /// Login name (letters, digits, `-_.@`; cannot change).
    #[serde(default)]
    pub username: Option<String>,
    /// Password (at least 8 characters).
    #[serde(default)]
    pub password: Option<String>,
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
    pub roles: Option<Vec<String>>,
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
    /// Always null (no portraits yet).
    pub portrait: Option<String>,
    /// Global roles.
    pub roles: Vec<String>,
    /// Groups.
    pub groups: GroupList,
}

/// The groups of a user.
#[derive(Serialize, JsonSchema)]
pub struct GroupList {
    /// `/@users`.
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
    pub id: &'static str,
    /// Its title.
    pub title: &'static str,
}

/// Shortest password accepted.
pub const MIN_PASSWORD_LEN: usize = 8;

/// Roles that can be granted to a user (the rest are implicit or local).
fn grantable(role: &str) -> bool {
    ROLES.contains(&role) && !matches!(role, "Anonymous" | "Authenticated" | "Owner")
}

fn user_json(ctx: &Ctx<'_>, u: &UserRecord) -> UserJson {
    UserJson {
        url: ctx.url(&format!("/@users/{}", u.login)),
        id: u.login.clone(),
        username: u.login.clone(),
        fullname: u.fullname.clone(),
        email: u.email.clone(),
        description: u.description.clone(),
        home_page: u.home_page.clone(),
        location: u.location.clone(),
        portrait: None,
        roles: u.roles.clone(),
        groups: GroupList {
            id: ctx.url("/@users"),
            items: vec![GroupRef {
                id: "AuthenticatedUsers",
                title: "AuthenticatedUsers",
            }],
            items_total: 1,
        },
    }
}

fn is_manager(ctx: &Ctx<'_>, root: &ContentRecord) -> Result<bool> {
    ctx.permitted(Permission::ManagePortal, root)
}

fn load(ctx: &Ctx<'_>, login: &str) -> Result<UserRecord> {
    users::get(ctx, login)?.ok_or_else(|| EngineError::NotFound {
        url: ctx.url(&format!("/@users/{login}")),
        context: Some(ctx.url("")),
    })
}

/// GET `/@users` (managers) or `/@users/<id>` (managers and the user).
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, root: ContentRecord) -> Result<Response> {
    let manager = is_manager(ctx, &root)?;
    match call.param("id") {
        None => {
            if !manager {
                return Err(ctx.denied(Permission::ManagePortal));
            }
            let q: UserQuery = call.query()?;
            let query = q.query.unwrap_or_default().to_lowercase();
            let list: Vec<UserJson> = users::all(ctx)?
                .iter()
                .filter(|u| {
                    query.is_empty()
                        || u.login.to_lowercase().contains(&query)
                        || u.fullname.to_lowercase().contains(&query)
                        || u.email.to_lowercase().contains(&query)
                })
                .map(|u| user_json(ctx, u))
                .collect();
            Ok(Response::json(200, &list))
        }
        Some(login) => {
            if !manager && ctx.principal.login() != Some(login) {
                return Err(ctx.denied(Permission::ManagePortal));
            }
            let u = load(ctx, login)?;
            Ok(Response::json(200, &user_json(ctx, &u)))
        }
    }
}

fn roles_field(body: &UserBody) -> Result<Option<Vec<String>>> {
    match &body.roles {
        None => Ok(None),
        Some(a) => {
            let mut out: Vec<String> = Vec::new();
            for r in a {
                let r = r.as_str();
                if !grantable(r) {
                    return Err(EngineError::bad_request(format!(
                        "Unknown or non-grantable role '{r}'"
                    )));
                }
                if !out.iter().any(|x| x == r) {
                    out.push(r.to_string());
                }
            }
            Ok(Some(out))
        }
    }
}

fn check_password(pw: &str) -> Result<()> {
    if pw.chars().count() < MIN_PASSWORD_LEN {
        return Err(EngineError::bad_request(format!(
            "The password must be at least {MIN_PASSWORD_LEN} characters long"
        )));
    }
    Ok(())
}

/// POST `/@users`: create a user (managers); 201 with the user.
fn post(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let body: UserBody = call.body()?;
    let login = body
        .username
        .clone()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| EngineError::bad_request("Property 'username' is required"))?;
    if !login
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
        || login.len() > 100
    {
        return Err(EngineError::bad_request(format!(
            "Invalid username '{login}': use letters, digits, '-', '_', '.', '@'"
        )));
    }
    if users::get(ctx, &login)?.is_some() {
        return Err(EngineError::bad_request(format!(
            "The username '{login}' is taken"
        )));
    }
    let pw = body
        .password
        .clone()
        .ok_or_else(|| EngineError::bad_request("Property 'password' is required"))?;
    check_password(&pw)?;
    let hash = password::hash(
        &pw,
        ctx.core.options.password_cost,
        ctx.core.entropy.as_ref(),
    )?;
    let user = UserRecord {
        login: login.clone(),
        password_hash: hash,
        roles: roles_field(&body)?.unwrap_or_else(|| vec!["Member".into()]),
        fullname: body.fullname.unwrap_or_default(),
        email: body.email.unwrap_or_default(),
        description: body.description.unwrap_or_default(),
        home_page: body.home_page.unwrap_or_default(),
        location: body.location.unwrap_or_default(),
    };
    users::put(ctx, &user)?;
    let url = ctx.url(&format!("/@users/{login}"));
    Ok(Response::json(201, &user_json(ctx, &user)).with_header("Location", &url))
}

/// PATCH `/@users/<id>`: edit (managers, or the user without `roles`); 204.
fn patch(ctx: &mut Ctx<'_>, call: &Call<'_>, root: ContentRecord) -> Result<Response> {
    let login = call.param("id").unwrap_or_default().to_string();
    let manager = is_manager(ctx, &root)?;
    if !manager && ctx.principal.login() != Some(login.as_str()) {
        return Err(ctx.denied(Permission::ManagePortal));
    }
    let body: UserBody = call.body()?;
    let mut user = load(ctx, &login)?;
    if let Some(u) = &body.username {
        if *u != login {
            return Err(EngineError::bad_request("A username cannot be changed"));
        }
    }
    if let Some(roles) = roles_field(&body)? {
        if !manager {
            return Err(EngineError::Forbidden(
                "Only managers can change roles".into(),
            ));
        }
        user.roles = roles;
    }
    if let Some(pw) = &body.password {
        check_password(pw)?;
        user.password_hash = password::hash(
            pw,
            ctx.core.options.password_cost,
            ctx.core.entropy.as_ref(),
        )?;
    }
    for (value, slot) in [
        (body.fullname, &mut user.fullname),
        (body.email, &mut user.email),
        (body.description, &mut user.description),
        (body.home_page, &mut user.home_page),
        (body.location, &mut user.location),
    ] {
        if let Some(v) = value {
            *slot = v;
        }
    }
    users::put(ctx, &user)?;
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
    users::remove(ctx, &login)?;
    Ok(Response::empty(204))
}
