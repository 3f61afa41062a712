//! The [`Engine`]: the facade on top of everything. It holds the store, the engine-wide state
//! ([`Core`]) and the event subscribers ([`Subscribers`]), and offers the one entry point
//! [`Engine::handle`] (plus site creation and bulk writes).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::api;
use crate::core::error::{EngineError, ErrorStyle, Result};
use crate::core::http::{AnswerKind, BodyKind, Request, Response, RouteInfo, ThrottleClass};
use crate::core::keys;
use crate::core::security::Principal;
use crate::core::store::{savepoint, Store, StoreError};
use crate::people::auth::Credentials;
use crate::runtime::cache::ResponseCache;
use crate::runtime::commit::Pending;
use crate::runtime::context::{Ctx, Txn};
use crate::runtime::occ::{Buffered, CommitLog, SnapshotTxn};
pub use crate::runtime::state::{Core, EngineOptions};
#[cfg(any(test, feature = "internals"))]
use crate::runtime::subscriber::Subscriber;
use crate::runtime::subscriber::Subscribers;
use crate::site::setup::{self, SiteSetup};

/// The content engine over a store `S`.
pub struct Engine<S: Store> {
    store: S,
    core: Core,
    subscribers: Subscribers,
    migrated: crate::site::migrations::Report,
    /// The recent commits, for validating writes that ran in parallel
    /// ([`crate::runtime::occ`]; kept when [`EngineOptions::parallel_writes`] is on).
    commits: CommitLog,
    /// How many prepared writes were found stale at commit and ran again
    /// ([`Engine::prepared_reruns`]).
    reruns: std::sync::atomic::AtomicU64,
    /// How requests met an optimistic store's conflicts ([`Engine::conflict_stats`]).
    conflicts: ConflictCounters,
}

impl<S: Store> Engine<S> {
    /// An engine over `store`. A site of an older schema version is upgraded in place first
    /// (`crate::site::migrations`, one write transaction; see [`Engine::migration_report`]); a store
    /// written by a newer (or unknown) schema version is refused.
    pub fn new(store: S, options: EngineOptions) -> Result<Self> {
        let engine = Engine {
            store,
            core: Core::new(options),
            subscribers: crate::site::registry::builtin(),
            migrated: crate::site::migrations::Report::default(),
            commits: CommitLog::default(),
            reruns: std::sync::atomic::AtomicU64::new(0),
            conflicts: ConflictCounters::default(),
        };
        let mut engine = engine;
        engine.migrated = engine.migrate()?;
        engine.sync_vectors()?;
        if engine.core.caches_enabled() {
            let ctx = Ctx::new(&engine.core, Txn::Read(engine.store.begin_read()?), "");
            engine.core.responses.observe(ctx.generation()?);
        }
        if engine.core.options.parallel_writes {
            let generation = crate::core::generation::read(engine.store.begin_read()?.as_ref())?;
            engine.commits.start_at(generation);
        }
        Ok(engine)
    }

    /// Register an event subscriber after the built-in ones ([`crate::site::registry::builtin`]),
    /// before serving requests (the engine's own tests; feature `internals`).
    #[cfg(any(test, feature = "internals"))]
    pub fn subscribe(&mut self, s: Box<dyn Subscriber>) {
        self.subscribers.register(s);
    }

    /// Remove the subscriber called `name`, for benchmarks that measure what one costs (the
    /// records it owns are then no longer kept: never on a real site). Whether there was one.
    #[cfg(any(test, feature = "internals"))]
    pub fn unsubscribe(&mut self, name: &str) -> bool {
        self.subscribers.remove(name)
    }

