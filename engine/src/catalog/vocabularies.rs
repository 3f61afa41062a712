//! Vocabularies: named lists of terms (`{token, title}`) that back form fields (content types,
//! workflow states, languages, users, roles, ...). [`VOCABULARIES`] is the one table: a name and
//! the function that computes the terms for a context object, so adding a vocabulary is one line.
//! Each term list is computed from what the service holds (the type registry, the workflows, the
//! users, the settings), never kept as a copy.
//!
//! Names are Plone's (`plone.app.vocabularies.*`, which Volto's forms ask for) and Nick's short
//! names (`types`, `workflowStates`, ...); both compute the same terms.

use crate::core::error::Result;
use crate::core::model::{language, ContentRecord};
use crate::core::security::{Permission, ROLES};
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;
use crate::site::configuration;
use crate::site::profile::SiteProfile;

/// One term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// What clients send back.
    pub token: String,
    /// What they show.
    pub title: String,
}

fn term(token: impl Into<String>, title: impl Into<String>) -> Term {
    Term {
        token: token.into(),
        title: title.into(),
    }
}

/// Computes a vocabulary's terms for a context object.
pub type Compute = fn(&Ctx<'_>, &ContentRecord) -> Result<Vec<Term>>;

/// A vocabulary: its name, the permission its terms need on the context, and how to compute them.
pub struct Vocabulary {
    /// Its name.
    pub name: &'static str,
    /// What the caller needs on the context object to read it.
    pub permission: Permission,
    /// Its terms.
    pub compute: Compute,
}

const fn voc(name: &'static str, permission: Permission, compute: Compute) -> Vocabulary {
    Vocabulary {
        name,
        permission,
        compute,
    }
}

use Permission::{Modify, View};

/// Every vocabulary, in name order (Plone's names, then Nick's). [`listed`] tells which ones
/// `@vocabularies` lists on a site.
pub const VOCABULARIES: &[Vocabulary] = &[
    voc("Behaviors", View, behaviors),
    voc("Fields", View, fields),
    voc("actions", View, actions),
    voc("availableLanguages", View, available_languages),
    voc("behaviors", View, behaviors),
    voc("boolean", View, boolean),
    voc("captchaProviders", View, captcha_providers),
    voc("events", View, events),
    voc("groups", Modify, groups),
    voc("imageScales", View, image_scales),
    voc("permissions", View, permissions),
    voc("plone.app.vocabularies.AllowableContentTypes", View, types),
    voc(
        "plone.app.vocabularies.AllowedContentTypes",
        View,
        allowed_types,
    ),
    voc(
        "plone.app.vocabularies.AvailableContentLanguages",
        View,
        available_languages,
    ),
    voc("plone.app.vocabularies.AvailableEditors", View, editors),
    voc("plone.app.vocabularies.CommonTimezones", View, timezones),
    voc("plone.app.vocabularies.Groups", Modify, groups),
    voc("plone.app.vocabularies.Keywords", View, keywords),
    voc("plone.app.vocabularies.Permissions", View, permissions),
    voc("plone.app.vocabularies.PortalTypes", View, types),
    voc(
        "plone.app.vocabularies.ReallyUserFriendlyTypes",
        View,
        addable_types,
    ),
    voc("plone.app.vocabularies.Roles", View, roles),
    voc(
        "plone.app.vocabularies.SupportedContentLanguages",
        View,
        supported_languages,
    ),
    voc("plone.app.vocabularies.Timezones", View, timezones),
    voc(
        "plone.app.vocabularies.UserFriendlyTypes",
        View,
        addable_types,
    ),
    voc("plone.app.vocabularies.Users", Modify, users),
    voc(
        "plone.app.vocabularies.WorkflowStates",
        View,
        workflow_states,
    ),
    voc(
        "plone.app.vocabularies.WorkflowTransitions",
        View,
        workflow_transitions,
    ),
    voc("plone.app.vocabularies.Workflows", View, workflows),
    voc("plone.contentrules.events", View, events),
    voc("roles", View, roles),
    voc("subjects", View, keywords),
    voc("supportedLanguages", View, supported_languages),
    voc("systemGroups", Modify, system_groups),
    voc("systemUsers", Modify, system_users),
    voc("timezones", View, timezones),
    voc("types", View, types),
    voc("users", Modify, users),
    voc("workflowStates", View, workflow_states),
    voc("workflowTransitions", View, workflow_transitions),
    voc("workflows", View, workflows),
];

/// The vocabularies a Nick site lists (Nick 2.8's `@vocabularies`); the others stay readable by
/// name there. A name here that [`VOCABULARIES`] lacks is not listed.
const NICK_LISTED: &[&str] = &[
    "Fields",
    "actions",
    "availableLanguages",
    "behaviors",
    "boolean",
    "captchaProviders",
    "events",
    "groups",
    "imageScales",
    "permissions",
    "roles",
    "subjects",
    "supportedLanguages",
    "systemGroups",
    "systemUsers",
    "types",
    "users",
    "workflowStates",
    "workflowTransitions",
    "workflows",
];

/// Nick's short names that Plone's list of vocabularies did not have: readable by name on every
/// site, listed only on a Nick site (the default site's list stays Plone's).
const NICK_ONLY: &[&str] = &[
    "captchaProviders",
    "imageScales",
    "subjects",
    "systemGroups",
    "systemUsers",
];

/// Whether `@vocabularies` lists `v` on a site with `profile`: a Nick site lists Nick's names,
/// the default site every vocabulary but the ones only Nick names.
pub fn listed(profile: SiteProfile, v: &Vocabulary) -> bool {
    match profile {
        SiteProfile::Nick => NICK_LISTED.contains(&v.name),
        SiteProfile::Plone => !NICK_ONLY.contains(&v.name),
    }
}

/// Every vocabulary: [`VOCABULARIES`], then [`MORE_PLONE`].
pub fn all() -> impl Iterator<Item = &'static Vocabulary> {
    VOCABULARIES.iter().chain(MORE_PLONE)
}

