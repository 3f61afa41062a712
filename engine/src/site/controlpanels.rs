//! The control panels: each declared once in [`PANELS`] (name, group, title, and its fields, each
//! a record of the configuration registry, [`crate::site::configuration`]). A panel's data is its
//! records' values; changing a panel writes its records, so `@registry` and
//! `@controlpanels/<panel>` always agree. Panels whose settings are not registry records
//! (`dexterity-types`, `security`, `usergroup`) are listed here but served by their own modules.

use serde_json::{Map, Value};

use crate::core::error::{EngineError, Result};
use crate::runtime::context::Ctx;
use crate::site::configuration::{self, RecordDef};

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
}

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
    }
}

const fn elsewhere(name: &'static str, title: &'static str, group: &'static str) -> PanelDef {
    PanelDef {
        name,
        title,
        group,
        fields: &[],
        served_here: false,
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
    panel(
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
    ),
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

/// The panel's data: each field's current value.
pub fn data(ctx: &Ctx<'_>, panel: &PanelDef) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    for (field, d) in panel.records() {
        out.insert(field.to_string(), configuration::read(ctx, d)?);
    }
    Ok(out)
}

/// Change the panel's fields named in `body` (in the panel's field order). An unknown field or a
/// value of the wrong kind is a 400 naming it; the request's transaction then rolls back, so
/// nothing changes.
pub fn patch(ctx: &mut Ctx<'_>, panel: &PanelDef, body: Map<String, Value>) -> Result<()> {
    if let Some(unknown) = body
        .keys()
        .find(|k| !panel.fields.iter().any(|(f, _)| f == k))
    {
        return Err(EngineError::bad_request(format!(
            "Unknown field '{unknown}' of the {} control panel (known: {})",
            panel.name,
            panel
                .fields
                .iter()
                .map(|(f, _)| *f)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    for (field, d) in panel.records() {
        if let Some(v) = body.get(field) {
            d.kind.check(field, v)?;
        }
    }
    for (field, d) in panel.records() {
        if let Some(v) = body.get(field) {
            configuration::set(ctx, d.name, field, v.clone())?;
        }
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
        }
    }
}
