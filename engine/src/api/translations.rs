//! `@translations` (list, link, unlink the translations of an object) and `@translation-locator`
//! (where a new translation of an object belongs). The rules live in [`crate::multilingual`].

use serde_json::{json, Map, Value};

use super::{json_body, Route};
use crate::context::Ctx;
use crate::error::{EngineError, Result};
use crate::http::{Request, Response};
use crate::model::ContentRecord;
use crate::multilingual;
use crate::permissions::Access;
use crate::security::Permission;
use crate::tree;

/// GET `<path>/@translations`.
pub fn get(ctx: &mut Ctx<'_>, _: &Request, route: &Route, obj: ContentRecord) -> Result<Response> {
    ctx.require(Permission::View, &obj)?;
    Ok(Response::json(200, &status(ctx, route, &obj)?))
}

/// The translations status of `obj` (the `translations` component): `{@id, items: [{@id,
/// language}], root: {language: URL of its root folder}}`. Only translations the caller may view are
/// listed; a language without a root folder maps to the site root. Empty on a site that is not
/// multilingual.
pub fn status(ctx: &Ctx<'_>, _: &Route, obj: &ContentRecord) -> Result<Value> {
    let id = format!("{}/@translations", ctx.url(&obj.path));
    let s = multilingual::settings(ctx)?;
    if !s.is_multilingual() {
        return Ok(json!({"@id": id, "items": [], "root": {}}));
    }
    let mut items = Vec::new();
    for (lang, rec) in multilingual::translations(ctx, obj)? {
        if ctx.permitted(Permission::View, &rec)? {
            items.push(json!({"@id": ctx.url(&rec.path), "language": lang}));
        }
    }
    let mut root = Map::new();
    for lang in &s.available_languages {
        let path = match s.language_roots.get(lang) {
            Some(uid) => tree::load(ctx, uid)?.map(|r| r.path),
            None => None,
        };
        root.insert(lang.clone(), json!(ctx.url(&path.unwrap_or_default())));
    }
    Ok(json!({"@id": id, "items": items, "root": root}))
}

/// POST `<path>/@translations` `{id}`: link the object named by `id` (URL, site path or UID) as a
/// translation of this one; 204.
pub fn post(ctx: &mut Ctx<'_>, req: &Request, _: &Route, obj: ContentRecord) -> Result<Response> {
    let body = json_body(req)?;
    ctx.require(Permission::Modify, &obj)?;
    multilingual::require_multilingual(ctx)?;
    let reference = match body.get("id") {
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
pub fn delete(ctx: &mut Ctx<'_>, req: &Request, _: &Route, obj: ContentRecord) -> Result<Response> {
    let body = json_body(req)?;
    ctx.require(Permission::Modify, &obj)?;
    multilingual::require_multilingual(ctx)?;
    let lang = match body.get("language") {
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
pub fn locate(
    ctx: &mut Ctx<'_>,
    _: &Request,
    route: &Route,
    obj: ContentRecord,
) -> Result<Response> {
    ctx.require(Permission::View, &obj)?;
    let s = multilingual::require_multilingual(ctx)?;
    let target = route
        .query
        .get("target_language")
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
    Ok(Response::json(200, &json!({"@id": ctx.url(&placement)})))
}
