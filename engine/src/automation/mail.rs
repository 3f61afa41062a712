//! Outgoing mail: the one place that checks e-mail addresses and the one way a mail leaves the
//! engine, as a job of the durable outbox ([`crate::automation::jobs`]), written in the request's own
//! transaction and delivered by the host (SMTP on host-server).
//!
//! Every sender goes through here: content rules' mail action ([`crate::automation::rules`]), password reset
//! ([`crate::people::accounts::request_reset`]), `@email-send` and `@email-notification`; form blocks
//! ([`crate::automation::forms`]) and e-mail fields of content types check their values with the same
//! [`is_address`]. The scheduled `send-mail` action is a job itself ([`crate::automation::jobs`], which this
//! module builds on, so it cannot call back here): it uses the same address check and sender.
//!
//! An address is `local@domain.tld`-shaped: a non-empty local part, one `@`, a domain with a dot
//! that neither starts nor ends with one, and no whitespace or comma anywhere (a comma separates
//! recipients, so it never belongs to one address; whitespace includes CR and LF, so an address
//! cannot inject a mail header). The syntax itself lives in [`crate::core::model::fields::is_email`],
//! the lowest layer that needs it (content fields of kind e-mail).

use serde_json::{json, Map};

use crate::automation::jobs::{self, Delivery};
use crate::core::error::{EngineError, Result};
use crate::runtime::context::Ctx;
use crate::site::configuration;

/// Whether `s` is an e-mail address (see the module documentation).
pub fn is_address(s: &str) -> bool {
    crate::core::model::fields::is_email(s)
}

/// `Ok` when `value`, given as `field`, is an e-mail address; a 400 naming the field otherwise.
pub fn check_address(field: &str, value: &str) -> Result<()> {
    if is_address(value) {
        Ok(())
    } else {
        Err(EngineError::Invalid {
            field: field.into(),
            message: format!("'{field}' must be an e-mail address, not '{value}'"),
        })
    }
}

/// The site's sender address ([`configuration::email_from_address`]: `plone.email_from_address`,
/// `noreply@localhost` when unset).
pub fn site_sender(ctx: &Ctx<'_>) -> Result<String> {
    configuration::email_from_address(ctx)
}

/// A mail the site sends: from the site's address, under its name (`plone.email_from_name`).
pub fn from_site(
    ctx: &Ctx<'_>,
    to: Vec<String>,
    subject: String,
    body: String,
) -> Result<Outgoing> {
    Ok(Outgoing {
        from: site_sender(ctx)?,
        from_name: configuration::email_from_name(ctx)?,
        reply_to: None,
        to,
        subject,
        body,
    })
}

/// A mail to queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The sender's address.
    pub from: String,
    /// The sender's name (the site's `email_from_name` for mail the site sends), if any.
    pub from_name: Option<String>,
    /// Where answers go, when not to the sender.
    pub reply_to: Option<String>,
    /// The recipients.
    pub to: Vec<String>,
    /// The subject.
    pub subject: String,
    /// The text.
    pub body: String,
}

/// Queue `mail` in the outbox as a new job titled `Mail: <subject>`, described by `description`
/// (who or what sent it) and listing `params` plus the recipients (`to`) in `@jobs`; the job's
/// uuid.
pub fn queue(
    ctx: &mut Ctx<'_>,
    mail: Outgoing,
    description: &str,
    mut params: Map<String, serde_json::Value>,
) -> Result<String> {
    params.insert("to".into(), json!(mail.to));
    let job = jobs::new_job(ctx, &format!("Mail: {}", mail.subject), description, params);
    jobs::enqueue(
        ctx,
        job,
        Delivery::Mail {
            from: mail.from,
            from_name: mail.from_name,
            reply_to: mail.reply_to,
            to: mail.to,
            subject: mail.subject,
            body: mail.body,
        },
    )
}

/// A message someone wrote (`@email-send`, `@email-notification`): `from` is checked, the
/// subject defaults to "A message", and a non-empty `name` signs the text as
/// `-- name <from>`. Queued with `via` (the endpoint) as its description and `via` param. A
/// visitor's message is sent from the site's address (relays and DMARC refuse a mail whose
/// sender is a domain the site does not own) with the writer in `Reply-To`.
pub struct Message {
    /// The recipient.
    pub to: String,
    /// The writer's address.
    pub from: String,
    /// The writer's name.
    pub name: Option<String>,
    /// The subject.
    pub subject: Option<String>,
    /// The text.
    pub message: String,
    /// Whether a visitor wrote it (`@email-notification`): sent as the site, `Reply-To` the
    /// writer; otherwise (`@email-send`, a Manager) `from` is the sender.
    pub visitor: bool,
}

/// Queue a [`Message`] sent through the endpoint `via`.
pub fn send_message(ctx: &mut Ctx<'_>, m: Message, via: &str) -> Result<String> {
    check_address("from", &m.from)?;
    let subject = m.subject.unwrap_or_else(|| "A message".into());
    let body = match m.name {
        Some(n) if !n.is_empty() => format!("{}\n\n-- {n} <{}>", m.message, m.from),
        _ => m.message,
    };
    let mut params = Map::new();
    params.insert("via".into(), json!(via));
    let mail = if m.visitor {
        Outgoing {
            reply_to: Some(m.from),
            ..from_site(ctx, vec![m.to], subject, body)?
        }
    } else {
        Outgoing {
            from: m.from,
            from_name: None,
            reply_to: None,
            to: vec![m.to],
            subject,
            body,
        }
    };
    queue(ctx, mail, via, params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        for ok in [
            "ann@example.com",
            "a@b.c",
            "first.last+tag@mail.example.org",
        ] {
            assert!(is_address(ok), "{ok}");
        }
        for bad in [
            "",
            "ann",
            "@example.com",
            "ann@example",
            "ann@.example.com",
            "ann@example.com.",
            "ann@b@example.com",
            "ann @example.com",
            "ann@example.com\r\nBcc: x@y.z",
            "a@example.com,b@example.com",
            "not-an-address",
        ] {
            assert!(!is_address(bad), "{bad:?}");
        }
        assert!(check_address("to", "x@y.z").is_ok());
        let err = check_address("to", "nope").unwrap_err().to_string();
        assert!(err.contains("'to'"), "{err}");
    }
}
