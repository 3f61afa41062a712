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
    /// A calendar date without a time (`2026-11-28`), or `null`.
    Date,
    /// One of the field's own [`FieldDef::values`], stored as its token and read back as
    /// `{token, title}`; or `null`.
    Choice,
    /// Several of the field's own [`FieldDef::values`] (no token twice), stored as tokens and
    /// read back as a list of `{token, title}`.
    MultipleChoice,
    /// A one-line secret: stored as a salted hash, never read back (`null`).
    Password,
    /// One related object (a UID; a path, URL or an object carrying `UID` or `@id` is accepted
    /// and stored as the UID), read back as the object's summary; or `null`.
    RelationChoice,
}

/// One factory a client may name when it adds a field (`POST @types/<Type>`): the field
/// factories vocabulary's token and title (plone.schemaeditor's), and the kind it makes.
#[derive(Debug, Clone, Copy)]
pub struct Factory {
    /// The vocabulary token (`label_textline_field`); a client may name a factory by it.
    pub token: &'static str,
    /// The title (`Text line (String)`), also accepted as its name and reported as a field's
    /// `factory`.
    pub title: &'static str,
    /// The kind of field it makes.
    pub kind: FieldKind,
    /// Whether the field factories vocabulary lists it (`Tuple` and `List` are accepted, and
    /// reported for built-in fields, but not offered, as in Plone).
    pub listed: bool,
}

const fn factory(token: &'static str, title: &'static str, kind: FieldKind) -> Factory {
    Factory {
        token,
        title,
        kind,
        listed: true,
    }
}

/// The factories a client names when it adds a field (`POST @types/<Type>`), by token or by
/// title, in the order (by title) the field factories vocabulary lists them: Plone 6's twenty
/// (plone.schemaeditor's, plone.schema's and plone.app.relationfield's). The first factory of a
/// kind is the one reported for it; `Full Name` is a text line and the second `Email`
/// (`label_email`) an e-mail address, reported as such.
pub const FACTORIES: &[Factory] = &[
    factory("label_choice_field", "Choice", FieldKind::Choice),
    factory("label_date_field", "Date", FieldKind::Date),
    factory("label_datetime_field", "Date/Time", FieldKind::Datetime),
    factory("Email", "Email", FieldKind::Email),
    factory("label_email", "Email", FieldKind::Email),
    factory("File Upload", "File Upload", FieldKind::File),
    factory(
        "label_float_field",
        "Floating-point number",
        FieldKind::Float,
    ),
    factory("label_full_name", "Full Name", FieldKind::String),
    factory("Image", "Image", FieldKind::Image),
    factory("label_integer_field", "Integer", FieldKind::Int),
    factory("JSONField", "JSONField", FieldKind::Json),
    factory(
        "label_multi_choice_field",
        "Multiple Choice",
        FieldKind::MultipleChoice,
    ),
    factory("label_password_field", "Password", FieldKind::Password),
    factory(
        "Relation Choice",
        "Relation Choice",
        FieldKind::RelationChoice,
    ),
    factory("Relation List", "Relation List", FieldKind::Uids),
    factory("Rich Text", "Rich Text", FieldKind::Richtext),
    factory("label_text_field", "Text", FieldKind::Text),
    factory(
        "label_textline_field",
        "Text line (String)",
        FieldKind::String,
    ),
    factory("URL", "URL", FieldKind::Url),
    factory("label_boolean_field", "Yes/No", FieldKind::Bool),
    Factory {
        token: "Tuple",
        title: "Tuple",
        kind: FieldKind::Strings,
        listed: false,
    },
    Factory {
        token: "List",
        title: "List",
        kind: FieldKind::Strings,
        listed: false,
    },
];

impl FieldKind {
    /// The kind a factory name (a token or a title of [`FACTORIES`]) makes, if any.
    pub fn from_factory(factory: &str) -> Option<FieldKind> {
        factory_named(factory).map(|f| f.kind)
    }

