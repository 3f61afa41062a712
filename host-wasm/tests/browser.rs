//! host-wasm in headless Chromium on real IndexedDB: persistence, several handles, failed writes,
//! the error log.

mod common;

use common::{call, open, options, unique};
use serde_json::{json, Value};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn write_drop_reopen_read_back() {
    let name = unique("persist");
    {
        let site = open(&name, options("indexeddb")).await;
        let r = call(
            &site,
            "POST",
            "/",
            Some(json!({"@type": "Page", "title": "Kept"})),
            true,
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.body);
        let r = call(
            &site,
            "PATCH",
            "/kept",
            Some(json!({"description": "still here"})),
            true,
        )
        .await;
        assert_eq!(r.status, 204, "{}", r.body);
    } // dropped: connection closed, memory gone
    let mut opts = options("indexeddb");
    opts.admin_password = None; // the site exists: no password needed
    let site = open(&name, opts).await;
    let r = call(&site, "GET", "/kept", None, true).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["title"], "Kept");
    assert_eq!(r.body["description"], "still here");
    // the admin user created at first open is persisted too (Basic auth worked above)
    assert!(site.version() >= 3.0, "version {}", site.version());
    drop(site);
    host_wasm::Site::open(name.clone(), options("indexeddb"))
        .await
        .expect("reopen");
}

/// Two handles on one database, like two tabs. Real randomness: two deterministic engines would
/// generate the same UIDs (same seed), which two real tabs never do.
/// The site is created first by a deterministic handle: the contract's short admin password is
/// accepted by test engines only (a new site's admin password follows the password policy).
async fn two_handles(name: &str) -> (host_wasm::Site, host_wasm::Site) {
    drop(open(name, options("indexeddb")).await);
    let real = || {
        let mut opts = options("indexeddb");
        opts.deterministic = false;
        opts.admin_password = None;
        opts
    };
    let a = open(name, real()).await;
    (a, open(name, real()).await)
}

#[wasm_bindgen_test]
async fn two_handles_on_one_database_do_not_lose_writes() {
    let name = unique("tabs");
    let (a, b) = two_handles(&name).await;
    // sequential, alternating: each handle is stale when it writes
    for i in 0..3 {
        let r = call(
            &a,
            "POST",
            "/",
            Some(json!({"@type": "Page", "id": format!("a{i}"), "title": "A"})),
            true,
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.body);
        let r = call(
            &b,
            "POST",
            "/",
            Some(json!({"@type": "Page", "id": format!("b{i}"), "title": "B"})),
            true,
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    // b sees a's writes (catch-up before each request)
    let r = call(&b, "GET", "/a2", None, true).await;
    assert_eq!(r.status, 200, "{}", r.body);

    // concurrent: both handles' requests interleave on the event loop
    let promises = js_sys::Array::new();
    for i in 0..5 {
        for (site, who) in [(&a, "ca"), (&b, "cb")] {
            let init = js_sys::Object::new();
            let headers = js_sys::Object::new();
            js_sys::Reflect::set(&headers, &"Authorization".into(), &common::ADMIN.into()).unwrap();
            js_sys::Reflect::set(&headers, &"Content-Type".into(), &"application/json".into())
                .unwrap();
            js_sys::Reflect::set(&init, &"method".into(), &"POST".into()).unwrap();
            js_sys::Reflect::set(&init, &"headers".into(), &headers.into()).unwrap();
            let body =
                json!({"@type": "Page", "id": format!("{who}{i}"), "title": who}).to_string();
            js_sys::Reflect::set(&init, &"body".into(), &body.into()).unwrap();
            promises.push(&site.fetch(format!("{}/", common::BASE).into(), Some(init.into())));
        }
    }
    let all = JsFuture::from(js_sys::Promise::all(&promises))
        .await
        .expect("all resolve");
    for resp in js_sys::Array::from(&all).iter() {
        let resp: web_sys::Response = resp.dyn_into().unwrap();
        assert_eq!(resp.status(), 201);
    }
    drop(a);
    drop(b);
    // a third handle loads from IndexedDB only
    let c = open(&name, options("indexeddb")).await;
    let r = call(&c, "GET", "/?b_size=100", None, true).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut ids: Vec<String> = r.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            i["@id"]
                .as_str()
                .unwrap_or("")
                .trim_start_matches("http://localhost:8080/")
                .to_string()
        })
        .collect();
    ids.sort();
    let mut want: Vec<String> = (0..3)
        .flat_map(|i| [format!("a{i}"), format!("b{i}")])
        .chain((0..5).flat_map(|i| [format!("ca{i}"), format!("cb{i}")]))
        .collect();
    want.sort();
    assert_eq!(ids, want);
    assert_eq!(r.body["items_total"], 16);
}

