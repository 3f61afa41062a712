//! The content engine for JavaScript: the same REST API as `host-server`, answered in the page (or a
//! Service Worker) and persisted in IndexedDB.
//!
//! ```js
//! import init, { openSite } from "./pkg/host_wasm.js";
//! await init();
//! const site = await openSite("my-site", { baseUrl: "http://localhost:8080", adminPassword: "a-long-secret" });
//! const resp = await site.fetch(new Request("http://localhost:8080/", { headers: { Accept: "application/json" } }));
//! console.log(resp.status, await resp.json());
//! ```
//!
//! # Persistence
//!
//! The engine is synchronous and runs on [`engine::MemStore`], loaded with every pair from IndexedDB
//! at open. The store's commit hook (synchronous) records each committed change set together with
//! its before-image (the values the keys had before). [`Site::fetch`] then writes the change set to
//! IndexedDB in one readwrite transaction and resolves only after that transaction completes.
//! If the write fails, the before-image is applied to the memory copy, so memory equals IndexedDB
//! again, and the response becomes a JSON error (507 for quota, 500 otherwise). The detail of such
//! a failure, and of any other failure inside the service (a record that does not decode, a bug),
//! is not in the response: it goes to the browser console (`console.error`), naming the site and
//! the request.
//!
//! Requests of one site handle run one at a time, in the order `fetch` was called (an async
//! queue), so no request ever sees data that is not yet durable, and a rollback never undoes
//! another request's work. A read that finds the handle idle and memory fresh (below) is answered
//! within the `fetch` call; the promise is then already resolved.
//!
//! # Several tabs
//!
//! IndexedDB holds a version counter and a log of recent change sets (see [`idb`]). When another
//! tab announced a change, or memory was last compared with IndexedDB more than a second ago, the
//! handle compares the counter with the version its memory reflects and applies newer change sets
//! from the log first (or reloads everything if the log is too short). Otherwise memory is used as
//! it is, and writes are checked afterwards: a write that commits is compare-and-set on the counter
//! inside the IndexedDB transaction, so if another tab wrote in between, the write aborts, memory
//! is rolled back, the handle catches up and re-runs the request; a write request that commits
//! nothing (an error answer) re-reads the counter and is re-run after catching up if it moved.
//! A `BroadcastChannel` named `host-wasm:<site name>` tells other tabs that something changed
//! (`Site.onchange` fires there).
#![warn(missing_docs)]

pub mod convert;
pub mod idb;
pub mod images;
mod queue;
pub mod replica;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use engine::ErrorLog;
use engine::StoreError;
use engine::{
    Direction, Engine, EngineError, EngineOptions, MemStore, Response as EngineResponse, SiteSetup,
    Store,
};
use js_sys::{Function, Promise};
use serde::Deserialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{BroadcastChannel, IdbDatabase, MessageEvent};

/// A committed change set (`None` = delete), as the engine's memory store reports it.
pub type ChangeSet = std::collections::BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// How often a write is re-run after losing a race against another tab.
const MAX_ATTEMPTS: usize = 8;

/// How often a request is re-run after waiting for the browser's image work (a read, then the
/// scales, then a spare).
const MAX_IMAGE_ROUNDS: usize = 4;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** Options of {@link openSite}. */
export interface OpenSiteOptions {
  /** Absolute URL of the site root as clients address it; every `@id` starts with it.
   *  Requests passed to `site.fetch` must be under its path. Default `http://localhost:8080`. */
  baseUrl?: string;
  /** Password of the admin user, needed only when the site is created (first open). */
  adminPassword?: string;
  /** Login of the admin user created with the site. Default `admin`. */
  adminLogin?: string;
  /** Title of the site root when it is created. Default `Site`. */
  title?: string;
  /** Default language code of a new site. Default `en`. */
  language?: string;
  /** Fixed clock, seeded ids, cheap password hashing: byte-identical answers for tests. Default false. */
  deterministic?: boolean;
  /** Profiles: `"nick"` (the site answers as Nick 2.8 does where Nick and Plone differ; chosen
   *  when the site is created, refused on an existing site created without it), and profiles to
   *  install: `"multilingual"` (translations between the site's languages) or
   *  `"multilingual-content"` (the same plus one language root folder `/<code>/` per language),
   *  applied when the site is created and, on an existing site, at every open (idempotent). */
  profiles?: ("nick" | "multilingual" | "multilingual-content")[];
  /** The site's languages, the first being the default (e.g. `["en", "de"]`); used with `profiles`. */
  languages?: string[];
  /** `"indexeddb"` (default) persists; `"memory"` keeps everything in memory (tests, Node). */
  storage?: "indexeddb" | "memory";
  /** The sentence-embedding model behind `@related`: `"test"` for the deterministic test
   *  embedder (contract tests), or the bytes of a static model (`model.safetensors` and
   *  `tokenizer.json`, as `scripts/prepare-embedding-model.sh` makes them) with a name.
   *  Without it, `@related` answers 400 "AI is disabled.". */
  embeddingModel?: "test" | { name?: string; model: Uint8Array; tokenizer: Uint8Array };
  /** Make (or open) a replica of the site at this server URL (its site root): the site is
   *  filled from the server through its API and follows it while online; writes made here are
   *  sent to it (see `sync()`, `conflicts()`). A new replica needs `credentials`. */
  server?: string;
  /** The server user: `{login, password}` (the password stays in memory) or `{login, token}`. */
  credentials?: { login?: string; password?: string; token?: string };
}
"#;

/// Options of [`open_site`] (see the TypeScript interface `OpenSiteOptions`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OpenOptions {
    /// Base URL for `@id`s.
    pub base_url: Option<String>,
    /// Admin password for site creation.
    pub admin_password: Option<String>,
    /// Admin login for site creation.
    pub admin_login: Option<String>,
    /// Site title for site creation.
    pub title: Option<String>,
    /// Default language for site creation.
    pub language: Option<String>,
    /// Deterministic engine options (tests).
    pub deterministic: bool,
    /// The site profile (`nick`) and profiles to install (`multilingual`, `multilingual-content`).
    pub profiles: Vec<String>,
    /// The site's languages, the first being the default.
    pub languages: Vec<String>,
    /// `indexeddb` or `memory`.
    pub storage: Option<String>,
    /// The embedding model (`embeddingModel`, read apart from the other options: it may hold
    /// bytes).
    #[serde(skip)]
    pub embedding_model: Option<EmbeddingModel>,
    /// The server this site replicates.
    pub server: Option<String>,
    /// The server user's credentials.
    pub credentials: Option<replica::Credentials>,
}

/// The `embeddingModel` option.
#[derive(Debug, Clone)]
pub enum EmbeddingModel {
    /// `"test"`: [`engine::TestEmbedder`].
    Test,
    /// A static model's files.
    Static {
        /// Its name.
        name: String,
        /// `model.safetensors`.
        model: Vec<u8>,
        /// `tokenizer.json`.
        tokenizer: Vec<u8>,
    },
}

