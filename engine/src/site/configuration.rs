//! The configuration registry: named, typed site settings (`plone.site_title`,
//! `plone.smtp_port`, ...), read and written one record at a time. `@registry` serves the records
//! directly and every control panel ([`crate::site::controlpanels`]) reads and writes its fields through
//! them, so the two always agree.
//!
//! Each record is declared once in [`RECORDS`]: its name, title, description, [`Kind`] and
//! default. Its value is either stored under `k:<name>` (written with its default when the site
//! is created, [`seed`]; a record a later build adds reads as its default until written) or, for settings
//! another domain service already owns, read and written through that service ([`Source::Owned`]:
//! the site title is the root object's title; the languages are [`crate::content::multilingual`]'s; the
//! navigation settings are [`crate::content::navigation`]'s). A value of the wrong kind is a 400 naming the
//! record, and the caller's transaction rolls back, so nothing changes.

use serde_json::{json, Value};

use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::runtime::context::Ctx;
use crate::{content::multilingual, content::navigation, content::tree};

/// The kind of value a record holds; writes are checked against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `true` or `false`.
    Bool,
    /// A whole number, at least `min`.
    Int {
        /// The smallest value accepted.
        min: i64,
    },
    /// A string.
    Text,
    /// A list of strings.
    TextList,
    /// One of the given strings.
    Choice(&'static [&'static str]),
    /// A string, or `null`.
    TextOrNull,
    /// Any JSON value; the record's owner checks it when written.
    Json,
    /// The site's actions ([`crate::core::model::actions`]).
    Actions,
}

impl Kind {
    /// The JSON Schema `type` of the kind.
    pub fn json_type(self) -> &'static str {
        match self {
            Kind::Bool => "boolean",
            Kind::Int { .. } => "integer",
            Kind::Text | Kind::TextOrNull | Kind::Choice(_) => "string",
            Kind::TextList => "array",
            Kind::Json | Kind::Actions => "object",
        }
    }

    /// The reference's field factory name (`Yes/No`, `Int`, ...).
    pub fn factory(self) -> &'static str {
        match self {
            Kind::Bool => "Yes/No",
            Kind::Int { .. } => "Int",
            Kind::Text | Kind::TextOrNull => "Text line (String)",
            Kind::TextList => "List",
            Kind::Choice(_) => "Choice",
            Kind::Json | Kind::Actions => "JSONField",
        }
    }

    /// Check `value` against the kind; the error names `field`.
    pub fn check(self, field: &str, value: &Value) -> Result<()> {
        let bad = |what: &str| {
            EngineError::bad_request(format!(
                "Invalid value for '{field}': expected {what}, got {}",
                kind_of(value)
            ))
        };
        match self {
            Kind::Bool if !value.is_boolean() => Err(bad("a boolean")),
            Kind::Int { min } => match value.as_i64() {
                Some(n) if n >= min => Ok(()),
                Some(_) => Err(bad(&format!("an integer of at least {min}"))),
                None => Err(bad("an integer")),
            },
            Kind::Text if !value.is_string() => Err(bad("a string")),
            Kind::TextList => match value.as_array() {
                Some(a) if a.iter().all(Value::is_string) => Ok(()),
                _ => Err(bad("a list of strings")),
            },
            Kind::Choice(options) => match value.as_str() {
                Some(s) if options.contains(&s) => Ok(()),
                _ => Err(bad(&format!("one of {}", options.join(", ")))),
            },
            Kind::TextOrNull if !(value.is_string() || value.is_null()) => {
                Err(bad("a string or null"))
            }
            Kind::Actions => crate::core::model::actions::validate(field, value, |p| {
                crate::core::security::Permission::from_name(p).is_some()
            }),
            _ => Ok(()),
        }
    }
}

