//! `@principals` (search users and groups) and `@roles` (the roles users and groups can hold).
//!
//! | method | path | answer |
//! |---|---|---|
//! | GET | `/@principals?search=<text>` | 200, `{users: [user], groups: [group]}` (logged-in users) |
//! | GET | `/@roles` | 200, `[{@id, @type: "role", id, title}]` (logged-in users) |

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::Call;
use super::groups::{group_json, GroupJson};
use super::router::{RouteDef, RouteTable};
use super::users::{user_json, UserJson};
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::people::auth::groups;
use crate::people::sharing;
use crate::runtime::context::Ctx;

/// Register `@principals` and `@roles`.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@principals", principals)
            .root_only()
            .checked_by_handler()
            .summary(
                "Users and groups whose id, name or e-mail contains `search` (logged-in users)",
            )
            .query::<PrincipalQuery>()
            .answers::<PrincipalsJson>(),
    );
    r.route(
        RouteDef::get("@roles", roles)
            .root_only()
            .checked_by_handler()
            .summary("The roles users and groups can hold (logged-in users)")
            .answers::<Vec<RoleJson>>(),
    );
}

/// The query of `@principals`.
#[derive(Deserialize, JsonSchema)]
pub struct PrincipalQuery {
    /// The text to look for (required).
    #[serde(default)]
    pub search: Option<String>,
}

/// The users and groups found.
#[derive(Serialize, JsonSchema)]
pub struct PrincipalsJson {
    /// Groups, by id.
    pub groups: Vec<GroupJson>,
    /// Users, by login.
    pub users: Vec<UserJson>,
}

/// A role.
#[derive(Serialize, JsonSchema)]
pub struct RoleJson {
    /// `/@roles/<id>`.
    #[serde(rename = "@id")]
    pub url: String,
    /// Always `role`.
    #[serde(rename = "@type")]
    pub kind: &'static str,
    /// The role.
    pub id: &'static str,
    /// Its title.
    pub title: &'static str,
}

fn logged_in(ctx: &Ctx<'_>) -> Result<()> {
    if ctx.principal.is_anonymous() {
        return Err(EngineError::Unauthorized(
            "You are not authorized to access this resource.".into(),
        ));
    }
    Ok(())
}

/// GET `/@principals?search=`.
fn principals(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    logged_in(ctx)?;
    let q: PrincipalQuery = call.query()?;
    let text = q
        .search
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| EngineError::bad_request("Query parameter 'search' is required"))?;
    let (users, found_groups) = sharing::search(ctx, text.trim())?;
    let all_groups = groups::all(ctx)?;
    let listed_at = super::users::request_url(ctx, call);
    let answer = PrincipalsJson {
        groups: found_groups
            .iter()
            .map(|g| group_json(ctx, g, &listed_at))
            .collect(),
        users: users
            .iter()
            .map(|u| user_json(ctx, &all_groups, u, &listed_at))
            .collect(),
    };
    Ok(Response::json(200, &answer))
}

/// GET `/@roles`.
fn roles(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    logged_in(ctx)?;
    let profile = ctx.profile();
    let list: Vec<RoleJson> = crate::people::roles::listed(profile)
        .into_iter()
        .map(|r| {
            let name = crate::people::roles::shown(profile, r);
            RoleJson {
                url: ctx.url(&format!("/@roles/{name}")),
                kind: "role",
                id: name,
                title: name,
            }
        })
        .collect();
    Ok(Response::json(200, &list))
}