impl EmbeddingModel {
    /// The `embeddingModel` value of the options object `options`, if any.
    pub fn from_options(options: &JsValue) -> Result<Option<Self>, JsValue> {
        let v = js_sys::Reflect::get(options, &JsValue::from_str("embeddingModel"))
            .unwrap_or(JsValue::UNDEFINED);
        if v.is_undefined() || v.is_null() {
            return Ok(None);
        }
        if v.as_string().as_deref() == Some("test") {
            return Ok(Some(EmbeddingModel::Test));
        }
        let bytes = |key: &str| -> Result<Vec<u8>, JsValue> {
            let b = js_sys::Reflect::get(&v, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED);
            b.dyn_into::<js_sys::Uint8Array>()
                .map(|a| a.to_vec())
                .map_err(|_| {
                    js_err(format!(
                        "openSite: embeddingModel.{key} must be a Uint8Array (or embeddingModel \"test\")"
                    ))
                })
        };
        let name = js_sys::Reflect::get(&v, &JsValue::from_str("name"))
            .ok()
            .and_then(|n| n.as_string())
            .unwrap_or_else(|| "model".into());
        Ok(Some(EmbeddingModel::Static {
            name,
            model: bytes("model")?,
            tokenizer: bytes("tokenizer")?,
        }))
    }

    /// The embedder.
    pub fn load(&self) -> Result<Arc<dyn engine::Embedder>, JsValue> {
        Ok(match self {
            EmbeddingModel::Test => Arc::new(engine::TestEmbedder),
            EmbeddingModel::Static {
                name,
                model,
                tokenizer,
            } => Arc::new(
                engine::StaticEmbedder::from_bytes(name, model, tokenizer)
                    .map_err(|e| js_err(format!("openSite: {e}")))?,
            ),
        })
    }
}

/// The default base URL when none is given.
pub const DEFAULT_BASE_URL: &str = "http://localhost:8080";

/// A change set recorded by the commit hook, with what it replaced.
struct Recorded {
    changes: ChangeSet,
    before: ChangeSet,
}

type Pending = Arc<Mutex<Vec<Recorded>>>;

/// How long (ms) a read may rely on memory without checking IndexedDB for other tabs' writes when
/// no change notice arrived (notices can be lost while a tab is frozen).
const READ_RECHECK_MS: f64 = 1000.0;

struct SiteInner {
    name: String,
    base_url: String,
    /// The path of `base_url` (`URL.pathname`), which request paths must lie under.
    base_path: String,
    engine: Engine<MemStore>,
    store: MemStore,
    pending: Pending,
    db: Option<IdbDatabase>,
    /// The database version the memory copy reflects.
    version: Cell<f64>,
    /// How the keyspace was read at open (`None` for in-memory sites).
    loaded_from: Option<idb::LoadedFrom>,
    /// The version of the snapshot in IndexedDB (0: none).
    snapshot_version: Cell<f64>,
    /// A write happened since the last snapshot check.
    snapshot_due: Cell<bool>,
    /// Between `Site.beginBulk()` and `Site.endBulk()`: writes stay in memory and are written to
    /// IndexedDB as one change set at the end.
    bulk: Cell<bool>,
    /// The next snapshot check rewrites it even if it lags less than `SNAPSHOT_EVERY` (after a bulk).
    force_snapshot: Cell<bool>,
    /// Set by another tab's change notice: the next request must catch up from IndexedDB.
    stale: Rc<Cell<bool>>,
    /// When (ms, `Date.now()`) memory was last checked against IndexedDB.
    last_check: Cell<f64>,
    queue: queue::Queue,
    channel: Option<BroadcastChannel>,
    onchange: Rc<RefCell<Option<Function>>>,
    closed: Cell<bool>,
    /// Set when memory may differ from IndexedDB and could not be repaired: refuse all requests.
    broken: RefCell<Option<String>>,
    /// Test hook: make the next IndexedDB write fail with this error.
    fail_next_write: RefCell<Option<StoreError>>,
    /// Set for a replica of a server site.
    replica: Option<replica::ReplicaState>,
    /// How long (ms) each phase of opening this handle took, in order (see `Site::open_timings`).
    open_timings: RefCell<Vec<(&'static str, f64)>>,
    /// The engine's image codec: the browser's decoders, asynchronous (see [`images`]).
    images: Arc<images::BrowserCodec>,
    /// The engine's randomness, repeatable for a request run again after image work.
    entropy: Arc<images::ReplayEntropy>,
}

/// `performance.now()` where there is one (windows, workers), else `Date.now()`: milliseconds.
fn now_ms() -> f64 {
    js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("performance"))
        .ok()
        .and_then(|p| p.dyn_into::<web_sys::Performance>().ok())
        .map(|p| p.now())
        .unwrap_or_else(js_sys::Date::now)
}

/// An open site: answers REST API requests from the engine. Create one with `openSite`.
#[wasm_bindgen]
pub struct Site {
    inner: Rc<SiteInner>,
}

/// A promise already settled with `result` (resolved with the value, rejected with the error).
fn settled(result: Result<JsValue, JsValue>) -> Promise {
    match result {
        Ok(v) => Promise::resolve(&v),
        Err(e) => Promise::reject(&e),
    }
}

fn js_err(msg: impl AsRef<str>) -> JsValue {
    js_sys::Error::new(msg.as_ref()).into()
}

/// Open the site stored in the IndexedDB database `name`, creating the site (root and admin user)
/// when the database holds none. A site stored by an earlier schema version is upgraded, in
/// memory and in IndexedDB, before the promise resolves. Rejects (with an `Error` saying why) when IndexedDB is not
/// available, the data was written by a newer version, or a new site has no `adminPassword`.
#[wasm_bindgen(js_name = openSite, unchecked_return_type = "Site")]
pub async fn open_site(
    name: String,
    #[wasm_bindgen(unchecked_param_type = "OpenSiteOptions")] options: JsValue,
) -> Result<Site, JsValue> {
    let opts: OpenOptions = if options.is_undefined() || options.is_null() {
        OpenOptions::default()
    } else {
        let embedding_model = EmbeddingModel::from_options(&options)?;
        let mut opts: OpenOptions = serde_wasm_bindgen::from_value(options)
            .map_err(|e| js_err(format!("openSite: invalid options: {e}")))?;
        opts.embedding_model = embedding_model;
        opts
    };
    Site::open(name, opts).await
}

/// Delete the IndexedDB database of site `name` (all its content). Close open handles first.
#[wasm_bindgen(js_name = deleteSite)]
pub async fn delete_site(name: String) -> Result<(), JsValue> {
    idb::delete_db(&name)
        .await
        .map_err(|e| js_err(format!("deleteSite: {}", idb::js_error_text(&e))))
}

