//! Engine-wide state shared by every request: the options, the registries (content types,
//! workflows), the sources of time and randomness, and the caches that rest on the store
//! generation. It sits below the request context ([`crate::runtime::context::Ctx`] holds a `&Core`) and
//! knows nothing of the store, the api or the event subscribers (the [`crate::Engine`] holds
//! those).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use crate::ai::embedding::{Embedder, TestEmbedder};
use crate::core::clock::{Clock, Entropy, FixedClock, SeededEntropy, SystemClock, SystemEntropy};
use crate::core::model::workflows::Workflows;
use crate::core::model::TypeRegistry;
use crate::people::auth::password::PasswordCost;
use crate::runtime::cache::ResponseCache;

/// How an engine is set up. Production hosts use [`EngineOptions::production`]; tests use
/// [`EngineOptions::for_tests`] (fixed clock, seeded ids, cheap password hashing, the test embedder).
#[derive(Clone)]
pub struct EngineOptions {
    /// Source of time.
    pub clock: Arc<dyn Clock>,
    /// Source of randomness.
    pub entropy: Arc<dyn Entropy>,
    /// Largest request body accepted (bytes); larger is a 413.
    pub max_body_bytes: usize,
    /// Downloads (`@@download`, `@@images`, ...) larger than this many bytes are answered with a
    /// [`crate::core::http::BlobStream`] for the host to stream ([`crate::Engine::read_stream`]) instead
    /// of a body; `u64::MAX` (the default) always fills the body. The server sets it, so a large
    /// file never sits whole in its memory.
    pub stream_downloads_over: u64,
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
    /// Bytes of answers the response cache may hold (`crate::runtime::cache`); 0 (the default) turns
    /// it off, and with it the cache of verified credentials. Engines with a `test_clock` never
    /// cache.
    pub response_cache_bytes: usize,
    /// Other processes write the same store (several servers on one database). The cache then
    /// answers only after reading the store generation in the request's own transaction (a
    /// commit it did not make starts it over), never from memory alone. When `false` (the
    /// default), this engine must be the store's only writer: the server's lock file
    /// guarantees it for SQLite; several browser tabs sharing one database do not.
    pub shared_store: bool,
    /// Write requests may run side by side, each against a snapshot of its own, with only their
    /// commits serial (`Engine::prepare_write`, `Engine::commit_prepared`,
    /// [`crate::runtime::occ`]). The engine then records every commit's written keys. Hosts that
    /// run writes on several threads set it; `false` (the default) keeps the single writer.
    pub parallel_writes: bool,
    /// With parallel writes: told why each prepared write found stale at commit runs again
    /// (the key another commit wrote, [`crate::runtime::occ::Stale`]), so that a key every
    /// write meets can be found on a running host. Hosts log it at debug level.
    pub stale_log: Option<ErrorLog>,
    /// Where the detail of failures inside the service goes (a store error, a record that does
    /// not decode, a bug): the client only learns that the request failed. Hosts log it.
    pub error_log: Option<ErrorLog>,
    /// What stores the data, as `@system` names it (hosts set it: `SQLite 3.x`, `IndexedDB`).
    pub store_backend: String,
    /// Where notices go that are not failures (content rules' logger actions). Hosts log them.
    pub info_log: Option<ErrorLog>,
    /// Where progress of long work done when a store is opened goes (building the catalog of a
    /// site written before it had one: a line every 1,000 objects). Hosts log it.
    pub progress_log: Option<ErrorLog>,
    /// Called after a transaction that queued outbox deliveries committed (`crate::automation::jobs`): a
    /// host wakes its delivery task with it instead of waiting for its next poll.
    pub outbox_notify: Option<Arc<dyn Fn() + Send + Sync>>,
    /// Where webhooks may go (`crate::core::net`): internal addresses are refused unless
    /// allow-listed here; checked when a rule or scheduled job is saved (hosts check again at
    /// delivery, against the resolved addresses).
    pub webhook_destinations: crate::core::net::DestinationPolicy,
    /// Called after a transaction that wrote change log entries committed (`crate::sync::changes`):
    /// a host wakes the clients following the change feed (Server-Sent Events) with it.
    pub changes_notify: Option<Arc<dyn Fn() + Send + Sync>>,
    /// The sentence-embedding model behind `@related` (`crate::ai::embedding`); `None` (the
    /// production default) answers "AI is disabled.". [`EngineOptions::for_tests`] sets the
    /// deterministic [`crate::ai::embedding::TestEmbedder`].
    pub embedder: Option<Arc<dyn Embedder>>,
    /// The language model behind `@chat` and `@generate` ([`crate::ai::llm::Llm`], implemented by
    /// the host); `None` (the default) answers "AI is disabled.".
    pub llm: Option<Arc<dyn crate::ai::llm::Llm>>,
    /// Decodes uploaded images and makes their scales ([`crate::core::images::ImageCodec`],
    /// implemented by the host): by default the Rust codecs (feature `image-codecs`), or, built
    /// without them, a codec that refuses every image.
    pub images: Arc<dyn crate::core::images::ImageCodec>,
    /// How people may log in: with a password stored here, and through which external identity
    /// providers (single sign-on, run by the host). The default: passwords, no provider.
    pub login: LoginOptions,
    /// How a request (or a group of them) that met an optimistic store's conflict runs again:
    /// how many runs in all, and the host's pause before each re-run. The default: at most
    /// [`MAX_ATTEMPTS`] runs, no pause.
    pub conflict_retry: ConflictRetry,
}

