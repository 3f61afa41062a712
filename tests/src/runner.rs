//! Running a scenario against a [`Target`]: build each request, send it, check the response.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use engine::{Method, Request, Response};
use serde_json::Value;

use crate::matcher::{interpolate, interpolate_value, Matcher, Vars};
use crate::scenario::{Expect, RequestSpec, Scenario, Step};

/// Something that answers requests: the engine in process, a server over HTTP, the wasm host.
///
/// Each scenario gets a target over a fresh site whose admin is `admin` with password `secret`.
#[allow(async_fn_in_trait)] // runners are single-threaded (the browser one cannot be Send anyway)
pub trait Target {
    /// Send one request and return the response (errors of the transport are the target's to
    /// report, e.g. by panicking: they are not a behaviour of the API).
    async fn send(&mut self, req: Request) -> Response;
    /// The base URL the site answers under, without a trailing slash (e.g. `http://localhost:8080`).
    fn base_url(&self) -> String;
}

/// Why a scenario failed: which step, and the first difference.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The scenario's name.
    pub scenario: String,
    /// 1-based step number (0 when the scenario itself is malformed).
    pub step: usize,
    /// The step's label and request line, e.g. `"create the page" (POST /folder)`.
    pub step_label: String,
    /// What went wrong, with the JSON pointer, expected and actual values.
    pub message: String,
    /// The status and body of the response (truncated), for context.
    pub response: Option<String>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "scenario `{}`, step {} {}:\n    {}",
            self.scenario, self.step, self.step_label, self.message
        )?;
        if let Some(r) = &self.response {
            write!(f, "\n    response: {r}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Failure {}

const BODY_SHOWN: usize = 3000;

fn describe(resp: &Response) -> String {
    let text = String::from_utf8_lossy(&resp.body);
    let mut body = if let Ok(v) = serde_json::from_slice::<Value>(&resp.body) {
        v.to_string()
    } else {
        text.into_owned()
    };
    if body.len() > BODY_SHOWN {
        let cut = (0..=BODY_SHOWN)
            .rev()
            .find(|i| body.is_char_boundary(*i))
            .unwrap_or(0);
        body = format!("{}... ({} bytes)", &body[..cut], resp.body.len());
    }
    let headers: Vec<String> = resp
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    format!("{} [{}] {}", resp.status, headers.join("; "), body)
}

/// The `Authorization` header value for an auth shorthand.
fn auth_header(auth: &str, vars: &Vars) -> Result<Option<String>, String> {
    if auth == "anonymous" {
        return Ok(None);
    }
    if auth == "admin" {
        return Ok(Some(format!("Basic {}", B64.encode("admin:secret"))));
    }
    if let Some(cred) = auth.strip_prefix("basic:") {
        if !cred.contains(':') {
            return Err(format!("auth {auth:?}: expected basic:<login>:<password>"));
        }
        return Ok(Some(format!("Basic {}", B64.encode(cred))));
    }
    if let Some(var) = auth.strip_prefix("bearer:") {
        return match vars.get(var) {
            Some(Value::String(t)) => Ok(Some(format!("Bearer {t}"))),
            Some(other) => Err(format!(
                "auth {auth:?}: variable holds {other}, not a token"
            )),
            None => Err(format!("auth {auth:?}: variable {var:?} was never saved")),
        };
    }
    Err(format!(
        "unknown auth {auth:?} (use anonymous, admin, basic:<login>:<password> or bearer:<var>)"
    ))
}

/// Build the engine request for a step.
pub fn build_request(spec: &RequestSpec, base: &str, vars: &Vars) -> Result<Request, String> {
    let bodies = [
        spec.json.is_some(),
        spec.raw.is_some(),
        spec.bytes.is_some(),
        spec.base64.is_some(),
    ];
    if bodies.iter().filter(|b| **b).count() > 1 {
        return Err("a request has at most one of json, raw, bytes, base64".into());
    }
    let path = interpolate(&spec.path, base, vars)?;
    // A URL under the base (a saved `Location`) names the path below it.
    let path = match path.strip_prefix(base) {
        Some(rest) if rest.starts_with('/') => rest.to_string(),
        _ => path,
    };
    if !path.starts_with('/') {
        return Err(format!("request path {path:?} must start with '/'"));
    }
    let mut req = Request::new(Method::parse(&spec.method), &path, base);
    let given = |name: &str| spec.headers.keys().any(|k| k.eq_ignore_ascii_case(name));
    if !given("accept") {
        req = req.header("Accept", "application/json");
    }
    if let Some(a) = auth_header(spec.auth.as_deref().unwrap_or("anonymous"), vars)? {
        if given("authorization") {
            return Err("give either auth or an Authorization header, not both".into());
        }
        req = req.header("Authorization", &a);
    }
    for (k, v) in &spec.headers {
        req = req.header(k, &interpolate(v, base, vars)?);
    }
    if let Some(j) = &spec.json {
        req.body = interpolate_value(j, base, vars)?.to_string().into_bytes();
    } else if let Some(r) = &spec.raw {
        req.body = interpolate(r, base, vars)?.into_bytes();
    } else if let Some(n) = spec.bytes {
        req.body = vec![b'x'; n];
    } else if let Some(b) = &spec.base64 {
        req.body = decode_base64(b)?;
    }
    if (spec.json.is_some() || spec.raw.is_some()) && !given("content-type") {
        req = req.header("Content-Type", "application/json");
    }
    Ok(req)
}

/// Check a response against a step's expectations; saves variables on success.
pub fn check_response(
    expect: &Expect,
    resp: &Response,
    base: &str,
    vars: &mut Vars,
) -> Result<(), String> {
    let bodies = [
        expect.json.is_some(),
        expect.raw.is_some(),
        expect.base64.is_some(),
        expect.size.is_some(),
        expect.image.is_some(),
    ];
    if bodies.iter().filter(|b| **b).count() > 1 {
        return Err("an expectation has at most one of json, raw, base64, size, image".into());
    }
    if resp.status != expect.status {
        return Err(format!(
            "status: expected {}, actual {}",
            expect.status, resp.status
        ));
    }
    // Work on a copy so that a failing step saves nothing.
    let mut scratch = vars.clone();
    for (name, want) in &expect.headers {
        let got = resp.header_value(name);
        match (want, got) {
            (None, None) => {}
            (None, Some(g)) => return Err(format!("header {name}: expected absent, actual {g:?}")),
            (Some(w), None) => {
                return Err(format!("header {name}: expected {w:?}, actual (absent)"))
            }
            (Some(w), Some(g)) => {
                Matcher::new(base, &mut scratch, Default::default())
                    .check(&Value::String(w.clone()), &Value::String(g.to_string()))
                    .map_err(|m| format!("header {name}: {m}"))?;
            }
        }
    }
    if let Some(pattern) = &expect.json {
        let actual: Value = serde_json::from_slice(&resp.body).map_err(|e| {
            format!(
                "body: expected JSON, actual is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&resp.body)
            )
        })?;
        Matcher::new(base, &mut scratch, expect.mode)
            .check(pattern, &actual)
            .map_err(|m| format!("body {m}"))?;
    } else if let Some(b) = &expect.base64 {
        let want = decode_base64(b)?;
        if resp.body != want {
            return Err(format!(
                "body: expected {} bytes (base64 {b:?}), actual {} bytes",
                want.len(),
                resp.body.len()
            ));
        }
    } else if let Some([w, h]) = expect.image {
        // the Rust codecs read the body whichever codec made it (a browser's scales too)
        use engine::core::images::ImageCodec as _;
        let img = engine::core::images::RustCodec::default()
            .read(&resp.body)
            .map_err(|e| format!("body: expected a {w}x{h} image, actual {e:?}"))?;
        if (img.width, img.height) != (w, h) {
            return Err(format!(
                "body: expected a {w}x{h} image, actual {}x{}",
                img.width, img.height
            ));
        }
    } else if let Some(n) = expect.size {
        if resp.body.len() != n {
            return Err(format!(
                "body: expected {n} bytes, actual {}",
                resp.body.len()
            ));
        }
    } else {
        let want = match &expect.raw {
            Some(r) => interpolate(r, base, &scratch)?,
            None => String::new(),
        };
        if resp.body != want.as_bytes() {
            return Err(format!(
                "body: expected {}, actual {:?}",
                if want.is_empty() {
                    "empty".to_string()
                } else {
                    format!("{want:?}")
                },
                String::from_utf8_lossy(&resp.body)
            ));
        }
    }
    *vars = scratch;
    Ok(())
}

/// Bytes given as base64 in a scenario.
fn decode_base64(text: &str) -> Result<Vec<u8>, String> {
    B64.decode(text.trim())
        .map_err(|e| format!("invalid base64 in the scenario: {e}"))
}

fn label(step: &Step) -> String {
    let line = format!("({} {})", step.request.method, step.request.path);
    let text = match &step.name {
        Some(n) => format!("{n:?} {line}"),
        None => line,
    };
    text.chars().take(200).collect()
}

/// Run every step of `s` against `t` (which must serve a fresh site), stopping at the first failure.
pub async fn run_scenario<T: Target>(t: &mut T, s: &Scenario) -> Result<(), Failure> {
    let base = t.base_url();
    let mut vars = Vars::new();
    for (i, step) in s.steps.iter().enumerate() {
        let fail = |message: String, response: Option<String>| Failure {
            scenario: s.name.clone(),
            step: i + 1,
            step_label: label(step),
            message,
            response,
        };
        let req = build_request(&step.request, &base, &vars)
            .map_err(|e| fail(format!("scenario error in the request: {e}"), None))?;
        let resp = t.send(req).await;
        check_response(&step.expect, &resp, &base, &mut vars)
            .map_err(|e| fail(e, Some(describe(&resp))))?;
    }
    Ok(())
}

/// Parse the embedded scenario `(name, text)` and check that its `name` matches the file name.
pub fn load(name: &str, text: &str) -> Result<Scenario, Failure> {
    let malformed = |message: String| Failure {
        scenario: name.to_string(),
        step: 0,
        step_label: "(scenario file)".into(),
        message,
        response: None,
    };
    let s = Scenario::parse(text).map_err(malformed)?;
    if s.name != name {
        return Err(malformed(format!(
            "the scenario's name {:?} differs from its file name {name:?}",
            s.name
        )));
    }
    if s.steps.is_empty() {
        return Err(malformed("a scenario needs at least one step".into()));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A target that answers every request with one canned response.
    struct Canned(Response, Vec<Request>);

    impl Target for Canned {
        async fn send(&mut self, req: Request) -> Response {
            self.1.push(req);
            self.0.clone()
        }
        fn base_url(&self) -> String {
            "http://t".into()
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        loop {
            if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
        }
    }

    fn scenario(steps: Value) -> Scenario {
        Scenario::parse(&json!({"name": "s", "description": "d", "steps": steps}).to_string())
            .unwrap()
    }

    #[test]
    fn a_matching_response_passes_and_a_different_one_fails() {
        let resp = Response::json(200, &json!({"@id": "http://t/a", "n": 1}));
        let s = scenario(json!([{"request": {"method": "GET", "path": "/a"},
            "expect": {"status": 200, "json": {"@id": "{base}/a", "n": 1}}}]));
        let mut t = Canned(resp.clone(), vec![]);
        assert!(block_on(run_scenario(&mut t, &s)).is_ok());

        let s = scenario(
            json!([{"name": "read", "request": {"method": "GET", "path": "/a"},
            "expect": {"status": 200, "json": {"@id": "{base}/a", "n": 2}}}]),
        );
        let f = block_on(run_scenario(&mut Canned(resp.clone(), vec![]), &s)).unwrap_err();
        assert_eq!(f.step, 1);
        let text = f.to_string();
        assert!(
            text.contains("/n") && text.contains("expected 2, actual 1"),
            "{text}"
        );
        assert!(text.contains("\"read\" (GET /a)"), "{text}");

        let s = scenario(json!([{"request": {"method": "GET", "path": "/a"},
            "expect": {"status": 201, "json": "{{any}}"}}]));
        let f = block_on(run_scenario(&mut Canned(resp, vec![]), &s)).unwrap_err();
        assert!(f.message.contains("expected 201, actual 200"), "{f}");
    }

    #[test]
    fn an_empty_body_is_required_unless_a_body_is_expected() {
        let s = scenario(json!([{"request": {"method": "DELETE", "path": "/a"},
            "expect": {"status": 204}}]));
        assert!(block_on(run_scenario(&mut Canned(Response::empty(204), vec![]), &s)).is_ok());
        let mut not_empty = Response::empty(204);
        not_empty.body = b"{}".to_vec();
        assert!(block_on(run_scenario(&mut Canned(not_empty, vec![]), &s)).is_err());
    }

    #[test]
    fn headers_are_checked_case_insensitively_and_absence_is_checkable() {
        let resp = Response::empty(201).with_header("Location", "http://t/x");
        let ok = scenario(json!([{"request": {"method": "POST", "path": "/"},
            "expect": {"status": 201, "headers": {"location": "{base}/x", "Allow": null}}}]));
        assert!(block_on(run_scenario(&mut Canned(resp.clone(), vec![]), &ok)).is_ok());
        let bad = scenario(json!([{"request": {"method": "POST", "path": "/"},
            "expect": {"status": 201, "headers": {"Location": "{base}/y"}}}]));
        assert!(block_on(run_scenario(&mut Canned(resp.clone(), vec![]), &bad)).is_err());
        let absent = scenario(json!([{"request": {"method": "POST", "path": "/"},
            "expect": {"status": 201, "headers": {"Location": null}}}]));
        assert!(block_on(run_scenario(&mut Canned(resp, vec![]), &absent)).is_err());
    }

    #[test]
    fn requests_carry_auth_bodies_and_saved_variables() {
        let resp = Response::json(200, &json!({"token": "a.b.c"}));
        let s = scenario(json!([
            {"request": {"method": "POST", "path": "/@login", "json": {"login": "admin"}},
             "expect": {"status": 200, "json": {"token": "{{jwt|save:t}}"}}},
            {"request": {"method": "GET", "path": "/{{var:t}}?x=1", "auth": "bearer:t"},
             "expect": {"status": 200, "json": {"token": "{{var:t}}"}}},
            {"request": {"method": "PATCH", "path": "/", "auth": "admin", "raw": "{not json"},
             "expect": {"status": 200, "json": "{{any}}"}},
            {"request": {"method": "POST", "path": "/", "bytes": 5,
                "headers": {"Content-Type": "text/plain"}},
             "expect": {"status": 200, "json": "{{any}}"}}
        ]));
        let mut t = Canned(resp, vec![]);
        block_on(run_scenario(&mut t, &s)).unwrap();
        let reqs = t.1;
        assert_eq!(
            reqs[0].header_value("content-type"),
            Some("application/json")
        );
        assert_eq!(reqs[0].header_value("accept"), Some("application/json"));
        assert_eq!(reqs[0].header_value("authorization"), None);
        assert_eq!(reqs[0].body, br#"{"login":"admin"}"#);
        assert_eq!(reqs[1].path, "/a.b.c");
        assert_eq!(reqs[1].query, "x=1");
        assert_eq!(reqs[1].header_value("authorization"), Some("Bearer a.b.c"));
        assert_eq!(reqs[2].method, Method::Patch);
        assert_eq!(reqs[2].body, b"{not json");
        assert_eq!(
            reqs[2].header_value("authorization"),
            Some("Basic YWRtaW46c2VjcmV0")
        );
        assert_eq!(reqs[3].body, b"xxxxx");
        assert_eq!(reqs[3].header_value("content-type"), Some("text/plain"));
        assert_eq!(reqs[3].base_url, "http://t");
    }

    #[test]
    fn malformed_scenarios_are_refused() {
        assert!(
            Scenario::parse(r#"{"name": "x", "description": "", "steps": [], "extra": 1}"#)
                .is_err()
        );
        let text = json!({"name": "other", "description": "d", "steps": [
            {"request": {"method": "GET", "path": "/"}, "expect": {"status": 200}}]})
        .to_string();
        assert!(load("mine", &text).is_err());
        assert!(auth_header("root", &Vars::new()).is_err());
        assert!(auth_header("bearer:nope", &Vars::new()).is_err());
    }
}
