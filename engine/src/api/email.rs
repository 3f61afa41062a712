//! Mail written by people, queued in the outbox by [`crate::automation::mail`]: `@email-send` (to any
//! address), `@email-notification` (to the site's address: a contact form) and
//! `@users/<id>/@email-notification` (to a user).
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | POST | `/@email-send` | `{to, from, message, subject?, name?}` | 204 (queued in the outbox) |
//! | POST | `/@email-notification` | `{from, message, subject?, name?}` | 204 (to the site's address) |
//! | POST | `/@users/<id>/@email-notification` | `{from, message, subject?, name?}` | 204 (to the user's address; logged-in callers) |
//!
//! `@email-send` needs Manage portal; `@email-notification` is open to everyone; a user's
//! `@email-notification` to logged-in callers.

use schemars::JsonSchema;
use serde::Deserialize;

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use crate::automation::mail;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register the routes.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::post("@users/{id}/@email-notification", email_user)
            .root_only()
            .checked_by_handler()
            .status(204)
            .summary("Send a mail to a user (through the outbox); logged-in callers only")
            .body::<EmailNotification>(),
    );
    r.route(
        RouteDef::post("@email-send", email_send)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Send a mail to any address (through the outbox)")
            .body::<EmailSend>(),
    );
    r.route(
        RouteDef::post("@email-notification", email_notification)
            .root_only()
            .status(204)
            .summary("Send a mail to the site's address (contact form; through the outbox)")
            .body::<EmailNotification>(),
    );
}

// ---------------------------------------------------------------- mail

/// The body of `@email-send`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmailSend {
    /// The recipient.
    pub to: String,
    /// The sender.
    pub from: String,
    /// The text.
    pub message: String,
    /// The subject.
    #[serde(default)]
    pub subject: Option<String>,
    /// The sender's name.
    #[serde(default)]
    pub name: Option<String>,
}

/// The body of `@email-notification`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmailNotification {
    /// The sender.
    pub from: String,
    /// The text.
    pub message: String,
    /// The subject.
    #[serde(default)]
    pub subject: Option<String>,
    /// The sender's name.
    #[serde(default)]
    pub name: Option<String>,
}

fn email_send(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let b: EmailSend = call.body()?;
    mail::check_address("to", &b.to)?;
    mail::send_message(
        ctx,
        mail::Message {
            to: b.to,
            from: b.from,
            name: b.name,
            subject: b.subject,
            message: b.message,
            visitor: false,
        },
        "@email-send",
    )?;
    Ok(Response::empty(204))
}

fn email_user(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    if ctx.principal.login().is_none() {
        return Err(EngineError::Unauthorized(
            "Log in to send a mail to a user".into(),
        ));
    }
    let b: EmailNotification = call.body()?;
    mail::check_address("from", &b.from)?;
    let id = call.param("id").unwrap_or_default();
    let user = crate::people::auth::users::get(ctx, id)?.ok_or_else(|| EngineError::NotFound {
        url: format!("{}/@users/{id}/@email-notification", ctx.base_url),
        context: None,
    })?;
    if user.email.is_empty() {
        return Err(EngineError::bad_request(format!(
            "The user '{id}' has no e-mail address"
        )));
    }
    mail::send_message(
        ctx,
        mail::Message {
            to: user.email,
            from: b.from,
            name: b.name,
            subject: b.subject,
            message: b.message,
            visitor: true,
        },
        "@email-notification",
    )?;
    Ok(Response::empty(204))
}

fn email_notification(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let b: EmailNotification = call.body()?;
    mail::check_address("from", &b.from)?;
    let to = mail::site_sender(ctx)?;
    mail::send_message(
        ctx,
        mail::Message {
            to,
            from: b.from,
            name: b.name,
            subject: b.subject,
            message: b.message,
            visitor: true,
        },
        "@email-notification",
    )?;
    Ok(Response::empty(204))
}
