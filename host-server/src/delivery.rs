//! Delivery of the engine's outbox ([`engine::jobs`]): the engine decides what is due, how often
//! to retry and when to give up, and what each delivery sends ([`engine::jobs::perform`]: the
//! webhook's headers, the mail's `Message-ID`, what counts as delivered); this task only performs
//! the I/O through the engine's transport traits. Webhooks are POSTed with reqwest (no answer
//! within [`HTTP_TIMEOUT`] is a failed attempt; `https` URLs are checked against the system's
//! certificates, rustls). Mails go over SMTP with lettre (TLS on port 465, STARTTLS elsewhere
//! when the server offers it), to the server of the mail control panel
//! ([`Engine::smtp_settings`]).
//!
//! Webhooks keep to the destination policy ([`DestinationPolicy`], `--webhook-allow`): the
//! engine checks a URL when its rule is saved; here every address its host resolves to is
//! checked again before the call, and the connection goes only to checked addresses (the
//! client's resolver refuses the others, so a name cannot change its answer in between).
//! Redirects are followed only to the same scheme, host and port (at most 5); any other is
//! the receiver's final answer. Errors recorded in `@jobs` do not tell a refused connection
//! from one that timed out ("could not connect to the receiver"), so they map no ports.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use engine::{DestinationPolicy, Engine, Store};
use engine::{
    DueDelivery, MailError, MailMessage, MailTransport, Outcome, SmtpSettings, WebhookPost,
    WebhookTransport,
};
use lettre::message::header::ContentType;
use lettre::message::Mailbox;
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
/// Finished jobs past their retention ([`engine::Engine::prune_jobs`]) are pruned at start and
/// then once an hour (every this many schedule ticks).
const PRUNE_EVERY_TICKS: u64 = 3600;

