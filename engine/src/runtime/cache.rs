//! The response cache: answers to repeated safe requests (GET, HEAD), and the callers that
//! credentials stand for, kept until a write changes something they were computed from.
//!
//! # What an entry depends on
//!
//! A request that may be cached records what it reads ([`ReadSet`], kept by
//! [`crate::runtime::context::Ctx`]): every key it asked for and every key range its scans covered, and
//! whether it asked for the time. Every write transaction records the keys it wrote. When a
//! commit is published ([`ResponseCache::publish`]), the entries whose read set holds a key the
//! commit wrote are dropped, and only those: a PATCH of one page leaves the answers about every
//! other page in place. The other inputs of an answer are part of its key:
//!
//! - the request: method, path, query, base URL and every header except `Authorization` and
//!   `Cookie`, which only carry credentials;
//! - the caller: the authenticated login (credentials are checked on every request, before the
//!   cache is consulted, so an expired or revoked token never reaches a cached answer; what the
//!   check read is part of the answer's read set, so a change of the caller's roles drops it);
//! - the time, to the second, for answers that asked for it (lock expiry, publication dates):
//!   such an entry is used only within the second it was computed in. Engines with a movable
//!   test clock never cache.
//!
//! # Generations
//!
//! Every commit that changes anything moves the store generation ([`crate::core::generation`]) from
//! `g` to a later value. The cache knows the generation up to which it has applied every
//! commit's invalidations (`applied`). An answer computed on a snapshot of generation `g` is
//! stored only when `g == applied` (nothing committed since may have changed it unseen), and a
//! request whose snapshot is newer than `applied` is not answered from the cache. Commits are
//! applied in generation order: one published out of order waits for the ones before it. A
//! commit the cache never hears of (made by another process on a shared database) is noticed
//! when a request's snapshot is newer than `applied` while no local write is under way
//! ([`ResponseCache::writing`]): the cache then starts over at that generation.
//!
//! Only 200 answers are kept. The size is bounded by
//! [`crate::EngineOptions::response_cache_bytes`] (0 turns the cache off); a full cache starts
//! over.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::core::http::{Method, Request, Response};
use crate::core::security::Principal;

pub use crate::core::generation::GENERATION;

/// The 64-bit hash a read key is recorded by ([`ReadSet::key`]) and a written key looked up by:
/// eight bytes at a time, multiplied and rotated (as `FxHash` does), then mixed (the finalizer
/// of MurmurHash3) so that every bit of the key reaches every bit of the hash. Two keys with the
/// same hash only make a write drop more than it must (an answer that read the other key), never
/// less: the cache stays correct whatever the keys.
pub fn key_hash(key: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = key.len() as u64;
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(c);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(K);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// A hasher for keys that are hashes already ([`key_hash`], entry ids): the value itself.
#[derive(Default, Clone, Copy)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not used by `u64` keys; kept correct for any other.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

/// A hasher for byte-string keys (range prefixes): [`key_hash`] of the bytes.
#[derive(Default, Clone, Copy)]
struct BytesHasher(u64);

impl std::hash::Hasher for BytesHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0 = (self.0.rotate_left(5) ^ key_hash(bytes)).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

/// What a computation read from the store: the hashes of the keys it asked for ([`key_hash`]),
/// the key ranges `[start, end)` its scans covered (an empty end is unbounded), and whether it
/// asked for the time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadSet {
    keys: Vec<u64>,
    ranges: Vec<(Vec<u8>, Vec<u8>)>,
    clock: bool,
}

impl ReadSet {
    /// Record a `get` of `key`.
    pub fn key(&mut self, key: &[u8]) {
        if key != GENERATION {
            self.keys.push(key_hash(key));
        }
    }

    /// Record that keys in `[start, end)` were read (an empty `end` is unbounded).
    pub fn range(&mut self, start: &[u8], end: &[u8]) {
        self.ranges.push((start.to_vec(), end.to_vec()));
    }

