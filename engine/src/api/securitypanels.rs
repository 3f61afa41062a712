//! The account control panels, served here rather than by the generic `@controlpanels` (their
//! fixed segments win over `@controlpanels/{name}`): `security` (self-registration, password
//! length, e-mail as login) and `usergroup` (hints for large sites). Settings and their rules
//! are [`crate::people::accounts`]'; stored at `s:security` and `s:usergroup`.
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `/@controlpanels/security` | | 200, `{@id, group, title, schema, data: {enable_self_reg, enable_user_pwd_choice, use_email_as_login, min_password_length}}` |
//! | PATCH | `/@controlpanels/security` | any of the `data` properties | 204 |
//! | GET | `/@controlpanels/usergroup` | | 200, `{@id, group, title, schema, data: {many_users, many_groups}}` |
//! | PATCH | `/@controlpanels/usergroup` | any of the `data` properties | 204 |
//!
//! Only on the site root, with Manage portal.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use super::userschema::{Fieldset, Property};
use crate::core::error::Result;
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::accounts::{self, SecuritySettings, UserGroupSettings};
use crate::runtime::context::Ctx;

/// Register the account control panels.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@controlpanels/security", get_security)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("The security settings: self-registration, password length, e-mail logins")
            .answers::<AccountPanel>(),
    );
    r.route(
        RouteDef::patch("@controlpanels/security", patch_security)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Change the security settings")
            .body::<SecurityPatch>(),
    );
    r.route(
        RouteDef::get("@controlpanels/usergroup", get_usergroup)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("The user and group settings")
            .answers::<AccountPanel>(),
    );
    r.route(
        RouteDef::patch("@controlpanels/usergroup", patch_usergroup)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Change the user and group settings")
            .body::<UserGroupPatch>(),
    );
}

/// An account control panel with its settings.
#[derive(Serialize, JsonSchema)]
pub struct AccountPanel {
    /// `/@controlpanels/<name>`.
    #[serde(rename = "@id")]
    pub id: String,
    /// The settings.
    pub data: Value,
    /// Its group.
    pub group: &'static str,
    /// The form of the settings.
    pub schema: PanelSchema,
    /// Its title.
    pub title: &'static str,
}

/// The form of a panel's settings.
#[derive(Serialize, JsonSchema)]
pub struct PanelSchema {
    /// One fieldset.
    pub fieldsets: Vec<Fieldset>,
    /// The settings.
    pub properties: BTreeMap<String, Property>,
    /// None is required.
    pub required: Vec<String>,
    /// Always `object`.
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// Changes to the security settings.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecurityPatch {
    /// Anonymous visitors may register.
    #[serde(default)]
    pub enable_self_reg: Option<bool>,
    /// Registering users choose their password.
    #[serde(default)]
    pub enable_user_pwd_choice: Option<bool>,
    /// New accounts log in with their e-mail address.
    #[serde(default)]
    pub use_email_as_login: Option<bool>,
    /// Shortest password accepted (1 to 128).
    #[serde(default)]
    pub min_password_length: Option<usize>,
}

/// Changes to the user and group settings.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserGroupPatch {
    /// Many users: search, do not list.
    #[serde(default)]
    pub many_users: Option<bool>,
    /// Many groups: search, do not list.
    #[serde(default)]
    pub many_groups: Option<bool>,
}

fn field(title: &str, description: &str, kind: &str) -> Property {
    Property {
        behavior: None,
        default: None,
        description: description.into(),
        factory: Some(
            if kind == "boolean" {
                "Yes/No"
            } else {
                "Integer"
            }
            .into(),
        ),
        title: title.into(),
        kind: kind.into(),
        widget: None,
    }
}

fn schema(fields: Vec<(&str, Property)>) -> PanelSchema {
    PanelSchema {
        fieldsets: vec![Fieldset {
            behavior: "plone",
            fields: fields.iter().map(|(n, _)| n.to_string()).collect(),
            id: "default",
            title: "Default",
        }],
        properties: fields
            .into_iter()
            .map(|(n, p)| (n.to_string(), p))
            .collect(),
        required: Vec::new(),
        kind: "object",
    }
}

fn security_panel(ctx: &Ctx<'_>) -> Result<AccountPanel> {
    Ok(AccountPanel {
        id: ctx.url("/@controlpanels/security"),
        data: serde_json::to_value(accounts::security_settings(ctx)?)?,
        group: "Security",
        schema: schema(vec![
            (
                "enable_self_reg",
                field(
                    "Enable self-registration",
                    "Visitors may create their own account (as a Member).",
                    "boolean",
                ),
            ),
            (
                "enable_user_pwd_choice",
                field(
                    "Let users select their own passwords",
                    "Otherwise a registering user is mailed a link to set one.",
                    "boolean",
                ),
            ),
            (
                "use_email_as_login",
                field(
                    "Use e-mail address as login name",
                    "New accounts log in with their e-mail address.",
                    "boolean",
                ),
            ),
            (
                "min_password_length",
                field(
                    "Minimum password length",
                    "Applies wherever a password is set.",
                    "integer",
                ),
            ),
        ]),
        title: "Security",
    })
}

fn usergroup_panel(ctx: &Ctx<'_>) -> Result<AccountPanel> {
    Ok(AccountPanel {
        id: ctx.url("/@controlpanels/usergroup"),
        data: serde_json::to_value(accounts::usergroup_settings(ctx)?)?,
        group: "Users and Groups",
        schema: schema(vec![
            (
                "many_users",
                field(
                    "Many users?",
                    "Search users instead of listing them all.",
                    "boolean",
                ),
            ),
            (
                "many_groups",
                field(
                    "Many groups?",
                    "Search groups instead of listing them all.",
                    "boolean",
                ),
            ),
        ]),
        title: "User and Group Settings",
    })
}

/// GET `/@controlpanels/security`.
fn get_security(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    Ok(Response::json(200, &security_panel(ctx)?))
}

/// PATCH `/@controlpanels/security`: 204.
fn patch_security(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let body: SecurityPatch = call.body()?;
    let current = accounts::security_settings(ctx)?;
    let next = SecuritySettings {
        enable_self_reg: body.enable_self_reg.unwrap_or(current.enable_self_reg),
        enable_user_pwd_choice: body
            .enable_user_pwd_choice
            .unwrap_or(current.enable_user_pwd_choice),
        use_email_as_login: body
            .use_email_as_login
            .unwrap_or(current.use_email_as_login),
        min_password_length: body
            .min_password_length
            .unwrap_or(current.min_password_length),
    };
    accounts::save_security_settings(ctx, &next)?;
    Ok(Response::empty(204))
}

/// GET `/@controlpanels/usergroup`.
fn get_usergroup(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    Ok(Response::json(200, &usergroup_panel(ctx)?))
}

/// PATCH `/@controlpanels/usergroup`: 204.
fn patch_usergroup(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let body: UserGroupPatch = call.body()?;
    let current = accounts::usergroup_settings(ctx)?;
    let next = UserGroupSettings {
        many_users: body.many_users.unwrap_or(current.many_users),
        many_groups: body.many_groups.unwrap_or(current.many_groups),
    };
    accounts::save_usergroup_settings(ctx, &next)?;
    Ok(Response::empty(204))
}
