//! The site profile: whose answers the site gives where Plone and Nick differ.
//!
//! The API has two reference systems. Plone (plone.restapi) is what Volto and `@plone/client`
//! follow, and the default profile answers as Plone does. Nick 2.8 is the system the spec was
//! written from; a site created with the `nick` profile answers as Nick's documentation and
//! examples show wherever the two differ (role names, error bodies, search metadata, vocabularies,
//! ...). The profile is chosen when the site is created and stored with it
//! ([`crate::site::settings::SiteSettings::profile`]); it never changes afterwards, because the
//! data a site holds (roles, rules, behaviors) is written in its profile's names.
//!
//! Code that answers differently per profile asks [`Ctx::profile`] (read once per request) and
//! keeps both answers side by side, so a reader sees the difference in one place.

use serde::{Deserialize, Serialize};

use crate::core::error::{EngineError, Result};
use crate::runtime::context::Ctx;

/// The name of the Nick profile, as `--profile` and [`crate::SiteSetup::profiles`] take it.
pub const NICK: &str = "nick";

/// Whose answers a site gives where the reference systems differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SiteProfile {
    /// plone.restapi's answers (what Volto and `@plone/client` expect): the default.
    #[default]
    Plone,
    /// Nick 2.8's answers, as its documentation and examples show them.
    Nick,
}

impl SiteProfile {
    /// The profile named among `profiles` (the `--profile` values of a host): `nick` picks Nick,
    /// anything else (the language profiles) leaves Plone.
    pub fn from_profiles(profiles: &[String]) -> SiteProfile {
        if profiles.iter().any(|p| p == NICK) {
            SiteProfile::Nick
        } else {
            SiteProfile::Plone
        }
    }

    /// Whether this is the Nick profile.
    pub fn is_nick(self) -> bool {
        self == SiteProfile::Nick
    }

    /// The profile's name (`plone`, `nick`).
    pub fn name(self) -> &'static str {
        match self {
            SiteProfile::Plone => "plone",
            SiteProfile::Nick => NICK,
        }
    }
}

/// Whether `id` names a site profile (chosen at creation) rather than an installable one.
pub fn is_site_profile(id: &str) -> bool {
    id == NICK
}

/// The stored profile of the site `ctx` works on.
pub(crate) fn stored(ctx: &Ctx<'_>) -> Result<SiteProfile> {
    Ok(crate::site::settings::settings(ctx)?.profile)
}

/// Check that an existing site was created with the profile `profiles` asks for: a host started
/// with `--profile nick` on a Plone site (or without it on a Nick site) is refused, since the
/// profile cannot change once the site holds data.
pub(crate) fn check_matches(ctx: &Ctx<'_>, profiles: &[String]) -> Result<()> {
    let wanted = SiteProfile::from_profiles(profiles);
    let have = stored(ctx)?;
    if wanted.is_nick() && !have.is_nick() {
        return Err(EngineError::Conflict(format!(
            "the site was created with the {} profile; the nick profile is chosen when a site is \
             created and cannot be added later",
            have.name()
        )));
    }
    Ok(())
}
