//! The [`Engine`]: configuration, the store, and the one entry point [`Engine::handle`].

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use crate::api;
use crate::auth::password::PasswordCost;
use crate::cache::{self, ResponseCache};
use crate::clock::{Clock, Entropy, FixedClock, SeededEntropy, SystemClock, SystemEntropy};
use crate::context::{Ctx, Txn};
use crate::error::{EngineError, Result};
use crate::events::Subscriber;
use crate::http::{Request, Response};
use crate::keys;
use crate::model::TypeRegistry;
use crate::security::Principal;
use crate::site::{self, SiteSetup};
use crate::store::{Savepoint, Store, StoreError};
use crate::workflow::Workflows;

/// How an engine is set up. Production hosts use [`EngineOptions::production`]; tests use
/// [`EngineOptions::for_tests`] (fixed clock, seeded ids, cheap password hashing).
#[derive(Clone)]
pub struct EngineOptions {
    /// Source of time.
    pub clock: Arc<dyn Clock>,
    /// Source of randomness.
    pub entropy: Arc<dyn Entropy>,
    /// Largest request body accepted (bytes); larger is a 413.
    pub max_body_bytes: usize,
    /// Lifetime of login tokens (seconds).
    pub token_ttl_secs: i64,
    /// argon2id cost for new password hashes.
    pub password_cost: PasswordCost,
    /// When set, `POST /@test-clock` moves this clock (contract tests over HTTP). Never in production.
    pub test_clock: Option<Arc<FixedClock>>,
    /// Default `b_size` of batched listings.
    pub default_batch_size: usize,
    /// Largest `b_size` a client may ask for.
    pub max_batch_size: usize,
    /// Bytes of answers the response cache may hold ([`crate::cache`]); 0 (the default) turns
    /// it off, and with it the cache of verified bearer tokens. Both rest on the store
    /// generation, so turn them on only where this engine is the store's only writer (the
    /// server's lock file guarantees it; several browser tabs sharing one database do not).
    /// Engines with a `test_clock` never cache.
    pub response_cache_bytes: usize,
}

impl EngineOptions {
    /// Real clock, OS randomness, production password cost.
    pub fn production() -> Self {
        EngineOptions {
            clock: Arc::new(SystemClock),
            entropy: Arc::new(SystemEntropy),
            max_body_bytes: 16 * 1024 * 1024,
            token_ttl_secs: 12 * 3600,
            password_cost: PasswordCost::PRODUCTION,
            test_clock: None,
            default_batch_size: 25,
            max_batch_size: 1000,
            response_cache_bytes: 0,
        }
    }

    /// Deterministic: a fixed clock at 2026-01-01T12:00:00Z (movable via `@test-clock`), ids from
    /// seed 42, cheap password hashing.
    pub fn for_tests() -> Self {
        let clock = Arc::new(FixedClock::default());
        EngineOptions {
            clock: clock.clone(),
            entropy: Arc::new(SeededEntropy::new(42)),
            password_cost: PasswordCost::TESTING,
            test_clock: Some(clock),
            response_cache_bytes: 0,
            ..Self::production()
        }
    }
}

/// Engine-wide state shared by every request (everything but the store).
pub struct Core {
    /// Options.
    pub options: EngineOptions,
    /// Content types.
    pub types: TypeRegistry,
    /// Workflows.
    pub workflows: Workflows,
    /// Event subscribers, in registration order.
    pub subscribers: Vec<Box<dyn Subscriber>>,
    /// Clock (from the options).
    pub clock: Arc<dyn Clock>,
    /// Randomness (from the options).
    pub entropy: Arc<dyn Entropy>,
    basic_cache: Mutex<HashSet<[u8; 32]>>,
    token_cache: Mutex<HashMap<String, VerifiedToken>>,
    /// Basic credentials (SHA-256 of `login\0password`) found valid at a store generation.
    basic_callers: Mutex<HashMap<[u8; 32], (u64, Principal)>>,
    /// The latest store generation this engine committed, plus one (0: not known). Lets a
    /// cached answer be served without opening a store transaction ([`Engine::handle`]).
    committed: AtomicU64,
    /// Answers of repeated safe requests ([`crate::cache`]).
    pub responses: ResponseCache,
}

