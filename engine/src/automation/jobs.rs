//! Jobs and the durable outbox.
//!
//! A job (`J:j:<uuid>`, [`Job`]) is work done after the request that asked for it: a mail or a
//! webhook call a content rule queued, a mail `@email-send` queued, or a run of a scheduled job.
//! Outgoing messages are written into the outbox in the request's own transaction, so they exist
//! exactly when the change that caused them committed. The engine owns the delivery state; a host
//! only performs the I/O: it asks for the due deliveries ([`claim_due`]), sends them with
//! [`perform`] through its own [`WebhookTransport`] and [`MailTransport`] (which only move bytes:
//! what is sent, with which headers, and what counts as delivered is decided here), and reports
//! each outcome ([`report`]).
//!
//! Delivery is at least once: a claimed delivery is leased for [`LEASE_SECS`]; a host that dies
//! before reporting leaves it due again when the lease ends. Every attempt of a job carries the
//! same idempotency key (the job's uuid), so a receiver can drop repeats. A failed attempt is
//! retried after a backoff that doubles from [`FIRST_BACKOFF_SECS`] (capped at
//! [`MAX_BACKOFF_SECS`]) for [`RETRY_HORIZON_SECS`] (24 hours) from the first attempt. Past the
//! horizon the job is a dead letter: `failed` with `result.dead_letter: true`, still tried once every
//! [`DEAD_LETTER_PROBE_SECS`] for [`DEAD_LETTER_PROBE_DAYS`] days. A delivery that succeeds makes
//! every waiting retry and dead letter for the same destination (a webhook's origin; the SMTP
//! server for mail) due at once, so the backlog resumes as soon as the receiver is back. A
//! permanent failure (a 4xx answer other than 408 and 429, an SMTP permanent reply, an address
//! that cannot be sent to) is `failed` at once with `result.permanent: true` and the reason.
//! Finished jobs are pruned [`FINISHED_RETENTION_DAYS`] days after they finished ([`prune`]).
//!
//! Statuses are Nick's: `created` (queued for its first attempt), `queued` (waiting for a retry),
//! `running` (claimed by a host), `completed`, `failed`, `aborted`.

use chrono::{DateTime, Duration, Utc};
use hmac::{Hmac, Mac};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::Sha256;

use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::core::store::Direction;
use crate::runtime::context::Ctx;

/// How long a claimed delivery is leased to the host that claimed it.
pub const LEASE_SECS: i64 = 60;
/// The wait before the first retry; each further retry waits twice as long.
pub const FIRST_BACKOFF_SECS: i64 = 1;
/// The longest wait between two attempts.
pub const MAX_BACKOFF_SECS: i64 = 600;
/// How long a delivery that keeps failing is retried (from its first attempt) before it becomes a
/// dead letter: 24 hours.
pub const RETRY_HORIZON_SECS: i64 = 24 * 3600;
/// How often a dead letter is tried again (it also resumes at once when a delivery to the same
/// destination succeeds).
pub const DEAD_LETTER_PROBE_SECS: i64 = 3600;
/// How long a dead letter is still probed (from its first attempt); after that only a retry by
/// hand sends it.
pub const DEAD_LETTER_PROBE_DAYS: i64 = 7;
/// How long a finished job (completed, failed for good, aborted) is kept after it finished.
pub const FINISHED_RETENTION_DAYS: i64 = 30;

/// A job: Nick's job schema, plus the delivery it performs (if any).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    /// Its id.
    pub uuid: String,
    /// What it is, for people.
    pub title: String,
    /// More about it.
    pub description: String,
    /// What it was started with (the rule, the trigger, the object, ...).
    pub params: Map<String, Value>,
    /// The user whose request created it.
    pub actor: String,
    /// When it was created.
    pub created: DateTime<Utc>,
    /// When its last attempt started.
    pub started: Option<DateTime<Utc>>,
    /// When it finished (completed, failed for good, or aborted).
    pub finished: Option<DateTime<Utc>>,
    /// `created`, `running`, `completed`, `failed` or `aborted`.
    pub status: String,
    /// What it produced: for a delivery, `attempts`, and `response_status` or `error`.
    pub result: Map<String, Value>,
    /// The message it delivers, if it is an outbox entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    /// Attempts made so far.
    #[serde(default)]
    pub attempts: u32,
    /// When it is due for its next attempt (its outbox entry), while queued or leased.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due: Option<DateTime<Utc>>,
    /// When its first attempt (since it was queued or retried by hand) was made: the start of
    /// its retry horizon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_attempt: Option<DateTime<Utc>>,
}

/// A message of the outbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Delivery {
    /// An HTTP POST of a JSON body.
    Webhook {
        /// Where to.
        url: String,
        /// The JSON body, exactly as sent (the signature covers these bytes).
        body: String,
        /// `sha256=<hex HMAC-SHA256 of the body with the rule's secret>`, sent as
        /// `X-Signature-256`.
        signature: String,
    },
    /// A mail.
    Mail {
        /// The sender's address.
        from: String,
        /// The sender's name (`From: name <from>`), if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from_name: Option<String>,
        /// Where answers go (`Reply-To`), when not to the sender: the visitor who wrote it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply_to: Option<String>,
        /// The recipients.
        to: Vec<String>,
        /// The subject.
        subject: String,
        /// The text.
        body: String,
    },
}