#[wasm_bindgen_test]
async fn failed_write_is_a_json_error_and_memory_does_not_diverge() {
    let name = unique("fail");
    let site = open(&name, options("indexeddb")).await;
    let before = site.version();
    for (quota, status, kind) in [
        (true, 507, "InsufficientStorage"),
        (false, 500, "StorageError"),
    ] {
        site.fail_next_write_for_tests(quota);
        let r = call(
            &site,
            "POST",
            "/",
            Some(json!({"@type": "Page", "id": "lost", "title": "x"})),
            true,
        )
        .await;
        assert_eq!(r.status, status, "{}", r.body);
        assert_eq!(r.body["type"], kind);
        // memory was rolled back: the page does not exist, and the same id is free
        let r = call(&site, "GET", "/lost", None, true).await;
        assert_eq!(r.status, 404, "{}", r.body);
        assert_eq!(site.version(), before);
    }
    let r = call(
        &site,
        "POST",
        "/",
        Some(json!({"@type": "Page", "id": "lost", "title": "y"})),
        true,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["@id"], "http://localhost:8080/lost");
    drop(site);
    let site = open(&name, options("indexeddb")).await;
    let r = call(&site, "GET", "/lost", None, true).await;
    assert_eq!(r.body["title"], "y");
}

#[wasm_bindgen_test]
async fn closed_handle_answers_503_json() {
    let site = open(&unique("closed"), options("indexeddb")).await;
    site.close();
    let r = call(&site, "GET", "/", None, true).await;
    assert_eq!(r.status, 503);
    assert_eq!(r.body["type"], "ServiceUnavailable");
}

/// Resolve after `ms` milliseconds.
async fn sleep(ms: i32) {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        let set_timeout: js_sys::Function =
            js_sys::Reflect::get(&js_sys::global(), &"setTimeout".into())
                .unwrap()
                .into();
        set_timeout
            .call2(&JsValue::NULL, &resolve, &JsValue::from(ms))
            .unwrap();
    });
    JsFuture::from(p).await.unwrap();
}

#[wasm_bindgen_test]
async fn reads_see_another_handles_write_once_its_notice_arrives() {
    let name = unique("notice");
    let (a, b) = two_handles(&name).await;
    // b has read recently, so its reads rely on memory until a change notice arrives
    assert_eq!(call(&b, "GET", "/", None, true).await.status, 200);
    let r = call(
        &a,
        "POST",
        "/",
        Some(json!({"@type": "Page", "id": "fresh", "title": "Fresh"})),
        true,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    // the BroadcastChannel notice is delivered asynchronously
    sleep(50).await;
    let r = call(&b, "GET", "/fresh", None, true).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["title"], "Fresh");
}

