//! IndexedDB persistence of the engine's keyspace, straight through web-sys.
//!
//! One IndexedDB database per site, with four object stores:
//!
//! | store | key | value |
//! |---|---|---|
//! | `meta` | `"version"` | number of change sets ever committed to this database |
//! | `meta` | `"kvVersion"` | only in databases written before layout 3: the version `kv` holds |
//! | `log` | the version number a change set produced | that change set: `[[key, value or null], ...]` |
//! | `snapshot` | `"version"`, `"chunks"`, `"chunk:0"`, ... | the whole keyspace at that version, as byte arrays of at most 32 MiB (earlier versions: one `"data"` record, still read) |
//! | `kv` | the engine key (binary key, `Uint8Array`) | the value bytes: written by earlier versions only (see below) |
//!
//! **The snapshot plus the log after it are the durable form** of the keyspace (layout 3, IndexedDB
//! schema version 3). A committed change set is one log entry and the version, written by
//! [`write_changes`] in ONE readwrite transaction over `meta` and `log`; nothing is written per
//! key. The log is never pruned past the snapshot: only the snapshot's own transaction deletes log
//! entries, those more than [`LOG_KEEP`] versions older than the snapshot it writes (kept for
//! other tabs catching up). Until a site's first snapshot, the log reaches back to version 1.
//!
//! Opening a site ([`load`]) reads the snapshot (one transaction) and the log entries after it.
//! The snapshot is rewritten from memory every [`SNAPSHOT_EVERY`] change sets, so an open replays
//! at most a few hundred log entries.
//!
//! Databases written before layout 3 kept every pair in `kv` as well (one `put` per key of every
//! change set, which was most of a write's IndexedDB time). Upgrading such a database to schema
//! version 3 records in `meta.kvVersion` the version `kv` holds; [`load`] reads `kv` plus the log
//! after `kvVersion` only when the snapshot cannot serve (missing, damaged, or the log does not
//! reach back to it), as earlier versions did. `kv` is no longer written: it is cleared (with the
//! marker) by [`forget_history`], whose point is that no older state stays behind.
//!
//! Every committed change set is written in a transaction which first re-reads `meta.version` and
//! aborts unless it still equals the version the caller's memory copy reflects (compare-and-set).
//! IndexedDB runs readwrite transactions with overlapping scopes one after the other, also across
//! tabs, so two tabs can never both write on top of the same version: the loser sees
//! [`WriteError::Conflict`], catches up from the `log` (or reloads everything when the log no
//! longer reaches back far enough) and retries. A tab of an earlier version cannot open a layout-3
//! database (its schema version is lower), and an open one is closed by the upgrade, so it never
//! writes `kv` pairs nor prunes the log behind this layout's back.
//!
//! Transactions are opened with the default durability, as before layout 3 (nothing is relaxed
//! further): Chromium 121 and later take the default as `"relaxed"` (the `complete` event fires
//! once the data is handed to the OS, before it is flushed). A change set and its version are
//! still one transaction, so either both are there or neither.

use std::cell::Cell;
use std::rc::Rc;

use engine::StoreError;
use js_sys::{Array, Function, Promise, Reflect, Uint8Array};
use wasm_bindgen::{prelude::*, JsCast};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    IdbDatabase, IdbFactory, IdbKeyRange, IdbOpenDbRequest, IdbRequest, IdbTransaction,
    IdbTransactionMode,
};

use crate::ChangeSet;

/// Object store of the keyspace.
pub const KV: &str = "kv";
/// Object store of the version counter.
pub const META: &str = "meta";
/// Object store of recent change sets, for other tabs to catch up.
pub const LOG: &str = "log";
/// Object store of the keyspace snapshot.
pub const SNAPSHOT: &str = "snapshot";
/// Key of the snapshot's version in [`SNAPSHOT`].
const SNAPSHOT_VERSION_KEY: &str = "version";
/// Key of the snapshot's bytes in [`SNAPSHOT`] as earlier versions wrote them (one record).
/// Still read; no longer written, because Chromium refuses a record over ~127 MiB
/// ("The serialized keys and/or value are too large", max 133,169,152 bytes), which a site of
/// ~70k objects reaches.
const SNAPSHOT_DATA_KEY: &str = "data";
/// Key of the number of chunks the snapshot is written in (`chunk:0`, `chunk:1`, ...).
const SNAPSHOT_CHUNKS_KEY: &str = "chunks";
/// Size of one snapshot chunk, well below Chromium's per-record limit.
const SNAPSHOT_CHUNK_BYTES: usize = 32 << 20;
/// At most this many chunks (2 GiB, half of wasm32's memory) are read back.
const SNAPSHOT_MAX_CHUNKS: u32 = 64;