    /// Record a scan of `[start, end)` in direction `dir` with `limit` that returned `pairs`:
    /// the part of the range it covered (up to the last pair returned when the limit cut it).
    pub fn scan(
        &mut self,
        start: &[u8],
        end: &[u8],
        dir: crate::core::store::Direction,
        limit: usize,
        pairs: &[crate::core::store::KeyValue],
    ) {
        if limit == 0 {
            return;
        }
        match (pairs.len() >= limit, pairs.last(), dir) {
            (true, Some((last, _)), crate::core::store::Direction::Forward) => {
                let mut after = Vec::with_capacity(last.len() + 1);
                after.extend_from_slice(last);
                after.push(0);
                self.ranges.push((start.to_vec(), after));
            }
            (true, Some((last, _)), crate::core::store::Direction::Reverse) => {
                self.range(last, end)
            }
            _ => self.range(start, end),
        }
    }

    /// Record that the time was read.
    pub fn clock(&mut self) {
        self.clock = true;
    }

    /// Whether the time was read.
    pub fn read_clock(&self) -> bool {
        self.clock
    }

    /// Add everything `other` read.
    pub fn extend(&mut self, other: &ReadSet) {
        self.keys.extend_from_slice(&other.keys);
        self.ranges.extend(other.ranges.iter().cloned());
        self.clock |= other.clock;
    }

    /// Sort what was read, for [`ReadSet::touches`].
    pub fn seal(&mut self) {
        self.finish();
    }

    /// Whether writing `key` changes what was read (after [`ReadSet::seal`]).
    pub fn touches(&self, key: &[u8]) -> bool {
        self.keys.binary_search(&key_hash(key)).is_ok()
            || self.ranges.iter().any(|(start, end)| {
                key >= start.as_slice() && (end.is_empty() || key < end.as_slice())
            })
    }

    fn finish(&mut self) {
        self.keys.sort_unstable();
        self.keys.dedup();
        if self.ranges.len() > 1 {
            self.ranges.sort_unstable();
            self.ranges.dedup();
        }
    }

    fn bytes(&self) -> usize {
        self.keys.len() * 24
            + self
                .ranges
                .iter()
                .map(|(a, b)| a.len() + b.len() + 48)
                .sum::<usize>()
    }
}

/// A commit that moved the store generation: from which value to which, and the keys it wrote
/// (recorded only when the engine keeps caches: the cache drops what read them).
#[derive(Debug, Clone, Default)]
pub struct Moved {
    /// The generation the transaction began on.
    pub from: u64,
    /// The generation it committed.
    pub to: u64,
    /// The keys written (empty when the engine keeps no caches).
    pub writes: Vec<Vec<u8>>,
    /// The keys of `writes` that were only merged: folder records whose child counters moved
    /// ([`crate::runtime::commit::FolderMerge`]). A write prepared in parallel that read one
    /// of them still commits, unless it wrote it otherwise ([`crate::runtime::occ::CommitLog`]).
    pub merged: Vec<Vec<u8>>,
}

impl Moved {
    /// Two commits' moves as one: a group's requests commit together.
    pub fn merge(a: Option<Moved>, b: Option<Moved>) -> Option<Moved> {
        match (a, b) {
            (Some(mut a), Some(b)) => {
                a.from = a.from.min(b.from);
                a.to = a.to.max(b.to);
                // A key one of them wrote outright is no merge of both.
                let outright =
                    |m: &Moved, k: &Vec<u8>| m.writes.contains(k) && !m.merged.contains(k);
                let mut merged: Vec<Vec<u8>> = a
                    .merged
                    .iter()
                    .filter(|k| !outright(&b, k))
                    .cloned()
                    .collect();
                merged.extend(b.merged.iter().filter(|k| !outright(&a, k)).cloned());
                merged.sort_unstable();
                merged.dedup();
                a.merged = merged;
                a.writes.extend(b.writes);
                Some(a)
            }
            (a, b) => a.or(b),
        }
    }
}

/// The caller credentials were found to stand for, with what finding it read.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Who the credentials name.
    pub principal: Principal,
    /// When they expire (seconds since the epoch; `i64::MAX`: never).
    pub exp: i64,
    /// What verifying them read (added to the read set of every answer computed for them).
    pub reads: Arc<ReadSet>,
}

/// What an entry holds.
enum Value {
    Answer(Response),
    Caller(Caller),
}

struct Slot {
    id: u64,
    value: Value,
    /// The second the entry is valid in, when its computation read the clock.
    second: Option<i64>,
    /// What dropping the entry frees (its key and value; what it read stays in the index until
    /// the cache starts over, and stays counted).
    bytes: usize,
}

/// One commit's invalidations, waiting for the commits before it.
struct Pending {
    to: u64,
    writes: Vec<Vec<u8>>,
}