impl Site {
    /// Open (see [`open_site`]) with parsed options.
    pub async fn open(name: String, opts: OpenOptions) -> Result<Site, JsValue> {
        if let Some(p) = opts
            .profiles
            .iter()
            .find(|p| !engine::is_language_profile(p) && !engine::is_site_profile(p))
        {
            return Err(js_err(format!(
                "openSite: unknown profile {p:?} (use \"nick\", \"multilingual\" or \"multilingual-content\")"
            )));
        }
        let persistent = match opts.storage.as_deref() {
            None | Some("indexeddb") => true,
            Some("memory") => false,
            Some(s) => {
                return Err(js_err(format!(
                    "openSite: unknown storage {s:?} (use \"indexeddb\" or \"memory\")"
                )))
            }
        };
        let base_url = opts
            .base_url
            .clone()
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string())
            .trim_end_matches('/')
            .to_string();
        let mut timings = Vec::new();
        let mut t = now_ms();
        let mut phase = |name: &'static str| {
            let now = now_ms();
            timings.push((name, now - t));
            t = now;
        };
        let (db, pairs, version, loaded_from, snapshot_version) = if persistent {
            let db = idb::open_db(&name).await.map_err(|e| {
                js_err(format!(
                    "openSite: cannot open IndexedDB database {name:?}: {}",
                    idb::js_error_text(&e)
                ))
            })?;
            phase("idbOpen");
            let (pairs, version, from, snapshot_version) = idb::load(&db)
                .await
                .map_err(|e| js_err(format!("openSite: cannot read {name:?}: {e}")))?;
            phase("idbRead");
            (Some(db), pairs, version, Some(from), snapshot_version)
        } else {
            (None, Vec::new(), 0.0, None, 0.0)
        };
        let store = MemStore::from_pairs(pairs);
        phase("buildStore");
        let mut options = if opts.deterministic {
            EngineOptions::for_tests()
        } else {
            EngineOptions::production()
        };
        // The embedding model only when asked for (`deterministic` alone leaves it off).
        options.embedder = match &opts.embedding_model {
            Some(m) => Some(m.load()?),
            None => None,
        };
        options.error_log = Some(console_error_log(&name));
        let codec = Arc::new(images::BrowserCodec::default());
        options.images = codec.clone();
        let entropy = Arc::new(images::ReplayEntropy::new(options.entropy.clone()));
        options.entropy = entropy.clone();
        options.store_backend = if persistent {
            "IndexedDB (MemStore persisted)".into()
        } else {
            "memory (MemStore)".into()
        };
        // The hook goes in before the engine opens the store: a schema upgrade that
        // `Engine::new` commits to memory is recorded like any write, and persisted below.
        let Recorder(pending) = record_commits(&store);
        let engine = Engine::new(store.clone(), options).map_err(|e| {
            store.set_commit_hook(None); // the hook holds a clone of the store
            js_err(format!("openSite: {e}"))
        })?;
        phase("engineNew");
        let onchange: Rc<RefCell<Option<Function>>> = Rc::default();
        let stale: Rc<Cell<bool>> = Rc::default();
        let channel = if persistent {
            open_channel(&name, onchange.clone(), stale.clone())
        } else {
            None
        };
        let site = Site {
            inner: Rc::new(SiteInner {
                name,
                base_path: convert::base_path_of(&base_url),
                base_url,
                engine,
                store,
                pending,
                db,
                version: Cell::new(version),
                loaded_from,
                snapshot_version: Cell::new(snapshot_version),
                snapshot_due: Cell::new(true),
                bulk: Cell::new(false),
                // read from anything but a snapshot: write one at once, so that the next open
                // does not replay the whole log (or read the pairs of an earlier layout) again
                force_snapshot: Cell::new(matches!(
                    loaded_from,
                    Some(idb::LoadedFrom::Kv | idb::LoadedFrom::Log)
                )),
                stale,
                last_check: Cell::new(js_sys::Date::now()),
                queue: queue::Queue::default(),
                channel,
                onchange,
                closed: Cell::new(false),
                broken: RefCell::new(None),
                fail_next_write: RefCell::new(None),
                replica: opts
                    .server
                    .as_ref()
                    .map(|_| replica::ReplicaState::default()),
                open_timings: RefCell::new(timings),
                images: codec,
                entropy,
            }),
        };
        let mut t = now_ms();
        let phase = |name: &'static str, t: &mut f64| {
            let now = now_ms();
            site.inner.open_timings.borrow_mut().push((name, now - *t));
            *t = now;
        };
        site.persist_migration().await?;
        phase("persistMigration", &mut t);
        let mut opts = opts;
        if opts.server.is_some() {
            site.prepare_replica(&mut opts).await?;
        }
        site.ensure_site(&opts).await?;
        if opts.server.is_some() {
            site.start_replica(&opts).await?;
        }
        phase("ensureSite", &mut t);
        site.purge_recyclebin().await?;
        phase("purgeRecyclebin", &mut t);
        {
            let _turn = site.inner.queue.acquire().await;
            site.inner.refresh_snapshot().await;
        }
        phase("refreshSnapshot", &mut t);
        Ok(site)
    }

    /// Write the schema upgrade that `Engine::new` made in memory (if any) to IndexedDB, so the
    /// database is upgraded too, not only this handle's copy. When another tab wrote first (it
    /// may have upgraded the database itself), catch up and upgrade what it left, then retry.
    async fn persist_migration(&self) -> Result<(), JsValue> {
        let inner = &self.inner;
        let _turn = inner.queue.acquire().await;
        for _ in 0..MAX_ATTEMPTS {
            match inner.persist().await {
                Ok(()) => return Ok(()),
                Err(idb::WriteError::Conflict) => {
                    inner
                        .catch_up()
                        .await
                        .map_err(|e| js_err(format!("openSite: {e}")))?;
                    inner
                        .engine
                        .migrate()
                        .map_err(|e| js_err(format!("openSite: {e}")))?;
                }
                Err(idb::WriteError::Store(e)) => {
                    return Err(js_err(format!(
                        "openSite: cannot save the schema upgrade: {e}"
                    )))
                }
            }
        }
        Err(js_err(
            "openSite: gave up saving the schema upgrade (other tabs kept writing)",
        ))
    }

    /// Purge the recycle bin's items older than the site's retention period and save that to
    /// IndexedDB: there is no job scheduler yet, so the browser host does it when a site opens.
    async fn purge_recyclebin(&self) -> Result<(), JsValue> {
        let inner = &self.inner;
        let _turn = inner.queue.acquire().await;
        for _ in 0..MAX_ATTEMPTS {
            inner
                .engine
                .purge_expired_recyclebin()
                .map_err(|e| js_err(format!("openSite: purging the recycle bin: {e}")))?;
            match inner.persist().await {
                Ok(()) => return Ok(()),
                Err(idb::WriteError::Conflict) => {
                    inner
                        .catch_up()
                        .await
                        .map_err(|e| js_err(format!("openSite: {e}")))?;
                }
                Err(idb::WriteError::Store(e)) => {
                    return Err(js_err(format!(
                        "openSite: cannot save the recycle bin purge: {e}"
                    )))
                }
            }
        }
        Err(js_err(
            "openSite: gave up purging the recycle bin (other tabs kept writing)",
        ))
    }

    /// Run `op` on the engine in the site's line and save its writes to IndexedDB (catching up
    /// with other tabs and running it again on a conflict).
    async fn write_op<T>(
        &self,
        what: &str,
        op: impl Fn(&Engine<MemStore>) -> engine::Result<T>,
    ) -> Result<T, JsValue> {
        let inner = &self.inner;
        let _turn = inner.queue.acquire().await;
        for _ in 0..MAX_ATTEMPTS {
            if let Err(e) = inner.catch_up().await {
                return Err(js_err(format!("{what}: {e}")));
            }
            let out = op(&inner.engine).map_err(|e| js_err(format!("{what}: {e}")))?;
            match inner.persist().await {
                Ok(()) => return Ok(out),
                Err(idb::WriteError::Conflict) => continue,
                Err(idb::WriteError::Store(e)) => {
                    return Err(js_err(format!("{what}: cannot save: {e}")))
                }
            }
        }
        Err(js_err(format!("{what}: gave up (other tabs kept writing)")))
    }

    /// Before [`Site::ensure_site`] on a replica: a new replica site gets a local admin named
    /// after the server user, with a random password of its own.
    async fn prepare_replica(&self, opts: &mut OpenOptions) -> Result<(), JsValue> {
        let inner = &self.inner;
        {
            let _turn = inner.queue.acquire().await;
            inner
                .catch_up()
                .await
                .map_err(|e| js_err(format!("openSite: {e}")))?;
        }
        let exists = inner
            .engine
            .site_exists()
            .map_err(|e| js_err(format!("openSite: {e}")))?;
        if exists {
            return Ok(());
        }
        let creds = opts.credentials.clone().unwrap_or_default();
        let Some(login) = creds.login.clone().filter(|l| !l.is_empty()) else {
            return Err(js_err(
                "openSite: a new replica needs credentials.login (and a password or a token)",
            ));
        };
        if creds.password.is_none() && creds.token.is_none() {
            return Err(js_err(
                "openSite: a new replica needs credentials.password or credentials.token",
            ));
        }
        opts.admin_login = Some(login);
        opts.admin_password = Some(inner.engine.random_token());
        Ok(())
    }

    /// After [`Site::ensure_site`] on a replica: store the server and the credentials, log in
    /// locally, and run a first sync round (a failure to reach the server is only reported in
    /// the status: the replica works offline).
    async fn start_replica(&self, opts: &OpenOptions) -> Result<(), JsValue> {
        let server = opts
            .server
            .clone()
            .unwrap_or_default()
            .trim_end_matches('/')
            .to_string();
        if !(server.starts_with("http://") || server.starts_with("https://")) {
            return Err(js_err(format!(
                "openSite: server must be an http(s) URL, got {server:?}"
            )));
        }
        let creds = opts.credentials.clone().unwrap_or_default();
        self.write_op("openSite", |e| {
            e.replica_open(&server, creds.login.as_deref(), creds.token.as_deref())
        })
        .await?;
        // the local admin's token, issued without a password: none is stored
        let token = self
            .write_op("openSite", |e| e.replica_local_token())
            .await?;
        if let Some(rep) = &self.inner.replica {
            if token.is_none() {
                return Err(js_err(
                    "openSite: cannot log in to the local replica: its local user is missing",
                ));
            }
            *rep.local_auth.borrow_mut() = token;
            *rep.sync.borrow_mut() = engine::replica::Sync::new(creds.password.clone());
        }
        self.sync_round().await?;
        Ok(())
    }

    /// Create the site on first open (racing tabs: the loser sees the winner's site and stops).
    async fn ensure_site(&self, opts: &OpenOptions) -> Result<(), JsValue> {
        let inner = &self.inner;
        let _turn = inner.queue.acquire().await;
        for attempt in 0..MAX_ATTEMPTS {
            // The first attempt trusts memory, just loaded (and kept current by the migration's
            // compare-and-set): a site that exists stays, and a site created meanwhile by another
            // tab makes our creation's write conflict, so the next attempt catches up. This saves
            // an IndexedDB round trip on every open.
            if attempt > 0 {
                if let Err(e) = inner.catch_up().await {
                    return Err(js_err(format!("openSite: {e}")));
                }
            }
            if inner
                .engine
                .site_exists()
                .map_err(|e| js_err(format!("openSite: {e}")))?
            {
                if opts.profiles.is_empty() && opts.languages.is_empty() {
                    return Ok(());
                }
                let configured = inner
                    .engine
                    .configure_languages(&opts.profiles, &opts.languages);
                match inner.persist().await {
                    Ok(()) => {
                        configured.map_err(|e| {
                            js_err(format!("openSite: cannot apply the profiles: {e}"))
                        })?;
                        return Ok(());
                    }
                    Err(idb::WriteError::Conflict) => continue,
                    Err(idb::WriteError::Store(e)) => {
                        return Err(js_err(format!("openSite: cannot save the profiles: {e}")))
                    }
                }
            }
            let Some(password) = opts.admin_password.as_deref().filter(|p| !p.is_empty()) else {
                return Err(js_err(
                    "openSite: the site does not exist yet; pass adminPassword to create it",
                ));
            };
            let mut setup = SiteSetup::new(password);
            if let Some(l) = &opts.admin_login {
                setup.admin_login = l.clone();
            }
            if let Some(t) = &opts.title {
                setup.title = t.clone();
            }
            if let Some(l) = &opts.language {
                setup.language = l.clone();
            }
            setup.profiles = opts.profiles.clone();
            setup.languages = opts.languages.clone();
            let created = inner.engine.create_site(&setup);
            match inner.persist().await {
                Ok(()) => {
                    created
                        .map_err(|e| js_err(format!("openSite: cannot create the site: {e}")))?;
                    return Ok(());
                }
                Err(idb::WriteError::Conflict) => continue,
                Err(idb::WriteError::Store(e)) => {
                    return Err(js_err(format!("openSite: cannot save the new site: {e}")))
                }
            }
        }
        Err(js_err(
            "openSite: gave up creating the site (other tabs kept writing)",
        ))
    }

    /// The version of the snapshot in IndexedDB as this handle knows it (0: none), for tests.
    pub fn snapshot_version(&self) -> f64 {
        self.inner.snapshot_version.get()
    }

    /// How the keyspace was read when this handle opened: `"snapshot"` (plus the log after it),
    /// `"kv"` (the pairs a database of an earlier layout holds, plus the log after them), `"log"`
    /// (the log from version 1: no snapshot yet) or `"memory"` (in-memory site). For tests and the
    /// benchmark page.
    #[doc(hidden)]
    pub fn loaded_from(&self) -> &'static str {
        match self.inner.loaded_from {
            Some(idb::LoadedFrom::Snapshot) => "snapshot",
            Some(idb::LoadedFrom::Kv) => "kv",
            Some(idb::LoadedFrom::Log) => "log",
            None => "memory",
        }
    }

    /// Test hook: the next IndexedDB write of this handle fails as if the browser reported a quota
    /// error (`quota`) or another storage error, to test the rollback path.
    #[doc(hidden)]
    pub fn fail_next_write_for_tests(&self, quota: bool) {
        let e = if quota {
            StoreError::QuotaExceeded("injected by a test".into())
        } else {
            StoreError::Backend("injected by a test".into())
        };
        *self.inner.fail_next_write.borrow_mut() = Some(e);
    }

    /// Answer one request (see the JS method `fetch`), never failing.
    pub async fn handle(&self, req: engine::Request) -> EngineResponse {
        self.inner.handle(req).await
    }
}