/// Most verified Basic credentials remembered before the cache is cleared.
const BASIC_CACHE_MAX: usize = 4096;

/// A bearer token found valid at a store generation: its expiry and whom it names.
#[derive(Clone)]
struct VerifiedToken {
    generation: u64,
    exp: i64,
    principal: Principal,
}

impl Core {
    /// Whether a verified-credentials digest is cached.
    pub fn basic_cache_contains(&self, digest: &[u8; 32]) -> bool {
        self.basic_cache
            .lock()
            .map(|c| c.contains(digest))
            .unwrap_or(false)
    }

    /// The caller a bearer `token` stands for, if it was verified at store `generation` and has
    /// not expired by `now`. Everything else a verification reads (the site secret, revoked
    /// tokens, the user and its roles) is in the store, so it cannot have changed while the
    /// generation has not.
    pub fn token_cache_get(&self, token: &str, generation: u64, now: i64) -> Option<Principal> {
        if !self.caches_enabled() {
            return None;
        }
        let cache = self.token_cache.lock().ok()?;
        let v = cache.get(token)?;
        (v.generation == generation && v.exp > now).then(|| v.principal.clone())
    }

    /// Remember that `token` (expiring at `exp`) was verified at `generation` as `principal`.
    pub fn token_cache_insert(
        &self,
        token: &str,
        generation: u64,
        exp: i64,
        principal: &Principal,
    ) {
        if !self.caches_enabled() {
            return;
        }
        insert_bounded(
            &self.token_cache,
            token.to_string(),
            VerifiedToken {
                generation,
                exp,
                principal: principal.clone(),
            },
        );
    }

    /// The caller that Basic credentials `login`/`password` stand for, if they were verified at
    /// store `generation` (a password or role change moves the generation on).
    pub fn basic_caller_get(
        &self,
        login: &str,
        password: &str,
        generation: u64,
    ) -> Option<Principal> {
        if !self.caches_enabled() {
            return None;
        }
        let digest = basic_digest(login, password);
        let cache = self.basic_callers.lock().ok()?;
        let (g, principal) = cache.get(&digest)?;
        (*g == generation).then(|| principal.clone())
    }

    /// Remember that `login`/`password` were verified at `generation` as `principal`.
    pub fn basic_caller_insert(
        &self,
        login: &str,
        password: &str,
        generation: u64,
        principal: &Principal,
    ) {
        if !self.caches_enabled() {
            return;
        }
        insert_bounded(
            &self.basic_callers,
            basic_digest(login, password),
            (generation, principal.clone()),
        );
    }

    /// The latest store generation committed through this engine, if known.
    pub fn committed_generation(&self) -> Option<u64> {
        self.committed.load(Ordering::Acquire).checked_sub(1)
    }

    /// Whether the caches that rest on the store generation are on
    /// ([`EngineOptions::response_cache_bytes`]).
    pub fn caches_enabled(&self) -> bool {
        self.responses.enabled()
    }

    /// Remember a verified-credentials digest.
    pub fn basic_cache_insert(&self, digest: [u8; 32]) {
        if let Ok(mut c) = self.basic_cache.lock() {
            if c.len() >= BASIC_CACHE_MAX {
                c.clear();
            }
            c.insert(digest);
        }
    }
}

/// Insert into a credentials cache, emptying it first when it holds [`BASIC_CACHE_MAX`] entries.
fn insert_bounded<K: std::hash::Hash + Eq, V>(cache: &Mutex<HashMap<K, V>>, key: K, value: V) {
    if let Ok(mut c) = cache.lock() {
        if c.len() >= BASIC_CACHE_MAX {
            c.clear();
        }
        c.insert(key, value);
    }
}

/// SHA-256 of Basic credentials, so the cache holds no password.
fn basic_digest(login: &str, password: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in [login, "\0", password] {
        h.update(part.as_bytes());
    }
    h.finalize().into()
}

