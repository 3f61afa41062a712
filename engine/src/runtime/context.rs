//! The per-request context: the open transaction, the caller, the base URL, pending events and the
//! helpers every handler uses (typed reads and writes, time, ids). Permission decisions, which read
//! the ancestors of an object, are in [`crate::people::permissions`].

use std::cell::{OnceCell, RefCell};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::generation;
use crate::core::keys;
use crate::core::model::types::{BehaviorData, TypeData};
use crate::core::model::{ContentRecord, ContentType, TypeRegistry};
use crate::core::security::Principal;
use crate::core::store::{prefix_end, Direction, KeyValue, Overlay, ReadTxn, StoreError, WriteTxn};
pub use crate::runtime::cache::Moved;
use crate::runtime::cache::ReadSet;
use crate::runtime::commit::{AtCommit, FolderMerge, Pending};
use crate::runtime::state::Core;

/// The transaction of a request: read-only for safe methods, read-write otherwise.
pub enum Txn<'a> {
    /// A snapshot read.
    Read(Box<dyn ReadTxn + 'a>),
    /// The single writer.
    Write(Box<dyn WriteTxn + 'a>),
}

/// Everything a handler works with.
pub struct Ctx<'a> {
    /// Engine-wide configuration and registries.
    pub core: &'a Core,
    txn: Txn<'a>,
    /// Absolute URL of the site root, no trailing slash.
    pub base_url: String,
    /// The caller.
    pub principal: Principal,
    /// The languages the caller accepts (`Accept-Language` codes, best first; empty when it
    /// names none): UI strings are translated by them ([`crate::site::i18n`]).
    pub accept_language: Vec<String>,
    /// The language of the content the request addresses, on a multilingual site (Plone's
    /// content negotiation, [`crate::content::multilingual::content_language`]): UI strings are
    /// served in it before any `Accept-Language`.
    pub content_language: Option<String>,
    /// The language UI strings are served in, once decided ([`crate::site::i18n::Translator`];
    /// `None` inside: untranslated).
    pub ui_language: OnceCell<Option<String>>,
    events: Vec<Event>,
    /// For each pending event, the content rules whose actions were running when it was emitted
    /// (outermost first; empty for the request's own changes): see [`Ctx::running_rules`].
    causes: Vec<Vec<String>>,
    /// The content rules whose actions are running now (outermost first): events emitted
    /// meanwhile are caused by them ([`crate::automation::rules`] stops a rule that triggers itself and
    /// keeps non-cascading rules from triggering others).
    pub running_rules: Vec<String>,
    /// The content rules whose actions caused the event being delivered now
    /// ([`crate::runtime::subscriber::Subscribers::dispatch`] sets it).
    pub event_cause: Vec<String>,
    /// Messages content rules' notify actions address to the caller (hosts may show them).
    pub notices: Vec<String>,
    /// Uids of the objects added by this request, as the content rules saw them: an object
    /// added inside one of them (the members of a copied folder) is no addition of its own.
    pub added_here: Vec<String>,
    delivered: Vec<Event>,
    /// Set by the first write: the commit then moves the store generation ([`crate::runtime::cache`]).
    dirty: bool,
    /// Content records saved by this request, by uid, exactly as stored: reading one back (the
    /// subscribers do, right after a create) then skips decoding it. Any other write or delete
    /// of an `o:` key forgets the record.
    saved: HashMap<String, ContentRecord>,
    /// The site profile ([`Ctx::profile`]), once read.
    profile: OnceCell<crate::core::model::profile::SiteProfile>,
    /// The type registry this request reads ([`Ctx::types`]), once read.
    types: OnceCell<Arc<TypeRegistry>>,
    /// Set when this request wrote the registry: it is then read from the transaction, not the
    /// engine's per-generation cache.
    types_written: bool,
    /// What this request read, when its answer may be cached ([`Ctx::track_reads`]).
    reads: Option<RefCell<ReadSet>>,
    /// The keys this request wrote, when the engine keeps caches ([`Moved::writes`]).
    writes: Option<Vec<Vec<u8>>>,
    /// Work left for the commit ([`Ctx::at_commit`]).
    at_commit: Vec<Box<dyn AtCommit>>,
    /// Folders whose records this request wrote only to count added children
    /// ([`Ctx::put_folder_counters`]).
    counted: Vec<FolderMerge>,
    /// Uids whose `o:` record this request wrote or deleted otherwise: their writes are no
    /// merges.
    outright: HashSet<String>,
    /// The ids this request gave new objects, with parallel writes ([`Ctx::id_free`]).
    holds: RefCell<Vec<crate::runtime::occ::Hold>>,
    /// Counters this request moved ([`Ctx::put_counter`]): written once, when it finishes.
    counters: Overlay,
}