/// How often a request (or a group) runs when an optimistic store reports a conflict, unless
/// the host says otherwise ([`ConflictRetry::max_attempts`]).
pub const MAX_ATTEMPTS: usize = 5;

/// How the engine runs a request (or a group, `Engine::handle_routed_group`) again when an
/// optimistic store reports a conflict ([`crate::core::store::StoreError::Conflict`]): nothing of
/// the attempt was applied, so the whole request runs again, up to `max_attempts` runs in all;
/// the last conflict is answered 503 Busy. The engine neither sleeps nor reads a clock (it builds
/// for the browser): a host that shares its store with other writers gives the pause here.
#[derive(Clone)]
pub struct ConflictRetry {
    /// Most runs in all, the first included (0 counts as 1).
    pub max_attempts: usize,
    /// Called before each re-run with the number of runs that conflicted so far (1 before the
    /// second run), after the conflicting attempt's transaction has ended: the host waits there
    /// (e.g. a growing pause with random jitter, so that the writers that just collided do not
    /// collide again). `None`: the request runs again at once.
    pub pause: Option<Arc<dyn Fn(usize) + Send + Sync>>,
}

impl Default for ConflictRetry {
    fn default() -> Self {
        ConflictRetry {
            max_attempts: MAX_ATTEMPTS,
            pause: None,
        }
    }
}

impl std::fmt::Debug for ConflictRetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConflictRetry")
            .field("max_attempts", &self.max_attempts)
            .field("pause", &self.pause.is_some())
            .finish()
    }
}

/// How people may log in (the operator's choice, [`EngineOptions::login`]).
#[derive(Debug, Clone)]
pub struct LoginOptions {
    /// Password login (`POST @login` with a password, HTTP Basic) is accepted; `false` refuses
    /// it with a 403 (`@login`) or 401 (Basic), so only the external providers log people in.
    pub password: bool,
    /// The external identity providers the host runs (OpenID Connect), in the order `GET
    /// @login` lists them; a login through one of them is
    /// `crate::people::auth::external::log_in`.
    pub providers: Vec<LoginProvider>,
}

impl Default for LoginOptions {
    fn default() -> Self {
        LoginOptions {
            password: true,
            providers: Vec::new(),
        }
    }
}

/// An external identity provider as `GET @login` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginProvider {
    /// Its id (a path segment: `@login-oidc/<id>`).
    pub id: String,
    /// What the login form shows ("Log in with <title>").
    pub title: String,
}

/// Receives the detail of a failure inside the service ([`EngineOptions::error_log`]).
pub type ErrorLog = Arc<dyn Fn(&str) + Send + Sync>;