fn chunk_key(i: u32) -> JsValue {
    JsValue::from_str(&format!("chunk:{i}"))
}
/// Rewrite the snapshot once it lags this many change sets behind.
pub const SNAPSHOT_EVERY: f64 = 200.0;
/// Key of the version counter in [`META`].
pub const VERSION_KEY: &str = "version";
/// How many change sets before the snapshot the log keeps (every one after it stays); a tab
/// further behind reloads everything.
pub const LOG_KEEP: f64 = 500.0;
/// IndexedDB schema version of the database layout above (2 added the `snapshot` store; 3 stopped
/// writing `kv`: upgrading from 1 or 2 records the version `kv` holds as `meta.kvVersion`).
const DB_VERSION: u32 = 3;
/// Key in [`META`] of the version the `kv` store holds, in databases written before layout 3.
const KV_VERSION_KEY: &str = "kvVersion";

/// Why a change set could not be written.
#[derive(Debug)]
pub enum WriteError {
    /// Another tab wrote first: the database is at a newer version than the caller's memory copy.
    Conflict,
    /// IndexedDB failed (quota, I/O, closed connection, ...).
    Store(StoreError),
}

/// The text of a JS error value (`DOMException`, `Error`, string, ...).
pub fn js_error_text(e: &JsValue) -> String {
    if let Some(s) = e.as_string() {
        return s;
    }
    let get = |k: &str| {
        Reflect::get(e, &JsValue::from_str(k))
            .ok()
            .and_then(|v| v.as_string())
    };
    match (get("name"), get("message")) {
        (Some(n), Some(m)) if !m.is_empty() => format!("{n}: {m}"),
        (Some(n), _) => n,
        (None, Some(m)) => m,
        (None, None) => format!("{e:?}"),
    }
}

/// Map a JS error from IndexedDB to a [`StoreError`] (quota errors become `QuotaExceeded`).
pub fn store_error(e: &JsValue) -> StoreError {
    let name = Reflect::get(e, &JsValue::from_str("name"))
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_default();
    let text = format!("IndexedDB: {}", js_error_text(e));
    if name == "QuotaExceededError" {
        StoreError::QuotaExceeded(text)
    } else {
        StoreError::Backend(text)
    }
}

fn idb_factory() -> Result<IdbFactory, JsValue> {
    // works in a Window, in Workers and in Service Workers
    let v = Reflect::get(&js_sys::global(), &JsValue::from_str("indexedDB"))?;
    if v.is_undefined() || v.is_null() {
        return Err(JsValue::from_str(
            "IndexedDB is not available in this JavaScript environment",
        ));
    }
    v.dyn_into::<IdbFactory>()
        .map_err(|_| JsValue::from_str("IndexedDB is not available in this JavaScript environment"))
}

/// Resolve with the request's result once it succeeds.
pub async fn await_request(req: &IdbRequest) -> Result<JsValue, JsValue> {
    let (r_ok, r_err) = (req.clone(), req.clone());
    let promise = Promise::new(&mut |resolve: Function, reject: Function| {
        let (r_ok, r_err) = (r_ok.clone(), r_err.clone());
        let ok = Closure::once_into_js(move |_e: web_sys::Event| {
            let _ = resolve.call1(&JsValue::NULL, &r_ok.result().unwrap_or(JsValue::UNDEFINED));
        });
        let err = Closure::once_into_js(move |_e: web_sys::Event| {
            let e = r_err
                .error()
                .ok()
                .flatten()
                .map(JsValue::from)
                .unwrap_or_else(|| JsValue::from_str("IndexedDB request failed"));
            let _ = reject.call1(&JsValue::NULL, &e);
        });
        req.set_onsuccess(Some(ok.unchecked_ref()));
        req.set_onerror(Some(err.unchecked_ref()));
    });
    JsFuture::from(promise).await
}

