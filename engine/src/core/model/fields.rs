//! Field definitions and their validation: what a client may send for each kind of field, how it is
//! normalized for storage, and how it reads back.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{blocks, language};
use crate::core::clock::iso;
use crate::core::error::{EngineError, Result};

/// The kind of a field, which fixes its JSON shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
    /// A whole number, or `null`.
    Int,
    /// A number, or `null`.
    Float,
    /// An e-mail address (one line, `local@domain`), or empty.
    Email,
    /// A URL (one line), or empty.
    Url,
    /// Any JSON value (a query, settings).
    Json,
    /// A querystring query: a list of rows `{i: index, o: operation, v: value}` (Collections,
    /// listing blocks).
    Querystring,
    /// A file: uploaded as `{data, encoding, filename, content-type}`, stored as a blob
    /// ([`crate::content::files`]), read back as `{filename, content-type, size, download}`.
    File,
    /// An image: a [`FieldKind::File`] that must decode as an image, read back with its `width`,
    /// `height` and `scales`.
    Image,
}

/// The factories a client names when it adds a field (`POST @types/<Type>`), with the kind each
/// makes. The first factory listed for a kind is the one reported for it.
pub const FACTORIES: &[(&str, FieldKind)] = &[
    ("Text line (String)", FieldKind::String),
    ("Text", FieldKind::Text),
    ("Yes/No", FieldKind::Bool),
    ("Date/Time", FieldKind::Datetime),
    ("Tuple", FieldKind::Strings),
    ("List", FieldKind::Strings),
    ("Relation List", FieldKind::Uids),
    ("Rich Text", FieldKind::Richtext),
    ("Integer", FieldKind::Int),
    ("Floating-point number", FieldKind::Float),
    ("Email", FieldKind::Email),
    ("URL", FieldKind::Url),
    ("JSONField", FieldKind::Json),
    ("File Upload", FieldKind::File),
    ("Image", FieldKind::Image),
];

impl FieldKind {
    /// The kind a factory name makes, if it is one of [`FACTORIES`].
    pub fn from_factory(factory: &str) -> Option<FieldKind> {
        FACTORIES
            .iter()
            .find(|(f, _)| *f == factory)
            .map(|(_, k)| *k)
    }

    /// The factory name reported for this kind.
    pub fn factory(self) -> &'static str {
        match self {
            FieldKind::Language => "Choice",
            FieldKind::NullableBool => "Yes/No",
            FieldKind::Blocks | FieldKind::BlocksLayout => "JSONField",
            k => FACTORIES
                .iter()
                .find(|(_, fk)| *fk == k)
                .map_or("JSONField", |(f, _)| f),
        }
    }

    /// The JSON Schema `type` of values of this kind.
    pub fn json_type(self) -> &'static str {
        match self {
            FieldKind::Bool | FieldKind::NullableBool => "boolean",
            FieldKind::Strings | FieldKind::Uids => "array",
            FieldKind::Int => "integer",
            FieldKind::Float => "number",
            FieldKind::Blocks | FieldKind::BlocksLayout | FieldKind::Json => "dict",
            FieldKind::File | FieldKind::Image => "object",
            _ => "string",
        }
    }

    /// The widget a form uses for this kind, when not the plain one of its `type`.
    pub fn widget(self) -> Option<&'static str> {
        match self {
            FieldKind::Text => Some("textarea"),
            FieldKind::Datetime => Some("datetime"),
            FieldKind::Email => Some("email"),
            FieldKind::Url => Some("url"),
            FieldKind::Richtext => Some("richtext"),
            // File and image fields name no widget, as in Plone: Volto picks its file input by
            // the `object` type (an `image` widget would be its image picker, which uploads a
            // separate Image and sends back a URL).
            FieldKind::Blocks | FieldKind::BlocksLayout | FieldKind::Json => Some("json"),
            _ => None,
        }
    }

    /// Whether values of this kind are strings with a length (`minLength`, `maxLength` apply).
    pub fn has_length(self) -> bool {
        matches!(
            self,
            FieldKind::String | FieldKind::Text | FieldKind::Email | FieldKind::Url
        )
    }
}

