//! A replica site in headless Chromium, syncing with a second site that plays the server (the
//! global `fetch` answered by that site): what its user lost access to must leave every
//! IndexedDB store, the change-set log included.

mod common;

use common::{call, open, options, unique, BASE};
use serde_json::json;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// Answer the global `fetch` with `server` (requests to `BASE`).
fn serve_fetch_with(server: host_wasm::Site) {
    let server: &'static host_wasm::Site = Box::leak(Box::new(server));
    let f = Closure::<dyn Fn(JsValue, JsValue) -> js_sys::Promise>::new(
        move |input: JsValue, init: JsValue| {
            let init = (!init.is_undefined() && !init.is_null()).then_some(init);
            server.fetch(input, init)
        },
    );
    js_sys::Reflect::set(&js_sys::global(), &"fetch".into(), f.as_ref()).expect("set fetch");
    f.forget();
}

/// Every byte string of `v` (Uint8Arrays, nested arrays, strings), joined as lossy text.
fn text_of(v: &JsValue, out: &mut String) {
    if let Some(a) = v.dyn_ref::<js_sys::Uint8Array>() {
        out.push_str(&String::from_utf8_lossy(&a.to_vec()));
        out.push('\n');
    } else if let Some(a) = v.dyn_ref::<js_sys::Array>() {
        for x in a.iter() {
            text_of(&x, out);
        }
    } else if let Some(s) = v.as_string() {
        out.push_str(&s);
        out.push('\n');
    }
}

/// The text of every record of `store` in database `name`.
async fn dump(name: &str, store: &str) -> String {
    let db = host_wasm::idb::open_db(name).await.expect("open db");
    let tx = db.transaction_with_str(store).expect("tx");
    let req = tx
        .object_store(store)
        .expect("store")
        .get_all()
        .expect("getAll");
    let all = host_wasm::idb::await_request(&req).await.expect("getAll");
    db.close();
    let mut out = String::new();
    text_of(&all, &mut out);
    out
}

async fn everywhere(name: &str, marker: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    for store in ["kv", "log", "snapshot"] {
        if dump(name, store).await.contains(marker) {
            found.push(store);
        }
    }
    found
}

#[wasm_bindgen_test]
async fn what_the_user_lost_access_to_leaves_every_store_including_the_log() {
    let server = open(&unique("server"), options("memory")).await;
    for (method, path, body) in [
        (
            "POST",
            "/@users",
            json!({"username": "mary", "password": "mary-password-1", "email": "m@example.com",
                   "roles": ["Member"]}),
        ),
        (
            "POST",
            "/@groups",
            json!({"groupname": "staff", "roles": ["Reader", "Editor"], "users": ["mary"]}),
        ),
        (
            "POST",
            "/",
            json!({"@type": "Page", "title": "Okapi memo", "description": "quagga-text"}),
        ),
        (
            "POST",
            "/",
            json!({"@type": "Page", "title": "Public page"}),
        ),
        ("POST", "/public-page/@workflow/publish", json!({})),
    ] {
        let r = call(&server, method, path, Some(body), true).await;
        assert!(r.status < 300, "{method} {path}: {} {}", r.status, r.body);
    }
    serve_fetch_with(server);
    let name = unique("replica");
    let mut opts = options("indexeddb");
    opts.deterministic = false;
    opts.base_url = Some("http://replica.test".into());
    opts.server = Some(BASE.into());
    opts.credentials = Some(host_wasm::replica::Credentials {
        login: Some("mary".into()),
        password: Some("mary-password-1".into()),
        token: None,
    });
    let replica = open(&name, opts).await;
    // the first round (at open) brought the memo; an edit on the replica writes more change sets
    let r = call(
        &replica,
        "PATCH",
        "/okapi-memo",
        Some(json!({"description": "quagga-edit"})),
        false,
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.body);
    wasm_bindgen_futures::JsFuture::from(js_sys::Promise::resolve(&JsValue::NULL))
        .await
        .unwrap();
    replica.sync().await.expect("sync");
    assert!(!everywhere(&name, "quagga-text").await.is_empty());
    assert!(dump(&name, "log").await.contains("quagga"));
    // mary leaves the group: the memo is no longer hers to see
    // (the server is reached through the stubbed fetch, as admin)
    let leave = js_sys::Reflect::get(&js_sys::global(), &"fetch".into()).unwrap();
    let leave: js_sys::Function = leave.dyn_into().unwrap();
    let init = js_sys::JSON::parse(
        &json!({"method": "PATCH", "headers": {"Authorization": common::ADMIN,
            "Content-Type": "application/json"}, "body": json!({"users": {"mary": false}}).to_string()})
            .to_string(),
    )
    .unwrap();
    let resp = wasm_bindgen_futures::JsFuture::from(
        leave
            .call2(
                &JsValue::NULL,
                &format!("{BASE}/@groups/staff").into(),
                &init,
            )
            .unwrap()
            .dyn_into::<js_sys::Promise>()
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(resp.dyn_into::<web_sys::Response>().unwrap().status(), 204);
    replica.sync().await.expect("sync");
    let r = call(&replica, "GET", "/okapi-memo", None, false).await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(everywhere(&name, "quagga").await, Vec::<&str>::new());
    assert_eq!(everywhere(&name, "Okapi memo").await, Vec::<&str>::new());
    // what she may still see stays, and the site reopens from what is left
    drop(replica);
    let mut again = options("indexeddb");
    again.deterministic = false;
    again.admin_password = None;
    again.base_url = Some("http://replica.test".into());
    again.server = Some(BASE.into());
    let replica = open(&name, again).await;
    let r = call(&replica, "GET", "/public-page", None, false).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        call(&replica, "GET", "/okapi-memo", None, false)
            .await
            .status,
        404
    );
}