    /// The names of the event subscribers, in delivery order.
    pub fn subscriber_names(&self) -> Vec<&'static str> {
        self.subscribers.names()
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Engine-wide state (the engine's own tests and examples; feature `internals`).
    #[cfg(any(test, feature = "internals"))]
    pub fn core(&self) -> &Core {
        &self.core
    }

    /// How this engine was set up.
    pub fn options(&self) -> &EngineOptions {
        &self.core.options
    }

    /// The store generation of the last commit this engine published, when its caches are on
    /// (hosts compare it with the store's to learn of other writers' commits).
    pub fn committed_generation(&self) -> Option<u64> {
        self.core.committed_generation()
    }

    /// A fresh random token (32 hex digits) from the engine's entropy source.
    pub fn random_token(&self) -> String {
        self.core.entropy.uuid().simple().to_string()
    }

    /// Log `line` to the host's error log, if it gave one ([`EngineOptions::error_log`]).
    pub fn log_error(&self, line: &str) {
        if let Some(log) = &self.core.options.error_log {
            log(line);
        }
    }

    /// Upgrade the store's site to this build's schema if it is older (see
    /// `crate::site::migrations`); refuse a newer or unknown one. [`Engine::new`] does this; a host
    /// may call it again (say, after reloading the store from elsewhere): it does nothing to a
    /// current store.
    pub fn migrate(&self) -> Result<crate::site::migrations::Report> {
        {
            let ctx = Ctx::new(&self.core, Txn::Read(self.store.begin_read()?), "");
            if !crate::site::migrations::needed(&ctx)? {
                let v = crate::site::migrations::check(&ctx)?;
                return Ok(crate::site::migrations::Report {
                    from: v,
                    to: v,
                    steps: Vec::new(),
                });
            }
        }
        let _writing = self.core.responses.writing();
        let mut ctx = Ctx::new(&self.core, Txn::Write(self.store.begin_write()?), "");
        let report = crate::site::migrations::run(&mut ctx)?;
        self.publish(ctx.commit()?);
        Ok(report)
    }

    /// What [`Engine::new`] migrated when it opened the store (hosts log it).
    pub fn migration_report(&self) -> &crate::site::migrations::Report {
        &self.migrated
    }

    /// Whether a site exists in the store.
    pub fn site_exists(&self) -> Result<bool> {
        Ok(self.store.begin_read()?.get(keys::SCHEMA)?.is_some())
    }

    /// Create the site (root object and admin user) in one transaction.
    pub fn create_site(&self, setup: &SiteSetup) -> Result<()> {
        let _writing = self.core.responses.writing();
        let txn = self.store.begin_write()?;
        let mut ctx = Ctx::new(&self.core, Txn::Write(txn), "");
        setup::create(&mut ctx, setup)?;
        self.subscribers.dispatch(&mut ctx)?;
        crate::ai::related::sync(&mut ctx)?;
        self.publish(ctx.commit()?);
        self.core
            .remember_profile(crate::site::profile::SiteProfile::from_profiles(
                &setup.profiles,
            ));
        Ok(())
    }

    /// Make the stored embedding vectors those of the configured model
    /// (`crate::ai::related::sync`); [`Engine::new`] does this. How many were recomputed.
    pub fn sync_vectors(&self) -> Result<usize> {
        if self.core.options.embedder.is_none() || !self.site_exists()? {
            return Ok(0);
        }
        {
            let ctx = Ctx::new(&self.core, Txn::Read(self.store.begin_read()?), "");
            let id = self.core.options.embedder.as_ref().map(|e| e.id());
            if ctx.get(keys::VECTOR_MODEL)?.as_deref() == id.as_deref().map(str::as_bytes) {
                return Ok(0);
            }
        }
        let _writing = self.core.responses.writing();
        let mut ctx = Ctx::new(&self.core, Txn::Write(self.store.begin_write()?), "");
        let n = crate::ai::related::sync(&mut ctx)?;
        self.publish(ctx.commit()?);
        Ok(n)
    }

    /// Run `f` in one write transaction with the rights of the site's admin (bulk loading and
    /// seeding in the engine's own examples and tests; feature `internals`).
    #[cfg(any(test, feature = "internals"))]
    pub fn with_write<T>(&self, f: impl FnOnce(&mut Ctx<'_>) -> Result<T>) -> Result<T> {
        self.write(f)
    }

    /// Run `f` in one write transaction with the rights of the site's admin, then deliver its
    /// events and publish the commit.
    pub(crate) fn write<T>(&self, f: impl FnOnce(&mut Ctx<'_>) -> Result<T>) -> Result<T> {
        let _writing = self.core.responses.writing();
        let txn = self.store.begin_write()?;
        let mut ctx = Ctx::new(&self.core, Txn::Write(txn), "");
        let out = f(&mut ctx)?;
        self.subscribers.dispatch(&mut ctx)?;
        self.publish(ctx.commit()?);
        Ok(out)
    }

    /// Log in the user an external identity provider vouched for (the host ran the protocol and
    /// verified the ID token): `crate::people::auth::external::log_in` in one write transaction;
    /// the login token.
    pub fn log_in_external(
        &self,
        identity: &crate::people::auth::external::ExternalIdentity,
    ) -> Result<String> {
        self.write(|ctx| crate::people::auth::external::log_in(ctx, identity))
    }

    /// Purge the recycle bin's items older than the site's retention period
    /// (`crate::content::recyclebin::purge_expired`), in one write transaction; how many were purged (0
    /// when there is no site yet). There is no job scheduler yet: host-server runs this on a
    /// timer and the browser host when it opens a site.
    pub fn purge_expired_recyclebin(&self) -> Result<usize> {
        if !self.site_exists()? {
            return Ok(0);
        }
        self.write(crate::content::recyclebin::purge_expired)
    }

    /// Claim up to `limit` outbox deliveries that are due now (`crate::automation::jobs::claim_due`): the
    /// host performs them and reports the outcomes with [`Engine::report_deliveries`]. Empty
    /// when there is no site yet. A read transaction finds out first whether any is due, so an
    /// idle poll does not take the writer.
    pub fn claim_deliveries(
        &self,
        limit: usize,
    ) -> Result<Vec<crate::automation::jobs::DueDelivery>> {
        let due = self.next_delivery_due()?;
        let now = self.core.clock.now().timestamp_millis();
        if due.is_none_or(|d| d > now) {
            return Ok(Vec::new());
        }
        self.write(|ctx| crate::automation::jobs::claim_due(ctx, limit))
    }

    /// [`Engine::claim_deliveries`] for webhooks only: mails stay queued (the browser host sends
    /// no mail).
    pub fn claim_webhook_deliveries(
        &self,
        limit: usize,
    ) -> Result<Vec<crate::automation::jobs::DueDelivery>> {
        let due = self.next_delivery_due()?;
        let now = self.core.clock.now().timestamp_millis();
        if due.is_none_or(|d| d > now) {
            return Ok(Vec::new());
        }
        self.write(|ctx| {
            crate::automation::jobs::claim_due_where(ctx, limit, |d| {
                matches!(d, crate::automation::jobs::Delivery::Webhook { .. })
            })
        })
    }

    /// Record the outcomes of delivery attempts (`crate::automation::jobs::report`), in one transaction:
    /// each done, or retried after a backoff, or failed for good.
    pub fn report_deliveries(
        &self,
        outcomes: Vec<(String, crate::automation::jobs::Outcome)>,
    ) -> Result<()> {
        self.write(|ctx| {
            for (job, outcome) in outcomes {
                crate::automation::jobs::report(ctx, &job, outcome)?;
            }
            Ok(())
        })
    }

    /// When the next outbox delivery is due (milliseconds since the epoch), if any is queued.
    pub fn next_delivery_due(&self) -> Result<Option<i64>> {
        if !self.site_exists()? {
            return Ok(None);
        }
        let txn = self.store.begin_read()?;
        let ctx = Ctx::new(&self.core, Txn::Read(txn), "");
        crate::automation::jobs::next_due(&ctx)
    }

    /// How many outbox deliveries are queued (at most `cap` counted; 0 when there is no site).
    pub fn outbox_backlog(&self, cap: usize) -> Result<usize> {
        if !self.site_exists()? {
            return Ok(0);
        }
        let txn = self.store.begin_read()?;
        let ctx = Ctx::new(&self.core, Txn::Read(txn), "");
        crate::automation::jobs::backlog(&ctx, cap)
    }

    /// The response cache since start: how many requests it answered, how many cacheable ones
    /// it had no answer for (a host's hit ratio; both 0 while the cache is off).
    pub fn response_cache_lookups(&self) -> (u64, u64) {
        self.core.responses.lookups()
    }

    /// Run the scheduled jobs that are due (`crate::automation::jobs::run_due_schedules`); how many ran.
    /// A read transaction finds out first whether any is due, so an idle tick does not take the
    /// writer.
    pub fn run_due_schedules(&self) -> Result<usize> {
        if !self.site_exists()? {
            return Ok(0);
        }
        {
            let txn = self.store.begin_read()?;
            let ctx = Ctx::new(&self.core, Txn::Read(txn), "");
            let now = ctx.now();
            let due = crate::automation::jobs::schedules(&ctx)?
                .iter()
                .any(|j| j.enabled && j.next_run.is_some_and(|t| t <= now));
            if !due {
                return Ok(0);
            }
        }
        self.write(crate::automation::jobs::run_due_schedules)
    }

    /// Delete the jobs that finished more than `crate::automation::jobs::FINISHED_RETENTION_DAYS`
    /// days ago (`crate::automation::jobs::prune`); how many. A read transaction first, so a
    /// store with nothing to prune takes no writer. Hosts call it now and then (host-server: hourly).
    pub fn prune_jobs(&self) -> Result<usize> {
        if !self.site_exists()? {
            return Ok(0);
        }
        {
            let txn = self.store.begin_read()?;
            let ctx = Ctx::new(&self.core, Txn::Read(txn), "");
            let cutoff = ctx.now()
                - chrono::Duration::days(crate::automation::jobs::FINISHED_RETENTION_DAYS);
            let stale = crate::automation::jobs::all(&ctx)?
                .iter()
                .any(|j| j.due.is_none() && j.finished.is_some_and(|f| f < cutoff));
            if !stale {
                return Ok(0);
            }
        }
        self.write(crate::automation::jobs::prune)
    }

    /// The SMTP server of the mail control panel, which outbox mails go through
    /// ([`crate::automation::jobs::perform`]).
    pub fn smtp_settings(&self) -> Result<crate::automation::jobs::SmtpSettings> {
        let txn = self.store.begin_read()?;
        let ctx = Ctx::new(&self.core, Txn::Read(txn), "");
        crate::automation::jobs::SmtpSettings::read(&ctx)
    }

    /// Configure the languages and install profiles on an existing site, in one transaction (see
    /// `crate::content::multilingual::profiles::configure`): what a host does for `--profile` / `--languages` when
    /// the site already exists.
    /// A site profile among `profiles` (`nick`) is not installed: it must be the one the site
    /// was created with ([`crate::site::profile`]), else the call fails with a conflict.
    pub fn configure_languages(&self, profiles: &[String], languages: &[String]) -> Result<()> {
        self.write(|ctx| {
            crate::site::profile::check_matches(ctx, profiles)?;
            let installable = crate::site::setup::installable(profiles);
            crate::content::multilingual::profiles::configure(ctx, &installable, languages)
        })
    }

    /// The site profile the site was created with ([`crate::site::profile`]).
    /// The profile never changes once the site exists, so the engine keeps it: a host calls
    /// this once after making sure the site exists, so that [`Engine::error_answer`] (which may
    /// run where the store must not be read, on an async runtime) knows it.
    pub fn site_profile(&self) -> Result<crate::site::profile::SiteProfile> {
        if let Some(p) = self.core.known_profile() {
            return Ok(p);
        }
        let txn = self.store.begin_read()?;
        let ctx = Ctx::new(&self.core, Txn::Read(txn), "");
        let p = crate::site::profile::stored(&ctx)?;
        Ok(self.core.remember_profile(p))
    }

    /// Drop the cached answers a commit's writes change ([`Core::publish`]); wake the host's
    /// outbox delivery if the commit queued deliveries.
    fn publish(&self, moved: Option<crate::runtime::cache::Moved>) {
        if self.core.options.parallel_writes {
            if let Some(m) = &moved {
                self.commits.record(m.from, m.to, &m.writes, &m.merged);
            }
        }
        self.core.publish(moved);
        if self
            .core
            .outbox_pending
            .swap(false, std::sync::atomic::Ordering::AcqRel)
        {
            if let Some(notify) = &self.core.options.outbox_notify {
                notify();
            }
        }
        if self
            .core
            .changes_pending
            .swap(false, std::sync::atomic::Ordering::AcqRel)
        {
            if let Some(notify) = &self.core.options.changes_notify {
                notify();
            }
        }
    }

    /// The cached answer to `req`, found without opening a store transaction: the caller is
    /// known from the cache (anonymous, or a token or Basic credentials verified before and
    /// not changed since), and so is the answer ([`crate::runtime::cache`]). `None` sends the request
    /// the ordinary way.
    fn answer_from_cache(&self, req: &Request) -> Option<Response> {
        if !self.core.responses.applies(req)
            || req.body.len() > self.core.options.max_body_bytes
            || self.core.options.shared_store
        {
            return None;
        }
        let cache = &self.core.responses;
        let now = self.core.clock.now().timestamp();
        let principal = match req.credentials().ok()? {
            Credentials::None => Principal::Anonymous,
            Credentials::Bearer(token) => {
                cache
                    .caller(None, &ResponseCache::caller_key("t", &token), now)?
                    .principal
            }
            Credentials::Basic(login, password) => {
                cache
                    .caller(None, &Core::basic_key(&login, &password), now)?
                    .principal
            }
        };
        let key = ResponseCache::key(req, principal.login().unwrap_or(""));
        // A miss here is looked up again in the transaction, and counted there.
        let found = cache.get(None, &key, now);
        if found.is_some() {
            cache.count(true);
        }
        found
    }

    /// Up to `max` bytes of a streamed response body ([`Response::stream`]) from byte `offset`
    /// of the blob on, read in a read transaction of their own (a blob never changes once
    /// served, so the pieces fit together). Empty at the stream's end. Hosts call it until it
    /// is; a blob removed meanwhile is an error (the host ends the body early).
    pub fn read_stream(
        &self,
        stream: &crate::core::http::BlobStream,
        offset: u64,
        max: usize,
    ) -> Result<Vec<u8>> {
        let ctx = Ctx::new(&self.core, Txn::Read(self.store.begin_read()?), "");
        let from = stream.start.saturating_add(offset);
        let to = from.saturating_add(max as u64).min(stream.end);
        crate::content::blobs::read_range(&ctx, &stream.blob, from, to)
    }

    /// Answer a request routed as [`AnswerKind::EventStream`] (the change feed as Server-Sent
    /// Events, a [`api::change_stream::ChangeStream`]): the stream and its opening answer (status, headers and
    /// the first events, for the host to send as they are), or the engine's answer when it
    /// refused (a JSON error, no stream; with the refused login, as [`Engine::handle_routed`]).
    pub fn open_change_stream(
        &self,
        routed: Routed,
    ) -> std::result::Result<(api::change_stream::ChangeStream, Response), Box<Handled>> {
        let mut refused_login = None;
        api::change_stream::ChangeStream::open(routed.into_request(), |req| {
            let handled = self.handle_routed(self.route(req));
            refused_login = handled.refused_login;
            handled.response
        })
        .map_err(|response| {
            Box::new(Handled {
                response,
                refused_login,
            })
        })
    }

    /// The events of `stream` since its cursor, as the bytes to send (empty when there were
    /// none); `None` when reading the feed failed and the stream ends. A host calls it when a
    /// commit wrote change log entries ([`EngineOptions::changes_notify`]) and again at once
    /// while [`api::change_stream::ChangeStream::waiting`] says more are waiting.
    pub fn change_stream_next(
        &self,
        stream: &mut api::change_stream::ChangeStream,
    ) -> Option<Vec<u8>> {
        stream.next(|req| self.handle_routed(self.route(req)).response)
    }

    /// Answer one request. Never panics on client input; every failure is a JSON error response,
    /// and a failed request changes nothing. The same as [`Engine::route`] then
    /// [`Engine::handle_routed`], for hosts that need nothing else.
    pub fn handle(&self, req: Request) -> Response {
        self.handle_routed(self.route(req)).response
    }

    /// Look the request up in the route table, once: what the host needs to carry it
    /// ([`Routed::info`]: read or write, how its answer and body are carried, its throttle class)
    /// and, kept for [`Engine::handle_routed`], the endpoint. Only the method, path, query and
    /// headers are looked at: a host routes a request before it reads the body, then sets it
    /// ([`Routed::set_body`]).
    pub fn route(&self, request: Request) -> Routed {
        // A GET or HEAD never writes and is carried plainly unless it asks for an event stream,
        // so what the host needs is known without the table; its lookup waits until the
        // response cache has been asked (a cached answer needs none).
        const EVENT_STREAM: &[u8] = b"text/event-stream";
        let wants_stream = request.header_value("accept").is_some_and(|a| {
            a.as_bytes()
                .windows(EVENT_STREAM.len())
                .any(|w| w.eq_ignore_ascii_case(EVENT_STREAM))
        });
        let deferred = matches!(
            request.method,
            crate::core::http::Method::Get | crate::core::http::Method::Head
        ) && !wants_stream;
        let found = if deferred {
            None
        } else {
            self.lookup(&request).ok()
        };
        let carriage = match &found {
            Some((_, api::Endpoint::Route(def))) => def.carriage,
            _ => api::Carriage::Plain,
        };
        let limit = self.core.options.max_body_bytes;
        let answer = match carriage {
            api::Carriage::Lines => AnswerKind::Lines,
            api::Carriage::EventStream
                if request.method == crate::core::http::Method::Get && wants_stream =>
            {
                AnswerKind::EventStream
            }
            _ => AnswerKind::Whole,
        };
        let offset = request
            .header_value("upload-offset")
            .and_then(|v| v.split(',').next())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let body = match (carriage, offset) {
            (api::Carriage::Pieces, Some(offset)) => BodyKind::Pieces {
                offset,
                piece: BODY_PIECE.min(limit.max(1)),
            },
            _ => BodyKind::Whole { limit },
        };
        let basic = matches!(request.credentials(), Ok(Credentials::Basic(..)));
        let throttle = if carriage == api::Carriage::Reset {
            Some(ThrottleClass::PasswordReset)
        } else {
            (basic || carriage == api::Carriage::Login).then_some(ThrottleClass::Login)
        };
        let info = RouteInfo {
            writes: found.as_ref().is_some_and(|(_, e)| e.writes()),
            answer,
            body,
            throttle,
        };
        Routed {
            request,
            found,
            carriage,
            info,
        }
    }

    /// The endpoint family (its OpenAPI tag, e.g. `content`, `search`) `routed` reaches, for a
    /// host's per-family metrics: `options` for a bare `OPTIONS`, `none` when it reaches no
    /// endpoint. A GET routed without the table is looked up now (no store access).
    pub fn route_family(&self, routed: &Routed) -> &'static str {
        let family = |e: &api::Endpoint| match e {
            api::Endpoint::Route(def) => def.family,
            api::Endpoint::Options => "options",
        };
        match &routed.found {
            Some((_, e)) => family(e),
            None => self
                .lookup(&routed.request)
                .map_or("none", |(_, e)| family(&e)),
        }
    }

    /// The route and endpoint of `req`, or why it reaches none (an unknown endpoint, a wrong
    /// method, a bad path).
    fn lookup(&self, req: &Request) -> Result<(api::Route, api::Endpoint)> {
        let route = api::Route::parse(req)?;
        let endpoint = api::lookup(&route, &req.method, &self.core, &req.base_url)?;
        Ok((route, endpoint))
    }

    /// The route and endpoint [`Engine::route`] found for `routed`, or why there is none. A
    /// request routed without the table (a GET or HEAD, after the cache had no answer) and one
    /// that reached no endpoint are looked up now; for the latter that gives the error, so only a
    /// failing request pays for a second lookup.
    fn found<'r>(
        &self,
        routed: &'r Routed,
    ) -> Result<(std::borrow::Cow<'r, api::Route>, api::Endpoint)> {
        let req = &routed.request;
        if req.body.len() > self.core.options.max_body_bytes {
            return Err(EngineError::PayloadTooLarge {
                size: req.body.len(),
                limit: self.core.options.max_body_bytes,
            });
        }
        match &routed.found {
            Some((route, endpoint)) => Ok((std::borrow::Cow::Borrowed(route), *endpoint)),
            None => {
                let (route, endpoint) = self.lookup(req)?;
                Ok((std::borrow::Cow::Owned(route), endpoint))
            }
        }
    }

    /// Answer a routed request ([`Engine::route`]) in its own transaction, as [`Engine::handle`]
    /// does; also tells the host what it keys its throttle by ([`Handled::refused_login`]).
    pub fn handle_routed(&self, routed: Routed) -> Handled {
        let result = self.try_handle(&routed);
        self.finish(&routed, result)
    }

    /// Whether `req` would run in the write transaction (a host may route such requests to
    /// [`Engine::handle_group`]). A request that fails before it reaches an endpoint (unknown
    /// endpoint, wrong method, bad path) does not write. Hosts use [`Engine::route`], which
    /// tells this and more in the same lookup.
    pub fn writes(&self, req: &Request) -> bool {
        self.lookup(req)
            .is_ok_and(|(_, endpoint)| endpoint.writes())
    }

    /// Answer several requests in ONE write transaction (group commit): each runs exactly as
    /// [`Engine::handle`] would, in order, inside its own savepoint (`savepoint`: the backend's, or
    /// `crate::core::store::Savepoint` in memory), so a failing request
    /// undoes only its own writes and later requests see the writes of earlier ones. The store
    /// commits once at the end; only then are the answers valid. If that commit fails, every
    /// request answers with the storage error instead (none of the group's writes happened);
    /// when it fails with a conflict (an optimistic store), the whole group runs again, at most
    /// `MAX_ATTEMPTS` times in all. Requests that do not write ([`Engine::writes`]) are answered from their
    /// own read transaction, outside the group.
    ///
    /// Hosts use this to pay for one durable commit (one fsync) per group of concurrent writes
    /// instead of one per request, and to load data in bulk through the API itself.
    pub fn handle_group(&self, reqs: &[Request]) -> Vec<Response> {
        let routed: Vec<Routed> = reqs.iter().map(|r| self.route(r.clone())).collect();
        self.handle_routed_group(&routed)
            .into_iter()
            .map(|h| h.response)
            .collect()
    }

    /// [`Engine::handle_group`] for requests a host has routed ([`Engine::route`]).
    pub fn handle_routed_group(&self, reqs: &[Routed]) -> Vec<Handled> {
        let _writing = self.core.responses.writing();
        match self.retrying(|| self.try_group(reqs)) {
            Err(e) => reqs
                .iter()
                .map(|r| self.finish(r, Err(clone_store_error(&e))))
                .collect(),
            Ok(answers) => reqs
                .iter()
                .zip(answers)
                .map(|(req, result)| self.finish(req, result))
                .collect(),
        }
    }

    /// Run `attempt` (one request, or a group, in a store transaction of its own) until it ends
    /// without an optimistic store's conflict, at most
    /// [`crate::runtime::state::ConflictRetry::max_attempts`] times in all, calling the host's
    /// [`crate::runtime::state::ConflictRetry::pause`] before each re-run; the last conflict is
    /// returned. Counts what happened ([`Engine::conflict_stats`]).
    fn retrying<T>(&self, mut attempt: impl FnMut() -> Result<T>) -> Result<T> {
        let retry = &self.core.options.conflict_retry;
        let most = retry.max_attempts.max(1);
        let mut runs = 1;
        loop {
            match attempt() {
                Err(e) if is_conflict(&e) => {
                    if runs >= most {
                        self.conflicts.gave_up();
                        return Err(e);
                    }
                    self.conflicts.rerun();
                    if let Some(pause) = &retry.pause {
                        pause(runs);
                    }
                    runs += 1;
                }
                ended => {
                    if runs > 1 {
                        self.conflicts.settled(runs);
                    }
                    return ended;
                }
            }
        }
    }

    /// How requests (or groups) met an optimistic store's conflicts since this engine started:
    /// re-runs, how many runs those that ended took, and how many ran out of attempts (each
    /// answered 503 Busy). All zero on a store without conflicts.
    pub fn conflict_stats(&self) -> ConflictStats {
        self.conflicts.stats()
    }

    /// How many writes prepared in parallel ([`Engine::prepare_write`]) were found stale at
    /// commit (they read what a later commit wrote) and ran again on the writer, since this
    /// engine started.
    pub fn prepared_reruns(&self) -> u64 {
        self.reruns.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Run a write request ([`Engine::route`]) against a snapshot of its own, on any thread,
    /// up to its commit ([`crate::runtime::occ`]): its writes are buffered and what it read is
    /// recorded. [`Engine::commit_prepared`] then commits it, or tells that it must run again.
    /// For hosts that run writes side by side ([`EngineOptions::parallel_writes`]).
    pub fn prepare_write(&self, routed: &Routed) -> Prepared {
        Prepared(self.try_prepare(routed))
    }

    fn try_prepare(&self, routed: &Routed) -> Outcome {
        let (route, endpoint) = match self.found(routed) {
            Ok(found) => found,
            Err(e) => return Outcome::Answer(Err(e)),
        };
        if !endpoint.writes() {
            return Outcome::Answer(self.try_handle(routed));
        }
        let buffer = Rc::new(RefCell::new(Buffered::default()));
        let staged = (|| {
            let snap = self.store.begin_read()?;
            let snapshot = crate::core::generation::read(snap.as_ref())?;
            let txn = Txn::Write(Box::new(SnapshotTxn::new(snap, buffer.clone())));
            let (resp, ended) = self.run_request(&routed.request, &route, endpoint, txn)?;
            Ok((resp, ended, snapshot))
        })();
        match staged {
            Err(e) => Outcome::Answer(Err(e)),
            Ok((resp, Ended::Answered, _)) => Outcome::Answer(Ok(resp)),
            Ok((resp, Ended::Finished(txn, pending, queued), snapshot)) => {
                drop(txn);
                let mut buffered = std::mem::take(&mut *buffer.borrow_mut());
                if buffered.overlay.is_empty() && pending.work.is_empty() && !pending.dirty {
                    // Nothing to commit: the answer stands as of the snapshot.
                    return Outcome::Answer(Ok(resp));
                }
                buffered.reads.seal();
                Outcome::Staged(Box::new(Staged {
                    resp,
                    snapshot,
                    buffered,
                    pending,
                    queued,
                }))
            }
        }
    }

    /// Commit prepared writes ([`Engine::prepare_write`]) in one store transaction (one durable
    /// commit for all), in order; one caller at a time (the host's writer). Each is applied if
    /// nothing it read was written by a commit after its snapshot (an earlier one of `batch`
    /// included), and then answers; otherwise it answers [`Committed::Conflict`] and the host
    /// runs it again (a bounded number of times, then through [`Engine::handle_routed_group`]).
    pub fn commit_prepared(&self, batch: Vec<(&Routed, Prepared)>) -> Vec<Committed> {
        let _writing = self.core.responses.writing();
        let mut outcomes: Vec<Option<Result<Response>>> = Vec::with_capacity(batch.len());
        let mut staged = Vec::new();
        outcomes.resize_with(batch.len(), || None);
        let mut routes = Vec::with_capacity(batch.len());
        for (i, (routed, prepared)) in batch.into_iter().enumerate() {
            routes.push(routed);
            match prepared.0 {
                Outcome::Answer(result) => outcomes[i] = Some(result),
                Outcome::Staged(st) => staged.push((i, st)),
            }
        }
        if !staged.is_empty() {
            self.commit_staged(&routes, staged, &mut outcomes);
        }
        outcomes
            .into_iter()
            .zip(routes)
            .map(|(outcome, routed)| match outcome {
                Some(result) => Committed::Answered(self.finish(routed, result)),
                None => Committed::Conflict,
            })
            .collect()
    }

    /// The serial part of [`Engine::commit_prepared`]: validate and apply `staged`, filling in
    /// `outcomes` (left `None`: a conflict). One that read what a later commit wrote runs again
    /// right here, the serial way (in a savepoint of the group's transaction, as
    /// [`Engine::handle_routed_group`] runs requests): its first run's work is lost, but it
    /// costs no second trip, and writes that always meet (creates in one folder) are no slower
    /// than on the single writer.
    fn commit_staged(
        &self,
        routes: &[&Routed],
        staged: Vec<(usize, Box<Staged>)>,
        outcomes: &mut [Option<Result<Response>>],
    ) {
        let mut outer = match self.store.begin_write() {
            Ok(t) => t,
            Err(e) => {
                let e = EngineError::from(e);
                for (i, _) in staged {
                    if !is_conflict(&e) {
                        outcomes[i] = Some(Err(clone_store_error(&e)));
                    }
                }
                return;
            }
        };
        let current = match crate::core::generation::read(outer.as_ref()) {
            Ok(g) => g,
            Err(e) => {
                for (i, _) in staged {
                    outcomes[i] = Some(Err(clone_store_error(&e)));
                }
                return;
            }
        };
        let mut written: Vec<Vec<u8>> = Vec::new();
        let mut moved = None;
        let mut queued = false;
        let mut applied = Vec::new();
        let mut kept = Vec::new();
        for (i, st) in staged {
            let Staged {
                resp,
                snapshot,
                buffered,
                mut pending,
                queued: q,
            } = *st;
            // The ids it gave, held until the group is durable (then older snapshots still
            // see them taken), or let go before it runs again.
            let holds = std::mem::take(&mut pending.holds);
            let outright = |k: &[u8]| {
                buffered.overlay.lookup(k).is_some() && !pending.merges.iter().any(|m| m.key() == k)
            };
            let (group_writes, group_merged) = moved
                .as_ref()
                .map_or((&[][..], &[][..]), |m: &crate::runtime::cache::Moved| {
                    (&m.writes[..], &m.merged[..])
                });
            let mut stale = self
                .commits
                .stale(snapshot, current, &buffered.reads, &outright)
                .or_else(|| {
                    crate::runtime::occ::conflicting_key(
                        &written,
                        group_merged,
                        &buffered.reads,
                        &outright,
                    )
                    .or_else(|| {
                        crate::runtime::occ::conflicting_key(
                            group_writes,
                            group_merged,
                            &buffered.reads,
                            &outright,
                        )
                    })
                    .map(|k| crate::runtime::occ::Stale::Key(k.to_vec()))
                });
            // The folders it counted children in: their records as committed, with its counts.
            let mut rebased = Vec::new();
            if stale.is_none() {
                for fm in &pending.merges {
                    let key = fm.key();
                    let merged = match (outer.get(&key), buffered.overlay.lookup(&key)) {
                        (Ok(Some(committed)), Some(Some(mine))) => fm.rebase(&committed, mine),
                        _ => Ok(crate::runtime::commit::Rebased::Conflict),
                    };
                    match merged {
                        Ok(crate::runtime::commit::Rebased::Unchanged) => {}
                        Ok(crate::runtime::commit::Rebased::Merged(v)) => rebased.push((key, v)),
                        Ok(crate::runtime::commit::Rebased::Conflict) | Err(_) => {
                            stale = Some(crate::runtime::occ::Stale::Folder(key));
                            break;
                        }
                    }
                }
            }
            if let Some(why) = &stale {
                self.reruns
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if let Some(log) = &self.core.options.stale_log {
                    log(&format!(
                        "{:?} {}: {why}",
                        routes[i].request.method, routes[i].request.path
                    ));
                }
            }
            let valid = stale.is_none();
            let result = if valid {
                // Its write set, then its commit work, in a savepoint of the group's transaction.
                (|| {
                    let mut sp = savepoint(outer.as_mut())?;
                    for (k, v) in buffered.overlay.changes() {
                        match v {
                            Some(v) => sp.put(k, v)?,
                            None => sp.delete(k)?,
                        }
                    }
                    for (k, v) in &rebased {
                        sp.put(k, v)?;
                    }
                    let m = pending.apply(sp.as_mut())?;
                    sp.commit()?;
                    kept.extend(holds);
                    written.extend(buffered.overlay.changes().map(|(k, _)| k.to_vec()));
                    queued |= q;
                    Ok::<_, EngineError>((resp, m))
                })()
            } else {
                drop(holds);
                let routed = routes[i];
                self.found(routed).and_then(|(route, endpoint)| {
                    let txn = Txn::Write(savepoint(outer.as_mut())?);
                    self.run(&routed.request, &route, endpoint, txn)
                })
            };
            match result {
                Ok((resp, m)) => {
                    if let Some(m) = &m {
                        written.extend(m.writes.iter().cloned());
                    }
                    moved = crate::runtime::cache::Moved::merge(moved.take(), m);
                    outcomes[i] = Some(Ok(resp));
                    applied.push(i);
                }
                Err(e) if is_conflict(&e) => {}
                Err(e) => outcomes[i] = Some(Err(e)),
            }
        }
        match outer.commit().map_err(EngineError::from) {
            Ok(()) => {
                if queued {
                    self.note_queued();
                }
                if let Some(to) = moved.as_ref().map(|m| m.to) {
                    for hold in kept {
                        hold.committed(to);
                    }
                }
                self.publish(moved);
            }
            // Nothing was applied: the requests run again, or answer the storage error.
            Err(e) => {
                for i in applied {
                    outcomes[i] = if is_conflict(&e) {
                        None
                    } else {
                        Some(Err(clone_store_error(&e)))
                    };
                }
            }
        }
    }

    /// Note that a commit queued outbox deliveries; told to the host when the commit is durable
    /// (a group's own commit): [`Self::publish`].
    fn note_queued(&self) {
        self.core
            .outbox_pending
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Whose error bodies the site answers with: Nick's on a site created with the Nick profile
    /// ([`crate::site::profile`]), else Plone's. Read from the store the first time an error
    /// is answered (the request's own transaction is gone by then), then kept.
    fn error_style(&self) -> ErrorStyle {
        let profile = match self.core.known_profile() {
            Some(p) => p,
            None => match self.site_exists() {
                Ok(true) => self.site_profile().unwrap_or_default(),
                _ => crate::site::profile::SiteProfile::default(),
            },
        };
        if profile.is_nick() {
            ErrorStyle::Nick
        } else {
            ErrorStyle::Plone
        }
    }

    /// The answer for an error a host meets before or around the engine (a malformed `Host`, a
    /// body over the limit, the login throttle), in the site's error shape
    /// ([`Engine::error_style`]), as the engine's own errors are.
    ///
    /// It never reads the store (hosts call it on their async runtime): the profile is the one
    /// [`Engine::site_profile`] or an earlier request learnt, Plone's before that.
    pub fn error_answer(&self, e: EngineError) -> Response {
        let style = match self.core.known_profile() {
            Some(p) if p.is_nick() => ErrorStyle::Nick,
            _ => ErrorStyle::Plone,
        };
        e.into_styled_response(style, "", None)
    }

    /// The answer to `routed` given the outcome of running it ([`finish`]), and the login whose
    /// password it refused, if it did.
    fn finish(&self, routed: &Routed, result: Result<Response>) -> Handled {
        let context = routed.found.as_ref().map(|(route, _)| route);
        let style = if result.is_err() {
            self.error_style()
        } else {
            ErrorStyle::Plone
        };
        let response = finish(&self.core, &routed.request, context, style, result);
        let refused_login = if response.status == 401 {
            routed.attempted_login()
        } else {
            None
        };
        Handled {
            response,
            refused_login,
        }
    }

    /// One attempt at a group: the outcome of each request, or the error that failed the whole
    /// group before any request ran (its transaction could not begin) or that makes it run again
    /// (a conflict, met by a request or by the commit).
    fn try_group(&self, reqs: &[Routed]) -> Result<Vec<Result<Response>>> {
        let mut outer = self.store.begin_write()?;
        let mut results: Vec<Result<Response>> = Vec::with_capacity(reqs.len());
        // How the group's requests moved the generation (each sees the ones before).
        let mut generation = None;
        for routed in reqs {
            let result = self.found(routed).and_then(|(route, endpoint)| {
                let txn = if endpoint.writes() {
                    Txn::Write(savepoint(outer.as_mut())?)
                } else {
                    Txn::Read(self.store.begin_read()?)
                };
                let (resp, moved) = self.run(&routed.request, &route, endpoint, txn)?;
                generation = crate::runtime::cache::Moved::merge(generation.take(), moved);
                Ok(resp)
            });
            if let Err(e) = &result {
                if is_conflict(e) {
                    return Err(clone_store_error(e));
                }
            }
            results.push(result);
        }
        match outer.commit().map_err(EngineError::from) {
            Ok(()) => {
                self.publish(generation);
                Ok(results)
            }
            Err(e) if is_conflict(&e) => Err(e),
            // Nothing of the group happened: the requests that had succeeded answer with the
            // storage error; those that had failed keep their own answer.
            Err(e) => Ok(results
                .into_iter()
                .map(|r| r.and_then(|_| Err(clone_store_error(&e))))
                .collect()),
        }
    }

    fn try_handle(&self, routed: &Routed) -> Result<Response> {
        let req = &routed.request;
        if let Some(resp) = self.answer_from_cache(req) {
            return Ok(resp);
        }
        let (route, endpoint) = self.found(routed)?;
        let _writing = endpoint.writes().then(|| self.core.responses.writing());
        // Another writer committed a conflicting change first (optimistic stores): nothing of
        // an attempt that conflicted was applied, so the whole request runs again.
        let (resp, moved) = self.retrying(|| {
            let txn = if endpoint.writes() {
                Txn::Write(self.store.begin_write()?)
            } else {
                Txn::Read(self.store.begin_read()?)
            };
            self.run(req, &route, endpoint, txn)
        })?;
        self.publish(moved);
        Ok(resp)
    }

    /// Authenticate, dispatch, deliver events and commit `txn`; also returns how the commit
    /// moved the store generation, if it did ([`Ctx::commit`]). Inside a group that is
    /// not yet durable: only the group's own commit may publish it.
    fn run(
        &self,
        req: &Request,
        route: &api::Route,
        endpoint: api::Endpoint,
        txn: Txn<'_>,
    ) -> Result<(Response, Option<crate::runtime::cache::Moved>)> {
        let (resp, ended) = self.run_request(req, route, endpoint, txn)?;
        match ended {
            Ended::Answered => Ok((resp, None)),
            Ended::Finished(txn, pending, queued) => {
                let moved = match txn {
                    Txn::Write(mut t) => {
                        let moved = pending.apply(t.as_mut())?;
                        t.commit()?;
                        moved
                    }
                    Txn::Read(_) => None,
                };
                if queued {
                    self.note_queued();
                }
                Ok((resp, moved))
            }
        }
    }

    /// [`Engine::run`] up to the commit: the answer, and the transaction with what its commit
    /// must still do.
    fn run_request<'t>(
        &'t self,
        req: &Request,
        route: &api::Route,
        endpoint: api::Endpoint,
        txn: Txn<'t>,
    ) -> Result<(Response, Ended<'t>)> {
        let mut ctx = Ctx::new(&self.core, txn, &req.base_url);
        let cache = &self.core.responses;
        // A cacheable request records what it reads from its snapshot on, authentication
        // included ([`crate::runtime::cache`]).
        let snapshot = if !ctx.is_write() && cache.applies(req) {
            let g = ctx.generation()?;
            cache.observe(g);
            ctx.track_reads();
            Some(g)
        } else {
            None
        };
        let credentials = req.credentials().map_err(EngineError::Unauthorized)?;
        ctx.principal = crate::people::auth::authenticate(&ctx, credentials)?;
        ctx.accept_language = req.accepted_languages();
        // `Idempotency-Key` ([`api::idempotency`]): a key already answered replays that answer.
        let idempotency_key = api::idempotency::key_of(req)?.filter(|_| ctx.is_write());
        if let Some(key) = &idempotency_key {
            if let Some(resp) = api::idempotency::replay(&ctx, req, key)? {
                let (txn, pending) = ctx.finish()?;
                return Ok((resp, Ended::Finished(txn, pending, false)));
            }
        }
        let cached = if let Some(g) = snapshot {
            let now = ctx.now_for_credentials().timestamp();
            if let Ok(Credentials::Basic(login, password)) = req.credentials() {
                // Verified above: later requests may skip the transaction until a write
                // changes what the verification read.
                let caller = crate::runtime::cache::Caller {
                    principal: ctx.principal.clone(),
                    exp: i64::MAX,
                    reads: std::sync::Arc::new(ctx.reads().unwrap_or_default()),
                };
                cache.insert_caller(g, Core::basic_key(&login, &password), caller, now);
            }
            let key = ResponseCache::key(req, ctx.principal.login().unwrap_or(""));
            let found = cache.get(Some(g), &key, now);
            cache.count(found.is_some());
            if let Some(resp) = found {
                return Ok((resp, Ended::Answered));
            }
            Some((g, key, now))
        } else {
            None
        };
        let resp = api::dispatch(&mut ctx, req, route, endpoint)?;
        if let Some((g, key, now)) = cached {
            if let Some(mut reads) = ctx.take_reads() {
                cache.insert(g, key, &resp, &mut reads, now);
            }
        }
        let mut resp = resp;
        if ctx.is_write() {
            self.subscribers.dispatch(&mut ctx)?;
            if let Some(key) = &idempotency_key {
                api::idempotency::remember(&mut ctx, req, key, &resp)?;
            }
            if !ctx.notices.is_empty() {
                // Messages of content rules' notify actions (`<type>: <text>`, percent-encoded
                // beyond ASCII), one header line for all.
                const SET: &percent_encoding::AsciiSet =
                    &percent_encoding::CONTROLS.add(b'%').add(b'|');
                let text = ctx
                    .notices
                    .iter()
                    .map(|n| percent_encoding::utf8_percent_encode(n, SET).to_string())
                    .collect::<Vec<_>>()
                    .join(" | ");
                resp = resp.with_header("X-Notify", &text);
            }
        }
        let queued = self.core.options.outbox_notify.is_some()
            && ctx.delivered_events().iter().any(|e| {
                matches!(e, crate::core::events::Event::JobChanged { status, .. } if status == "created")
            });
        let (txn, pending) = ctx.finish()?;
        Ok((resp, Ended::Finished(txn, pending, queued)))
    }
}

/// A write request run against its snapshot ([`Engine::prepare_write`]), waiting for
/// [`Engine::commit_prepared`].
pub struct Prepared(Outcome);

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Outcome::Answer(_) => "Prepared(answer)",
            Outcome::Staged(_) => "Prepared(staged)",
        })
    }
}

