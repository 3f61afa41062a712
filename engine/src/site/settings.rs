//! The site settings (`s:site`): the token signing secret and the default language. Creating a
//! site is [`crate::site::setup`].

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::runtime::context::Ctx;

/// Stored site settings (`s:site`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SiteSettings {
    /// Token signing secret, base64.
    pub secret: String,
    /// Default language code.
    pub default_language: String,
    /// Whose answers the site gives ([`crate::site::profile`]); chosen at creation. Sites
    /// created before profiles existed are Plone's.
    #[serde(default)]
    pub profile: crate::core::model::profile::SiteProfile,
}

/// The site settings.
pub fn settings(ctx: &Ctx<'_>) -> Result<SiteSettings> {
    ctx.get_json(keys::SITE)?
        .ok_or_else(|| EngineError::Internal("site settings missing".into()))
}

/// The token signing secret.
pub fn secret(ctx: &Ctx<'_>) -> Result<Vec<u8>> {
    B64.decode(settings(ctx)?.secret)
        .map_err(|e| EngineError::Internal(format!("stored secret: {e}")))
}

/// Store the site settings and announce the change ([`Event::SettingsChanged`] `"site"`).
pub fn save_settings(ctx: &mut Ctx<'_>, settings: &SiteSettings) -> Result<()> {
    ctx.put_json(keys::SITE, settings)?;
    ctx.emit(Event::SettingsChanged {
        settings: "site".into(),
    });
    Ok(())
}
