//! Form blocks (`@plone/volto-form-block`'s `schemaForm` block): submissions are checked against
//! the block's JSON Schema (`schema: {fieldsets, properties, required}`) and, when the block says
//! `store: true`, kept under `d:<uid>:<block id>:<seq>` ([`Submission`]), numbered by the
//! counter `n:<uid>:f:<block id>`. Editors read them back and export them.
//!
//! The schema checks: every key of the data must be a field of the schema; required fields must
//! be present and not empty; values must have their field's type (`string`, `number`,
//! `integer`, `boolean`, `array`), stay within `minLength`/`maxLength` and
//! `minimum`/`maximum`, be one of the field's `choices` when it has them, and be an e-mail
//! address for e-mail fields (`widget: "email"`, `format: "email"` or a factory naming e-mail).
//! A failing submission is a 400 naming the field, and nothing is stored.
//!
//! There is no mail delivery yet: a block without `store: true` validates the submission and
//! keeps nothing.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::content::counters;
use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::core::model::ContentRecord;
use crate::runtime::context::Ctx;
use crate::runtime::subscriber::Subscriber;

/// The block type whose submissions this module takes.
pub const FORM_BLOCK: &str = "schemaForm";

/// Longest text accepted for one value, in characters.
pub const MAX_VALUE_CHARS: usize = 10_000;

/// One stored submission.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Submission {
    /// The submitted values, checked against the block's schema.
    pub data: Map<String, Value>,
    /// When it was submitted.
    pub created: DateTime<Utc>,
}

/// The form block `block_id` of `obj` (a 400 naming `block_id` when there is none).
pub fn block<'o>(obj: &'o ContentRecord, block_id: &str) -> Result<&'o Map<String, Value>> {
    let found = obj
        .fields
        .get("blocks")
        .and_then(|b| b.get(block_id))
        .and_then(Value::as_object);
    match found {
        Some(b) if b.get("@type").and_then(Value::as_str) == Some(FORM_BLOCK) => Ok(b),
        Some(_) => Err(EngineError::bad_request(format!(
            "Invalid property 'block_id': block '{block_id}' is not a form block"
        ))),
        None => Err(EngineError::bad_request(format!(
            "Invalid property 'block_id': no block '{block_id}' here"
        ))),
    }
}

fn schema(block: &Map<String, Value>) -> (Map<String, Value>, Vec<String>) {
    let s = block.get("schema");
    let properties = s
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required = s
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    (properties, required)
}

/// The block's fields in form order (its fieldsets' order, then any other property), each with
/// its title: the columns of an export.
pub fn columns(block: &Map<String, Value>) -> Vec<(String, String)> {
    let (properties, _) = schema(block);
    let mut names: Vec<String> = Vec::new();
    if let Some(fieldsets) = block
        .get("schema")
        .and_then(|s| s.get("fieldsets"))
        .and_then(Value::as_array)
    {
        for fs in fieldsets {
            for f in fs
                .get("fields")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(f) = f.as_str() {
                    if properties.contains_key(f) && !names.iter().any(|n| n == f) {
                        names.push(f.to_string());
                    }
                }
            }
        }
    }
    for k in properties.keys() {
        if !names.contains(k) {
            names.push(k.clone());
        }
    }
    names
        .into_iter()
        .map(|n| {
            let title = properties
                .get(&n)
                .and_then(|p| p.get("title"))
                .and_then(Value::as_str)
                .unwrap_or(&n)
                .to_string();
            (n, title)
        })
        .collect()
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

fn is_email_field(def: &Value) -> bool {
    let has = |k: &str| {
        def.get(k)
            .and_then(Value::as_str)
            .is_some_and(|s| s.to_ascii_lowercase().contains("email"))
    };
    has("widget") || has("format") || has("factory")
}

fn looks_like_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !s.chars().any(|c| c.is_whitespace() || c == ',')
        && !domain.contains('@')
}