/// A delivery a host should perform now (`claim_due`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DueDelivery {
    /// The job's uuid: also the idempotency key (`Idempotency-Key` header, `Message-ID`).
    pub job: String,
    /// Which attempt this is (1 for the first).
    pub attempt: u32,
    /// What to send.
    pub delivery: Delivery,
}

/// `sha256=<hex>` of the HMAC-SHA256 of `body` under `secret`.
pub fn sign(secret: &str, body: &[u8]) -> String {
    // A key of any length is accepted by HMAC; `new_from_slice` cannot fail here.
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(m) => m,
        Err(_) => return String::new(),
    };
    mac.update(body);
    let bytes = mac.finalize().into_bytes();
    let mut out = String::from("sha256=");
    for b in bytes {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

fn millis(t: &DateTime<Utc>) -> u64 {
    u64::try_from(t.timestamp_millis()).unwrap_or(0)
}

fn save(ctx: &mut Ctx<'_>, job: &Job) -> Result<()> {
    ctx.put_json(&keys::job(&job.uuid), job)?;
    ctx.emit(Event::JobChanged {
        uuid: job.uuid.clone(),
        status: job.status.clone(),
    });
    Ok(())
}

fn unqueue(ctx: &mut Ctx<'_>, job: &mut Job) -> Result<()> {
    if let Some(due) = job.due.take() {
        ctx.delete(&keys::outbox_entry(millis(&due), &job.uuid))?;
    }
    Ok(())
}

fn queue(ctx: &mut Ctx<'_>, job: &mut Job, due: DateTime<Utc>) -> Result<()> {
    unqueue(ctx, job)?;
    ctx.put(&keys::outbox_entry(millis(&due), &job.uuid), b"")?;
    job.due = Some(due);
    Ok(())
}

/// A new job record (not stored).
pub fn new_job(ctx: &Ctx<'_>, title: &str, description: &str, params: Map<String, Value>) -> Job {
    Job {
        uuid: ctx.core.entropy.uuid().to_string(),
        title: title.to_string(),
        description: description.to_string(),
        params,
        actor: ctx
            .principal
            .login()
            .unwrap_or("Anonymous User")
            .to_string(),
        created: ctx.now(),
        started: None,
        finished: None,
        status: "created".into(),
        result: Map::new(),
        delivery: None,
        attempts: 0,
        due: None,
        first_attempt: None,
    }
}

/// Put `delivery` into the outbox as a new job, due now; its uuid.
pub fn enqueue(ctx: &mut Ctx<'_>, mut job: Job, delivery: Delivery) -> Result<String> {
    job.delivery = Some(delivery);
    let now = ctx.now();
    queue(ctx, &mut job, now)?;
    save(ctx, &job)?;
    Ok(job.uuid)
}

/// Store a job that is already finished (a run of a scheduled job done in the request).
pub fn record_finished(
    ctx: &mut Ctx<'_>,
    mut job: Job,
    ok: bool,
    result: Map<String, Value>,
) -> Result<String> {
    let now = ctx.now();
    job.started = Some(now);
    job.finished = Some(now);
    job.attempts = 1;
    job.status = if ok { "completed" } else { "failed" }.into();
    job.result = result;
    save(ctx, &job)?;
    Ok(job.uuid)
}

/// Every job, oldest first (those of one moment by title).
pub fn all(ctx: &Ctx<'_>) -> Result<Vec<Job>> {
    let mut jobs: Vec<Job> = ctx.values_with_prefix(keys::JOB_PREFIX)?;
    jobs.sort_by(|a, b| (a.created, &a.title, &a.uuid).cmp(&(b.created, &b.title, &b.uuid)));
    Ok(jobs)
}

/// The job `uuid`.
pub fn get(ctx: &Ctx<'_>, uuid: &str) -> Result<Option<Job>> {
    ctx.get_json(&keys::job(uuid))
}

fn require(ctx: &Ctx<'_>, uuid: &str) -> Result<Job> {
    get(ctx, uuid)?.ok_or_else(|| EngineError::NotFound {
        url: ctx.url(&format!("/@jobs/{uuid}")),
        context: None,
    })
}

/// Delete the job `uuid` (and its outbox entry: it is not delivered any more).
pub fn delete(ctx: &mut Ctx<'_>, uuid: &str) -> Result<()> {
    let mut job = require(ctx, uuid)?;
    unqueue(ctx, &mut job)?;
    ctx.delete(&keys::job(uuid))?;
    ctx.emit(Event::JobChanged {
        uuid: uuid.to_string(),
        status: "deleted".into(),
    });
    Ok(())
}

/// Abort the job `uuid`: it is not attempted again. Only a job that is not finished can be
/// aborted (400 otherwise; on a Nick site, as Nick does, aborting a finished job changes
/// nothing and is no error).
pub fn abort(ctx: &mut Ctx<'_>, uuid: &str) -> Result<()> {
    let mut job = require(ctx, uuid)?;
    let dead_letter = job.status == "failed" && job.due.is_some();
    if !matches!(job.status.as_str(), "created" | "queued" | "running") && !dead_letter {
        if ctx.profile().is_nick() {
            return Ok(());
        }
        return Err(EngineError::bad_request(format!(
            "Job '{uuid}' is {}; only a queued or running job (or a dead letter) can be aborted",
            job.status
        )));
    }
    unqueue(ctx, &mut job)?;
    job.status = "aborted".into();
    job.finished = Some(ctx.now());
    save(ctx, &job)
}

/// Retry the job `uuid` now: a failed or aborted delivery is queued again, with a fresh count
/// of attempts. Other jobs cannot be retried (400); on a Nick site, as Nick does, retrying the
/// run of a scheduled job (finished or not) runs that scheduled job again, a new job.
pub fn retry(ctx: &mut Ctx<'_>, uuid: &str) -> Result<()> {
    let mut job = require(ctx, uuid)?;
    if !matches!(job.status.as_str(), "failed" | "aborted") || job.delivery.is_none() {
        let scheduled = job.params.get("scheduled_job").and_then(Value::as_str);
        if let Some(mut run) = scheduled
            .filter(|_| ctx.profile().is_nick())
            .map(|id| schedule(ctx, id))
            .transpose()?
            .flatten()
        {
            run_schedule(ctx, &mut run)?;
            return Ok(());
        }
        return Err(EngineError::bad_request(format!(
            "Job '{uuid}' is {}; only a failed or aborted delivery can be retried",
            job.status
        )));
    }
    job.status = "created".into();
    job.finished = None;
    job.attempts = 0;
    job.first_attempt = None;
    for k in ["next_attempt", "dead_letter", "permanent"] {
        job.result.remove(k);
    }
    let now = ctx.now();
    queue(ctx, &mut job, now)?;
    save(ctx, &job)
}

/// Claim up to `limit` deliveries due now: each becomes `running` and is leased for
/// [`LEASE_SECS`] (due again then, unless reported before).
pub fn claim_due(ctx: &mut Ctx<'_>, limit: usize) -> Result<Vec<DueDelivery>> {
    claim_due_where(ctx, limit, |_| true)
}

/// [`claim_due`] for the deliveries `wanted` accepts only (a host that cannot send mail leaves
/// mails queued).
pub fn claim_due_where(
    ctx: &mut Ctx<'_>,
    limit: usize,
    wanted: impl Fn(&Delivery) -> bool,
) -> Result<Vec<DueDelivery>> {
    let now = ctx.now();
    let end = keys::outbox_entry(millis(&now) + 1, "");
    let entries = ctx.scan(keys::OUTBOX_PREFIX, &end, Direction::Forward, usize::MAX)?;
    let mut out = Vec::new();
    for (key, _) in entries {
        if out.len() >= limit {
            break;
        }
        let uuid = String::from_utf8_lossy(&key[keys::OUTBOX_PREFIX.len() + 9..]).into_owned();
        let Some(mut job) = get(ctx, &uuid)? else {
            ctx.delete(&key)?; // an entry whose job is gone
            continue;
        };
        let Some(delivery) = job.delivery.clone() else {
            ctx.delete(&key)?;
            continue;
        };
        if !wanted(&delivery) {
            continue;
        }
        job.attempts += 1;
        job.started = Some(now);
        job.first_attempt.get_or_insert(now);
        job.status = "running".into();
        queue(ctx, &mut job, now + Duration::seconds(LEASE_SECS))?;
        save(ctx, &job)?;
        out.push(DueDelivery {
            job: uuid,
            attempt: job.attempts,
            delivery,
        });
    }
    Ok(out)
}

/// The wait before the attempt after `attempts` failed ones.
pub fn backoff(attempts: u32) -> Duration {
    let exp = attempts.saturating_sub(1).min(20);
    Duration::seconds((FIRST_BACKOFF_SECS << exp).min(MAX_BACKOFF_SECS))
}

/// What became of one delivery attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Delivered (for a webhook: the 2xx status the receiver answered).
    Delivered(Option<u16>),
    /// Not delivered, for now: why (and the receiver's status, if it answered); retried.
    Failed(String, Option<u16>),
    /// Not delivered and never will be (a 4xx other than 408/429, an SMTP permanent reply, an
    /// address that cannot be sent to): why; not retried.
    Rejected(String, Option<u16>),
}

