//! The engine's one error type and its single mapping to an HTTP status and JSON body.
//!
//! Every failure answers with the same body shape, `{"type": "...", "message": "..."}`, plus
//! `"context"` (the URL of the nearest existing object) on 404s, as the reference does. Handlers return
//! `Err(EngineError::...)`; the transaction is then rolled back, so a failed request changes nothing.
//!
//! A site with the Nick profile answers in Nick's shapes instead ([`ErrorStyle::Nick`],
//! [`NickErrorBody`]): `{"error": "Not found: /path"}` for a missing object, `{"error": "Not
//! found."}` for other missing things, `{"error": {"type", "message"}}` for a refused login or
//! session, `{"message": "..."}` for everything else. Both are built here, from the same error.

use schemars::JsonSchema;
use serde::Serialize;

use crate::core::http::Response;
use crate::core::store::StoreError;

/// The body of every error answer.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ErrorBody {
    /// The kind of error (`NotFound`, `BadRequest`, ...).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// What went wrong, for people.
    pub message: String,
    /// The URL of the addressed object (or its nearest existing ancestor), on 404 and 401.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}

/// Whose error bodies a site answers with (the engine picks it from the site profile, which this
/// layer does not know).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorStyle {
    /// plone.restapi's `{"type", "message", "context"}` ([`ErrorBody`]).
    #[default]
    Plone,
    /// Nick's bodies ([`NickErrorBody`]).
    Nick,
}

/// The body of an error answer on a Nick site: Nick 2.8 answers each failure with one of three
/// shapes (its documented examples `content/get_notfound`, `authentication/login_post_*`,
/// `content/post_badrequest`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum NickErrorBody {
    /// `{"error": {"type", "message"}}`: a refused login or session.
    Typed {
        /// The kind and the text.
        error: NickTypedError,
    },
    /// `{"error": "..."}`: something not found.
    Error {
        /// What was not found.
        error: String,
    },
    /// `{"message": "..."}`: every other failure.
    Message {
        /// What went wrong.
        message: String,
    },
}

/// The `error` object of [`NickErrorBody::Typed`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NickTypedError {
    /// The kind of failure, for people (`Invalid credentials`).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// What went wrong.
    pub message: &'static str,
}

/// Why a login or a session was refused ([`EngineError::Session`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionFailure {
    /// `@login` without a login or a password (400).
    MissingCredentials,
    /// `@login` with an unknown login or a wrong password (401).
    InvalidCredentials,
    /// A session operation (`@login-renew`) without a valid session token (401).
    InvalidSession,
}

impl SessionFailure {
    /// Nick's `type` and `message` for this failure.
    fn nick(self) -> NickTypedError {
        let (kind, message) = match self {
            SessionFailure::MissingCredentials => (
                "Missing credentials",
                "Login and password must be provided in body.",
            ),
            SessionFailure::InvalidCredentials => {
                ("Invalid credentials", "Wrong login and/or password.")
            }
            SessionFailure::InvalidSession => ("Invalid session", "User is not logged in."),
        };
        NickTypedError { kind, message }
    }
}

/// One entry of an [`EngineError::Invalid`] message, in Plone's shape.
#[derive(Serialize)]
struct FieldError<'a> {
    field: &'a str,
    message: &'a str,
    error: &'static str,
}

/// The header of an [`EngineError::NotInBuild`] answer (the endpoint's name): the signal a host
/// of the lean build watches for.
pub const NOT_IN_BUILD_HEADER: &str = "Engine-Not-In-Build";