/// The change sets a site's store committed since IndexedDB was last written to, as its commit
/// hook recorded them (see [`site_store`]).
#[derive(Clone, Default)]
pub struct Recorder(Pending);

impl Recorder {
    /// Take everything recorded so far, merged in commit order into the one change set that the
    /// next IndexedDB write carries (see [`idb::write_changes`]).
    pub fn take_merged(&self) -> ChangeSet {
        let recorded = self
            .0
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default();
        merge(&recorded)
    }
}

/// The store a site runs on, built as [`Site::open`] builds it: a [`MemStore`] holding `pairs`
/// (what [`idb::load`] returned) with the site's commit hook, which records every committed change
/// set and its before-image for the write to IndexedDB. Public so that tests
/// run the store conformance suite on exactly this store and write what it records to
/// IndexedDB. Clear the hook (`set_commit_hook(None)`) when done: it holds a clone of the store.
pub fn site_store(pairs: Vec<(Vec<u8>, Vec<u8>)>) -> (MemStore, Recorder) {
    let store = MemStore::from_pairs(pairs);
    let recorder = record_commits(&store);
    (store, recorder)
}

/// Several recorded change sets as one, later writes of a key winning.
fn merge(recorded: &[Recorded]) -> ChangeSet {
    let mut merged = ChangeSet::new();
    for r in recorded {
        merged.extend(r.changes.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    merged
}

/// Install the commit hook of a site's store: it records each committed change set with its
/// before-image, for [`SiteInner::persist`] to write to IndexedDB (or to undo in memory).
fn record_commits(store: &MemStore) -> Recorder {
    let pending: Pending = Arc::default();
    let recorder = Recorder(pending.clone());
    // The hook runs inside the commit, before the change set is applied: read the before-image.
    // It holds a clone of the store (a reference cycle), which `Site::close` / drop breaks.
    let reader = store.clone();
    store.set_commit_hook(Some(Box::new(move |changes: &ChangeSet| {
        let txn = reader.begin_read()?;
        let mut before = ChangeSet::new();
        for key in changes.keys() {
            before.insert(key.clone(), txn.get(key)?);
        }
        pending
            .lock()
            .map_err(|_| StoreError::Backend("commit buffer lock poisoned".into()))?
            .push(Recorded {
                changes: changes.clone(),
                before,
            });
        Ok(())
    })));
    recorder
}

fn open_channel(
    name: &str,
    onchange: Rc<RefCell<Option<Function>>>,
    stale: Rc<Cell<bool>>,
) -> Option<BroadcastChannel> {
    let ctor = js_sys::Reflect::get(&js_sys::global(), &"BroadcastChannel".into()).ok()?;
    if ctor.is_undefined() {
        return None;
    }
    let channel = BroadcastChannel::new(&format!("host-wasm:{name}")).ok()?;
    let cb = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
        stale.set(true);
        let f = onchange.borrow().clone();
        if let Some(f) = f {
            let _ = f.call1(&JsValue::NULL, &e.data());
        }
    });
    channel.set_onmessage(Some(cb.as_ref().unchecked_ref()));
    cb.forget(); // one per open site; lives as long as the channel
    Some(channel)
}

