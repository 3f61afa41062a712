//! The site's languages and the multilingual profiles: setting the languages, installing and
//! uninstalling the profiles, and the language root folders that
//! [`PROFILE_MULTILINGUAL_CONTENT`] keeps, one per language (created through
//! [`operations::place`], the site adding content itself). Apart from the rest of
//! [`crate::content::multilingual`] because content operations use that part (the language of a
//! new object, translation links) and this part uses the operations.

use serde_json::{json, Map};

use super::{
    group_members, group_of, is_profile, language_changed, language_of, parse_code, put_member,
    save_settings, settings, LanguageSettings, LIF, PROFILES, PROFILE_MULTILINGUAL,
    PROFILE_MULTILINGUAL_CONTENT,
};
use crate::content::{content_types, operations, tree};
use crate::core::clock::iso;
use crate::core::error::{EngineError, Result};
use crate::core::model::types::TypeData;
use crate::core::model::{language, ContentRecord};
use crate::runtime::context::Ctx;

/// The type of the language root folders (Plone's "Language Root Folder"), added to the type
/// registry when [`PROFILE_MULTILINGUAL_CONTENT`] is installed.
pub const LRF: &str = "LRF";

/// The id of the language independent folder made in each new language root folder (Plone's
/// `assets`), and its title.
pub const ASSETS: (&str, &str) = ("assets", "Assets");

/// The `layout` of the site root while [`PROFILE_MULTILINGUAL_CONTENT`] is installed (Plone's
/// view that sends a visitor to the root folder of their language).
pub const ROOT_LAYOUT: &str = "language-switcher";

/// The registry record of [`LRF`]: folderish, not addable by users (`global_allow` off), the
/// fields Plone's language root folders have plus blocks (Volto edits them as pages), layout
/// `folder_listing`, the folders' workflow.
fn lrf_type() -> TypeData {
    TypeData {
        name: LRF.into(),
        title: "Language Root Folder".into(),
        description: "The root folder of one of the site's languages (a navigation root)".into(),
        folderish: true,
        global_allow: false,
        allowed_types: None,
        layout: "folder_listing".into(),
        layouts: [
            "folder_listing",
            "document_view",
            "listing_view",
            "summary_view",
        ]
        .map(String::from)
        .to_vec(),
        workflow: Some("simple_publication_workflow".into()),
        allow_discussion: false,
        behaviors: [
            "plone.dublincore",
            "plone.excludefromnavigation",
            "plone.allowdiscussion",
            "volto.blocks",
        ]
        .map(String::from)
        .to_vec(),
        fields: Vec::new(),
        fieldsets: Vec::new(),
        nick_switches: Vec::new(),
    }
}

/// The registry record of [`LIF`]: folderish, not addable by users (`global_allow` off: the site
/// makes one per language root folder), any type addable inside, Plone's fields and layouts
/// (`folder_listing` first), the folders' workflow.
fn lif_type() -> TypeData {
    TypeData {
        name: LIF.into(),
        title: "Language Independent Folder".into(),
        description: "A folder whose content has no language (assets every language uses)".into(),
        folderish: true,
        global_allow: false,
        allowed_types: None,
        layout: "folder_listing".into(),
        layouts: [
            "folder_listing",
            "summary_view",
            "listing_view",
            "album_view",
        ]
        .map(String::from)
        .to_vec(),
        workflow: Some("simple_publication_workflow".into()),
        allow_discussion: false,
        behaviors: [
            "plone.dublincore",
            "plone.excludefromnavigation",
            "plone.allowdiscussion",
        ]
        .map(String::from)
        .to_vec(),
        fields: Vec::new(),
        fieldsets: Vec::new(),
        nick_switches: Vec::new(),
    }
}

/// Add [`LRF`] and [`LIF`] to the type registry unless they are there (a site owner may have
/// changed them since): on installing [`PROFILE_MULTILINGUAL_CONTENT`], and on a replica that imports a server's
/// language root folder.
pub fn ensure_lrf_type(ctx: &mut Ctx<'_>) -> Result<()> {
    if ctx.types()?.get(LRF).is_none() {
        content_types::save_type(ctx, lrf_type())?;
    }
    if ctx.types()?.get(LIF).is_none() {
        content_types::save_type(ctx, lif_type())?;
    }
    Ok(())
}

