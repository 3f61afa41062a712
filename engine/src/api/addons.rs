//! `@addons`: the installable profiles of the site (see [`crate::content::multilingual::PROFILES`]):
//!
//! | method | path | answer |
//! |---|---|---|
//! | GET | `/@addons` | 200, `{@id, items: [addon], items_total}` |
//! | GET | `/@addons/<id>` | 200, addon `{@id, id, title, description, is_installed}` |
//! | POST | `/@addons/<id>/install` | 204 (installing an installed profile changes nothing) |
//! | POST | `/@addons/<id>/uninstall` | 204 |
//!
//! Only on the site root; the Manage portal permission is required.

use schemars::JsonSchema;
use serde::Serialize;

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use super::Route;
use crate::content::multilingual::{self, LanguageSettings, PROFILES};
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register the add-on routes.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@addons/{id?}", get)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("The installable profiles, or one of them")
            .answers::<AddonList>(),
    );
    r.route(
        RouteDef::post("@addons/{id}/{action}", post)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("`install` or `uninstall` a profile (installing twice changes nothing)"),
    );
}

/// The installable profiles.
#[derive(Serialize, JsonSchema)]
pub struct AddonList {
    /// `/@addons`.
    #[serde(rename = "@id")]
    pub id: String,
    /// Every profile.
    pub items: Vec<Addon>,
    /// How many.
    pub items_total: usize,
}

/// One installable profile.
#[derive(Serialize, JsonSchema)]
pub struct Addon {
    /// `/@addons/<id>`.
    #[serde(rename = "@id")]
    pub url: String,
    /// Its id.
    pub id: &'static str,
    /// Its title.
    pub title: &'static str,
    /// What it does.
    pub description: &'static str,
    /// Whether it is installed.
    pub is_installed: bool,
    /// Plone's key: the version of the code providing it (the engine's).
    pub version: &'static str,
    /// Plone's key: pending upgrade steps; always empty (an add-on here is part of the engine,
    /// upgraded with it). Volto's add-ons panel reads it for installed add-ons.
    pub upgrade_info: UpgradeInfo,
}

/// Pending upgrades of an add-on: none (serialized `{}`).
#[derive(Serialize, JsonSchema)]
pub struct UpgradeInfo {}

fn not_found(ctx: &Ctx<'_>, route: &Route) -> EngineError {
    EngineError::NotFound {
        url: route.url(&ctx.base_url),
        context: Some(ctx.base_url.clone()),
    }
}

fn addon(
    ctx: &Ctx<'_>,
    s: &LanguageSettings,
    (id, title, description): &(&'static str, &'static str, &'static str),
) -> Addon {
    Addon {
        url: format!("{}/@addons/{id}", ctx.base_url),
        id,
        title,
        description,
        is_installed: s.has_profile(id),
        version: env!("CARGO_PKG_VERSION"),
        upgrade_info: UpgradeInfo {},
    }
}

/// GET `/@addons` and `/@addons/<id>`.
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let s = multilingual::settings(ctx)?;
    match call.param("id") {
        None => {
            let items: Vec<Addon> = PROFILES.iter().map(|p| addon(ctx, &s, p)).collect();
            let list = AddonList {
                id: format!("{}/@addons", ctx.base_url),
                items_total: items.len(),
                items,
            };
            Ok(Response::json(200, &list))
        }
        Some(name) => PROFILES
            .iter()
            .find(|(id, _, _)| *id == name)
            .map(|p| Response::json(200, &addon(ctx, &s, p)))
            .ok_or_else(|| not_found(ctx, call.route)),
    }
}

/// POST `/@addons/<id>/install` and `/@addons/<id>/uninstall`; 204.
fn post(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let route = call.route;
    let (Some(name), Some(action)) = (call.param("id"), call.param("action")) else {
        return Err(not_found(ctx, route));
    };
    if !multilingual::is_profile(name) {
        return Err(not_found(ctx, route));
    }
    match action {
        "install" => multilingual::profiles::install(ctx, name)?,
        "uninstall" => multilingual::profiles::uninstall(ctx, name)?,
        _ => return Err(not_found(ctx, route)),
    };
    Ok(Response::empty(204))
}
