//! Where URL aliases are decided: old paths that redirect to an object's current path.
//!
//! The rules (from the spec):
//! 1. Renaming or moving an object creates an automatic alias (`manual: false`) from the old path,
//!    for the object and every descendant.
//! 2. Transitive: adding b → c when a → b exists replaces a → b with a → c, so no alias ever
//!    points at another alias.
//! 3. Circular: adding a → a does nothing (and an object moved back to an old path drops the alias
//!    that path had, since the path is an object again).
//!
//! Aliases live under `a:<path>`, with a reverse index `b:<target>\0<path>` so the aliases of one
//! object and the transitive rewrite are range scans, never a scan of all aliases.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::core::model::fields::parse_datetime;
use crate::runtime::context::Ctx;

/// One alias.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Alias {
    /// The old path (starts with `/`).
    pub path: String,
    /// The path it redirects to (`""` is the site root).
    pub redirect_to: String,
    /// When it was made.
    pub datetime: DateTime<Utc>,
    /// True when made by hand, false when made by a rename or move.
    pub manual: bool,
}

/// Normalize a client-supplied alias path: must start with `/`, no empty, `.`/`..`, `@` or
/// `++api++` segments, no trailing slash.
pub fn normalize_path(raw: &str) -> Result<String> {
    let bad = |why: &str| {
        Err(EngineError::bad_request(format!(
            "Invalid alias path '{raw}': {why}"
        )))
    };
    if !raw.starts_with('/') {
        return bad("it must start with '/'");
    }
    let mut out = String::new();
    for seg in raw.split('/').filter(|s| !s.is_empty()) {
        if seg == "." || seg == ".." || seg.starts_with('@') || seg.starts_with("++") {
            return bad("segments may not be '.', '..' or start with '@' or '++'");
        }
        if seg.chars().any(|c| c.is_control() || c == '?' || c == '#') {
            return bad("it may not contain control characters, '?' or '#'");
        }
        out.push('/');
        out.push_str(seg);
    }
    if out.is_empty() {
        return bad("the site root cannot be an alias");
    }
    Ok(out)
}

/// The alias at `path`, if any.
pub fn get(ctx: &Ctx<'_>, path: &str) -> Result<Option<Alias>> {
    ctx.get_json(&keys::alias(path))
}

/// Store `a` ([`Event::AliasAdded`]).
fn put(ctx: &mut Ctx<'_>, a: &Alias) -> Result<()> {
    ctx.put_json(&keys::alias(&a.path), a)?;
    ctx.put(&keys::alias_target(&a.redirect_to, &a.path), b"")?;
    ctx.emit(Event::AliasAdded {
        path: a.path.clone(),
        redirect_to: a.redirect_to.clone(),
    });
    Ok(())
}

/// Remove the alias at `path` (no error when absent; [`Event::AliasRemoved`] when present).
pub fn remove(ctx: &mut Ctx<'_>, path: &str) -> Result<()> {
    if let Some(a) = get(ctx, path)? {
        ctx.delete(&keys::alias(path))?;
        ctx.delete(&keys::alias_target(&a.redirect_to, path))?;
        ctx.emit(Event::AliasRemoved {
            path: path.to_string(),
        });
    }
    Ok(())
}

/// Every alias redirecting to `target`, by path.
pub fn for_target(ctx: &Ctx<'_>, target: &str) -> Result<Vec<Alias>> {
    let prefix = keys::alias_target_prefix(target);
    let mut out = Vec::new();
    for (k, _) in ctx.scan_prefix(&prefix)? {
        let path = String::from_utf8_lossy(&k[prefix.len()..]).into_owned();
        if let Some(a) = get(ctx, &path)? {
            out.push(a);
        }
    }
    Ok(out)
}

/// Every alias, by path.
pub fn all(ctx: &Ctx<'_>) -> Result<Vec<Alias>> {
    ctx.values_with_prefix(keys::ALIAS_PREFIX)
}