/// Why a mail was not sent ([`MailTransport::send`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailError {
    /// What went wrong.
    pub reason: String,
    /// Whether sending it again cannot help (an SMTP 5xx reply, an address that does not parse).
    pub permanent: bool,
}

impl MailError {
    /// A failure worth retrying.
    pub fn transient(reason: impl Into<String>) -> Self {
        MailError {
            reason: reason.into(),
            permanent: false,
        }
    }

    /// A failure that retrying cannot fix.
    pub fn permanent(reason: impl Into<String>) -> Self {
        MailError {
            reason: reason.into(),
            permanent: true,
        }
    }
}

/// Whether a webhook receiver's answer `status` (not 2xx) is worth retrying: 5xx, 408 and 429
/// are; any other answer (a 3xx redirect the host did not follow, a 4xx) is final.
pub fn is_transient_status(status: u16) -> bool {
    status >= 500 || status == 408 || status == 429
}

/// The SMTP server of the mail control panel (registry records `plone.smtp_host`,
/// `plone.smtp_port`, `plone.smtp_userid`, `plone.smtp_pass`), which mails are sent through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmtpSettings {
    /// The server's host name (empty: none configured).
    pub host: String,
    /// Its port (465: TLS from the start; otherwise STARTTLS when the server offers it).
    pub port: u16,
    /// The login, if the server wants one (empty: none).
    pub user: String,
    /// The password of [`SmtpSettings::user`].
    pub password: String,
}

