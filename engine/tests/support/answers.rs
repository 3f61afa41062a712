//! What every answer to a generated request must hold (`robustness.rs`, `fuzz.rs`).

use engine::{Direction, MemStore, Method, Request, Response, Store};
use serde_json::Value;

/// Every key and value of `store`, to compare before and after a request.
pub fn snapshot(store: &MemStore) -> Vec<(Vec<u8>, Vec<u8>)> {
    store
        .begin_read()
        .expect("read")
        .scan(b"", b"", Direction::Forward, usize::MAX)
        .expect("scan")
}

/// The answer `resp` to `req` (described as `shown`) has a status in 200..=599, a JSON content
/// type carries valid JSON, and an error is a JSON error with a `type` that left `store` as it
/// was (`before`).
pub fn check_answer(
    shown: &str,
    req: &Request,
    resp: &Response,
    store: &MemStore,
    before: &[(Vec<u8>, Vec<u8>)],
) {
    assert!(
        (200..600).contains(&resp.status),
        "{shown}: status {}",
        resp.status
    );
    let json_answer = resp
        .header_value("content-type")
        .is_some_and(|ct| ct.starts_with("application/json"));
    if json_answer && !resp.body.is_empty() && req.method != Method::Head {
        assert!(
            serde_json::from_slice::<Value>(&resp.body).is_ok(),
            "{shown}: the body is not JSON"
        );
    }
    if resp.status >= 400 {
        assert!(
            req.method == Method::Head
                || resp
                    .json_body()
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some(),
            "{shown}: an error without a type: {}",
            String::from_utf8_lossy(&resp.body)
        );
        assert!(
            before == snapshot(store).as_slice(),
            "{shown}: a {} changed the store",
            resp.status
        );
    }
}
