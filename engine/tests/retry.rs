//! An optimistic store's conflict makes the engine run the whole request (or group) again, a
//! bounded number of times; an attempt that conflicted leaves nothing behind.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use engine::core::store::{Direction, KeyValue};
use engine::{
    ConflictRetry, ConflictStats, Engine, EngineOptions, MemStore, Method, ReadTxn, Request,
    SiteSetup, Store, StoreError, WriteTxn,
};
use serde_json::json;

/// A memory store whose next `conflicts` write commits fail with `Conflict` (applying nothing),
/// as an optimistic backend's do when another writer got there first.
#[derive(Clone, Default)]
struct Contended {
    inner: MemStore,
    conflicts: Arc<AtomicUsize>,
    commits: Arc<AtomicUsize>,
}

struct Write<'a> {
    inner: Box<dyn WriteTxn + 'a>,
    store: &'a Contended,
}

impl ReadTxn for Write<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.get(key)
    }
    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        dir: Direction,
        limit: usize,
    ) -> Result<Vec<KeyValue>, StoreError> {
        self.inner.scan(start, end, dir, limit)
    }
}

impl WriteTxn for Write<'_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.inner.put(key, value)
    }
    fn delete(&mut self, key: &[u8]) -> Result<(), StoreError> {
        self.inner.delete(key)
    }
    fn commit(self: Box<Self>) -> Result<(), StoreError> {
        self.store.commits.fetch_add(1, Ordering::SeqCst);
        let pending = self.store.conflicts.load(Ordering::SeqCst);
        if pending > 0 {
            self.store.conflicts.store(pending - 1, Ordering::SeqCst);
            return Err(StoreError::Conflict(
                "another writer committed first".into(),
            ));
        }
        self.inner.commit()
    }
}

impl Store for Contended {
    fn begin_read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        self.inner.begin_read()
    }
    fn begin_write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        Ok(Box::new(Write {
            inner: self.inner.begin_write()?,
            store: self,
        }))
    }
}

const BASE: &str = "http://localhost:8080";
const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";

fn site() -> (Engine<Contended>, Contended) {
    let store = Contended::default();
    let engine = Engine::new(store.clone(), EngineOptions::for_tests()).unwrap();
    engine.create_site(&SiteSetup::new("secret")).unwrap();
    (engine, store)
}

fn create(title: &str) -> Request {
    Request::new(Method::Post, "/", BASE)
        .header("Authorization", ADMIN)
        .json(&json!({"@type": "Page", "title": title}))
}

fn children(engine: &Engine<Contended>) -> usize {
    let resp = engine.handle(Request::new(Method::Get, "/", BASE).header("Authorization", ADMIN));
    resp.json_body()["items_total"].as_u64().unwrap() as usize
}

#[test]
fn a_conflicting_request_runs_again_and_its_effects_happen_once() {
    let (engine, store) = site();
    store.conflicts.store(2, Ordering::SeqCst);
    let before = store.commits.load(Ordering::SeqCst);
    let resp = engine.handle(create("Doc"));
    assert_eq!(resp.status, 201, "{}", String::from_utf8_lossy(&resp.body));
    assert_eq!(store.commits.load(Ordering::SeqCst) - before, 3);
    assert_eq!(children(&engine), 1);
    // One version, one creation entry: the conflicting attempts left nothing behind.
    let history = engine
        .handle(Request::new(Method::Get, "/doc/@history", BASE).header("Authorization", ADMIN));
    assert_eq!(history.json_body().as_array().unwrap().len(), 2);
}

#[test]
fn too_many_conflicts_answer_503_and_change_nothing() {
    let (engine, store) = site();
    store
        .conflicts
        .store(engine::engine::MAX_ATTEMPTS, Ordering::SeqCst);
    let resp = engine.handle(create("Doc"));
    assert_eq!(resp.status, 503);
    assert_eq!(resp.header_value("retry-after"), Some("1"));
    assert_eq!(resp.json_body()["type"], "Busy");
    assert_eq!(children(&engine), 0);
}