/// Result alias used throughout the engine.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// Every way a request can fail.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// No resource at the URL (404). `context` is the URL of the deepest existing ancestor.
    #[error("Resource not found: {url}")]
    NotFound {
        /// The URL that was asked for.
        url: String,
        /// The nearest existing object's URL, if known.
        context: Option<String>,
    },
    /// The resource lives elsewhere now (an alias of an old path): 301, or 308 for methods other
    /// than GET/HEAD so clients repeat the same method.
    #[error("This resource has moved to {location}")]
    Redirect {
        /// The absolute URL to go to.
        location: String,
        /// Use 308 (method preserved) instead of 301.
        permanent_method: bool,
    },
    /// The request is malformed or asks for something impossible (400).
    #[error("{0}")]
    BadRequest(String),
    /// A field of the request body does not fit its schema (400). The body's `message` is what
    /// Plone sends and Volto's forms parse to mark the field: a JSON list
    /// `[{"field", "message", "error": "ValidationError"}]` as a string.
    #[error("{message}")]
    Invalid {
        /// The field's name.
        field: String,
        /// What is wrong with it, for people (names the field too).
        message: String,
    },
    /// No or invalid credentials for something that needs them (401).
    #[error("{0}")]
    Unauthorized(String),
    /// A login or session refused (`@login`, `@login-renew`): 400 for missing credentials, else
    /// 401 as [`EngineError::Unauthorized`]. `message` is the text of the Plone answer; Nick's
    /// answer has its own type and text per `failure`.
    #[error("{message}")]
    Session {
        /// Why.
        failure: SessionFailure,
        /// What went wrong, for people.
        message: String,
    },
    /// A required field of a new object's body is missing (400, as [`EngineError::Invalid`]
    /// for `field`); Nick answers `Required field(s) missing.`.
    #[error("{message}")]
    Required {
        /// The field's name.
        field: String,
        /// What is missing, for people (names the field).
        message: String,
    },
    /// Authenticated, but without the permission (403).
    #[error("{0}")]
    Forbidden(String),
    /// The request needs a part of the engine this build leaves out (the browser's first module,
    /// engine feature `lean`): the host answers it with the full build instead, so no client
    /// sees it. Answered 501 `NotInBuild` with the header `Engine-Not-In-Build: <endpoint>`.
    #[error("The endpoint @{endpoint} is not in this build of the engine")]
    NotInBuild {
        /// The endpoint asked for.
        endpoint: String,
    },
    /// The resource exists but not with this method (405).
    #[error("Method {method} is not allowed here; allowed: {}", allowed.join(", "))]
    MethodNotAllowed {
        /// The method that was used.
        method: String,
        /// The methods the resource accepts.
        allowed: Vec<&'static str>,
    },
    /// The request conflicts with the current state (409).
    #[error("{0}")]
    Conflict(String),
    /// A change feed cursor older than what the feed keeps (410 `CursorExpired`): the client
    /// downloads everything again (`crate::sync::changes`).
    #[error("{0}")]
    CursorExpired(String),
    /// The request is well formed but cannot be processed as it is (422 `Unprocessable`): an
    /// `Idempotency-Key` already used for another method or path (`crate::sync::idempotency`).
    #[error("{0}")]
    Unprocessable(String),
    /// `If-Match` names another version of the object than the current one (412); `etag` is the
    /// current one.
    #[error(
        "The object has changed since the version named in If-Match; its current ETag is {etag}"
    )]
    PreconditionFailed {
        /// The current `ETag`.
        etag: String,
    },
    /// The body is larger than the configured limit (413).
    #[error("Request body of {size} bytes exceeds the limit of {limit} bytes")]
    PayloadTooLarge {
        /// Bytes received.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// An uploaded file is larger than the site's `plone.max_file_size` (413).
    #[error("The file '{field}' of {size} bytes exceeds the site's maximum of {limit} bytes (registry record plone.max_file_size)")]
    FileTooLarge {
        /// The field (or upload) it was for.
        field: String,
        /// Its size in bytes.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A `Range` header asks for bytes the file does not have (416).
    #[error("The range '{range}' is not satisfiable: the file has {size} bytes")]
    RangeNotSatisfiable {
        /// The header's value.
        range: String,
        /// The file's size.
        size: u64,
    },
    /// The body is not in a media type the endpoint accepts (415).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The object is locked and the request did not present the lock's token (403 `Forbidden`,
    /// as the reference answers).
    #[error("{0}")]
    Locked(String),
    /// The storage backend failed (500, or 507 when out of space).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A service the engine relies on (the language model of `@chat`) failed or cannot be
    /// reached (502).
    #[error("{0}")]
    BadGateway(String),
    /// A bug or corrupt data; never caused by client input (500).
    #[error("Internal error: {0}")]
    Internal(String),
    /// The host's login throttle refuses the attempt: too many refused passwords for its login or
    /// from its address (429 `TooManyRequests`, with `Retry-After`).
    #[error("Too many failed login attempts for this login or from this address; try again in {retry_after} seconds")]
    TooManyLoginAttempts {
        /// Seconds until an attempt is taken again.
        retry_after: u64,
    },
    /// The host's stream budget refuses another open event stream: `limit` says which (429
    /// `TooManyRequests`, with `Retry-After`).
    #[error(
        "Too many open event streams {limit}; close one or try again in {retry_after} seconds"
    )]
    TooManyStreams {
        /// Which budget is used up (e.g. "from this address").
        limit: String,
        /// Seconds after which a new attempt may succeed.
        retry_after: u64,
    },
    /// The host's image codec works asynchronously and has not finished what this request needs
    /// ([`crate::core::images::ImageError::Pending`]): the request changed nothing and the host
    /// runs it again once the work is done (503 `Busy`, with `Retry-After`, should it reach a
    /// client).
    #[error("Image work is still in progress; the request changed nothing. Try again.")]
    ImageWorkPending,
}