#[wasm_bindgen_test]
async fn reopening_reads_the_snapshot_and_the_log_after_it() {
    let name = unique("snapshot");
    let site = open(&name, options("indexeddb")).await;
    // a new database has no snapshot: it was read from its log (empty)
    assert_eq!(site.loaded_from(), "log");
    let r = call(
        &site,
        "POST",
        "/",
        Some(json!({"@type": "Page", "id": "after-snapshot", "title": "In the log"})),
        true,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    drop(site);

    // the snapshot written at open plus the one change set logged after it
    let site = open(&name, options("indexeddb")).await;
    assert_eq!(site.loaded_from(), "snapshot");
    let r = call(&site, "GET", "/after-snapshot", None, true).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["title"], "In the log");

    // more change sets than the snapshot may lag: it is rewritten on the way
    for i in 0..(host_wasm::idb::SNAPSHOT_EVERY as usize + 5) {
        let r = call(
            &site,
            "PATCH",
            "/after-snapshot",
            Some(json!({"title": format!("edit {i}")})),
            true,
        )
        .await;
        assert_eq!(r.status, 204, "{}", r.body);
    }
    drop(site);
    let site = open(&name, options("indexeddb")).await;
    assert_eq!(site.loaded_from(), "snapshot");
    let r = call(&site, "GET", "/after-snapshot", None, true).await;
    assert_eq!(
        r.body["title"],
        format!("edit {}", host_wasm::idb::SNAPSHOT_EVERY as usize + 4)
    );
    drop(site);

    // a damaged snapshot is not trusted: everything is read from the log instead (it reaches
    // back to version 1: no snapshot of this site is more than `LOG_KEEP` change sets old)
    let db = host_wasm::idb::open_db(&name).await.expect("open db");
    let version = host_wasm::idb::read_version(&db).await.expect("version");
    host_wasm::idb::write_snapshot(&db, version, &[1, 2, 3])
        .await
        .expect("write snapshot");
    db.close();
    let site = open(&name, options("indexeddb")).await;
    assert_eq!(site.loaded_from(), "log");
    let r = call(&site, "GET", "/after-snapshot", None, true).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["title"],
        format!("edit {}", host_wasm::idb::SNAPSHOT_EVERY as usize + 4)
    );
    drop(site);

    // a snapshot in several chunks (large sites: Chromium refuses records over ~127 MiB) reads
    // back whole
    let db = host_wasm::idb::open_db(&name).await.expect("open db");
    let (pairs, version, _, _) = host_wasm::idb::load(&db).await.expect("load");
    let data = host_wasm::idb::encode_snapshot(pairs.iter().map(|(k, v)| (&k[..], &v[..])));
    host_wasm::idb::write_snapshot_in_chunks(&db, version, &data, data.len() / 7 + 1)
        .await
        .expect("write snapshot");
    db.close();
    let site = open(&name, options("indexeddb")).await;
    assert_eq!(site.loaded_from(), "snapshot");
    let r = call(&site, "GET", "/after-snapshot", None, true).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["title"],
        format!("edit {}", host_wasm::idb::SNAPSHOT_EVERY as usize + 4)
    );
}

/// `site.fetch(BASE + path, {method, headers, body})` as admin, without awaiting it.
fn fetch_now(site: &host_wasm::Site, method: &str, path: &str, body: Option<Value>) -> JsFuture {
    let init = js_sys::Object::new();
    let headers = js_sys::Object::new();
    let set = |o: &js_sys::Object, k: &str, v: &JsValue| {
        js_sys::Reflect::set(o, &k.into(), v).expect("set");
    };
    set(&headers, "Authorization", &common::ADMIN.into());
    set(&headers, "Accept", &"application/json".into());
    if let Some(b) = &body {
        set(&headers, "Content-Type", &"application/json".into());
        set(&init, "body", &b.to_string().into());
    }
    set(&init, "method", &method.into());
    set(&init, "headers", &headers.into());
    JsFuture::from(site.fetch(format!("{}{path}", common::BASE).into(), Some(init.into())))
}

/// The status of a settled `site.fetch`.
async fn status_of(f: JsFuture) -> u16 {
    let resp: web_sys::Response = f.await.expect("resolves").dyn_into().expect("a Response");
    resp.status()
}

#[wasm_bindgen_test]
async fn requests_run_in_the_order_of_the_calls() {
    let site = open(&unique("order"), options("indexeddb")).await;
    // issued together: the read must not overtake the write before it (which still has its body
    // to read and an IndexedDB transaction to wait for), nor the delete the read
    let create = fetch_now(
        &site,
        "POST",
        "/",
        Some(json!({"@type": "Page", "id": "first", "title": "First"})),
    );
    let read = fetch_now(&site, "GET", "/first", None);
    let delete = fetch_now(&site, "DELETE", "/first", None);
    let read_again = fetch_now(&site, "GET", "/first", None);
    assert_eq!(status_of(create).await, 201);
    assert_eq!(status_of(read).await, 200);
    assert_eq!(status_of(delete).await, 204);
    assert_eq!(status_of(read_again).await, 404);
}

#[wasm_bindgen_test]
async fn a_write_that_fails_on_stale_memory_is_rerun_on_current_data() {
    let name = unique("stale-write");
    let (a, b) = two_handles(&name).await;
    let r = fetch_now(
        &a,
        "POST",
        "/",
        Some(json!({"@type": "Folder", "id": "new-folder", "title": "New"})),
    );
    assert_eq!(status_of(r).await, 201);
    // a's change notice has not reached b yet (it arrives in a later task), so b's memory lacks
    // the folder: the POST into it fails there, and succeeds once b has caught up
    let r = fetch_now(
        &b,
        "POST",
        "/new-folder",
        Some(json!({"@type": "Page", "id": "inside", "title": "Inside"})),
    );
    assert_eq!(status_of(r).await, 201);
    let r = call(&b, "GET", "/new-folder/inside", None, true).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// The keyspace that database `name`'s change log alone holds (every change set from version 1
/// applied in order), as a map: what survives without any snapshot.
async fn logged_state(name: &str) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    let db = host_wasm::idb::open_db(name).await.expect("open db");
    let changes = match host_wasm::idb::changes_since(&db, 0.0).await.expect("log") {
        host_wasm::idb::CatchUp::Apply { changes, .. } => changes,
        host_wasm::idb::CatchUp::Current => Vec::new(),
        host_wasm::idb::CatchUp::Reload => panic!("the log does not reach back to version 1"),
    };
    db.close();
    host_wasm::idb::apply_sorted(Vec::new(), changes)
        .into_iter()
        .collect()
}