impl EngineOptions {
    /// Real clock, OS randomness, production password cost.
    pub fn production() -> Self {
        EngineOptions {
            clock: Arc::new(SystemClock),
            entropy: Arc::new(SystemEntropy),
            max_body_bytes: 16 * 1024 * 1024,
            stream_downloads_over: u64::MAX,
            token_ttl_secs: 12 * 3600,
            password_cost: PasswordCost::PRODUCTION,
            test_clock: None,
            default_batch_size: 25,
            max_batch_size: 1000,
            response_cache_bytes: 0,
            shared_store: false,
            parallel_writes: false,
            error_log: None,
            store_backend: "memory (MemStore)".into(),
            info_log: None,
            stale_log: None,
            progress_log: None,
            outbox_notify: None,
            webhook_destinations: crate::core::net::DestinationPolicy::default(),
            changes_notify: None,
            embedder: None,
            llm: None,
            images: crate::core::images::default_codec(),
            login: LoginOptions::default(),
            conflict_retry: ConflictRetry::default(),
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
            shared_store: false,
            parallel_writes: false,
            embedder: Some(Arc::new(TestEmbedder)),
            ..Self::production()
        }
    }
}

/// Engine-wide state shared by every request (everything but the store).
pub struct Core {
    /// Options.
    pub options: EngineOptions,
    /// The type registry as last read from the store, with the registry version (`s:types`) it
    /// was read at ([`crate::runtime::context::Ctx::types`]): requests that read that version share it.
    types: Mutex<Option<(u64, Arc<TypeRegistry>)>>,
    /// Workflows.
    pub workflows: Workflows,
    /// Clock (from the options).
    pub clock: Arc<dyn Clock>,
    /// Randomness (from the options).
    pub entropy: Arc<dyn Entropy>,
    /// When this engine started, by its clock (`@health` reports the uptime from it).
    pub started: chrono::DateTime<chrono::Utc>,
    /// Verified Basic credentials, by SHA-256 of `login\0password` (the password itself is never
    /// kept): the one cache of them ([`VerifiedBasic`]).
    basic: Mutex<HashMap<[u8; 32], VerifiedBasic>>,
    /// Login tokens whose signature was checked, by token: with which site secret, and their
    /// claims ([`Core::token_checked`]).
    tokens: Mutex<HashMap<String, VerifiedToken>>,
    /// A password hash of nobody's password, made with this engine's cost: a login attempt for an
    /// unknown login verifies against it, so it costs what a wrong password of a known login
    /// costs (an attacker cannot tell logins apart by the answer's speed).
    dummy_hash: std::sync::OnceLock<String>,
    /// Answers of repeated safe requests ([`crate::runtime::cache`]).
    pub responses: ResponseCache,
    /// The latest store generation a commit of this engine reached, plus one (0: none yet).
    committed: std::sync::atomic::AtomicU64,
    /// Copies of the mails that carry a one-time token, kept only by engines with a test clock
    /// (read by the test-only `GET /@test-mails`); the mails themselves go through the outbox
    /// ([`crate::automation::mail`]).
    test_mails: Mutex<Vec<Mail>>,
    /// Set when a request queued outbox deliveries; the commit that makes them durable tells
    /// the host ([`EngineOptions::outbox_notify`]).
    pub outbox_pending: std::sync::atomic::AtomicBool,
    /// Set when a request wrote change log entries; the commit that makes them durable tells
    /// the host ([`EngineOptions::changes_notify`]).
    pub changes_pending: std::sync::atomic::AtomicBool,
    /// The site profile once read from a committed state ([`Core::known_profile`]): it never
    /// changes once the site exists, so requests share it instead of each reading it.
    profile: std::sync::OnceLock<crate::core::model::profile::SiteProfile>,
    /// With parallel writes: per folder uid, the position after the last one handed to a new
    /// child ([`Core::child_position`]), so that creates in one folder prepared side by side
    /// take different positions.
    positions: Mutex<HashMap<String, u64>>,
    /// With parallel writes: the ids new objects were given by writes not yet committed (or
    /// committed after older snapshots), so that creates of one title in one folder prepared
    /// side by side take different ids ([`crate::runtime::occ::IdHolds`]).
    pub ids: Arc<crate::runtime::occ::IdHolds>,
}

/// Most folders [`Core::child_position`] remembers before it forgets them all (a position
/// handed out twice is then caught at commit: the create read its `c:` key).
const POSITIONS_MAX: usize = 4096;

