//! `@userschema`: the JSON Schema of the user forms, built from the user schema data
//! ([`crate::people::accounts::user_fields`]: the built-in fields of `engine/src/people/userschema.json` and the
//! site's own), in the shape the types' schemas have.
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `/@userschema` | | 200, `{type: "object", fieldsets, properties, required}`: the profile form |
//! | GET | `/@userschema/registration` | | 200, the same for the self-registration form |
//! | GET | `/@userschema/fields` | | 200, `{fields: [field]}`: the fields the site added (managers) |
//! | PUT | `/@userschema/fields` | `{fields: [{name, title, description?, type, widget?, factory?, default?, forms: ["profile", "registration"], required?}]}` | 204 (managers) |
//!
//! Users' values of the site's fields are ordinary `@users` properties.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use crate::core::error::Result;
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::accounts::{self, UserField, UserForm};
use crate::runtime::context::Ctx;

/// Register the user schema routes.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@userschema", profile)
            .root_only()
            .summary("The schema of the user profile form")
            .answers::<UserSchema>(),
    );
    r.route(
        RouteDef::get("@userschema/registration", registration)
            .root_only()
            .summary("The schema of the self-registration form")
            .answers::<UserSchema>(),
    );
    r.route(
        RouteDef::get("@userschema/fields", get_fields)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("The fields the site adds to the user forms")
            .answers::<CustomFields>(),
    );
    r.route(
        RouteDef::put("@userschema/fields", put_fields)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Replace the fields the site adds to the user forms")
            .body::<CustomFields>(),
    );
}

/// The fields a site adds to the user forms.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomFields {
    /// In form order, after the built-in fields.
    pub fields: Vec<UserField>,
}

/// GET `/@userschema/fields`.
fn get_fields(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let fields = accounts::custom_user_fields(ctx)?;
    Ok(Response::json(200, &CustomFields { fields }))
}

/// PUT `/@userschema/fields`: 204.
fn put_fields(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let body: CustomFields = call.body()?;
    accounts::save_custom_user_fields(ctx, &body.fields)?;
    Ok(Response::empty(204))
}

/// A form's schema.
#[derive(Serialize, JsonSchema)]
pub struct UserSchema {
    /// One fieldset holding every field.
    pub fieldsets: Vec<Fieldset>,
    /// The fields.
    pub properties: BTreeMap<String, Property>,
    /// The fields the form requires.
    pub required: Vec<String>,
    /// Always `object`.
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// A group of fields.
#[derive(Serialize, JsonSchema)]
pub struct Fieldset {
    /// `plone` (Nick: `default`).
    pub behavior: &'static str,
    /// The field names in form order.
    pub fields: Vec<String>,
    /// `default`.
    pub id: &'static str,
    /// `Default`.
    pub title: &'static str,
}

/// One field.
#[derive(Serialize, JsonSchema)]
pub struct Property {
    /// Nick only: `default` for the properties its user records hold as columns (full name,
    /// e-mail), `custom` for the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub behavior: Option<&'static str>,
    /// The default value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// Help text.
    pub description: String,
    /// The field factory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub factory: Option<String>,
    /// Label.
    pub title: String,
    /// JSON type.
    #[serde(rename = "type")]
    pub kind: String,
    /// The widget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub widget: Option<String>,
}

fn schema(ctx: &Ctx<'_>, form: UserForm) -> Result<UserSchema> {
    let fields = accounts::user_fields(ctx, form)?;
    let nick = ctx.profile().is_nick();
    // Nick marks the profile form's fields by where they are stored; its registration form
    // shows no behaviors.
    let behavior = |name: &str| match (nick, form) {
        (true, UserForm::Profile) if matches!(name, "fullname" | "email") => Some("default"),
        (true, UserForm::Profile) => Some("custom"),
        _ => None,
    };
    Ok(UserSchema {
        fieldsets: vec![Fieldset {
            behavior: if nick { "default" } else { "plone" },
            fields: fields.iter().map(|f| f.name.clone()).collect(),
            id: "default",
            title: "Default",
        }],
        required: fields
            .iter()
            .filter(|f| f.required)
            .map(|f| f.name.clone())
            .collect(),
        properties: fields
            .into_iter()
            .map(|f| {
                let behavior = behavior(&f.name);
                (
                    f.name,
                    Property {
                        behavior,
                        default: f.default,
                        description: f.description,
                        factory: f.factory,
                        title: f.title,
                        kind: f.kind,
                        widget: f.widget,
                    },
                )
            })
            .collect(),
        kind: "object",
    })
}

/// GET `/@userschema`.
fn profile(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    Ok(Response::json(200, &schema(ctx, UserForm::Profile)?))
}

/// GET `/@userschema/registration`.
fn registration(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    Ok(Response::json(200, &schema(ctx, UserForm::Registration)?))
}