#[wasm_bindgen_test]
async fn a_schema_1_site_in_indexeddb_is_upgraded_in_indexeddb() {
    let name = unique("schema1");
    // a site written at schema 1 (the content fixture: it has q: keys and comments to move)
    let pairs = tests::fixtures::pairs(tests::fixtures::SCHEMA_V1_CONTENT_SITE).expect("fixture");
    let first_uid = pairs
        .iter()
        .find(|(k, _)| k.as_slice() == b"p:/news/first")
        .map(|(_, v)| String::from_utf8(v.clone()).expect("uid"))
        .expect("/news/first in the fixture");
    {
        let db = host_wasm::idb::open_db(&name).await.expect("open db");
        let changes: host_wasm::ChangeSet = pairs.into_iter().map(|(k, v)| (k, Some(v))).collect();
        host_wasm::idb::write_changes(&db, 0.0, &changes)
            .await
            .map_err(|_| "write failed")
            .expect("seed the database");
        db.close();
    }
    assert_eq!(
        logged_state(&name).await.get(&b"s:schema"[..]),
        Some(&b"1".to_vec())
    );

    // opening upgrades memory, and the upgrade reaches IndexedDB's log (not only memory, and
    // not only the snapshot written at open)
    let mut opts = options("indexeddb");
    opts.admin_password = None;
    let site = open(&name, opts).await;
    let r = call(&site, "GET", "/news/first", None, true).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["title"], "First, edited");
    drop(site);
    let kv = logged_state(&name).await;
    assert_eq!(
        kv.get(&b"s:schema"[..]),
        Some(
            &engine::host::keyspace::SCHEMA_VERSION
                .to_string()
                .into_bytes()
        )
    );
    assert!(
        !kv.keys().any(|k| k.starts_with(b"q:")),
        "q: keys left in IndexedDB"
    );
    let counter = |kind: u8| {
        let mut k = format!("n:{first_uid}:").into_bytes();
        k.push(kind);
        kv.get(&k).map(|v| String::from_utf8_lossy(v).into_owned())
    };
    assert_eq!(counter(b'h').as_deref(), Some("5"));
    assert_eq!(counter(b'v').as_deref(), Some("2"));
    assert_eq!(counter(b'm').as_deref(), Some("1"));

    // reopened (from the snapshot or the pairs): already current, numbering continues
    let mut opts = options("indexeddb");
    opts.admin_password = None;
    let site = open(&name, opts).await;
    let r = call(
        &site,
        "PATCH",
        "/news/first",
        Some(json!({"title": "First, again"})),
        true,
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.body);
    let r = call(&site, "GET", "/news/first/@history", None, true).await;
    assert_eq!(r.body[0]["version"], 2, "{}", r.body);
    drop(site);
    let kv = logged_state(&name).await;
    assert_eq!(
        kv.get(&b"s:schema"[..]),
        Some(
            &engine::host::keyspace::SCHEMA_VERSION
                .to_string()
                .into_bytes()
        )
    );
}

/// While alive, `console.error` records its calls (each as its arguments joined by spaces)
/// instead of printing them; dropping it puts the original back.
struct ConsoleErrors {
    console: JsValue,
    original: JsValue,
    seen: js_sys::Array,
}

impl ConsoleErrors {
    fn capture() -> Self {
        let console = js_sys::Reflect::get(&js_sys::global(), &"console".into()).expect("console");
        let original = js_sys::Reflect::get(&console, &"error".into()).expect("console.error");
        let seen = js_sys::Array::new();
        let make = js_sys::Function::new_with_args(
            "seen",
            "return (...args) => { seen.push(args.map(String).join(' ')); };",
        );
        let recorder = make.call1(&JsValue::NULL, &seen).expect("recorder");
        js_sys::Reflect::set(&console, &"error".into(), &recorder).expect("set console.error");
        ConsoleErrors {
            console,
            original,
            seen,
        }
    }

