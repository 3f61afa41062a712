//! Between the Fetch API's `Request` / `Response` and the engine's request and response values.

use std::cell::RefCell;
use std::collections::HashMap;

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

/// The path (percent-encoded, as `URL.pathname` gives it) and the raw query (without `?`, as
/// `URL.search` gives it) of a serialized `http:` or `https:` URL, or `None` for other schemes.
///
/// A `Request`'s `url` is already parsed and serialized by the browser, so for these schemes the
/// authority holds no `/`, `?` or `#`, the path starts at the first `/` after `://` (and is never
/// empty), the query runs from the first `?` to the first `#`. This saves a JavaScript `URL` per
/// request; other schemes go through `URL`.
pub fn split_http_url(url: &str) -> Option<(&str, &str)> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let rest = &rest[rest.find('/')?..];
    let rest = rest.split_once('#').map_or(rest, |(before, _)| before);
    Some(rest.split_once('?').unwrap_or((rest, "")))
}

/// The path of `base_url` (`URL.pathname`; empty when it does not parse), computed once per site.
pub fn base_path_of(base_url: &str) -> String {
    web_sys::Url::new(base_url)
        .map(|u| u.pathname())
        .unwrap_or_default()
}

/// The header pairs of `headers` (lower-case names, combined values, in the order `Headers`
/// iterates them). One `JSON.stringify(Array.from(headers))` crosses into wasm as one string,
/// instead of one iterator step and two strings per header.
fn header_pairs(headers: &web_sys::Headers) -> Vec<(String, String)> {
    let json = js_sys::JSON::stringify(&Array::from(headers))
        .ok()
        .and_then(|s| s.as_string());
    json.and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default()
}

/// A request whose body may still have to be read (see [`read_body`]).
pub struct Parsed {
    /// The engine request; its `body` is empty until [`read_body`] fills it.
    pub request: engine::Request,
    /// The Fetch API request whose body must be read, `None` for `GET` and `HEAD` (which never
    /// carry one: the `Request` constructor rejects a body for them).
    pub body_from: Option<web_sys::Request>,
}

/// Build the engine request from `fetch`-style arguments, all but the body, synchronously.
/// `base_path` is [`base_path_of`] the site's base URL. Errors are ready-made JSON responses.
pub fn parse_request(
    input: &JsValue,
    init: Option<&JsValue>,
    base_url: &str,
    base_path: &str,
) -> Result<Parsed, engine::Response> {
    let req = match (input.dyn_ref::<web_sys::Request>(), init) {
        (Some(r), None) => Clone::clone(r),
        (Some(r), Some(i)) if i.is_undefined() || i.is_null() => Clone::clone(r),
        _ => new_request(input, init.unwrap_or(&JsValue::UNDEFINED))
            .map_err(|e| bad_request(format!("invalid request: {}", js_error_text(&e))))?,
    };
    let href = req.url();
    let (path, query) = match split_http_url(&href) {
        Some((path, query)) => (path.to_string(), query.to_string()),
        None => {
            let url = web_sys::Url::new(&href)
                .map_err(|e| bad_request(format!("invalid URL: {}", js_error_text(&e))))?;
            (url.pathname(), url.search())
        }
    };
    let Some(path) = strip_base_path(&path, base_path) else {
        return Err(EngineError::NotFound {
            url: href,
            context: Some(base_url.to_string()),
        }
        .into_response());
    };
    let path = if path.is_empty() { "/" } else { path }.to_string();
    let query = query.trim_start_matches('?').to_string();
    let headers = header_pairs(&req.headers());
    let method = Method::parse(&req.method());
    let body_from = match method {
        Method::Get | Method::Head => None,
        _ => Some(req),
    };
    Ok(Parsed {
        request: engine::Request {
            method,
            path,
            query,
            headers,
            body: Vec::new(),
            base_url: base_url.to_string(),
        },
        body_from,
    })
}