enum Outcome {
    /// Nothing to commit: the answer (or the error) stands.
    Answer(Result<Response>),
    /// Writes to commit.
    Staged(Box<Staged>),
}

/// A prepared write's answer, its write set and reads, and what its commit must still do.
struct Staged {
    resp: Response,
    /// The store generation of the snapshot it ran on.
    snapshot: u64,
    buffered: Buffered,
    pending: Pending,
    /// It queued outbox deliveries.
    queued: bool,
}

/// What [`Engine::commit_prepared`] did with one prepared request.
#[derive(Debug)]
pub enum Committed {
    /// Committed (or nothing to commit): the answer.
    Answered(Handled),
    /// Something it read was written since its snapshot: nothing of it was applied; run it
    /// again ([`Engine::prepare_write`]).
    Conflict,
}

/// How [`Engine::run_request`] left a request: answered from the response cache, or with its
/// transaction, what its commit must still do, and whether it queued outbox deliveries.
enum Ended<'t> {
    Answered,
    Finished(Txn<'t>, Pending, bool),
}

/// The response for `req` given the outcome of running it: errors become their JSON answers (a
/// failure inside the service is reported to the host's error log, never to the client), HEAD
/// loses its body (keeping the announced length).
/// `route` is the request's, when it was found (else the path is parsed again for the context).
fn finish(
    core: &Core,
    req: &Request,
    route: Option<&api::Route>,
    style: ErrorStyle,
    result: Result<Response>,
) -> Response {
    let mut resp = match result {
        Ok(r) => r,
        Err(e) => {
            if let (Some(detail), Some(log)) = (e.log_detail(), &core.options.error_log) {
                log(&format!("{} {}: {detail}", req.method.as_str(), req.path));
            }
            let parsed = match route {
                Some(_) => None,
                None => api::Route::parse(req).ok(),
            };
            let context = route
                .or(parsed.as_ref())
                .map(|r| format!("{}{}", req.base_url.trim_end_matches('/'), r.object_path));
            e.into_styled_response(style, &req.base_url, context.as_deref())
        }
    };
    if !matches!(req.credentials(), Ok(Credentials::None))
        && resp.header_value("Cache-Control").is_none()
    {
        // An answer for a logged-in caller may hold what others may not see: no shared cache
        // (proxy, CDN) keeps it, and a browser asks again before reusing it.
        resp = resp.with_header("Cache-Control", "private, no-cache");
    }
    if req.method == crate::core::http::Method::Head {
        // HEAD answers what GET would, without the body; the length is still announced.
        let len = match resp.stream.take() {
            Some(stream) => stream.len().to_string(),
            None => resp.body.len().to_string(),
        };
        resp.body.clear();
        resp = resp.with_header("Content-Length", &len);
    }
    resp
}

