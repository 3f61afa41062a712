//! `@sharing` on any object: the local roles of users and groups, and whether the object
//! inherits those granted above it.
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `<path>/@sharing?search=` | | 200, `{available_roles: [{id, title}], entries: [{id, title, type, login, disabled, roles: {<role>: true/false/"acquired"/"global"}}], inherit}` |
//! | POST | `<path>/@sharing` | `{entries?: [{id, type?, roles: {<role>: bool}}], inherit?: bool}` | 204 |
//!
//! Both need the permission to delegate roles on the object (Manager, Site Administrator,
//! Owner, Editor); granting or taking away Reviewer also needs Review there.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::{Permission, Role};
use crate::people::roles;
use crate::people::sharing::{self, Grant, Kind, RoleState};
use crate::runtime::context::Ctx;

/// Register the sharing routes.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@sharing", get)
            .requires(Permission::DelegateRoles)
            .summary("Local roles of users and groups here (`search` adds matching principals)")
            .query::<SharingQuery>()
            .answers::<SharingJson>(),
    );
    r.route(
        RouteDef::post("@sharing", post)
            .requires(Permission::DelegateRoles)
            .status(204)
            .summary("Grant or take away local roles; `inherit: false` blocks those from above")
            .body::<SharingBody>(),
    );
}

/// The query of GET `@sharing`.
#[derive(Deserialize, JsonSchema)]
pub struct SharingQuery {
    /// Also list the users and groups whose id, name or e-mail contains this.
    #[serde(default)]
    pub search: Option<String>,
}

/// The sharing page of an object.
#[derive(Serialize, JsonSchema)]
pub struct SharingJson {
    /// The roles it manages.
    pub available_roles: Vec<RoleTitle>,
    /// One entry per user or group.
    pub entries: Vec<EntryJson>,
    /// Whether the object inherits the local roles granted above it.
    pub inherit: bool,
}

/// A manageable role.
#[derive(Serialize, JsonSchema)]
pub struct RoleTitle {
    /// The role.
    pub id: &'static str,
    /// What it allows.
    pub title: &'static str,
}

/// A user's or group's row.
#[derive(Serialize, JsonSchema)]
pub struct EntryJson {
    /// Whether the sharing form shows the row disabled: the caller's own row (as Plone's form
    /// does, so nobody takes their own roles away by accident).
    pub disabled: bool,
    /// The login or group id.
    pub id: String,
    /// The login of a user; null for groups.
    pub login: Option<String>,
    /// For each role: `true` (granted here), `false`, `"acquired"` (granted above), `"global"`.
    pub roles: BTreeMap<&'static str, RoleValue>,
    /// Full name or group title.
    pub title: String,
    /// `user` or `group`.
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// The state of one role in an entry.
#[derive(Serialize, Deserialize, JsonSchema, Clone)]
#[serde(untagged)]
pub enum RoleValue {
    /// Granted here, or not.
    Set(bool),
    /// `acquired` or `global` (read only).
    From(String),
}

/// What POST `@sharing` takes.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SharingBody {
    /// The rows to change.
    #[serde(default)]
    pub entries: Vec<EntryBody>,
    /// `false` blocks the local roles granted above; `true` inherits them again.
    #[serde(default)]
    pub inherit: Option<bool>,
}

// Some fields are accepted from clients or only describe the OpenAPI document; none is read.
#[allow(dead_code)]
/// One row to change (as GET serves it; only `id` and `roles` matter).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntryBody {
    /// The login or group id.
    pub id: String,
    /// `user` or `group` (informative).
    #[serde(default, rename = "type")]
    pub kind: Option<EntryKind>,
    /// Each role to grant (`true`) or take away (`false`); `"acquired"` and `"global"` values
    /// are ignored.
    #[serde(default)]
    pub roles: BTreeMap<Role, RoleValue>,
    /// Ignored.
    #[serde(default)]
    pub title: Option<String>,
    /// Ignored.
    #[serde(default)]
    pub login: Option<String>,
    /// Ignored.
    #[serde(default)]
    pub disabled: Option<bool>,
}

/// The kind of a row.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// A user.
    User,
    /// A group.
    Group,
}

/// GET `<path>/@sharing`.
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let q: SharingQuery = call.query()?;
    let entries = sharing::entries(ctx, &obj, q.search.as_deref())?;
    let profile = ctx.profile();
    let answer = SharingJson {
        available_roles: roles::sharing(profile)
            .into_iter()
            .map(|(r, title)| RoleTitle {
                id: roles::shown(profile, r),
                title,
            })
            .collect(),
        entries: entries
            .into_iter()
            .map(|e| EntryJson {
                disabled: e.kind == Kind::User && ctx.principal.login() == Some(e.id.as_str()),
                login: (e.kind == Kind::User).then(|| e.id.clone()),
                roles: e
                    .roles
                    .iter()
                    .map(|(r, state)| {
                        let v = match state {
                            RoleState::No => RoleValue::Set(false),
                            RoleState::Local => RoleValue::Set(true),
                            RoleState::Acquired => RoleValue::From("acquired".into()),
                            RoleState::Global => RoleValue::From("global".into()),
                        };
                        (roles::shown(profile, *r), v)
                    })
                    .collect(),
                id: e.id,
                title: e.title,
                kind: match e.kind {
                    Kind::User => "user",
                    Kind::Group => "group",
                },
            })
            .collect(),
        inherit: !obj.block_local_roles,
    };
    Ok(Response::json(200, &answer))
}

/// POST `<path>/@sharing`: 204.
fn post(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let body: SharingBody = call.body()?;
    let mut grants = Vec::new();
    for (i, e) in body.entries.iter().enumerate() {
        let mut roles = Vec::new();
        for (role, value) in &e.roles {
            match value {
                RoleValue::Set(on) => roles.push((*role, *on)),
                RoleValue::From(s) if s == "acquired" || s == "global" => {}
                RoleValue::From(s) => {
                    return Err(EngineError::bad_request(format!(
                        "Invalid property 'entries[{i}].roles.{}': expected a boolean, got '{s}'",
                        role.name()
                    )))
                }
            }
        }
        grants.push(Grant {
            id: e.id.clone(),
            roles,
        });
    }
    sharing::update(ctx, obj, body.inherit, &grants)?;
    Ok(Response::empty(204))
}
