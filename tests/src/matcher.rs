//! Matching actual JSON against an expected pattern with placeholders.
//!
//! A string in the pattern is either a placeholder (the whole string is `{{...}}`) or a literal in
//! which `{base}` and `{{var:NAME}}` are substituted. Placeholders (combine several with `|`, all must
//! hold, e.g. `{{uid|save:page_uid}}`):
//!
//! | placeholder | matches |
//! |---|---|
//! | `{{uid}}` | a string of 32 lowercase hex digits |
//! | `{{timestamp}}` | an ISO 8601 timestamp string (`2026-01-01T12:00:00+00:00`, `...Z`, fractions) |
//! | `{{jwt}}` | a string of three non-empty base64url parts separated by dots |
//! | `{{string}}` | any string |
//! | `{{int}}` | any integer |
//! | `{{bool}}` | `true` or `false` |
//! | `{{any}}` | any value, including `null` |
//! | `{{absent}}` | (as an object's value) the key must be missing, in subset mode too |
//! | `{{contains:TEXT}}` | a string containing TEXT (`{base}` and `{{var:...}}` are not expanded in TEXT) |
//! | `{{save:NAME}}` | anything; stores the value as variable NAME |
//! | `{{var:NAME}}` | a value equal to the stored variable NAME |

use std::collections::BTreeMap;

use serde_json::Value;

use crate::scenario::MatchMode;

/// Variables saved by `{{save:NAME}}`, readable by `{{var:NAME}}`.
pub type Vars = BTreeMap<String, Value>;

/// The first difference between the expectation and the actual value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// JSON pointer of the mismatching value (`""` for the whole document).
    pub pointer: String,
    /// What was expected (pattern text or JSON).
    pub expected: String,
    /// What was found (JSON).
    pub actual: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.pointer.is_empty() {
            "(document root)"
        } else {
            &self.pointer
        };
        write!(
            f,
            "at {at}: expected {}, actual {}",
            self.expected, self.actual
        )
    }
}

/// Compares values under one base URL and one set of variables.
pub struct Matcher<'a> {
    base: &'a str,
    vars: &'a mut Vars,
    mode: MatchMode,
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 300 {
        let cut = (0..=300)
            .rev()
            .find(|i| s.is_char_boundary(*i))
            .unwrap_or(0);
        format!("{}... ({} bytes)", &s[..cut], s.len())
    } else {
        s
    }
}

/// The placeholder parts of `s` when the whole string is one `{{...}}` placeholder.
fn placeholder_parts(s: &str) -> Option<Vec<&str>> {
    let inner = s.strip_prefix("{{")?.strip_suffix("}}")?;
    if inner.contains("{{") || inner.contains("}}") {
        return None;
    }
    Some(inner.split('|').map(str::trim).collect())
}

/// Whether `s` looks like an ISO 8601 timestamp: `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`.
pub fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| r.clone().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    if b.len() < 20
        || !digits(0..4)
        || b[4] != b'-'
        || !digits(5..7)
        || b[7] != b'-'
        || !digits(8..10)
        || b[10] != b'T'
        || !digits(11..13)
        || b[13] != b':'
        || !digits(14..16)
        || b[16] != b':'
        || !digits(17..19)
    {
        return false;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &frac[n..];
    }
    if rest == "Z" {
        return true;
    }
    let r = rest.as_bytes();
    r.len() == 6
        && (r[0] == b'+' || r[0] == b'-')
        && r[1..3].iter().all(u8::is_ascii_digit)
        && r[3] == b':'
        && r[4..6].iter().all(u8::is_ascii_digit)
}

/// Whether `s` is 32 lowercase hex digits.
pub fn is_uid(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether `s` has the shape of a JWT (three non-empty base64url parts).
pub fn is_jwt(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        })
}

