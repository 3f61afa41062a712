//! Per-object versions over HTTP: every content answer carries an `ETag` naming the object's
//! revision (uid and [`ContentRecord::rev`]), and the routes that change an object honour
//! `If-Match`: a request made against an older version is refused with 412 and the current
//! `ETag`, so concurrent editors (and offline edits replayed later) never overwrite each other
//! unknowingly.
//!
//! The `ETag` is strong and names the object's own record: it changes with every save of the
//! object (fields, workflow state, its list of children), not with a change to a child or a lock.
//! `If-Match: *` matches any existing object; a list matches when any of its tags does.

use crate::core::error::{EngineError, Result};
use crate::core::http::{Request, Response};
use crate::core::model::ContentRecord;

/// The `ETag` of `obj`: `"<uid>-<rev>"`.
pub fn of(obj: &ContentRecord) -> String {
    format!("\"{}-{}\"", obj.uid, obj.rev)
}

/// `resp` with the `ETag` of `obj`.
pub fn tagged(resp: Response, obj: &ContentRecord) -> Response {
    resp.with_header("ETag", &of(obj))
}

/// Whether the `If-Match` header of `req` (if any) allows a change to `obj`.
pub fn matches(req: &Request, obj: &ContentRecord) -> bool {
    let Some(header) = req.header_value("if-match") else {
        return true;
    };
    let current = of(obj);
    header
        .split(',')
        .map(str::trim)
        .any(|t| t == "*" || t == current)
}

/// Fail with 412 (naming the current `ETag`) unless `If-Match` allows a change to `obj`.
pub fn check_if_match(req: &Request, obj: &ContentRecord) -> Result<()> {
    if matches(req, obj) {
        Ok(())
    } else {
        Err(EngineError::PreconditionFailed { etag: of(obj) })
    }
}