/// Make `rec` (a language root folder stored as a `Folder` before [`LRF`] existed, or a folder
/// adopted as one) an [`LRF`]: the fields its new type lacks are dropped, its layout too unless
/// chosen among the new type's.
fn convert_to_lrf(ctx: &mut Ctx<'_>, rec: &mut ContentRecord) -> Result<()> {
    let ty = ctx.types()?.require(LRF)?;
    let mut changed: Vec<String> = Vec::new();
    let keys: Vec<String> = rec.fields.keys().cloned().collect();
    for k in keys {
        let keep = if k == "layout" {
            rec.fields
                .get(&k)
                .and_then(|v| v.as_str())
                .is_some_and(|l| ty.data.layouts.iter().any(|x| x == l) && l != "document_view")
        } else {
            ty.field(&k).is_some()
        };
        if !keep {
            rec.fields.remove(&k);
            changed.push(k);
        }
    }
    rec.type_name = LRF.into();
    changed.push("@type".into());
    tree::save(
        ctx,
        rec,
        tree::Change::Edit {
            fields: changed,
            change_note: None,
        },
    )
}

/// Give the site root [`ROOT_LAYOUT`] (`on`) or take it away again (`!on`); a layout the site
/// owner chose otherwise is kept.
fn set_root_layout(ctx: &mut Ctx<'_>, on: bool) -> Result<()> {
    let mut root = tree::root(ctx)?;
    let current = root.fields.get("layout").and_then(|v| v.as_str());
    let next = match (on, current) {
        (true, None) => Some(ROOT_LAYOUT),
        (false, Some(ROOT_LAYOUT)) => None,
        _ => return Ok(()),
    };
    match next {
        Some(l) => root.fields.insert("layout".into(), json!(l)),
        None => root.fields.remove("layout"),
    };
    tree::save(
        ctx,
        &mut root,
        tree::Change::Edit {
            fields: vec!["layout".into()],
            change_note: None,
        },
    )
}

/// Set the site's languages (`available`, in order, at least one) and the default language
/// (`default`, one of them; when `None` the current default is kept if still available, else the
/// first). With [`PROFILE_MULTILINGUAL_CONTENT`] installed, languages without a root folder get one.
pub fn set_languages(
    ctx: &mut Ctx<'_>,
    available: &[String],
    default: Option<&str>,
) -> Result<LanguageSettings> {
    let mut codes: Vec<String> = Vec::new();
    for c in available {
        let code = parse_code(&json!(c), "available_languages")?;
        if !codes.contains(&code) {
            codes.push(code);
        }
    }
    if codes.is_empty() {
        return Err(EngineError::bad_request(
            "'available_languages' must name at least one language",
        ));
    }
    let mut s = settings(ctx)?;
    let default = match default {
        Some(d) => {
            let d = parse_code(&json!(d), "default_language")?;
            if !codes.contains(&d) {
                return Err(EngineError::bad_request(format!(
                    "The default language '{d}' must be one of the available languages ({})",
                    codes.join(", ")
                )));
            }
            d
        }
        None if codes.contains(&s.default_language) => s.default_language.clone(),
        None => codes[0].clone(),
    };
    s.available_languages = codes;
    s.default_language = default;
    if s.has_profile(PROFILE_MULTILINGUAL_CONTENT) {
        ensure_language_roots(ctx, &mut s)?;
    }
    save_settings(ctx, &s)?;
    Ok(s)
}

