//! Runner 3: every contract scenario in headless Chromium against host-wasm on real IndexedDB.
//!
//! Each scenario gets a fresh, uniquely named database and a deterministic site (admin/secret,
//! base URL `http://localhost:8080`). Requests go through the JavaScript API (`Site.fetch` with a
//! Fetch `Request`, answered with a Fetch `Response`), exactly as a page would use it.

mod common;

use engine::{Request, Response};
use host_wasm::Site;
use js_sys::{Object, Reflect, Uint8Array};
use tests::{run_scenario, Tally, Target};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

struct Browser {
    site: Site,
    name: String,
}

impl Target for Browser {
    async fn send(&mut self, req: Request) -> Response {
        let init = Object::new();
        let headers = web_sys::Headers::new().expect("Headers");
        for (k, v) in &req.headers {
            headers
                .append(k, v)
                .unwrap_or_else(|e| panic!("header {k}: {v:?}: {e:?}"));
        }
        let set = |k: &str, v: &JsValue| Reflect::set(&init, &k.into(), v).expect("set");
        set("method", &req.method.as_str().into());
        set("headers", &headers.into());
        if !req.body.is_empty() {
            set("body", &Uint8Array::from(req.body.as_slice()).into());
        }
        let mut url = format!("{}{}", req.base_url, req.path);
        if !req.query.is_empty() {
            url.push('?');
            url.push_str(&req.query);
        }
        let resp = JsFuture::from(self.site.fetch(url.into(), Some(init.into())))
            .await
            .unwrap_or_else(|e| panic!("{}: site.fetch rejected: {e:?}", self.name));
        let resp: web_sys::Response = resp.dyn_into().expect("a Response");
        let mut out_headers = Vec::new();
        if let Ok(Some(iter)) = js_sys::try_iter(&resp.headers()) {
            for entry in iter.flatten() {
                let pair: js_sys::Array = entry.unchecked_into();
                if let (Some(k), Some(v)) = (pair.get(0).as_string(), pair.get(1).as_string()) {
                    out_headers.push((k, v));
                }
            }
        }
        let body = JsFuture::from(resp.array_buffer().expect("arrayBuffer"))
            .await
            .expect("body");
        Response {
            status: resp.status(),
            headers: out_headers,
            body: Uint8Array::new(&body).to_vec(),
            stream: None,
            lines: None,
        }
    }

    fn base_url(&self) -> String {
        common::BASE.to_string()
    }
}

#[wasm_bindgen_test]
async fn every_scenario_passes_on_indexeddb() {
    let mut tally = Tally::new("wasm/IndexedDB");
    for s in tally.select(None) {
        let name = common::unique(&format!("contract-{}", s.name));
        let mut opts = common::options("indexeddb");
        opts.profiles = s.profiles.clone();
        let site = common::open(&name, opts).await;
        let mut target = Browser {
            site,
            name: name.clone(),
        };
        let outcome = run_scenario(&mut target, &s).await;
        tally.record(outcome.map_err(|f| f.to_string()));
        target.site.close();
        drop(target);
        let _ = host_wasm::delete_site(name).await;
    }
    console_log!("{}", tally.summary());
    tally.assert_all_passed();
}
