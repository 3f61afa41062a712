//! Site-wide find and replace (`@replace`): a plain text or a regular expression (the `regex`
//! crate: linear time, no backtracking, compiled under a size limit) replaced in the titles,
//! descriptions and text blocks (slate blocks: the text of their `value` and their `plaintext`)
//! of every object below a folder. Each changed object is saved as an edit (so versioned types
//! record a version, and the catalog reindexes it); a dry run only reports what would change.
//!
//! Per object: objects the caller may not view are left alone and not reported; objects it may
//! view but not modify, and locked objects, are skipped and reported with the reason.

use regex::{NoExpand, Regex, RegexBuilder};
use serde_json::{Map, Value};

use crate::content::locking;
use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// Most bytes a compiled pattern may take (the `regex` crate's size limit).
pub const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// Longest pattern accepted, in bytes.
pub const MAX_PATTERN_LEN: usize = 1000;

/// The fields replaced besides the blocks.
pub const TEXT_FIELDS: &[&str] = &["title", "description"];

/// A compiled find-and-replace rule.
pub struct Rule {
    re: Regex,
    replacement: String,
    expand: bool,
}

impl Rule {
    /// Compile `pattern`: a regular expression when `regex` is set (the replacement may then
    /// name groups: `$1`, `${name}`), else plain text matched literally. `ignore_case` matches
    /// without regard to case. An empty or too long pattern, an invalid or too large regular
    /// expression, or one that matches the empty string is a 400 naming `pattern`.
    pub fn new(pattern: &str, replacement: &str, regex: bool, ignore_case: bool) -> Result<Rule> {
        let bad =
            |why: String| EngineError::bad_request(format!("Invalid property 'pattern': {why}"));
        if pattern.is_empty() {
            return Err(bad("it must not be empty".into()));
        }
        if pattern.len() > MAX_PATTERN_LEN {
            return Err(bad(format!("it is longer than {MAX_PATTERN_LEN} bytes")));
        }
        let source = if regex {
            pattern.to_string()
        } else {
            regex::escape(pattern)
        };
        let re = RegexBuilder::new(&source)
            .case_insensitive(ignore_case)
            .size_limit(PATTERN_SIZE_LIMIT)
            .dfa_size_limit(PATTERN_SIZE_LIMIT)
            .build()
            .map_err(|e| bad(format!("not a valid regular expression: {e}")))?;
        if re.is_match("") {
            return Err(bad("it matches the empty string".into()));
        }
        Ok(Rule {
            re,
            replacement: replacement.to_string(),
            expand: regex,
        })
    }

    /// `text` with every match replaced, if there was one.
    pub fn apply(&self, text: &str) -> Option<String> {
        if !self.re.is_match(text) {
            return None;
        }
        let out = if self.expand {
            self.re.replace_all(text, self.replacement.as_str())
        } else {
            self.re.replace_all(text, NoExpand(&self.replacement))
        };
        (out != text).then(|| out.into_owned())
    }
}

/// Replace in every `text` string of a slate value (its leaves); whether anything changed.
fn replace_in_slate(rule: &Rule, node: &mut Value) -> bool {
    match node {
        Value::Array(items) => {
            let mut changed = false;
            for item in items {
                changed |= replace_in_slate(rule, item);
            }
            changed
        }
        Value::Object(map) => {
            let mut changed = false;
            if let Some(Value::String(text)) = map.get_mut("text") {
                if let Some(new) = rule.apply(text) {
                    *text = new;
                    changed = true;
                }
            }
            if let Some(children) = map.get_mut("children") {
                changed |= replace_in_slate(rule, children);
            }
            changed
        }
        _ => false,
    }
}

/// Replace in the slate blocks of `blocks` (their `value` and `plaintext`); the new blocks if
/// anything changed.
fn replace_in_blocks(rule: &Rule, blocks: &Value) -> Option<Value> {
    let Value::Object(map) = blocks else {
        return None;
    };
    let mut out: Map<String, Value> = map.clone();
    let mut changed = false;
    for block in out.values_mut() {
        let Value::Object(b) = block else { continue };
        if b.get("@type").and_then(Value::as_str) != Some("slate") {
            continue;
        }
        if let Some(value) = b.get_mut("value") {
            changed |= replace_in_slate(rule, value);
        }
        if let Some(Value::String(text)) = b.get_mut("plaintext") {
            if let Some(new) = rule.apply(text) {
                *text = new;
                changed = true;
            }
        }
    }
    changed.then_some(Value::Object(out))
}