impl SmtpSettings {
    /// The site's settings (port 25 when none or an impossible one is set).
    pub fn read(ctx: &Ctx<'_>) -> Result<Self> {
        let text = |name: &str| -> Result<String> {
            Ok(crate::site::configuration::get(ctx, name)?
                .as_str()
                .unwrap_or_default()
                .to_string())
        };
        let port = crate::site::configuration::get(ctx, "plone.smtp_port")?
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .unwrap_or(25);
        Ok(SmtpSettings {
            host: text("plone.smtp_host")?,
            port,
            user: text("plone.smtp_userid")?,
            password: text("plone.smtp_pass")?,
        })
    }
}

/// A webhook call as the engine wants it made: an HTTP `POST` of `body` to `url` with `headers`
/// (the host's [`WebhookTransport`] makes it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookPost<'a> {
    /// Where to.
    pub url: &'a str,
    /// The request headers, in order.
    pub headers: Vec<(&'static str, String)>,
    /// The JSON body, exactly as signed.
    pub body: &'a str,
}

/// A mail as the engine wants it sent (the host's [`MailTransport`] sends it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailMessage<'a> {
    /// The sender's address (also the envelope sender).
    pub from: &'a str,
    /// The sender's name, if any (`From: name <from>`).
    pub from_name: Option<&'a str>,
    /// The `Reply-To` address, if answers go elsewhere than to the sender.
    pub reply_to: Option<&'a str>,
    /// The recipients.
    pub to: &'a [String],
    /// The subject.
    pub subject: &'a str,
    /// The plain text.
    pub body: &'a str,
    /// Its `Message-ID` (the same for every attempt, so repeats can be recognised).
    pub message_id: String,
}

/// How a host makes webhook calls (host-server with an HTTP client, the browser with `fetch`).
pub trait WebhookTransport {
    /// Make the call: the status the receiver answered, or why there was no answer.
    fn post(
        &self,
        post: &WebhookPost<'_>,
    ) -> impl std::future::Future<Output = std::result::Result<u16, String>>;
}

/// How a host sends mail (host-server over SMTP; the browser sends none).
pub trait MailTransport {
    /// Send `mail` through the server `smtp`, or say why it was not sent (and whether that is
    /// final).
    fn send(
        &self,
        smtp: &SmtpSettings,
        mail: &MailMessage<'_>,
    ) -> impl std::future::Future<Output = std::result::Result<(), MailError>>;
}

/// Perform the due delivery `d` with the host's transports; its outcome, for `report`. A
/// webhook is delivered when the receiver answers 2xx; it carries `Content-Type:
/// application/json`, `X-Signature-256`, `Idempotency-Key: <job uuid>` and `X-Delivery-Attempt`.
/// A mail goes to the server `smtp` gives (only awaited for a mail: a store read the host makes),
/// with `Message-ID: <job uuid@outbox>`.
pub async fn perform<W, M, F>(d: &DueDelivery, hooks: &W, mail: &M, smtp: F) -> Outcome
where
    W: WebhookTransport,
    M: MailTransport,
    F: std::future::Future<Output = std::result::Result<SmtpSettings, String>>,
{
    match &d.delivery {
        Delivery::Webhook {
            url,
            body,
            signature,
        } => {
            let post = WebhookPost {
                url,
                headers: vec![
                    ("Content-Type", "application/json".to_string()),
                    ("X-Signature-256", signature.clone()),
                    ("Idempotency-Key", d.job.clone()),
                    ("X-Delivery-Attempt", d.attempt.to_string()),
                ],
                body,
            };
            match hooks.post(&post).await {
                Ok(status) if (200..300).contains(&status) => Outcome::Delivered(Some(status)),
                Ok(status) if is_transient_status(status) => {
                    Outcome::Failed(format!("the receiver answered {status}"), Some(status))
                }
                Ok(status) => Outcome::Rejected(
                    format!("the receiver answered {status}, which is final"),
                    Some(status),
                ),
                Err(why) => Outcome::Failed(why, None),
            }
        }
        Delivery::Mail {
            from,
            from_name,
            reply_to,
            to,
            subject,
            body,
        } => {
            let settings = match smtp.await {
                Ok(s) => s,
                Err(why) => return Outcome::Failed(format!("mail settings: {why}"), None),
            };
            if settings.host.is_empty() {
                return Outcome::Failed(
                    "no SMTP server is configured (mail control panel: smtp_host)".into(),
                    None,
                );
            }
            let message = MailMessage {
                from,
                from_name: from_name.as_deref(),
                reply_to: reply_to.as_deref(),
                to,
                subject,
                body,
                message_id: format!("<{}@outbox>", d.job),
            };
            match mail.send(&settings, &message).await {
                Ok(()) => Outcome::Delivered(None),
                Err(e) if e.permanent => Outcome::Rejected(e.reason, None),
                Err(e) => Outcome::Failed(e.reason, None),
            }
        }
    }
}