/// The content engine over a store `S`.
pub struct Engine<S: Store> {
    store: S,
    core: Core,
    migrated: crate::migrations::Report,
}

impl<S: Store> Engine<S> {
    /// An engine over `store`. A site of an older schema version is upgraded in place first
    /// ([`crate::migrations`], one write transaction; see [`Engine::migration_report`]); a store
    /// written by a newer (or unknown) schema version is refused.
    pub fn new(store: S, options: EngineOptions) -> Result<Self> {
        let cache_bytes = if options.test_clock.is_some() {
            0
        } else {
            options.response_cache_bytes
        };
        let core = Core {
            clock: options.clock.clone(),
            entropy: options.entropy.clone(),
            options,
            types: TypeRegistry::builtin(),
            workflows: Workflows::builtin(),
            subscribers: vec![
                Box::new(crate::workflow::WorkflowSubscriber),
                Box::new(crate::versioning::VersioningSubscriber),
                Box::new(crate::comments::CommentsSubscriber),
                Box::new(crate::multilingual::TranslationSubscriber),
                Box::new(crate::counters::CountersSubscriber),
            ],
            basic_cache: Mutex::new(HashSet::new()),
            token_cache: Mutex::new(HashMap::new()),
            basic_callers: Mutex::new(HashMap::new()),
            committed: AtomicU64::new(0),
            responses: ResponseCache::new(cache_bytes),
        };
        let mut engine = Engine {
            store,
            core,
            migrated: crate::migrations::Report::default(),
        };
        engine.migrated = engine.migrate()?;
        if engine.core.caches_enabled() {
            let ctx = Ctx::new(&engine.core, Txn::Read(engine.store.begin_read()?), "");
            engine.publish(Some(cache::generation(&ctx)?));
        }
        Ok(engine)
    }

