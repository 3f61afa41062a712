//! Links between content inside blocks, stored by uid as Plone stores them.
//!
//! A block's link to another object of the site (`url` of a slate link or an image, `href` of a
//! teaser, `@id` of an object-browser reference, `link`) is stored as `../resolveuid/<uid>` plus
//! whatever followed the object's path (`?query`, `#fragment`, a view such as `/@@download/file`),
//! so it survives a rename, a move, and a change of the site's public address. The representation
//! turns it back into an absolute URL at the object's current path. Links to anything else (other
//! sites, paths that name no object, the site root) are kept as they were sent.

use serde_json::Value;

use crate::content::tree;
use crate::core::error::Result;
use crate::runtime::context::Ctx;

/// The marker of a stored link, as Plone writes it.
const RESOLVEUID: &str = "../resolveuid/";

/// Whether a value under `key` may be a link to content.
fn is_link_key(key: &str) -> bool {
    matches!(key, "url" | "href" | "@id" | "link")
}

/// Rewrite the internal links in `blocks` (a `blocks` field as sent by a client) to their stored
/// form, `../resolveuid/<uid>`.
pub fn to_stored(ctx: &Ctx<'_>, blocks: &mut Value) -> Result<()> {
    walk(blocks, None, &mut |s| internal_uid_link(ctx, s))
}

/// Rewrite the stored links in `blocks` to absolute URLs at their targets' current paths (a link
/// whose target is gone stays as stored, as Plone leaves it).
pub fn to_public(ctx: &Ctx<'_>, blocks: &mut Value) -> Result<()> {
    walk(blocks, None, &mut |s| public_url(ctx, s))
}

/// Whether `blocks` holds a stored link (`resolveuid/` under a link key): without one,
/// [`to_public`] leaves them as they are, and they need not be copied to be served.
pub fn has_stored_links(blocks: &Value) -> bool {
    fn any(v: &Value, key: Option<&str>) -> bool {
        match v {
            Value::String(s) => key.is_some_and(is_link_key) && s.contains("resolveuid/"),
            Value::Object(m) => m.iter().any(|(k, v)| any(v, Some(k))),
            Value::Array(a) => a.iter().any(|v| any(v, key)),
            _ => false,
        }
    }
    any(blocks, None)
}

/// Apply `rewrite` to every string under a link key (also inside arrays under it, as teasers keep
/// `href: [{"@id": ...}]`).
fn walk(
    v: &mut Value,
    key: Option<&str>,
    rewrite: &mut dyn FnMut(&str) -> Result<Option<String>>,
) -> Result<()> {
    match v {
        Value::String(s) if key.is_some_and(is_link_key) => {
            if let Some(new) = rewrite(s)? {
                *s = new;
            }
        }
        Value::Object(m) => {
            for (k, v) in m.iter_mut() {
                walk(v, Some(k), rewrite)?;
            }
        }
        Value::Array(a) => {
            for v in a.iter_mut() {
                walk(v, key, rewrite)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// `s` as a stored link, when it is an internal URL or path naming an object other than the root.
fn internal_uid_link(ctx: &Ctx<'_>, s: &str) -> Result<Option<String>> {
    let path = match s.strip_prefix(ctx.base_url.as_str()) {
        Some(rest) if rest.is_empty() || rest.starts_with(['/', '?', '#']) => rest,
        Some(_) => return Ok(None),
        None if s.starts_with('/') && !s.starts_with("//") => s,
        None => return Ok(None),
    };
    let end = path.find(['?', '#']).unwrap_or(path.len());
    let (mut object, mut suffix) = path.split_at(end);
    // A view or endpoint after the object's path (`/@@download/file`, `/@@images/image`) stays.
    if let Some(i) = object.find("/@") {
        suffix = &path[i..];
        object = &object[..i];
    }
    let object = object.trim_end_matches('/');
    if object.is_empty() {
        return Ok(None);
    }
    Ok(tree::uid_at(ctx, object)?.map(|uid| format!("{RESOLVEUID}{uid}{suffix}")))
}

/// The absolute URL of a stored link, when its target exists.
fn public_url(ctx: &Ctx<'_>, s: &str) -> Result<Option<String>> {
    let Some(i) = s.find("resolveuid/") else {
        return Ok(None);
    };
    let rest = &s[i + "resolveuid/".len()..];
    let end = rest
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '-')
        .unwrap_or(rest.len());
    let (uid, suffix) = rest.split_at(end);
    Ok(tree::load(ctx, uid)?.map(|obj| format!("{}{suffix}", ctx.url(&obj.path))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_links_are_found_under_link_keys_only() {
        let stored =
            serde_json::json!({"b2": {"href": [{"@id": "../resolveuid/abc", "title": "a"}]}});
        assert!(has_stored_links(&stored));
        let text = serde_json::json!({"b1": {"text": "../resolveuid/abc", "url": "https://x/y"}});
        assert!(!has_stored_links(&text));
        assert!(!has_stored_links(&serde_json::json!("../resolveuid/abc")));
    }

    #[test]
    fn only_link_keys_are_rewritten() {
        let mut v = serde_json::json!({
            "b1": {"url": "a", "text": "a", "value": [{"data": {"url": "a"}}]},
            "b2": {"href": [{"@id": "a", "title": "a"}]}
        });
        walk(&mut v, None, &mut |s| Ok(Some(format!("<{s}>")))).unwrap_or_default();
        assert_eq!(
            v,
            serde_json::json!({
                "b1": {"url": "<a>", "text": "a", "value": [{"data": {"url": "<a>"}}]},
                "b2": {"href": [{"@id": "<a>", "title": "a"}]}
            })
        );
    }
}
