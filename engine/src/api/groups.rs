//! `@groups`: groups of users (and of other groups) that hold roles. Managers (Manage portal)
//! list, read, create, change and delete them.
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `/@groups?query=` | | 200, `[group]` |
//! | GET | `/@groups/<id>` | | 200, `{@id, id, groupname, title, description, email, roles, members: {@id (the URL asked for), items, items_total}}` |
//! | POST | `/@groups` | `{groupname, title?, description?, email?, roles?, users?: [login], groups?: [id]}` | 201, the group |
//! | PATCH | `/@groups/<id>` | `{title?, description?, email?, roles?, users?: [login] or {login: bool}, groups?: [id] or {id: bool}}` | 204 |
//! | DELETE | `/@groups/<id>` | | 204 |
//!
//! Every group holds `Authenticated` (as in Plone): `roles` lists it, and a body's `roles` may name
//! it (it changes nothing).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::{Permission, Role};
use crate::people::accounts::{self, GroupChanges};
use crate::people::auth::groups::{self, GroupRecord};
use crate::people::roles;
use crate::runtime::context::Ctx;

/// Register the group routes.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@groups/{id?}", get)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("The groups (`query` filters by id or title), or one group with its members")
            .query::<GroupQuery>()
            .answers::<GroupJson>(),
    );
    r.route(
        RouteDef::post("@groups", post)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(201)
            .summary("Create a group")
            .body::<GroupBody>()
            .answers::<GroupJson>(),
    );
    r.route(
        RouteDef::patch("@groups/{id}", patch)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary(
                "Change a group: properties, roles, members added (`true`) or removed (`false`)",
            )
            .body::<GroupBody>(),
    );
    r.route(
        RouteDef::delete("@groups/{id}", delete)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Delete a group (not a built-in one)"),
    );
}

/// The query of the group list.
#[derive(Deserialize, JsonSchema)]
pub struct GroupQuery {
    /// Text the id or title contains.
    #[serde(default)]
    pub query: Option<String>,
}

/// Members to add or remove: a list (added) or a map (`true` adds, `false` removes).
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MemberChanges {
    /// Add these.
    Add(Vec<String>),
    /// Add (`true`) or remove (`false`) each.
    Set(BTreeMap<String, bool>),
}

/// A group's properties, as POST and PATCH take them.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupBody {
    /// The id (POST only; cannot change).
    #[serde(default)]
    pub groupname: Option<String>,
    /// Title.
    #[serde(default)]
    pub title: Option<String>,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// E-mail address.
    #[serde(default)]
    pub email: Option<String>,
    /// Global roles of its members (the whole list).
    #[serde(default)]
    pub roles: Option<Vec<Role>>,
    /// Users to add or remove.
    #[serde(default)]
    pub users: Option<MemberChanges>,
    /// Groups to add or remove as members.
    #[serde(default)]
    pub groups: Option<MemberChanges>,
}

/// A group as served.
#[derive(Serialize, JsonSchema)]
pub struct GroupJson {
    /// `/@groups/<id>`.
    #[serde(rename = "@id")]
    pub url: String,
    /// Description.
    pub description: String,
    /// E-mail address.
    pub email: String,
    /// Its id.
    pub groupname: String,
    /// Its id.
    pub id: String,
    /// Its direct members (users and groups).
    pub members: Members,
    /// Global roles of its members, and `Authenticated` (which every group holds); on a Nick
    /// site Nick's names, without the implicit `Authenticated` ([`crate::people::roles`]).
    pub roles: Vec<String>,
    /// Title.
    pub title: String,
}

/// The members of a group.
#[derive(Serialize, JsonSchema)]
pub struct Members {
    /// The URL of the request that shows the group (`/@groups`, `/@groups/<id>`).
    #[serde(rename = "@id")]
    pub id: String,
    /// Logins and group ids.
    pub items: Vec<String>,
    /// How many.
    pub items_total: usize,
}

