//! Field definitions and their validation: what a client may send for each kind of field, how it is
//! normalized for storage, and how it reads back.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{blocks, language};
use crate::clock::iso;
use crate::error::{EngineError, Result};

/// The kind of a field, which fixes its JSON shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    /// A one-line string.
    String,
    /// A multi-line string.
    Text,
    /// `true` or `false`.
    Bool,
    /// `true`, `false` or `null`.
    NullableBool,
    /// An ISO 8601 timestamp, or `null`.
    Datetime,
    /// An array of strings.
    Strings,
    /// An array of UIDs (related items).
    Uids,
    /// A language code (read back as `{token, title}`).
    Language,
    /// A map of block id to block object.
    Blocks,
    /// `{items: [block id]}`.
    BlocksLayout,
    /// Rich text `{data, content-type, encoding}`, or `null`.
    Richtext,
    /// A non-negative integer, or `null`.
    Int,
    /// A querystring query: a list of rows `{i: index, o: operation, v: value}` (Collections,
    /// listing blocks).
    Querystring,
}

/// One field of a content type.
#[derive(Debug, Clone, Deserialize)]
pub struct FieldDef {
    /// Field name as it appears in JSON.
    pub name: String,
    /// Its kind.
    pub kind: FieldKind,
    /// Must be present (and non-empty) on creation.
    #[serde(default)]
    pub required: bool,
    /// The value reported when the object has none stored.
    #[serde(default)]
    pub default: Option<Value>,
    /// Accepted on write but not stored on the object (e.g. `changeNote`, kept in history).
    #[serde(default)]
    pub transient: bool,
}

impl FieldDef {
    /// The value to report when nothing is stored.
    pub fn default_value(&self) -> Value {
        if let Some(v) = &self.default {
            return v.clone();
        }
        match self.kind {
            FieldKind::String | FieldKind::Text => json!(""),
            FieldKind::Bool => json!(false),
            FieldKind::Strings | FieldKind::Uids => json!([]),
            FieldKind::Blocks => json!({}),
            FieldKind::BlocksLayout => json!({"items": []}),
            FieldKind::NullableBool
            | FieldKind::Datetime
            | FieldKind::Richtext
            | FieldKind::Int
            | FieldKind::Language => Value::Null,
            FieldKind::Querystring => json!([]),
        }
    }