/// Install profile `id` (idempotent). [`PROFILE_MULTILINGUAL_CONTENT`] also installs
/// [`PROFILE_MULTILINGUAL`] and creates (or adopts existing `/<code>` folders as) the language
/// root folders; an object at `/<code>` that is not a folder is a 409 and nothing changes.
pub fn install(ctx: &mut Ctx<'_>, id: &str) -> Result<LanguageSettings> {
    if !is_profile(id) {
        return Err(EngineError::bad_request(format!(
            "Unknown profile '{id}'; known profiles: {}",
            PROFILES
                .iter()
                .map(|(p, _, _)| *p)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut s = settings(ctx)?;
    let mut add = vec![PROFILE_MULTILINGUAL];
    if id == PROFILE_MULTILINGUAL_CONTENT {
        add.push(PROFILE_MULTILINGUAL_CONTENT);
    }
    for p in add {
        if !s.has_profile(p) {
            s.profiles.push(p.to_string());
        }
    }
    if s.has_profile(PROFILE_MULTILINGUAL_CONTENT) {
        ensure_language_roots(ctx, &mut s)?;
        set_root_layout(ctx, true)?;
    }
    save_settings(ctx, &s)?;
    Ok(s)
}

/// Uninstall profile `id`: uninstalling [`PROFILE_MULTILINGUAL`] switches multilingual support
/// off (and with it [`PROFILE_MULTILINGUAL_CONTENT`]). Content, language root folders and
/// translation links are kept, so installing again restores them.
pub fn uninstall(ctx: &mut Ctx<'_>, id: &str) -> Result<LanguageSettings> {
    if !is_profile(id) {
        return Err(EngineError::bad_request(format!("Unknown profile '{id}'")));
    }
    let mut s = settings(ctx)?;
    s.profiles
        .retain(|p| p != id && !(id == PROFILE_MULTILINGUAL && p == PROFILE_MULTILINGUAL_CONTENT));
    if !s.has_profile(PROFILE_MULTILINGUAL_CONTENT) {
        set_root_layout(ctx, false)?;
    }
    save_settings(ctx, &s)?;
    Ok(s)
}

/// Apply host configuration: set the languages (when `languages` is not empty: the first is the
/// default) and install every profile in `profiles`. Idempotent, so hosts may call it at every
/// start; used by [`crate::Engine::create_site`] and [`crate::Engine::configure_languages`].
pub fn configure(ctx: &mut Ctx<'_>, profiles: &[String], languages: &[String]) -> Result<()> {
    if !languages.is_empty() {
        set_languages(ctx, languages, languages.first().map(String::as_str))?;
    }
    for p in profiles {
        install(ctx, p)?;
    }
    Ok(())
}

/// Create (or adopt) the root folder of every available language that has none, and link the roots
/// as translations of each other. Every root is an [`LRF`]: roots and adopted folders stored as
/// `Folder`s become one.
fn ensure_language_roots(ctx: &mut Ctx<'_>, s: &mut LanguageSettings) -> Result<()> {
    ensure_lrf_type(ctx)?;
    let mut root = tree::root(ctx)?;
    let mut roots: Vec<(String, ContentRecord)> = Vec::new();
    for code in s.available_languages.clone() {
        if let Some(uid) = s.language_roots.get(&code) {
            if let Some(mut rec) = tree::load(ctx, uid)? {
                if rec.type_name == "Folder" {
                    convert_to_lrf(ctx, &mut rec)?;
                }
                roots.push((code, rec));
                continue;
            }
        }
        let rec = match tree::at_path(ctx, &format!("/{code}"))? {
            Some(mut existing) => {
                if existing.type_name != "Folder" && existing.type_name != LRF {
                    return Err(EngineError::Conflict(format!(
                        "'{}' is a {}, not a folder; it cannot become the language root of '{code}'",
                        ctx.url(&existing.path),
                        existing.type_name
                    )));
                }
                if language_of(&existing) != code {
                    existing.fields.insert("language".into(), json!(code));
                    tree::save(ctx, &mut existing, language_changed())?;
                }
                if existing.type_name != LRF {
                    convert_to_lrf(ctx, &mut existing)?;
                }
                existing
            }
            None => create_language_root(ctx, &mut root, &code)?,
        };
        s.language_roots.insert(code.clone(), rec.uid.clone());
        roots.push((code, rec));
    }
    // One translation group for all the roots: an existing one if any root has it.
    let mut group = None;
    for (_, rec) in &roots {
        if let Some(g) = group_of(ctx, &rec.uid)? {
            group = Some(g);
            break;
        }
    }
    let Some(first) = roots.first() else {
        return Ok(());
    };
    let group = group.unwrap_or_else(|| first.1.uid.clone());
    let members = group_members(ctx, &group)?;
    for (code, rec) in &roots {
        let taken = members.iter().any(|(l, u)| l == code || u == &rec.uid);
        if !taken && group_of(ctx, &rec.uid)?.is_none() {
            put_member(ctx, &group, code, &rec.uid)?;
        }
    }
    Ok(())
}

fn create_language_root(
    ctx: &mut Ctx<'_>,
    root: &mut ContentRecord,
    code: &str,
) -> Result<ContentRecord> {
    let ty = ctx.types()?.require(LRF)?;
    let state = ty
        .workflow
        .as_deref()
        .and_then(|w| ctx.core.workflows.get(w))
        .map(|w| {
            if w.states.contains_key("published") {
                "published".to_string()
            } else {
                w.initial_state.clone()
            }
        });
    let now = ctx.now();
    let owner = root.owner.clone();
    let mut fields = Map::new();
    fields.insert("title".into(), json!(language::title(code).unwrap_or(code)));
    fields.insert("language".into(), json!(code));
    fields.insert("exclude_from_nav".into(), json!(true));
    fields.insert("creators".into(), json!([owner]));
    if state.as_deref() == Some("published") {
        fields.insert("effective".into(), json!(iso(&now)));
    }
    let mut lrf = operations::place(
        ctx,
        root,
        operations::Place {
            type_name: ty.name.clone(),
            id: code.to_string(),
            owner: owner.clone(),
            fields: fields.clone(),
            review_state: state.clone(),
        },
    )?;
    // Its language independent folder, as Plone's language setup makes it: published and
    // excluded from navigation like the root folder.
    fields.insert("title".into(), json!(ASSETS.1));
    operations::place(
        ctx,
        &mut lrf,
        operations::Place {
            type_name: LIF.into(),
            id: ASSETS.0.into(),
            owner,
            fields,
            review_state: state,
        },
    )?;
    Ok(lrf)
}