    /// The factory name reported for this kind.
    pub fn factory(self) -> &'static str {
        match self {
            FieldKind::Language => "Choice",
            FieldKind::NullableBool => "Yes/No",
            FieldKind::Blocks | FieldKind::BlocksLayout => "JSONField",
            FieldKind::Strings => "Tuple",
            FieldKind::String => "Text line (String)",
            k => FACTORIES
                .iter()
                .find(|f| f.kind == k)
                .map_or("JSONField", |f| f.title),
        }
    }

    /// Whether fields of this kind take their values from their own list ([`FieldDef::values`]).
    pub fn has_values(self) -> bool {
        matches!(self, FieldKind::Choice | FieldKind::MultipleChoice)
    }

    /// The JSON Schema `type` of values of this kind.
    pub fn json_type(self) -> &'static str {
        match self {
            FieldKind::Bool | FieldKind::NullableBool => "boolean",
            FieldKind::Strings | FieldKind::Uids | FieldKind::MultipleChoice => "array",
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
            FieldKind::Date => Some("date"),
            FieldKind::Password => Some("password"),
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
            FieldKind::String
                | FieldKind::Text
                | FieldKind::Email
                | FieldKind::Url
                | FieldKind::Password
        )
    }
}

/// The factory named `name` (its token or its title), if any.
pub fn factory_named(name: &str) -> Option<&'static Factory> {
    FACTORIES
        .iter()
        .find(|f| f.token == name || f.title == name)
}

/// One value a Choice or Multiple Choice field offers: the token stored and sent, and the title
/// shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChoiceValue {
    /// What is stored and sent.
    pub token: String,
    /// What forms show.
    pub title: String,
}

impl ChoiceValue {
    /// A value in plone.schemaeditor's line form: `token`, or `token|title`.
    pub fn from_line(line: &str) -> ChoiceValue {
        match line.split_once('|') {
            Some((token, title)) => ChoiceValue {
                token: token.trim().to_string(),
                title: title.trim().to_string(),
            },
            None => ChoiceValue {
                token: line.trim().to_string(),
                title: line.trim().to_string(),
            },
        }
    }
}