/// Bytes of a body read in pieces ([`BodyKind::Pieces`]) handed to the engine per request (at
/// most the engine's body limit).
pub const BODY_PIECE: usize = 8 * 1024 * 1024;

/// A request looked up in the route table ([`Engine::route`]), ready to be answered by
/// [`Engine::handle_routed`] or [`Engine::handle_routed_group`].
#[derive(Clone)]
pub struct Routed {
    request: Request,
    found: Option<(api::Route, api::Endpoint)>,
    carriage: api::Carriage,
    info: RouteInfo,
}

impl std::fmt::Debug for Routed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Routed")
            .field("request", &self.request)
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl Routed {
    /// What the host needs to carry the request.
    pub fn info(&self) -> &RouteInfo {
        &self.info
    }

    /// The request.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// The request, given back (a host that answers it otherwise, e.g. as an event stream).
    pub fn into_request(self) -> Request {
        self.request
    }

    /// Set the body the host has read (routing did not need it).
    pub fn set_body(&mut self, body: Vec<u8>) {
        self.request.body = body;
    }

    /// The login this request tries a password for, the key of its
    /// [`ThrottleClass::Login`]: the login of `Authorization: Basic`, or the `login` of a
    /// `@login` body (set with [`Routed::set_body`] first). `None` for other requests.
    pub fn attempted_login(&self) -> Option<String> {
        if self.carriage == api::Carriage::Reset {
            // `@users/<login>/reset-password`
            let mut segments = self.request.path.rsplit('/').skip(1);
            return segments.next().map(str::to_string);
        }
        if let Ok(Credentials::Basic(login, _)) = self.request.credentials() {
            return Some(login);
        }
        if self.carriage != api::Carriage::Login {
            return None;
        }
        let body: serde_json::Value = serde_json::from_slice(&self.request.body).ok()?;
        body.get("login")?.as_str().map(str::to_string)
    }

    /// One piece of a body read in pieces ([`BodyKind::Pieces`]): the same request with `body`
    /// as its body, placed at `offset` (its `Upload-Offset`), routed as this one was
    /// ([`Routed::in_pieces`] makes them).
    pub fn piece(&self, body: Vec<u8>, offset: u64) -> Routed {
        let mut request = Request {
            method: self.request.method.clone(),
            path: self.request.path.clone(),
            query: self.request.query.clone(),
            headers: self
                .request
                .headers
                .iter()
                .filter(|(name, _)| {
                    !name.eq_ignore_ascii_case("content-length")
                        && !name.eq_ignore_ascii_case("upload-offset")
                })
                .cloned()
                .collect(),
            body,
            base_url: self.request.base_url.clone(),
        };
        request
            .headers
            .push(("Upload-Offset".into(), offset.to_string()));
        Routed {
            request,
            found: self.found.clone(),
            carriage: self.carriage,
            info: self.info.clone(),
        }
    }

    /// Answer a request whose body comes in pieces ([`BodyKind::Pieces`], a tus `PATCH` of any
    /// length): `body` is read as it arrives and every [`RouteInfo`]'s `piece` bytes become
    /// their own request ([`Routed::piece`], at the offset reached), which `run` answers (the
    /// host's writer: each piece is a committed write). The upload's bytes are never all in
    /// memory, and whatever arrived before a broken connection is kept: the client asks `HEAD`
    /// for the offset and resumes there (the answer is then a 400). The answer is the last
    /// piece's, or the first that is not a success (`204`). A request that is not read in
    /// pieces is refused (the host reads its body whole).
    pub async fn in_pieces<B, F, Fut>(&self, body: &mut B, mut run: F) -> Handled
    where
        B: crate::core::http::BodyStream,
        F: FnMut(Routed) -> Fut,
        Fut: std::future::Future<Output = Handled>,
    {
        let (mut offset, piece_size) = match self.info.body {
            BodyKind::Pieces { offset, piece } => (offset, piece.max(1)),
            BodyKind::Whole { .. } => {
                return Handled {
                    response: EngineError::Internal(
                        "a body read whole was handed over in pieces".into(),
                    )
                    .into_response(),
                    refused_login: None,
                }
            }
        };
        let mut buf: Vec<u8> = Vec::with_capacity(piece_size);
        let mut last = None;
        loop {
            match body.next_chunk().await {
                Some(Ok(chunk)) => {
                    let mut data: &[u8] = chunk.as_ref();
                    while !data.is_empty() {
                        let take = (piece_size - buf.len()).min(data.len());
                        buf.extend_from_slice(&data[..take]);
                        data = &data[take..];
                        if buf.len() == piece_size {
                            let piece = std::mem::replace(&mut buf, Vec::with_capacity(piece_size));
                            let n = piece.len() as u64;
                            let handled = run(self.piece(piece, offset)).await;
                            if handled.response.status != 204 {
                                return handled;
                            }
                            offset += n;
                            last = Some(handled);
                        }
                    }
                }
                Some(Err(why)) => {
                    // The connection broke: keep what arrived, the client resumes from there.
                    if !buf.is_empty() {
                        let _ = run(self.piece(std::mem::take(&mut buf), offset)).await;
                    }
                    return Handled {
                        response: EngineError::bad_request(format!(
                            "Could not read the request body: {why}"
                        ))
                        .into_response(),
                        refused_login: None,
                    };
                }
                None => break,
            }
        }
        match last {
            Some(handled) if buf.is_empty() => handled,
            _ => run(self.piece(buf, offset)).await,
        }
    }
}