/// The fields of `obj` the rule changes, with their new values (field order: title,
/// description, blocks).
pub fn changes_of(rule: &Rule, obj: &ContentRecord) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for f in TEXT_FIELDS {
        if let Some(Value::String(text)) = obj.fields.get(*f) {
            if let Some(new) = rule.apply(text) {
                out.push((f.to_string(), Value::String(new)));
            }
        }
    }
    if let Some(blocks) = obj.fields.get("blocks") {
        if let Some(new) = replace_in_blocks(rule, blocks) {
            out.push(("blocks".to_string(), new));
        }
    }
    out
}

/// One object the rule changes (or would change).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Its path.
    pub path: String,
    /// Its title before.
    pub title: String,
    /// Its title after (the same when the title did not change).
    pub new_title: String,
    /// The fields changed.
    pub fields: Vec<String>,
}

/// One object the rule would change but the caller may not.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    /// Its path.
    pub path: String,
    /// Its title.
    pub title: String,
    /// Why: `"Unauthorized"` (no Modify permission) or `"Locked"`.
    pub reason: &'static str,
}

/// What a run did (or, dry, would do).
#[derive(Debug, Default)]
pub struct Outcome {
    /// The objects changed, in tree order.
    pub changes: Vec<Change>,
    /// The objects left alone, in tree order.
    pub skipped: Vec<Skipped>,
}

/// Apply `rule` to `scope` and everything below it (tree order). Unless `dry_run`, each changed
/// object is saved as an edit with `change_note` (versioned types record a version).
pub fn run(
    ctx: &mut Ctx<'_>,
    scope: &ContentRecord,
    rule: &Rule,
    dry_run: bool,
    change_note: &str,
) -> Result<Outcome> {
    let mut outcome = Outcome::default();
    for mut obj in tree::subtree(ctx, scope)? {
        let changes = changes_of(rule, &obj);
        if changes.is_empty() || !ctx.permitted(Permission::View, &obj)? {
            continue;
        }
        let title = obj.str_field("title").to_string();
        let reason = if !ctx.permitted(Permission::Modify, &obj)? {
            Some("Unauthorized")
        } else if locking::current(ctx, &obj)?.is_some() {
            Some("Locked")
        } else {
            None
        };
        if let Some(reason) = reason {
            outcome.skipped.push(Skipped {
                path: obj.path.clone(),
                title,
                reason,
            });
            continue;
        }
        let fields: Vec<String> = changes.iter().map(|(f, _)| f.clone()).collect();
        let new_title = changes
            .iter()
            .find(|(f, _)| f == "title")
            .and_then(|(_, v)| v.as_str())
            .unwrap_or(&title)
            .to_string();
        if !dry_run {
            for (f, v) in changes {
                obj.fields.insert(f, v);
            }
            obj.modified = ctx.now();
            tree::save(
                ctx,
                &mut obj,
                tree::Change::Edit {
                    fields: fields.clone(),
                    change_note: Some(change_note.to_string()),
                },
            )?;
        }
        outcome.changes.push(Change {
            path: obj.path.clone(),
            title,
            new_title,
            fields,
        });
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_patterns_match_literally_and_regexes_expand_groups() {
        let plain = Rule::new("a.b", "$1", false, false).unwrap();
        assert_eq!(plain.apply("xa.bx axb"), Some("x$1x axb".into()));
        let re = Rule::new(r"(\w+)@(\w+)", "$2 at $1", true, false).unwrap();
        assert_eq!(re.apply("me@home"), Some("home at me".into()));
        let ci = Rule::new("event", "Meeting", false, true).unwrap();
        assert_eq!(ci.apply("Events"), Some("Meetings".into()));
        assert_eq!(ci.apply("nothing"), None);
    }

    #[test]
    fn bad_patterns_are_refused() {
        for (p, re) in [
            ("", false),
            ("(", true),
            ("a*", true),
            ("x{1000}{1000}", true),
        ] {
            let e = Rule::new(p, "", re, false).err().unwrap();
            assert!(e.to_string().contains("pattern"), "{p}: {e}");
        }
    }

    #[test]
    fn slate_leaves_and_plaintext_are_replaced() {
        let rule = Rule::new("cat", "dog", false, false).unwrap();
        let blocks = json!({
            "a": {"@type": "slate", "plaintext": "a cat", "value": [{"type": "p", "children": [{"text": "a cat"}, {"type": "link", "children": [{"text": "cats"}]}]}]},
            "b": {"@type": "image", "alt": "cat"}
        });
        let new = replace_in_blocks(&rule, &blocks).unwrap();
        assert_eq!(new["a"]["plaintext"], "a dog");
        assert_eq!(new["a"]["value"][0]["children"][0]["text"], "a dog");
        assert_eq!(
            new["a"]["value"][0]["children"][1]["children"][0]["text"],
            "dogs"
        );
        assert_eq!(new["b"]["alt"], "cat");
    }
}