/// A [`MailTransport`] for hosts that send no mail (they claim webhooks only, see
/// `claim_due_where`): every mail fails.
pub struct NoMail;

impl MailTransport for NoMail {
    async fn send(
        &self,
        _smtp: &SmtpSettings,
        _mail: &MailMessage<'_>,
    ) -> std::result::Result<(), MailError> {
        Err(MailError::transient("this host sends no mail"))
    }
}

/// Where a delivery goes, for resuming a destination's backlog: a webhook's origin (scheme, host
/// and port, lowercased), `smtp` for every mail.
fn destination(d: &Delivery) -> String {
    match d {
        Delivery::Webhook { url, .. } => {
            let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
            let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
            let authority = authority.rsplit('@').next().unwrap_or(authority);
            format!(
                "{}://{}",
                scheme.to_ascii_lowercase(),
                authority.to_ascii_lowercase()
            )
        }
        Delivery::Mail { .. } => "smtp".into(),
    }
}

/// Record the outcome of an attempt at job `uuid` (ignored when the job was deleted, aborted or
/// already finished meanwhile).
pub fn report(ctx: &mut Ctx<'_>, uuid: &str, outcome: Outcome) -> Result<()> {
    let Some(mut job) = get(ctx, uuid)? else {
        return Ok(());
    };
    if job.status != "running" {
        return Ok(());
    }
    let now = ctx.now();
    job.result
        .insert("attempts".into(), Value::from(job.attempts));
    let mut resume = None;
    match outcome {
        Outcome::Delivered(status) => {
            unqueue(ctx, &mut job)?;
            job.status = "completed".into();
            job.finished = Some(now);
            for k in ["error", "next_attempt", "dead_letter", "permanent"] {
                job.result.remove(k);
            }
            resume = job.delivery.as_ref().map(destination);
            // A delivered mail's text is not kept: it may carry a one-time token (password
            // reset), of which the store otherwise keeps only a hash.
            if let Some(Delivery::Mail { body, .. }) = &mut job.delivery {
                body.clear();
            }
            if let Some(s) = status {
                job.result.insert("response_status".into(), Value::from(s));
            }
        }
        Outcome::Rejected(error, status) => {
            unqueue(ctx, &mut job)?;
            job.status = "failed".into();
            job.finished = Some(now);
            job.result.insert("error".into(), Value::from(error));
            job.result.insert("permanent".into(), Value::from(true));
            job.result.remove("next_attempt");
            match status {
                Some(s) => job.result.insert("response_status".into(), Value::from(s)),
                None => job.result.remove("response_status"),
            };
        }
        Outcome::Failed(error, status) => {
            job.result.insert("error".into(), Value::from(error));
            match status {
                Some(s) => job.result.insert("response_status".into(), Value::from(s)),
                None => job.result.remove("response_status"),
            };
            let first = job.first_attempt.unwrap_or(job.created);
            let since = now - first;
            let next = if since < Duration::seconds(RETRY_HORIZON_SECS) {
                job.status = "queued".into();
                Some(now + backoff(job.attempts))
            } else {
                // a dead letter: failed, but still probed now and then for a while
                job.status = "failed".into();
                job.finished = Some(now);
                job.result.insert("dead_letter".into(), Value::from(true));
                (since < Duration::days(DEAD_LETTER_PROBE_DAYS))
                    .then(|| now + Duration::seconds(DEAD_LETTER_PROBE_SECS))
            };
            match next {
                Some(next) => {
                    job.result.insert(
                        "next_attempt".into(),
                        Value::from(crate::core::clock::iso(&next)),
                    );
                    queue(ctx, &mut job, next)?;
                }
                None => {
                    job.result.remove("next_attempt");
                    unqueue(ctx, &mut job)?;
                }
            }
        }
    }
    save(ctx, &job)?;
    if let Some(dest) = resume {
        resume_destination(ctx, &dest)?;
    }
    Ok(())
}

/// A delivery to `dest` just succeeded: every retry waiting for it and every dead letter still
/// probed for it is due now (the receiver is back).
fn resume_destination(ctx: &mut Ctx<'_>, dest: &str) -> Result<()> {
    let now = ctx.now();
    let entries = ctx.scan(
        keys::OUTBOX_PREFIX,
        &keys::outbox_entry(u64::MAX, ""),
        Direction::Forward,
        usize::MAX,
    )?;
    for (key, _) in entries {
        let uuid = String::from_utf8_lossy(&key[keys::OUTBOX_PREFIX.len() + 9..]).into_owned();
        let Some(mut job) = get(ctx, &uuid)? else {
            continue;
        };
        let waiting = matches!(job.status.as_str(), "queued" | "failed");
        let later = job.due.is_some_and(|d| d > now);
        if !waiting || !later || job.delivery.as_ref().map(destination).as_deref() != Some(dest) {
            continue;
        }
        job.result.insert(
            "next_attempt".into(),
            Value::from(crate::core::clock::iso(&now)),
        );
        queue(ctx, &mut job, now)?;
        save(ctx, &job)?;
    }
    Ok(())
}