/// What a JSON value is, for messages.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A record's default value.
#[derive(Debug, Clone, Copy)]
pub enum Default {
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A string.
    Text(&'static str),
    /// A list of strings.
    TextList(&'static [&'static str]),
    /// `null`.
    Null,
    /// A JSON document (parsed when read).
    Json(&'static str),
}

impl Default {
    /// The default as JSON.
    pub fn value(self) -> Value {
        match self {
            Default::Bool(b) => json!(b),
            Default::Int(n) => json!(n),
            Default::Text(s) => json!(s),
            Default::TextList(l) => json!(l),
            Default::Null => Value::Null,
            Default::Json(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        }
    }
}

/// Where a record's value lives.
#[derive(Clone, Copy)]
pub enum Source {
    /// Under `k:<name>` (the default until written).
    Stored,
    /// Read and written through the domain service that owns the setting.
    Owned {
        /// The current value.
        read: fn(&Ctx<'_>) -> Result<Value>,
        /// Write a value already checked against the record's kind; the owner checks the rest
        /// (a 400 naming the record).
        write: fn(&mut Ctx<'_>, Value) -> Result<()>,
    },
}

/// One declared record.
#[derive(Clone, Copy)]
pub struct RecordDef {
    /// Its dotted name.
    pub name: &'static str,
    /// A title for forms.
    pub title: &'static str,
    /// What it does.
    pub description: &'static str,
    /// The kind of value.
    pub kind: Kind,
    /// The value until written.
    pub default: Default,
    /// Where the value lives.
    pub source: Source,
    /// Whether it is a setting only Nick's forms show (`GET @registry` lists it on a Nick site
    /// only, so a Plone site's list stays Plone's; it is read and written on every site).
    pub nick_only: bool,
}

const fn stored(
    name: &'static str,
    title: &'static str,
    description: &'static str,
    kind: Kind,
    default: Default,
) -> RecordDef {
    RecordDef {
        name,
        title,
        description,
        kind,
        default,
        source: Source::Stored,
        nick_only: false,
    }
}

const fn owned(
    name: &'static str,
    title: &'static str,
    description: &'static str,
    kind: Kind,
    read: fn(&Ctx<'_>) -> Result<Value>,
    write: fn(&mut Ctx<'_>, Value) -> Result<()>,
) -> RecordDef {
    RecordDef {
        name,
        title,
        description,
        kind,
        default: Default::Null,
        source: Source::Owned { read, write },
        nick_only: false,
    }
}

/// The record that switches comments on for the whole site ([`crate::content::comments::enabled`]).
pub const DISCUSSION_ENABLED: &str = "plone.app.discussion.globally_enabled";
/// The record saying whether a comment's author may edit it ([`crate::content::comments`]).
pub const COMMENT_EDIT_OWN: &str = "plone.app.discussion.edit_comment_enabled";
/// The record saying whether a comment's author may delete it ([`crate::content::comments`]).
pub const COMMENT_DELETE_OWN: &str = "plone.app.discussion.delete_own_comment_enabled";
/// The record holding the site's actions ([`crate::site::actions`]).
pub const ACTIONS: &str = "plone.actions";
/// Whether mail goes to a test server (Nick's mail panel's `debug`).
pub const MAIL_DEBUG: &str = "nick.mail_debug";
/// Whether the SMTP connection is encrypted (Nick's mail panel's `secure`).
pub const SMTP_SECURE: &str = "nick.smtp_secure";
/// The record listing the image scales (`name width:height`, [`crate::content::files`]).
pub const ALLOWED_SIZES: &str = "plone.allowed_sizes";
/// The record holding the largest file an upload may store, in bytes ([`crate::content::files`]).
pub const MAX_FILE_SIZE: &str = "plone.max_file_size";
/// The record holding the site's time zone.
pub const TIMEZONE: &str = "plone.portal_timezone";
/// The record holding the site logo.
pub const SITE_LOGO: &str = "plone.site_logo";
/// The record holding the site title.
pub const SITE_TITLE: &str = "plone.site_title";
/// The record that switches the recycle bin on ([`crate::content::recyclebin`]).
pub const RECYCLEBIN_ENABLED: &str = "plone.recyclebin.enabled";
/// The record holding how many days binned content is kept ([`crate::content::recyclebin`]).
pub const RECYCLEBIN_RETENTION_DAYS: &str = "plone.recyclebin.retention_days";
/// The record holding robots.txt.
pub const ROBOTS_TXT: &str = "plone.robots_txt";

const ROBOTS: &str = "Sitemap: {portal_url}/sitemap.xml.gz\n\nUser-agent: *\nDisallow:\n";

const FORM_MAIL_TEMPLATE: &str = "<!doctype html>\n<html lang=\"${lang}\">\n  <head><meta charset=\"utf-8\" /><title>${title}</title></head>\n  <body>\n    ${header}\n    ${admin_info}\n    ${fields}\n    ${footer}\n  </body>\n</html>";

/// Every record, in name order.
pub const RECORDS: &[RecordDef] = &[
    stored(
        "nick.form.mail_template",
        "Mail template",
        "The template of the mail a form sends to the site administrator or the user; ${lang}, \
         ${title}, ${header}, ${footer}, ${admin_info} and ${fields} are replaced.",
        Kind::Text,
        Default::Text(FORM_MAIL_TEMPLATE),
    ),
    RecordDef {
        nick_only: true,
        ..stored(
            MAIL_DEBUG,
            "Debug",
            "Whether mail goes to a test server instead of the SMTP server (Nick's mail panel's \
         `debug`; kept as a setting).",
            Kind::Bool,
            Default::Bool(false),
        )
    },
    RecordDef {
        nick_only: true,
        ..stored(
            SMTP_SECURE,
            "Secure",
            "Whether the SMTP connection is encrypted (Nick's mail panel's `secure`; kept as a \
         setting).",
            Kind::Bool,
            Default::Bool(false),
        )
    },
    stored(
        ACTIONS,
        "Actions",
        "The site's actions by category (object, object_buttons, portal_tabs, site_actions, \
         user, document_actions): each {id, title, icon, permission, available_to}.",
        Kind::Actions,
        Default::Json(crate::core::model::actions::DEFAULT_ACTIONS),
    ),
    stored(
        ALLOWED_SIZES,
        "Allowed image sizes",
        "The image scales the site produces, each `name width:height` (the scale fits inside \
         the box, keeping the image's proportions; never larger than the image).",
        Kind::TextList,
        Default::TextList(&[
            "huge 1600:65536",
            "great 1200:65536",
            "larger 1000:65536",
            "large 800:65536",
            "teaser 600:65536",
            "preview 400:65536",
            "mini 200:65536",
            "thumb 128:128",
            "tile 64:64",
            "icon 32:32",
            "listing 16:16",
        ]),
    ),
    stored(
        "plone.allowed_types",
        "Allowed types",
        "The text formats editors may choose from.",
        Kind::TextList,
        Default::TextList(&["text/html", "text/plain", "text/x-web-markdown"]),
    ),
    stored(
        COMMENT_DELETE_OWN,
        "Enable deleting own comments",
        "Whether the author of a comment may delete it, with its replies (moderators always may).",
        Kind::Bool,
        Default::Bool(true),
    ),
    stored(
        COMMENT_EDIT_OWN,
        "Enable editing of comments",
        "Whether the author of a comment may edit it (moderators always may).",
        Kind::Bool,
        Default::Bool(true),
    ),
    stored(
        DISCUSSION_ENABLED,
        "Globally enable comments",
        "Whether comments can be added anywhere: an object also needs a type that allows them \
         and its own allow_discussion.",
        Kind::Bool,
        Default::Bool(false),
    ),
    stored(
        "plone.available_editors",
        "Available editors",
        "The editors users may choose from.",
        Kind::TextList,
        Default::TextList(&["Volto", "None"]),
    ),
    owned(
        "plone.available_languages",
        "Available languages",
        "The languages in which the site should be translatable, the default language first \
         unless another is named.",
        Kind::Json,
        read_available_languages,
        write_available_languages,
    ),
    stored(
        "plone.default_editor",
        "Default editor",
        "The editor used unless a user chooses another.",
        Kind::Choice(&["Volto", "None"]),
        Default::Text("Volto"),
    ),
    owned(
        "plone.default_language",
        "Site language",
        "The language used for the content and the UI of this site.",
        Kind::Json,
        read_default_language,
        write_default_language,
    ),
    stored(
        "plone.default_type",
        "Default format",
        "The text format of new rich text.",
        Kind::Choice(&["text/html", "text/plain", "text/x-web-markdown"]),
        Default::Text("text/html"),
    ),
    owned(
        "plone.displayed_types",
        "Displayed content types",
        "Only objects of these types appear in the navigation (null: every type).",
        Kind::Json,
        read_nav_displayed_types,
        write_nav_displayed_types,
    ),
    stored(
        "plone.email_from_address",
        "Site 'From' address",
        "The address mail from the site is sent from.",
        Kind::Text,
        Default::Text(""),
    ),
    stored(
        "plone.email_from_name",
        "Site 'From' name",
        "The name mail from the site is sent by.",
        Kind::Text,
        Default::Text(""),
    ),
    stored(
        "plone.enable_link_integrity_checks",
        "Enable link integrity checks",
        "Whether editors are warned when they delete or move content that is linked from \
         inside the site.",
        Kind::Bool,
        Default::Bool(true),
    ),
    stored(
        "plone.enable_livesearch",
        "Enable LiveSearch",
        "Whether search results are shown while typing.",
        Kind::Bool,
        Default::Bool(true),
    ),
    stored(
        "plone.ext_editor",
        "Enable External Editor feature",
        "Whether editing with an external editor is offered.",
        Kind::Bool,
        Default::Bool(false),
    ),
    stored(
        "plone.facebook_app_id",
        "Facebook App ID",
        "The Facebook app id used in social metadata.",
        Kind::Text,
        Default::Text(""),
    ),
    stored(
        "plone.facebook_username",
        "Facebook username",
        "The Facebook account of the site.",
        Kind::Text,
        Default::Text(""),
    ),
    stored(
        "plone.lock_on_ttw_edit",
        "Enable locking for through-the-web edits",
        "Whether editing through the front end locks the object.",
        Kind::Bool,
        Default::Bool(true),
    ),
    stored(
        MAX_FILE_SIZE,
        "Largest file",
        "The largest file or image an upload may store, in bytes (base64 and tus uploads alike).",
        Kind::Int { min: 0 },
        Default::Int(100 * 1024 * 1024),
    ),
    owned(
        "plone.navigation.extra_items",
        "Extra navigation items",
        "Links listed after Home and before the content: [{title, url, description}].",
        Kind::Json,
        read_nav_extra_items,
        write_nav_extra_items,
    ),
    owned(
        "plone.navigation.show_home",
        "Show Home",
        "Whether the navigation starts with a Home entry for the navigation root.",
        Kind::Bool,
        read_nav_show_home,
        write_nav_show_home,
    ),
    owned(
        "plone.nonfolderish_tabs",
        "Generate tabs for items other than folders",
        "Whether pages appear at the top level of the navigation, not only folders.",
        Kind::Bool,
        read_nav_nonfolderish,
        write_nav_nonfolderish,
    ),
    stored(
        TIMEZONE,
        "Portal default timezone",
        "The time zone of the site (an IANA name from the timezones vocabulary).",
        Kind::Choice(TIMEZONES),
        Default::Text("UTC"),
    ),
    stored(
        RECYCLEBIN_ENABLED,
        "Recycle bin enabled",
        "Whether deleting content moves it (with everything below it, its history, comments \
         and aliases) into the recycle bin, from where it can be restored, instead of \
         destroying it.",
        Kind::Bool,
        Default::Bool(true),
    ),
    stored(
        RECYCLEBIN_RETENTION_DAYS,
        "Recycle bin retention (days)",
        "How many days deleted content stays in the recycle bin before it is purged for good \
         (0: until purged by hand).",
        Kind::Int { min: 0 },
        Default::Int(30),
    ),
    stored(
        ROBOTS_TXT,
        "robots.txt",
        "The contents of /robots.txt.",
        Kind::Text,
        Default::Text(ROBOTS),
    ),
    stored(
        "plone.search_results_description_length",
        "Crop the item description in search result listings after a number of characters",
        "How many characters of a description search results show.",
        Kind::Int { min: 0 },
        Default::Int(160),
    ),
    stored(
        "plone.share_social_data",
        "Share social data",
        "Whether pages carry social metadata (Open Graph, Twitter cards).",
        Kind::Bool,
        Default::Bool(true),
    ),
    stored(
        SITE_LOGO,
        "Site logo",
        "The URL of a custom logo for the site (an absolute URL or a site path), or null for \
         the default logo.",
        Kind::TextOrNull,
        Default::Null,
    ),
    owned(
        SITE_TITLE,
        "Site title",
        "The title of the site: the title of its root object (on a Nick site, a title of its \
         own).",
        Kind::Text,
        read_site_title,
        write_site_title,
    ),
    stored(
        "plone.smtp_host",
        "SMTP server",
        "The address of the SMTP server mail is sent through.",
        Kind::Text,
        Default::Text("localhost"),
    ),
    stored(
        "plone.smtp_pass",
        "ESMTP password",
        "The password of the ESMTP account.",
        Kind::Text,
        Default::Text(""),
    ),
    stored(
        "plone.smtp_port",
        "SMTP port",
        "The port of the SMTP server.",
        Kind::Int { min: 1 },
        Default::Int(25),
    ),
    stored(
        "plone.smtp_userid",
        "ESMTP username",
        "The user name of the ESMTP account (empty: no authentication).",
        Kind::Text,
        Default::Text(""),
    ),
    stored(
        "plone.sort_on",
        "Sort on",
        "The default order of search results.",
        Kind::Choice(&["relevance", "Date", "sortable_title"]),
        Default::Text("relevance"),
    ),
    stored(
        "plone.twitter_username",
        "Twitter username",
        "The Twitter account of the site.",
        Kind::Text,
        Default::Text(""),
    ),
    stored(
        "plone.types_not_searched",
        "Types excluded from search results",
        "Content types whose objects search results leave out.",
        Kind::TextList,
        Default::TextList(&[]),
    ),
];

/// IANA time zone names the site may be set to (the `timezones` vocabulary): the canonical
/// zones of the world's larger cities. The service stores the name; it does no time zone
/// arithmetic itself.
pub const TIMEZONES: &[&str] = &[
    "Africa/Cairo",
    "Africa/Johannesburg",
    "Africa/Lagos",
    "Africa/Nairobi",
    "America/Anchorage",
    "America/Argentina/Buenos_Aires",
    "America/Bogota",
    "America/Chicago",
    "America/Denver",
    "America/Halifax",
    "America/Los_Angeles",
    "America/Mexico_City",
    "America/New_York",
    "America/Sao_Paulo",
    "America/Toronto",
    "Asia/Bangkok",
    "Asia/Dubai",
    "Asia/Hong_Kong",
    "Asia/Jakarta",
    "Asia/Kolkata",
    "Asia/Seoul",
    "Asia/Shanghai",
    "Asia/Singapore",
    "Asia/Tokyo",
    "Atlantic/Reykjavik",
    "Australia/Melbourne",
    "Australia/Perth",
    "Australia/Sydney",
    "Europe/Amsterdam",
    "Europe/Athens",
    "Europe/Berlin",
    "Europe/Brussels",
    "Europe/Helsinki",
    "Europe/Istanbul",
    "Europe/Lisbon",
    "Europe/London",
    "Europe/Madrid",
    "Europe/Moscow",
    "Europe/Paris",
    "Europe/Rome",
    "Europe/Stockholm",
    "Europe/Vienna",
    "Europe/Warsaw",
    "Europe/Zurich",
    "Pacific/Auckland",
    "Pacific/Honolulu",
    "UTC",
];

/// The declared record `name`.
pub fn def(name: &str) -> Option<&'static RecordDef> {
    RECORDS.iter().find(|r| r.name == name)
}

/// The declared record `name`, or a 404-style error naming it.
fn require(name: &str) -> Result<&'static RecordDef> {
    def(name).ok_or_else(|| EngineError::bad_request(format!("Unknown registry record '{name}'")))
}

/// The value of record `name` (its default until written).
pub fn get(ctx: &Ctx<'_>, name: &str) -> Result<Value> {
    let d = require(name)?;
    read(ctx, d)
}

/// The value of the declared record `d`.
pub fn read(ctx: &Ctx<'_>, d: &RecordDef) -> Result<Value> {
    match d.source {
        Source::Stored => Ok(ctx
            .get_json::<Value>(&keys::config_record(d.name))?
            .unwrap_or_else(|| d.default.value())),
        Source::Owned { read, .. } => read(ctx),
    }
}

/// Store the default of every stored record that has no value yet (a new site; an upgraded
/// one), so the site's settings are data in its store from the start. Emits
/// [`Event::SettingsChanged`] `registry:<name>` for each record written.
pub fn seed(ctx: &mut Ctx<'_>) -> Result<()> {
    for d in RECORDS {
        if let Source::Stored = d.source {
            let key = keys::config_record(d.name);
            if ctx.get(&key)?.is_none() {
                ctx.put_json(&key, &d.default.value())?;
                ctx.emit(Event::SettingsChanged {
                    settings: format!("registry:{}", d.name),
                });
            }
        }
    }
    Ok(())
}

/// A boolean record's value (`false` when it holds anything else).
pub fn flag(ctx: &Ctx<'_>, name: &str) -> Result<bool> {
    Ok(get(ctx, name)?.as_bool().unwrap_or(false))
}

/// The site's sender address (`plone.email_from_address`; `noreply@localhost` when unset).
pub fn email_from_address(ctx: &Ctx<'_>) -> Result<String> {
    Ok(get(ctx, "plone.email_from_address")?
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or("noreply@localhost")
        .to_string())
}

/// The site's sender name (`plone.email_from_name`), when one is set.
pub fn email_from_name(ctx: &Ctx<'_>) -> Result<Option<String>> {
    Ok(get(ctx, "plone.email_from_name")?
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string))
}

/// Write record `name`; `field` is what the error messages call it (the record name, or a
/// control panel's field id). Emits [`Event::SettingsChanged`] `registry:<name>`.
pub fn set(ctx: &mut Ctx<'_>, name: &str, field: &str, value: Value) -> Result<()> {
    let d = require(name)?;
    d.kind.check(field, &value)?;
    match d.source {
        Source::Stored => ctx.put_json(&keys::config_record(d.name), &value)?,
        Source::Owned { write, .. } => write(ctx, value)?,
    }
    ctx.emit(Event::SettingsChanged {
        settings: format!("registry:{}", d.name),
    });
    Ok(())
}

// Owned records: the site title is the root object's title, as in Plone. A Nick site keeps a
// title of its own apart from the root's (Nick's site control panel holds `site_title`, "Nick"
// by default, while its root is titled "Welcome to Nick!"); a Nick site that has not stored one
// yet shows the root's.

fn read_site_title(ctx: &Ctx<'_>) -> Result<Value> {
    if ctx.profile().is_nick() {
        if let Some(v) = ctx.get_json::<Value>(&keys::config_record(SITE_TITLE))? {
            return Ok(v);
        }
    }
    Ok(json!(tree::root(ctx)?.str_field("title")))
}

fn write_site_title(ctx: &mut Ctx<'_>, value: Value) -> Result<()> {
    if ctx.profile().is_nick() {
        return ctx.put_json(&keys::config_record(SITE_TITLE), &value);
    }
    let mut root = tree::root(ctx)?;
    if root.fields.get("title") == Some(&value) {
        return Ok(());
    }
    root.fields.insert("title".into(), value);
    tree::save(
        ctx,
        &mut root,
        tree::Change::Edit {
            fields: vec!["title".into()],
            change_note: None,
        },
    )
}

// Owned records: the languages are the multilingual service's.

fn read_available_languages(ctx: &Ctx<'_>) -> Result<Value> {
    Ok(json!(multilingual::settings(ctx)?.available_languages))
}

fn write_available_languages(ctx: &mut Ctx<'_>, value: Value) -> Result<()> {
    let Value::Array(items) = value else {
        return Err(EngineError::bad_request(
            "Invalid value for 'available_languages': expected a list of language codes",
        ));
    };
    let codes = items
        .iter()
        .map(|v| multilingual::parse_code(v, "available_languages"))
        .collect::<Result<Vec<String>>>()?;
    multilingual::profiles::set_languages(ctx, &codes, None)?;
    Ok(())
}

fn read_default_language(ctx: &Ctx<'_>) -> Result<Value> {
    Ok(json!(multilingual::settings(ctx)?.default_language))
}

fn write_default_language(ctx: &mut Ctx<'_>, value: Value) -> Result<()> {
    if value.is_null() {
        return Ok(());
    }
    let code = multilingual::parse_code(&value, "default_language")?;
    let available = multilingual::settings(ctx)?.available_languages;
    multilingual::profiles::set_languages(ctx, &available, Some(&code))?;
    Ok(())
}

// Owned records: the navigation settings are the navigation service's.

fn nav_write(
    ctx: &mut Ctx<'_>,
    change: impl FnOnce(&mut navigation::NavigationSettings),
) -> Result<()> {
    let mut s = navigation::settings(ctx)?;
    change(&mut s);
    s.validate(ctx)?;
    navigation::save_settings(ctx, &s)
}

fn nav_field<T: serde::de::DeserializeOwned>(field: &str, value: Value) -> Result<T> {
    serde_json::from_value(value)
        .map_err(|e| EngineError::bad_request(format!("Invalid value for '{field}': {e}")))
}

fn read_nav_show_home(ctx: &Ctx<'_>) -> Result<Value> {
    Ok(json!(navigation::settings(ctx)?.show_home))
}

fn write_nav_show_home(ctx: &mut Ctx<'_>, value: Value) -> Result<()> {
    let v: bool = nav_field("show_home", value)?;
    nav_write(ctx, |s| s.show_home = v)
}

fn read_nav_nonfolderish(ctx: &Ctx<'_>) -> Result<Value> {
    Ok(json!(navigation::settings(ctx)?.nonfolderish_tabs))
}

fn write_nav_nonfolderish(ctx: &mut Ctx<'_>, value: Value) -> Result<()> {
    let v: bool = nav_field("nonfolderish_tabs", value)?;
    nav_write(ctx, |s| s.nonfolderish_tabs = v)
}

fn read_nav_displayed_types(ctx: &Ctx<'_>) -> Result<Value> {
    Ok(json!(navigation::settings(ctx)?.displayed_types))
}

fn write_nav_displayed_types(ctx: &mut Ctx<'_>, value: Value) -> Result<()> {
    let v: Option<Vec<String>> = nav_field("displayed_types", value)?;
    nav_write(ctx, |s| s.displayed_types = v)
}

fn read_nav_extra_items(ctx: &Ctx<'_>) -> Result<Value> {
    Ok(serde_json::to_value(
        navigation::settings(ctx)?.extra_items,
    )?)
}

fn write_nav_extra_items(ctx: &mut Ctx<'_>, value: Value) -> Result<()> {
    let v: Vec<navigation::ExtraItem> = nav_field("extra_items", value)?;
    nav_write(ctx, |s| s.extra_items = v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_sorted_unique_and_defaults_fit_their_kind() {
        for w in RECORDS.windows(2) {
            assert!(w[0].name < w[1].name, "{} before {}", w[0].name, w[1].name);
        }
        for r in RECORDS {
            if let Source::Stored = r.source {
                r.kind
                    .check(r.name, &r.default.value())
                    .unwrap_or_else(|e| panic!("{}: {e}", r.name));
            }
        }
    }

    #[test]
    fn timezones_are_sorted() {
        for w in TIMEZONES.windows(2) {
            assert!(w[0] < w[1]);
        }
    }

    #[test]
    fn kinds_refuse_values_of_another_type() {
        assert!(Kind::Bool.check("x", &json!("yes")).is_err());
        assert!(Kind::Int { min: 1 }.check("x", &json!(0)).is_err());
        assert!(Kind::Int { min: 1 }.check("x", &json!(1.5)).is_err());
        assert!(Kind::TextList.check("x", &json!(["a", 1])).is_err());
        assert!(Kind::Choice(&["a"]).check("x", &json!("b")).is_err());
        assert!(Kind::TextOrNull.check("x", &json!([])).is_err());
        assert!(Kind::TextOrNull.check("x", &json!(null)).is_ok());
        assert!(Kind::Int { min: 1 }.check("x", &json!(25)).is_ok());
    }
}