    /// What was logged since the last call.
    fn take(&self) -> Vec<String> {
        let out = self.seen.iter().filter_map(|v| v.as_string()).collect();
        self.seen.set_length(0);
        out
    }
}

impl Drop for ConsoleErrors {
    fn drop(&mut self) {
        let _ = js_sys::Reflect::set(&self.console, &"error".into(), &self.original);
    }
}

#[wasm_bindgen_test]
async fn internal_failures_go_to_the_console_not_to_the_client() {
    let name = unique("errlog");
    let site = open(&name, options("indexeddb")).await;
    let r = call(
        &site,
        "POST",
        "/",
        Some(json!({"@type": "Page", "id": "doc", "title": "x"})),
        true,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);

    // a failure of host-wasm itself: the IndexedDB write fails
    let console = ConsoleErrors::capture();
    site.fail_next_write_for_tests(false);
    let r = call(&site, "PATCH", "/doc", Some(json!({"title": "y"})), true).await;
    let logged = console.take();
    drop(console);
    assert_eq!(r.status, 500, "{}", r.body);
    assert!(!r.body.to_string().contains("injected"), "{}", r.body);
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert!(
        logged[0].contains(&name)
            && logged[0].contains("PATCH /doc")
            && logged[0].contains("injected by a test"),
        "{logged:?}"
    );
    drop(site);

    // a failure inside the engine: the page's record in IndexedDB does not decode
    let db = host_wasm::idb::open_db(&name).await.expect("open db");
    let (pairs, version, _, _) = host_wasm::idb::load(&db).await.expect("load");
    let uid = pairs
        .iter()
        .find(|(k, _)| k.as_slice() == b"p:/doc")
        .map(|(_, v)| String::from_utf8(v.clone()).expect("uid"))
        .expect("p:/doc");
    let mut changes = host_wasm::ChangeSet::new();
    changes.insert(format!("o:{uid}").into_bytes(), Some(b"not json".to_vec()));
    host_wasm::idb::write_changes(&db, version, &changes)
        .await
        .unwrap_or_else(|_| panic!("corrupting the record failed"));
    db.close();
    let mut opts = options("indexeddb");
    opts.admin_password = None;
    let site = open(&name, opts).await;
    let console = ConsoleErrors::capture();
    let r = call(&site, "GET", "/doc", None, true).await;
    let logged = console.take();
    drop(console);
    assert_eq!(r.status, 500, "{}", r.body);
    assert_eq!(r.body["type"], "InternalError", "{}", r.body);
    assert!(!r.body.to_string().contains("corrupt"), "{}", r.body);
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert!(
        logged[0].contains(&name) && logged[0].contains("GET /doc: "),
        "{logged:?}"
    );
}