impl EngineError {
    /// A 400 with `message`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        EngineError::BadRequest(message.into())
    }

    /// A 400 for the body field `field` (see [`EngineError::Invalid`]); other errors unchanged.
    pub fn for_field(self, field: &str) -> Self {
        match self {
            EngineError::BadRequest(message) => EngineError::Invalid {
                field: field.to_string(),
                message,
            },
            other => other,
        }
    }

    /// The HTTP status for this error.
    pub fn status(&self) -> u16 {
        match self {
            EngineError::NotFound { .. } => 404,
            EngineError::Redirect {
                permanent_method, ..
            } => {
                if *permanent_method {
                    308
                } else {
                    301
                }
            }
            EngineError::BadRequest(_)
            | EngineError::Invalid { .. }
            | EngineError::Required { .. } => 400,
            EngineError::Session {
                failure: SessionFailure::MissingCredentials,
                ..
            } => 400,
            EngineError::Unauthorized(_) | EngineError::Session { .. } => 401,
            EngineError::Forbidden(_) => 403,
            EngineError::MethodNotAllowed { .. } => 405,
            EngineError::NotInBuild { .. } => 501,
            EngineError::Conflict(_) => 409,
            EngineError::PreconditionFailed { .. } => 412,
            EngineError::CursorExpired(_) => 410,
            EngineError::Unprocessable(_) => 422,
            EngineError::PayloadTooLarge { .. } | EngineError::FileTooLarge { .. } => 413,
            EngineError::RangeNotSatisfiable { .. } => 416,
            EngineError::UnsupportedMediaType(_) => 415,
            EngineError::Locked(_) => 403,
            EngineError::Store(StoreError::QuotaExceeded(_)) => 507,
            EngineError::Store(StoreError::Conflict(_)) | EngineError::ImageWorkPending => 503,
            EngineError::Store(_) | EngineError::Internal(_) => 500,
            EngineError::BadGateway(_) => 502,
            EngineError::TooManyLoginAttempts { .. } | EngineError::TooManyStreams { .. } => 429,
        }
    }

    /// The `type` field of the error body.
    pub fn type_name(&self) -> &'static str {
        match self {
            EngineError::NotFound { .. } => "NotFound",
            EngineError::Redirect { .. } => "Moved",
            EngineError::BadRequest(_)
            | EngineError::Invalid { .. }
            | EngineError::Required { .. } => "BadRequest",
            EngineError::Session {
                failure: SessionFailure::MissingCredentials,
                ..
            } => "BadRequest",
            EngineError::Unauthorized(_) | EngineError::Session { .. } => "Unauthorized",
            EngineError::Forbidden(_) => "Forbidden",
            EngineError::MethodNotAllowed { .. } => "MethodNotAllowed",
            EngineError::NotInBuild { .. } => "NotInBuild",
            EngineError::Conflict(_) => "Conflict",
            EngineError::PreconditionFailed { .. } => "PreconditionFailed",
            EngineError::CursorExpired(_) => "CursorExpired",
            EngineError::Unprocessable(_) => "Unprocessable",
            EngineError::PayloadTooLarge { .. } | EngineError::FileTooLarge { .. } => {
                "PayloadTooLarge"
            }
            EngineError::RangeNotSatisfiable { .. } => "RangeNotSatisfiable",
            EngineError::UnsupportedMediaType(_) => "UnsupportedMediaType",
            EngineError::Locked(_) => "Forbidden",
            EngineError::Store(StoreError::QuotaExceeded(_)) => "InsufficientStorage",
            EngineError::Store(StoreError::Conflict(_)) | EngineError::ImageWorkPending => "Busy",
            EngineError::Store(_) => "StorageError",
            EngineError::Internal(_) => "InternalError",
            EngineError::BadGateway(_) => "BadGateway",
            EngineError::TooManyLoginAttempts { .. } | EngineError::TooManyStreams { .. } => {
                "TooManyRequests"
            }
        }
    }

    /// What the client is told: the error's own text, except for failures inside the service
    /// (a store failure, a bug, a record that does not decode), whose detail is for the log only
    /// ([`EngineError::log_detail`]).
    pub fn public_message(&self) -> String {
        match self {
            EngineError::Internal(_) => {
                "Internal error: the request could not be completed".to_string()
            }
            EngineError::Store(StoreError::QuotaExceeded(_)) => {
                "The storage is full; the request changed nothing".to_string()
            }
            EngineError::Store(StoreError::Conflict(_)) => {
                "The site is busy with other changes to the same content; the request changed \
                 nothing. Try again."
                    .to_string()
            }
            EngineError::Store(_) => {
                "Storage error: the request could not be completed and changed nothing".to_string()
            }
            EngineError::Invalid { field, message } | EngineError::Required { field, message } => {
                serde_json::to_string(&[FieldError {
                    field,
                    message,
                    error: "ValidationError",
                }])
                .unwrap_or_else(|_| message.clone())
            }
            other => other.to_string(),
        }
    }

    /// The detail of a failure inside the service, for the host's log; `None` for errors caused
    /// by the request.
    pub fn log_detail(&self) -> Option<String> {
        match self {
            EngineError::Internal(_) | EngineError::Store(_) => Some(self.to_string()),
            _ => None,
        }
    }

    /// The JSON error body.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            kind: self.type_name(),
            message: self.public_message(),
            context: match self {
                EngineError::NotFound { context, .. } => context.clone(),
                _ => None,
            },
        }
    }

    /// The JSON error body of a Nick site ([`NickErrorBody`]); `base_url` is the site's, to
    /// tell a missing object (`Not found: /path`) from another missing thing (`Not found.`).
    pub fn nick_body(&self, base_url: &str) -> NickErrorBody {
        match self {
            EngineError::NotFound { url, .. } => {
                let path = url
                    .strip_prefix(base_url.trim_end_matches('/'))
                    .filter(|p| p.starts_with('/') && !p.contains("/@"));
                NickErrorBody::Error {
                    error: match path {
                        Some(p) => format!("Not found: {p}"),
                        None => "Not found.".to_string(),
                    },
                }
            }
            EngineError::Session { failure, .. } => NickErrorBody::Typed {
                error: failure.nick(),
            },
            EngineError::Required { .. } => NickErrorBody::Message {
                message: "Required field(s) missing.".to_string(),
            },
            EngineError::Invalid { message, .. } => NickErrorBody::Message {
                message: message.clone(),
            },
            other => NickErrorBody::Message {
                message: other.public_message(),
            },
        }
    }

    /// The complete HTTP response for this error.
    pub fn into_response(self) -> Response {
        self.into_response_at(None)
    }

    /// The complete HTTP response for this error, naming `context` (the URL of the object the
    /// request addressed) in 401 bodies, as the reference does.
    pub fn into_response_at(self, context: Option<&str>) -> Response {
        self.into_styled_response(ErrorStyle::Plone, "", context)
    }

    /// The complete HTTP response for this error in the site's `style`: Plone's body (naming
    /// `context`, the URL of the object the request addressed, in 401 bodies, as the reference
    /// does) or Nick's ([`EngineError::nick_body`] for the site at `base_url`). Status and
    /// headers are the same in both.
    pub fn into_styled_response(
        self,
        style: ErrorStyle,
        base_url: &str,
        context: Option<&str>,
    ) -> Response {
        let mut resp = match style {
            ErrorStyle::Plone => {
                let mut body = self.body();
                if let (EngineError::Unauthorized(_) | EngineError::Session { .. }, Some(c)) =
                    (&self, context)
                {
                    if self.status() == 401 {
                        body.context = Some(c.to_string());
                    }
                }
                Response::json(self.status(), &body)
            }
            ErrorStyle::Nick => Response::json(self.status(), &self.nick_body(base_url)),
        };
        match &self {
            EngineError::MethodNotAllowed { allowed, .. } => {
                resp = resp.with_header("Allow", &allowed.join(", "));
            }
            EngineError::NotInBuild { endpoint } => {
                resp = resp.with_header(NOT_IN_BUILD_HEADER, endpoint);
            }
            EngineError::Redirect { location, .. } => {
                resp = resp.with_header("Location", location);
            }
            EngineError::PreconditionFailed { etag } => {
                resp = resp.with_header("ETag", etag);
            }
            EngineError::RangeNotSatisfiable { size, .. } => {
                resp = resp.with_header("Content-Range", &format!("bytes */{size}"));
            }
            EngineError::Store(StoreError::Conflict(_)) | EngineError::ImageWorkPending => {
                resp = resp.with_header("Retry-After", "1");
            }
            EngineError::TooManyLoginAttempts { retry_after }
            | EngineError::TooManyStreams { retry_after, .. } => {
                resp = resp.with_header("Retry-After", &retry_after.to_string());
            }
            EngineError::Unauthorized(_) | EngineError::Session { .. } if self.status() == 401 => {
                resp = resp.with_header(
                    "WWW-Authenticate",
                    "Bearer realm=\"site\", Basic realm=\"site\"",
                );
            }
            _ => {}
        }
        resp
    }
}