impl<'a> Ctx<'a> {
    /// A context over `txn`, anonymous until authentication runs.
    pub fn new(core: &'a Core, txn: Txn<'a>, base_url: &str) -> Self {
        let writes = matches!(txn, Txn::Write(_));
        Ctx {
            core,
            txn,
            base_url: base_url.trim_end_matches('/').to_string(),
            principal: Principal::Anonymous,
            accept_language: Vec::new(),
            content_language: None,
            ui_language: OnceCell::new(),
            events: Vec::new(),
            causes: Vec::new(),
            running_rules: Vec::new(),
            event_cause: Vec::new(),
            notices: Vec::new(),
            added_here: Vec::new(),
            delivered: Vec::new(),
            dirty: false,
            saved: HashMap::new(),
            profile: OnceCell::new(),
            types: OnceCell::new(),
            types_written: false,
            reads: None,
            writes: ((core.caches_enabled() || core.options.parallel_writes) && writes)
                .then(Vec::new),
            at_commit: Vec::new(),
            counted: Vec::new(),
            outright: HashSet::new(),
            holds: RefCell::new(Vec::new()),
            counters: Overlay::default(),
        }
    }

    /// Record what this request reads from now on (see [`crate::runtime::cache`]).
    pub fn track_reads(&mut self) {
        self.reads = Some(RefCell::new(ReadSet::default()));
    }

    /// What this request has read so far, if it records its reads.
    pub fn reads(&self) -> Option<ReadSet> {
        self.reads.as_ref().map(|r| r.borrow().clone())
    }

    /// Count `reads`, made for this request elsewhere (credentials verified earlier), as its own.
    pub fn add_reads(&self, reads: &ReadSet) {
        if let Some(r) = &self.reads {
            r.borrow_mut().extend(reads);
        }
    }

    /// Stop recording and hand over what this request read.
    pub fn take_reads(&mut self) -> Option<ReadSet> {
        self.reads.take().map(RefCell::into_inner)
    }

    fn reader(&self) -> &dyn ReadTxn {
        match &self.txn {
            Txn::Read(t) => t.as_ref(),
            Txn::Write(t) => {
                let t: &dyn WriteTxn = t.as_ref();
                t
            }
        }
    }

    fn writer(&mut self) -> Result<&mut (dyn WriteTxn + 'a)> {
        self.dirty = true;
        match &mut self.txn {
            Txn::Write(t) => Ok(t.as_mut()),
            Txn::Read(_) => Err(EngineError::Store(StoreError::Misuse(
                "write attempted in a read-only request".into(),
            ))),
        }
    }