/// Add a manual alias after checking it: the path must not be an object or an alias already, and
/// the target must exist. Applies the transitive and circular rules.
pub fn add_manual(ctx: &mut Ctx<'_>, path: &str, target: &str, when: DateTime<Utc>) -> Result<()> {
    if path == target {
        return Ok(()); // circular rule
    }
    if tree::uid_at(ctx, path)?.is_some() {
        return Err(EngineError::bad_request(format!(
            "Cannot add alias '{path}': an object exists at that path"
        )));
    }
    if get(ctx, path)?.is_some() {
        return Err(EngineError::bad_request(format!(
            "Cannot add alias '{path}': the path is already an alias"
        )));
    }
    if tree::uid_at(ctx, target)?.is_none() {
        return Err(EngineError::bad_request(format!(
            "Cannot add alias '{path}': the target '{}' does not exist",
            if target.is_empty() { "/" } else { target }
        )));
    }
    add(ctx, path, target, when, true)
}

/// Record `path` → `target` applying the transitive rule (aliases that pointed at `path` now
/// point at `target`) and the circular rule.
fn add(
    ctx: &mut Ctx<'_>,
    path: &str,
    target: &str,
    when: DateTime<Utc>,
    manual: bool,
) -> Result<()> {
    if path == target {
        return Ok(());
    }
    for mut older in for_target(ctx, path)? {
        remove(ctx, &older.path)?;
        if older.path != target {
            older.redirect_to = target.to_string();
            put(ctx, &older)?;
        }
    }
    remove(ctx, path)?;
    put(
        ctx,
        &Alias {
            path: path.to_string(),
            redirect_to: target.to_string(),
            datetime: when,
            manual,
        },
    )
}

/// Put back an alias that was taken away with the object it pointed at (the recycle bin), now
/// redirecting to `target`; skipped when its path is an object or an alias again.
pub fn reinstate(ctx: &mut Ctx<'_>, a: &Alias, target: &str) -> Result<()> {
    if tree::uid_at(ctx, &a.path)?.is_some() || get(ctx, &a.path)?.is_some() {
        return Ok(());
    }
    add(ctx, &a.path, target, a.datetime, a.manual)
}

/// Automatic aliases for a rename or move: every old path redirects to the new one. An alias that
/// sat on a new path is dropped (the path is an object again).
pub fn record_moves(ctx: &mut Ctx<'_>, moves: &[tree::Relocation]) -> Result<()> {
    let now = ctx.now();
    for m in moves {
        remove(ctx, &m.new_path)?;
    }
    for m in moves {
        add(ctx, &m.old_path, &m.new_path, now, false)?;
    }
    Ok(())
}

/// The alias covering `path`: the alias of the path itself or of its nearest aliased ancestor,
/// as the redirect target for `path` (`None` when no alias applies).
pub fn resolve(ctx: &Ctx<'_>, path: &str) -> Result<Option<String>> {
    let mut prefix = path.to_string();
    loop {
        if let Some(a) = get(ctx, &prefix)? {
            return Ok(Some(format!("{}{}", a.redirect_to, &path[prefix.len()..])));
        }
        match prefix.rsplit_once('/') {
            Some((parent, _)) if !parent.is_empty() => prefix = parent.to_string(),
            _ => return Ok(None),
        }
    }
}

/// Parse an alias date: ISO 8601 (`2022-05-05`, `2022-05-05T10:00:00`, with or without offset)
/// or the CSV export's `2022/05/05 00:00:00 GMT+0`.
pub fn parse_date(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Some(t) = parse_datetime(s) {
        return Some(t);
    }
    let s = s
        .strip_suffix("GMT+0")
        .or_else(|| s.strip_suffix("UTC"))
        .unwrap_or(s)
        .trim();
    NaiveDateTime::parse_from_str(s, "%Y/%m/%d %H:%M:%S")
        .ok()
        .map(|t| t.and_utc())
        .or_else(|| {
            chrono::NaiveDate::parse_from_str(s, "%Y/%m/%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|t| t.and_utc())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alias_paths_are_normalized_and_checked() {
        assert_eq!(normalize_path("/a//b/").unwrap(), "/a/b");
        for bad in ["a", "/", "/a/../b", "/@search", "/++api++/x", "/a?b"] {
            assert!(normalize_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn alias_dates_accept_iso_and_csv_forms() {
        let a = parse_date("2022-05-05").unwrap();
        let b = parse_date("2022/05/05 00:00:00 GMT+0").unwrap();
        assert_eq!(a, b);
        assert!(parse_date("05.05.2022").is_none());
    }
}