    /// Check a client-supplied value and return its stored form.
    pub fn validate(&self, value: &Value) -> Result<Value> {
        let wrong = |expected: &str| {
            EngineError::bad_request(format!(
                "Field '{}' must be {expected}, got {}",
                self.name,
                json_kind(value)
            ))
        };
        match self.kind {
            FieldKind::String | FieldKind::Text => {
                let s = value.as_str().ok_or_else(|| wrong("a string"))?;
                if self.kind == FieldKind::String && s.contains(['\n', '\r']) {
                    return Err(EngineError::bad_request(format!(
                        "Field '{}' must be a single line",
                        self.name
                    )));
                }
                if self.required && s.trim().is_empty() {
                    return Err(EngineError::bad_request(format!(
                        "Field '{}' is required and must not be empty",
                        self.name
                    )));
                }
                Ok(value.clone())
            }
            FieldKind::Bool => value
                .as_bool()
                .map(Value::Bool)
                .ok_or_else(|| wrong("a boolean")),
            FieldKind::NullableBool => match value {
                Value::Null | Value::Bool(_) => Ok(value.clone()),
                _ => Err(wrong("a boolean or null")),
            },
            FieldKind::Datetime => match value {
                Value::Null => Ok(Value::Null),
                Value::String(s) if s.is_empty() => Ok(Value::Null),
                Value::String(s) => parse_datetime(s)
                    .map(|t| Value::String(iso(&t)))
                    .ok_or_else(|| {
                        EngineError::bad_request(format!(
                            "Field '{}' must be an ISO 8601 date or timestamp, got '{s}'",
                            self.name
                        ))
                    }),
                _ => Err(wrong("an ISO 8601 timestamp string or null")),
            },
            FieldKind::Strings | FieldKind::Uids => {
                let arr = value
                    .as_array()
                    .ok_or_else(|| wrong("an array of strings"))?;
                if arr.iter().any(|v| !v.is_string()) {
                    return Err(wrong("an array of strings"));
                }
                Ok(value.clone())
            }
            FieldKind::Language => {
                let code = match value {
                    Value::String(s) => s.as_str(),
                    Value::Object(o) => o
                        .get("token")
                        .and_then(Value::as_str)
                        .ok_or_else(|| wrong("a language code or {token, title}"))?,
                    _ => return Err(wrong("a language code")),
                };
                if language::title(code).is_none() {
                    return Err(EngineError::bad_request(format!(
                        "Unknown language '{code}' for field '{}'",
                        self.name
                    )));
                }
                Ok(Value::String(code.to_string()))
            }
            FieldKind::Blocks => {
                blocks::validate_blocks(value)?;
                Ok(value.clone())
            }
            FieldKind::BlocksLayout => {
                blocks::validate_layout(value)?;
                Ok(value.clone())
            }
            FieldKind::Richtext => match value {
                Value::Null => Ok(Value::Null),
                Value::String(s) => {
                    Ok(json!({"data": s, "content-type": "text/html", "encoding": "utf-8"}))
                }
                Value::Object(o) => {
                    let data = o
                        .get("data")
                        .and_then(Value::as_str)
                        .ok_or_else(|| wrong("{data: string, content-type: string}"))?;
                    let ct = o
                        .get("content-type")
                        .and_then(Value::as_str)
                        .unwrap_or("text/html");
                    Ok(json!({"data": data, "content-type": ct, "encoding": "utf-8"}))
                }
                _ => Err(wrong("rich text {data, content-type} or null")),
            },
            FieldKind::Int => match value {
                Value::Null => Ok(Value::Null),
                Value::Number(n) if n.is_u64() => Ok(value.clone()),
                _ => Err(wrong("a non-negative integer or null")),
            },
            FieldKind::Querystring => {
                let rows = value
                    .as_array()
                    .ok_or_else(|| wrong("a list of {i, o, v} rows"))?;
                for row in rows {
                    let ok = row.as_object().is_some_and(|r| {
                        r.get("i").is_some_and(Value::is_string)
                            && r.get("o").is_some_and(Value::is_string)
                            && r.keys().all(|k| matches!(k.as_str(), "i" | "o" | "v"))
                    });
                    if !ok {
                        return Err(wrong("a list of {i: string, o: string, v} rows"));
                    }
                }
                Ok(value.clone())
            }
        }
    }
}

/// The JSON kind of a value, for error messages.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parse an ISO 8601 timestamp (`2026-01-01T12:00:00Z`, with an offset, without one as UTC, or a
/// plain date).
pub fn parse_datetime(s: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    for fmt in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, fmt) {
            return Some(t.and_utc());
        }
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(kind: FieldKind) -> FieldDef {
        FieldDef {
            name: "f".into(),
            kind,
            required: false,
            default: None,
            transient: false,
        }
    }

    #[test]
    fn kinds_reject_wrong_json_types() {
        assert!(def(FieldKind::String).validate(&json!(3)).is_err());
        assert!(def(FieldKind::Bool).validate(&json!("yes")).is_err());
        assert!(def(FieldKind::Strings).validate(&json!(["a", 1])).is_err());
        assert!(def(FieldKind::Datetime)
            .validate(&json!("tomorrow"))
            .is_err());
        assert!(def(FieldKind::Language)
            .validate(&json!("xx-nope"))
            .is_err());
    }

    #[test]
    fn datetimes_are_normalized_to_utc() {
        let v = def(FieldKind::Datetime)
            .validate(&json!("2026-03-01T10:00:00+02:00"))
            .unwrap();
        assert_eq!(v, json!("2026-03-01T08:00:00+00:00"));
        assert_eq!(
            def(FieldKind::Datetime)
                .validate(&json!("2026-03-01"))
                .unwrap(),
            json!("2026-03-01T00:00:00+00:00")
        );
    }

    #[test]
    fn language_accepts_token_objects() {
        let v = def(FieldKind::Language)
            .validate(&json!({"token": "de", "title": "Deutsch"}))
            .unwrap();
        assert_eq!(v, json!("de"));
    }
}