/// One field of a content type or behavior, as stored in the type registry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldDef {
    /// Field name as it appears in JSON.
    pub name: String,
    /// Its kind.
    pub kind: FieldKind,
    /// Must be present (and non-empty) on creation.
    #[serde(default, skip_serializing_if = "is_false")]
    pub required: bool,
    /// The value reported when the object has none stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// Accepted on write but not stored on the object (e.g. `changeNote`, kept in history).
    #[serde(default, skip_serializing_if = "is_false")]
    pub transient: bool,
    /// Label in forms.
    #[serde(default)]
    pub title: String,
    /// Help text in forms.
    #[serde(default)]
    pub description: String,
    /// The factory reported for it, when not the default of its kind ([`FieldKind::factory`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factory: Option<String>,
    /// The widget forms use, when not the default of its kind ([`FieldKind::widget`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub widget: Option<String>,
    /// The vocabulary (name under `@vocabularies`) its values come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vocabulary: Option<String>,
    /// The fieldset (form tab) it shows in; `None` is `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fieldset: Option<String>,
    /// Shortest accepted value (characters), for string kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Longest accepted value (characters), for string kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl FieldDef {
    /// A field of `kind` named `name`, with nothing else set.
    pub fn new(name: &str, kind: FieldKind) -> Self {
        FieldDef {
            name: name.to_string(),
            kind,
            required: false,
            default: None,
            transient: false,
            title: String::new(),
            description: String::new(),
            factory: None,
            widget: None,
            vocabulary: None,
            fieldset: None,
            min_length: None,
            max_length: None,
        }
    }

    /// The factory reported for this field.
    pub fn factory_name(&self) -> &str {
        self.factory.as_deref().unwrap_or(self.kind.factory())
    }

    /// The widget reported for this field, if any.
    pub fn widget_name(&self) -> Option<&str> {
        self.widget.as_deref().or(self.kind.widget())
    }

    /// The fieldset this field shows in.
    pub fn fieldset_id(&self) -> &str {
        self.fieldset.as_deref().unwrap_or("default")
    }

    /// Whether a stored value (or its absence, `None`) satisfies this definition: what a
    /// schema change checks against existing content. `Err` names the field and the problem.
    pub fn check_stored(&self, value: Option<&Value>) -> Result<()> {
        if self.transient {
            return Ok(());
        }
        match value {
            None | Some(Value::Null) => {
                if self.required && self.default.is_none() {
                    return Err(EngineError::bad_request(format!(
                        "Field '{}' is required, and stored content has no value for it",
                        self.name
                    )));
                }
                Ok(())
            }
            Some(v) => {
                // Stored forms of rich text and language differ from what clients send.
                if matches!(
                    self.kind,
                    FieldKind::Richtext | FieldKind::Language | FieldKind::File | FieldKind::Image
                ) {
                    return Ok(());
                }
                self.validate(v).map(|_| ()).map_err(|e| {
                    EngineError::bad_request(format!(
                        "Stored content does not fit the new definition of field '{}': {}",
                        self.name, e
                    ))
                })
            }
        }
    }

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
            FieldKind::Email | FieldKind::Url => json!(""),
            FieldKind::NullableBool
            | FieldKind::Datetime
            | FieldKind::Richtext
            | FieldKind::Language
            | FieldKind::Int
            | FieldKind::Float
            | FieldKind::Json
            | FieldKind::File
            | FieldKind::Image => Value::Null,
            FieldKind::Querystring => json!([]),
        }
    }

    /// `v` unless it is `null` for a required field.
    fn present(&self, v: Value) -> Result<Value> {
        if self.required && v.is_null() {
            return Err(EngineError::bad_request(format!(
                "Field '{}' is required and must not be empty",
                self.name
            )));
        }
        Ok(v)
    }

    /// Check a client-supplied value and return its stored form; a bad value is
    /// [`EngineError::Invalid`] naming this field.
    pub fn validate(&self, value: &Value) -> Result<Value> {
        self.check(value).map_err(|e| e.for_field(&self.name))
    }

    fn check(&self, value: &Value) -> Result<Value> {
        if self.required && value.is_null() {
            return self.present(Value::Null);
        }
        let wrong = |expected: &str| {
            EngineError::bad_request(format!(
                "Field '{}' must be {expected}, got {}",
                self.name,
                json_kind(value)
            ))
        };
        match self.kind {
            FieldKind::String | FieldKind::Text | FieldKind::Email | FieldKind::Url => {
                let s = value.as_str().ok_or_else(|| wrong("a string"))?;
                if self.kind != FieldKind::Text && s.contains(['\n', '\r']) {
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
                let len = s.chars().count() as u64;
                if self.min_length.is_some_and(|m| len < m && len > 0) {
                    return Err(EngineError::bad_request(format!(
                        "Field '{}' must be at least {} characters long",
                        self.name,
                        self.min_length.unwrap_or_default()
                    )));
                }
                if self.max_length.is_some_and(|m| len > m) {
                    return Err(EngineError::bad_request(format!(
                        "Field '{}' must be at most {} characters long",
                        self.name,
                        self.max_length.unwrap_or_default()
                    )));
                }
                if self.kind == FieldKind::Email && !s.is_empty() && !is_email(s) {
                    return Err(EngineError::bad_request(format!(
                        "Field '{}' must be an e-mail address, got '{s}'",
                        self.name
                    )));
                }
                Ok(value.clone())
            }
            FieldKind::Int => match value {
                Value::Null => Ok(Value::Null),
                Value::Number(n) if n.is_i64() || n.is_u64() => Ok(value.clone()),
                _ => Err(wrong("a whole number or null")),
            },
            FieldKind::Float => match value {
                Value::Null | Value::Number(_) => Ok(value.clone()),
                _ => Err(wrong("a number or null")),
            },
            FieldKind::Json => Ok(value.clone()),
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
            }
            .and_then(|v| self.present(v)),
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
            // Uploads are turned into their stored form by `crate::content::files::accept` before this
            // check; what reaches it is that form (an object naming its blob) or null.
            FieldKind::File | FieldKind::Image => match value {
                Value::Null => Ok(Value::Null),
                Value::Object(o) if o.get("blob").is_some_and(Value::is_string) => {
                    // Both are sent back as header values (Content-Type, Content-Disposition):
                    // a CR or LF would end the header (or, dropped, leave none).
                    for key in ["content-type", "filename"] {
                        if o.get(key)
                            .and_then(Value::as_str)
                            .is_some_and(has_control_characters)
                        {
                            return Err(EngineError::bad_request(format!(
                                "Field '{}': '{key}' must not contain control characters \
                                 (CR, LF, tab, ...)",
                                self.name
                            )));
                        }
                    }
                    Ok(value.clone())
                }
                _ => Err(wrong(
                    "an upload {data, encoding, filename, content-type} or null",
                )),
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

/// The regular expression (ECMA-262, as JSON Schema uses) of what [`is_email`] accepts, or empty.
const EMAIL_PATTERN: &str = r"^$|^[^@\s,]+@[^@\s,.][^@\s,]*\.[^@\s,]*[^@\s,.]$";

/// The regular expression of the forms [`parse_datetime`] reads (the calendar's ranges, such as
/// month 13, are the parse's alone).
const DATETIME_PATTERN: &str = r"^\d{4}-\d{2}-\d{2}(|[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})|T\d{2}:\d{2}(:\d{2}(\.\d+)?)?| \d{2}:\d{2}:\d{2})$";

/// The shared schemas [`FieldDef::input_schema`] refers to by name (`{refs}<name>`), each the
/// JSON Schema of what the matching check of [`FieldDef::validate`] (or of
/// [`blocks`], or of a file field's upload) accepts.
pub fn shared_input_schemas(refs: &str) -> Vec<(&'static str, Value)> {
    let codes: Vec<String> = language::all()
        .iter()
        .map(|(code, _)| {
            // case-insensitive, as `language::title` compares
            code.chars()
                .map(|c| {
                    if c.is_ascii_alphabetic() {
                        format!("[{}{}]", c.to_ascii_lowercase(), c.to_ascii_uppercase())
                    } else if c.is_ascii_alphanumeric() {
                        c.to_string()
                    } else {
                        format!("\\{c}")
                    }
                })
                .collect()
        })
        .collect();
    vec![
        (
            "LanguageCode",
            json!({
                "description": "A language code the service knows (any letter case)",
                "type": "string",
                "pattern": format!("^(?:{})$", codes.join("|")),
            }),
        ),
        (
            "Upload",
            json!({
                "description": "A file as a client sends it: `data` as text, or base64 with \
                                `encoding: base64`. Its size limit and, for an image field, that \
                                the bytes are an image, are checked when it is stored.",
                "type": "object",
                "required": ["data"],
                "properties": {
                    "data": {"type": "string"},
                    "encoding": {"enum": ["base64", "utf-8", "utf8", null]},
                    "filename": {"type": ["string", "null"]},
                    "content-type": {"type": ["string", "null"]},
                },
                "additionalProperties": false,
            }),
        ),
        (
            "Blocks",
            json!({
                "description": "Volto blocks: block id to block, each with its `@type`",
                "type": "object",
                "propertyNames": {"minLength": 1},
                "additionalProperties": {
                    "type": "object",
                    "required": ["@type"],
                    "properties": {"@type": {"type": "string"}},
                    "if": {"properties": {"@type": {"const": "slate"}}},
                    "then": {
                        "properties": {
                            "value": {"type": "array", "items": {"$ref": format!("{refs}SlateNode")}},
                            "plaintext": {"type": "string"},
                        },
                    },
                },
            }),
        ),
        (
            "SlateNode",
            json!({
                "description": "A node of a slate block's value (at most 64 levels deep)",
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": format!("{refs}SlateNode")}},
                },
            }),
        ),
        (
            "BlocksLayout",
            json!({
                "description": "The order of the blocks: their ids (each must name a block)",
                "type": "object",
                "required": ["items"],
                "properties": {"items": {"type": "array", "items": {"type": "string"}}},
            }),
        ),
        (
            "QueryRow",
            json!({
                "description": "One criterion of a querystring query",
                "type": "object",
                "required": ["i", "o"],
                "properties": {"i": {"type": "string"}, "o": {"type": "string"}, "v": {}},
                "additionalProperties": false,
            }),
        ),
    ]
}

impl FieldDef {
    /// The JSON Schema (draft 2020-12) of the values [`FieldDef::validate`] accepts from a client
    /// for this field, written next to it and mirroring it kind by kind; shared parts are
    /// `$ref`s to `{refs}<name>` ([`shared_input_schemas`]). `creating`: the body adds an object
    /// (on an edit, a file field also takes back the representation it serves, which keeps the
    /// file). What depends on the site (a file's size limit, an image's bytes, which objects
    /// exist) is the parse's alone.
    pub fn input_schema(&self, refs: &str, creating: bool) -> Value {
        let r = |name: &str| json!({ "$ref": format!("{refs}{name}") });
        let nullable = |t: &str| {
            if self.required {
                json!(t)
            } else {
                json!([t, "null"])
            }
        };
        let mut any: Vec<Value> = Vec::new();
        let mut schema = match self.kind {
            FieldKind::String | FieldKind::Text | FieldKind::Email | FieldKind::Url => {
                let mut all = vec![json!({"type": "string"})];
                if self.kind != FieldKind::Text {
                    all.push(json!({"pattern": "^[^\\r\\n]*$"}));
                }
                if self.required {
                    all.push(json!({"pattern": "\\S"}));
                }
                if let Some(m) = self.min_length {
                    all.push(json!({"anyOf": [{"maxLength": 0}, {"minLength": m}]}));
                }
                if let Some(m) = self.max_length {
                    all.push(json!({"maxLength": m}));
                }
                if self.kind == FieldKind::Email {
                    all.push(json!({"pattern": EMAIL_PATTERN}));
                }
                if all.len() == 1 {
                    all.remove(0)
                } else {
                    json!({ "allOf": all })
                }
            }
            FieldKind::Int => json!({ "type": nullable("integer") }),
            FieldKind::Float => json!({ "type": nullable("number") }),
            FieldKind::Bool => json!({"type": "boolean"}),
            FieldKind::NullableBool => json!({ "type": nullable("boolean") }),
            FieldKind::Json if self.required => json!({"not": {"type": "null"}}),
            FieldKind::Json => json!({}),
            FieldKind::Datetime => {
                any.push(json!({"type": "string", "pattern": DATETIME_PATTERN}));
                if !self.required {
                    any.push(json!({"enum": ["", null]}));
                }
                json!({})
            }
            FieldKind::Strings | FieldKind::Uids => {
                json!({"type": "array", "items": {"type": "string"}})
            }
            FieldKind::Language => {
                any.push(r("LanguageCode"));
                any.push(json!({
                    "type": "object",
                    "required": ["token"],
                    "properties": {"token": r("LanguageCode")},
                }));
                json!({})
            }
            FieldKind::Blocks => r("Blocks"),
            FieldKind::BlocksLayout => r("BlocksLayout"),
            FieldKind::Richtext => {
                any.push(json!({"type": "string"}));
                any.push(json!({
                    "type": "object",
                    "required": ["data"],
                    "properties": {"data": {"type": "string"}},
                }));
                if !self.required {
                    any.push(json!({"type": "null"}));
                }
                json!({})
            }
            FieldKind::File | FieldKind::Image => {
                any.push(if self.kind == FieldKind::Image {
                    json!({
                        "allOf": [r("Upload")],
                        "description": "An image (that the bytes decode as one is checked when \
                                        it is stored)",
                        "contentMediaType": "image/*",
                    })
                } else {
                    r("Upload")
                });
                if !creating {
                    any.push(json!({
                        "description": "The field as served, sent back: the file is kept",
                        "type": "object",
                        "not": {"required": ["data"]},
                    }));
                }
                if !self.required {
                    any.push(json!({"type": "null"}));
                }
                json!({})
            }
            FieldKind::Querystring => json!({"type": "array", "items": r("QueryRow")}),
        };
        if !any.is_empty() {
            schema = json!({ "anyOf": any });
        }
        if let Value::Object(m) = &mut schema {
            if !self.title.is_empty() {
                m.insert("title".into(), json!(self.title));
            }
            if !self.description.is_empty() {
                m.insert("description".into(), json!(self.description));
            }
        }
        schema
    }
}

/// Whether `s` holds a control character (CR, LF, tab, NUL, DEL, ...): such a text cannot be a
/// header value (an upload's media type or file name).
pub fn has_control_characters(s: &str) -> bool {
    s.chars().any(char::is_control)
}

/// Whether `s` is an e-mail address: `local@domain.tld`-shaped, without whitespace or commas.
/// The engine's one address check: [`crate::automation::mail::is_address`] (mail, forms, rules) is this.
pub fn is_email(s: &str) -> bool {
    match s.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !domain.contains('@')
                && !s.chars().any(|c| c.is_whitespace() || c == ',')
        }
        None => false,
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
        FieldDef::new("f", kind)
    }

    #[test]
    fn new_kinds_validate() {
        assert!(def(FieldKind::Email).validate(&json!("a@b.org")).is_ok());
        assert!(def(FieldKind::Email).validate(&json!("nope")).is_err());
        assert!(def(FieldKind::Int).validate(&json!(3)).is_ok());
        assert!(def(FieldKind::Int).validate(&json!(3.5)).is_err());
        let mut short = def(FieldKind::String);
        short.max_length = Some(3);
        assert!(short.validate(&json!("abcd")).is_err());
        assert_eq!(FieldKind::from_factory("Email"), Some(FieldKind::Email));
        assert_eq!(FieldKind::Strings.factory(), "Tuple");
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
