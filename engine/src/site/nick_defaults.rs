//! What a new Nick site starts with where Nick 2.8's core profile differs from Plone's defaults:
//! the actions (Nick's set and titles: "Sitemap", a "Register" link for visitors, no portal tab or
//! URL management button), the image sizes (Plone's without the four largest), the available
//! languages (English, Dutch, Swedish), the robots.txt text, and the type set (Nick's eight types:
//! no Collection, Link or News Item; Feed not addable by default; Nick's type descriptions). Written once, when the site is
//! created ([`crate::site::setup::create`]); afterwards they are ordinary settings, changed through
//! the same control panels and registry as on any site.

use serde_json::{json, Value};

use crate::content::content_types;
use crate::core::error::Result;
use crate::runtime::context::Ctx;
use crate::site::configuration;

/// Nick's actions, in the stored shape of [`crate::core::model::actions::Action`] (permissions by
/// this engine's names: the ones Nick's `Modify`, `Add`, `Manage Site` stand for).
const NICK_ACTIONS: &str = r#"{
  "object": [
    {"id": "view", "title": "View", "permission": "View"},
    {"id": "edit", "title": "Edit", "permission": "Modify portal content"},
    {"id": "folderContents", "title": "Contents", "permission": "Modify portal content"},
    {"id": "history", "title": "History", "permission": "Modify portal content"},
    {"id": "local_roles", "title": "Sharing", "permission": "Modify portal content"},
    {"id": "contentrules", "title": "Rules", "permission": "Modify portal content"}
  ],
  "object_buttons": [
    {"id": "cut", "title": "Cut", "permission": "Modify portal content"},
    {"id": "copy", "title": "Copy", "permission": "Modify portal content"},
    {"id": "paste", "title": "Paste", "permission": "Add portal content"},
    {"id": "delete", "title": "Delete", "permission": "Modify portal content"},
    {"id": "rename", "title": "Rename", "permission": "Modify portal content"}
  ],
  "site_actions": [
    {"id": "sitemap", "title": "Sitemap", "permission": "View"},
    {"id": "accessibility", "title": "Accessibility", "permission": "View"},
    {"id": "contact", "title": "Contact", "permission": "View"}
  ],
  "user": [
    {"id": "preferences", "title": "Preferences", "available_to": "authenticated"},
    {"id": "plone_setup", "title": "Site Setup", "permission": "Manage portal"},
    {"id": "login", "title": "Log in", "available_to": "anonymous"},
    {"id": "logout", "title": "Log out", "available_to": "authenticated"},
    {"id": "register", "title": "Register", "available_to": "anonymous"}
  ],
  "document_actions": []
}"#;

/// Nick's image sizes (`name width:height`).
const NICK_SIZES: &[&str] = &[
    "large 800:65536",
    "preview 400:65536",
    "mini 200:65536",
    "thumb 128:128",
    "tile 64:64",
    "icon 32:32",
    "listing 16:16",
];

/// The languages a Nick site offers when created without a language list.
const NICK_LANGUAGES: &[&str] = &["en", "nl", "sv"];

/// Nick's robots.txt.
const NICK_ROBOTS_TXT: &str = "Sitemap: {portal_url}/sitemap.xml.gz\n\n# Define access-restrictions for robots/spiders\n# http://www.robotstxt.org/wc/norobots.html\n\n\n\n# By default we allow robots to access all areas of our site\n# already accessible to anonymous users\n\nUser-agent: *\nDisallow:\n\n\n\n# Add Googlebot-specific syntax extension to exclude forms\n# that are repeated for each piece of content in the site\n# the wildcard is only supported by Googlebot\n# http://www.google.com/support/webmasters/bin/answer.py?answer=40367&ctx=sibling\n\nUser-Agent: Googlebot\nDisallow: /*?\nDisallow: /*atct_album_view$\nDisallow: /*folder_factories$\nDisallow: /*folder_summary_view$\nDisallow: /*login_form$\nDisallow: /*mail_password_form$\nDisallow: /@@search\nDisallow: /*search_rss$\nDisallow: /*sendto_form$\nDisallow: /*summary_view$\nDisallow: /*thumbnail_view$\nDisallow: /*view$\n";

/// Nick's site title (its site control panel's `site_title`), apart from the root's title.
const NICK_SITE_TITLE: &str = "Nick";

/// The built-in types Nick 2.8 does not have (removed from a new Nick site).
const NOT_NICK_TYPES: &[&str] = &["Collection", "Link", "News Item"];