/// The outbox in the browser: `deliverOutbox` POSTs due webhooks with `fetch` and records the
/// outcome (here a receiver that cannot be reached: a failed attempt, queued again with backoff);
/// mails stay queued, never attempted.
#[wasm_bindgen_test]
async fn deliver_outbox_posts_webhooks_and_keeps_mail_queued() {
    let name = unique("outbox");
    let site = open(&name, options("indexeddb")).await;
    let r = call(
        &site,
        "POST",
        "/@controlpanels/content-rules",
        Some(json!({"title": "Hook", "event": "onAfterAdd"})),
        true,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    for action in [
        json!({"type": "nick.actions.Webhook", "url": "https://hooks.invalid/hook"}),
        json!({"type": "plone.actions.Mail", "subject": "New", "recipients": "ed@example.com",
               "message": "x"}),
    ] {
        let r = call(
            &site,
            "POST",
            "/@controlpanels/content-rules/rule-1/action",
            Some(action),
            true,
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let r = call(&site, "POST", "/@content-rules/rule-1", None, true).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let r = call(
        &site,
        "POST",
        "/",
        Some(json!({"@type": "Page", "title": "Hello"})),
        true,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);

    let delivered = site.deliver_outbox().await.expect("deliverOutbox");
    assert_eq!(delivered, 0, "nobody listens on port 9");
    let jobs = call(&site, "GET", "/@jobs", None, true).await;
    let list = jobs.body.as_array().expect("a list").clone();
    let mail = list.iter().find(|j| j["kind"] == "mail").expect("the mail");
    let hook = list
        .iter()
        .find(|j| j["kind"] == "webhook")
        .expect("the webhook");
    assert_eq!(mail["attempts"], 0, "mail stays queued: {mail}");
    assert_eq!(mail["status"], "created");
    assert_eq!(hook["attempts"], 1, "{hook}");
    assert_eq!(hook["status"], "queued", "queued again: {hook}");
    assert!(hook["result"]["error"].is_string(), "{hook}");
    assert!(hook["result"]["next_attempt"].is_string(), "{hook}");
    // The outcome is in IndexedDB: a new handle sees it.
    drop(site);
    let mut opts = options("indexeddb");
    opts.admin_password = None;
    let site = open(&name, opts).await;
    let jobs = call(&site, "GET", "/@jobs", None, true).await;
    let hook = jobs
        .body
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["kind"] == "webhook")
        .unwrap()
        .clone();
    assert_eq!(hook["attempts"], 1, "{hook}");
}

/// `embeddingModel` given as bytes in the options object (as a page passes a downloaded model):
/// the generated tiny static model answers `@related`; bytes that are not a model are refused.
#[wasm_bindgen_test]
async fn a_static_model_given_as_bytes_answers_related() {
    let (model, tokenizer) = engine::host::tiny_model(&[
        "harbour", "tours", "boat", "hire", "budget", "report", "annual",
    ]);
    let options = |model: &[u8]| {
        let o = js_sys::Object::new();
        let set = |k: &str, v: &JsValue| {
            js_sys::Reflect::set(&o, &JsValue::from_str(k), v).unwrap();
        };
        set("baseUrl", &JsValue::from_str(common::BASE));
        set("adminPassword", &JsValue::from_str("secret"));
        set("deterministic", &JsValue::TRUE);
        set("storage", &JsValue::from_str("memory"));
        let m = js_sys::Object::new();
        js_sys::Reflect::set(&m, &"name".into(), &"tiny".into()).unwrap();
        js_sys::Reflect::set(&m, &"model".into(), &js_sys::Uint8Array::from(model).into()).unwrap();
        js_sys::Reflect::set(
            &m,
            &"tokenizer".into(),
            &js_sys::Uint8Array::from(&tokenizer[..]).into(),
        )
        .unwrap();
        set("embeddingModel", &m.into());
        JsValue::from(o)
    };
    let site = host_wasm::open_site(unique("tiny-model"), options(&model))
        .await
        .unwrap_or_else(|e| panic!("{}", host_wasm::idb::js_error_text(&e)));
    for (title, description) in [
        ("Harbour tours", "Boat tours of the harbour"),
        ("Annual report", "The budget report"),
        ("Boat hire", "Hire a boat in the harbour"),
    ] {
        let body = json!({"@type": "Page", "title": title, "description": description});
        let r = call(&site, "POST", "/", Some(body), true).await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let r = call(&site, "GET", "/harbour-tours/@related", None, true).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["items"][0]["@id"],
        format!("{}/boat-hire", common::BASE),
        "{}",
        r.body
    );
    let err = match host_wasm::open_site(unique("bad-model"), options(b"not a model")).await {
        Ok(_) => panic!("bytes that are not a model were accepted"),
        Err(e) => host_wasm::idb::js_error_text(&e),
    };
    assert!(err.contains("embedding model"), "{err}");
}

/// `beginBulk` / `endBulk`: the writes in between are answered from memory, reach IndexedDB as
/// ONE change set at `endBulk` with a snapshot at that version, and survive a reopen.
#[wasm_bindgen_test]
async fn bulk_writes_are_one_change_set_and_persist() {
    let name = unique("bulk");
    let site = open(&name, options("indexeddb")).await;
    let before = site.version();
    site.begin_bulk();
    for i in 0..5 {
        let r = call(
            &site,
            "POST",
            "/",
            Some(json!({"@type": "Page", "id": format!("bulk-{i}"), "title": format!("Bulk {i}")})),
            true,
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    assert_eq!(site.version(), before, "nothing written during the bulk");
    site.end_bulk().await.expect("endBulk");
    assert_eq!(site.version(), before + 1.0, "one change set");
    assert_eq!(
        site.snapshot_version(),
        site.version(),
        "a snapshot at that version"
    );
    drop(site);
    let mut opts = options("indexeddb");
    opts.admin_password = None;
    let site = open(&name, opts).await;
    assert_eq!(site.loaded_from(), "snapshot");
    for i in 0..5 {
        let r = call(&site, "GET", &format!("/bulk-{i}"), None, true).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["title"], format!("Bulk {i}"));
    }
}

/// The number of records in `store` of database `name`.
async fn count_of(name: &str, store: &str) -> f64 {
    let db = host_wasm::idb::open_db(name).await.expect("open db");
    let tx = db.transaction_with_str(store).expect("tx");
    let req = tx
        .object_store(store)
        .expect("store")
        .count()
        .expect("count");
    let n = host_wasm::idb::await_request(&req)
        .await
        .expect("count")
        .as_f64()
        .expect("a number");
    db.close();
    n
}

/// Layout 3: a committed write is one log entry and the version, no `kv` pair; the snapshot and
/// the log after it are the durable form, and every committed write is there after a reopen,
/// whether the open reads a snapshot or (before the first one) the log alone.
#[wasm_bindgen_test]
async fn a_write_is_one_log_entry_and_reopens_from_snapshot_and_log() {
    let name = unique("layout3");
    let site = open(&name, options("indexeddb")).await;
    let (version, logged) = (site.version(), count_of(&name, "log").await);
    let r = call(
        &site,
        "POST",
        "/",
        Some(json!({"@type": "Page", "id": "one", "title": "One"})),
        true,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(site.version(), version + 1.0);
    assert_eq!(count_of(&name, "log").await, logged + 1.0, "one log entry");
    assert_eq!(count_of(&name, "kv").await, 0.0, "no pair written to kv");
    drop(site);

    // no snapshot at all (as after a crash before the first one): the log alone has everything
    let db = host_wasm::idb::open_db(&name).await.expect("open db");
    let tx = db
        .transaction_with_str_and_mode(
            host_wasm::idb::SNAPSHOT,
            web_sys::IdbTransactionMode::Readwrite,
        )
        .expect("tx");
    tx.object_store(host_wasm::idb::SNAPSHOT)
        .expect("store")
        .clear()
        .expect("clear");
    let done = tx
        .object_store(host_wasm::idb::SNAPSHOT)
        .expect("store")
        .count()
        .expect("count");
    host_wasm::idb::await_request(&done).await.expect("cleared");
    db.close();
    assert_eq!(count_of(&name, "snapshot").await, 0.0);
    let reopened = || {
        let mut opts = options("indexeddb");
        opts.admin_password = None;
        opts
    };
    let site = open(&name, reopened()).await;
    assert_eq!(site.loaded_from(), "log");
    assert_eq!(
        call(&site, "GET", "/one", None, true).await.body["title"],
        "One"
    );
    // that open wrote a snapshot at once: the next one reads it
    assert_eq!(site.snapshot_version(), site.version());
    let r = call(&site, "PATCH", "/one", Some(json!({"title": "Two"})), true).await;
    assert_eq!(r.status, 204, "{}", r.body);
    drop(site);
    let site = open(&name, reopened()).await;
    assert_eq!(site.loaded_from(), "snapshot");
    assert_eq!(
        call(&site, "GET", "/one", None, true).await.body["title"],
        "Two"
    );

    // past `LOG_KEEP` change sets the snapshot's transaction prunes the log, but never past the
    // snapshot: every write after it is still there
    let rounds = host_wasm::idb::LOG_KEEP as usize + 2 * host_wasm::idb::SNAPSHOT_EVERY as usize;
    for i in 0..rounds {
        let r = call(
            &site,
            "PATCH",
            "/one",
            Some(json!({"title": format!("t{i}")})),
            true,
        )
        .await;
        assert_eq!(r.status, 204, "{}", r.body);
    }
    let (version, snapshot) = (site.version(), site.snapshot_version());
    drop(site);
    assert!(
        snapshot > host_wasm::idb::LOG_KEEP && snapshot < version,
        "{snapshot} {version}"
    );
    assert_eq!(count_of(&name, "kv").await, 0.0, "no pair written to kv");
    // entries (snapshot - LOG_KEEP, version] are kept, nothing before
    assert_eq!(
        count_of(&name, "log").await,
        version - (snapshot - host_wasm::idb::LOG_KEEP)
    );
    let site = open(&name, reopened()).await;
    assert_eq!(site.loaded_from(), "snapshot");
    assert_eq!(site.version(), version);
    let r = call(&site, "GET", "/one", None, true).await;
    assert_eq!(r.body["title"], format!("t{}", rounds - 1), "{}", r.body);
}

/// Write a database as host-wasm wrote it before layout 3 (IndexedDB schema version 2): every
/// pair in `kv` and the version in `meta`; no snapshot, and no log entry (as when the log of an
/// earlier version was pruned).
async fn write_layout_2(name: &str, pairs: &[(Vec<u8>, Vec<u8>)], version: f64) {
    let keys = js_sys::Array::new();
    let values = js_sys::Array::new();
    for (k, v) in pairs {
        keys.push(&js_sys::Uint8Array::from(k.as_slice()));
        values.push(&js_sys::Uint8Array::from(v.as_slice()));
    }
    let write = js_sys::Function::new_with_args(
        "name, keys, values, version",
        r#"return new Promise((resolve, reject) => {
            const open = indexedDB.open(name, 2);
            open.onupgradeneeded = () => {
                for (const s of ["kv", "meta", "log", "snapshot"]) open.result.createObjectStore(s);
            };
            open.onerror = () => reject(open.error);
            open.onsuccess = () => {
                const db = open.result;
                const tx = db.transaction(["kv", "meta"], "readwrite");
                keys.forEach((k, i) => tx.objectStore("kv").put(values[i], k));
                tx.objectStore("meta").put(version, "version");
                tx.oncomplete = () => { db.close(); resolve(); };
                tx.onabort = () => reject(tx.error);
            };
        })"#,
    );
    let args = js_sys::Array::of4(&name.into(), &keys, &values, &JsValue::from_f64(version));
    let promise: js_sys::Promise = write
        .apply(&JsValue::NULL, &args)
        .expect("call")
        .dyn_into()
        .expect("a promise");
    JsFuture::from(promise)
        .await
        .expect("write the layout-2 database");
}

/// A database written before layout 3 opens with this code: from its `kv` pairs (there is no
/// snapshot), then a snapshot is written at once; later writes go to the log only (`kv` stays as
/// it was), and when the snapshot is unusable, the pairs plus the log after them still serve.
#[wasm_bindgen_test]
async fn a_database_of_the_earlier_layout_opens_and_is_no_longer_written_pair_by_pair() {
    // a site's keyspace, taken from a site of this layout
    let source = unique("layout2-source");
    let site = open(&source, options("indexeddb")).await;
    let r = call(
        &site,
        "POST",
        "/",
        Some(json!({"@type": "Page", "id": "old", "title": "Old"})),
        true,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    drop(site);
    let db = host_wasm::idb::open_db(&source).await.expect("open db");
    let (pairs, version, _, _) = host_wasm::idb::load(&db).await.expect("load");
    db.close();

    let name = unique("layout2");
    write_layout_2(&name, &pairs, version).await;
    let reopened = || {
        let mut opts = options("indexeddb");
        opts.admin_password = None;
        opts
    };
    let site = open(&name, reopened()).await;
    assert_eq!(site.loaded_from(), "kv");
    assert_eq!(site.version(), version);
    assert_eq!(
        site.snapshot_version(),
        version,
        "a snapshot written at open"
    );
    let r = call(&site, "GET", "/old", None, true).await;
    assert_eq!(r.body["title"], "Old", "{}", r.body);
    let r = call(&site, "PATCH", "/old", Some(json!({"title": "New"})), true).await;
    assert_eq!(r.status, 204, "{}", r.body);
    drop(site);
    // `kv` holds what the earlier layout wrote, nothing more
    let db = host_wasm::idb::open_db(&name).await.expect("open db");
    let (kv, _) = host_wasm::idb::load_all(&db).await.expect("kv");
    db.close();
    assert!(kv == pairs, "kv was written to");

    let site = open(&name, reopened()).await;
    assert_eq!(site.loaded_from(), "snapshot");
    let r = call(&site, "GET", "/old", None, true).await;
    assert_eq!(r.body["title"], "New", "{}", r.body);
    drop(site);

    // the snapshot damaged: the pairs, at the version the upgrade recorded, plus the log after
    let db = host_wasm::idb::open_db(&name).await.expect("open db");
    let now = host_wasm::idb::read_version(&db).await.expect("version");
    host_wasm::idb::write_snapshot(&db, now, &[1, 2, 3])
        .await
        .expect("write snapshot");
    db.close();
    let site = open(&name, reopened()).await;
    assert_eq!(site.loaded_from(), "kv");
    assert_eq!(site.version(), now);
    let r = call(&site, "GET", "/old", None, true).await;
    assert_eq!(r.body["title"], "New", "{}", r.body);
}