/// The error log of the site `name`'s engine: the detail of failures inside the service (which
/// the client only sees as a bare 500 or 507) goes to the browser console, `console.error`.
fn console_error_log(name: &str) -> ErrorLog {
    let prefix = format!("host-wasm site {name:?}: ");
    Arc::new(move |detail: &str| {
        web_sys::console::error_1(&JsValue::from_str(&format!("{prefix}{detail}")));
    })
}

fn unavailable(message: &str) -> EngineResponse {
    EngineResponse::json(
        503,
        &serde_json::json!({ "type": "ServiceUnavailable", "message": message }),
    )
}

impl SiteInner {
    /// The JSON error response for a storage failure of this host (reading or writing IndexedDB)
    /// while answering `req`; its detail goes to the engine's error log, as the engine's own
    /// failures do, since the response only says that storage failed.
    fn storage_failure(&self, req: &engine::Request, e: StoreError) -> EngineResponse {
        let e = EngineError::Store(e);
        if let Some(detail) = e.log_detail() {
            self.engine
                .log_error(&format!("{} {}: {detail}", req.method.as_str(), req.path));
        }
        e.into_response()
    }

    fn has_pending(&self) -> bool {
        self.pending.lock().map(|p| !p.is_empty()).unwrap_or(true)
    }

    fn take_pending(&self) -> Vec<Recorded> {
        self.pending
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default()
    }

    /// Undo recorded change sets in memory (newest first).
    fn revert(&self, recorded: &[Recorded]) -> Result<(), StoreError> {
        for r in recorded.iter().rev() {
            self.store.apply(&r.before)?;
        }
        Ok(())
    }

    /// Whether IndexedDB is still at the version memory reflects (always for in-memory sites).
    async fn is_current(&self) -> Result<bool, StoreError> {
        let Some(db) = &self.db else { return Ok(true) };
        let current = idb::read_version(db).await? == self.version.get();
        if current {
            self.last_check.set(js_sys::Date::now());
        }
        Ok(current)
    }

    /// Bring the memory copy up to the database's version.
    async fn catch_up(&self) -> Result<(), StoreError> {
        let Some(db) = &self.db else { return Ok(()) };
        match idb::changes_since(db, self.version.get()).await? {
            idb::CatchUp::Current => {}
            idb::CatchUp::Apply { changes, version } => {
                for c in &changes {
                    self.store.apply(c)?;
                }
                self.version.set(version);
            }
            idb::CatchUp::Reload => {
                let (pairs, version, _, snapshot_version) = idb::load(db).await?;
                self.snapshot_version.set(snapshot_version);
                let mut diff: ChangeSet = self
                    .store
                    .begin_read()?
                    .scan(b"", b"", Direction::Forward, usize::MAX)?
                    .into_iter()
                    .map(|(k, _)| (k, None))
                    .collect();
                for (k, v) in pairs {
                    diff.insert(k, Some(v));
                }
                self.store.apply(&diff)?;
                self.version.set(version);
            }
        }
        Ok(())
    }