/// Resolve once the transaction completes; reject with its error when it aborts.
async fn await_tx(tx: &IdbTransaction) -> Result<(), JsValue> {
    let tx2 = tx.clone();
    let promise = Promise::new(&mut |resolve: Function, reject: Function| {
        let tx2 = tx2.clone();
        let ok = Closure::once_into_js(move |_e: web_sys::Event| {
            let _ = resolve.call0(&JsValue::NULL);
        });
        let reject2 = reject.clone();
        let tx3 = tx2.clone();
        let on_abort = Closure::once_into_js(move |_e: web_sys::Event| {
            let e = tx3
                .error()
                .map(JsValue::from)
                .unwrap_or_else(|| JsValue::from_str("IndexedDB transaction aborted"));
            let _ = reject2.call1(&JsValue::NULL, &e);
        });
        // `error` events bubble from requests to the transaction; the transaction then aborts and
        // `abort` reports its error, so only `abort` settles the promise as a failure.
        tx.set_oncomplete(Some(ok.unchecked_ref()));
        tx.set_onabort(Some(on_abort.unchecked_ref()));
        let _ = reject;
    });
    JsFuture::from(promise).await.map(|_| ())
}

/// Open (creating or upgrading when needed) the database `name`.
pub async fn open_db(name: &str) -> Result<IdbDatabase, JsValue> {
    let req: IdbOpenDbRequest = idb_factory()?.open_with_u32(name, DB_VERSION)?;
    let upgrade = Closure::<dyn FnMut(web_sys::IdbVersionChangeEvent)>::new(
        |e: web_sys::IdbVersionChangeEvent| {
            let Some(req) = e
                .target()
                .and_then(|t| t.dyn_into::<IdbOpenDbRequest>().ok())
            else {
                return;
            };
            let Some(db) = req
                .result()
                .ok()
                .and_then(|r| r.dyn_into::<IdbDatabase>().ok())
            else {
                return;
            };
            for store in [KV, META, LOG, SNAPSHOT] {
                if !db.object_store_names().contains(store) {
                    let _ = db.create_object_store(store);
                }
            }
            // A database of an earlier layout: `kv` holds every pair at its current version.
            // Say which, in this upgrade's own transaction, before anything stops writing `kv`.
            let old = e.old_version();
            if (1.0..3.0).contains(&old) {
                if let Some(meta) = req.transaction().and_then(|tx| tx.object_store(META).ok()) {
                    if let Ok(get) = meta.get(&VERSION_KEY.into()) {
                        let get2 = get.clone();
                        let on_version = Closure::once_into_js(move |_e: web_sys::Event| {
                            let v = version_of(&get2.result().unwrap_or(JsValue::UNDEFINED));
                            let _ =
                                meta.put_with_key(&JsValue::from_f64(v), &KV_VERSION_KEY.into());
                        });
                        get.set_onsuccess(Some(on_version.unchecked_ref()));
                    }
                }
            }
        },
    );
    req.set_onupgradeneeded(Some(upgrade.as_ref().unchecked_ref()));
    let blocked = Closure::<dyn FnMut()>::new(|| {});
    req.set_onblocked(Some(blocked.as_ref().unchecked_ref()));
    let db = await_request(&req).await;
    req.set_onupgradeneeded(None);
    req.set_onblocked(None);
    drop(upgrade);
    drop(blocked);
    let db: IdbDatabase = db?.dyn_into()?;
    // Another connection wants to upgrade or delete the database: let it, this one is done.
    let db2 = db.clone();
    let on_vc = Closure::<dyn FnMut()>::new(move || db2.close());
    db.set_onversionchange(Some(on_vc.as_ref().unchecked_ref()));
    on_vc.forget(); // lives as long as the connection (one per open site)
    Ok(db)
}

/// Delete the database `name` (tests; "reset site" in the demo).
pub async fn delete_db(name: &str) -> Result<(), JsValue> {
    let req = idb_factory()?.delete_database(name)?;
    await_request(&req).await.map(|_| ())
}

fn to_bytes(v: &JsValue) -> Vec<u8> {
    if let Some(u) = v.dyn_ref::<Uint8Array>() {
        u.to_vec()
    } else if v.is_instance_of::<js_sys::ArrayBuffer>() {
        Uint8Array::new(v).to_vec()
    } else if let Some(s) = v.as_string() {
        s.into_bytes()
    } else {
        Vec::new()
    }
}