/// The engine's answer to a routed request, and what the host learns from it besides.
#[derive(Debug)]
pub struct Handled {
    /// The response.
    pub response: Response,
    /// The login whose password the request tried and the engine refused (a 401 to an
    /// attempt with a login): the host counts it against that login and the client's address.
    pub refused_login: Option<String>,
}

pub use crate::runtime::state::MAX_ATTEMPTS;

/// Runs counted one by one in [`ConflictStats::settled`]; longer ones share its last entry.
const COUNTED_RUNS: usize = 32;

/// What [`Engine::conflict_stats`] reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConflictStats {
    /// Re-runs after a conflict (one per pause).
    pub reruns: u64,
    /// Requests (or groups) that met a conflict and then ended without one, by the runs they
    /// took: `settled[n]` counts those that took `n` runs (`n` >= 2; the last entry also counts
    /// longer ones).
    pub settled: Vec<u64>,
    /// Requests (or groups) whose last allowed run conflicted too (answered 503 Busy).
    pub exhausted: u64,
}

/// The engine's counters behind [`ConflictStats`].
struct ConflictCounters {
    reruns: AtomicU64,
    settled: [AtomicU64; COUNTED_RUNS + 1],
    exhausted: AtomicU64,
}

impl Default for ConflictCounters {
    fn default() -> Self {
        ConflictCounters {
            reruns: AtomicU64::new(0),
            settled: std::array::from_fn(|_| AtomicU64::new(0)),
            exhausted: AtomicU64::new(0),
        }
    }
}