impl From<serde_json::Error> for EngineError {
    /// Only for (de)serializing the engine's own stored records: corrupt data, not client input.
    fn from(e: serde_json::Error) -> Self {
        EngineError::Internal(format!("corrupt stored record: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn not_found_carries_context() {
        let e = EngineError::NotFound {
            url: "http://x/a".into(),
            context: Some("http://x".into()),
        };
        let r = e.into_response();
        assert_eq!(r.status, 404);
        assert_eq!(
            r.json_body(),
            json!({"type": "NotFound", "message": "Resource not found: http://x/a", "context": "http://x"})
        );
    }

    #[test]
    fn invalid_field_is_plones_field_error_list() {
        let e = EngineError::bad_request("Field 'title' must be a string, got number")
            .for_field("title");
        let r = e.into_response();
        assert_eq!(r.status, 400);
        let body = r.json_body();
        assert_eq!(body["type"], "BadRequest");
        let list: serde_json::Value =
            serde_json::from_str(body["message"].as_str().unwrap_or_default()).unwrap_or_default();
        assert_eq!(
            list,
            json!([{"field": "title", "message": "Field 'title' must be a string, got number", "error": "ValidationError"}])
        );
        assert_eq!(
            EngineError::Forbidden("no".into())
                .for_field("title")
                .status(),
            403
        );
    }

    #[test]
    fn nick_bodies_have_nicks_three_shapes() {
        let nick = |e: EngineError| {
            e.into_styled_response(ErrorStyle::Nick, "http://x", Some("http://x"))
                .json_body()
        };
        let missing = |url: &str| EngineError::NotFound {
            url: url.into(),
            context: Some("http://x".into()),
        };
        assert_eq!(
            nick(missing("http://x/a/b")),
            json!({"error": "Not found: /a/b"})
        );
        assert_eq!(
            nick(missing("http://x/a/@vocabularies/v")),
            json!({"error": "Not found."})
        );
        assert_eq!(nick(missing("upload 7")), json!({"error": "Not found."}));
        let refused = EngineError::Session {
            failure: SessionFailure::MissingCredentials,
            message: "Plone's text".into(),
        };
        assert_eq!(refused.status(), 400);
        assert_eq!(
            nick(refused),
            json!({"error": {"type": "Missing credentials", "message": "Login and password must be provided in body."}})
        );
        let required = EngineError::Required {
            field: "title".into(),
            message: "Field 'title' is required".into(),
        };
        assert_eq!(
            nick(required),
            json!({"message": "Required field(s) missing."})
        );
        let r = EngineError::Forbidden("no".into()).into_styled_response(
            ErrorStyle::Nick,
            "http://x",
            None,
        );
        assert_eq!(r.status, 403);
        assert_eq!(r.json_body(), json!({"message": "no"}));
    }

    #[test]
    fn plone_bodies_of_sessions_are_those_of_unauthorized() {
        let e = EngineError::Session {
            failure: SessionFailure::InvalidCredentials,
            message: "Wrong login and/or password.".into(),
        };
        let r = e.into_response_at(Some("http://x"));
        assert_eq!(r.status, 401);
        assert!(r.header_value("www-authenticate").is_some());
        assert_eq!(
            r.json_body(),
            json!({"type": "Unauthorized", "message": "Wrong login and/or password.", "context": "http://x"})
        );
        let r = EngineError::Session {
            failure: SessionFailure::MissingCredentials,
            message: "give both".into(),
        }
        .into_response_at(Some("http://x"));
        assert_eq!(r.status, 400);
        assert!(r.header_value("www-authenticate").is_none());
        assert_eq!(
            r.json_body(),
            json!({"type": "BadRequest", "message": "give both"})
        );
    }

    #[test]
    fn method_not_allowed_lists_allow_header() {
        let e = EngineError::MethodNotAllowed {
            method: "PUT".into(),
            allowed: vec!["GET", "POST"],
        };
        let r = e.into_response();
        assert_eq!(r.status, 405);
        assert_eq!(r.header_value("allow"), Some("GET, POST"));
    }
}
