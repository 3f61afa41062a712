//! `@users`: user accounts. Managers list, create, edit and delete users; a user may read and edit
//! their own account (but not their roles).

use serde_json::{json, Map, Value};

use super::{json_body, Route};
use crate::auth::{password, users, users::UserRecord};
use crate::context::Ctx;
use crate::error::{EngineError, Result};
use crate::http::{Request, Response};
use crate::model::ContentRecord;
use crate::permissions::Access;
use crate::security::{Permission, Principal, ROLES};

/// Shortest password accepted.
pub const MIN_PASSWORD_LEN: usize = 8;

/// Roles that can be granted to a user (the rest are implicit or local).
fn grantable(role: &str) -> bool {
    ROLES.contains(&role) && !matches!(role, "Anonymous" | "Authenticated" | "Owner")
}

fn user_json(ctx: &Ctx<'_>, u: &UserRecord) -> Value {
    json!({
        "@id": ctx.url(&format!("/@users/{}", u.login)),
        "id": u.login,
        "username": u.login,
        "fullname": u.fullname,
        "email": u.email,
        "description": u.description,
        "home_page": u.home_page,
        "location": u.location,
        "portrait": null,
        "roles": u.roles,
        "groups": {
            "@id": ctx.url("/@users"),
            "items": [{"id": "AuthenticatedUsers", "title": "AuthenticatedUsers"}],
            "items_total": 1
        }
    })
}

fn is_manager(ctx: &Ctx<'_>, root: &ContentRecord) -> Result<bool> {
    ctx.permitted(Permission::ManagePortal, root)
}

fn require_root(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<()> {
    if obj.is_root() {
        Ok(())
    } else {
        Err(EngineError::NotFound {
            url: ctx.url(&format!("{}/@users", obj.path)),
            context: Some(ctx.url(&obj.path)),
        })
    }
}

fn target(route: &Route) -> Result<Option<&str>> {
    match route.params.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.as_str())),
        _ => Err(EngineError::bad_request(
            "Expected /@users or /@users/<username>",
        )),
    }
}

fn load(ctx: &Ctx<'_>, login: &str) -> Result<UserRecord> {
    users::get(ctx, login)?.ok_or_else(|| EngineError::NotFound {
        url: ctx.url(&format!("/@users/{login}")),
        context: Some(ctx.url("")),
    })
}

/// GET `/@users` (managers) or `/@users/<id>` (managers and the user).
pub fn get(ctx: &mut Ctx<'_>, _: &Request, route: &Route, root: ContentRecord) -> Result<Response> {
    require_root(ctx, &root)?;
    let manager = is_manager(ctx, &root)?;
    match target(route)? {
        None => {
            if !manager {
                return Err(ctx.denied(Permission::ManagePortal));
            }
            let query = route.query.get("query").unwrap_or("").to_lowercase();
            let list: Vec<Value> = users::all(ctx)?
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

fn string_field(body: &Map<String, Value>, name: &str) -> Result<Option<String>> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(EngineError::bad_request(format!(
            "'{name}' must be a string"
        ))),
    }
}

fn roles_field(body: &Map<String, Value>) -> Result<Option<Vec<String>>> {
    match body.get("roles") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => {
            let mut out = Vec::new();
            for r in a {
                let r = r.as_str().ok_or_else(|| {
                    EngineError::bad_request("'roles' must be an array of role names")
                })?;
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
        Some(_) => Err(EngineError::bad_request(
            "'roles' must be an array of role names",
        )),
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

const USER_FIELDS: &[&str] = &[
    "username",
    "password",
    "fullname",
    "email",
    "description",
    "home_page",
    "location",
    "roles",
];

fn reject_unknown(body: &Map<String, Value>) -> Result<()> {
    if let Some(k) = body.keys().find(|k| !USER_FIELDS.contains(&k.as_str())) {
        return Err(EngineError::bad_request(format!(
            "Unknown user property '{k}'"
        )));
    }
    Ok(())
}

/// POST `/@users`: create a user (managers); 201 with the user.
pub fn post(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    root: ContentRecord,
) -> Result<Response> {
    require_root(ctx, &root)?;
    if target(route)?.is_some() {
        return Err(EngineError::MethodNotAllowed {
            method: "POST".into(),
            allowed: vec!["GET", "PATCH", "DELETE"],
        });
    }
    if !is_manager(ctx, &root)? {
        return Err(ctx.denied(Permission::ManagePortal));
    }
    let body = json_body(req)?;
    reject_unknown(&body)?;
    let login = string_field(&body, "username")?
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
    let pw = string_field(&body, "password")?
        .ok_or_else(|| EngineError::bad_request("Property 'password' is required"))?;
    check_password(&pw)?;
    let hash = password::hash(
        &pw,
        ctx.core.options.password_cost,
        ctx.core.entropy.as_ref(),
    )?;
    let user = UserRecord {
        login: login.clone(),
        fullname: string_field(&body, "fullname")?.unwrap_or_default(),
        email: string_field(&body, "email")?.unwrap_or_default(),
        description: string_field(&body, "description")?.unwrap_or_default(),
        home_page: string_field(&body, "home_page")?.unwrap_or_default(),
        location: string_field(&body, "location")?.unwrap_or_default(),
        password_hash: hash,
        roles: roles_field(&body)?.unwrap_or_else(|| vec!["Member".into()]),
    };
    users::put(ctx, &user)?;
    let url = ctx.url(&format!("/@users/{login}"));
    Ok(Response::json(201, &user_json(ctx, &user)).with_header("Location", &url))
}

/// PATCH `/@users/<id>`: edit (managers, or the user without `roles`); 204.
pub fn patch(
    ctx: &mut Ctx<'_>,
    req: &Request,
    route: &Route,
    root: ContentRecord,
) -> Result<Response> {
    require_root(ctx, &root)?;
    let login = target(route)?
        .ok_or_else(|| EngineError::bad_request("PATCH needs /@users/<username>"))?
        .to_string();
    let manager = is_manager(ctx, &root)?;
    if !manager && ctx.principal.login() != Some(login.as_str()) {
        return Err(ctx.denied(Permission::ManagePortal));
    }
    let body = json_body(req)?;
    reject_unknown(&body)?;
    let mut user = load(ctx, &login)?;
    if let Some(u) = string_field(&body, "username")? {
        if u != login {
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
    if let Some(pw) = string_field(&body, "password")? {
        check_password(&pw)?;
        user.password_hash = password::hash(
            &pw,
            ctx.core.options.password_cost,
            ctx.core.entropy.as_ref(),
        )?;
    }
    for (name, slot) in [
        ("fullname", &mut user.fullname),
        ("email", &mut user.email),
        ("description", &mut user.description),
        ("home_page", &mut user.home_page),
        ("location", &mut user.location),
    ] {
        if let Some(v) = string_field(&body, name)? {
            *slot = v;
        }
    }
    users::put(ctx, &user)?;
    Ok(Response::empty(204))
}

/// DELETE `/@users/<id>` (managers; not oneself); 204.
pub fn delete(
    ctx: &mut Ctx<'_>,
    _: &Request,
    route: &Route,
    root: ContentRecord,
) -> Result<Response> {
    require_root(ctx, &root)?;
    let login = target(route)?
        .ok_or_else(|| EngineError::bad_request("DELETE needs /@users/<username>"))?
        .to_string();
    if !is_manager(ctx, &root)? {
        return Err(ctx.denied(Permission::ManagePortal));
    }
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
