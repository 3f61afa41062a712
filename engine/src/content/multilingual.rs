//! Multilingual sites: the site's languages, the multilingual profiles, language root folders
//! (the navigation roots of a multilingual site), translation groups, and the navigation root and
//! language of any object.
//!
//! Multilingual support is off by default. It is switched on by installing a profile, either when
//! the site is created ([`crate::SiteSetup::profiles`]) or later (`POST /@addons/<id>/install`,
//! [`profiles::install`]):
//! - [`PROFILE_MULTILINGUAL`] (`multilingual`): objects can be linked as translations of each other;
//!   the language control panel (`/@controlpanels/language`, [`profiles::set_languages`]) names the site's
//!   languages, the first being the default;
//! - [`PROFILE_MULTILINGUAL_CONTENT`] (`multilingual-content`): the above, plus one language root
//!   folder per site language at `/<code>` (published, excluded from navigation, linked as
//!   translations of each other). Each is a navigation root, and new content inside it gets its
//!   language. Languages added later get their root folder too.
//!
//! Keyspace (see [`crate::core::keys`]): the settings under `s:multilingual`; a translation group is a set
//! of `t:<group>:<language>` → uid entries (one scan lists it) plus `g:<uid>` → group on each member
//! (one read finds an object's group), so no lookup scans the site.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::core::model::{ancestor_paths, language, ContentRecord};
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;
use crate::runtime::subscriber::Subscriber;
use crate::{content::tree, site::settings};

pub mod profiles;

/// Profile id: multilingual support (translations, the language control panel).
pub const PROFILE_MULTILINGUAL: &str = "multilingual";
/// Profile id: multilingual support plus one language root folder per site language.
pub const PROFILE_MULTILINGUAL_CONTENT: &str = "multilingual-content";

/// The installable profiles: id, title, description.
pub const PROFILES: &[(&str, &str, &str)] = &[
    (
        PROFILE_MULTILINGUAL,
        "Multilingual support",
        "Translations of content between the site's languages",
    ),
    (
        PROFILE_MULTILINGUAL_CONTENT,
        "Multilingual support with language root folders",
        "Multilingual support plus one language root folder per site language, each a \
         navigation root",
    ),
];

/// The site's language settings and installed profiles (`s:multilingual`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LanguageSettings {
    /// The site's languages, in order.
    pub available_languages: Vec<String>,
    /// The default language (one of `available_languages`).
    pub default_language: String,
    /// Installed profile ids.
    #[serde(default)]
    pub profiles: Vec<String>,
    /// Language code → uid of its language root folder.
    #[serde(default)]
    pub language_roots: BTreeMap<String, String>,
}

impl LanguageSettings {
    /// Whether multilingual support is on.
    pub fn is_multilingual(&self) -> bool {
        self.has_profile(PROFILE_MULTILINGUAL)
    }

    /// Whether profile `id` is installed.
    pub fn has_profile(&self, id: &str) -> bool {
        self.profiles.iter().any(|p| p == id)
    }

    /// Whether `code` is one of the site's languages.
    pub fn is_available(&self, code: &str) -> bool {
        self.available_languages.iter().any(|l| l == code)
    }

    /// The language whose root folder is `uid` (only while multilingual support is on).
    pub fn root_language(&self, uid: &str) -> Option<&str> {
        if !self.is_multilingual() {
            return None;
        }
        self.language_roots
            .iter()
            .find(|(_, u)| u.as_str() == uid)
            .map(|(c, _)| c.as_str())
    }
}

/// The language settings (defaults, derived from the site settings, until first changed).
pub fn settings(ctx: &Ctx<'_>) -> Result<LanguageSettings> {
    if let Some(s) = stored_settings(ctx)? {
        return Ok(s);
    }
    let default = settings::settings(ctx)?.default_language;
    Ok(LanguageSettings {
        available_languages: vec![default.clone()],
        default_language: default,
        ..LanguageSettings::default()
    })
}

/// The language settings as stored; `None` until first changed (the defaults [`settings`] gives
/// then have no multilingual profile).
fn stored_settings(ctx: &Ctx<'_>) -> Result<Option<LanguageSettings>> {
    ctx.get_json(keys::MULTILINGUAL)
}

