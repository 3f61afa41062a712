//! The site profile as data: whose answers a site gives where Plone and Nick differ. What a
//! profile changes, and how a site gets one, is [`crate::site::profile`].

use serde::{Deserialize, Serialize};

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