    /// Register an event subscriber (before serving requests).
    pub fn subscribe(&mut self, s: Box<dyn Subscriber>) {
        self.core.subscribers.push(s);
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Engine-wide state.
    pub fn core(&self) -> &Core {
        &self.core
    }

    /// Upgrade the store's site to this build's schema if it is older (see
    /// [`crate::migrations`]); refuse a newer or unknown one. [`Engine::new`] does this; a host
    /// may call it again (say, after reloading the store from elsewhere): it does nothing to a
    /// current store.
    pub fn migrate(&self) -> Result<crate::migrations::Report> {
        {
            let ctx = Ctx::new(&self.core, Txn::Read(self.store.begin_read()?), "");
            if !crate::migrations::needed(&ctx)? {
                let v = crate::migrations::check(&ctx)?;
                return Ok(crate::migrations::Report {
                    from: v,
                    to: v,
                    steps: Vec::new(),
                });
            }
        }
        let mut ctx = Ctx::new(&self.core, Txn::Write(self.store.begin_write()?), "");
        let report = crate::migrations::run(&mut ctx)?;
        self.publish(ctx.commit()?);
        Ok(report)
    }

    /// What [`Engine::new`] migrated when it opened the store (hosts log it).
    pub fn migration_report(&self) -> &crate::migrations::Report {
        &self.migrated
    }

    /// Whether a site exists in the store.
    pub fn site_exists(&self) -> Result<bool> {
        Ok(self.store.begin_read()?.get(keys::SCHEMA)?.is_some())
    }

    /// Create the site (root object and admin user) in one transaction.
    pub fn create_site(&self, setup: &SiteSetup) -> Result<()> {
        let txn = self.store.begin_write()?;
        let mut ctx = Ctx::new(&self.core, Txn::Write(txn), "");
        site::create(&mut ctx, setup)?;
        crate::events::dispatch(&mut ctx, &self.core.subscribers)?;
        self.publish(ctx.commit()?);
        Ok(())
    }

    /// Run `f` in one write transaction with the rights of the site's admin (bulk loading, seeding).
    pub fn with_write<T>(&self, f: impl FnOnce(&mut Ctx<'_>) -> Result<T>) -> Result<T> {
        let txn = self.store.begin_write()?;
        let mut ctx = Ctx::new(&self.core, Txn::Write(txn), "");
        let out = f(&mut ctx)?;
        crate::events::dispatch(&mut ctx, &self.core.subscribers)?;
        self.publish(ctx.commit()?);
        Ok(out)
    }

    /// Make `generation`, just committed, the one cached answers are served for. The value only
    /// moves forward, so a commit that reports late cannot set it back.
    fn publish(&self, generation: Option<u64>) {
        if let Some(g) = generation {
            self.core.committed.fetch_max(g + 1, Ordering::AcqRel);
        }
    }

    /// The cached answer to `req` at the latest committed generation, found without opening a
    /// store transaction: the caller is known from the credential caches (anonymous, or a
    /// token or Basic credentials verified at this generation), and the answer was computed
    /// at this generation within this second. `None` sends the request the ordinary way.
    fn answer_from_cache(&self, req: &Request) -> Option<Response> {
        if !self.core.responses.applies(req) || req.body.len() > self.core.options.max_body_bytes {
            return None;
        }
        let generation = self.core.committed_generation()?;
        let now = self.core.clock.now().timestamp();
        let principal = match crate::auth::credentials(req).ok()? {
            crate::auth::Credentials::None => Principal::Anonymous,
            crate::auth::Credentials::Bearer(token) => {
                self.core.token_cache_get(&token, generation, now)?
            }
            crate::auth::Credentials::Basic(login, password) => {
                self.core.basic_caller_get(&login, &password, generation)?
            }
        };
        let key = ResponseCache::key(req, principal.login().unwrap_or(""));
        self.core.responses.get((generation, now), &key)
    }

    /// Answer one request. Never panics on client input; every failure is a JSON error response,
    /// and a failed request changes nothing.
    pub fn handle(&self, req: Request) -> Response {
        let result = self.try_handle(&req);
        finish(&req, result)
    }

    /// Whether `req` would run in the write transaction (a host may route such requests to
    /// [`Engine::handle_group`]). A request that fails before it reaches an endpoint (unknown
    /// endpoint, wrong method, bad path) does not write.
    pub fn writes(&self, req: &Request) -> bool {
        api::Route::parse(req)
            .and_then(|route| api::lookup(&route, &req.method, &self.core, &req.base_url))
            .is_ok_and(|endpoint| endpoint.writes)
    }

    /// Answer several requests in ONE write transaction (group commit): each runs exactly as
    /// [`Engine::handle`] would, in order, inside its own [`Savepoint`], so a failing request
    /// undoes only its own writes and later requests see the writes of earlier ones. The store
    /// commits once at the end; only then are the answers valid. If that commit fails, every
    /// request that had succeeded answers with the storage error instead (none of the group's
    /// writes happened). Requests that do not write ([`Engine::writes`]) are answered from their
    /// own read transaction, outside the group.
    ///
    /// Hosts use this to pay for one durable commit (one fsync) per group of concurrent writes
    /// instead of one per request, and to load data in bulk through the API itself.
    pub fn handle_group(&self, reqs: &[Request]) -> Vec<Response> {
        let mut outer = match self.store.begin_write() {
            Ok(t) => t,
            Err(e) => {
                let e = EngineError::from(e);
                return reqs
                    .iter()
                    .map(|r| finish(r, Err(clone_store_error(&e))))
                    .collect();
            }
        };
        let mut results: Vec<(Result<Response>, bool)> = Vec::with_capacity(reqs.len());
        // The generation after the last request that moved it (each sees the ones before).
        let mut generation = None;
        for req in reqs {
            let result = self.prepare(req).and_then(|(route, endpoint)| {
                let txn = if endpoint.writes {
                    Txn::Write(Box::new(Savepoint::new(outer.as_mut())))
                } else {
                    Txn::Read(self.store.begin_read()?)
                };
                let (resp, moved) = self.run(req, &route, &endpoint, txn)?;
                generation = generation.max(moved);
                Ok(resp)
            });
            let ok = result.is_ok();
            results.push((result, ok));
        }
        let committed = outer.commit().map_err(EngineError::from);
        if committed.is_ok() {
            self.publish(generation);
        }
        reqs.iter()
            .zip(results)
            .map(|(req, (result, ok))| match (&committed, ok) {
                (Err(e), true) => finish(req, Err(clone_store_error(e))),
                _ => finish(req, result),
            })
            .collect()
    }

    fn prepare(&self, req: &Request) -> Result<(api::Route, api::Endpoint)> {
        if req.body.len() > self.core.options.max_body_bytes {
            return Err(EngineError::PayloadTooLarge {
                size: req.body.len(),
                limit: self.core.options.max_body_bytes,
            });
        }
        let route = api::Route::parse(req)?;
        let endpoint = api::lookup(&route, &req.method, &self.core, &req.base_url)?;
        Ok((route, endpoint))
    }

    fn try_handle(&self, req: &Request) -> Result<Response> {
        if let Some(resp) = self.answer_from_cache(req) {
            return Ok(resp);
        }
        let (route, endpoint) = self.prepare(req)?;
        let txn = if endpoint.writes {
            Txn::Write(self.store.begin_write()?)
        } else {
            Txn::Read(self.store.begin_read()?)
        };
        let (resp, moved) = self.run(req, &route, &endpoint, txn)?;
        self.publish(moved);
        Ok(resp)
    }

    /// Authenticate, dispatch, deliver events and commit `txn`; also returns the store
    /// generation the commit moved to, if it moved ([`Ctx::commit`]). Inside a group that is
    /// not yet durable: only the group's own commit may publish it.
    fn run(
        &self,
        req: &Request,
        route: &api::Route,
        endpoint: &api::Endpoint,
        txn: Txn<'_>,
    ) -> Result<(Response, Option<u64>)> {
        let mut ctx = Ctx::new(&self.core, txn, &req.base_url);
        ctx.principal = crate::auth::authenticate(&ctx, req)?;
        let cached = if !ctx.is_write() && self.core.responses.applies(req) {
            let epoch = (cache::generation(&ctx)?, ctx.now().timestamp());
            if let Ok(crate::auth::Credentials::Basic(login, password)) =
                crate::auth::credentials(req)
            {
                // Verified above at this generation: later requests may skip the transaction.
                self.core
                    .basic_caller_insert(&login, &password, epoch.0, &ctx.principal);
            }
            let key = ResponseCache::key(req, ctx.principal.login().unwrap_or(""));
            if let Some(resp) = self.core.responses.get(epoch, &key) {
                return Ok((resp, None));
            }
            Some((epoch, key))
        } else {
            None
        };
        let resp = api::dispatch(&mut ctx, req, route, endpoint)?;
        if let Some((epoch, key)) = cached {
            self.core.responses.insert(epoch, key, &resp);
        }
        if ctx.is_write() {
            crate::events::dispatch(&mut ctx, &self.core.subscribers)?;
        }
        let moved = ctx.commit()?;
        Ok((resp, moved))
    }
}

/// The response for `req` given the outcome of running it: errors become their JSON answers,
/// HEAD loses its body (keeping the announced length).
fn finish(req: &Request, result: Result<Response>) -> Response {
    let mut resp = match result {
        Ok(r) => r,
        Err(e) => {
            let context = api::Route::parse(req)
                .ok()
                .map(|r| format!("{}{}", req.base_url.trim_end_matches('/'), r.object_path));
            e.into_response_at(context.as_deref())
        }
    };
    if req.method == crate::http::Method::Head {
        // HEAD answers what GET would, without the body; the length is still announced.
        let len = resp.body.len().to_string();
        resp.body.clear();
        resp = resp.with_header("Content-Length", &len);
    }
    resp
}

/// The same storage failure again (for every request of a group whose commit failed).
fn clone_store_error(e: &EngineError) -> EngineError {
    EngineError::Store(match e {
        EngineError::Store(StoreError::QuotaExceeded(t)) => StoreError::QuotaExceeded(t.clone()),
        EngineError::Store(StoreError::Backend(t)) => StoreError::Backend(t.clone()),
        EngineError::Store(StoreError::Misuse(t)) => StoreError::Misuse(t.clone()),
        other => StoreError::Backend(other.to_string()),
    })
}