    /// Rewrite the IndexedDB snapshot from memory when it is missing or lags [`idb::SNAPSHOT_EVERY`]
    /// change sets behind. Call with the queue held and memory equal to IndexedDB at `version`
    /// (right after open, a catch-up or a successful persist). A failure only costs the next open
    /// the slower path, so it is not an error of the request.
    async fn refresh_snapshot(&self) {
        self.snapshot_due.set(false);
        let forced = self.force_snapshot.replace(false);
        let Some(db) = &self.db else { return };
        let version = self.version.get();
        let lag = version - self.snapshot_version.get();
        let have_snapshot = self.snapshot_version.get() > 0.0;
        if version <= 0.0 || (have_snapshot && lag < idb::SNAPSHOT_EVERY && !forced) {
            return;
        }
        let Ok(rows) = self
            .store
            .begin_read()
            .and_then(|t| t.scan(b"", b"", Direction::Forward, usize::MAX))
        else {
            return;
        };
        let data = idb::encode_snapshot(rows.iter().map(|(k, v)| (k.as_slice(), v.as_slice())));
        if idb::write_snapshot(db, version, &data).await.is_ok() {
            self.snapshot_version.set(version);
        }
    }

    /// Drop every older state of the site from IndexedDB (the change-set log, and a snapshot
    /// rewritten from memory), after a replica round removed what its user may no longer see.
    /// Call with the queue held and memory equal to IndexedDB at `version`.
    async fn forget_history(&self) -> Result<(), StoreError> {
        let Some(db) = &self.db else { return Ok(()) };
        let version = self.version.get();
        let rows = self
            .store
            .begin_read()
            .and_then(|t| t.scan(b"", b"", Direction::Forward, usize::MAX))?;
        let data = idb::encode_snapshot(rows.iter().map(|(k, v)| (k.as_slice(), v.as_slice())));
        idb::forget_history(db, version, &data).await?;
        self.snapshot_version.set(version);
        Ok(())
    }

    /// Write what the last engine call committed. On failure memory is rolled back.
    async fn persist(&self) -> Result<(), idb::WriteError> {
        if self.bulk.get() {
            return Ok(()); // written at `Site.endBulk()`
        }
        let recorded = self.take_pending();
        if recorded.is_empty() {
            return Ok(());
        }
        let Some(db) = &self.db else { return Ok(()) };
        let merged = merge(&recorded);
        let injected = self.fail_next_write.borrow_mut().take();
        let result = match injected {
            Some(e) => Err(idb::WriteError::Store(e)),
            None => idb::write_changes(db, self.version.get(), &merged).await,
        };
        match &result {
            Ok(()) => {
                // the compare-and-set proved memory current up to this write
                self.version.set(self.version.get() + 1.0);
                self.last_check.set(js_sys::Date::now());
                self.snapshot_due.set(true);
                if let Some(ch) = &self.channel {
                    let _ = ch.post_message(&JsValue::from_f64(self.version.get()));
                }
            }
            Err(_) => {
                if let Err(e) = self.revert(&recorded) {
                    *self.broken.borrow_mut() = Some(format!(
                        "the in-memory copy could not be rolled back after a failed write ({e}); reopen the site"
                    ));
                }
            }
        }
        result
    }

    async fn handle(&self, req: engine::Request) -> EngineResponse {
        let _turn = self.queue.acquire().await;
        self.run(&req, None).await
    }

    /// Whether a read may rely on memory without checking IndexedDB: no other tab announced a
    /// change and the last check is recent.
    fn fresh(&self, now: f64) -> bool {
        !self.stale.get() && now - self.last_check.get() < READ_RECHECK_MS
    }

    /// Answer `req` without waiting for anything, when that is possible: the caller holds the
    /// turn, the request is safe, memory is fresh, and the engine committed nothing. Otherwise
    /// `Err` with what the engine answered if it ran (then its commit still has to be persisted,
    /// see [`SiteInner::run`]).
    fn answer_now(&self, req: &engine::Request) -> Result<EngineResponse, Option<EngineResponse>> {
        if self.closed.get() {
            return Ok(unavailable("this site handle is closed"));
        }
        if let Some(msg) = self.broken.borrow().as_ref() {
            return Ok(unavailable(msg));
        }
        if !(req.method.is_safe() && self.fresh(js_sys::Date::now())) {
            return Err(None);
        }
        self.entropy.start();
        let resp = self.engine_handle(req);
        if self.images.has_jobs() && !self.has_pending() {
            // waits for the browser's image work: `run` does it and runs the request again
            self.images.forget();
            return Err(None);
        }
        self.images.forget();
        if self.has_pending() {
            return Err(Some(resp));
        }
        Ok(resp)
    }

    /// Run `req` with the turn held: catch up when needed, call the engine, persist what it
    /// committed, re-run after losing a race against another tab. `computed` is the engine's
    /// answer when [`SiteInner::answer_now`] already ran it on fresh memory.
    async fn run(
        &self,
        req: &engine::Request,
        mut computed: Option<EngineResponse>,
    ) -> EngineResponse {
        if computed.is_none() {
            if self.closed.get() {
                return unavailable("this site handle is closed");
            }
            if let Some(msg) = self.broken.borrow().as_ref() {
                return unavailable(msg);
            }
        }
        // After losing a race against another tab, the next attempt must catch up first.
        let mut must_catch_up = false;
        for _ in 0..MAX_ATTEMPTS {
            // Whether this attempt read IndexedDB's version before running the engine.
            let mut checked = false;
            let resp = match computed.take() {
                Some(resp) => resp,
                None => {
                    // While no other tab announced a change and the last check is recent, memory
                    // is taken as current without an IndexedDB round trip. Reads may be that
                    // stale (see READ_RECHECK_MS); a write is checked afterwards: its commit by
                    // the compare-and-set in `persist`, a write that commits nothing below.
                    let now = js_sys::Date::now();
                    if must_catch_up || !self.fresh(now) {
                        self.stale.set(false);
                        if let Err(e) = self.catch_up().await {
                            return self.storage_failure(req, e);
                        }
                        self.last_check.set(now);
                        checked = true;
                    }
                    self.engine_handle_with_images(req).await
                }
            };
            let wrote = self.has_pending();
            match self.persist().await {
                Ok(()) => {}
                Err(idb::WriteError::Conflict) => {
                    must_catch_up = true; // another tab won: catch up, re-run
                    continue;
                }
                Err(idb::WriteError::Store(e)) => return self.storage_failure(req, e),
            }
            if !wrote && !checked && !req.method.is_safe() {
                // An unsafe request that changed nothing (an error, say) answered from memory
                // that was not compared with IndexedDB: make sure no other tab wrote meanwhile,
                // else answer from current data.
                match self.is_current().await {
                    Ok(true) => {}
                    Ok(false) => {
                        must_catch_up = true;
                        continue;
                    }
                    Err(e) => return self.storage_failure(req, e),
                }
            }
            if self.snapshot_due.get() {
                self.refresh_snapshot().await;
            }
            return resp;
        }
        unavailable("the request kept conflicting with writes from other tabs; try again")
    }