impl ConflictCounters {
    fn rerun(&self) {
        self.reruns.fetch_add(1, Ordering::Relaxed);
    }

    fn settled(&self, runs: usize) {
        self.settled[runs.min(COUNTED_RUNS)].fetch_add(1, Ordering::Relaxed);
    }

    fn gave_up(&self) {
        self.exhausted.fetch_add(1, Ordering::Relaxed);
    }

    fn stats(&self) -> ConflictStats {
        let settled: Vec<u64> = self
            .settled
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .collect();
        let used = settled.iter().rposition(|&n| n > 0).map_or(0, |i| i + 1);
        ConflictStats {
            reruns: self.reruns.load(Ordering::Relaxed),
            settled: settled[..used].to_vec(),
            exhausted: self.exhausted.load(Ordering::Relaxed),
        }
    }
}

/// Whether `e` is an optimistic store's conflict (the request may run again).
fn is_conflict(e: &EngineError) -> bool {
    matches!(e, EngineError::Store(StoreError::Conflict(_)))
}

/// The same storage failure again (for every request of a group whose commit failed).
fn clone_store_error(e: &EngineError) -> EngineError {
    EngineError::Store(match e {
        EngineError::Store(s) => s.clone(),
        other => StoreError::Backend(other.to_string()),
    })
}

