//! Delivery of the engine's outbox ([`engine::jobs`]): the engine decides what is due, how often
//! to retry and when to give up; this task only performs the I/O. Webhooks are POSTed with
//! reqwest (`Content-Type: application/json`, `X-Signature-256: sha256=<hex HMAC>`,
//! `Idempotency-Key: <job uuid>`, `X-Delivery-Attempt`); a 2xx answer is a delivery, anything
//! else (or no answer within [`HTTP_TIMEOUT`]) a failed attempt; `https` URLs are checked against
//! the system's certificates (rustls). Mails go over SMTP with lettre (TLS on port 465, STARTTLS
//! elsewhere when the server offers it), to the server of the mail control panel (`smtp_host`, `smtp_port`, and `smtp_userid` /
//! `smtp_pass` when set), with `Message-ID: <job uuid@outbox>` so repeats can be recognised.

use std::sync::Arc;
use std::time::Duration;

use engine::{Delivery, DueDelivery, Outcome};
use engine::{Engine, Store};
use lettre::message::header::ContentType;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use tokio::sync::Notify;
use tracing::warn;

/// How often the task looks for due deliveries when no commit woke it (retries that come due,
/// leases that end).
pub const POLL: Duration = Duration::from_millis(250);
/// How long a webhook receiver may take to answer.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(10);
/// Most deliveries claimed at once.
const BATCH: usize = 32;

/// How often the scheduled jobs are looked at.
pub const SCHEDULE_TICK: Duration = Duration::from_secs(1);

/// Run the scheduled jobs of `engine` when they are due, for ever (each run is a job; the
/// engine evaluates the cron expressions).
pub async fn run_schedules<S: Store + Send + Sync + 'static>(engine: Arc<Engine<S>>) {
    let mut every = tokio::time::interval(SCHEDULE_TICK);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let e = engine.clone();
        match tokio::task::spawn_blocking(move || e.run_due_schedules()).await {
            Ok(Ok(0)) => {}
            Ok(Ok(n)) => tracing::info!(runs = n, "scheduled jobs ran"),
            // another server sharing the database ran them at the same moment
            Ok(Err(err)) if is_conflict(&err) => {
                tracing::debug!(error = %err, "scheduled jobs: another server ran them");
            }
            Ok(Err(err)) => warn!(error = %err, "scheduled jobs: a run failed"),
            Err(err) => warn!(error = %err, "scheduled jobs: the task failed"),
        }
    }
}

/// Deliver the outbox of `engine` for ever; `wake` is notified after commits that queued
/// deliveries ([`engine::EngineOptions::outbox_notify`]).
pub async fn run<S: Store + Send + Sync + 'static>(engine: Arc<Engine<S>>, wake: Arc<Notify>) {
    let http = match reqwest::Client::builder().timeout(HTTP_TIMEOUT).build() {
        Ok(c) => c,
        Err(e) => {
            warn!(error = %e, "outbox: no HTTP client; webhooks are not delivered");
            return;
        }
    };
    loop {
        let e = engine.clone();
        let due = match tokio::task::spawn_blocking(move || e.claim_deliveries(BATCH)).await {
            Ok(Ok(d)) => d,
            // Servers sharing a database with optimistic writers: another one claimed (or
            // changed) the same jobs at the same moment; its claim stands, ours is not made.
            Ok(Err(err)) if is_conflict(&err) => {
                tracing::debug!(error = %err, "outbox: claim met another server's; trying again");
                Vec::new()
            }
            Ok(Err(err)) => {
                warn!(error = %err, "outbox: claiming deliveries failed");
                Vec::new()
            }
            Err(err) => {
                warn!(error = %err, "outbox: the claim task failed");
                Vec::new()
            }
        };
        if due.is_empty() {
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(POLL) => {}
            }
            continue;
        }
        let mut tasks = Vec::new();
        for d in due {
            let http = http.clone();
            let engine = engine.clone();
            tasks.push(tokio::spawn(async move {
                let outcome = perform(&engine, &http, &d).await;
                if let Outcome::Failed(why, _) = &outcome {
                    warn!(job = %d.job, attempt = d.attempt, error = %why, "outbox: delivery failed");
                }
                (d.job, outcome)
            }));
        }
        let mut outcomes = Vec::new();
        for t in tasks {
            if let Ok(o) = t.await {
                outcomes.push(o);
            }
        }
        // One transaction for the whole batch; an outcome that is not recorded leaves its job
        // leased, and it is attempted again when the lease ends (at least once).
        let e = engine.clone();
        match tokio::task::spawn_blocking(move || e.report_deliveries(outcomes)).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => warn!(error = %err, "outbox: recording outcomes failed"),
            Err(err) => warn!(error = %err, "outbox: the report task failed"),
        }
    }
}