/// The bytes of the snapshot's chunks, one after the other, copied once from JavaScript into one
/// buffer of the right size (the 100k-object snapshot is ~180 MB: a copy per chunk plus the
/// growing buffer's reallocations cost a noticeable part of an open).
fn concat_chunks(parts: &[JsValue]) -> Vec<u8> {
    let arrays: Vec<Result<Uint8Array, &JsValue>> = parts
        .iter()
        .map(|v| {
            if let Some(u) = v.dyn_ref::<Uint8Array>() {
                Ok(u.clone())
            } else if v.is_instance_of::<js_sys::ArrayBuffer>() {
                Ok(Uint8Array::new(v)) // a view, not a copy
            } else {
                Err(v)
            }
        })
        .collect();
    let total = arrays
        .iter()
        .map(|a| match a {
            Ok(u) => u.length() as usize,
            Err(v) => to_bytes(v).len(),
        })
        .sum();
    let mut all = vec![0u8; total];
    let mut at = 0;
    for a in &arrays {
        match a {
            Ok(u) => {
                let len = u.length() as usize;
                u.copy_to(&mut all[at..at + len]);
                at += len;
            }
            Err(v) => {
                let b = to_bytes(v);
                all[at..at + b.len()].copy_from_slice(&b);
                at += b.len();
            }
        }
    }
    all
}

fn version_of(v: &JsValue) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

/// The pairs of the `kv` store in key order, and the database's version. Only databases written
/// before layout 3 have pairs there, holding the version in `meta.kvVersion` (see the module doc);
/// [`load`] reads the whole keyspace of any database.
pub async fn load_all(db: &IdbDatabase) -> Result<(Vec<(Vec<u8>, Vec<u8>)>, f64), StoreError> {
    let run = async {
        let stores = Array::of2(&KV.into(), &META.into());
        let tx = db.transaction_with_str_sequence(&stores)?;
        let kv = tx.object_store(KV)?;
        // all three requests are issued before the first await, so the transaction stays active
        let keys = kv.get_all_keys()?;
        let values = kv.get_all()?;
        let version = tx.object_store(META)?.get(&VERSION_KEY.into())?;
        let keys: Array = await_request(&keys).await?.dyn_into()?;
        let values: Array = await_request(&values).await?.dyn_into()?;
        let version = version_of(&await_request(&version).await?);
        let pairs = keys
            .iter()
            .zip(values.iter())
            .map(|(k, v)| (to_bytes(&k), to_bytes(&v)))
            .collect();
        Ok::<_, JsValue>((pairs, version))
    };
    run.await.map_err(|e| store_error(&e))
}

/// Serialize pairs (in key order) as `[u32 LE key length][key][u32 LE value length][value]...`.
/// The buffer is allocated once at its final size (`pairs` is walked twice): growing it by
/// doubling cost a fifth of a snapshot rewrite at 100k objects (the profile in bench/RESULTS.md).
pub fn encode_snapshot<'a>(pairs: impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone) -> Vec<u8> {
    let size = pairs.clone().map(|(k, v)| 8 + k.len() + v.len()).sum();
    let mut out = Vec::with_capacity(size);
    for (k, v) in pairs {
        for part in [k, v] {
            out.extend_from_slice(&(part.len() as u32).to_le_bytes());
            out.extend_from_slice(part);
        }
    }
    out
}

/// The pairs of a snapshot made by [`encode_snapshot`]; `None` if the bytes are malformed.
pub fn decode_snapshot(bytes: &[u8]) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    // count the pairs first (a hop over the lengths), so the vector is allocated once
    let mut pairs = 0usize;
    let mut at = 0usize;
    while at < bytes.len() {
        for _ in 0..2 {
            let len_end = at.checked_add(4)?;
            let len = u32::from_le_bytes(bytes.get(at..len_end)?.try_into().ok()?) as usize;
            // checked: on wasm32 a malformed length near u32::MAX would wrap `usize`
            at = len_end.checked_add(len)?;
        }
        pairs += 1;
    }
    if at != bytes.len() {
        return None;
    }
    let mut out = Vec::with_capacity(pairs);
    let mut rest = bytes;
    let take = |rest: &mut &[u8]| -> Option<Vec<u8>> {
        let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        let part = rest.get(4..4 + len)?.to_vec();
        *rest = &rest[4 + len..];
        Some(part)
    };
    while !rest.is_empty() {
        let k = take(&mut rest)?;
        let v = take(&mut rest)?;
        out.push((k, v));
    }
    Some(out)
}

