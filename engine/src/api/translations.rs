//! `@translations` (list, link, unlink the translations of an object) and `@translation-locator`
//! (where a new translation of an object belongs). The rules live in [`crate::content::multilingual`].

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::Call;
use super::router::{Registry, RouteDef};
use super::Route;
use crate::content::multilingual;
use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// Register the translation routes and the `translations` component.
pub fn register(r: &mut Registry) {
    r.route(
        RouteDef::get("@translations", get)
            .requires(Permission::View)
            .summary("The translations of the object the caller may view, and the language roots")
            .answers::<TranslationStatus>(),
    );
    r.route(
        RouteDef::post("@translations", post)
            .requires(Permission::Modify)
            .status(204)
            .summary("Link another object (URL, path or UID in `id`) as a translation")
            .body::<LinkRequest>(),
    );
    r.route(
        RouteDef::delete("@translations", delete)
            .requires(Permission::Modify)
            .status(204)
            .summary("Unlink the translation in `language`")
            .body::<UnlinkRequest>(),
    );
    r.route(
        RouteDef::get("@translation-locator", locate)
            .requires(Permission::View)
            .summary("Where a new translation of the object into `target_language` belongs")
            .query::<LocatorQuery>()
            .answers::<Placement>(),
    );
    r.component("translations", Some(component));
}

/// The translations of an object.
#[derive(Serialize, JsonSchema)]
pub struct TranslationStatus {
    /// `<object URL>/@translations`.
    #[serde(rename = "@id")]
    pub id: String,
    /// The translations the caller may view.
    pub items: Vec<TranslationLink>,
    /// Language code → URL of that language's root folder (the site root when none).
    pub root: BTreeMap<String, String>,
}

/// One translation.
#[derive(Serialize, JsonSchema)]
pub struct TranslationLink {
    /// Its URL.
    #[serde(rename = "@id")]
    pub id: String,
    /// Its language code.
    pub language: String,
}

/// A link request.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkRequest {
    /// The URL, site path or UID of the translation to link.
    pub id: Option<Value>,
}

/// An unlink request.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnlinkRequest {
    /// The language of the translation to unlink.
    pub language: Option<Value>,
}

/// The query of `@translation-locator`.
#[derive(Deserialize, JsonSchema)]
pub struct LocatorQuery {
    /// The language of the translation to be made.
    pub target_language: Option<String>,
}

/// Where something belongs.
#[derive(Serialize, JsonSchema)]
pub struct Placement {
    /// The folder's URL.
    #[serde(rename = "@id")]
    pub id: String,
}

/// GET `<path>/@translations`.
fn get(ctx: &mut Ctx<'_>, _: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    Ok(Response::json(200, &status(ctx, &obj)?))
}

/// The `translations` component.
fn component(ctx: &Ctx<'_>, _: &Route, obj: &ContentRecord) -> Result<Value> {
    Ok(serde_json::to_value(status(ctx, obj)?)?)
}

/// The translations status of `obj` (the `translations` component): `{@id, items: [{@id,
/// language}], root: {language: URL of its root folder}}`. Only translations the caller may view are
/// listed; a language without a root folder maps to the site root. Empty on a site that is not
/// multilingual.
pub fn status(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<TranslationStatus> {
    let id = format!("{}/@translations", ctx.url(&obj.path));
    let s = multilingual::settings(ctx)?;
    let mut items = Vec::new();
    let mut root = BTreeMap::new();
    if !s.is_multilingual() {
        return Ok(TranslationStatus { id, items, root });
    }
    for (lang, rec) in multilingual::translations(ctx, obj)? {
        if ctx.permitted(Permission::View, &rec)? {
            items.push(TranslationLink {
                id: ctx.url(&rec.path),
                language: lang,
            });
        }
    }
    for lang in &s.available_languages {
        let path = match s.language_roots.get(lang) {
            Some(uid) => tree::load(ctx, uid)?.map(|r| r.path),
            None => None,
        };
        root.insert(lang.clone(), ctx.url(&path.unwrap_or_default()));
    }
    Ok(TranslationStatus { id, items, root })
}

/// POST `<path>/@translations` `{id}`: link the object named by `id` (URL, site path or UID) as a
/// translation of this one; 204.
fn post(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let body: LinkRequest = call.body()?;
    multilingual::require_multilingual(ctx)?;
    let reference = match body.id.as_ref() {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(_) => {
            return Err(EngineError::bad_request(
                "'id' must be the URL, path or UID of the translation to link",
            ))
        }
        None => {
            return Err(EngineError::bad_request(
                "Property 'id' (the URL, path or UID of the translation to link) is required",
            ))
        }
    };
    let target = multilingual::resolve_reference(ctx, &reference)?.ok_or_else(|| {
        EngineError::bad_request(format!("Content does not exist: '{reference}'"))
    })?;
    ctx.require(Permission::Modify, &target)?;
    multilingual::link(ctx, &obj, &target)?;
    Ok(Response::empty(204))
}

/// DELETE `<path>/@translations` `{language}`: unlink the translation in that language; 204.
fn delete(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let body: UnlinkRequest = call.body()?;
    multilingual::require_multilingual(ctx)?;
    let lang = match body.language.as_ref() {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_ascii_lowercase(),
        Some(_) => {
            return Err(EngineError::bad_request(
                "'language' must be a language code",
            ))
        }
        None => {
            return Err(EngineError::bad_request(
                "Property 'language' (the language of the translation to unlink) is required",
            ))
        }
    };
    multilingual::unlink(ctx, &obj, &lang)?;
    Ok(Response::empty(204))
}

/// GET `<path>/@translation-locator?target_language=<code>`: `{@id}` of the folder a new
/// translation of this object belongs in: the translation of its parent into that language when
/// there is one, else that language's root folder (else the site root).
fn locate(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let s = multilingual::require_multilingual(ctx)?;
    let q: LocatorQuery = call.query()?;
    let target = q
        .target_language
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| EngineError::bad_request("Query parameter 'target_language' is required"))?;
    if !s.is_available(&target) {
        return Err(EngineError::bad_request(format!(
            "'{target}' is not one of the site's languages ({})",
            s.available_languages.join(", ")
        )));
    }
    if multilingual::language_of(&obj) == target {
        return Err(EngineError::bad_request(format!(
            "'{}' is already in '{target}'; a translation must be in another language",
            ctx.url(&obj.path)
        )));
    }
    let parent = tree::parent(ctx, &obj)?.ok_or_else(|| {
        EngineError::bad_request("The site root is not translatable; it has no placement")
    })?;
    let placement = match multilingual::translation_in(ctx, &parent, &target)? {
        Some(p) => p.path,
        None => match s.language_roots.get(&target) {
            Some(uid) => tree::load(ctx, uid)?.map(|r| r.path).unwrap_or_default(),
            None => String::new(),
        },
    };
    Ok(Response::json(
        200,
        &Placement {
            id: ctx.url(&placement),
        },
    ))
}