/// Delete the jobs that finished more than [`FINISHED_RETENTION_DAYS`] days ago (completed,
/// aborted, failed and no longer probed); how many. Hosts call it with the scheduled jobs.
pub fn prune(ctx: &mut Ctx<'_>) -> Result<usize> {
    let cutoff = ctx.now() - Duration::days(FINISHED_RETENTION_DAYS);
    let mut n = 0;
    for job in all(ctx)? {
        if job.due.is_none() && job.finished.is_some_and(|f| f < cutoff) {
            ctx.delete(&keys::job(&job.uuid))?;
            ctx.emit(Event::JobChanged {
                uuid: job.uuid.clone(),
                status: "deleted".into(),
            });
            n += 1;
        }
    }
    Ok(n)
}

/// How many deliveries are queued (due now or later, including ones being retried), counting
/// at most `cap`: a host's outbox backlog.
pub fn backlog(ctx: &Ctx<'_>, cap: usize) -> Result<usize> {
    let end = keys::outbox_entry(u64::MAX, "");
    Ok(ctx
        .scan(keys::OUTBOX_PREFIX, &end, Direction::Forward, cap)?
        .len())
}

/// When the next queued delivery is due (hosts sleep until then), if any is queued.
pub fn next_due(ctx: &Ctx<'_>) -> Result<Option<i64>> {
    let first = ctx.scan(
        keys::OUTBOX_PREFIX,
        &keys::outbox_entry(u64::MAX, ""),
        Direction::Forward,
        1,
    )?;
    Ok(first.first().and_then(|(k, _)| {
        let b: [u8; 8] = k
            .get(keys::OUTBOX_PREFIX.len()..keys::OUTBOX_PREFIX.len() + 8)?
            .try_into()
            .ok()?;
        i64::try_from(u64::from_be_bytes(b)).ok()
    }))
}

// ---------------------------------------------------------------- scheduled jobs

/// A scheduled job (`K:<id>`): an action run on a cron schedule; each run is a job.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScheduledJob {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its description.
    pub description: String,
    /// Whether the schedule runs it (it can always be started by hand).
    pub enabled: bool,
    /// What it does ([`SCHEDULED_ACTIONS`]).
    pub action: String,
    /// The action's parameters.
    pub params: Map<String, Value>,
    /// When it runs: a cron expression (five fields, or six with seconds first), in UTC.
    pub schedule: String,
    /// When it last ran.
    #[serde(default)]
    pub last_run: Option<DateTime<Utc>>,
    /// When the schedule runs it next (none while disabled).
    #[serde(default)]
    pub next_run: Option<DateTime<Utc>>,
}

/// A setting of a form: name, title, JSON type (`string`, `array` of strings, `integer`,
/// `boolean`), required.
pub type Setting = (&'static str, &'static str, &'static str, bool);

/// The actions a scheduled job can run: `addview` (its name), title, description, and its
/// parameters.
pub type ActionDef = (&'static str, &'static str, &'static str, &'static [Setting]);

/// The actions scheduled jobs can run.
pub const SCHEDULED_ACTIONS: &[ActionDef] = &[
    (
        "purge-recyclebin",
        "Purge the recycle bin",
        "Purge the recycle bin's items older than the retention period",
        &[],
    ),
    (
        "reindex",
        "Reindex items",
        "Reindex the catalog entries of the items of the given types",
        &[("type", "Content type", "array", true)],
    ),
    (
        "send-mail",
        "Send a mail",
        "Queue a mail in the outbox",
        &[
            ("to", "Recipient", "string", true),
            ("subject", "Subject", "string", true),
            ("message", "Message", "string", true),
        ],
    ),
    (
        "webhook",
        "Call a webhook",
        "POST a signed JSON document to a URL through the outbox",
        &[
            ("url", "URL", "string", true),
            ("secret", "Signing key", "string", true),
        ],
    ),
];

/// The next time `schedule` fires after `after` (400 naming `schedule` when it does not parse).
pub fn next_occurrence(schedule: &str, after: &DateTime<Utc>) -> Result<DateTime<Utc>> {
    let bad = |why: String| EngineError::Invalid {
        field: "schedule".into(),
        message: format!("'schedule' is not a cron expression ('{schedule}'): {why}"),
    };
    let cron = croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Optional)
        .build()
        .parse(schedule)
        .map_err(|e| bad(e.to_string()))?;
    cron.find_next_occurrence(after, false)
        .map_err(|e| bad(e.to_string()))
}

