//! The control panels: each declared once in [`PANELS`] (name, group, title, and its fields, each
//! a record of the configuration registry, [`crate::site::configuration`]). A panel's data is its
//! records' values; changing a panel writes its records, so `@registry` and
//! `@controlpanels/<panel>` always agree. Panels whose settings are not registry records
//! (`dexterity-types`, `security`, `usergroup`) are listed here but served by their own modules.

use serde_json::{Map, Value};

use crate::core::error::{EngineError, Result};
use crate::runtime::context::Ctx;
use crate::site::configuration::{self, RecordDef};
use crate::site::profile::SiteProfile;

/// One control panel.
pub struct PanelDef {
    /// Its name (`/@controlpanels/<name>`).
    pub name: &'static str,
    /// Its title.
    pub title: &'static str,
    /// The group it is shown in.
    pub group: &'static str,
    /// Its fields: the field id and the registry record it shows (empty for panels served by
    /// another module).
    pub fields: &'static [(&'static str, &'static str)],
    /// Whether this module serves it (else another module does, and it is only listed).
    pub served_here: bool,
    /// Nick's form of the panel (empty: Nick's is the same as ours): its fields under Nick's
    /// names, accepted on every site and shown on a Nick site.
    pub nick: &'static [NickField],
    /// The fields Nick's form requires.
    pub nick_required: &'static [&'static str],
}

/// A field of a panel as Nick names and describes it.
pub struct NickField {
    /// Nick's name of the field (`host`, `port`, ...).
    pub name: &'static str,
    /// The registry record it shows.
    pub record: &'static str,
    /// Nick's label.
    pub title: &'static str,
    /// Nick's help text.
    pub description: &'static str,
    /// Nick's widget (`password`), if any.
    pub widget: Option<&'static str>,
    /// Whether Nick's form shows the record's default.
    pub shows_default: bool,
}

const fn nick_field(
    name: &'static str,
    record: &'static str,
    title: &'static str,
    description: &'static str,
) -> NickField {
    NickField {
        name,
        record,
        title,
        description,
        widget: None,
        shows_default: false,
    }
}

/// Nick's mail panel: its fields in Nick's order.
const NICK_MAIL: &[NickField] = &[
    NickField {
        shows_default: true,
        ..nick_field(
            "host",
            "plone.smtp_host",
            "SMTP server",
            "The address of your local SMTP (outgoing email) server. Usually 'localhost', \
             unless you use an external server to send email.",
        )
    },
    NickField {
        shows_default: true,
        ..nick_field(
            "port",
            "plone.smtp_port",
            "SMTP port",
            "The port of your local SMTP (outgoing email) server. Usually '25'.",
        )
    },
    nick_field(
        "secure",
        configuration::SMTP_SECURE,
        "Secure",
        "If enabled, the mail is sent using a secure connection.",
    ),
    nick_field(
        "user",
        "plone.smtp_userid",
        "ESMTP username",
        "Username for authentication to your email server. Not required unless you are using \
         ESMTP.",
    ),
    NickField {
        widget: Some("password"),
        ..nick_field(
            "pass",
            "plone.smtp_pass",
            "ESMTP password",
            "The password for the ESMTP user account.",
        )
    },
    nick_field(
        "email_from_name",
        "plone.email_from_name",
        "Site 'From' name",
        "Nick generates email using this name as the email sender.",
    ),
    nick_field(
        "email_from_address",
        "plone.email_from_address",
        "Site 'From' address",
        "Nick generates email using this address as the email return address. It is also used \
         as the destination address for the site-wide contact form and the \u{201c}Send test \
         email\u{201d} feature.",
    ),
    nick_field(
        "debug",
        configuration::MAIL_DEBUG,
        "Debug",
        "If enabled, the mail is sent to a test server.",
    ),
];

const fn panel(
    name: &'static str,
    title: &'static str,
    group: &'static str,
    fields: &'static [(&'static str, &'static str)],
) -> PanelDef {
    PanelDef {
        name,
        title,
        group,
        fields,
        served_here: true,
        nick: &[],
        nick_required: &[],
    }
}

const fn elsewhere(name: &'static str, title: &'static str, group: &'static str) -> PanelDef {
    PanelDef {
        name,
        title,
        group,
        fields: &[],
        served_here: false,
        nick: &[],
        nick_required: &[],
    }
}