/// The vocabulary `name`.
pub fn find(name: &str) -> Option<&'static Vocabulary> {
    all().find(|v| v.name == name)
}

/// Whether the caller may read `v` on `obj`.
pub fn readable(ctx: &Ctx<'_>, v: &Vocabulary, obj: &ContentRecord) -> Result<bool> {
    ctx.permitted(v.permission, obj)
}

fn types(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    let mut out: Vec<Term> = ctx
        .types()?
        .all()
        .map(|t| term(&t.name, &t.title))
        .collect();
    out.sort_by(|a, b| a.title.cmp(&b.title));
    Ok(out)
}

/// Every type but the site root, which is never added (Plone's user-friendly type vocabularies
/// leave it out; Nick's `types` lists it).
fn addable_types(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Vec<Term>> {
    let root = crate::content::tree::root(ctx)?.type_name;
    Ok(types(ctx, obj)?
        .into_iter()
        .filter(|t| t.token != root)
        .collect())
}

/// The types that may be added inside the context (none when it is not folderish).
fn allowed_types(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Vec<Term>> {
    let here = ctx.type_of(obj)?;
    if !here.folderish {
        return Ok(Vec::new());
    }
    let mut out: Vec<Term> = ctx
        .types()?
        .all()
        .filter(|t| here.allows(t))
        .map(|t| term(&t.name, &t.title))
        .collect();
    out.sort_by(|a, b| a.title.cmp(&b.title));
    Ok(out)
}

/// The behaviors of the type registry, by name.
fn behaviors(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(crate::content::content_types::behavior_titles(ctx)?
        .into_iter()
        .map(|(name, title)| term(name, title))
        .collect())
}

/// The kinds of field a type's field may have (the factories `@types` accepts, by token or
/// title): plone.schemaeditor's tokens and titles, by title.
fn fields(_: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(crate::content::content_types::field_factories()
        .into_iter()
        .map(|(token, title)| term(token, title))
        .collect())
}

/// The site's actions (every category), by id: what content rules and forms may name.
fn actions(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    let mut out: Vec<Term> = Vec::new();
    for cat in crate::core::model::actions::CATEGORIES {
        for a in crate::site::actions::stored(ctx)?
            .get(*cat)
            .into_iter()
            .flatten()
        {
            if !out.iter().any(|t| t.token == a.id) {
                out.push(term(&a.id, &a.title));
            }
        }
    }
    Ok(out)
}

fn boolean(_: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(vec![term("Yes", "Yes"), term("No", "No")])
}

/// The triggers content rules can react to ([`crate::automation::rules::TRIGGERS`]).
fn events(_: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(crate::automation::rules::TRIGGERS
        .iter()
        .map(|(t, l)| term(*t, *l))
        .collect())
}

/// The permission names a Nick site's `permissions` vocabulary offers (Nick 2.8's permission
/// set, by title). They name what Nick's role settings grant; this engine checks its own
/// [`Permission`]s, which Plone's names list.
const NICK_PERMISSIONS: &[&str] = &[
    "Add",
    "Add Comment",
    "Login",
    "Logout",
    "Manage Preferences",
    "Manage Site",
    "Manage Users",
    "Modify",
    "Modify Comments",
    "Modify Own Comments",
    "Register",
    "Review",
    "Submit",
    "View",
    "View Comments",
];

fn permissions(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    if ctx.profile().is_nick() {
        return Ok(NICK_PERMISSIONS.iter().map(|p| term(*p, *p)).collect());
    }
    Ok([
        Permission::View,
        Permission::AddContent,
        Permission::Modify,
        Permission::Delete,
        Permission::Review,
        Permission::RequestReview,
        Permission::ManagePortal,
    ]
    .into_iter()
    .map(|p| term(p.name(), p.name()))
    .collect())
}

fn roles(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    if ctx.profile().is_nick() {
        // Nick's eight roles by title ([`crate::people::roles`]).
        let names = crate::people::roles::vocabulary(ctx.profile());
        return Ok(names.into_iter().map(|r| term(r, r)).collect());
    }
    Ok(ROLES.iter().map(|r| term(*r, *r)).collect())
}

/// Every language the site knows: Plone's list by code, or on a Nick site Nick's 412 languages
/// by title.
fn supported_languages(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    if ctx.profile().is_nick() {
        let mut out: Vec<Term> = language::nick_all()
            .iter()
            .map(|(c, t)| term(*c, *t))
            .collect();
        out.sort_by(|a, b| a.title.cmp(&b.title));
        return Ok(out);
    }
    Ok(language::all().iter().map(|(c, t)| term(*c, *t)).collect())
}

/// The site's available languages, titled from the profile's language list.
fn available_languages(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    let nick = ctx.profile().is_nick();
    Ok(crate::content::multilingual::settings(ctx)?
        .available_languages
        .iter()
        .map(|c| {
            let title = if nick {
                language::nick_title(c)
            } else {
                language::title(c)
            };
            term(c.clone(), title.unwrap_or(c))
        })
        .collect())
}

/// The image scales the site makes (`plone.allowed_sizes`), by name, in the record's order.
fn image_scales(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(crate::content::files::allowed_sizes(ctx)?
        .into_iter()
        .map(|s| term(s.name.clone(), s.name))
        .collect())
}

/// The captcha providers forms may use: none, since this engine's forms have no captcha.
fn captcha_providers(_: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(Vec::new())
}

fn editors(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    let v = configuration::get(ctx, "plone.available_editors")?;
    Ok(v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e.as_str())
        .map(|e| term(e, e))
        .collect())
}

fn timezones(_: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(configuration::TIMEZONES
        .iter()
        .map(|z| term(*z, *z))
        .collect())
}

/// A principal's term: its id as the token, titled by its name (or its id when it has none).
fn principal_term(id: String, name: String) -> Term {
    if name.is_empty() {
        term(id.clone(), id)
    } else {
        term(id, name)
    }
}

fn users(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(crate::people::auth::users::all(ctx)?
        .into_iter()
        .map(|u| principal_term(u.login, u.fullname))
        .collect())
}

/// The `Subject` values of the content the caller may view (from the catalog), titled by the value.
fn keywords(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(crate::catalog::keywords(ctx)?
        .into_iter()
        .map(|(subject, _count)| term(subject.clone(), subject))
        .collect())
}

/// Every group (the built-in ones too), by id, titled by its title.
fn groups(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(crate::people::auth::groups::listed(ctx)?
        .into_iter()
        .map(|g| principal_term(g.id, g.title))
        .collect())
}

/// The groups the site itself has and refuses to remove (its built-in groups, as it lists them):
/// Nick's `systemGroups`.
fn system_groups(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(crate::people::auth::groups::listed(ctx)?
        .into_iter()
        .filter(|g| crate::people::auth::groups::is_builtin(&g.id))
        .map(|g| principal_term(g.id, g.title))
        .collect())
}

/// The accounts the site keeps and refuses to delete (on a Nick site, the account it was created
/// with and `anonymous`; none on a Plone site): Nick's `systemUsers`.
fn system_users(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(crate::people::accounts::system_users(ctx)?
        .into_iter()
        .map(|login| term(login.clone(), login))
        .collect())
}

fn workflows(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(ctx
        .core
        .workflows
        .all()
        .map(|(id, w)| term(id, &w.title))
        .collect())
}

/// Nick's order of the keys of a stored JSON object (PostgreSQL `jsonb`: shorter keys first, then
/// by bytes), in which Nick lists workflow states and transitions.
fn jsonb_key_order(a: &Term, b: &Term) -> std::cmp::Ordering {
    a.token
        .len()
        .cmp(&b.token.len())
        .then_with(|| a.token.cmp(&b.token))
}

fn workflow_states(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    let mut out: Vec<Term> = Vec::new();
    for (_, w) in ctx.core.workflows.all() {
        for (id, s) in &w.states {
            if !out.iter().any(|t| &t.token == id) {
                out.push(term(id, &s.title));
            }
        }
    }
    if ctx.profile().is_nick() {
        out.sort_by(jsonb_key_order);
    }
    Ok(out)
}

fn workflow_transitions(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    let mut out: Vec<Term> = Vec::new();
    for (_, w) in ctx.core.workflows.all() {
        for (id, t) in &w.transitions {
            if !out.iter().any(|x| &x.token == id) {
                out.push(term(id, &t.title));
            }
        }
    }
    if ctx.profile().is_nick() {
        out.sort_by(jsonb_key_order);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// The rest of Plone's vocabularies (issue 33): each computed from what this site holds. Those
// naming Plone machinery this site does not have (skins, syndication feeds, marker interfaces,
// base-class migrations, calendar import) answer an empty list: docs/DECISIONS.md says why.
// ---------------------------------------------------------------------------------------------

/// Plone's vocabularies beyond [`VOCABULARIES`], in name order.
pub const MORE_PLONE: &[Vocabulary] = &[
    voc("Interfaces", View, nothing),
    voc("plone.app.content.ValidAddableTypes", View, allowed_types),
    voc(
        "plone.app.contenttypes.metadatafields",
        View,
        metadata_fields,
    ),
    voc(
        "plone.app.contenttypes.migration.changed_base_classes",
        View,
        nothing,
    ),
    voc(
        "plone.app.discussion.vocabularies.CaptchaVocabulary",
        View,
        captchas,
    ),
    voc(
        "plone.app.discussion.vocabularies.TextTransformVocabulary",
        View,
        comment_formats,
    ),
    voc("plone.app.event.SynchronizationStrategies", View, nothing),
    voc("plone.app.multilingual.RootCatalog", View, catalog_content),
    voc(
        "plone.app.multilingual.vocabularies.AllAvailableLanguageVocabulary",
        View,
        available_languages_by_title,
    ),
    voc(
        "plone.app.multilingual.vocabularies.AllContentLanguageVocabulary",
        View,
        languages_by_title,
    ),
    voc("plone.app.users.group_ids", Modify, group_ids),
    voc(
        "plone.app.users.user_registration_fields",
        View,
        user_fields,
    ),
    voc("plone.app.vocabularies.Actions", View, action_categories),
    voc("plone.app.vocabularies.AvailableTimezones", View, timezones),
    voc("plone.app.vocabularies.Catalog", View, catalog_content),
    voc(
        "plone.app.vocabularies.ImagesScales",
        View,
        image_scale_sizes,
    ),
    voc(
        "plone.app.vocabularies.MetadataFields",
        View,
        metadata_fields,
    ),
    voc("plone.app.vocabularies.Month", View, months),
    voc("plone.app.vocabularies.MonthAbbr", View, months_abbr),
    voc(
        "plone.app.vocabularies.PortalActionCategories",
        View,
        action_categories,
    ),
    voc("plone.app.vocabularies.Principals", Modify, principals),
    voc("plone.app.vocabularies.Skins", View, nothing),
    voc(
        "plone.app.vocabularies.SyndicatableFeedItems",
        View,
        nothing,
    ),
    voc("plone.app.vocabularies.SyndicationFeedTypes", View, nothing),
    voc("plone.app.vocabularies.Weekdays", View, weekdays),
    voc("plone.app.vocabularies.WeekdaysAbbr", View, weekdays_abbr),
    voc("plone.app.vocabularies.WeekdaysShort", View, weekdays_short),
    voc(
        "plone.formwidget.relations.cmfcontentsearch",
        View,
        catalog_content,
    ),
    voc(
        "plone.schemaeditor.VocabulariesVocabulary",
        View,
        vocabulary_names,
    ),
];

/// A vocabulary of something this site does not have (see [`MORE_PLONE`]).
fn nothing(_: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(Vec::new())
}

/// The days of the week, Monday first, tokens `0` to `6` (Plone's numbering).
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// The months, tokens `0` to `11` (Plone's numbering).
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Terms `0`, `1`, ... titled by the first `len` characters of each name (all of it for `None`).
fn numbered(names: &[&str], len: Option<usize>) -> Vec<Term> {
    names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let title: String = match len {
                Some(l) => n.chars().take(l).collect(),
                None => (*n).to_string(),
            };
            term(i.to_string(), title)
        })
        .collect()
}

fn weekdays(_: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(numbered(&WEEKDAYS, None))
}

fn weekdays_abbr(_: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(numbered(&WEEKDAYS, Some(3)))
}

fn weekdays_short(_: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(numbered(&WEEKDAYS, Some(2)))
}

fn months(_: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(numbered(&MONTHS, None))
}

fn months_abbr(_: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(numbered(&MONTHS, Some(3)))
}

/// The catalog metadata columns search results can show (`metadata_fields`), titled as Plone
/// labels them.
pub const METADATA_COLUMNS: &[(&str, &str)] = &[
    ("CreationDate", "Created on"),
    ("Creator", "Creator"),
    ("Description", "Description"),
    ("EffectiveDate", "Publication date"),
    ("ExpirationDate", "Expiration date"),
    ("ModificationDate", "Last modified"),
    ("Subject", "Tags"),
    ("Title", "Title"),
    ("Type", "Type"),
    ("UID", "UID"),
    ("exclude_from_nav", "Excluded from navigation"),
    ("getId", "getId"),
    ("getObjSize", "Object Size"),
    ("id", "ID"),
    ("is_folderish", "Folder"),
    ("mime_type", "MIME type"),
    ("portal_type", "portal_type"),
    ("review_state", "Review state"),
];

fn metadata_fields(_: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(METADATA_COLUMNS.iter().map(|(c, t)| term(*c, *t)).collect())
}

/// The captcha choice of the comment form: disabled (Plone always offers that; this site has
/// no captcha to enable).
fn captchas(_: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(vec![term("disabled", "Disabled")])
}

/// The text formats comments may have ([`crate::content::comments::validate_text`]).
fn comment_formats(_: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(vec![term("text/plain", "Plain text")])
}

/// The content the caller may view, by UID, titled by its title.
fn catalog_content(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(
        crate::catalog::search(ctx, &crate::catalog::Query::default())?
            .into_iter()
            .map(|e| {
                let title = e.title().to_string();
                term(e.uid, title)
            })
            .collect(),
    )
}

/// Every language the site knows, sorted by title.
fn languages_by_title(_: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    let mut out: Vec<Term> = language::all().iter().map(|(c, t)| term(*c, *t)).collect();
    out.sort_by(|a, b| a.title.cmp(&b.title));
    Ok(out)
}

/// The site's languages, sorted by title.
fn available_languages_by_title(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Vec<Term>> {
    let mut out = available_languages(ctx, obj)?;
    out.sort_by(|a, b| a.title.cmp(&b.title));
    Ok(out)
}

/// Every group, by id, titled by its title (or id).
fn group_ids(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Vec<Term>> {
    groups(ctx, obj)
}

/// The fields of the user schema (the ones a registration form may show), by name.
fn user_fields(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(
        crate::people::accounts::user_fields(ctx, crate::people::accounts::UserForm::Profile)?
            .into_iter()
            .map(|f| {
                let title = if f.title.is_empty() {
                    f.name.clone()
                } else {
                    f.title
                };
                term(f.name, title)
            })
            .collect(),
    )
}

/// The action categories, sorted, titled by their ids.
fn action_categories(_: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    let mut cats: Vec<&str> = crate::core::model::actions::CATEGORIES.to_vec();
    cats.sort_unstable();
    Ok(cats.into_iter().map(|c| term(c, c)).collect())
}

/// The image scales with their boxes (`preview (400x400)`).
fn image_scale_sizes(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    Ok(crate::content::files::allowed_sizes(ctx)?
        .into_iter()
        .map(|s| {
            let title = format!("{} {}x{}", s.name, s.width, s.height);
            term(s.name, title)
        })
        .collect())
}

/// Groups (`group__<id>`) then users (`user__<login>`), as Plone's principals vocabulary
/// tokens them.
fn principals(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Vec<Term>> {
    let mut out: Vec<Term> = groups(ctx, obj)?
        .into_iter()
        .map(|t| term(format!("group__{}", t.token), t.title))
        .collect();
    out.extend(
        users(ctx, obj)?
            .into_iter()
            .map(|t| term(format!("user__{}", t.token), t.title)),
    );
    Ok(out)
}

/// The names of the vocabularies a field may take its values from.
fn vocabulary_names(ctx: &Ctx<'_>, _: &ContentRecord) -> Result<Vec<Term>> {
    let profile = ctx.profile();
    let mut out: Vec<Term> = all()
        .filter(|v| listed(profile, v))
        .map(|v| term(v.name, v.name))
        .collect();
    out.sort_by(|a, b| a.token.cmp(&b.token));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sorted_and_unique() {
        for list in [VOCABULARIES, MORE_PLONE] {
            for w in list.windows(2) {
                assert!(w[0].name < w[1].name, "{} before {}", w[0].name, w[1].name);
            }
        }
        for v in MORE_PLONE {
            assert!(
                VOCABULARIES.iter().all(|o| o.name != v.name),
                "{} twice",
                v.name
            );
        }
    }

    #[test]
    fn weekdays_and_months_are_numbered_from_zero() {
        let days = numbered(&WEEKDAYS, Some(2));
        assert_eq!(
            (days[0].token.as_str(), days[0].title.as_str()),
            ("0", "Mo")
        );
        assert_eq!(
            (days[6].token.as_str(), days[6].title.as_str()),
            ("6", "Su")
        );
        let months = numbered(&MONTHS, Some(3));
        assert_eq!(months.len(), 12);
        assert_eq!(months[11].title, "Dec");
    }
}