/// Store the language settings (and the site's default language, which the root speaks).
pub fn save_settings(ctx: &mut Ctx<'_>, s: &LanguageSettings) -> Result<()> {
    ctx.put_json(keys::MULTILINGUAL, s)?;
    ctx.emit(Event::SettingsChanged {
        settings: "language".into(),
    });
    let mut site_settings = settings::settings(ctx)?;
    if site_settings.default_language != s.default_language {
        site_settings.default_language = s.default_language.clone();
        settings::save_settings(ctx, &site_settings)?;
    }
    // The site root speaks the default language.
    let mut root = tree::root(ctx)?;
    if language_of(&root) != s.default_language {
        root.fields
            .insert("language".into(), json!(s.default_language));
        tree::save(ctx, &mut root, language_changed())?;
    }
    Ok(())
}

/// A language code from a client value (`"de"` or `{"token": "de"}`), checked against the codes
/// the service knows and lower-cased.
pub fn parse_code(value: &Value, what: &str) -> Result<String> {
    let code = match value {
        Value::String(s) => s.as_str(),
        Value::Object(o) => o.get("token").and_then(Value::as_str).ok_or_else(|| {
            EngineError::bad_request(format!("'{what}' must be a language code or {{token}}"))
        })?,
        _ => {
            return Err(EngineError::bad_request(format!(
                "'{what}' must be a language code"
            )))
        }
    };
    let code = code.trim().to_ascii_lowercase();
    if language::title(&code).is_none() {
        return Err(EngineError::bad_request(format!(
            "Unknown language '{code}' in '{what}'"
        )));
    }
    Ok(code)
}

/// Whether `id` names an installable profile.
pub fn is_profile(id: &str) -> bool {
    PROFILES.iter().any(|(p, _, _)| *p == id)
}

/// The change of a save that sets an object's `language` (no change note).
pub fn language_changed() -> tree::Change {
    tree::Change::Edit {
        fields: vec!["language".into()],
        change_note: None,
    }
}

/// The language code of `obj` (`""` when it has none).
pub fn language_of(obj: &ContentRecord) -> &str {
    obj.str_field("language")
}

// ---------------------------------------------------------------------------------------------
// Navigation roots and languages of new content.
// ---------------------------------------------------------------------------------------------

/// The language root folder containing `obj` (or `obj` itself): `(language, uid)`, when the site is
/// multilingual and `obj` is inside one. Reads at most one key per ancestor.
pub fn language_root_of(
    ctx: &Ctx<'_>,
    s: &LanguageSettings,
    obj: &ContentRecord,
) -> Result<Option<(String, String)>> {
    if !s.is_multilingual() || s.language_roots.is_empty() {
        return Ok(None);
    }
    if let Some(code) = s.root_language(&obj.uid) {
        return Ok(Some((code.to_string(), obj.uid.clone())));
    }
    // Ancestors, deepest first; the root is never a language root.
    let paths = ancestor_paths(&obj.path);
    for (i, p) in paths.iter().enumerate().rev() {
        if p.is_empty() {
            break;
        }
        let uid = if i + 1 == paths.len() {
            obj.parent.clone()
        } else {
            tree::uid_at(ctx, p)?
        };
        if let Some(code) = uid.as_deref().and_then(|u| s.root_language(u)) {
            return Ok(uid.map(|u| (code.to_string(), u)));
        }
    }
    Ok(None)
}