/// A test engine's copy of a mail that carries a token (see [`Core::keep_test_mail`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Mail {
    /// The recipient.
    pub to: String,
    /// The subject.
    pub subject: String,
    /// The text.
    pub body: String,
    /// The one-time token the mail carries, if any (what a test reads through `@test-mails`
    /// instead of parsing the text).
    pub token: Option<String>,
}

/// Most mails a test engine keeps (the oldest go first).
const TEST_MAILS_MAX: usize = 32;

/// Most verified Basic credentials remembered before the cache is cleared.
const BASIC_CACHE_MAX: usize = 4096;

/// A login token whose signature was found valid with the site secret `secret`, and what it
/// claims. Only the signature and the decoding are remembered: the expiry, the revocation, the
/// user and its credential version are checked on every request
/// ([`crate::people::auth::verify_token`]).
struct VerifiedToken {
    secret: Vec<u8>,
    claims: crate::people::auth::jwt::Claims,
}

/// Basic credentials found valid: against which stored password hash (so a changed password
/// misses). Whom they stand for is kept by the response cache ([`Core::basic_key`]).
#[derive(Clone)]
struct VerifiedBasic {
    password_hash: String,
}

impl Core {
    /// The state of a new engine configured by `options`: the built-in types and workflows,
    /// empty caches (the response cache is off for engines with a test clock).
    pub fn new(options: EngineOptions) -> Self {
        let cache_bytes = if options.test_clock.is_some() {
            0
        } else {
            options.response_cache_bytes
        };
        Core {
            started: options.clock.now(),
            clock: options.clock.clone(),
            entropy: options.entropy.clone(),
            options,
            types: Mutex::new(None),
            workflows: Workflows::builtin(),
            basic: Mutex::new(HashMap::new()),
            tokens: Mutex::new(HashMap::new()),
            dummy_hash: std::sync::OnceLock::new(),
            responses: ResponseCache::new(cache_bytes),
            committed: std::sync::atomic::AtomicU64::new(0),
            test_mails: Mutex::new(Vec::new()),
            outbox_pending: std::sync::atomic::AtomicBool::new(false),
            changes_pending: std::sync::atomic::AtomicBool::new(false),
            profile: std::sync::OnceLock::new(),
            positions: Mutex::new(HashMap::new()),
            ids: Arc::default(),
        }
    }

    /// The position of a new child of folder `parent`, whose record says `next_pos`. On the
    /// serial paths that is `next_pos`. With parallel writes ([`EngineOptions::parallel_writes`])
    /// creates in one folder run on snapshots that all show the same `next_pos`: the position
    /// is then the larger of `next_pos` and the one after the last position this engine handed
    /// out in `parent`, so that each takes its own (a create that fails or runs again leaves a
    /// gap, as a delete does). The folder's counters are merged at commit
    /// ([`crate::runtime::commit::FolderMerge`]).
    pub fn child_position(&self, parent: &str, next_pos: u64) -> u64 {
        if !self.options.parallel_writes {
            return next_pos;
        }
        let Ok(mut handed) = self.positions.lock() else {
            return next_pos;
        };
        let pos = handed.get(parent).copied().unwrap_or(0).max(next_pos);
        if handed.len() >= POSITIONS_MAX && !handed.contains_key(parent) {
            handed.clear();
        }
        handed.insert(parent.to_string(), pos + 1);
        pos
    }

    /// The site profile, when a request or the host has read it already.
    pub fn known_profile(&self) -> Option<crate::core::model::profile::SiteProfile> {
        self.profile.get().copied()
    }

    /// Keep `profile`, read from a committed state of the site (the first one kept wins: the
    /// profile of a site never changes); the profile kept is returned.
    pub fn remember_profile(
        &self,
        profile: crate::core::model::profile::SiteProfile,
    ) -> crate::core::model::profile::SiteProfile {
        *self.profile.get_or_init(|| profile)
    }

    /// The type registry of registry version `version`, if it is the one cached.
    pub fn cached_types(&self, version: u64) -> Option<Arc<TypeRegistry>> {
        let cached = self.types.lock().ok()?;
        match &*cached {
            Some((v, reg)) if *v == version => Some(reg.clone()),
            _ => None,
        }
    }

