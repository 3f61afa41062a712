//! The UI strings the API itself serves (content type titles, workflow, state and transition
//! titles, action titles, control panel titles) and their translations into the site's
//! languages, for `@translated-messages`. The message ids are the English strings, collected
//! from the data that defines them (the type registry, the workflows, the stored actions, the
//! control panels), so a type or action added later is listed too; the translations are the
//! built-in catalog `model/messages.json` (German, Spanish, French and Dutch). A message the
//! catalog does not translate, and every message in English or a language without a catalog,
//! reads as its id. [`Translator`] applies the same catalog to the titles other endpoints serve
//! (`@types`, `@workflow`, the `type_title` of content and of listed items), by the content
//! language of a multilingual site, else the request's `Accept-Language`, as Plone does.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use crate::core::error::{EngineError, Result};
use crate::runtime::context::Ctx;
use crate::{content::multilingual, site::actions, site::controlpanels};

/// The built-in catalogs: language → message id → translation.
pub type Catalogs = BTreeMap<String, BTreeMap<String, String>>;

/// The built-in catalogs (`model/messages.json`).
pub fn catalogs() -> &'static Catalogs {
    static CATALOGS: OnceLock<Catalogs> = OnceLock::new();
    CATALOGS.get_or_init(|| {
        serde_json::from_str(include_str!("../core/model/messages.json")).unwrap_or_default()
    })
}

/// Every message id the site's data defines, in order.
pub fn message_ids(ctx: &Ctx<'_>) -> Result<BTreeSet<String>> {
    let mut ids = BTreeSet::new();
    for ty in ctx.types()?.all() {
        ids.insert(ty.title.clone());
    }
    for (_, wf) in ctx.core.workflows.all() {
        ids.insert(wf.title.clone());
        ids.extend(wf.states.values().map(|s| s.title.clone()));
        ids.extend(wf.transitions.values().map(|t| t.title.clone()));
    }
    for list in actions::stored(ctx)?.values() {
        ids.extend(list.iter().map(|a| a.title.clone()));
    }
    ids.extend(controlpanels::PANELS.iter().map(|p| p.title.to_string()));
    ids.retain(|s| !s.is_empty());
    Ok(ids)
}

/// The language messages are served in: `asked` (which must be one of the site's languages, else
/// a 400 naming `language`), else the first of `accepted` (the `Accept-Language` codes, best
/// first) that the site has, else the site's default language. Also returns the site's
/// languages.
pub fn pick_language(
    ctx: &Ctx<'_>,
    asked: Option<&str>,
    accepted: &[String],
) -> Result<(String, Vec<String>)> {
    let s = multilingual::settings(ctx)?;
    if let Some(code) = asked {
        if !s.is_available(code) {
            return Err(EngineError::bad_request(format!(
                "Query parameter 'language': '{code}' is not one of the site's languages ({})",
                s.available_languages.join(", ")
            )));
        }
        return Ok((code.to_string(), s.available_languages));
    }
    // In order of preference, each code or else its primary subtag (`de-AT` → `de`).
    let chosen = accepted
        .iter()
        .find_map(|c| {
            let primary = c.split('-').next().unwrap_or(c);
            [c.as_str(), primary]
                .into_iter()
                .find(|code| s.is_available(code))
                .map(str::to_string)
        })
        .unwrap_or_else(|| s.default_language.clone());
    Ok((chosen, s.available_languages))
}

/// Translates UI strings for one request, as Plone negotiates its language: on a multilingual
/// site into the language of the content the request addresses ([`Ctx::content_language`]),
/// else into the best language of its `Accept-Language` that the site has (else the site's
/// default language); strings stay as they are when neither names a language, or the language
/// has no catalog. Decided once per request ([`Ctx::ui_language`]).
pub struct Translator {
    catalog: Option<&'static BTreeMap<String, String>>,
}

impl Translator {
    /// The translator for the request of `ctx`.
    pub fn for_request(ctx: &Ctx<'_>) -> Result<Translator> {
        let language = match ctx.ui_language.get() {
            Some(language) => language.clone(),
            None => {
                let language = match &ctx.content_language {
                    Some(l) => Some(l.clone()),
                    None if ctx.accept_language.is_empty() => None,
                    None => Some(pick_language(ctx, None, &ctx.accept_language)?.0),
                };
                let _ = ctx.ui_language.set(language.clone());
                language
            }
        };
        Ok(Translator {
            catalog: language.and_then(|l| catalogs().get(&l)),
        })
    }

    /// `text` translated (itself when there is no translation).
    pub fn t(&self, text: &str) -> String {
        self.catalog
            .and_then(|c| c.get(text))
            .cloned()
            .unwrap_or_else(|| text.to_string())
    }
}

/// Every message id with its translation into `language` (the id itself where there is none).
pub fn messages(ctx: &Ctx<'_>, language: &str) -> Result<BTreeMap<String, String>> {
    let catalog = catalogs().get(language);
    Ok(message_ids(ctx)?
        .into_iter()
        .map(|id| {
            let t = catalog
                .and_then(|c| c.get(&id))
                .cloned()
                .unwrap_or_else(|| id.clone());
            (id, t)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogs_parse_and_translate_the_same_ids() {
        let c = catalogs();
        assert_eq!(
            c.keys().map(String::as_str).collect::<Vec<_>>(),
            ["de", "es", "fr", "nl"]
        );
        let ids: Vec<&String> = c["de"].keys().collect();
        for (lang, cat) in c {
            assert_eq!(cat.keys().collect::<Vec<_>>(), ids, "{lang}");
        }
        assert_eq!(c["de"]["Page"], "Seite");
    }
}