/// `pairs` (sorted by key, as a snapshot holds them) with `changes` applied in order (later change
/// sets winning; `None` deletes), still sorted. One merge pass over the pairs instead of building
/// a map of the whole keyspace: the change sets after a snapshot are few, the pairs many.
pub fn apply_sorted(
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
    changes: Vec<ChangeSet>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut merged = ChangeSet::new();
    for c in changes {
        merged.extend(c);
    }
    if merged.is_empty() {
        return pairs;
    }
    let mut out = Vec::with_capacity(pairs.len() + merged.len());
    let mut edits = merged.into_iter().peekable();
    for (k, v) in pairs {
        while let Some((ek, _)) = edits.peek() {
            if *ek >= k {
                break;
            }
            if let Some((ek, Some(ev))) = edits.next() {
                out.push((ek, ev));
            }
        }
        match edits.peek() {
            Some((ek, _)) if *ek == k => {
                if let Some((ek, Some(ev))) = edits.next() {
                    out.push((ek, ev));
                }
            }
            _ => out.push((k, v)),
        }
    }
    out.extend(edits.filter_map(|(k, v)| v.map(|v| (k, v))));
    out
}

/// How [`load`] read the keyspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadedFrom {
    /// The snapshot plus the log entries after it.
    Snapshot,
    /// Every `kv` pair (a database written before layout 3) plus the log entries after them.
    Kv,
    /// The log alone, from version 1 (no snapshot written yet, or none usable).
    Log,
}

/// What one read transaction of [`load`] found: the snapshot's version and bytes, the database's
/// version and, in a database of an earlier layout, the version its `kv` store holds.
struct Found {
    snap_version: f64,
    snap_bytes: Option<Vec<u8>>,
    version: f64,
    kv_version: Option<f64>,
}

async fn read_snapshot(db: &IdbDatabase) -> Result<Found, JsValue> {
    let stores = Array::of3(&META.into(), &LOG.into(), &SNAPSHOT.into());
    let tx = db.transaction_with_str_sequence(&stores)?;
    let snap = tx.object_store(SNAPSHOT)?;
    let snap_version = snap.get(&SNAPSHOT_VERSION_KEY.into())?;
    let snap_data = snap.get(&SNAPSHOT_DATA_KEY.into())?;
    let snap_chunks = snap.get(&SNAPSHOT_CHUNKS_KEY.into())?;
    // every chunk that may exist is asked for before the first await (the transaction must
    // stay active); missing ones come back `undefined`
    let chunks = (0..SNAPSHOT_MAX_CHUNKS)
        .map(|i| snap.get(&chunk_key(i)))
        .collect::<Result<Vec<_>, _>>()?;
    let meta = tx.object_store(META)?;
    let version = meta.get(&VERSION_KEY.into())?;
    let kv_version = meta.get(&KV_VERSION_KEY.into())?;
    let snap_version = version_of(&await_request(&snap_version).await?);
    let snap_data = await_request(&snap_data).await?;
    let n = await_request(&snap_chunks).await?.as_f64();
    let mut snap_bytes = None;
    match n {
        Some(n) if n >= 1.0 && n <= SNAPSHOT_MAX_CHUNKS as f64 => {
            let mut parts = Vec::with_capacity(n as usize);
            for req in chunks.iter().take(n as usize) {
                let chunk = await_request(req).await?;
                if chunk.is_undefined() {
                    break;
                }
                parts.push(chunk);
            }
            if parts.len() == n as usize {
                snap_bytes = Some(concat_chunks(&parts));
            }
        }
        Some(_) => {}
        None if !snap_data.is_undefined() => snap_bytes = Some(to_bytes(&snap_data)),
        None => {}
    }
    let version = version_of(&await_request(&version).await?);
    let kv_version = await_request(&kv_version).await?.as_f64();
    Ok(Found {
        snap_version,
        snap_bytes,
        version,
        kv_version,
    })
}

/// `base` (the keyspace at version `at`) brought to the database's version by the log entries
/// after `at`; `None` when the log does not reach back to `at`.
async fn replay(
    db: &IdbDatabase,
    base: Vec<(Vec<u8>, Vec<u8>)>,
    at: f64,
) -> Result<Option<(Vec<(Vec<u8>, Vec<u8>)>, f64)>, StoreError> {
    Ok(match changes_since(db, at).await? {
        CatchUp::Current => Some((base, at)),
        CatchUp::Apply { changes, version } => Some((apply_sorted(base, changes), version)),
        CatchUp::Reload => None,
    })
}