    /// Remember `registry` as the committed type registry of registry version `version` (a newer
    /// one replaces an older; an older one never replaces a newer).
    pub fn cache_types(&self, version: u64, registry: Arc<TypeRegistry>) {
        if let Ok(mut cached) = self.types.lock() {
            if cached.as_ref().is_none_or(|(v, _)| *v <= version) {
                *cached = Some((version, registry));
            }
        }
    }

    /// Keep a copy of `mail` for `@test-mails` on engines with a test clock (contract tests
    /// read one-time tokens there); other engines keep nothing. Sending it is the outbox's work
    /// ([`crate::automation::mail::queue`]).
    pub fn keep_test_mail(&self, mail: Mail) {
        if self.options.test_clock.is_some() {
            if let Ok(mut m) = self.test_mails.lock() {
                if m.len() >= TEST_MAILS_MAX {
                    m.remove(0);
                }
                m.push(mail);
            }
        }
    }

    /// The mails kept by a test engine, oldest first (empty elsewhere).
    pub fn test_mails(&self) -> Vec<Mail> {
        self.test_mails
            .lock()
            .map(|m| m.clone())
            .unwrap_or_default()
    }

    /// A commit moved the store generation: drop the cached answers and callers that read what
    /// it wrote ([`ResponseCache::publish`]).
    pub fn publish(&self, moved: Option<crate::runtime::cache::Moved>) {
        if let Some(m) = moved {
            self.committed
                .fetch_max(m.to.saturating_add(1), std::sync::atomic::Ordering::AcqRel);
            self.responses.publish(m.from, m.to, m.writes);
        }
    }

    /// The latest store generation a commit of this engine reached, if it committed anything.
    pub fn committed_generation(&self) -> Option<u64> {
        self.committed
            .load(std::sync::atomic::Ordering::Acquire)
            .checked_sub(1)
    }

    /// A hash to verify a password against when the login is unknown (made once, with this
    /// engine's password cost, from random bytes nobody knows).
    pub fn dummy_password_hash(&self) -> &str {
        self.dummy_hash.get_or_init(|| {
            let mut secret = [0u8; 16];
            self.entropy.fill(&mut secret);
            let secret: String = secret.iter().map(|b| format!("{b:02x}")).collect();
            crate::people::auth::password::hash(
                &secret,
                self.options.password_cost,
                self.entropy.as_ref(),
            )
            .unwrap_or_default()
        })
    }

    /// Whether `login`/`password` were verified against `password_hash` (the user's current
    /// stored hash) before.
    pub fn basic_verified(&self, login: &str, password: &str, password_hash: &str) -> bool {
        self.basic
            .lock()
            .map(|c| {
                c.get(&basic_digest(login, password))
                    .is_some_and(|v| v.password_hash == password_hash)
            })
            .unwrap_or(false)
    }

    /// Remember that `login`/`password` match `password_hash`.
    pub fn basic_remember(&self, login: &str, password: &str, password_hash: &str) {
        insert_bounded(
            &self.basic,
            basic_digest(login, password),
            VerifiedBasic {
                password_hash: password_hash.to_string(),
            },
        );
    }

    /// The claims of `token` if its signature was found valid before with `secret` (the site's
    /// current secret: a rotated secret misses). Nothing else about the token is vouched for.
    pub fn token_checked(
        &self,
        token: &str,
        secret: &[u8],
    ) -> Option<crate::people::auth::jwt::Claims> {
        let c = self.tokens.lock().ok()?;
        c.get(token)
            .filter(|v| v.secret == secret)
            .map(|v| v.claims.clone())
    }

    /// Remember that `token`'s signature is valid with `secret`, and its claims.
    pub fn token_remember(
        &self,
        token: &str,
        secret: &[u8],
        claims: &crate::people::auth::jwt::Claims,
    ) {
        insert_bounded(
            &self.tokens,
            token.to_string(),
            VerifiedToken {
                secret: secret.to_vec(),
                claims: claims.clone(),
            },
        );
    }

    /// The response cache's key of Basic credentials (a digest: the cache holds no password).
    pub fn basic_key(login: &str, password: &str) -> String {
        let digest: String = basic_digest(login, password)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        ResponseCache::caller_key("b", &digest)
    }

    /// Whether the caches that rest on the store generation are on
    /// ([`EngineOptions::response_cache_bytes`]).
    pub fn caches_enabled(&self) -> bool {
        self.responses.enabled()
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
