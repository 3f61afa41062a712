//! `@site`: site-wide information a front end needs at boot (title, logo, languages, time zone,
//! which optional features are on). Read from the configuration registry, so it always agrees
//! with `@registry` and the `site` and `language` control panels.
//!
//! | method | path | answer |
//! |---|---|---|
//! | GET | `/@site` | 200, `{@id, features: {filter_aliases_by_date, multilingual}, plone.allowed_sizes, plone.available_languages, plone.default_language, plone.portal_timezone, plone.robots_txt, plone.site_logo, plone.site_title}` |
//!
//! Only on the site root; needs View on it.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use crate::content::multilingual;
use crate::core::error::Result;
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;
use crate::site::configuration as config;

/// Register `@site`.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@site", get)
            .root_only()
            .requires(Permission::View)
            .summary("Site-wide information: title, logo, languages, time zone, features")
            .answers::<SiteInfo>(),
    );
}

/// Which optional features the site has.
#[derive(Serialize, JsonSchema)]
pub struct Features {
    /// `@aliases` filters by date (`start`, `end`).
    pub filter_aliases_by_date: bool,
    /// Multilingual support is installed.
    pub multilingual: bool,
}

/// The answer of `@site`.
#[derive(Serialize, JsonSchema)]
pub struct SiteInfo {
    /// `<site>/@site`.
    #[serde(rename = "@id")]
    pub id: String,
    /// Optional features.
    pub features: Features,
    /// The image scale sizes (`name width:height`), the registry's `plone.allowed_sizes`: what
    /// Volto's image widgets choose among.
    #[serde(rename = "plone.allowed_sizes")]
    pub allowed_sizes: Value,
    /// The site's language codes.
    #[serde(rename = "plone.available_languages")]
    pub available_languages: Vec<String>,
    /// The default language code.
    #[serde(rename = "plone.default_language")]
    pub default_language: String,
    /// The site's time zone (IANA name).
    #[serde(rename = "plone.portal_timezone")]
    pub portal_timezone: Value,
    /// robots.txt.
    #[serde(rename = "plone.robots_txt")]
    pub robots_txt: Value,
    /// The logo's absolute URL, or null for the default logo.
    #[serde(rename = "plone.site_logo")]
    pub site_logo: Option<String>,
    /// The site title.
    #[serde(rename = "plone.site_title")]
    pub site_title: Value,
}

/// GET `/@site`.
fn get(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let langs = multilingual::settings(ctx)?;
    let site_logo = config::get(ctx, config::SITE_LOGO)?.as_str().map(|u| {
        if u.starts_with('/') {
            ctx.url(u.trim_end_matches('/'))
        } else {
            u.to_string()
        }
    });
    let info = SiteInfo {
        id: format!("{}/@site", ctx.base_url),
        features: Features {
            filter_aliases_by_date: true,
            multilingual: langs.is_multilingual(),
        },
        allowed_sizes: config::get(ctx, config::ALLOWED_SIZES)?,
        available_languages: langs.available_languages.clone(),
        default_language: langs.default_language.clone(),
        portal_timezone: config::get(ctx, config::TIMEZONE)?,
        robots_txt: config::get(ctx, config::ROBOTS_TXT)?,
        site_logo,
        site_title: config::get(ctx, config::SITE_TITLE)?,
    };
    Ok(Response::json(200, &info))
}