/// The JSON of `g`; `listed_at` is the URL of the request that shows it (the `@id` Plone gives
/// the group's `members`, [`super::users::request_url`]).
pub fn group_json(ctx: &Ctx<'_>, g: &GroupRecord, listed_at: &str) -> GroupJson {
    let url = ctx.url(&format!("/@groups/{}", g.id));
    let profile = ctx.profile();
    let mut roles = g.roles.clone();
    if !profile.is_nick() && !roles.contains(&Role::Authenticated) {
        roles.push(Role::Authenticated);
    }
    let roles = roles::shown_list(profile, roles.iter().map(|r| r.name()));
    GroupJson {
        url,
        description: g.description.clone(),
        email: g.email.clone(),
        groupname: g.id.clone(),
        id: g.id.clone(),
        members: Members {
            id: listed_at.to_string(),
            items: g.members.clone(),
            items_total: g.members.len(),
        },
        roles,
        title: g.title.clone(),
    }
}

fn not_found(ctx: &Ctx<'_>, id: &str) -> EngineError {
    EngineError::NotFound {
        url: ctx.url(&format!("/@groups/{id}")),
        context: Some(ctx.url("")),
    }
}

/// GET `/@groups` and `/@groups/<id>`.
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let listed_at = super::users::request_url(ctx, call);
    match call.param("id") {
        Some(id) => {
            let g = groups::get(ctx, id)?.ok_or_else(|| not_found(ctx, id))?;
            Ok(Response::json(200, &group_json(ctx, &g, &listed_at)))
        }
        None => {
            let q: GroupQuery = call.query()?;
            let needle = q.query.unwrap_or_default().to_lowercase();
            let list: Vec<GroupJson> = groups::listed(ctx)?
                .iter()
                .filter(|g| {
                    g.id.to_lowercase().contains(&needle)
                        || g.title.to_lowercase().contains(&needle)
                })
                .map(|g| group_json(ctx, g, &listed_at))
                .collect();
            Ok(Response::json(200, &list))
        }
    }
}

fn member_changes(body: &GroupBody, changes: &mut GroupChanges) {
    for m in [&body.users, &body.groups].into_iter().flatten() {
        match m {
            MemberChanges::Add(ids) => changes.add.extend(ids.iter().cloned()),
            MemberChanges::Set(map) => {
                for (id, on) in map {
                    if *on {
                        changes.add.push(id.clone());
                    } else {
                        changes.remove.push(id.clone());
                    }
                }
            }
        }
    }
}

fn changes_of(body: &GroupBody) -> GroupChanges {
    let mut changes = GroupChanges {
        title: body.title.clone(),
        description: body.description.clone(),
        email: body.email.clone(),
        roles: body.roles.clone(),
        ..Default::default()
    };
    member_changes(body, &mut changes);
    changes
}

/// POST `/@groups`: 201 with the group.
fn post(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let body: GroupBody = call.body()?;
    let id = body
        .groupname
        .clone()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| EngineError::bad_request("Property 'groupname' is required"))?;
    let mut changes = changes_of(&body);
    if changes.title.is_none() {
        changes.title = Some(id.clone());
    }
    let g = accounts::create_group(ctx, &id, changes)?;
    let url = ctx.url(&format!("/@groups/{id}"));
    let listed_at = super::users::request_url(ctx, call);
    let mut answer = group_json(ctx, &g, &listed_at);
    if ctx.profile().is_nick() {
        // Nick answers the group record it inserted, before its roles are attached (its
        // documented `POST /@groups` answer lists none); `GET` shows them.
        answer.roles.clear();
    }
    Ok(Response::json(201, &answer).with_header("Location", &url))
}

/// PATCH `/@groups/<id>`: 204.
fn patch(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let id = call.param("id").unwrap_or_default().to_string();
    let body: GroupBody = call.body()?;
    if groups::get(ctx, &id)?.is_none() {
        return Err(not_found(ctx, &id));
    }
    if body.groupname.as_ref().is_some_and(|g| *g != id) {
        return Err(EngineError::bad_request("A group's name cannot be changed"));
    }
    accounts::update_group(ctx, &id, changes_of(&body))?;
    Ok(Response::empty(204))
}

/// DELETE `/@groups/<id>`: 204.
fn delete(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let id = call.param("id").unwrap_or_default().to_string();
    if groups::get(ctx, &id)?.is_none() {
        return Err(not_found(ctx, &id));
    }
    accounts::delete_group(ctx, &id)?;
    Ok(Response::empty(204))
}