/// The navigation root of `obj`: its language root folder in a multilingual site, else the site
/// root.
pub fn navigation_root(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<ContentRecord> {
    let s = settings(ctx)?;
    if let Some((_, uid)) = language_root_of(ctx, &s, obj)? {
        if uid == obj.uid {
            return Ok(obj.clone());
        }
        if let Some(rec) = tree::load(ctx, &uid)? {
            return Ok(rec);
        }
    }
    if obj.is_root() {
        return Ok(obj.clone());
    }
    tree::root(ctx)
}

/// The content language of a request addressed to `obj` (Plone's content negotiation, which
/// plone.app.multilingual switches on): on a multilingual site, the language of `obj` or, when it
/// has none, of its nearest ancestor with one, provided that language is one of the site's; the
/// site root (which speaks the default language) counts for nothing, so a request to it keeps
/// its `Accept-Language`. `None` on other sites.
pub fn content_language(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Option<String>> {
    // Every request asks: a site with one language answers before any ancestor is read, and
    // one whose language settings were never changed (the defaults are not multilingual)
    // before the site settings are read for the default language.
    let Some(s) = stored_settings(ctx)?.filter(LanguageSettings::is_multilingual) else {
        return Ok(None);
    };
    let mut lang = language_of(obj).to_string();
    let mut parent = obj.parent.clone();
    let mut at_root = obj.is_root();
    while lang.is_empty() && !at_root {
        let Some(uid) = parent else { break };
        let Some(p) = tree::load(ctx, &uid)? else {
            break;
        };
        at_root = p.is_root();
        lang = language_of(&p).to_string();
        parent = p.parent.clone();
    }
    if at_root || lang.is_empty() {
        return Ok(None);
    }
    Ok(s.is_available(&lang).then_some(lang))
}

/// The type of the language independent folders (Plone's "Language Independent Folder",
/// `plone.app.multilingual`'s `LIF`): [`profiles`] makes one in each language root folder.
pub const LIF: &str = "LIF";

/// Whether `obj` is language independent: on a multilingual site, inside a [`LIF`] (the folder
/// itself has its language root's language, as in Plone). Such content has no language.
pub fn is_language_independent(
    ctx: &Ctx<'_>,
    s: &LanguageSettings,
    obj: &ContentRecord,
) -> Result<bool> {
    if !s.is_multilingual() || obj.is_root() {
        return Ok(false);
    }
    for p in ancestor_paths(&obj.path) {
        if p.is_empty() {
            continue;
        }
        if tree::at_path(ctx, &p)?.is_some_and(|a| a.type_name == LIF) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The language a new object added inside `parent` gets: none inside a language independent
/// folder (whatever the client names, as Plone does), else when the client names none: that of
/// its language root folder (multilingual sites), else the parent's, else the site's default.
pub fn language_for_new_child(ctx: &Ctx<'_>, parent: &ContentRecord) -> Result<String> {
    let s = settings(ctx)?;
    if independent_inside(ctx, &s, parent)? {
        return Ok(String::new());
    }
    if let Some((code, _)) = language_root_of(ctx, &s, parent)? {
        return Ok(code);
    }
    match language_of(parent) {
        "" => Ok(s.default_language),
        l => Ok(l.to_string()),
    }
}

/// Whether what is added inside `parent` is language independent.
pub fn independent_inside(
    ctx: &Ctx<'_>,
    s: &LanguageSettings,
    parent: &ContentRecord,
) -> Result<bool> {
    Ok(
        s.is_multilingual()
            && (parent.type_name == LIF || is_language_independent(ctx, s, parent)?),
    )
}

// ---------------------------------------------------------------------------------------------
// Translation groups.
// ---------------------------------------------------------------------------------------------

/// The translation group of `uid`, if it is linked to translations.
pub fn group_of(ctx: &Ctx<'_>, uid: &str) -> Result<Option<String>> {
    Ok(ctx
        .get(&keys::translation_group_of(uid))?
        .map(|b| String::from_utf8_lossy(&b).into_owned()))
}

/// The members of `group`: `(language, uid)`, by language.
pub fn group_members(ctx: &Ctx<'_>, group: &str) -> Result<Vec<(String, String)>> {
    let prefix = keys::translation_group_prefix(group);
    Ok(ctx
        .scan_prefix(&prefix)?
        .into_iter()
        .map(|(k, v)| {
            (
                String::from_utf8_lossy(&k[prefix.len()..]).into_owned(),
                String::from_utf8_lossy(&v).into_owned(),
            )
        })
        .collect())
}

/// Put `uid` in `group` as its `lang` translation ([`Event::TranslationLinked`]).
/// Add `uid` to translation group `group` as its `lang` member.
pub fn put_member(ctx: &mut Ctx<'_>, group: &str, lang: &str, uid: &str) -> Result<()> {
    ctx.put(&keys::translation(group, lang), uid.as_bytes())?;
    ctx.put(&keys::translation_group_of(uid), group.as_bytes())?;
    ctx.emit(Event::TranslationLinked {
        uid: uid.to_string(),
        group: group.to_string(),
        language: lang.to_string(),
    });
    Ok(())
}

/// Take `uid` out of `group` ([`Event::TranslationUnlinked`]).
fn remove_member(ctx: &mut Ctx<'_>, group: &str, lang: &str, uid: &str) -> Result<()> {
    ctx.delete(&keys::translation(group, lang))?;
    ctx.delete(&keys::translation_group_of(uid))?;
    ctx.emit(Event::TranslationUnlinked {
        uid: uid.to_string(),
        group: group.to_string(),
        language: lang.to_string(),
    });
    Ok(())
}

/// After a member left `group`: a group of one is no group.
fn dissolve_if_single(ctx: &mut Ctx<'_>, group: &str) -> Result<()> {
    let rest = group_members(ctx, group)?;
    if let [(lang, uid)] = rest.as_slice() {
        remove_member(ctx, group, lang, uid)?;
    }
    Ok(())
}

/// The other objects of `obj`'s translation group that still exist: `(language, record)`, by
/// language.
pub fn translations(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Vec<(String, ContentRecord)>> {
    let Some(group) = group_of(ctx, &obj.uid)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (lang, uid) in group_members(ctx, &group)? {
        if uid == obj.uid {
            continue;
        }
        if let Some(rec) = tree::load(ctx, &uid)? {
            out.push((lang, rec));
        }
    }
    Ok(out)
}

/// The translation of `obj` into `lang`, if there is one.
pub fn translation_in(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    lang: &str,
) -> Result<Option<ContentRecord>> {
    let Some(group) = group_of(ctx, &obj.uid)? else {
        return Ok(None);
    };
    match ctx.get(&keys::translation(&group, lang))? {
        Some(uid) => tree::load(ctx, &String::from_utf8_lossy(&uid)),
        None => Ok(None),
    }
}

fn not_multilingual() -> EngineError {
    EngineError::bad_request(
        "This site is not multilingual: install the 'multilingual' profile \
         (POST /@addons/multilingual/install) to work with translations",
    )
}

/// Fail with a 400 unless the site is multilingual; returns the settings.
pub fn require_multilingual(ctx: &Ctx<'_>) -> Result<LanguageSettings> {
    let s = settings(ctx)?;
    if s.is_multilingual() {
        Ok(s)
    } else {
        Err(not_multilingual())
    }
}

fn checked_language<'r>(
    ctx: &Ctx<'_>,
    s: &LanguageSettings,
    obj: &'r ContentRecord,
) -> Result<&'r str> {
    let lang = language_of(obj);
    if lang.is_empty() || !s.is_available(lang) {
        return Err(EngineError::bad_request(format!(
            "'{}' has language '{lang}', which is not one of the site's languages ({})",
            ctx.url(&obj.path),
            s.available_languages.join(", ")
        )));
    }
    Ok(lang)
}

/// Link `target` as a translation of `obj` (into `obj`'s group, which is created when needed).
/// Refused with a 400 and nothing written when the site is not multilingual, when the two are the
/// same object or have the same language, when either language is not a site language, when `obj`'s
/// group already has `target`'s language, or when `target` already belongs to another group.
pub fn link(ctx: &mut Ctx<'_>, obj: &ContentRecord, target: &ContentRecord) -> Result<()> {
    let s = require_multilingual(ctx)?;
    if obj.uid == target.uid {
        return Err(EngineError::bad_request(
            "An object cannot be linked as a translation of itself",
        ));
    }
    if obj.is_root() || target.is_root() {
        return Err(EngineError::bad_request(
            "The site root is not translatable; it cannot be linked as a translation",
        ));
    }
    let la = checked_language(ctx, &s, obj)?.to_string();
    let lb = checked_language(ctx, &s, target)?.to_string();
    if la == lb {
        return Err(EngineError::bad_request(format!(
            "'{}' has the same language ('{lb}') as '{}'; a translation must be in another language",
            ctx.url(&target.path),
            ctx.url(&obj.path)
        )));
    }
    let ga = group_of(ctx, &obj.uid)?;
    let gb = group_of(ctx, &target.uid)?;
    if let Some(gb) = &gb {
        if ga.as_ref() == Some(gb) {
            return Err(EngineError::bad_request(format!(
                "'{}' is already linked as a translation of '{}'",
                ctx.url(&target.path),
                ctx.url(&obj.path)
            )));
        }
        let others: Vec<String> = translations(ctx, target)?
            .into_iter()
            .map(|(_, r)| ctx.url(&r.path))
            .collect();
        if !others.is_empty() {
            return Err(EngineError::bad_request(format!(
                "'{}' is already a translation of other content ({}); unlink it first",
                ctx.url(&target.path),
                others.join(", ")
            )));
        }
    }
    let group = ga.clone().unwrap_or_else(|| obj.uid.clone());
    if let Some(existing) = translation_in(ctx, obj, &lb)? {
        return Err(EngineError::bad_request(format!(
            "'{}' is already translated into '{lb}': '{}'",
            ctx.url(&obj.path),
            ctx.url(&existing.path)
        )));
    }
    if let Some(gb) = &gb {
        // A stale group of one (its other members were deleted): leave it.
        for (lang, uid) in group_members(ctx, gb)? {
            remove_member(ctx, gb, &lang, &uid)?;
        }
    }
    if ga.is_none() {
        put_member(ctx, &group, &la, &obj.uid)?;
    }
    put_member(ctx, &group, &lb, &target.uid)
}

/// Unlink the translation in language `lang` from `obj`'s group (which may be `obj` itself).
/// A 400 when the site is not multilingual or there is no such translation.
pub fn unlink(ctx: &mut Ctx<'_>, obj: &ContentRecord, lang: &str) -> Result<()> {
    let s = require_multilingual(ctx)?;
    if !s.is_available(lang) {
        return Err(EngineError::bad_request(format!(
            "'{lang}' is not one of the site's languages ({})",
            s.available_languages.join(", ")
        )));
    }
    let not_translated = || {
        EngineError::bad_request(format!(
            "'{}' is not translated into '{lang}'",
            ctx.url(&obj.path)
        ))
    };
    let group = group_of(ctx, &obj.uid)?.ok_or_else(not_translated)?;
    let member = ctx
        .get(&keys::translation(&group, lang))?
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .ok_or_else(not_translated)?;
    remove_member(ctx, &group, lang, &member)?;
    dissolve_if_single(ctx, &group)
}

/// Resolve a reference to content: an absolute URL under the site, a site path, or a UID.
pub fn resolve_reference(ctx: &Ctx<'_>, reference: &str) -> Result<Option<ContentRecord>> {
    let r = reference.trim();
    let path = if let Some(rest) = r.strip_prefix(&ctx.base_url) {
        if !rest.is_empty() && !rest.starts_with('/') {
            return Ok(None);
        }
        Some(rest)
    } else if r.starts_with('/') {
        Some(r)
    } else {
        None
    };
    match path {
        Some(p) => {
            let p = p
                .strip_prefix("/++api++")
                .unwrap_or(p)
                .trim_end_matches('/');
            tree::at_path(ctx, p)
        }
        None if !r.is_empty() && r.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') => {
            tree::load(ctx, r)
        }
        None => Ok(None),
    }
}

/// Take `translation_of` (the UID, path or URL of the object the new one translates) from a POST
/// body. A 400 on a site that is not multilingual, for a non-string, or when nothing is found.
pub fn take_translation_of(
    ctx: &Ctx<'_>,
    body: &mut Map<String, Value>,
) -> Result<Option<ContentRecord>> {
    let value = match body.remove("translation_of") {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => v,
    };
    if !settings(ctx)?.is_multilingual() {
        return Err(EngineError::bad_request(
            "'translation_of' needs a multilingual site; this site has no multilingual profile",
        ));
    }
    let reference = value.as_str().ok_or_else(|| {
        EngineError::bad_request("'translation_of' must be the UID of the object translated")
    })?;
    let source = resolve_reference(ctx, reference)?.ok_or_else(|| {
        EngineError::bad_request(format!(
            "'translation_of': no content found for '{reference}'"
        ))
    })?;
    ctx.require(Permission::View, &source)?;
    Ok(Some(source))
}

/// Keeps translation groups consistent: a removed object leaves its group; an object whose language
/// changes moves to that language's slot of its group (a 400 when the slot is taken).
pub struct TranslationSubscriber;

impl Subscriber for TranslationSubscriber {
    fn name(&self) -> &'static str {
        "translations"
    }

    fn on_event(&self, ctx: &mut Ctx<'_>, event: &Event) -> Result<()> {
        match event {
            Event::Removed { uid, .. } => {
                let Some(group) = group_of(ctx, uid)? else {
                    return Ok(());
                };
                for (lang, member) in group_members(ctx, &group)? {
                    if &member == uid {
                        ctx.delete(&keys::translation(&group, &lang))?;
                    }
                }
                ctx.delete(&keys::translation_group_of(uid))?;
                dissolve_if_single(ctx, &group)
            }
            Event::Modified { uid, fields, .. } if fields.iter().any(|f| f == "language") => {
                let Some(group) = group_of(ctx, uid)? else {
                    return Ok(());
                };
                let Some(obj) = tree::load(ctx, uid)? else {
                    return Ok(());
                };
                let new_lang = language_of(&obj).to_string();
                let members = group_members(ctx, &group)?;
                if members.iter().any(|(l, u)| l == &new_lang && u == uid) {
                    return Ok(());
                }
                if let Some((_, other)) = members.iter().find(|(l, _)| l == &new_lang) {
                    let other_url = tree::load(ctx, other)?
                        .map(|r| ctx.url(&r.path))
                        .unwrap_or_else(|| other.clone());
                    return Err(EngineError::bad_request(format!(
                        "Cannot change the language of '{}' to '{new_lang}': its translation \
                         group already has '{other_url}' in that language; unlink it first",
                        ctx.url(&obj.path)
                    )));
                }
                for (lang, member) in &members {
                    if member == uid {
                        ctx.delete(&keys::translation(&group, lang))?;
                    }
                }
                if new_lang.is_empty() {
                    ctx.delete(&keys::translation_group_of(uid))?;
                    dissolve_if_single(ctx, &group)
                } else {
                    put_member(ctx, &group, &new_lang, uid)
                }
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_codes_are_checked_and_lower_cased() {
        assert_eq!(parse_code(&json!("DE"), "x").unwrap(), "de");
        assert_eq!(parse_code(&json!({"token": "es"}), "x").unwrap(), "es");
        assert_eq!(parse_code(&json!("pt-BR"), "x").unwrap(), "pt-br");
        let e = parse_code(&json!("xx"), "available_languages").unwrap_err();
        assert_eq!(e.status(), 400);
        assert!(e.to_string().contains("xx"));
        assert!(parse_code(&json!(3), "x").is_err());
        assert!(parse_code(&json!({"title": "English"}), "x").is_err());
    }

    #[test]
    fn language_roots_count_only_while_multilingual() {
        let mut s = LanguageSettings {
            available_languages: vec!["en".into(), "de".into()],
            default_language: "en".into(),
            profiles: vec![PROFILE_MULTILINGUAL_CONTENT.into()],
            language_roots: [("de".to_string(), "u-de".to_string())].into(),
        };
        // The content profile alone (without the base profile) is not multilingual.
        assert!(!s.is_multilingual());
        assert_eq!(s.root_language("u-de"), None);
        s.profiles.push(PROFILE_MULTILINGUAL.into());
        assert_eq!(s.root_language("u-de"), Some("de"));
        assert_eq!(s.root_language("u-en"), None);
        assert!(s.is_available("de") && !s.is_available("fr"));
    }

    #[test]
    fn profiles_are_known_by_id() {
        assert!(is_profile("multilingual") && is_profile("multilingual-content"));
        assert!(!is_profile("plone.app.multilingual:default"));
    }
}