#[test]
fn a_conflicting_group_runs_again_as_a_whole() {
    let (engine, store) = site();
    store.conflicts.store(1, Ordering::SeqCst);
    let answers = engine.handle_group(&[create("A"), create("B"), create("A")]);
    let statuses: Vec<u16> = answers.iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![201, 201, 201]);
    let ids: Vec<String> = answers
        .iter()
        .map(|r| r.json_body()["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, vec!["a", "b", "a-1"]);
    assert_eq!(children(&engine), 3);
}

/// An engine whose conflicts are re-run at most `max_attempts` times in all, recording each
/// pause the engine asks the host for.
fn site_with_pauses(max_attempts: usize) -> (Engine<Contended>, Contended, Arc<Mutex<Vec<usize>>>) {
    let store = Contended::default();
    let pauses = Arc::new(Mutex::new(Vec::new()));
    let seen = pauses.clone();
    let options = EngineOptions {
        conflict_retry: ConflictRetry {
            max_attempts,
            pause: Some(Arc::new(move |runs| {
                seen.lock().unwrap().push(runs);
            })),
        },
        ..EngineOptions::for_tests()
    };
    let engine = Engine::new(store.clone(), options).unwrap();
    engine.create_site(&SiteSetup::new("secret")).unwrap();
    (engine, store, pauses)
}

#[test]
fn the_host_pauses_before_each_rerun_and_the_runs_are_counted() {
    let (engine, store, pauses) = site_with_pauses(10);
    let quiet = engine.conflict_stats();
    assert_eq!(quiet, ConflictStats::default());
    store.conflicts.store(3, Ordering::SeqCst);
    let resp = engine.handle(create("Doc"));
    assert_eq!(resp.status, 201, "{}", String::from_utf8_lossy(&resp.body));
    // Paused after the 1st, 2nd and 3rd run conflicted; the 4th committed.
    assert_eq!(*pauses.lock().unwrap(), vec![1, 2, 3]);
    let stats = engine.conflict_stats();
    assert_eq!(stats.reruns, 3);
    assert_eq!(stats.settled, vec![0, 0, 0, 0, 1]);
    assert_eq!(stats.exhausted, 0);
    assert_eq!(children(&engine), 1);
}

#[test]
fn more_attempts_than_the_default_when_the_host_asks_and_then_503() {
    // Nine conflicts: more than the default 5 runs, fewer than 10.
    let (engine, store, pauses) = site_with_pauses(10);
    store.conflicts.store(9, Ordering::SeqCst);
    assert_eq!(engine.handle(create("A")).status, 201);
    assert_eq!(pauses.lock().unwrap().len(), 9);
    // Ten conflicts: every allowed run conflicts; no pause after the last one.
    pauses.lock().unwrap().clear();
    store.conflicts.store(10, Ordering::SeqCst);
    let resp = engine.handle(create("B"));
    assert_eq!(resp.status, 503);
    assert_eq!(resp.json_body()["type"], "Busy");
    assert_eq!(*pauses.lock().unwrap(), (1..10).collect::<Vec<_>>());
    let stats = engine.conflict_stats();
    assert_eq!(stats.reruns, 18);
    assert_eq!(stats.exhausted, 1);
    assert_eq!(stats.settled.get(10), Some(&1));
    assert_eq!(children(&engine), 1);
}

#[test]
fn a_conflicting_group_pauses_too() {
    let (engine, store, pauses) = site_with_pauses(4);
    store.conflicts.store(2, Ordering::SeqCst);
    let answers = engine.handle_group(&[create("A"), create("B")]);
    assert_eq!(
        answers.iter().map(|r| r.status).collect::<Vec<_>>(),
        vec![201, 201]
    );
    assert_eq!(*pauses.lock().unwrap(), vec![1, 2]);
    assert_eq!(engine.conflict_stats().settled, vec![0, 0, 0, 1]);
}
