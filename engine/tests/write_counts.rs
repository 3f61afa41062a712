//! How many store writes (puts and deletes) a create and an edit make, counted by a store wrapper
//! (`cargo test -p engine --test write_counts -- --nocapture` prints the keys). The bounds are
//! today's counts: a change that adds writes to these paths must raise them on purpose.

use std::sync::{Arc, Mutex};

use engine::{
    Direction, Engine, EngineOptions, KeyValue, MemStore, Method, ReadTxn, Request, SiteSetup,
    Store, StoreError, WriteTxn,
};
use serde_json::json;

const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";
const BASE: &str = "http://localhost:8080";

/// A [`MemStore`] that records the keys every committed write transaction wrote.
#[derive(Clone, Default)]
struct Counting {
    inner: MemStore,
    log: Arc<Mutex<Vec<Vec<String>>>>,
}

struct CountingTxn<'a> {
    inner: Box<dyn WriteTxn + 'a>,
    keys: Vec<String>,
    log: Arc<Mutex<Vec<Vec<String>>>>,
}

impl ReadTxn for CountingTxn<'_> {
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

impl WriteTxn for CountingTxn<'_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.keys
            .push(format!("put {}", String::from_utf8_lossy(key)));
        self.inner.put(key, value)
    }
    fn delete(&mut self, key: &[u8]) -> Result<(), StoreError> {
        self.keys
            .push(format!("del {}", String::from_utf8_lossy(key)));
        self.inner.delete(key)
    }
    fn commit(self: Box<Self>) -> Result<(), StoreError> {
        let CountingTxn { inner, keys, log } = *self;
        inner.commit()?;
        log.lock().unwrap().push(keys);
        Ok(())
    }
}

impl Store for Counting {
    fn begin_read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        self.inner.begin_read()
    }
    fn begin_write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        Ok(Box::new(CountingTxn {
            inner: self.inner.begin_write()?,
            keys: Vec::new(),
            log: self.log.clone(),
        }))
    }
}

/// The writes of the last committed transaction after handling `req`.
fn writes_of(e: &Engine<Counting>, req: Request, status: u16) -> Vec<String> {
    e.store().log.lock().unwrap().clear();
    let resp = e.handle(req);
    assert_eq!(
        resp.status,
        status,
        "{}",
        String::from_utf8_lossy(&resp.body)
    );
    let log = e.store().log.lock().unwrap();
    assert_eq!(log.len(), 1, "one commit");
    log[0].clone()
}

#[test]
fn writes_per_create_and_edit() {
    let e = Engine::new(Counting::default(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    let post = |title: &str| {
        Request::new(Method::Post, "/folder", BASE)
            .header("Authorization", ADMIN)
            .json(
                &json!({"@type": "Page", "title": title, "description": "A page",
                "blocks": {"b1": {"@type": "slate", "plaintext": "Hello"}},
                "blocks_layout": {"items": ["b1"]}}),
            )
    };
    let folder = Request::new(Method::Post, "/", BASE)
        .header("Authorization", ADMIN)
        .json(&json!({"@type": "Folder", "id": "folder", "title": "Folder"}));
    writes_of(&e, folder, 201);
    writes_of(&e, post("First"), 201);
    let create = writes_of(&e, post("Second page"), 201);
    println!("a create writes {} keys:", create.len());
    for k in &create {
        println!("  {k}");
    }
    let edit = writes_of(
        &e,
        Request::new(Method::Patch, "/folder/second-page", BASE)
            .header("Authorization", ADMIN)
            .json(&json!({"title": "Second page, edited"})),
        204,
    );
    println!("an edit writes {} keys:", edit.len());
    for k in &edit {
        println!("  {k}");
    }
    assert!(create.len() <= CREATE_WRITES, "{} writes", create.len());
    assert!(edit.len() <= EDIT_WRITES, "{} writes", edit.len());
}

/// Store writes of a create of a page in a folder (see the test's output for the keys); the
/// catalog entry's listing copy under its parent (`x:c:`) is one of them. 24 before the
/// counters were written once per request (the history counter `n:<uid>:h` moves twice in a
/// create: the first workflow entry, the first version).
const CREATE_WRITES: usize = 23;
/// Store writes of an edit of a page's title (the title is in the listing copy too).
const EDIT_WRITES: usize = 14;