fn check_schedule(ctx: &Ctx<'_>, job: &mut ScheduledJob) -> Result<()> {
    let invalid = |field: &str, message: String| EngineError::Invalid {
        field: field.into(),
        message,
    };
    if job.title.trim().is_empty() {
        return Err(invalid("title", "'title' is required".into()));
    }
    let Some((_, _, _, params)) = SCHEDULED_ACTIONS.iter().find(|a| a.0 == job.action) else {
        return Err(invalid(
            "action",
            format!(
                "Unknown action '{}' in 'action'; known: {}",
                job.action,
                SCHEDULED_ACTIONS
                    .iter()
                    .map(|a| a.0)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    };
    for (name, _, _, required) in *params {
        let given = match job.params.get(*name) {
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Array(a)) => !a.is_empty() && a.iter().all(Value::is_string),
            _ => false,
        };
        if *required && !given {
            return Err(invalid(
                "params",
                format!("'params' needs '{name}' for the action '{}'", job.action),
            ));
        }
    }
    if let Some(k) = job
        .params
        .keys()
        .find(|k| !params.iter().any(|p| p.0 == k.as_str()))
    {
        return Err(invalid(
            "params",
            format!(
                "'params' has '{k}', which the action '{}' does not take",
                job.action
            ),
        ));
    }
    if job.action == "send-mail" {
        // the one address check (crate::automation::mail::is_address), which this module sits below
        let to = job.params.get("to").and_then(Value::as_str).unwrap_or("");
        if !crate::core::model::fields::is_email(to) {
            return Err(invalid(
                "params",
                format!("'params': 'to' must be an e-mail address, not '{to}'"),
            ));
        }
    }
    if job.action == "webhook" {
        let url = job.params.get("url").and_then(Value::as_str).unwrap_or("");
        if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() < 10 {
            return Err(invalid(
                "params",
                format!("'params': 'url' must be an http or https URL, not '{url}'"),
            ));
        }
        ctx.core
            .options
            .webhook_destinations
            .check_url(url)
            .map_err(|why| {
                invalid(
                    "params",
                    format!("'params': 'url' is refused ('{url}'): {why}"),
                )
            })?;
    }
    let next = next_occurrence(&job.schedule, &ctx.now())?;
    job.next_run = job.enabled.then_some(next);
    Ok(())
}

/// Every scheduled job, by id.
pub fn schedules(ctx: &Ctx<'_>) -> Result<Vec<ScheduledJob>> {
    ctx.values_with_prefix(keys::SCHEDULED_JOB_PREFIX)
}

/// The scheduled job `id`.
pub fn schedule(ctx: &Ctx<'_>, id: &str) -> Result<Option<ScheduledJob>> {
    ctx.get_json(&keys::scheduled_job(id))
}

/// Store `job` (validated: its action and parameters, its cron expression); `new` refuses an id
/// that is taken (400).
pub fn save_schedule(ctx: &mut Ctx<'_>, mut job: ScheduledJob, new: bool) -> Result<ScheduledJob> {
    let id_ok = !job.id.is_empty()
        && job
            .id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !id_ok {
        return Err(EngineError::Invalid {
            field: "id".into(),
            message: format!("'id' must be letters, digits, '-' or '_', not '{}'", job.id),
        });
    }
    if new && schedule(ctx, &job.id)?.is_some() {
        return Err(EngineError::bad_request(format!(
            "A scheduled job '{}' exists already",
            job.id
        )));
    }
    check_schedule(ctx, &mut job)?;
    ctx.put_json(&keys::scheduled_job(&job.id), &job)?;
    ctx.emit(Event::ScheduleChanged { id: job.id.clone() });
    Ok(job)
}

/// What a caller sets of a scheduled job: on creation `id`, `title`, `action` and `schedule`
/// are required (enabled by default); on an update, only what is given changes.
#[derive(Debug, Clone, Default)]
pub struct ScheduleChanges {
    /// Its id (letters, digits, `-`, `_`); on an update it must be the job's own.
    pub id: Option<String>,
    /// Its title.
    pub title: Option<String>,
    /// Its description.
    pub description: Option<String>,
    /// Whether the schedule runs it.
    pub enabled: Option<bool>,
    /// What it runs ([`SCHEDULED_ACTIONS`]).
    pub action: Option<String>,
    /// The action's parameters.
    pub params: Option<Map<String, Value>>,
    /// A cron expression.
    pub schedule: Option<String>,
}

fn required(v: Option<String>, field: &str) -> Result<String> {
    v.ok_or_else(|| EngineError::Invalid {
        field: field.into(),
        message: format!("'{field}' is required"),
    })
}

/// Create a scheduled job from `c` ([`ScheduleChanges`]); the stored job.
pub fn create_schedule(ctx: &mut Ctx<'_>, c: ScheduleChanges) -> Result<ScheduledJob> {
    save_schedule(
        ctx,
        ScheduledJob {
            id: required(c.id, "id")?,
            title: required(c.title, "title")?,
            description: c.description.unwrap_or_default(),
            enabled: c.enabled.unwrap_or(true),
            action: required(c.action, "action")?,
            params: c.params.unwrap_or_default(),
            schedule: required(c.schedule, "schedule")?,
            last_run: None,
            next_run: None,
        },
        true,
    )
}

/// Change `job` by `c` (what is given; its id cannot change) and store it.
pub fn update_schedule(ctx: &mut Ctx<'_>, mut job: ScheduledJob, c: ScheduleChanges) -> Result<()> {
    if c.id.as_ref().is_some_and(|given| *given != job.id) {
        return Err(EngineError::Invalid {
            field: "id".into(),
            message: format!("'id' cannot change (it is '{}')", job.id),
        });
    }
    job.title = c.title.unwrap_or(job.title);
    job.description = c.description.unwrap_or(job.description);
    job.enabled = c.enabled.unwrap_or(job.enabled);
    job.action = c.action.unwrap_or(job.action);
    job.params = c.params.unwrap_or(job.params);
    job.schedule = c.schedule.unwrap_or(job.schedule);
    save_schedule(ctx, job, false)?;
    Ok(())
}

/// Delete the scheduled job `id` (its past runs stay in `@jobs`).
pub fn delete_schedule(ctx: &mut Ctx<'_>, id: &str) -> Result<()> {
    ctx.delete(&keys::scheduled_job(id))?;
    ctx.emit(Event::ScheduleChanged { id: id.to_string() });
    Ok(())
}

/// Run the scheduled job `job` now: its run is a job (finished at once for work done in the
/// transaction, queued in the outbox for mail and webhooks); the run's uuid.
pub fn run_schedule(ctx: &mut Ctx<'_>, job: &mut ScheduledJob) -> Result<String> {
    let mut params = job.params.clone();
    params.remove("secret");
    params.insert("scheduled_job".into(), Value::from(job.id.clone()));
    params.insert("action".into(), Value::from(job.action.clone()));
    let run = new_job(ctx, &job.title, &job.description, params);
    let text = |k: &str| {
        job.params
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let uuid = match job.action.as_str() {
        "purge-recyclebin" => {
            let n = crate::content::recyclebin::purge_expired(ctx)?;
            let mut result = Map::new();
            result.insert("purged".into(), Value::from(n));
            record_finished(ctx, run, true, result)?
        }
        "reindex" => {
            let types: Vec<String> = match job.params.get("type") {
                Some(Value::String(t)) => vec![t.clone()],
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect(),
                _ => Vec::new(),
            };
            let root = crate::content::tree::root(ctx)?;
            let mut n = 0usize;
            for obj in crate::content::tree::subtree(ctx, &root)? {
                if types.contains(&obj.type_name) {
                    crate::catalog::reindex(ctx, &obj.uid)?;
                    n += 1;
                }
            }
            let mut result = Map::new();
            result.insert("reindexed".into(), Value::from(n));
            record_finished(ctx, run, true, result)?
        }
        "send-mail" => {
            let from = crate::site::configuration::email_from_address(ctx)?;
            enqueue(
                ctx,
                run,
                Delivery::Mail {
                    from,
                    from_name: crate::site::configuration::email_from_name(ctx)?,
                    reply_to: None,
                    to: vec![text("to")],
                    subject: text("subject"),
                    body: text("message"),
                },
            )?
        }
        _ => {
            let body = serde_json::json!({
                "scheduled_job": job.id,
                "time": crate::core::clock::iso(&ctx.now()),
            })
            .to_string();
            let signature = sign(&text("secret"), body.as_bytes());
            enqueue(
                ctx,
                run,
                Delivery::Webhook {
                    url: text("url"),
                    body,
                    signature,
                },
            )?
        }
    };
    let now = ctx.now();
    job.last_run = Some(now);
    if job.enabled {
        job.next_run = Some(next_occurrence(&job.schedule, &now)?);
    }
    ctx.put_json(&keys::scheduled_job(&job.id), &*job)?;
    ctx.emit(Event::ScheduleChanged { id: job.id.clone() });
    Ok(uuid)
}

/// Run every enabled scheduled job that is due; how many ran. Hosts call this on a timer.
pub fn run_due_schedules(ctx: &mut Ctx<'_>) -> Result<usize> {
    let now = ctx.now();
    let mut ran = 0;
    for mut job in schedules(ctx)? {
        if job.enabled && job.next_run.is_some_and(|t| t <= now) {
            run_schedule(ctx, &mut job)?;
            ran += 1;
        }
    }
    Ok(ran)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cron_expressions_have_five_or_six_fields() {
        let t = chrono::DateTime::parse_from_rfc3339("2026-01-01T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            crate::core::clock::iso(&next_occurrence("0 0 * * *", &t).unwrap()),
            "2026-01-02T00:00:00+00:00"
        );
        assert_eq!(
            crate::core::clock::iso(&next_occurrence("*/10 * * * * *", &t).unwrap()),
            "2026-01-01T12:00:10+00:00"
        );
        assert!(next_occurrence("every tuesday", &t).is_err());
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        assert_eq!(backoff(1), Duration::seconds(1));
        assert_eq!(backoff(2), Duration::seconds(2));
        assert_eq!(backoff(4), Duration::seconds(8));
        assert_eq!(backoff(30), Duration::seconds(MAX_BACKOFF_SECS));
    }

    #[test]
    fn signature_is_hmac_sha256_hex() {
        // RFC 4231 test case 2.
        assert_eq!(
            sign("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