    /// Raw read.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(r) = &self.reads {
            r.borrow_mut().key(key);
        }
        if let Some(Some(v)) = self.counters.lookup(key) {
            return Ok(Some(v.to_vec()));
        }
        Ok(self.reader().get(key)?)
    }

    /// Raw range scan.
    pub fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        dir: Direction,
        limit: usize,
    ) -> Result<Vec<KeyValue>> {
        let pairs = if self.counters.is_empty() {
            self.reader().scan(start, end, dir, limit)?
        } else {
            self.counters.merge_scan(start, end, dir, limit, |n| {
                self.reader().scan(start, end, dir, n)
            })?
        };
        if let Some(r) = &self.reads {
            r.borrow_mut().scan(start, end, dir, limit, &pairs);
        }
        Ok(pairs)
    }

    /// Every pair whose key starts with `prefix`, in key order.
    pub fn scan_prefix(&self, prefix: &[u8]) -> Result<Vec<KeyValue>> {
        self.scan(prefix, &prefix_end(prefix), Direction::Forward, usize::MAX)
    }

    /// The last pair (in key order) whose key starts with `prefix`.
    pub fn last_with_prefix(&self, prefix: &[u8]) -> Result<Option<KeyValue>> {
        Ok(self
            .scan(prefix, &prefix_end(prefix), Direction::Reverse, 1)?
            .into_iter()
            .next())
    }

    /// Every value under `prefix`, decoded as JSON records, in key order.
    pub fn values_with_prefix<T: DeserializeOwned>(&self, prefix: &[u8]) -> Result<Vec<T>> {
        self.scan_prefix(prefix)?
            .into_iter()
            .map(|(_, v)| Ok(serde_json::from_slice(&v)?))
            .collect()
    }

    /// Delete every key that starts with `prefix`.
    pub fn delete_prefix(&mut self, prefix: &[u8]) -> Result<()> {
        for (k, _) in self.scan_prefix(prefix)? {
            self.delete(&k)?;
        }
        Ok(())
    }

    /// Read and decode a JSON record.
    pub fn get_json<T: DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>> {
        match self.get(key)? {
            Some(bytes) => Ok(Some(serde_json::from_slice(&bytes)?)),
            None => Ok(None),
        }
    }

    /// Raw write.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.counters.forget(key);
        self.forget_saved(key);
        if let Some(w) = &mut self.writes {
            w.push(key.to_vec());
        }
        Ok(self.writer()?.put(key, value)?)
    }

    fn forget_saved(&mut self, key: &[u8]) {
        if key.starts_with(keys::TYPE_REGISTRY_PREFIX) {
            self.types = OnceCell::new();
            self.types_written = true;
        }
        if let Some(uid) = key.strip_prefix(b"o:") {
            let uid = String::from_utf8_lossy(uid);
            if !self.saved.is_empty() {
                self.saved.remove(uid.as_ref());
            }
            if self.core.options.parallel_writes {
                self.outright.insert(uid.into_owned());
            }
        }
    }

    /// Write the record of folder `rec` after adding a child to it, when that is all this
    /// request changed in it: the commit then merges the counts into the record as committed
    /// ([`FolderMerge`]), so creates in one folder prepared side by side do not conflict. A
    /// folder this request also wrote otherwise (before or after) is written outright. Only
    /// with parallel writes ([`crate::runtime::state::EngineOptions::parallel_writes`]): the
    /// serial paths commit one request at a time and need no merge.
    pub fn put_folder_counters(&mut self, rec: &ContentRecord) -> Result<()> {
        if !self.core.options.parallel_writes {
            return self.put_json(&keys::object(&rec.uid), rec);
        }
        let outright = self.outright.contains(&rec.uid);
        self.put_json(&keys::object(&rec.uid), rec)?;
        if !outright {
            self.outright.remove(&rec.uid);
            match self.counted.iter_mut().find(|m| m.uid == rec.uid) {
                Some(m) => {
                    m.children += 1;
                    m.writes += 1;
                }
                None => self.counted.push(FolderMerge {
                    uid: rec.uid.clone(),
                    children: 1,
                    writes: 1,
                }),
            }
        }
        Ok(())
    }

    /// Set a counter ([`crate::content::counters`]): read back as written at once, but stored
    /// when the request finishes, so that a counter moved twice in one request (an object's
    /// history sequence: its first workflow entry, then its first version) is one store write.
    pub fn put_counter(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if !self.is_write() {
            return Err(EngineError::Store(StoreError::Misuse(
                "write attempted in a read-only request".into(),
            )));
        }
        self.counters.put(key, value);
        Ok(())
    }

    /// Remember `rec` as just written under its `o:` key (see [`Ctx::saved_record`]).
    pub fn remember_saved(&mut self, rec: &ContentRecord) {
        self.saved.insert(rec.uid.clone(), rec.clone());
    }

    /// The record of `uid` as this request last saved it, if it did and nothing has overwritten
    /// or deleted it since.
    pub fn saved_record(&self, uid: &str) -> Option<&ContentRecord> {
        self.saved.get(uid)
    }

    /// Encode and write a JSON record.
    pub fn put_json<T: Serialize>(&mut self, key: &[u8], value: &T) -> Result<()> {
        let bytes = serde_json::to_vec(value)?;
        self.put(key, &bytes)
    }

    /// Raw delete.
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.counters.forget(key);
        self.forget_saved(key);
        if let Some(w) = &mut self.writes {
            w.push(key.to_vec());
        }
        Ok(self.writer()?.delete(key)?)
    }

    /// Whether this request may give a new object the id whose path key is `key`: no object
    /// has it. With parallel writes an id given by another write not yet committed (or
    /// committed after this request's snapshot) is taken too, without reading its key
    /// ([`crate::runtime::occ::IdHolds`]); an id found free is held by this request until it
    /// commits, so it must be the one the request gives (ask for each id once).
    pub fn id_free(&self, key: &[u8]) -> Result<bool> {
        if !self.core.options.parallel_writes || !self.is_write() {
            return Ok(self.get(key)?.is_none());
        }
        let hold = match self.core.ids.take(key, &mut || self.generation().ok()) {
            crate::runtime::occ::Taking::Taken => return Ok(false),
            crate::runtime::occ::Taking::Free(hold) => hold,
        };
        if self.get(key)?.is_some() {
            return Ok(false);
        }
        self.holds.borrow_mut().push(hold);
        Ok(true)
    }

    /// True when this request may write.
    pub fn is_write(&self) -> bool {
        matches!(self.txn, Txn::Write(_))
    }

    /// Leave `work` for the commit ([`crate::runtime::commit`]): it runs there, after the
    /// request's own writes, reading what the commits before this one left. For what every write
    /// moves (the change log's sequence), so that the request itself never reads it.
    pub fn at_commit(&mut self, work: Box<dyn AtCommit>) -> Result<()> {
        if !self.is_write() {
            return Err(EngineError::Store(StoreError::Misuse(
                "write attempted in a read-only request".into(),
            )));
        }
        self.at_commit.push(work);
        Ok(())
    }

    /// Commit (write requests) or end (read requests) the transaction. A transaction that wrote
    /// anything also moves the store generation; the move is returned then, with the keys
    /// written, so cached answers that read them can be dropped (`None`: nothing moved).
    pub fn commit(self) -> Result<Option<Moved>> {
        match self.finish()? {
            (Txn::Write(mut t), pending) => {
                let moved = pending.apply(t.as_mut())?;
                t.commit()?;
                Ok(moved)
            }
            (Txn::Read(_), _) => Ok(None),
        }
    }

    /// End the request's part of the work: its transaction (not committed) and what its commit
    /// must still do ([`Pending::apply`], then the transaction's own commit).
    pub fn finish(mut self) -> Result<(Txn<'a>, Pending)> {
        for (key, value) in std::mem::take(&mut self.counters).into_changes() {
            if let Some(value) = value {
                self.put(&key, &value)?;
            }
        }
        if self.types_written && self.is_write() {
            let next = self.types_version()?.wrapping_add(1);
            self.put(keys::TYPES_VERSION, next.to_string().as_bytes())?;
        }
        let pending = Pending {
            work: std::mem::take(&mut self.at_commit),
            dirty: self.dirty && self.is_write(),
            writes: self.writes.take(),
            merges: std::mem::take(&mut self.counted)
                .into_iter()
                .filter(|m| !self.outright.contains(&m.uid))
                .collect(),
            holds: self.holds.take(),
        };
        Ok((self.txn, pending))
    }

    /// The store generation as seen by this transaction ([`crate::core::generation`]).
    pub fn generation(&self) -> Result<u64> {
        generation::read(self.reader())
    }

    /// The current time (an answer that asks for it is cached for the second only).
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        if let Some(r) = &self.reads {
            r.borrow_mut().clock();
        }
        self.core.clock.now()
    }

    /// The current time, for checking the expiry of the caller's credentials: every request
    /// checks that before any cached answer is used, so it is no dependence of the answer.
    pub fn now_for_credentials(&self) -> chrono::DateTime<chrono::Utc> {
        self.core.clock.now()
    }

    /// A fresh uid: 32 lowercase hex digits.
    pub fn new_uid(&self) -> String {
        self.core.entropy.uid().simple().to_string()
    }

    /// Record an event for the subscribers.
    pub fn emit(&mut self, event: Event) {
        self.events.push(event);
        self.causes.push(self.running_rules.clone());
    }

    /// Take the events not yet delivered.
    pub fn take_events(&mut self) -> Vec<Event> {
        self.causes.clear();
        std::mem::take(&mut self.events)
    }

    /// Take the events not yet delivered, each with the content rules that caused it
    /// ([`Ctx::running_rules`] when it was emitted).
    pub fn take_events_with_causes(&mut self) -> (Vec<Event>, Vec<Vec<String>>) {
        let mut causes = std::mem::take(&mut self.causes);
        let events = std::mem::take(&mut self.events);
        causes.resize(events.len(), Vec::new());
        (events, causes)
    }

    /// Remember events that were delivered (for tests and for hosts that want the list).
    pub fn record_delivered(&mut self, events: Vec<Event>) {
        self.delivered.extend(events);
    }

    /// Every event delivered so far in this request.
    pub fn delivered_events(&self) -> &[Event] {
        &self.delivered
    }

    /// The absolute URL of the object at site path `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url, path)
    }

    /// The type of `obj`.
    pub fn type_of(&self, obj: &ContentRecord) -> Result<Arc<ContentType>> {
        self.types()?.require(&obj.type_name)
    }

    /// The site profile (`crate::site::profile`): whose answers the site gives where Plone and
    /// Nick differ. The engine keeps it once read ([`Core::known_profile`]); otherwise it is read
    /// here, once per request, and kept for the next requests when this is a read of a committed
    /// state. A site without settings yet (being created) is Plone's.
    pub fn profile(&self) -> crate::core::model::profile::SiteProfile {
        /// The one field of the site settings (`s:site`, `crate::site::settings`) read here.
        #[derive(serde::Deserialize)]
        struct Stored {
            #[serde(default)]
            profile: crate::core::model::profile::SiteProfile,
        }
        *self.profile.get_or_init(|| {
            if let Some(p) = self.core.known_profile() {
                return p;
            }
            match self.get_json::<Stored>(keys::SITE) {
                Ok(Some(s)) if !self.is_write() => self.core.remember_profile(s.profile),
                Ok(Some(s)) => s.profile,
                _ => Default::default(),
            }
        })
    }

    /// The type registry as stored (`y:` keys), read through the engine's cache keyed on the
    /// registry version (`s:types`, moved by every commit that changes the registry; content
    /// writes leave it alone): one read of the version per request, a scan of `y:` only when the
    /// version is new to this engine. Requests fill the cache only with committed data: a read
    /// request, or a write request that has not changed the registry (what it reads is what the
    /// last commit left, under the version it read; a write to `y:` moves the version at commit).
    /// A request that changed the registry reads its own writes.
    pub fn types(&self) -> Result<Arc<TypeRegistry>> {
        if let Some(t) = self.types.get() {
            return Ok(t.clone());
        }
        let registry = if self.types_written {
            Arc::new(self.load_types()?)
        } else {
            let version = self.types_version()?;
            match self.core.cached_types(version) {
                Some(r) => r,
                None => {
                    let r = Arc::new(self.load_types()?);
                    self.core.cache_types(version, r.clone());
                    r
                }
            }
        };
        let _ = self.types.set(registry.clone());
        Ok(registry)
    }

    /// The stored registry version (`s:types`; 0 when absent).
    fn types_version(&self) -> Result<u64> {
        Ok(self
            .get(keys::TYPES_VERSION)?
            .and_then(|v| std::str::from_utf8(&v).ok()?.parse().ok())
            .unwrap_or(0))
    }

    /// Decode the stored registry. A store without one (no site yet) reads the built-in types.
    fn load_types(&self) -> Result<TypeRegistry> {
        let rows = self.scan_prefix(keys::TYPE_REGISTRY_PREFIX)?;
        if rows.is_empty() {
            return Ok(TypeRegistry::builtin());
        }
        let mut behaviors = Vec::new();
        let mut types = Vec::new();
        for (k, v) in rows {
            if k.starts_with(keys::BEHAVIOR_PREFIX) {
                behaviors.push(serde_json::from_slice::<BehaviorData>(&v)?);
            } else if k.starts_with(keys::TYPE_PREFIX) {
                types.push(serde_json::from_slice::<TypeData>(&v)?);
            }
        }
        TypeRegistry::build(behaviors, types)
            .map_err(|e| EngineError::Internal(format!("stored type registry: {e}")))
    }
}