/// Everything in the database, the version it reflects, how it was read, and the snapshot's
/// version (0 when there is none). From the first of these that the log reaches back to: the
/// snapshot, the `kv` pairs of a database written before layout 3, the empty keyspace of version 0
/// (a database whose first snapshot is not written yet). Fails when none is (the database was
/// damaged outside this code: the snapshot does not decode and the log was pruned past it), rather
/// than opening a site with some of its data missing.
pub async fn load(
    db: &IdbDatabase,
) -> Result<(Vec<(Vec<u8>, Vec<u8>)>, f64, LoadedFrom, f64), StoreError> {
    // Another tab's snapshot may prune the log between the two reads: read again then.
    for _ in 0..3 {
        let found = read_snapshot(db).await.map_err(|e| store_error(&e))?;
        let snap_version = found.snap_version;
        let usable = snap_version > 0.0 && snap_version <= found.version;
        if let Some(pairs) = found
            .snap_bytes
            .filter(|_| usable)
            .and_then(|b| decode_snapshot(&b))
        {
            if let Some((pairs, version)) = replay(db, pairs, snap_version).await? {
                return Ok((pairs, version, LoadedFrom::Snapshot, snap_version));
            }
        }
        if let Some(kv_version) = found.kv_version.filter(|k| *k <= found.version) {
            let (pairs, _) = load_all(db).await?;
            if let Some((pairs, version)) = replay(db, pairs, kv_version).await? {
                return Ok((pairs, version, LoadedFrom::Kv, snap_version));
            }
        }
        if let Some((pairs, version)) = replay(db, Vec::new(), 0.0).await? {
            return Ok((pairs, version, LoadedFrom::Log, snap_version));
        }
    }
    Err(StoreError::Backend(
        "IndexedDB: the site's data is incomplete (no usable snapshot, and the change log does not \
         reach back far enough)"
            .into(),
    ))
}

/// Store `data` (see [`encode_snapshot`]) as the snapshot of `version`, in one transaction, in
/// chunks of [`SNAPSHOT_CHUNK_BYTES`] (`chunk:0`, ... and their number under `chunks`). The
/// one-record form of earlier versions (`data`) is deleted. The log entries more than
/// [`LOG_KEEP`] versions before `version` go in the same transaction.
pub async fn write_snapshot(db: &IdbDatabase, version: f64, data: &[u8]) -> Result<(), StoreError> {
    write_snapshot_in_chunks(db, version, data, SNAPSHOT_CHUNK_BYTES).await
}

/// [`write_snapshot`] with chunks of `chunk_bytes` (tests use small ones).
pub async fn write_snapshot_in_chunks(
    db: &IdbDatabase,
    version: f64,
    data: &[u8],
    chunk_bytes: usize,
) -> Result<(), StoreError> {
    snapshot_tx(db, version, data, chunk_bytes, false).await
}

/// Forget every older state of the site: empty the `log` store (its change sets hold earlier
/// values, such as the title and text of an object the user may no longer see) and rewrite the
/// snapshot as `data` at `version`, in one transaction. Another tab behind `version` then finds
/// the log too short and reloads everything ([`CatchUp::Reload`]).
pub async fn forget_history(db: &IdbDatabase, version: f64, data: &[u8]) -> Result<(), StoreError> {
    snapshot_tx(db, version, data, SNAPSHOT_CHUNK_BYTES, true).await
}

async fn snapshot_tx(
    db: &IdbDatabase,
    version: f64,
    data: &[u8],
    chunk_bytes: usize,
    clear_log: bool,
) -> Result<(), StoreError> {
    let run = async {
        let parts: Vec<&[u8]> = if data.is_empty() {
            vec![data]
        } else {
            data.chunks(chunk_bytes.max(1)).collect()
        };
        if parts.len() > SNAPSHOT_MAX_CHUNKS as usize {
            return Err(JsValue::from_str("the snapshot is too large"));
        }
        let stores = if clear_log {
            Array::of4(&LOG.into(), &SNAPSHOT.into(), &KV.into(), &META.into())
        } else {
            Array::of2(&LOG.into(), &SNAPSHOT.into())
        };
        let tx =
            db.transaction_with_str_sequence_and_mode(&stores, IdbTransactionMode::Readwrite)?;
        let log = tx.object_store(LOG)?;
        if clear_log {
            log.clear()?;
            // the pairs an earlier layout kept are an older state too
            tx.object_store(KV)?.clear()?;
            tx.object_store(META)?.delete(&KV_VERSION_KEY.into())?;
        } else if version > LOG_KEEP {
            // The log only ever shrinks here, behind the snapshot this transaction writes: every
            // change set after it stays (the durable form), and the [`LOG_KEEP`] before it, for
            // other tabs to catch up from.
            let old = IdbKeyRange::upper_bound(&JsValue::from_f64(version - LOG_KEEP))?;
            log.delete(&old)?;
        }
        let store = tx.object_store(SNAPSHOT)?;
        // chunks of an earlier, longer snapshot hold older states too
        if clear_log {
            for i in parts.len() as u32..SNAPSHOT_MAX_CHUNKS {
                store.delete(&chunk_key(i))?;
            }
        }
        for (i, part) in parts.iter().enumerate() {
            store.put_with_key(&Uint8Array::from(*part), &chunk_key(i as u32))?;
        }
        store.put_with_key(
            &JsValue::from_f64(parts.len() as f64),
            &SNAPSHOT_CHUNKS_KEY.into(),
        )?;
        store.delete(&SNAPSHOT_DATA_KEY.into())?;
        store.put_with_key(&JsValue::from_f64(version), &SNAPSHOT_VERSION_KEY.into())?;
        await_tx(&tx).await
    };
    run.await.map_err(|e| store_error(&e))
}