    /// Run `req` on the engine, and again after the browser's image work when the engine waits
    /// for it (it answered 503 having changed nothing; see [`images`]): the runs draw the same
    /// randomness, so the answer is the one a synchronous codec would have given.
    async fn engine_handle_with_images(&self, req: &engine::Request) -> EngineResponse {
        self.entropy.start();
        let mut resp = self.engine_handle(req);
        let mut rounds = 0;
        while self.images.has_jobs()
            && resp.status == 503
            && !self.has_pending()
            && rounds < MAX_IMAGE_ROUNDS
        {
            self.images.run_jobs().await;
            self.entropy.rewind();
            resp = self.engine_handle(req);
            rounds += 1;
        }
        self.images.forget();
        resp
    }

    /// Run `req` on the engine. On a replica, a request without credentials acts as the local
    /// admin (the replica's user), and an unsafe request that succeeds is recorded as a pending
    /// write in its own commit, which reaches IndexedDB in the same transaction as the request's.
    fn engine_handle(&self, req: &engine::Request) -> EngineResponse {
        let Some(rep) = &self.replica else {
            return self.engine.handle(req.clone());
        };
        let mut req = req.clone();
        if req.header_value("authorization").is_none() {
            if let Some(t) = rep.local_auth.borrow().as_ref() {
                req.headers
                    .push(("Authorization".into(), format!("Bearer {t}")));
            }
        }
        if req.method.is_safe() || Engine::<MemStore>::replica_is_session_path(&req.path) {
            return self.engine.handle(req);
        }
        let draft = match self.engine.replica_prepare_write(&req.path) {
            Ok(d) => d,
            Err(e) => return e.into_response(),
        };
        let resp = self.engine.handle(req.clone());
        if (200..300).contains(&resp.status) {
            if let Err(e) = self.engine.replica_record_write(&req, draft, &resp) {
                // the local write stands but could not be queued: say so rather than lose it
                self.engine
                    .log_error(&format!("recording a pending write failed: {e}"));
                return e.into_response();
            }
        }
        resp
    }

    fn close(&self) {
        if self.closed.replace(true) {
            return;
        }
        self.store.set_commit_hook(None);
        if let Some(ch) = &self.channel {
            ch.set_onmessage(None);
            ch.close();
        }
        if let Some(db) = &self.db {
            db.close();
        }
    }
}

#[wasm_bindgen]
impl Site {
    /// Answer a request like the global `fetch`: `input` is a `Request`, a URL string or a `URL`,
    /// `init` an optional `RequestInit`. The URL must lie under the site's `baseUrl` path (its
    /// origin is not checked, so relative URLs resolved against the page work too).
    ///
    /// The promise always resolves with a `Response`; API failures are JSON error responses
    /// (`{"type": ..., "message": ...}`), storage failures 507 (quota) or 500. For a write, it
    /// resolves only after the change is durable in IndexedDB.
    #[wasm_bindgen(unchecked_return_type = "Promise<Response>")]
    pub fn fetch(
        &self,
        #[wasm_bindgen(unchecked_param_type = "RequestInfo | URL")] input: JsValue,
        #[wasm_bindgen(unchecked_param_type = "RequestInit")] init: Option<JsValue>,
    ) -> Promise {
        let inner = self.inner.clone();
        let parsed =
            convert::parse_request(&input, init.as_ref(), &inner.base_url, &inner.base_path);
        let convert::Parsed { request, body_from } = match parsed {
            Ok(p) => p,
            Err(resp) => return settled(convert::to_js_response(&resp)),
        };
        // The fast path: a request without a body, nobody ahead in the line, fresh memory and
        // nothing to persist is answered right here (the usual read).
        let mut computed = None;
        let turn = match body_from {
            None => inner.queue.try_acquire(),
            Some(_) => None,
        };
        if turn.is_some() {
            match inner.answer_now(&request) {
                Ok(resp) => return settled(convert::to_js_response(&resp)),
                Err(resp) => computed = resp,
            }
        }
        // Otherwise take a place in the line now, so requests run in the order of the calls.
        let line = turn.ok_or_else(|| inner.queue.acquire());
        wasm_bindgen_futures::future_to_promise(async move {
            let mut request = request;
            let body = match &body_from {
                Some(req) => Some(convert::read_body(req).await),
                None => None,
            };
            // always wait for the turn, even to answer an unreadable body: a turn handed to a
            // waiter that never takes it would block the line
            let _turn = match line {
                Ok(turn) => turn,
                Err(waiting) => waiting.await,
            };
            let resp = match body {
                Some(Err(resp)) => resp,
                Some(Ok(bytes)) => {
                    request.body = bytes;
                    inner.run(&request, computed).await
                }
                None => inner.run(&request, computed).await,
            };
            convert::to_js_response(&resp)
        })
    }

    /// Convenience: `site.request("POST", "/folder", { body: ..., headers: ... })`. A path is taken
    /// relative to `baseUrl`.
    #[wasm_bindgen(unchecked_return_type = "Promise<Response>")]
    pub fn request(
        &self,
        method: String,
        url: String,
        #[wasm_bindgen(unchecked_param_type = "RequestInit")] init: Option<JsValue>,
    ) -> Promise {
        let full = if url.starts_with('/') {
            format!("{}{}", self.inner.base_url, url)
        } else {
            url
        };
        let init_obj = match init.filter(|v| v.is_object()) {
            Some(v) => js_sys::Object::assign(&js_sys::Object::new(), v.unchecked_ref()),
            None => js_sys::Object::new(),
        };
        let _ = js_sys::Reflect::set(&init_obj, &"method".into(), &method.into());
        self.fetch(JsValue::from(full), Some(init_obj.into()))
    }