/// A range `[start, end)` read by the entry with this id.
type RangeRead = (u64, Vec<u8>, Vec<u8>);

#[derive(Default)]
struct Inner {
    /// Every commit up to this generation has been applied (`None`: not known yet).
    applied: Option<u64>,
    /// Commits published ahead of one not yet published, by the generation they start from.
    pending: BTreeMap<u64, Pending>,
    entries: HashMap<String, Slot, BuildHasherDefault<BytesHasher>>,
    /// The entry each id belongs to.
    owners: IdMap<String>,
    /// Ids of the entries that read each key, by the key's hash ([`key_hash`]). Ids of entries
    /// dropped since stay until the cache starts over (dropping them by id finds nothing).
    exact: IdMap<Vec<u64>>,
    /// Ranges read, by the common prefix of their bounds: a key can only fall in a range whose
    /// common prefix it starts with.
    ranges: HashMap<Vec<u8>, Vec<RangeRead>, BuildHasherDefault<BytesHasher>>,
    /// The lengths of the prefixes in `ranges`.
    range_lens: BTreeSet<usize>,
    next_id: u64,
    bytes: usize,
}

impl Inner {
    /// Empty the cache, handing back the old contents: the caller drops them after releasing
    /// the lock (freeing thousands of answers takes a while; other requests need not wait).
    #[must_use]
    fn clear(&mut self) -> Inner {
        let applied = self.applied;
        let next_id = self.next_id;
        std::mem::replace(
            self,
            Inner {
                applied,
                next_id,
                ..Inner::default()
            },
        )
    }

    fn remove_id(&mut self, id: u64) {
        if let Some(key) = self.owners.remove(&id) {
            if self.entries.get(&key).is_some_and(|s| s.id == id) {
                if let Some(slot) = self.entries.remove(&key) {
                    self.bytes = self.bytes.saturating_sub(slot.bytes);
                }
            }
        }
    }

    /// Drop every entry that read one of `writes`.
    fn invalidate(&mut self, writes: &[Vec<u8>]) {
        if self.entries.is_empty() {
            return;
        }
        let mut hit = Vec::new();
        for k in writes {
            if let Some(ids) = self.exact.remove(&key_hash(k)) {
                hit.extend(ids);
            }
            for &len in self.range_lens.range(..=k.len()) {
                if let Some(list) = self.ranges.get_mut(&k[..len]) {
                    list.retain(|(id, start, end)| {
                        let inside =
                            start.as_slice() <= k.as_slice() && (end.is_empty() || k < end);
                        if inside {
                            hit.push(*id);
                        }
                        !inside
                    });
                }
            }
        }
        for id in hit {
            self.remove_id(id);
        }
    }

    /// Apply the commit from `from` to `to` and every waiting one that follows; what was
    /// dropped wholesale is handed back (see [`Inner::clear`]).
    fn apply(&mut self, from: u64, to: u64, writes: Vec<Vec<u8>>) -> Option<Inner> {
        let mut dropped = None;
        match self.applied {
            Some(a) if from == a => {
                self.invalidate(&writes);
                self.applied = Some(to);
            }
            Some(a) if from > a => {
                self.pending.insert(from, Pending { to, writes });
                return None;
            }
            // Already covered (the cache started over at a later generation since), or the
            // starting point is unknown: start over from here.
            Some(a) if to <= a => return None,
            _ => {
                dropped = Some(self.clear());
                self.pending.clear();
                self.applied = Some(to);
            }
        }
        while let Some(a) = self.applied {
            let Some(next) = self.pending.remove(&a) else {
                break;
            };
            self.invalidate(&next.writes);
            self.applied = Some(next.to);
        }
        dropped
    }