/// Maintenance and the browser replica: operations a host runs outside [`Engine::handle`], each in
/// one write transaction with the rights of the site's admin.
impl<S: Store> Engine<S> {
    /// Rebuild the catalog from the stored objects (`host-server reindex`); `progress` hears
    /// how many objects are indexed so far. How many objects were indexed.
    pub fn rebuild_catalog(&self, progress: &mut dyn FnMut(usize)) -> Result<usize> {
        self.write(|ctx| crate::catalog::rebuild(ctx, progress))
    }

    /// Make this site a replica of `server` (or update the replica's settings): the login and
    /// token the host was given replace the stored ones (a change of server or login drops the
    /// stored token). The login the replica syncs as.
    pub fn replica_open(
        &self,
        server: &str,
        login: Option<&str>,
        token: Option<&str>,
    ) -> Result<String> {
        self.write(|ctx| crate::sync::replica::open(ctx, server, login, token))
    }

    /// The replica's configuration, if this site is a replica.
    pub fn replica_config(&self) -> Result<Option<crate::sync::replica::Config>> {
        self.write(|ctx| crate::sync::replica::config(ctx))
    }

    /// A token of the replica's own admin, for the host's local requests (no password stored).
    pub fn replica_local_token(&self) -> Result<Option<String>> {
        self.write(|ctx| crate::sync::replica::local_token(ctx))
    }