/// Every control panel, in name order.
pub const PANELS: &[PanelDef] = &[
    elsewhere("dexterity-types", "Content Types", "Content"),
    panel(
        "discussion",
        "Discussion",
        "General",
        &[
            ("globally_enabled", configuration::DISCUSSION_ENABLED),
            ("edit_comment_enabled", configuration::COMMENT_EDIT_OWN),
            (
                "delete_own_comment_enabled",
                configuration::COMMENT_DELETE_OWN,
            ),
        ],
    ),
    panel(
        "editing",
        "Editing",
        "Content",
        &[
            ("available_editors", "plone.available_editors"),
            ("default_editor", "plone.default_editor"),
            ("ext_editor", "plone.ext_editor"),
            (
                "enable_link_integrity_checks",
                "plone.enable_link_integrity_checks",
            ),
            ("lock_on_ttw_edit", "plone.lock_on_ttw_edit"),
        ],
    ),
    panel(
        "form",
        "Form",
        "General",
        &[("mail_template", "nick.form.mail_template")],
    ),
    panel(
        "language",
        "Language",
        "General",
        &[
            ("available_languages", "plone.available_languages"),
            ("default_language", "plone.default_language"),
        ],
    ),
    PanelDef {
        nick: NICK_MAIL,
        nick_required: &["host", "port", "email_from_name", "email_from_address"],
        ..panel(
            "mail",
            "Mail",
            "General",
            &[
                ("smtp_host", "plone.smtp_host"),
                ("smtp_port", "plone.smtp_port"),
                ("smtp_userid", "plone.smtp_userid"),
                ("smtp_pass", "plone.smtp_pass"),
                ("email_from_name", "plone.email_from_name"),
                ("email_from_address", "plone.email_from_address"),
            ],
        )
    },
    panel(
        "markup",
        "Markup",
        "Content",
        &[
            ("default_type", "plone.default_type"),
            ("allowed_types", "plone.allowed_types"),
        ],
    ),
    panel(
        "navigation",
        "Navigation",
        "General",
        &[
            ("show_home", "plone.navigation.show_home"),
            ("nonfolderish_tabs", "plone.nonfolderish_tabs"),
            ("displayed_types", "plone.displayed_types"),
            ("extra_items", "plone.navigation.extra_items"),
        ],
    ),
    panel(
        "recyclebin",
        "Recycle Bin",
        "Content",
        &[
            ("recycling_enabled", configuration::RECYCLEBIN_ENABLED),
            ("retention_period", configuration::RECYCLEBIN_RETENTION_DAYS),
        ],
    ),
    panel(
        "search",
        "Search",
        "General",
        &[
            ("enable_livesearch", "plone.enable_livesearch"),
            ("types_not_searched", "plone.types_not_searched"),
            (
                "search_results_description_length",
                "plone.search_results_description_length",
            ),
            ("sort_on", "plone.sort_on"),
        ],
    ),
    elsewhere("security", "Security", "Security"),
    panel(
        "site",
        "Site",
        "General",
        &[
            ("site_title", configuration::SITE_TITLE),
            ("site_logo", configuration::SITE_LOGO),
            ("robots_txt", configuration::ROBOTS_TXT),
            ("portal_timezone", configuration::TIMEZONE),
        ],
    ),
    panel(
        "social",
        "Social Media",
        "General",
        &[
            ("share_social_data", "plone.share_social_data"),
            ("twitter_username", "plone.twitter_username"),
            ("facebook_app_id", "plone.facebook_app_id"),
            ("facebook_username", "plone.facebook_username"),
        ],
    ),
    elsewhere("usergroup", "User and Group Settings", "Users"),
];

/// The panels Nick lists (`GET @controlpanels` on a Nick site); the others are still served.
const NICK_LISTED: &[&str] = &[
    "dexterity-types",
    "form",
    "language",
    "mail",
    "navigation",
    "security",
    "site",
    "usergroup",
];

/// The panels `GET @controlpanels` lists: every panel, or on a Nick site the ones Nick has.
pub fn listed(profile: SiteProfile) -> impl Iterator<Item = &'static PanelDef> {
    PANELS
        .iter()
        .filter(move |p| !profile.is_nick() || NICK_LISTED.contains(&p.name))
}