/// Nick's type set: its eight types with Nick's schemas (its core profile's `types/*.json` and
/// `behaviors/*.json`, written in this registry's format): Page, Folder and the site root with
/// Dublin Core (Nick's titles and help texts, `coverage`, `source` and `publisher` as stored
/// fields, related items among the categorization fields), blocks, versioning and exclusion
/// from navigation, and no rich text, table of contents, discussion or preview image field;
/// Event with its event fields; File, Image and Video without blocks; Feed not addable unless
/// a folder allows it; Nick's descriptions and panel switches (`dates`, `dublin_core`,
/// `short_name` on; the site root's `short_name` off); no layouts. The behaviors keep this
/// registry's names, so the types panel and `@vocabularies/behaviors` name them as on any Nick
/// site.
pub const NICK_TYPES: &str = include_str!("nick_types.json");

/// Give a new site Nick's type set: remove the types Nick does not have, and write Nick's
/// types and behaviors over the built-in ones (ordinary type records afterwards).
fn seed_types(ctx: &mut Ctx<'_>) -> Result<()> {
    for name in NOT_NICK_TYPES {
        if ctx.types()?.get(name).is_some() {
            content_types::remove_type(ctx, name)?;
        }
    }
    content_types::install_set(ctx, NICK_TYPES)
}

/// Write Nick's defaults into a new site; `languages` are the ones the site was created with
/// (when empty: Nick's three, and the site's default language if it is another one);
/// `admin_login` is the account the site was created with, one of its system users
/// ([`crate::people::accounts::system_users`]).
pub fn seed(ctx: &mut Ctx<'_>, languages: &[String], admin_login: &str) -> Result<()> {
    crate::people::accounts::set_system_users(ctx, admin_login)?;
    let actions: Value = serde_json::from_str(NICK_ACTIONS)?;
    configuration::set(ctx, configuration::ACTIONS, configuration::ACTIONS, actions)?;
    configuration::set(
        ctx,
        configuration::ALLOWED_SIZES,
        configuration::ALLOWED_SIZES,
        json!(NICK_SIZES),
    )?;
    configuration::set(
        ctx,
        configuration::ROBOTS_TXT,
        configuration::ROBOTS_TXT,
        json!(NICK_ROBOTS_TXT),
    )?;
    // Nick's site title, kept apart from its root's title.
    configuration::set(
        ctx,
        configuration::SITE_TITLE,
        configuration::SITE_TITLE,
        json!(NICK_SITE_TITLE),
    )?;
    seed_types(ctx)?;
    if languages.is_empty() {
        // The site's default language stays what the host chose, and is offered too.
        let default = crate::content::multilingual::settings(ctx)?.default_language;
        let mut codes: Vec<String> = NICK_LANGUAGES.iter().map(|c| c.to_string()).collect();
        if !codes.contains(&default) {
            codes.insert(0, default.clone());
        }
        crate::content::multilingual::profiles::set_languages(ctx, &codes, Some(&default))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nick_actions_are_valid_stored_actions() {
        let v: Value = serde_json::from_str(NICK_ACTIONS).unwrap();
        crate::core::model::actions::validate("plone.actions", &v, |p| {
            crate::core::security::Permission::from_name(p).is_some()
        })
        .unwrap();
    }

    #[test]
    fn nick_types_resolve_over_the_builtin_behaviors() {
        use crate::core::model::types::{parse, TypeRegistry, BUILTIN_TYPES};
        let (mut behaviors, _) = parse(BUILTIN_TYPES).unwrap();
        let (nick_behaviors, nick_types) = parse(NICK_TYPES).unwrap();
        behaviors.retain(|b| !nick_behaviors.iter().any(|n| n.name == b.name));
        behaviors.extend(nick_behaviors);
        let r = TypeRegistry::build(behaviors, nick_types).unwrap();
        assert_eq!(r.all().count(), 8);
        let page = r.get("Page").unwrap();
        for gone in [
            "text",
            "table_of_contents",
            "allow_discussion",
            "preview_image",
        ] {
            assert!(page.field(gone).is_none(), "{gone}");
        }
        for kept in ["coverage", "source", "publisher", "relatedItems", "blocks"] {
            assert!(page.field(kept).is_some(), "{kept}");
        }
        assert!(r.get("Event").unwrap().field("start").unwrap().required);
        assert!(!r.get("Feed").unwrap().global_allow);
    }

    #[test]
    fn nick_sizes_parse() {
        for s in NICK_SIZES {
            assert!(crate::content::files::parse_size(s).is_some(), "{s}");
        }
    }
}