/// Whether `e` is an optimistic store's write conflict (another server's transaction won).
fn is_conflict(e: &engine::EngineError) -> bool {
    matches!(
        e,
        engine::EngineError::Store(engine::StoreError::Conflict(_))
    )
}

async fn perform<S: Store + Send + Sync + 'static>(
    engine: &Arc<Engine<S>>,
    http: &reqwest::Client,
    d: &DueDelivery,
) -> Outcome {
    match &d.delivery {
        Delivery::Webhook {
            url,
            body,
            signature,
        } => {
            let res = http
                .post(url)
                .header("Content-Type", "application/json")
                .header("X-Signature-256", signature)
                .header("Idempotency-Key", &d.job)
                .header("X-Delivery-Attempt", d.attempt.to_string())
                .body(body.clone())
                .send()
                .await;
            match res {
                Ok(r) if r.status().is_success() => Outcome::Delivered(Some(r.status().as_u16())),
                Ok(r) => Outcome::Failed(
                    format!("the receiver answered {}", r.status()),
                    Some(r.status().as_u16()),
                ),
                Err(e) => Outcome::Failed(format!("no answer: {e}"), None),
            }
        }
        Delivery::Mail {
            from,
            to,
            subject,
            body,
        } => {
            let e = engine.clone();
            let settings = match tokio::task::spawn_blocking(move || e.smtp_settings()).await {
                Ok(Ok(s)) => s,
                Ok(Err(err)) => return Outcome::Failed(format!("mail settings: {err}"), None),
                Err(err) => return Outcome::Failed(format!("mail settings: {err}"), None),
            };
            match send_mail(settings, &d.job, from, to, subject, body).await {
                Ok(()) => Outcome::Delivered(None),
                Err(why) => Outcome::Failed(why, None),
            }
        }
    }
}

async fn send_mail(
    (host, port, user, pass): (String, u16, String, String),
    job: &str,
    from: &str,
    to: &[String],
    subject: &str,
    body: &str,
) -> Result<(), String> {
    if host.is_empty() {
        return Err("no SMTP server is configured (mail control panel: smtp_host)".into());
    }
    let mut msg = Message::builder()
        .from(from.parse().map_err(|e| format!("sender '{from}': {e}"))?)
        .subject(subject)
        .message_id(Some(format!("<{job}@outbox>")))
        .header(ContentType::TEXT_PLAIN);
    for r in to {
        msg = msg.to(r.parse().map_err(|e| format!("recipient '{r}': {e}"))?);
    }
    let msg = msg.body(body.to_string()).map_err(|e| e.to_string())?;
    // Port 465: TLS from the start; otherwise STARTTLS when the server offers it.
    let tls = TlsParameters::new(host.clone()).map_err(|e| format!("TLS: {e}"))?;
    let mut transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
        .port(port)
        .tls(if port == 465 {
            Tls::Wrapper(tls)
        } else {
            Tls::Opportunistic(tls)
        })
        .timeout(Some(HTTP_TIMEOUT));
    if !user.is_empty() {
        transport = transport.credentials(Credentials::new(user, pass));
    }
    transport
        .build()
        .send(msg)
        .await
        .map(|_| ())
        .map_err(|e| format!("SMTP: {e}"))
}