/// Check the values of a Choice or Multiple Choice field `name`: each token non-empty, on one
/// line and given once. `Err` names the field and the value.
pub fn check_values(name: &str, values: &[ChoiceValue]) -> Result<()> {
    for (i, v) in values.iter().enumerate() {
        if v.token.is_empty() || has_control_characters(&v.token) || v.token.contains('|') {
            return Err(EngineError::Invalid {
                field: "values".into(),
                message: format!(
                    "Value {} of field '{name}' needs a token of one line without '|', got '{}'",
                    i + 1,
                    v.token
                ),
            });
        }
        if values[..i].iter().any(|o| o.token == v.token) {
            return Err(EngineError::Invalid {
                field: "values".into(),
                message: format!("Field '{name}' lists the value '{}' twice", v.token),
            });
        }
    }
    Ok(())
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
    /// The values a Choice or Multiple Choice field offers (given when it is added, changed
    /// through `@types`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<ChoiceValue>>,
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
            values: None,
        }
    }

    /// The values this field offers (none for kinds without values).
    pub fn choice_values(&self) -> &[ChoiceValue] {
        self.values.as_deref().unwrap_or_default()
    }

    /// The value with token `token`, if this field offers it.
    pub fn choice(&self, token: &str) -> Option<&ChoiceValue> {
        self.choice_values().iter().find(|v| v.token == token)
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
            // A required field may be new, or newly required, on a type with content (as in
            // Plone): such objects stay without a value until an edit supplies one
            // (`crate::content::operations` refuses an edit that does not).
            None | Some(Value::Null) => Ok(()),
            Some(v) => {
                // Stored forms of rich text, language, files and passwords differ from what
                // clients send.
                if matches!(
                    self.kind,
                    FieldKind::Richtext
                        | FieldKind::Language
                        | FieldKind::File
                        | FieldKind::Image
                        | FieldKind::Password
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

    /// Whether this field's `default` (if any) is a value it accepts; a Password field takes
    /// none (a default would be kept in clear in the type). `Err` names the field.
    pub fn check_default(&self) -> Result<()> {
        let Some(d) = self.default.as_ref().filter(|d| !d.is_null()) else {
            return Ok(());
        };
        if self.kind == FieldKind::Password {
            return Err(EngineError::bad_request(format!(
                "Field '{}' is a Password field, which takes no default",
                self.name
            )));
        }
        self.validate(d).map(|_| ()).map_err(|e| {
            EngineError::bad_request(format!("Invalid default of field '{}': {e}", self.name))
        })
    }

    /// The value to report when nothing is stored.
    pub fn default_value(&self) -> Value {
        if let Some(v) = &self.default {
            return v.clone();
        }
        match self.kind {
            FieldKind::String | FieldKind::Text => json!(""),
            FieldKind::Bool => json!(false),
            FieldKind::Strings | FieldKind::Uids | FieldKind::MultipleChoice => json!([]),
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
            | FieldKind::Image
            | FieldKind::Date
            | FieldKind::Choice
            | FieldKind::Password
            | FieldKind::RelationChoice => Value::Null,
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
            FieldKind::String
            | FieldKind::Text
            | FieldKind::Email
            | FieldKind::Url
            | FieldKind::Password => {
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
            FieldKind::Date => match value {
                Value::Null => Ok(Value::Null),
                Value::String(s) if s.is_empty() => Ok(Value::Null),
                Value::String(s) => parse_date(s)
                    .map(|d| Value::String(d.format("%Y-%m-%d").to_string()))
                    .ok_or_else(|| {
                        EngineError::bad_request(format!(
                            "Field '{}' must be a date (YYYY-MM-DD), got '{s}'",
                            self.name
                        ))
                    }),
                _ => Err(wrong("a date string (YYYY-MM-DD) or null")),
            }
            .and_then(|v| self.present(v)),
            FieldKind::Choice => match value {
                Value::Null => Ok(Value::Null),
                _ => self.token_of(value).map(Value::String),
            },
            FieldKind::MultipleChoice => {
                let arr = value
                    .as_array()
                    .ok_or_else(|| wrong("an array of tokens"))?;
                let mut out: Vec<String> = Vec::with_capacity(arr.len());
                for item in arr {
                    let token = self.token_of(item)?;
                    if out.contains(&token) {
                        return Err(EngineError::bad_request(format!(
                            "Field '{}' lists '{token}' twice",
                            self.name
                        )));
                    }
                    out.push(token);
                }
                if self.required && out.is_empty() {
                    return self.present(Value::Null);
                }
                Ok(json!(out))
            }
            // A reference is turned into the UID it names (which must exist) by
            // `crate::content::operations` before this check.
            FieldKind::RelationChoice => match value {
                Value::Null | Value::String(_) => Ok(value.clone()),
                _ => Err(wrong("a UID or null")),
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

impl FieldDef {
    /// The token a client's value of a Choice names (the token, or `{token, ...}`), if this field
    /// offers it.
    fn token_of(&self, value: &Value) -> Result<String> {
        let token = match value {
            Value::String(s) => s.as_str(),
            Value::Object(o) => o.get("token").and_then(Value::as_str).ok_or_else(|| {
                EngineError::bad_request(format!(
                    "Field '{}' must be a token or {{token, title}}, got an object without \
                     'token'",
                    self.name
                ))
            })?,
            other => {
                return Err(EngineError::bad_request(format!(
                    "Field '{}' must be a token, got {}",
                    self.name,
                    json_kind(other)
                )))
            }
        };
        match self.choice(token) {
            Some(v) => Ok(v.token.clone()),
            None => Err(EngineError::bad_request(format!(
                "Field '{}': '{token}' is not one of its values ({})",
                self.name,
                self.choice_values()
                    .iter()
                    .map(|v| v.token.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }
}

/// A calendar date `YYYY-MM-DD` (exactly: a date field keeps no time).
pub fn parse_date(s: &str) -> Option<NaiveDate> {
    if s.len() != 10 {
        return None;
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()
}

/// The regular expression of the form [`parse_date`] reads.
const DATE_PATTERN: &str = r"^\d{4}-\d{2}-\d{2}$";

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
            FieldKind::String
            | FieldKind::Text
            | FieldKind::Email
            | FieldKind::Url
            | FieldKind::Password => {
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
            FieldKind::Date => {
                any.push(json!({"type": "string", "pattern": DATE_PATTERN}));
                if !self.required {
                    any.push(json!({"enum": ["", null]}));
                }
                json!({})
            }
            FieldKind::Choice | FieldKind::MultipleChoice => {
                let tokens: Vec<&str> = self
                    .choice_values()
                    .iter()
                    .map(|v| v.token.as_str())
                    .collect();
                let one = json!({"anyOf": [
                    {"enum": tokens},
                    {"type": "object", "required": ["token"],
                     "properties": {"token": {"enum": tokens}}},
                ]});
                if self.kind == FieldKind::MultipleChoice {
                    // no token twice (`{token}` objects and plain tokens alike: the parse's)
                    let mut items = json!({"type": "array", "items": one, "uniqueItems": true});
                    if self.required {
                        items["minItems"] = json!(1);
                    }
                    items
                } else {
                    any.push(one);
                    if !self.required {
                        any.push(json!({"type": "null"}));
                    }
                    json!({})
                }
            }
            FieldKind::RelationChoice => {
                any.push(json!({"type": "string"}));
                any.push(json!({
                    "type": "object",
                    "anyOf": [{"required": ["UID"]}, {"required": ["@id"]}],
                }));
                if !self.required {
                    any.push(json!({"type": "null"}));
                }
                // UID, path or URL; that it names an object is the parse's
                json!({})
            }
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
    fn factories_are_named_by_token_or_title() {
        assert_eq!(
            FieldKind::from_factory("label_choice_field"),
            Some(FieldKind::Choice)
        );
        assert_eq!(
            FieldKind::from_factory("Multiple Choice"),
            Some(FieldKind::MultipleChoice)
        );
        assert_eq!(
            FieldKind::from_factory("label_email"),
            Some(FieldKind::Email)
        );
        assert_eq!(FieldKind::from_factory("Tuple"), Some(FieldKind::Strings));
        assert_eq!(FieldKind::from_factory("label_colour_field"), None);
        // `Full Name` makes a text line, which still reports its own factory
        assert_eq!(FieldKind::String.factory(), "Text line (String)");
        assert_eq!(FACTORIES.iter().filter(|f| f.listed).count(), 20);
    }

    #[test]
    fn dates_keep_no_time() {
        let d = def(FieldKind::Date);
        assert_eq!(
            d.validate(&json!("2026-11-28")).unwrap(),
            json!("2026-11-28")
        );
        assert_eq!(d.validate(&json!("")).unwrap(), Value::Null);
        assert!(d.validate(&json!("2026-11-28T10:00:00Z")).is_err());
        assert!(d.validate(&json!("2026-02-30")).is_err());
        assert!(d.validate(&json!("2026-1-5")).is_err());
    }

    #[test]
    fn choices_take_their_own_values() {
        let mut c = def(FieldKind::Choice);
        c.values = Some(vec![
            ChoiceValue::from_line("red|Red"),
            ChoiceValue::from_line("blue"),
        ]);
        assert_eq!(c.choice("blue").map(|v| v.title.as_str()), Some("blue"));
        assert_eq!(c.validate(&json!("red")).unwrap(), json!("red"));
        assert_eq!(
            c.validate(&json!({"token": "blue"})).unwrap(),
            json!("blue")
        );
        assert!(c.validate(&json!("green")).is_err());
        assert!(c.validate(&json!(["red"])).is_err());
        let mut m = c.clone();
        m.kind = FieldKind::MultipleChoice;
        assert_eq!(
            m.validate(&json!(["blue", {"token": "red"}])).unwrap(),
            json!(["blue", "red"])
        );
        assert!(m.validate(&json!(["red", "red"])).is_err());
        assert!(m.validate(&json!("red")).is_err());
        assert!(check_values(
            "f",
            &[ChoiceValue::from_line("a"), ChoiceValue::from_line("a|A")]
        )
        .is_err());
        assert!(check_values("f", &[ChoiceValue::from_line("|A")]).is_err());
    }

    #[test]
    fn a_missing_required_value_does_not_block_a_schema_change() {
        let mut f = def(FieldKind::String);
        f.required = true;
        assert!(f.check_stored(None).is_ok());
        f.max_length = Some(2);
        assert!(f.check_stored(Some(&json!("abc"))).is_err());
    }

    #[test]
    fn language_accepts_token_objects() {
        let v = def(FieldKind::Language)
            .validate(&json!({"token": "de", "title": "Deutsch"}))
            .unwrap();
        assert_eq!(v, json!("de"));
    }
}