/// The values `choices` allows (`[[value, label], ...]` or `[value, ...]`), if it lists any.
fn choices(def: &Value) -> Option<Vec<Value>> {
    let list = def
        .get("choices")
        .or_else(|| def.get("items").and_then(|i| i.get("choices")))
        .and_then(Value::as_array)?;
    Some(
        list.iter()
            .map(|c| match c {
                Value::Array(pair) => pair.first().cloned().unwrap_or(Value::Null),
                other => other.clone(),
            })
            .collect(),
    )
}

fn check_value(name: &str, def: &Value, v: &Value) -> Result<()> {
    let bad =
        |why: String| EngineError::bad_request(format!("Invalid property 'data.{name}': {why}"));
    let ty = def.get("type").and_then(Value::as_str).unwrap_or("string");
    let ok_type = match ty {
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64(),
        "boolean" => v.is_boolean(),
        "array" => v
            .as_array()
            .is_some_and(|a| a.iter().all(|x| !x.is_object() && !x.is_array())),
        "object" => v.is_object(),
        _ => true,
    };
    if !ok_type {
        return Err(bad(format!(
            "expected {}, got {}",
            match ty {
                "integer" => "an integer",
                "array" => "a list of values",
                "object" => "an object",
                "boolean" => "a boolean",
                "number" => "a number",
                _ => "a string",
            },
            crate::core::model::fields::json_kind(v)
        )));
    }
    if let Some(s) = v.as_str() {
        let n = s.chars().count();
        if n > MAX_VALUE_CHARS {
            return Err(bad(format!("longer than {MAX_VALUE_CHARS} characters")));
        }
        if let Some(max) = def.get("maxLength").and_then(Value::as_u64) {
            if n as u64 > max {
                return Err(bad(format!("longer than {max} characters")));
            }
        }
        if let Some(min) = def.get("minLength").and_then(Value::as_u64) {
            if (n as u64) < min {
                return Err(bad(format!("shorter than {min} characters")));
            }
        }
        if is_email_field(def) && !looks_like_email(s) {
            return Err(bad(format!("'{s}' is not an e-mail address")));
        }
    }
    if let Some(x) = v.as_f64() {
        if let Some(min) = def.get("minimum").and_then(Value::as_f64) {
            if x < min {
                return Err(bad(format!("less than the minimum {min}")));
            }
        }
        if let Some(max) = def.get("maximum").and_then(Value::as_f64) {
            if x > max {
                return Err(bad(format!("more than the maximum {max}")));
            }
        }
    }
    if let Some(allowed) = choices(def) {
        let values: Vec<&Value> = match v {
            Value::Array(a) => a.iter().collect(),
            other => vec![other],
        };
        if let Some(bad_value) = values.into_iter().find(|x| !allowed.contains(x)) {
            return Err(bad(format!("{bad_value} is not one of the choices")));
        }
    }
    Ok(())
}

/// Check `data` against the form block's schema (see the module documentation); the values to
/// store (empty optional values left out).
pub fn validate(
    block: &Map<String, Value>,
    data: &Map<String, Value>,
) -> Result<Map<String, Value>> {
    let (properties, required) = schema(block);
    if let Some(unknown) = data.keys().find(|k| !properties.contains_key(*k)) {
        return Err(EngineError::bad_request(format!(
            "Invalid property 'data.{unknown}': not a field of the form"
        )));
    }
    for r in &required {
        if data.get(r).is_none_or(is_empty) {
            return Err(EngineError::bad_request(format!(
                "Invalid property 'data.{r}': the field is required"
            )));
        }
    }
    let mut out = Map::new();
    for (name, v) in data {
        if is_empty(v) {
            continue;
        }
        check_value(name, &properties[name], v)?;
        out.insert(name.clone(), v.clone());
    }
    Ok(out)
}