/// Substitute `{base}` and every `{{var:NAME}}` in `s` (used for request parts and literal
/// expected strings). A variable holding a non-string is inserted as its JSON text.
pub fn interpolate(s: &str, base: &str, vars: &Vars) -> Result<String, String> {
    let s = s.replace("{base}", base);
    let mut out = String::new();
    let mut rest = s.as_str();
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| format!("unterminated placeholder in {s:?}"))?;
        let inner = &after[..end];
        let name = inner.strip_prefix("var:").ok_or_else(|| {
            format!("placeholder {{{{{inner}}}}} must be the whole string (only {{{{var:NAME}}}} may be embedded) in {s:?}")
        })?;
        match vars.get(name) {
            Some(Value::String(v)) => out.push_str(v),
            Some(other) => out.push_str(&other.to_string()),
            None => return Err(format!("variable {name:?} was never saved")),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Substitute `{base}` and `{{var:NAME}}` in every string of a JSON value (request bodies). A string
/// that is exactly `{{var:NAME}}` becomes the stored value itself, whatever its JSON type.
pub fn interpolate_value(v: &Value, base: &str, vars: &Vars) -> Result<Value, String> {
    Ok(match v {
        Value::String(s) => {
            if let Some(name) = s.strip_prefix("{{var:").and_then(|r| r.strip_suffix("}}")) {
                if !name.contains("{{") {
                    return vars
                        .get(name)
                        .cloned()
                        .ok_or_else(|| format!("variable {name:?} was never saved"));
                }
            }
            Value::String(interpolate(s, base, vars)?)
        }
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|x| interpolate_value(x, base, vars))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| Ok((k.clone(), interpolate_value(x, base, vars)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => other.clone(),
    })
}

impl<'a> Matcher<'a> {
    /// A matcher for one comparison.
    pub fn new(base: &'a str, vars: &'a mut Vars, mode: MatchMode) -> Self {
        Matcher { base, vars, mode }
    }

    /// Compare `actual` with the pattern `expected`; the first difference is the error.
    pub fn check(&mut self, expected: &Value, actual: &Value) -> Result<(), Mismatch> {
        self.at(expected, actual, String::new())
    }

    fn fail(pointer: &str, expected: String, actual: &Value) -> Mismatch {
        Mismatch {
            pointer: pointer.to_string(),
            expected,
            actual: show(actual),
        }
    }

    fn at(&mut self, expected: &Value, actual: &Value, ptr: String) -> Result<(), Mismatch> {
        match expected {
            Value::String(s) => {
                if let Some(parts) = placeholder_parts(s) {
                    return self.placeholder(s, &parts, actual, &ptr);
                }
                let want = interpolate(s, self.base, self.vars)
                    .map_err(|e| Self::fail(&ptr, format!("(bad pattern: {e})"), actual))?;
                if actual.as_str() == Some(want.as_str()) {
                    Ok(())
                } else {
                    Err(Self::fail(&ptr, show(&Value::String(want)), actual))
                }
            }
            Value::Object(exp) => {
                let Some(act) = actual.as_object() else {
                    return Err(Self::fail(&ptr, "an object".into(), actual));
                };
                for (k, ev) in exp {
                    let p = format!("{ptr}/{}", escape_pointer(k));
                    if ev.as_str() == Some("{{absent}}") {
                        if let Some(av) = act.get(k) {
                            return Err(Self::fail(&p, "(no such key)".into(), av));
                        }
                        continue;
                    }
                    match act.get(k) {
                        Some(av) => self.at(ev, av, p)?,
                        None => {
                            return Err(Mismatch {
                                pointer: p,
                                expected: show(ev),
                                actual: "(key missing)".into(),
                            })
                        }
                    }
                }
                if self.mode == MatchMode::Exact {
                    if let Some(extra) = act.keys().find(|k| !exp.contains_key(*k)) {
                        return Err(Mismatch {
                            pointer: format!("{ptr}/{}", escape_pointer(extra)),
                            expected: "(no such key)".into(),
                            actual: show(&act[extra]),
                        });
                    }
                }
                Ok(())
            }
            Value::Array(exp) => {
                let Some(act) = actual.as_array() else {
                    return Err(Self::fail(&ptr, "an array".into(), actual));
                };
                for (i, ev) in exp.iter().enumerate() {
                    match act.get(i) {
                        Some(av) => self.at(ev, av, format!("{ptr}/{i}"))?,
                        None => {
                            return Err(Mismatch {
                                pointer: format!("{ptr}/{i}"),
                                expected: show(ev),
                                actual: format!("(array ends after {} items)", act.len()),
                            })
                        }
                    }
                }
                if act.len() > exp.len() {
                    return Err(Mismatch {
                        pointer: format!("{ptr}/{}", exp.len()),
                        expected: format!("(array of {} items)", exp.len()),
                        actual: show(&act[exp.len()]),
                    });
                }
                Ok(())
            }
            scalar => {
                if scalar == actual {
                    Ok(())
                } else {
                    Err(Self::fail(&ptr, show(scalar), actual))
                }
            }
        }
    }

    fn placeholder(
        &mut self,
        whole: &str,
        parts: &[&str],
        actual: &Value,
        ptr: &str,
    ) -> Result<(), Mismatch> {
        let mut saves = Vec::new();
        for part in parts {
            let (kind, arg) = part.split_once(':').unwrap_or((part, ""));
            let ok = match kind {
                "uid" => actual.as_str().is_some_and(is_uid),
                "timestamp" => actual.as_str().is_some_and(is_timestamp),
                "jwt" => actual.as_str().is_some_and(is_jwt),
                "string" => actual.is_string(),
                "int" => actual.is_i64() || actual.is_u64(),
                "bool" => actual.is_boolean(),
                "any" => true,
                "contains" => actual.as_str().is_some_and(|s| s.contains(arg)),
                "save" if !arg.is_empty() => {
                    saves.push(arg);
                    true
                }
                "var" => match self.vars.get(arg) {
                    Some(v) => v == actual,
                    None => {
                        return Err(Self::fail(
                            ptr,
                            format!("{whole} (variable {arg:?} was never saved)"),
                            actual,
                        ))
                    }
                },
                _ => {
                    return Err(Self::fail(
                        ptr,
                        format!("{whole} (unknown placeholder {part:?})"),
                        actual,
                    ))
                }
            };
            if !ok {
                let expected = match (kind, self.vars.get(arg)) {
                    ("var", Some(v)) => format!("{whole} = {}", show(v)),
                    _ => whole.to_string(),
                };
                return Err(Self::fail(ptr, expected, actual));
            }
        }
        for name in saves {
            self.vars.insert(name.to_string(), actual.clone());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BASE: &str = "http://h:1";

    fn check(expected: Value, actual: Value) -> Result<Vars, Mismatch> {
        let mut vars = Vars::new();
        Matcher::new(BASE, &mut vars, MatchMode::Exact).check(&expected, &actual)?;
        Ok(vars)
    }

    fn subset(expected: Value, actual: Value) -> Result<(), Mismatch> {
        let mut vars = Vars::new();
        Matcher::new(BASE, &mut vars, MatchMode::Subset).check(&expected, &actual)
    }

    #[test]
    fn equal_documents_match() {
        let doc = json!({"a": [1, "x", null, true, {"b": 2.5}], "c": {}});
        assert!(check(doc.clone(), doc).is_ok());
    }

    #[test]
    fn a_different_scalar_is_reported_with_its_pointer() {
        let e = check(json!({"a": [1, {"b": "x"}]}), json!({"a": [1, {"b": "y"}]})).unwrap_err();
        assert_eq!(e.pointer, "/a/1/b");
        assert_eq!(e.expected, "\"x\"");
        assert_eq!(e.actual, "\"y\"");
        assert!(e.to_string().contains("/a/1/b"), "{e}");
    }

    #[test]
    fn types_must_agree() {
        assert!(check(json!(1), json!("1")).is_err());
        assert!(check(json!({"a": 1}), json!([1])).is_err());
        assert!(check(json!([1]), json!({"0": 1})).is_err());
        assert!(check(json!(null), json!(false)).is_err());
        assert!(check(json!(true), json!(false)).is_err());
    }

    #[test]
    fn exact_mode_rejects_missing_and_extra_keys() {
        let e = check(json!({"a": 1, "b": 2}), json!({"a": 1})).unwrap_err();
        assert_eq!(e.pointer, "/b");
        assert_eq!(e.actual, "(key missing)");
        let e = check(json!({"a": 1}), json!({"a": 1, "z/x": 2})).unwrap_err();
        assert_eq!(e.pointer, "/z~1x");
        assert_eq!(e.expected, "(no such key)");
    }

    #[test]
    fn arrays_must_have_the_same_length_and_order() {
        assert_eq!(check(json!([1, 2]), json!([1])).unwrap_err().pointer, "/1");
        assert_eq!(check(json!([1]), json!([1, 2])).unwrap_err().pointer, "/1");
        assert!(check(json!([1, 2]), json!([2, 1])).is_err());
        assert!(subset(json!([{"a": 1}]), json!([{"a": 1}, {"a": 2}])).is_err());
    }

    #[test]
    fn subset_mode_allows_extra_keys_but_not_missing_or_different_ones() {
        assert!(subset(
            json!({"a": {"b": 1}}),
            json!({"a": {"b": 1, "c": 2}, "d": 3})
        )
        .is_ok());
        assert!(subset(json!({"a": {"b": 1}}), json!({"a": {"c": 2}})).is_err());
        assert!(subset(json!({"a": 1}), json!({"a": 2})).is_err());
    }

    #[test]
    fn base_is_substituted_in_literals() {
        assert!(check(json!({"@id": "{base}/x"}), json!({"@id": "http://h:1/x"})).is_ok());
        assert!(check(json!({"@id": "{base}/x"}), json!({"@id": "http://other/x"})).is_err());
    }

    #[test]
    fn typed_placeholders_check_their_type() {
        let uid = "0123456789abcdef0123456789abcdef";
        assert!(check(json!("{{uid}}"), json!(uid)).is_ok());
        assert!(check(json!("{{uid}}"), json!("0123-not-a-uid")).is_err());
        assert!(check(json!("{{uid}}"), json!(uid.to_uppercase())).is_err());
        assert!(check(json!("{{timestamp}}"), json!("2026-01-01T12:00:00+00:00")).is_ok());
        assert!(check(json!("{{timestamp}}"), json!("2026-01-01T12:00:00.123Z")).is_ok());
        assert!(check(json!("{{timestamp}}"), json!("2026-01-01")).is_err());
        assert!(check(json!("{{timestamp}}"), json!("yesterday at noon")).is_err());
        assert!(check(json!("{{jwt}}"), json!("eyJh.eyJz.c2ln")).is_ok());
        assert!(check(json!("{{jwt}}"), json!("eyJh.eyJz")).is_err());
        assert!(check(json!("{{jwt}}"), json!("a.b.c d")).is_err());
        assert!(check(json!("{{string}}"), json!("")).is_ok());
        assert!(check(json!("{{string}}"), json!(null)).is_err());
        assert!(check(json!("{{int}}"), json!(3)).is_ok());
        assert!(check(json!("{{int}}"), json!(3.5)).is_err());
        assert!(check(json!("{{bool}}"), json!(false)).is_ok());
        assert!(check(json!("{{bool}}"), json!(0)).is_err());
        assert!(check(json!("{{any}}"), json!(null)).is_ok());
        assert!(check(json!("{{contains:title}}"), json!("Field 'title' bad")).is_ok());
        assert!(check(json!({"a": "{{absent}}", "b": 1}), json!({"b": 1})).is_ok());
        assert!(check(json!({"a": "{{absent}}", "b": 1}), json!({"a": 1, "b": 1})).is_err());
        assert!(check(json!("{{contains:title}}"), json!("Field 'x' bad")).is_err());
    }

    #[test]
    fn unknown_placeholders_are_errors_not_wildcards() {
        let e = check(json!("{{uuid}}"), json!("x")).unwrap_err();
        assert!(e.expected.contains("unknown placeholder"), "{e}");
    }

    #[test]
    fn save_and_var_round_trip() {
        let mut vars = Vars::new();
        let mut m = Matcher::new(BASE, &mut vars, MatchMode::Exact);
        m.check(
            &json!({"UID": "{{uid|save:u}}"}),
            &json!({"UID": "0123456789abcdef0123456789abcdef"}),
        )
        .unwrap();
        assert_eq!(vars["u"], json!("0123456789abcdef0123456789abcdef"));
        let mut m = Matcher::new(BASE, &mut vars, MatchMode::Exact);
        assert!(m
            .check(
                &json!(["{{var:u}}"]),
                &json!(["0123456789abcdef0123456789abcdef"])
            )
            .is_ok());
        assert!(m
            .check(
                &json!(["{{var:u}}"]),
                &json!(["ffffffffffffffffffffffffffffffff"])
            )
            .is_err());
        assert!(m
            .check(
                &json!("{base}/{{var:u}}/x"),
                &json!("http://h:1/0123456789abcdef0123456789abcdef/x")
            )
            .is_ok());
        assert!(m.check(&json!("{{var:never}}"), &json!("x")).is_err());
    }

    #[test]
    fn a_failed_typed_save_stores_nothing() {
        let mut vars = Vars::new();
        let mut m = Matcher::new(BASE, &mut vars, MatchMode::Exact);
        assert!(m.check(&json!("{{uid|save:u}}"), &json!("nope")).is_err());
        assert!(vars.is_empty());
    }

    #[test]
    fn request_values_are_interpolated() {
        let mut vars = Vars::new();
        vars.insert("t".into(), json!("tok"));
        vars.insert("n".into(), json!(3));
        assert_eq!(
            interpolate("Bearer {{var:t}}", BASE, &vars).unwrap(),
            "Bearer tok"
        );
        assert_eq!(
            interpolate_value(
                &json!({"a": "{{var:n}}", "b": ["{base}/{{var:t}}"]}),
                BASE,
                &vars
            )
            .unwrap(),
            json!({"a": 3, "b": ["http://h:1/tok"]})
        );
        assert!(interpolate("{{var:missing}}", BASE, &vars).is_err());
        assert!(interpolate("x {{uid}}", BASE, &vars).is_err());
    }
}