/// Run the scheduled jobs of `engine` when they are due, for ever (each run is a job; the
/// engine evaluates the cron expressions).
pub async fn run_schedules<S: Store + Send + Sync + 'static>(engine: Arc<Engine<S>>) {
    let mut every = tokio::time::interval(SCHEDULE_TICK);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ticks: u64 = 0;
    loop {
        every.tick().await;
        if ticks.is_multiple_of(PRUNE_EVERY_TICKS) {
            let e = engine.clone();
            match tokio::task::spawn_blocking(move || e.prune_jobs()).await {
                Ok(Ok(0)) => {}
                Ok(Ok(n)) => tracing::info!(jobs = n, "finished jobs past their retention pruned"),
                Ok(Err(err)) if is_conflict(&err) => {}
                Ok(Err(err)) => warn!(error = %err, "pruning finished jobs failed"),
                Err(err) => warn!(error = %err, "pruning finished jobs: the task failed"),
            }
        }
        ticks = ticks.wrapping_add(1);
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

/// Most redirects followed (same scheme, host and port only).
const MAX_REDIRECTS: usize = 5;

/// Deliver the outbox of `engine` for ever; `wake` is notified after commits that queued
/// deliveries ([`engine::EngineOptions::outbox_notify`]); webhooks go only where the engine's
/// destination policy allows ([`engine::EngineOptions::webhook_destinations`]).
pub async fn run<S: Store + Send + Sync + 'static>(engine: Arc<Engine<S>>, wake: Arc<Notify>) {
    let policy = engine.options().webhook_destinations.clone();
    let http = match webhook_client(policy.clone()) {
        Ok(c) => Arc::new(Http { client: c, policy }),
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
                crate::metrics::delivery(matches!(outcome, Outcome::Delivered(_)));
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

/// The HTTP client of webhooks: a timeout, redirects only within the same origin, and a
/// resolver that hands out only addresses `policy` allows.
pub fn webhook_client(policy: DestinationPolicy) -> reqwest::Result<reqwest::Client> {
    let redirects = reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt.previous().first().is_some_and(|first| {
            first.scheme() == attempt.url().scheme()
                && first.host_str() == attempt.url().host_str()
                && first.port_or_known_default() == attempt.url().port_or_known_default()
        });
        if same_origin && attempt.previous().len() <= MAX_REDIRECTS {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    reqwest::Client::builder()
        .timeout(HTTP_TIMEOUT)
        .redirect(redirects)
        .dns_resolver(Arc::new(PolicyResolver(policy)))
        .build()
}

/// Resolves a webhook's host and refuses it when any of its addresses is one the policy
/// refuses (the connection then cannot reach it, whatever the name answers later).
struct PolicyResolver(DestinationPolicy);

impl reqwest::dns::Resolve for PolicyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.0.clone();
        Box::pin(async move {
            let addrs = resolve_checked(&policy, name.as_str())
                .await
                .map_err(|why| -> Box<dyn std::error::Error + Send + Sync> { why.into() })?;
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// The addresses `host` resolves to, when the policy allows every one; otherwise why not.
async fn resolve_checked(
    policy: &DestinationPolicy,
    host: &str,
) -> Result<Vec<SocketAddr>, String> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, 0))
        .await
        .map_err(|_| "could not connect to the receiver".to_string())?
        .collect();
    for a in &addrs {
        policy
            .check_ip(a.ip())
            .map_err(|why| format!("refused by the webhook destination policy: '{host}': {why}"))?;
    }
    Ok(addrs)
}

/// Webhook calls with reqwest (a 2xx answer is a delivery: [`engine::jobs::perform`] decides).
struct Http {
    client: reqwest::Client,
    policy: DestinationPolicy,
}

impl Http {
    /// `Ok` when the policy allows where `url` goes (its address, or every address its name
    /// resolves to); otherwise why not.
    async fn check(&self, url: &str) -> Result<(), String> {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
        let refused = |why: String| format!("refused by the webhook destination policy: {why}");
        match parsed.host() {
            Some(url::Host::Ipv4(a)) => self.policy.check_ip(IpAddr::V4(a)).map_err(refused),
            Some(url::Host::Ipv6(a)) => self.policy.check_ip(IpAddr::V6(a)).map_err(refused),
            Some(url::Host::Domain(name)) => {
                self.policy.check_url(url).map_err(refused)?;
                resolve_checked(&self.policy, name).await.map(|_| ())
            }
            None => Err("the URL has no host".into()),
        }
    }
}

impl WebhookTransport for Http {
    async fn post(&self, post: &WebhookPost<'_>) -> Result<u16, String> {
        self.check(post.url).await?;
        let mut request = self.client.post(post.url);
        for (name, value) in &post.headers {
            request = request.header(*name, value);
        }
        request
            .body(post.body.to_string())
            .send()
            .await
            .map(|r| r.status().as_u16())
            .map_err(|e| {
                // Refused, unreachable, timed out before or after connecting: one text, so the
                // job record does not tell which ports are open.
                if e.is_connect() || e.is_timeout() {
                    "could not connect to the receiver".to_string()
                } else {
                    "no answer from the receiver".to_string()
                }
            })
    }
}

/// Mail over SMTP with lettre: TLS on port 465, STARTTLS elsewhere when the server offers it.
struct Smtp;

impl MailTransport for Smtp {
    async fn send(&self, smtp: &SmtpSettings, mail: &MailMessage<'_>) -> Result<(), MailError> {
        // An address that does not parse never will: a permanent failure.
        let mailbox = |what: &str, a: &str| -> Result<lettre::Address, MailError> {
            a.parse()
                .map_err(|e| MailError::permanent(format!("{what} '{a}': {e}")))
        };
        let from = Mailbox::new(
            mail.from_name.map(str::to_string),
            mailbox("sender", mail.from)?,
        );
        let mut msg = Message::builder()
            .from(from)
            .subject(mail.subject)
            .message_id(Some(mail.message_id.clone()))
            .header(ContentType::TEXT_PLAIN);
        if let Some(r) = mail.reply_to {
            msg = msg.reply_to(Mailbox::new(None, mailbox("reply-to", r)?));
        }
        for r in mail.to {
            msg = msg.to(Mailbox::new(None, mailbox("recipient", r)?));
        }
        let msg = msg
            .body(mail.body.to_string())
            .map_err(|e| MailError::permanent(e.to_string()))?;
        // Port 465: TLS from the start; otherwise STARTTLS when the server offers it.
        let tls = TlsParameters::new(smtp.host.clone())
            .map_err(|e| MailError::transient(format!("TLS: {e}")))?;
        let mut transport =
            AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(smtp.host.clone())
                .port(smtp.port)
                .tls(if smtp.port == 465 {
                    Tls::Wrapper(tls)
                } else {
                    Tls::Opportunistic(tls)
                })
                .timeout(Some(HTTP_TIMEOUT));
        if !smtp.user.is_empty() {
            transport =
                transport.credentials(Credentials::new(smtp.user.clone(), smtp.password.clone()));
        }
        transport.build().send(msg).await.map(|_| ()).map_err(|e| {
            // a 5xx reply (unknown mailbox, refused sender) is final; the rest is retried
            if e.is_permanent() {
                MailError::permanent(format!("SMTP: {e}"))
            } else {
                MailError::transient(format!("SMTP: {e}"))
            }
        })
    }
}

/// Perform `d` with this host's transports; the SMTP settings are read (on the blocking pool)
/// only for a mail.
async fn perform<S: Store + Send + Sync + 'static>(
    engine: &Arc<Engine<S>>,
    http: &Http,
    d: &DueDelivery,
) -> Outcome {
    let e = engine.clone();
    let smtp = async move {
        match tokio::task::spawn_blocking(move || e.smtp_settings()).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(err)) => Err(err.to_string()),
            Err(err) => Err(err.to_string()),
        }
    };
    engine::deliver(d, http, &Smtp, smtp).await
}