/// Take a submission of the form block `block_id` of `obj`: checked, and stored when the block
/// stores its data ([`Event::FormSubmitted`]). Whether it was stored.
pub fn submit(
    ctx: &mut Ctx<'_>,
    obj: &ContentRecord,
    block_id: &str,
    data: &Map<String, Value>,
) -> Result<bool> {
    let b = block(obj, block_id)?;
    let clean = validate(b, data)?;
    if b.get("store").and_then(Value::as_bool) != Some(true) {
        return Ok(false);
    }
    let seq = counters::next(ctx, &keys::form_counter(&obj.uid, block_id))?;
    let s = Submission {
        data: clean,
        created: ctx.now(),
    };
    ctx.put_json(&keys::form_submission(&obj.uid, block_id, seq), &s)?;
    ctx.emit(Event::FormSubmitted {
        uid: obj.uid.clone(),
        path: obj.path.clone(),
        block_id: block_id.to_string(),
    });
    Ok(true)
}

/// The stored submissions of the form block `block_id` of `obj`, oldest first.
pub fn submissions(ctx: &Ctx<'_>, obj: &ContentRecord, block_id: &str) -> Result<Vec<Submission>> {
    ctx.values_with_prefix(&keys::form_submissions_prefix(&obj.uid, block_id))
}

/// Delete the stored submissions of the form block `block_id` of `obj`
/// ([`Event::FormDataCleared`]).
pub fn clear(ctx: &mut Ctx<'_>, obj: &ContentRecord, block_id: &str) -> Result<()> {
    ctx.delete_prefix(&keys::form_submissions_prefix(&obj.uid, block_id))?;
    ctx.emit(Event::FormDataCleared {
        uid: obj.uid.clone(),
        path: obj.path.clone(),
        block_id: block_id.to_string(),
    });
    Ok(())
}

/// Deletes the stored submissions of removed objects.
pub struct FormsSubscriber;

impl Subscriber for FormsSubscriber {
    fn name(&self) -> &'static str {
        "forms"
    }

    fn on_event(&self, ctx: &mut Ctx<'_>, event: &Event) -> Result<()> {
        if let Event::Removed { uid, .. } = event {
            ctx.delete_prefix(&keys::form_data_prefix(uid))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> Map<String, Value> {
        json!({
            "@type": "schemaForm",
            "schema": {
                "fieldsets": [{"id": "default", "fields": ["name", "email", "age", "topics"]}],
                "properties": {
                    "name": {"title": "Name", "type": "string", "maxLength": 20},
                    "email": {"title": "E-mail", "type": "string", "widget": "email"},
                    "age": {"title": "Age", "type": "integer", "minimum": 0},
                    "topics": {"title": "Topics", "type": "array", "items": {"choices": [["a", "A"], ["b", "B"]]}}
                },
                "required": ["name", "email"]
            }
        })
        .as_object()
        .cloned()
        .unwrap()
    }

    fn check(data: Value) -> std::result::Result<Map<String, Value>, String> {
        validate(&form(), data.as_object().unwrap()).map_err(|e| e.to_string())
    }

    #[test]
    fn submissions_are_checked_against_the_schema() {
        assert!(check(json!({"name": "Ann", "email": "ann@example.com", "topics": ["a"]})).is_ok());
        for (data, field) in [
            (json!({"email": "ann@example.com"}), "data.name"),
            (json!({"name": "", "email": "ann@example.com"}), "data.name"),
            (json!({"name": "Ann", "email": "nope"}), "data.email"),
            (
                json!({"name": "Ann", "email": "a@b.c", "age": -1}),
                "data.age",
            ),
            (
                json!({"name": "Ann", "email": "a@b.c", "age": "3"}),
                "data.age",
            ),
            (
                json!({"name": "Ann", "email": "a@b.c", "topics": ["c"]}),
                "data.topics",
            ),
            (
                json!({"name": "A".repeat(21), "email": "a@b.c"}),
                "data.name",
            ),
            (
                json!({"name": "Ann", "email": "a@b.c", "colour": "red"}),
                "data.colour",
            ),
        ] {
            let e = check(data.clone()).unwrap_err();
            assert!(e.contains(field), "{data}: {e}");
        }
    }

    #[test]
    fn columns_follow_the_fieldsets() {
        let cols: Vec<String> = columns(&form()).into_iter().map(|(_, t)| t).collect();
        assert_eq!(cols, ["Name", "E-mail", "Age", "Topics"]);
    }
}
