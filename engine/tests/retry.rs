//! An optimistic store's conflict makes the engine run the whole request (or group) again, a
//! bounded number of times; an attempt that conflicted leaves nothing behind.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use engine::core::store::{Direction, KeyValue};
use engine::{
    Engine, EngineOptions, MemStore, Method, ReadTxn, Request, SiteSetup, Store, StoreError,
    WriteTxn,
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
