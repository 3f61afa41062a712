//! Helpers shared by the wasm test binaries: JSON requests through `Site::fetch` (the JS API).
#![allow(dead_code)]

use host_wasm::{OpenOptions, Site};
use js_sys::{Object, Reflect};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// The base URL of the test sites.
pub const BASE: &str = "http://localhost:8080";
/// `Authorization` for admin:secret.
pub const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";

/// A unique name (databases must not collide between runs).
pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        js_sys::Date::now() as u64,
        (js_sys::Math::random() * 1e9) as u64
    )
}

/// Deterministic options for a site with admin password `secret`.
pub fn options(storage: &str) -> OpenOptions {
    OpenOptions {
        base_url: Some(BASE.into()),
        admin_password: Some("secret".into()),
        deterministic: true,
        storage: Some(storage.into()),
        embedding_model: Some(host_wasm::EmbeddingModel::Test),
        ..OpenOptions::default()
    }
}

/// A response as status, headers-as-JSON-string-map and parsed JSON body (Null when empty).
pub struct Resp {
    pub status: u16,
    pub body: Value,
    pub content_type: Option<String>,
}

/// `site.fetch(BASE + path, {method, headers, body})` as admin (when `auth`), through JS types.
pub async fn call(site: &Site, method: &str, path: &str, body: Option<Value>, auth: bool) -> Resp {
    let init = Object::new();
    let headers = Object::new();
    let set = |o: &Object, k: &str, v: &JsValue| Reflect::set(o, &k.into(), v).expect("set");
    set(&headers, "Accept", &"application/json".into());
    if auth {
        set(&headers, "Authorization", &ADMIN.into());
    }
    if let Some(b) = &body {
        set(&headers, "Content-Type", &"application/json".into());
        set(&init, "body", &b.to_string().into());
    }
    set(&init, "method", &method.into());
    set(&init, "headers", &headers.into());
    let url = format!("{BASE}{path}");
    let resp = JsFuture::from(site.fetch(url.into(), Some(init.into())))
        .await
        .expect("site.fetch must never reject");
    let resp: web_sys::Response = resp.dyn_into().expect("a Response");
    let content_type = resp.headers().get("content-type").ok().flatten();
    let text = JsFuture::from(resp.text().expect("text()"))
        .await
        .expect("body")
        .as_string()
        .unwrap_or_default();
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    Resp {
        status: resp.status(),
        body,
        content_type,
    }
}

/// Open a site, panicking with the JS error text on failure.
pub async fn open(name: &str, opts: OpenOptions) -> Site {
    match Site::open(name.to_string(), opts).await {
        Ok(s) => s,
        Err(e) => panic!("openSite failed: {}", host_wasm::idb::js_error_text(&e)),
    }
}