    /// Add an entry; a full cache starts over first, and the old contents are handed back.
    fn insert(
        &mut self,
        key: String,
        value: Value,
        reads: &ReadSet,
        second: i64,
        max: usize,
    ) -> Option<Inner> {
        let own = key.len() * 2
            + 96
            + match &value {
                Value::Answer(r) => r.body.len() + r.headers.len() * 48,
                Value::Caller(_) => 256,
            };
        let bytes = own + reads.bytes();
        if bytes > max / 4 {
            return None;
        }
        let dropped = (self.bytes + bytes > max).then(|| self.clear());
        self.next_id += 1;
        let id = self.next_id;
        for &k in &reads.keys {
            self.exact.entry(k).or_default().push(id);
        }
        for (start, end) in &reads.ranges {
            let common = start
                .iter()
                .zip(end.iter())
                .take_while(|(a, b)| a == b)
                .count();
            self.range_lens.insert(common);
            self.ranges
                .entry(start[..common].to_vec())
                .or_default()
                .push((id, start.clone(), end.clone()));
        }
        self.owners.insert(id, key.clone());
        let slot = Slot {
            id,
            value,
            second: reads.clock.then_some(second),
            bytes: own,
        };
        if let Some(old) = self.entries.insert(key, slot) {
            self.owners.remove(&old.id);
            self.bytes = self.bytes.saturating_sub(old.bytes);
        }
        // The index entries of dropped answers are not removed one by one (a key read by many
        // answers has a long list); they stay counted, so a cache that keeps dropping answers
        // fills up and starts over instead of growing its index without bound.
        self.bytes += bytes;
        dropped
    }

    fn get(&self, snapshot: Option<u64>, key: &str, now: i64) -> Option<&Value> {
        let applied = self.applied?;
        if snapshot.is_some_and(|g| g > applied) {
            return None;
        }
        let slot = self.entries.get(key)?;
        slot.second.is_none_or(|s| s == now).then_some(&slot.value)
    }
}

/// A bounded cache of responses and callers; see the module documentation.
pub struct ResponseCache {
    max_bytes: usize,
    inner: Mutex<Inner>,
    /// Write transactions of this engine under way (begun and not yet published).
    writers: AtomicUsize,
    /// Requests answered from the cache, and cacheable ones it had no answer for
    /// ([`ResponseCache::lookups`]).
    hits: AtomicU64,
    misses: AtomicU64,
}