/// The server's status for `GET path` with `Bearer token` (through the stubbed `fetch`).
async fn get_with_token(token: &str, path: &str) -> u16 {
    let fetch: js_sys::Function = js_sys::Reflect::get(&js_sys::global(), &"fetch".into())
        .unwrap()
        .dyn_into()
        .unwrap();
    let init = js_sys::JSON::parse(
        &json!({"headers": {"Authorization": format!("Bearer {token}"),
            "Accept": "application/json"}})
        .to_string(),
    )
    .unwrap();
    let resp = wasm_bindgen_futures::JsFuture::from(
        fetch
            .call2(&JsValue::NULL, &format!("{BASE}{path}").into(), &init)
            .unwrap()
            .dyn_into::<js_sys::Promise>()
            .unwrap(),
    )
    .await
    .unwrap();
    resp.dyn_into::<web_sys::Response>().unwrap().status()
}

#[wasm_bindgen_test]
async fn logout_wipes_the_replica_and_ends_its_server_token() {
    let server = open(&unique("server"), options("memory")).await;
    for (method, path, body) in [
        (
            "POST",
            "/@users",
            json!({"username": "ann", "password": "ann-password-1", "email": "a@example.com",
                   "roles": ["Member", "Reader"]}),
        ),
        (
            "POST",
            "/",
            json!({"@type": "Page", "title": "Private notes", "description": "ocelot"}),
        ),
    ] {
        let r = call(&server, method, path, Some(body), true).await;
        assert!(r.status < 300, "{method} {path}: {} {}", r.status, r.body);
    }
    serve_fetch_with(server);
    let name = unique("replica");
    let replica_opts = |creds: bool| {
        let mut opts = options("indexeddb");
        opts.deterministic = false;
        opts.admin_password = None;
        opts.base_url = Some("http://replica.test".into());
        opts.server = Some(BASE.into());
        opts.credentials = creds.then(|| host_wasm::replica::Credentials {
            login: Some("ann".into()),
            password: Some("ann-password-1".into()),
            token: None,
        });
        opts
    };
    let replica = open(&name, replica_opts(true)).await;
    assert_eq!(
        call(&replica, "GET", "/private-notes", None, false)
            .await
            .status,
        200
    );
    assert!(everywhere(&name, "ocelot").await.contains(&"log"));
    // no password of the local admin at rest (it logs in with a token issued in memory)
    let db = host_wasm::idb::open_db(&name).await.expect("open db");
    let (pairs, _, _, _) = host_wasm::idb::load(&db).await.expect("load");
    db.close();
    assert!(pairs.iter().all(|(k, _)| k.as_slice() != b"H:local"));
    // the snapshot written at open holds the current configuration, the log its history
    let config = dump(&name, "snapshot").await + &dump(&name, "log").await;
    let token = config
        .split("\"token\":\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .expect("the stored token")
        .to_string();
    assert_eq!(get_with_token(&token, "/private-notes").await, 200);
    // a write waiting to be sent holds the logout back unless discarded
    let r = call(
        &replica,
        "PATCH",
        "/private-notes",
        Some(json!({"title": "Edited"})),
        false,
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.body);
    replica.set_online(false).await.unwrap();
    let refused = replica.logout(None).await.expect_err("pending writes");
    assert!(host_wasm::idb::js_error_text(&refused).contains("not on the server yet"));
    replica.logout(Some(true)).await.expect("logout");
    // nothing left in the browser profile: no content, no token, no local password
    for store in ["kv", "log", "snapshot"] {
        assert_eq!(dump(&name, store).await, "", "{store}");
    }
    // the next user of the profile cannot open it without credentials
    let next = host_wasm::Site::open(name.clone(), replica_opts(false)).await;
    let err = next.err().expect("no replica without credentials");
    assert!(host_wasm::idb::js_error_text(&err).contains("needs credentials"));
    // and the token no longer works on the server
    assert_eq!(get_with_token(&token, "/private-notes").await, 401);
}

#[wasm_bindgen_test]
async fn work_offline_in_one_tab_holds_back_the_writes_of_every_tab() {
    let server = open(&unique("server"), options("memory")).await;
    for (method, path, body) in [
        (
            "POST",
            "/@users",
            json!({"username": "tom", "password": "tom-password-1", "email": "t@example.com",
                   "roles": ["Member", "Editor"]}),
        ),
        ("POST", "/", json!({"@type": "Page", "title": "Shared"})),
    ] {
        let r = call(&server, method, path, Some(body), true).await;
        assert!(r.status < 300, "{method} {path}: {} {}", r.status, r.body);
    }
    serve_fetch_with(server);
    let name = unique("replica");
    let tab = |creds: bool| {
        let mut opts = options("indexeddb");
        opts.deterministic = false;
        opts.admin_password = None;
        opts.base_url = Some("http://replica.test".into());
        opts.server = Some(BASE.into());
        opts.credentials = creds.then(|| host_wasm::replica::Credentials {
            login: Some("tom".into()),
            password: Some("tom-password-1".into()),
            token: None,
        });
        opts
    };
    let a = open(&name, tab(true)).await;
    let b = open(&name, tab(true)).await;
    a.set_online(false).await.expect("work offline");
    // tab B writes and syncs: nothing leaves, the write waits
    let r = call(
        &b,
        "PATCH",
        "/shared",
        Some(json!({"title": "From B"})),
        false,
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.body);
    b.sync().await.expect("sync");
    assert_eq!(b.pending().unwrap(), 1);
    assert!(!b.online());
    assert_eq!(get_with_token_title("/shared").await, "Shared");
    // a reopened tab is still held
    drop(a);
    let c = open(&name, tab(false)).await;
    assert_eq!(c.pending().unwrap(), 1);
    // back online in any tab: the next round sends it
    c.set_online(true).await.expect("online");
    b.sync().await.expect("sync");
    assert_eq!(b.pending().unwrap(), 0);
    assert_eq!(get_with_token_title("/shared").await, "From B");
}

/// The server's title of `path`, read as admin through the stubbed `fetch`.
async fn get_with_token_title(path: &str) -> String {
    let fetch: js_sys::Function = js_sys::Reflect::get(&js_sys::global(), &"fetch".into())
        .unwrap()
        .dyn_into()
        .unwrap();
    let init = js_sys::JSON::parse(
        &json!({"headers": {"Authorization": common::ADMIN, "Accept": "application/json"}})
            .to_string(),
    )
    .unwrap();
    let resp: web_sys::Response = wasm_bindgen_futures::JsFuture::from(
        fetch
            .call2(&JsValue::NULL, &format!("{BASE}{path}").into(), &init)
            .unwrap()
            .dyn_into::<js_sys::Promise>()
            .unwrap(),
    )
    .await
    .unwrap()
    .dyn_into()
    .unwrap();
    let text = wasm_bindgen_futures::JsFuture::from(resp.text().unwrap())
        .await
        .unwrap()
        .as_string()
        .unwrap();
    serde_json::from_str::<serde_json::Value>(&text).unwrap()["title"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}
