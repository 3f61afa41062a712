//! Between the Fetch API's `Request` / `Response` and the engine's request and response values.

use engine::{EngineError, Method};
use js_sys::{Array, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use crate::idb::js_error_text;

/// `new Request(input, init)`, whatever `input` is (Request, string, URL).
fn new_request(input: &JsValue, init: &JsValue) -> Result<web_sys::Request, JsValue> {
    let ctor: js_sys::Function =
        js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("Request"))?.dyn_into()?;
    js_sys::Reflect::construct(&ctor, &Array::of2(input, init))?.dyn_into()
}

fn bad_request(msg: String) -> engine::Response {
    EngineError::BadRequest(msg).into_response()
}

/// The path of `pathname` below `base_path` ("" for the root), or `None` when it is not below it.
pub fn strip_base_path<'a>(pathname: &'a str, base_path: &str) -> Option<&'a str> {
    let base = base_path.trim_end_matches('/');
    let rest = pathname.strip_prefix(base)?;
    if rest == "/" {
        return Some("");
    }
    if rest.is_empty() || rest.starts_with('/') {
        Some(rest)
    } else {
        None
    }
}

/// Build the engine request from `fetch`-style arguments. Errors are ready-made JSON responses.
pub async fn to_engine_request(
    input: &JsValue,
    init: Option<&JsValue>,
    base_url: &str,
) -> Result<engine::Request, engine::Response> {
    let init = init.cloned().unwrap_or(JsValue::UNDEFINED);
    let req = match input.dyn_ref::<web_sys::Request>() {
        Some(r) if init.is_undefined() || init.is_null() => Clone::clone(r),
        _ => new_request(input, &init)
            .map_err(|e| bad_request(format!("invalid request: {}", js_error_text(&e))))?,
    };
    let url = web_sys::Url::new(&req.url())
        .map_err(|e| bad_request(format!("invalid URL: {}", js_error_text(&e))))?;
    let base_path = web_sys::Url::new(base_url)
        .map(|u| u.pathname())
        .unwrap_or_default();
    let pathname = url.pathname();
    let Some(path) = strip_base_path(&pathname, &base_path) else {
        return Err(EngineError::NotFound {
            url: req.url(),
            context: Some(base_url.to_string()),
        }
        .into_response());
    };
    let path = if path.is_empty() { "/" } else { path }.to_string();
    let query = url.search().trim_start_matches('?').to_string();
    let mut headers = Vec::new();
    if let Ok(Some(iter)) = js_sys::try_iter(&req.headers()) {
        for entry in iter.flatten() {
            let pair: Array = entry.unchecked_into();
            if let (Some(k), Some(v)) = (pair.get(0).as_string(), pair.get(1).as_string()) {
                headers.push((k, v));
            }
        }
    }
    let body = match req.array_buffer() {
        Ok(p) => JsFuture::from(p)
            .await
            .map(|b| Uint8Array::new(&b).to_vec())
            .map_err(|e| bad_request(format!("cannot read the body: {}", js_error_text(&e))))?,
        Err(e) => {
            return Err(bad_request(format!(
                "cannot read the body: {}",
                js_error_text(&e)
            )))
        }
    };
    Ok(engine::Request {
        method: Method::parse(&req.method()),
        path,
        query,
        headers,
        body,
        base_url: base_url.to_string(),
    })
}

/// A Fetch API `Response` for the engine's response.
pub fn to_js_response(resp: &engine::Response) -> Result<JsValue, JsValue> {
    let headers = web_sys::Headers::new()?;
    for (k, v) in &resp.headers {
        headers.append(k, v)?;
    }
    let init = web_sys::ResponseInit::new();
    init.set_status(resp.status);
    init.set_headers(&headers);
    // statuses that must not carry a body (the constructor throws otherwise)
    let null_body = matches!(resp.status, 101 | 103 | 204 | 205 | 304) || resp.body.is_empty();
    let r = if null_body {
        web_sys::Response::new_with_opt_buffer_source_and_init(None, &init)?
    } else {
        let body = Uint8Array::from(resp.body.as_slice());
        web_sys::Response::new_with_opt_buffer_source_and_init(Some(&body), &init)?
    };
    Ok(r.into())
}

#[cfg(test)]
mod tests {
    use super::strip_base_path;

    #[test]
    fn base_path_is_stripped_at_segment_boundaries() {
        assert_eq!(strip_base_path("/", "/"), Some(""));
        assert_eq!(strip_base_path("/a/b", "/"), Some("/a/b"));
        assert_eq!(strip_base_path("/api/a", "/api"), Some("/a"));
        assert_eq!(strip_base_path("/api", "/api/"), Some(""));
        assert_eq!(strip_base_path("/apix/a", "/api"), None);
        assert_eq!(strip_base_path("/other", "/api"), None);
    }
}