/// The version counter now in the database.
pub async fn read_version(db: &IdbDatabase) -> Result<f64, StoreError> {
    let run = async {
        let tx = db.transaction_with_str(META)?;
        let req = tx.object_store(META)?.get(&VERSION_KEY.into())?;
        Ok::<_, JsValue>(version_of(&await_request(&req).await?))
    };
    run.await.map_err(|e| store_error(&e))
}

/// What a catching-up tab must do to reach the database's state.
pub enum CatchUp {
    /// Nothing: the memory copy is current.
    Current,
    /// Apply these change sets in order; the last one brings the copy to `version`.
    Apply {
        /// The change sets, oldest first.
        changes: Vec<ChangeSet>,
        /// The version reached.
        version: f64,
    },
    /// The log does not reach back far enough: reload everything.
    Reload,
}

fn decode_change_set(v: &JsValue) -> Option<ChangeSet> {
    let rows: Array = v.clone().dyn_into().ok()?;
    let mut out = ChangeSet::new();
    for row in rows.iter() {
        let row: Array = row.dyn_into().ok()?;
        let key = to_bytes(&row.get(0));
        let value = row.get(1);
        let value = if value.is_null() || value.is_undefined() {
            None
        } else {
            Some(to_bytes(&value))
        };
        out.insert(key, value);
    }
    Some(out)
}

/// The change sets after `mine`, from the log, in one read transaction.
pub async fn changes_since(db: &IdbDatabase, mine: f64) -> Result<CatchUp, StoreError> {
    let run = async {
        let stores = Array::of2(&META.into(), &LOG.into());
        let tx = db.transaction_with_str_sequence(&stores)?;
        let version = tx.object_store(META)?.get(&VERSION_KEY.into())?;
        let range = IdbKeyRange::lower_bound_with_open(&JsValue::from_f64(mine), true)?;
        let log = tx.object_store(LOG)?;
        let keys = log.get_all_keys_with_key(&range)?;
        let values = log.get_all_with_key(&range)?;
        let version = version_of(&await_request(&version).await?);
        let keys: Array = await_request(&keys).await?.dyn_into()?;
        let values: Array = await_request(&values).await?.dyn_into()?;
        if version == mine {
            return Ok::<_, JsValue>(CatchUp::Current);
        }
        if version < mine {
            // the database was replaced (deleted and recreated) under us
            return Ok(CatchUp::Reload);
        }
        let mut changes = Vec::new();
        let mut expect = mine + 1.0;
        for (k, v) in keys.iter().zip(values.iter()) {
            if version_of(&k) != expect {
                return Ok(CatchUp::Reload);
            }
            match decode_change_set(&v) {
                Some(c) => changes.push(c),
                None => return Ok(CatchUp::Reload),
            }
            expect += 1.0;
        }
        if expect - 1.0 != version {
            return Ok(CatchUp::Reload);
        }
        Ok(CatchUp::Apply { changes, version })
    };
    run.await.map_err(|e| store_error(&e))
}