/// The panel `name` served by this module.
pub fn find(name: &str) -> Option<&'static PanelDef> {
    PANELS.iter().find(|p| p.name == name && p.served_here)
}

impl PanelDef {
    /// Its fields with their record declarations.
    pub fn records(&self) -> impl Iterator<Item = (&'static str, &'static RecordDef)> + '_ {
        self.fields
            .iter()
            .filter_map(|(f, r)| configuration::def(r).map(|d| (*f, d)))
    }
}

impl PanelDef {
    /// Whether the site shows Nick's form of this panel (a Nick site, and a panel whose form
    /// differs in Nick).
    pub fn shows_nick(&self, profile: SiteProfile) -> bool {
        profile.is_nick() && !self.nick.is_empty()
    }

    /// The fields the site shows, with their records: Nick's names on a Nick site (where Nick's
    /// form differs), ours elsewhere.
    pub fn shown_records(&self, profile: SiteProfile) -> Vec<(&'static str, &'static RecordDef)> {
        if self.shows_nick(profile) {
            self.nick
                .iter()
                .filter_map(|f| configuration::def(f.record).map(|d| (f.name, d)))
                .collect()
        } else {
            self.records().collect()
        }
    }

    /// The record the field `name` writes: one of the panel's fields, or one of Nick's names of
    /// them (accepted on every site).
    fn record_of(&self, name: &str) -> Option<&'static str> {
        self.fields
            .iter()
            .find(|(f, _)| *f == name)
            .map(|(_, r)| *r)
            .or_else(|| self.nick.iter().find(|f| f.name == name).map(|f| f.record))
    }
}

/// The panel's data: each field's current value (under Nick's names on a Nick site).
pub fn data(ctx: &Ctx<'_>, panel: &PanelDef) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    for (field, d) in panel.shown_records(ctx.profile()) {
        out.insert(field.to_string(), configuration::read(ctx, d)?);
    }
    Ok(out)
}

/// Change the panel's fields named in `body` (in the panel's field order), under our names or
/// Nick's (on every site: `host` is `smtp_host`). An unknown field, a value of the wrong kind,
/// or one record named twice (`host` and `smtp_host`) is a 400 naming it; the request's
/// transaction then rolls back, so nothing changes.
pub fn patch(ctx: &mut Ctx<'_>, panel: &PanelDef, body: Map<String, Value>) -> Result<()> {
    if let Some(unknown) = body.keys().find(|k| panel.record_of(k).is_none()) {
        return Err(EngineError::bad_request(format!(
            "Unknown field '{unknown}' of the {} control panel (known: {})",
            panel.name,
            panel
                .fields
                .iter()
                .map(|(f, _)| *f)
                .chain(panel.nick.iter().map(|f| f.name))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    // (field as sent, its record), in the order of the records
    let mut changes: Vec<(&str, &'static RecordDef, &Value)> = Vec::new();
    for (field, v) in &body {
        let Some(d) = panel.record_of(field).and_then(configuration::def) else {
            continue;
        };
        if let Some((other, _, _)) = changes.iter().find(|(_, c, _)| c.name == d.name) {
            return Err(EngineError::Invalid {
                field: field.clone(),
                message: format!(
                    "'{field}' and '{other}' name the same setting of the {} control panel; \
                     send one of them",
                    panel.name
                ),
            });
        }
        d.kind.check(field, v)?;
        changes.push((field, d, v));
    }
    let order = |d: &RecordDef| {
        panel
            .fields
            .iter()
            .position(|(_, r)| *r == d.name)
            .unwrap_or(panel.fields.len())
    };
    changes.sort_by_key(|(_, d, _)| order(d));
    for (field, d, v) in changes {
        configuration::set(ctx, d.name, field, v.clone())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_names_a_declared_record() {
        for w in PANELS.windows(2) {
            assert!(w[0].name < w[1].name);
        }
        for p in PANELS {
            for (f, r) in p.fields {
                assert!(configuration::def(r).is_some(), "{}.{f}: {r}", p.name);
            }
            for f in p.nick {
                assert!(
                    configuration::def(f.record).is_some(),
                    "{}.{}",
                    p.name,
                    f.name
                );
            }
        }
    }
}