/// Marks a write under way for as long as it lives ([`ResponseCache::writing`]).
pub struct Writing<'a>(&'a AtomicUsize);

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ResponseCache {
    /// A cache holding at most about `max_bytes` of responses (0: never caches).
    pub fn new(max_bytes: usize) -> Self {
        ResponseCache {
            max_bytes,
            inner: Mutex::new(Inner::default()),
            writers: AtomicUsize::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// How many requests were answered from the cache and how many it had no answer for, since
    /// the engine started ([`Self::count`]; both stay 0 while the cache is off): a host's hit
    /// ratio.
    pub fn lookups(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    /// How many responses it holds, their bytes (with what they and the answers dropped since
    /// the cache last started over read), and its limit in bytes.
    pub fn usage(&self) -> (usize, usize, usize) {
        let (len, bytes) = self
            .inner
            .lock()
            .map(|e| {
                let answers = e
                    .entries
                    .values()
                    .filter(|s| matches!(s.value, Value::Answer(_)))
                    .count();
                (answers, e.bytes)
            })
            .unwrap_or_default();
        (len, bytes, self.max_bytes)
    }

    /// Whether the cache is on.
    pub fn enabled(&self) -> bool {
        self.max_bytes > 0
    }

    /// Whether `req` may be answered from (and stored in) the cache.
    pub fn applies(&self, req: &Request) -> bool {
        self.max_bytes > 0 && matches!(req.method, Method::Get | Method::Head)
    }

    /// Note a write transaction of this engine under way until the returned guard is dropped
    /// (after its commit is published, or after it failed).
    pub fn writing(&self) -> Writing<'_> {
        self.writers.fetch_add(1, Ordering::SeqCst);
        Writing(&self.writers)
    }

    /// The generation up to which every commit's invalidations are applied, if known.
    pub fn applied(&self) -> Option<u64> {
        self.inner.lock().ok()?.applied
    }

    /// A commit moved the store generation from `from` to `to`, writing `writes`: drop what
    /// read any of them (in generation order; see the module documentation).
    pub fn publish(&self, from: u64, to: u64, writes: Vec<Vec<u8>>) {
        if !self.enabled() {
            return;
        }
        let dropped = match self.inner.lock() {
            Ok(mut inner) => inner.apply(from, to, writes),
            Err(_) => None,
        };
        drop(dropped);
    }

    /// A request read a snapshot of generation `snapshot`: when that is newer than the cache
    /// knows and no write of this engine is under way, another process committed, and the
    /// cache starts over at `snapshot`.
    pub fn observe(&self, snapshot: u64) {
        if !self.enabled() {
            return;
        }
        let mut dropped = None;
        if let Ok(mut inner) = self.inner.lock() {
            let behind = inner.applied.is_none_or(|a| snapshot > a);
            if behind && self.writers.load(Ordering::SeqCst) == 0 {
                dropped = Some(inner.clear());
                inner.pending.clear();
                inner.applied = Some(snapshot);
            }
        }
        drop(dropped);
    }

    /// The key of `req` made by the caller `login` (`""` for anonymous).
    pub fn key(req: &Request, login: &str) -> String {
        let mut headers: Vec<(String, &str)> = req
            .headers
            .iter()
            .map(|(n, v)| (n.to_ascii_lowercase(), v.as_str()))
            .filter(|(n, _)| n != "authorization" && n != "cookie")
            .collect();
        headers.sort();
        let mut k = String::with_capacity(128);
        k.push('a');
        for part in [
            req.method.as_str(),
            &req.path,
            &req.query,
            &req.base_url,
            login,
        ] {
            k.push_str(part);
            k.push('\0');
        }
        for (n, v) in headers {
            k.push_str(&n);
            k.push(':');
            k.push_str(v);
            k.push('\0');
        }
        k
    }

    /// The cached answer for `key`, for a request on a snapshot of generation `snapshot`
    /// (`None`: the latest the cache knows) at second `now`.
    pub fn get(&self, snapshot: Option<u64>, key: &str, now: i64) -> Option<Response> {
        let inner = self.inner.lock().ok()?;
        match inner.get(snapshot, key, now)? {
            Value::Answer(r) => Some(r.clone()),
            Value::Caller(_) => None,
        }
    }

    /// Count one request the cache answered (`hit`) or had no answer for ([`Self::lookups`]);
    /// the engine counts each request once, where it settles (a request may be looked up twice:
    /// first without a transaction, then in one).
    pub fn count(&self, hit: bool) {
        if self.enabled() {
            let counter = if hit { &self.hits } else { &self.misses };
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Remember `resp` (if a 200) for `key`, computed on a snapshot of generation `snapshot` at
    /// second `now`, having read `reads`.
    pub fn insert(
        &self,
        snapshot: u64,
        key: String,
        resp: &Response,
        reads: &mut ReadSet,
        now: i64,
    ) {
        if resp.status != 200 || !self.enabled() {
            return;
        }
        reads.finish();
        let value = Value::Answer(resp.clone());
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if inner.applied == Some(snapshot) {
            let dropped = inner.insert(key, value, reads, now, self.max_bytes);
            drop(inner);
            drop(dropped);
        }
    }

    /// The caller that credentials with cache key `key` stand for ([`ResponseCache::caller_key`]),
    /// if verified before and not expired by `now`, for a request on a snapshot of generation
    /// `snapshot` (`None`: the latest the cache knows).
    pub fn caller(&self, snapshot: Option<u64>, key: &str, now: i64) -> Option<Caller> {
        let inner = self.inner.lock().ok()?;
        match inner.get(snapshot, key, now)? {
            Value::Caller(c) if c.exp > now => Some(c.clone()),
            _ => None,
        }
    }

    /// Remember `caller`, verified on a snapshot of generation `snapshot`.
    pub fn insert_caller(&self, snapshot: u64, key: String, mut caller: Caller, now: i64) {
        if !self.enabled() {
            return;
        }
        let mut reads = (*caller.reads).clone();
        reads.finish();
        // The expiry is checked at every use; the time read for it is no dependence.
        reads.clock = false;
        caller.reads = Arc::new(reads.clone());
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if inner.applied == Some(snapshot) {
            let dropped = inner.insert(key, Value::Caller(caller), &reads, now, self.max_bytes);
            drop(inner);
            drop(dropped);
        }
    }

    /// The cache key of a bearer token, or of a digest of Basic credentials.
    pub fn caller_key(kind: &str, secret: &str) -> String {
        format!("c{kind}\0{secret}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(body: &str) -> Response {
        Response {
            status: 200,
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
            stream: None,
            lines: None,
        }
    }

    fn reads(keys: &[&str], ranges: &[(&str, &str)]) -> ReadSet {
        let mut r = ReadSet::default();
        for k in keys {
            r.key(k.as_bytes());
        }
        for (a, b) in ranges {
            r.range(a.as_bytes(), b.as_bytes());
        }
        r
    }

    #[test]
    fn a_write_drops_only_the_answers_that_read_its_keys() {
        let c = ResponseCache::new(1 << 20);
        c.publish(0, 1, Vec::new());
        c.insert(1, "a".into(), &resp("A"), &mut reads(&["o:a"], &[]), 0);
        c.insert(
            1,
            "b".into(),
            &resp("B"),
            &mut reads(&["o:b"], &[("c:x/", "c:x0")]),
            0,
        );
        c.insert(
            1,
            "c".into(),
            &resp("C"),
            &mut reads(&["o:c"], &[("", "")]),
            0,
        );
        assert!(c.get(Some(1), "a", 0).is_some());
        c.publish(1, 2, vec![b"o:a".to_vec()]);
        assert!(c.get(Some(2), "a", 0).is_none());
        assert!(c.get(Some(2), "b", 0).is_some());
        // The unbounded range read by "c" covers every key.
        assert!(c.get(Some(2), "c", 0).is_none());
        c.publish(2, 3, vec![b"c:x/p".to_vec()]);
        assert!(c.get(Some(3), "b", 0).is_none());
    }

    #[test]
    fn commits_apply_in_generation_order_and_stale_answers_are_not_stored() {
        let c = ResponseCache::new(1 << 20);
        c.publish(0, 1, Vec::new());
        // 2 -> 3 is published before 1 -> 2: the cache stays at 1 until 1 -> 2 arrives.
        c.publish(2, 3, vec![b"k".to_vec()]);
        assert_eq!(c.applied(), Some(1));
        c.insert(1, "x".into(), &resp("X"), &mut reads(&["k"], &[]), 0);
        assert!(
            c.get(Some(2), "x", 0).is_none(),
            "snapshot newer than applied"
        );
        c.publish(1, 2, Vec::new());
        assert_eq!(c.applied(), Some(3));
        assert!(
            c.get(Some(3), "x", 0).is_none(),
            "dropped by the waiting commit"
        );
        // Computed on an older snapshot: not stored.
        c.insert(2, "y".into(), &resp("Y"), &mut reads(&["z"], &[]), 0);
        assert!(c.get(None, "y", 0).is_none());
    }

    #[test]
    fn answers_that_read_the_clock_last_one_second() {
        let c = ResponseCache::new(1 << 20);
        c.publish(0, 1, Vec::new());
        let mut r = reads(&["k"], &[]);
        r.clock();
        c.insert(1, "t".into(), &resp("T"), &mut r, 10);
        c.insert(1, "u".into(), &resp("U"), &mut reads(&["k2"], &[]), 10);
        assert!(c.get(None, "t", 10).is_some());
        assert!(c.get(None, "t", 11).is_none());
        assert!(c.get(None, "u", 11).is_some());
    }

    #[test]
    fn another_process_commit_starts_the_cache_over_unless_a_local_write_is_under_way() {
        let c = ResponseCache::new(1 << 20);
        c.publish(0, 1, Vec::new());
        c.insert(1, "x".into(), &resp("X"), &mut reads(&["k"], &[]), 0);
        {
            let _w = c.writing();
            c.observe(2);
            assert_eq!(c.applied(), Some(1));
        }
        c.observe(2);
        assert_eq!(c.applied(), Some(2));
        assert!(c.get(None, "x", 0).is_none());
    }

    #[test]
    fn limited_scans_cover_only_what_they_returned() {
        let mut r = ReadSet::default();
        let pairs = vec![
            (b"p:a/1".to_vec(), Vec::new()),
            (b"p:a/2".to_vec(), Vec::new()),
        ];
        r.scan(
            b"p:a/",
            b"p:a0",
            crate::core::store::Direction::Forward,
            2,
            &pairs,
        );
        let c = ResponseCache::new(1 << 20);
        c.publish(0, 1, Vec::new());
        c.insert(1, "x".into(), &resp("X"), &mut r, 0);
        c.publish(1, 2, vec![b"p:a/3".to_vec()]);
        assert!(
            c.get(None, "x", 0).is_some(),
            "beyond the last pair returned"
        );
        c.publish(2, 3, vec![b"p:a/1x".to_vec()]);
        assert!(c.get(None, "x", 0).is_none());
    }
}