    /// The site's name (its IndexedDB database).
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.inner.name.clone()
    }

    /// The base URL every `@id` starts with.
    #[wasm_bindgen(getter, js_name = baseUrl)]
    pub fn base_url(&self) -> String {
        self.inner.base_url.clone()
    }

    /// How many change sets this handle's memory copy reflects (IndexedDB's version counter).
    #[wasm_bindgen(getter)]
    pub fn version(&self) -> f64 {
        self.inner.version.get()
    }

    /// How long (ms) each phase of opening this handle took, as an object in phase order:
    /// `idbOpen`, `idbRead` (reading and decoding IndexedDB), `buildStore` (the in-memory store),
    /// `engineNew` (schema check and migrations in memory), `persistMigration`, `ensureSite`,
    /// `purgeRecyclebin`, `refreshSnapshot`. For benchmarks and diagnostics.
    #[wasm_bindgen(js_name = openTimings)]
    pub fn open_timings(&self) -> js_sys::Object {
        let out = js_sys::Object::new();
        for (name, ms) in self.inner.open_timings.borrow().iter() {
            let _ = js_sys::Reflect::set(&out, &JsValue::from_str(name), &JsValue::from_f64(*ms));
        }
        out
    }

    /// Called (with the new version number) when another tab or worker changed this site.
    #[wasm_bindgen(setter)]
    pub fn set_onchange(&self, f: Option<Function>) {
        *self.inner.onchange.borrow_mut() = f;
    }

    /// Deliver the webhooks of the outbox that are due ([`engine::jobs`]): when the browser is
    /// online, each is POSTed with the global `fetch` (headers `X-Signature-256`,
    /// `Idempotency-Key`, `X-Delivery-Attempt`; the receiver must allow the page's origin by
    /// CORS), and its outcome recorded (retried later with backoff when it failed). Mails stay
    /// queued: a browser sends no mail. Resolves with the number of webhooks delivered. Call it
    /// when the page comes online and from time to time.
    #[wasm_bindgen(js_name = deliverOutbox)]
    pub async fn deliver_outbox(&self) -> Result<u32, JsValue> {
        let global = js_sys::global();
        let online = js_sys::Reflect::get(&global, &"navigator".into())
            .and_then(|n| js_sys::Reflect::get(&n, &"onLine".into()))
            .map(|v| v.as_bool().unwrap_or(true))
            .unwrap_or(true);
        if !online {
            return Ok(0);
        }
        let due = self
            .write_op("deliverOutbox", |e| e.claim_webhook_deliveries(16))
            .await?;
        if due.is_empty() {
            return Ok(0);
        }
        let fetch: Function = js_sys::Reflect::get(&global, &"fetch".into())?.dyn_into()?;
        let transport = Fetch {
            fetch: &fetch,
            global: &global,
        };
        let mut outcomes = Vec::new();
        let mut delivered = 0;
        for d in due {
            if !matches!(d.delivery, engine::Delivery::Webhook { .. }) {
                continue;
            }
            let no_smtp = async { Err(String::from("a browser sends no mail")) };
            let outcome = engine::deliver(&d, &transport, &engine::NoMail, no_smtp).await;
            if matches!(outcome, engine::Outcome::Delivered(_)) {
                delivered += 1;
            }
            outcomes.push((d.job.clone(), outcome));
        }
        self.write_op("deliverOutbox", move |e| {
            e.report_deliveries(outcomes.clone())
        })
        .await?;
        Ok(delivered)
    }

    /// Bulk loading (used by the benchmark to seed large sites): until [`Site::end_bulk`], writes
    /// are answered from memory and NOT written to IndexedDB, so a write's promise no longer means
    /// it is durable. For one tab only: another tab's write in between makes `endBulk` fail and
    /// roll memory back to before the bulk.
    #[wasm_bindgen(js_name = beginBulk)]
    pub fn begin_bulk(&self) {
        self.inner.bulk.set(true);
    }

    /// End bulk loading: write everything since [`Site::begin_bulk`] to IndexedDB as one change
    /// set (one transaction, one log entry), then rewrite the snapshot (a bulk's change set is
    /// large, and an open replays log entries far slower than it reads the snapshot). Rejects
    /// (and rolls memory back to before the bulk) when the write fails; a failed snapshot only
    /// costs the next open the slower path, as after any write.
    #[wasm_bindgen(js_name = endBulk)]
    pub async fn end_bulk(&self) -> Result<(), JsValue> {
        let inner = self.inner.clone();
        let _turn = inner.queue.acquire().await;
        inner.bulk.set(false);
        match inner.persist().await {
            Ok(()) => {}
            Err(idb::WriteError::Conflict) => {
                return Err(js_err("endBulk: another tab wrote meanwhile"))
            }
            Err(idb::WriteError::Store(e)) => {
                return Err(js_err(format!("endBulk: cannot save: {e}")))
            }
        }
        if inner.snapshot_due.get() {
            inner.force_snapshot.set(true);
            inner.refresh_snapshot().await;
        }
        Ok(())
    }

    /// Close the handle: the IndexedDB connection and the BroadcastChannel. Later requests answer 503.
    pub fn close(&self) {
        self.inner.close();
    }
}

/// Webhook calls with the global `fetch` (what is sent, and what counts as delivered, is the
/// engine's: [`engine::perform`]).
struct Fetch<'a> {
    fetch: &'a Function,
    global: &'a js_sys::Object,
}

impl engine::WebhookTransport for Fetch<'_> {
    async fn post(&self, post: &engine::WebhookPost<'_>) -> Result<u16, String> {
        let why = |e: JsValue| format!("{e:?}");
        let headers = web_sys::Headers::new().map_err(why)?;
        for (name, value) in &post.headers {
            headers.set(name, value).map_err(why)?;
        }
        let init = web_sys::RequestInit::new();
        init.set_method("POST");
        init.set_headers(&headers);
        init.set_body(&JsValue::from_str(post.body));
        let request = web_sys::Request::new_with_str_and_init(post.url, &init).map_err(why)?;
        let promise: Promise = self
            .fetch
            .call1(self.global, &request)
            .map_err(why)?
            .dyn_into()
            .map_err(why)?;
        let resp: web_sys::Response = wasm_bindgen_futures::JsFuture::from(promise)
            .await
            .map_err(|e| format!("no answer: {e:?}"))?
            .dyn_into()
            .map_err(why)?;
        Ok(resp.status())
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        // breaks the store <-> hook reference cycle; in-flight requests hold their own Rc and end
        // with 503 once closed
        self.inner.close();
    }
}

/// A static embedding model loaded from bytes, usable from JavaScript on its own (the browser
/// benchmark times it; a page may embed texts with the same model as its site).
#[wasm_bindgen(js_name = StaticEmbedding)]
pub struct StaticEmbedding(engine::StaticEmbedder);

#[wasm_bindgen(js_class = StaticEmbedding)]
impl StaticEmbedding {
    /// Load the model from `model.safetensors` and `tokenizer.json` bytes.
    #[wasm_bindgen(constructor)]
    pub fn new(model: &[u8], tokenizer: &[u8]) -> Result<StaticEmbedding, JsValue> {
        engine::StaticEmbedder::from_bytes("model", model, tokenizer)
            .map(StaticEmbedding)
            .map_err(|e| js_err(e.to_string()))
    }

    /// The unit vector of `text`.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        use engine::Embedder;
        self.0.embed(text)
    }
}
