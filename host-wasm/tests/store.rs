//! The browser's store in headless Chromium: the store conformance suite on the store a site runs
//! on (`MemStore` with the site's commit hook, from `host_wasm::site_store`), and a durability
//! round trip through IndexedDB with host-wasm's own `idb` module.

mod common;

use common::unique;
use engine::core::store::{conformance, KeyValue};
use engine::{Direction, MemStore, ReadTxn, Store, StoreError, WriteTxn};
use host_wasm::{idb, site_store, Recorder};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// A site's store; clears the commit hook when dropped (the hook holds a clone of the store).
struct SiteStore {
    store: MemStore,
    _recorder: Recorder,
}

impl SiteStore {
    fn new() -> Self {
        let (store, recorder) = site_store(Vec::new());
        SiteStore {
            store,
            _recorder: recorder,
        }
    }
}

impl Drop for SiteStore {
    fn drop(&mut self) {
        self.store.set_commit_hook(None);
    }
}

impl Store for SiteStore {
    fn begin_read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        self.store.begin_read()
    }

    fn begin_write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        self.store.begin_write()
    }
}

#[wasm_bindgen_test]
fn site_store_conforms() {
    conformance::run_all(SiteStore::new);
}

fn all(store: &MemStore) -> Vec<KeyValue> {
    store
        .begin_read()
        .and_then(|r| r.scan(b"", b"", Direction::Forward, usize::MAX))
        .expect("scan")
}

#[wasm_bindgen_test]
async fn writes_through_the_site_store_survive_a_reopen_from_indexeddb() {
    let name = unique("store-durability");
    let db = idb::open_db(&name).await.expect("open IndexedDB");
    let (pairs, version, _, _) = idb::load(&db).await.expect("load");
    assert!(
        pairs.is_empty(),
        "a new database holds {} pairs",
        pairs.len()
    );
    let (store, recorder) = site_store(pairs);

    let big: Vec<u8> = (0..(3 << 20)).map(|i: u32| (i % 251) as u8).collect();
    let all_bytes: Vec<u8> = (0..=255u8).collect();
    // two commits, persisted together as the site does after a request that committed twice
    {
        let mut w = store.begin_write().expect("begin_write");
        w.put(&[0x00], b"zero").unwrap();
        w.put(&[0xFF, 0xFF], &all_bytes).unwrap();
        w.put(&[0x61, 0x00, 0xFF], b"").unwrap();
        w.put(b"big", &big).unwrap();
        w.put(b"deleted later", b"x").unwrap();
        w.put(b"overwritten", b"first").unwrap();
        w.commit().expect("commit");
    }
    {
        let mut w = store.begin_write().expect("begin_write");
        w.delete(b"deleted later").unwrap();
        w.put(b"overwritten", b"second").unwrap();
        w.commit().expect("commit");
    }
    let changes = recorder.take_merged();
    assert_eq!(changes.len(), 6, "merged change set {:?}", changes.keys());
    idb::write_changes(&db, version, &changes)
        .await
        .expect("write to IndexedDB");
    let written = all(&store);
    store.set_commit_hook(None);
    db.close();

    let db = idb::open_db(&name).await.expect("reopen IndexedDB");
    let (pairs, reopened_version, _, _) = idb::load(&db).await.expect("load again");
    assert_eq!(reopened_version, version + 1.0);
    let (reopened, recorder) = site_store(pairs);
    let read_back = all(&reopened);
    assert_eq!(read_back.len(), written.len());
    assert!(
        read_back == written,
        "IndexedDB returned other pairs than were written"
    );
    let r = reopened.begin_read().expect("begin_read");
    assert_eq!(r.get(&[0x00]).unwrap().as_deref(), Some(&b"zero"[..]));
    assert_eq!(r.get(&[0xFF, 0xFF]).unwrap(), Some(all_bytes));
    assert_eq!(r.get(&[0x61, 0x00, 0xFF]).unwrap(), Some(Vec::new()));
    assert!(
        r.get(b"big").unwrap() == Some(big),
        "the 3 MiB value changed"
    );
    assert_eq!(r.get(b"deleted later").unwrap(), None);
    assert_eq!(
        r.get(b"overwritten").unwrap().as_deref(),
        Some(&b"second"[..])
    );
    drop(r);
    assert!(
        recorder.take_merged().is_empty(),
        "loading recorded a change"
    );
    reopened.set_commit_hook(None);
    db.close();
    idb::delete_db(&name).await.expect("delete the database");
}