/// Write `changes` as version `expected + 1`, in ONE readwrite transaction, only if the database is
/// still at version `expected`. Resolves when the transaction has completed (is durable).
///
/// All requests are placed at once: the version read first, then the writes. IndexedDB runs the
/// requests of a transaction in order and commits only after every request's `success` event, so
/// when the read's `success` handler finds another version and aborts, none of the writes stays.
/// This costs one round trip to the IndexedDB backend instead of two (read, then write).
pub async fn write_changes(
    db: &IdbDatabase,
    expected: f64,
    changes: &ChangeSet,
) -> Result<(), WriteError> {
    let conflict = Rc::new(Cell::new(false));
    let setup = || -> Result<IdbTransaction, JsValue> {
        let stores = Array::of2(&META.into(), &LOG.into());
        let tx =
            db.transaction_with_str_sequence_and_mode(&stores, IdbTransactionMode::Readwrite)?;
        let check = tx.object_store(META)?.get(&VERSION_KEY.into())?;
        let (check2, tx2, conflict) = (check.clone(), tx.clone(), conflict.clone());
        // Runs inside the `success` event of the version read, before the transaction can commit.
        let on_version = Closure::once_into_js(move |_e: web_sys::Event| {
            let current = version_of(&check2.result().unwrap_or(JsValue::UNDEFINED));
            if current != expected {
                conflict.set(true);
                let _ = tx2.abort();
            }
        });
        check.set_onsuccess(Some(on_version.unchecked_ref()));
        let writes = || -> Result<(), JsValue> {
            let next = expected + 1.0;
            let entry = Array::new_with_length(changes.len() as u32);
            for (i, (k, v)) in changes.iter().enumerate() {
                let key = Uint8Array::from(k.as_slice());
                let value = match v {
                    Some(v) => JsValue::from(Uint8Array::from(v.as_slice())),
                    None => JsValue::NULL,
                };
                entry.set(i as u32, Array::of2(&key, &value).into());
            }
            tx.object_store(META)?
                .put_with_key(&JsValue::from_f64(next), &VERSION_KEY.into())?;
            // the log is pruned only behind a snapshot (see `snapshot_tx`), never here
            tx.object_store(LOG)?
                .put_with_key(&entry, &JsValue::from_f64(next))?;
            Ok(())
        };
        if let Err(e) = writes() {
            let _ = tx.abort();
            return Err(e);
        }
        Ok(tx)
    };
    let tx = setup().map_err(|e| WriteError::Store(store_error(&e)))?;
    let outcome = await_tx(&tx).await;
    if conflict.get() {
        return Err(WriteError::Conflict);
    }
    outcome.map_err(|e| WriteError::Store(store_error(&e)))
}

#[cfg(test)]
mod tests {
    use super::{decode_snapshot, encode_snapshot};

    #[test]
    fn change_sets_merge_into_sorted_pairs_like_a_map() {
        use std::collections::BTreeMap;
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = ["b", "d", "f", "h"]
            .iter()
            .map(|k| (k.as_bytes().to_vec(), b"old".to_vec()))
            .collect();
        let set = |rows: &[(&str, Option<&str>)]| -> crate::ChangeSet {
            rows.iter()
                .map(|(k, v)| (k.as_bytes().to_vec(), v.map(|v| v.as_bytes().to_vec())))
                .collect()
        };
        let changes = vec![
            set(&[
                ("a", Some("1")),
                ("d", None),
                ("f", Some("2")),
                ("z", Some("3")),
            ]),
            set(&[("a", None), ("d", Some("4")), ("e", Some("5")), ("h", None)]),
        ];
        let mut want: BTreeMap<Vec<u8>, Vec<u8>> = pairs.iter().cloned().collect();
        for c in &changes {
            for (k, v) in c {
                match v {
                    Some(v) => want.insert(k.clone(), v.clone()),
                    None => want.remove(k),
                };
            }
        }
        let got = super::apply_sorted(pairs.clone(), changes);
        assert_eq!(got, want.into_iter().collect::<Vec<_>>());
        assert_eq!(super::apply_sorted(pairs.clone(), Vec::new()), pairs);
    }

    #[test]
    fn snapshots_round_trip_and_reject_truncation() {
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (b"a".to_vec(), b"1".to_vec()),
            (b"o:x".to_vec(), Vec::new()),
        ];
        let bytes = encode_snapshot(pairs.iter().map(|(k, v)| (k.as_slice(), v.as_slice())));
        assert_eq!(decode_snapshot(&bytes), Some(pairs));
        assert_eq!(decode_snapshot(&bytes[..bytes.len() - 1]), None);
        assert_eq!(decode_snapshot(&[]), Some(Vec::new()));
        // a key without its value, and lengths running past the end (one near u32::MAX)
        assert_eq!(decode_snapshot(&[1, 0, 0, 0, b'a']), None);
        assert_eq!(decode_snapshot(&[1, 0, 0, 0, b'a', 9, 0, 0, 0, b'1']), None);
        assert_eq!(decode_snapshot(&[0xfc, 0xff, 0xff, 0xff, b'a']), None);
    }
}