/// Read the body of `req` (an error is a ready-made JSON response).
pub async fn read_body(req: &web_sys::Request) -> Result<Vec<u8>, engine::Response> {
    let promise = req
        .array_buffer()
        .map_err(|e| bad_request(format!("cannot read the body: {}", js_error_text(&e))))?;
    JsFuture::from(promise)
        .await
        .map(|b| Uint8Array::new(&b).to_vec())
        .map_err(|e| bad_request(format!("cannot read the body: {}", js_error_text(&e))))
}

/// Build the engine request from `fetch`-style arguments, body included. Errors are ready-made
/// JSON responses.
pub async fn to_engine_request(
    input: &JsValue,
    init: Option<&JsValue>,
    base_url: &str,
) -> Result<engine::Request, engine::Response> {
    let Parsed {
        mut request,
        body_from,
    } = parse_request(input, init, base_url, &base_path_of(base_url))?;
    if let Some(req) = body_from {
        request.body = read_body(&req).await?;
    }
    Ok(request)
}

thread_local! {
    /// `ResponseInit` objects by status and headers: most answers share a few (200 + JSON).
    static INITS: RefCell<HashMap<String, JsValue>> = RefCell::new(HashMap::new());
}

/// How many distinct `ResponseInit` objects are kept at most (a `Location` header differs for
/// every created object, so the cache is emptied when full).
const MAX_CACHED_INITS: usize = 32;

/// The `ResponseInit` (`{status, headers: [[name, value], ...]}`) for `resp`, built with one
/// `JSON.parse` and reused for later answers with the same status and headers (the `Response`
/// constructor copies what it needs from it and never changes it).
fn response_init(resp: &engine::Response) -> Result<JsValue, JsValue> {
    let headers =
        serde_json::to_string(&resp.headers).map_err(|e| JsValue::from_str(&e.to_string()))?;
    let json = format!("{{\"status\":{},\"headers\":{headers}}}", resp.status);
    if let Some(init) = INITS.with(|m| m.borrow().get(&json).cloned()) {
        return Ok(init);
    }
    let init = js_sys::JSON::parse(&json)?;
    INITS.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= MAX_CACHED_INITS {
            m.clear(); // filled by one-off headers (a `Location` per created object): start over
        }
        m.insert(json, init.clone());
    });
    Ok(init)
}

/// A Fetch API `Response` for the engine's response.
pub fn to_js_response(resp: &engine::Response) -> Result<JsValue, JsValue> {
    let init: web_sys::ResponseInit = response_init(resp)?.unchecked_into();
    // statuses that must not carry a body (the constructor throws otherwise)
    let null_body = matches!(resp.status, 101 | 103 | 204 | 205 | 304) || resp.body.is_empty();
    let r = if null_body {
        web_sys::Response::new_with_opt_buffer_source_and_init(None, &init)?
    } else {
        // SAFETY: the view into wasm memory lives only for this call, during which nothing runs
        // in wasm (no allocation can grow and detach the memory); the constructor copies the
        // bytes ("extract a body": a BufferSource body is a copy of the bytes it holds).
        let body = unsafe { Uint8Array::view(&resp.body) };
        web_sys::Response::new_with_opt_buffer_source_and_init(Some(&body), &init)?
    };
    Ok(r.into())
}

#[cfg(test)]
mod tests {
    use super::{split_http_url, strip_base_path};

    #[test]
    fn http_urls_split_like_url_pathname_and_search() {
        assert_eq!(split_http_url("http://h:8080/"), Some(("/", "")));
        assert_eq!(split_http_url("https://h/a/b?x=1#f"), Some(("/a/b", "x=1")));
        assert_eq!(split_http_url("http://u:p@h/a#f?g"), Some(("/a", "")));
        assert_eq!(split_http_url("http://h/a??x"), Some(("/a", "?x")));
        assert_eq!(split_http_url("http://h/a?"), Some(("/a", "")));
        assert_eq!(split_http_url("file:///a"), None);
        assert_eq!(split_http_url("blob:http://h/x"), None);
    }

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
