//! `@userschema`: the JSON Schema of the user forms, built from the user schema data
//! ([`crate::accounts::user_fields`]), in the shape the types' schemas have.
//!
//! | method | path | answer |
//! |---|---|---|
//! | GET | `/@userschema` | 200, `{type: "object", fieldsets, properties, required}`: the profile form |
//! | GET | `/@userschema/registration` | 200, the same for the self-registration form |

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::extract::Call;
use super::router::{Registry, RouteDef};
use crate::accounts::{self, UserForm};
use crate::context::Ctx;
use crate::error::Result;
use crate::http::Response;
use crate::model::ContentRecord;

/// Register the user schema routes.
pub fn register(r: &mut Registry) {
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
    /// Always `plone`.
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

fn schema(form: UserForm) -> Result<UserSchema> {
    let fields = accounts::user_fields(form)?;
    Ok(UserSchema {
        fieldsets: vec![Fieldset {
            behavior: "plone",
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
                (
                    f.name,
                    Property {
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
fn profile(_: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    Ok(Response::json(200, &schema(UserForm::Profile)?))
}

/// GET `/@userschema/registration`.
fn registration(_: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    Ok(Response::json(200, &schema(UserForm::Registration)?))
}
