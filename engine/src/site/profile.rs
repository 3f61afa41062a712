//! The site profile: whose answers the site gives where Plone and Nick differ.
//!
//! The API has two reference systems. Plone (plone.restapi) is what Volto and `@plone/client`
//! follow, and the default profile answers as Plone does. Nick 2.8 is the system the spec was
//! written from; a site created with the `nick` profile answers as Nick's documentation and
//! examples show wherever the two differ (role names, error bodies, search metadata, vocabularies,
//! ...). The profile is chosen when the site is created and stored with it
//! ([`crate::site::settings::SiteSettings::profile`]); it never changes afterwards, because a
//! site's defaults (its actions, languages, groups) are created for its profile.
//!
//! Code that answers differently per profile asks [`Ctx::profile`] (read once per request) and
//! keeps both answers side by side, so a reader sees the difference in one place.

use crate::core::error::{EngineError, Result};
use crate::runtime::context::Ctx;

pub use crate::core::model::profile::{SiteProfile, NICK};

/// Whether `id` names a site profile (chosen at creation) rather than an installable one.
pub fn is_site_profile(id: &str) -> bool {
    id == NICK
}

/// The stored profile of the site `ctx` works on (what [`Ctx::profile`] reads, but an error when
/// the site has no settings).
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