    /// "Work offline" for every tab of the replica (see [`crate::sync::replica::set_held`]).
    pub fn replica_set_held(&self, held: bool) -> Result<()> {
        self.write(|ctx| crate::sync::replica::set_held(ctx, held))
    }

    /// The replica's state as a host shows it (`None`: not a replica).
    pub fn replica_status(&self) -> Result<Option<crate::sync::replica::Status>> {
        self.write(|ctx| crate::sync::replica::status(ctx))
    }

    /// The request ending the replica's server token (see [`crate::sync::replica::logout_request`]).
    pub fn replica_logout_request(&self) -> Result<Option<crate::sync::replica::Outgoing>> {
        self.write(|ctx| crate::sync::replica::logout_request(ctx))
    }

    /// The writes waiting to be sent, oldest first.
    pub fn replica_pending(&self) -> Result<Vec<crate::sync::replica::PendingWrite>> {
        self.write(|ctx| crate::sync::replica::pending(ctx))
    }

    /// The conflicts waiting for the user.
    pub fn replica_conflicts(&self) -> Result<Vec<crate::sync::replica::Conflict>> {
        self.write(|ctx| crate::sync::replica::conflicts(ctx))
    }

    /// Resolve conflict `id` the way the user chose.
    pub fn replica_resolve(&self, id: u64, how: crate::sync::replica::Resolution) -> Result<()> {
        self.write(|ctx| crate::sync::replica::resolve(ctx, id, how))
    }

    /// Check the merge of conflict `id` with `fields` (the fields picked as the user's own)
    /// before it is made: `crate::sync::replica::check_merge` in a write transaction that is
    /// dropped, never committed, so nothing changes whatever the answer. An error (a field the
    /// type's schema refuses, an event ending before it starts, ...) means the merge would be
    /// refused: the conflict stays, with both versions.
    pub fn replica_check_merge(
        &self,
        id: u64,
        fields: serde_json::Map<String, serde_json::Value>,
    ) -> Result<()> {
        let txn = self.store.begin_write()?;
        let mut ctx = Ctx::new(&self.core, Txn::Write(txn), "");
        crate::sync::replica::check_merge(&mut ctx, id, fields)
        // `ctx` (and its transaction) is dropped here without a commit: rolled back
    }

    /// Whether `path` is a session request (login, logout, token renewal, the editing lock) that
    /// a replica answers locally and never records as a pending write.
    pub fn replica_is_session_path(path: &str) -> bool {
        crate::sync::replica::is_session_path(path)
    }

    /// Before a local write to `path`: what the replica must remember of the object it changes.
    pub fn replica_prepare_write(&self, path: &str) -> Result<crate::sync::replica::Draft> {
        self.write(|ctx| crate::sync::replica::prepare_write(ctx, path))
    }

    /// After a local write succeeded: record it as a pending write to replay on the server.
    pub fn replica_record_write(
        &self,
        req: &Request,
        draft: crate::sync::replica::Draft,
        resp: &Response,
    ) -> Result<u64> {
        self.write(|ctx| crate::sync::replica::record_write(ctx, req, draft, resp))
    }

    /// The next HTTP request of the sync round `sync` is running, if any.
    pub fn sync_next_request(
        &self,
        sync: &mut crate::sync::replica::Sync,
        now_ms: i64,
    ) -> Result<Option<crate::sync::replica::Outgoing>> {
        self.write(|ctx| sync.next_request(ctx, now_ms))
    }

    /// The server answered `out` with `inc`.
    pub fn sync_receive(
        &self,
        sync: &mut crate::sync::replica::Sync,
        out: &crate::sync::replica::Outgoing,
        inc: &crate::sync::replica::Incoming,
        now_ms: i64,
    ) -> Result<()> {
        self.write(|ctx| sync.receive(ctx, out, inc, now_ms))
    }

    /// The server could not be reached for `out` (`why`).
    pub fn sync_failed(
        &self,
        sync: &mut crate::sync::replica::Sync,
        out: &crate::sync::replica::Outgoing,
        why: &str,
        now_ms: i64,
    ) -> Result<()> {
        self.write(|ctx| sync.failed(ctx, out, why, now_ms))
    }
}
