//! Content rules: when a trigger event happens in a folder, the enabled rules assigned there
//! (and those assigned higher up that bubble) whose conditions all hold perform their actions.
//!
//! Rules are data (`R:r:<id>`, [`Rule`]): title, description, trigger ([`TRIGGERS`]), enabled,
//! stop (no further rules run for the event), cascading (events its actions cause may trigger
//! rules), conditions ([`Condition`]) and actions ([`Action`]). An assignment
//! (`R:a:<uid>:<rule id>`, [`Assignment`]) puts a rule on a folder (or the site root), enabled or
//! not, bubbling to subfolders or not.
//!
//! The [`RulesSubscriber`] reacts to the events inside the request's transaction: the actions that
//! change content (copy, move, delete, transition, version) run there, so a failing action fails
//! the request and nothing changes; mail ([`crate::automation::mail`]) and webhooks go into the outbox
//! ([`crate::automation::jobs`]) in the same transaction and are delivered by the host after the commit.
//! Events caused by a rule's actions trigger further rules only when that rule is cascading; a
//! rule its own actions would trigger again stops the request with a 400 naming it (a loop).
//!
//! Where a rule runs: for an event about an object, the rules of its folder (all of them), then
//! of the folders above (only those that bubble), up to the site root; for events about users
//! (login, logout, created, removed), the rules of the site root.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::automation::jobs::{self, Delivery, Setting};
use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::model::ContentRecord;
use crate::runtime::context::Ctx;
use crate::runtime::subscriber::Subscriber;
use crate::{
    automation::mail, content::operations, content::recyclebin, content::tree, content::versioning,
    content::workflow, core::keys,
};

/// The triggers a rule can react to: token and title (Nick's tokens, plus comments and moves).
pub const TRIGGERS: &[(&str, &str)] = &[
    ("onAfterAdd", "Object added to this container"),
    ("onAfterDelete", "Object removed from this container"),
    ("onAfterModified", "Object modified"),
    ("onAfterCopy", "Object copied"),
    ("onAfterMove", "Object moved or renamed"),
    ("onAfterChangeWorkflow", "Workflow state changed"),
    ("onAfterCommentAdded", "Comment added"),
    ("onAfterCommentRemoved", "Comment removed"),
    ("onAfterLogin", "User logged in"),
    ("onAfterLogout", "User logged out"),
    ("onAfterCreateUser", "User created"),
    ("onAfterDeleteUser", "User removed"),
];

/// Other names of triggers: Nick's recorded examples send `onAfterModify` for
/// `onAfterModified`.
const TRIGGER_ALIASES: &[(&str, &str)] = &[("onAfterModify", "onAfterModified")];

/// The trigger token `given` names: a token, or a title (Plone's rules panel sends titles),
/// compared without regard to case; or one of [`TRIGGER_ALIASES`].
pub fn trigger_token(given: &str) -> Option<&'static str> {
    let given = TRIGGER_ALIASES
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(given))
        .map_or(given, |(_, token)| *token);
    TRIGGERS
        .iter()
        .find(|(t, l)| t.eq_ignore_ascii_case(given) || l.eq_ignore_ascii_case(given))
        .map(|(t, _)| *t)
}

/// The title of trigger `token`.
pub fn trigger_title(token: &str) -> &'static str {
    TRIGGERS
        .iter()
        .find(|(t, _)| *t == token)
        .map(|(_, l)| *l)
        .unwrap_or("")
}

/// A content rule.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Rule {
    /// Its id (`rule-<n>`).
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its description.
    pub description: String,
    /// The trigger token ([`TRIGGERS`]).
    pub event: String,
    /// Whether it runs at all.
    pub enabled: bool,
    /// Whether no further rules run for the event after this one ran.
    pub stop: bool,
    /// Whether events its actions cause may trigger rules (itself excepted: that is a loop).
    pub cascading: bool,
    /// All must hold for the actions to run.
    pub conditions: Vec<Condition>,
    /// Performed in order.
    pub actions: Vec<Action>,
    /// The key its webhooks are signed with (HMAC-SHA256).
    pub secret: String,
    /// On a Nick site, the other name of the trigger ([`TRIGGER_ALIASES`]) the rule was given
    /// (`onAfterModify`): `event` holds the token, and a Nick site answers this name as the
    /// rule's trigger, as Nick answers the name it was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_alias: Option<String>,
}

impl Rule {
    /// The rule's trigger as a site with `profile` names it: the token, or on a Nick site the
    /// other name the rule was given ([`Rule::event_alias`]).
    pub fn trigger_named(&self, profile: crate::site::profile::SiteProfile) -> &str {
        match &self.event_alias {
            Some(alias) if profile.is_nick() => alias,
            _ => &self.event,
        }
    }
}

/// A condition of a rule (`type` is Plone's name of its kind).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", deny_unknown_fields)]
pub enum Condition {
    /// The object is of one of these types.
    #[serde(rename = "plone.conditions.PortalType")]
    PortalType {
        /// Type names.
        check_types: Vec<String>,
    },
    /// The object's file (or image) has this file name extension.
    #[serde(rename = "plone.conditions.FileExtension")]
    FileExtension {
        /// The extension, without the dot (case is ignored).
        file_extension: String,
    },
    /// The object is in one of these workflow states.
    #[serde(rename = "plone.conditions.WorkflowState")]
    WorkflowState {
        /// State ids.
        wf_states: Vec<String>,
    },
    /// The event is one of these workflow transitions.
    #[serde(rename = "plone.conditions.WorkflowTransition")]
    WorkflowTransition {
        /// Transition ids.
        wf_transitions: Vec<String>,
    },
    /// The user who caused the event is in one of these groups.
    #[serde(rename = "plone.conditions.Group")]
    Group {
        /// Group ids.
        group_names: Vec<String>,
    },
    /// The user who caused the event has one of these roles on the object.
    #[serde(rename = "plone.conditions.Role")]
    Role {
        /// Role names.
        role_names: Vec<String>,
    },
}

fn default_level() -> i64 {
    20
}

fn default_info() -> String {
    "info".into()
}

/// An action of a rule (`type` is Plone's name of its kind; the webhook is this service's own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", deny_unknown_fields)]
pub enum Action {
    /// Write a line to the service's log. `&e` is replaced by the trigger, `&c` by the object's
    /// URL, `&u` by the user.
    #[serde(rename = "plone.actions.Logger")]
    Logger {
        /// The logger's name.
        #[serde(rename = "targetLogger", default)]
        target_logger: String,
        /// The level (Python's numbers: 20 is info).
        #[serde(rename = "loggingLevel", default = "default_level")]
        logging_level: i64,
        /// The text.
        message: String,
    },
    /// A message to the user who caused the event.
    #[serde(rename = "plone.actions.Notify")]
    Notify {
        /// The text.
        message: String,
        /// `info`, `warning` or `error`.
        #[serde(default = "default_info")]
        message_type: String,
    },
    /// Copy the object into a folder.
    #[serde(rename = "plone.actions.Copy")]
    Copy {
        /// The folder: its path from the site root, or its UID.
        target_folder: String,
    },
    /// Move the object into a folder.
    #[serde(rename = "plone.actions.Move")]
    Move {
        /// The folder: its path from the site root, or its UID.
        target_folder: String,
    },
    /// Delete the object.
    #[serde(rename = "plone.actions.Delete")]
    Delete {},
    /// Take a workflow transition on the object.
    #[serde(rename = "plone.actions.Workflow")]
    Workflow {
        /// The transition id.
        transition: String,
    },
    /// Store a new version of the object.
    #[serde(rename = "plone.actions.Versioning")]
    Versioning {
        /// The version's comment.
        #[serde(default)]
        comment: String,
    },
    /// Send a mail (through the outbox).
    #[serde(rename = "plone.actions.Mail")]
    Mail {
        /// The subject.
        subject: String,
        /// The sender (empty: the site's sender address).
        #[serde(default)]
        source: String,
        /// Recipients, separated by commas.
        recipients: String,
        /// Leave out the user who caused the event.
        #[serde(default)]
        exclude_actor: bool,
        /// The text; `${title}`, `${url}`, `${type}`, `${user_id}`, `${event}` are replaced.
        message: String,
    },
    /// POST a JSON description of the event to a URL (through the outbox), signed with an
    /// HMAC-SHA256 of the rule's secret.
    #[serde(rename = "nick.actions.Webhook")]
    Webhook {
        /// An `http` or `https` URL.
        url: String,
    },
}

/// The settings of each kind of condition or action (name, title, JSON type, required): what
/// its form shows and requires.
pub fn settings_of(kind: &str) -> &'static [Setting] {
    match kind {
        "plone.conditions.PortalType" => &[("check_types", "Content type", "array", true)],
        "plone.conditions.FileExtension" => &[("file_extension", "File extension", "string", true)],
        "plone.conditions.WorkflowState" => &[("wf_states", "Workflow state", "array", true)],
        "plone.conditions.WorkflowTransition" => {
            &[("wf_transitions", "Workflow transition", "array", true)]
        }
        "plone.conditions.Group" => &[("group_names", "Group name", "array", true)],
        "plone.conditions.Role" => &[("role_names", "Roles", "array", true)],
        "plone.actions.Logger" => &[
            ("targetLogger", "Logger name", "string", true),
            ("loggingLevel", "Logging level", "integer", true),
            ("message", "Message", "string", true),
        ],
        "plone.actions.Notify" => &[
            ("message", "Message", "string", true),
            ("message_type", "Message type", "string", true),
        ],
        "plone.actions.Copy" | "plone.actions.Move" => {
            &[("target_folder", "Target folder", "string", true)]
        }
        "plone.actions.Workflow" => &[("transition", "Transition", "string", true)],
        "plone.actions.Versioning" => &[("comment", "Comment", "string", false)],
        "plone.actions.Mail" => &[
            ("subject", "Subject", "string", true),
            ("source", "Email source", "string", false),
            ("recipients", "Email recipients", "string", true),
            (
                "exclude_actor",
                "Exclude actor from recipients",
                "boolean",
                false,
            ),
            ("message", "Message", "string", true),
        ],
        "nick.actions.Webhook" => &[("url", "URL", "string", true)],
        _ => &[],
    }
}

/// The kinds of conditions: `type`, title, description.
pub const CONDITION_KINDS: &[(&str, &str, &str)] = &[
    (
        "plone.conditions.PortalType",
        "Content type",
        "Apply only when the current content object is of a particular type",
    ),
    (
        "plone.conditions.FileExtension",
        "File Extension",
        "Apply only to a particular file extension",
    ),
    (
        "plone.conditions.WorkflowState",
        "Workflow state",
        "Apply only to objects in a particular workflow state",
    ),
    (
        "plone.conditions.WorkflowTransition",
        "Workflow transition",
        "Apply only to a particular workflow transition",
    ),
    (
        "plone.conditions.Group",
        "User's group",
        "Apply only when the current user is in the given group",
    ),
    (
        "plone.conditions.Role",
        "User's role",
        "Apply only when the current user has the given role",
    ),
];

/// The kinds of actions: `type`, title, description.
pub const ACTION_KINDS: &[(&str, &str, &str)] = &[
    ("plone.actions.Logger", "Logger", "Log a particular event"),
    (
        "plone.actions.Notify",
        "Notify user",
        "Return a portal message to the user",
    ),
    (
        "plone.actions.Copy",
        "Copy to folder",
        "Copy the triggering item to a specific folder",
    ),
    (
        "plone.actions.Move",
        "Move to folder",
        "Move the triggering item to a specific folder",
    ),
    (
        "plone.actions.Delete",
        "Delete object",
        "Delete the triggering item",
    ),
    (
        "plone.actions.Workflow",
        "Transition workflow state",
        "Perform a workflow transition on the triggering object",
    ),
    (
        "plone.actions.Versioning",
        "Version object",
        "Store a new version of the object",
    ),
    (
        "plone.actions.Mail",
        "Send email",
        "Send an email on the triggering object",
    ),
    (
        "nick.actions.Webhook",
        "Webhook",
        "POST a signed JSON description of the event to a URL",
    ),
];

/// A kind of condition or action as Nick names and describes it: its Nick `type`, the Plone
/// `type` it is stored as, its title, description and form (JSON Schema). Nick's kinds are
/// accepted by their Nick `type` on every site ([`stored_kind`]) and shown so on a Nick site.
#[derive(Debug, Deserialize)]
pub struct NickKind {
    /// Nick's `type` (`logger`, `transition_workflow`, ...).
    #[serde(rename = "type")]
    pub nick: String,
    /// The `type` it is stored as (`plone.actions.Logger`, ...).
    pub plone: String,
    /// Nick's title.
    pub title: String,
    /// Nick's description.
    pub description: String,
    /// Nick's form of its settings.
    pub schema: Value,
}

/// Nick's kinds of conditions and of actions, in Nick's order.
#[derive(Debug, Deserialize, Default)]
pub struct NickKinds {
    /// The conditions (`content_type`, `file_extension`, `user_group`, `user_role`,
    /// `workflow_state`).
    pub conditions: Vec<NickKind>,
    /// The actions (`copy_item`, `delete_item`, `logger`, `move_item`, `send_email`,
    /// `transition_workflow`, `version_item`).
    pub actions: Vec<NickKind>,
    /// The actions of scheduled jobs Nick has (`reindex`; `plone` is our action's name).
    pub scheduled_actions: Vec<NickKind>,
}

/// Nick's kinds (`nick_kinds.json`, checked by a unit test).
pub fn nick_kinds() -> &'static NickKinds {
    static KINDS: std::sync::OnceLock<NickKinds> = std::sync::OnceLock::new();
    KINDS.get_or_init(|| serde_json::from_str(include_str!("nick_kinds.json")).unwrap_or_default())
}

/// The stored (Plone) `type` of the kind `given` names: Nick's `type`s map to Plone's, any
/// other name is returned as it is.
pub fn stored_kind(given: &str) -> &str {
    let k = nick_kinds();
    k.conditions
        .iter()
        .chain(k.actions.iter())
        .find(|n| n.nick == given)
        .map_or(given, |n| n.plone.as_str())
}

/// Nick's description of the stored kind `plone` (`None`: a kind Nick does not have, such as
/// the workflow transition condition or the webhook action).
pub fn nick_kind(plone: &str) -> Option<&'static NickKind> {
    let k = nick_kinds();
    k.conditions
        .iter()
        .chain(k.actions.iter())
        .find(|n| n.plone == plone)
}

fn kind_type(v: &Value) -> String {
    v.get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

impl Condition {
    /// Its `type`.
    pub fn kind(&self) -> String {
        kind_type(&serde_json::to_value(self).unwrap_or(Value::Null))
    }

    /// One line saying what it checks.
    pub fn summary(&self) -> String {
        match self {
            Condition::PortalType { check_types } => {
                format!("Content types are: {}", check_types.join(", "))
            }
            Condition::FileExtension { file_extension } => {
                format!("File extension is {file_extension}")
            }
            Condition::WorkflowState { wf_states } => {
                format!("Workflow states are: {}", wf_states.join(", "))
            }
            Condition::WorkflowTransition { wf_transitions } => {
                format!("Workflow transitions are: {}", wf_transitions.join(", "))
            }
            Condition::Group { group_names } => {
                format!("Groups are: {}", group_names.join(", "))
            }
            Condition::Role { role_names } => format!("Roles are: {}", role_names.join(", ")),
        }
    }
}

impl Action {
    /// Its `type`.
    pub fn kind(&self) -> String {
        kind_type(&serde_json::to_value(self).unwrap_or(Value::Null))
    }

    /// One line saying what it does.
    pub fn summary(&self) -> String {
        match self {
            Action::Logger { message, .. } => format!("Log message {message}"),
            Action::Notify { message, .. } => format!("Notify with message {message}"),
            Action::Copy { target_folder } => format!("Copy to folder {target_folder}."),
            Action::Move { target_folder } => format!("Move to folder {target_folder}"),
            Action::Delete {} => "Delete object".into(),
            Action::Workflow { transition } => format!("Execute transition {transition}"),
            Action::Versioning { comment } => format!("Versioning with comment {comment}"),
            Action::Mail { recipients, .. } => format!("Email report to {recipients}"),
            Action::Webhook { url } => format!("POST the event to {url}"),
        }
    }
}

/// A rule assigned to an object.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Assignment {
    /// Whether the assignment is enabled.
    pub enabled: bool,
    /// Whether the rule also applies in the subfolders.
    pub bubbles: bool,
    /// Its position among the object's assignments (they run in this order).
    pub position: u64,
}

// ---------------------------------------------------------------- the rules, as data

/// Every rule, in id order (`rule-2` before `rule-10`).
pub fn all(ctx: &Ctx<'_>) -> Result<Vec<Rule>> {
    let mut rules: Vec<Rule> = ctx.values_with_prefix(keys::RULE_PREFIX)?;
    rules.sort_by_key(|r| (number_of(&r.id), r.id.clone()));
    Ok(rules)
}

fn number_of(id: &str) -> u64 {
    id.strip_prefix("rule-")
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}

/// The rule `id`.
pub fn get(ctx: &Ctx<'_>, id: &str) -> Result<Option<Rule>> {
    ctx.get_json(&keys::rule(id))
}

/// The rule `id`, or a 404 naming `url`.
pub fn require(ctx: &Ctx<'_>, id: &str) -> Result<Rule> {
    get(ctx, id)?.ok_or_else(|| EngineError::NotFound {
        url: ctx.url(&format!("/@controlpanels/content-rules/{id}")),
        context: None,
    })
}

/// Check a rule's fields: title present, trigger known (stored as its token), conditions and
/// actions valid.
pub fn validate(ctx: &Ctx<'_>, rule: &mut Rule) -> Result<()> {
    if rule.title.trim().is_empty() {
        return Err(EngineError::Invalid {
            field: "title".into(),
            message: "'title' is required".into(),
        });
    }
    let given = rule.event.clone();
    rule.event = trigger_token(&given)
        .ok_or_else(|| EngineError::Invalid {
            field: "event".into(),
            message: format!(
                "Unknown trigger '{}' in 'event'; known: {}",
                rule.event,
                TRIGGERS
                    .iter()
                    .map(|(t, _)| *t)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })?
        .to_string();
    if given != rule.event {
        // a Nick site keeps the other name the trigger was given by, to answer it
        rule.event_alias = TRIGGER_ALIASES
            .iter()
            .find(|(alias, _)| alias.eq_ignore_ascii_case(&given))
            .filter(|_| ctx.profile().is_nick())
            .map(|(alias, _)| alias.to_string());
    }
    for a in &rule.actions {
        validate_action(ctx, a)?;
    }
    Ok(())
}

fn folder_at(ctx: &Ctx<'_>, target: &str) -> Result<Option<ContentRecord>> {
    if target.starts_with('/') {
        let p = target.trim_end_matches('/');
        return tree::at_path(ctx, p);
    }
    if target.is_empty() {
        return Ok(None);
    }
    tree::load(ctx, target)
}

/// Check an action's settings: a webhook URL is `http(s)://host...`; a copy or move target is
/// an existing folder; a transition is named; a mail has recipients, those with an `@` are
/// addresses, and its source (if any) is an address.
pub fn validate_action(ctx: &Ctx<'_>, a: &Action) -> Result<()> {
    let invalid = |field: &str, message: String| EngineError::Invalid {
        field: field.into(),
        message,
    };
    match a {
        Action::Webhook { url } => {
            let rest = url
                .strip_prefix("http://")
                .or_else(|| url.strip_prefix("https://"));
            let host_ok = rest.is_some_and(|r| {
                let host = r.split(['/', '?', '#']).next().unwrap_or("");
                !host.is_empty() && !host.contains(char::is_whitespace)
            });
            if !host_ok {
                return Err(invalid(
                    "url",
                    format!("'url' must be an http or https URL with a host, not '{url}'"),
                ));
            }
            ctx.core
                .options
                .webhook_destinations
                .check_url(url)
                .map_err(|why| invalid("url", format!("'url' is refused ('{url}'): {why}")))?;
        }
        Action::Copy { target_folder } | Action::Move { target_folder } => {
            let folder = folder_at(ctx, target_folder)?.ok_or_else(|| {
                invalid(
                    "target_folder",
                    format!("'target_folder': there is no folder '{target_folder}'"),
                )
            })?;
            if !ctx.type_of(&folder)?.folderish {
                return Err(invalid(
                    "target_folder",
                    format!("'target_folder': '{target_folder}' is not a folder"),
                ));
            }
        }
        Action::Workflow { transition } if transition.trim().is_empty() => {
            return Err(invalid("transition", "'transition' is required".into()));
        }
        Action::Mail {
            recipients, source, ..
        } => {
            if recipients.trim().is_empty() {
                return Err(invalid("recipients", "'recipients' is required".into()));
            }
            if let Some(r) = recipient_list(recipients)
                .into_iter()
                .find(|r| r.contains('@') && !mail::is_address(r))
            {
                return Err(invalid(
                    "recipients",
                    format!("'recipients': '{r}' is not an e-mail address"),
                ));
            }
            if !source.is_empty() {
                mail::check_address("source", source)?;
            }
        }
        Action::Notify { message_type, .. }
            if !matches!(message_type.as_str(), "info" | "warning" | "error") =>
        {
            return Err(invalid(
                "message_type",
                format!("'message_type' must be info, warning or error, not '{message_type}'"),
            ));
        }
        _ => {}
    }
    Ok(())
}

/// Check an action being added or changed: [`validate_action`], and each recipient of a mail
/// that is not an address must be a user's login (checked here only, not on every save, so a
/// rule whose recipient's account was removed later can still be edited).
pub fn validate_new_action(ctx: &Ctx<'_>, a: &Action) -> Result<()> {
    validate_action(ctx, a)?;
    if let Action::Mail { recipients, .. } = a {
        for r in recipient_list(recipients) {
            if !mail::is_address(&r) && crate::people::auth::users::get(ctx, &r)?.is_none() {
                return Err(EngineError::Invalid {
                    field: "recipients".into(),
                    message: format!(
                        "'recipients': '{r}' is neither an e-mail address nor a user's login"
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Store a new rule (validated) under a free id ([`new_id`]); the stored rule.
pub fn create(ctx: &mut Ctx<'_>, mut rule: Rule) -> Result<Rule> {
    validate(ctx, &mut rule)?;
    rule.id = new_id(ctx, &rule.title)?;
    if rule.secret.is_empty() {
        rule.secret = ctx.new_uid();
    }
    save(ctx, &rule)?;
    Ok(rule)
}

/// The id of a new rule titled `title`: on the default site the next `rule-<n>`; on a Nick
/// site, as Nick names a rule, the title made an id (`Content Rule 3` is `content-rule-3`),
/// with `-1`, `-2`, ... added while another rule has it (a title with nothing to make an id
/// of takes the next `rule-<n>`). Ids given out before stay as they are.
fn new_id(ctx: &Ctx<'_>, title: &str) -> Result<String> {
    let rules = all(ctx)?;
    let taken = |id: &str| rules.iter().any(|r| r.id == id);
    if ctx.profile().is_nick() && title.chars().any(char::is_alphanumeric) {
        let base = crate::core::model::ids::normalize(title);
        let mut id = base.clone();
        let mut n = 0;
        while taken(&id) {
            n += 1;
            id = format!("{base}-{n}");
        }
        return Ok(id);
    }
    let mut next = rules
        .iter()
        .map(|r| number_of(&r.id))
        .filter(|n| *n != u64::MAX)
        .max()
        .unwrap_or(0)
        + 1;
    while taken(&format!("rule-{next}")) {
        next += 1;
    }
    Ok(format!("rule-{next}"))
}

/// What a caller sets of a rule: on creation `event` is required and the others default
/// (enabled, not stopping, not cascading, a random secret); on an update, only what is given
/// changes.
#[derive(Debug, Clone, Default)]
pub struct RuleChanges {
    /// The rule's id: ignored on creation (ids are given out); on an update it must be the
    /// rule's own (Volto's rules list sends it back).
    pub id: Option<String>,
    /// Its title.
    pub title: Option<String>,
    /// Its description.
    pub description: Option<String>,
    /// Its trigger (a token of [`TRIGGERS`] or its title).
    pub event: Option<String>,
    /// Whether it runs.
    pub enabled: Option<bool>,
    /// Whether no further rules run after it.
    pub stop: Option<bool>,
    /// Whether events its actions cause may trigger rules.
    pub cascading: Option<bool>,
    /// The key webhooks are signed with (never empty).
    pub secret: Option<String>,
}

/// Create a rule from `c` ([`RuleChanges`]: `event` required); the stored rule.
pub fn create_from(ctx: &mut Ctx<'_>, c: RuleChanges) -> Result<Rule> {
    create(
        ctx,
        Rule {
            id: String::new(),
            title: c.title.unwrap_or_default(),
            description: c.description.unwrap_or_default(),
            event: c.event.ok_or_else(|| EngineError::Invalid {
                field: "event".into(),
                message: "'event' is required".into(),
            })?,
            enabled: c.enabled.unwrap_or(true),
            stop: c.stop.unwrap_or(false),
            cascading: c.cascading.unwrap_or(false),
            conditions: Vec::new(),
            actions: Vec::new(),
            secret: c.secret.unwrap_or_default(),
            event_alias: None,
        },
    )
}

/// Change `rule` by `c` (what is given; its id cannot change, its secret cannot be emptied)
/// and store it.
pub fn update(ctx: &mut Ctx<'_>, mut rule: Rule, c: RuleChanges) -> Result<()> {
    if c.id.as_ref().is_some_and(|given| *given != rule.id) {
        return Err(EngineError::Invalid {
            field: "id".into(),
            message: format!("'id' cannot change (it is '{}')", rule.id),
        });
    }
    if c.secret.as_ref().is_some_and(String::is_empty) {
        return Err(EngineError::Invalid {
            field: "secret".into(),
            message: "'secret' must not be empty".into(),
        });
    }
    let set = |slot: &mut String, v: Option<String>| {
        if let Some(v) = v {
            *slot = v;
        }
    };
    set(&mut rule.title, c.title);
    set(&mut rule.description, c.description);
    if c.event.is_some() {
        rule.event_alias = None;
    }
    set(&mut rule.event, c.event);
    set(&mut rule.secret, c.secret);
    rule.enabled = c.enabled.unwrap_or(rule.enabled);
    rule.stop = c.stop.unwrap_or(rule.stop);
    rule.cascading = c.cascading.unwrap_or(rule.cascading);
    save(ctx, &rule)
}

/// Store `rule` (validated) over the rule of the same id.
pub fn save(ctx: &mut Ctx<'_>, rule: &Rule) -> Result<()> {
    let mut r = rule.clone();
    validate(ctx, &mut r)?;
    ctx.put_json(&keys::rule(&r.id), &r)?;
    ctx.emit(Event::SettingsChanged {
        settings: format!("content-rules:{}", r.id),
    });
    Ok(())
}

/// Delete rule `id` and every assignment of it.
pub fn delete(ctx: &mut Ctx<'_>, id: &str) -> Result<()> {
    require(ctx, id)?;
    for (key, _) in ctx.scan_prefix(keys::RULE_ASSIGNMENT_PREFIX)? {
        if key.ends_with(format!(":{id}").as_bytes()) {
            ctx.delete(&key)?;
        }
    }
    ctx.delete(&keys::rule(id))?;
    ctx.emit(Event::SettingsChanged {
        settings: format!("content-rules:{id}"),
    });
    Ok(())
}

/// The uids of the objects in the tree rule `id` is assigned to (objects in the recycle bin
/// keep their assignments until purged, but do not count).
pub fn assigned_to(ctx: &Ctx<'_>, id: &str) -> Result<Vec<ContentRecord>> {
    let suffix = format!(":{id}");
    let mut out = Vec::new();
    for (key, _) in ctx.scan_prefix(keys::RULE_ASSIGNMENT_PREFIX)? {
        let Some(rest) = key.strip_prefix(keys::RULE_ASSIGNMENT_PREFIX) else {
            continue;
        };
        let Some(uid) = rest.strip_suffix(suffix.as_bytes()) else {
            continue;
        };
        if let Some(obj) = tree::load(ctx, &String::from_utf8_lossy(uid))? {
            out.push(obj);
        }
    }
    Ok(out)
}

/// Whether rule `id` is assigned to an object in the tree.
pub fn is_assigned(ctx: &Ctx<'_>, id: &str) -> Result<bool> {
    Ok(!assigned_to(ctx, id)?.is_empty())
}

/// Move item `idx` of `items` one place up (`up`) or down; a 400 when it cannot move.
pub fn move_item<T>(items: &mut [T], idx: usize, up: bool, what: &str) -> Result<()> {
    let to = if up {
        idx.checked_sub(1)
    } else {
        Some(idx + 1)
    };
    match to {
        Some(to) if to < items.len() && idx < items.len() => {
            items.swap(idx, to);
            Ok(())
        }
        _ => Err(EngineError::bad_request(format!(
            "The {what} {idx} cannot move {}",
            if up { "up" } else { "down" }
        ))),
    }
}

/// A change to a rule's conditions or actions.
#[derive(Debug, Clone)]
pub enum ElementChange<T> {
    /// Append one.
    Add(T),
    /// Replace the one at this position.
    Replace(usize, T),
    /// Move the one at this position up (`true`) or down one place.
    Move(usize, bool),
    /// Remove the one at this position.
    Remove(usize),
}

fn apply<T>(items: &mut Vec<T>, change: ElementChange<T>, what: &str) -> Result<()> {
    let missing = |i: usize| EngineError::bad_request(format!("The rule has no {what} {i}"));
    match change {
        ElementChange::Add(x) => items.push(x),
        ElementChange::Replace(i, x) => *items.get_mut(i).ok_or_else(|| missing(i))? = x,
        ElementChange::Move(i, up) => move_item(items, i, up, what)?,
        ElementChange::Remove(i) => {
            if i >= items.len() {
                return Err(missing(i));
            }
            items.remove(i);
        }
    }
    Ok(())
}

/// Change `rule`'s conditions by `change` and store it; the stored rule.
pub fn change_conditions(
    ctx: &mut Ctx<'_>,
    mut rule: Rule,
    change: ElementChange<Condition>,
) -> Result<Rule> {
    apply(&mut rule.conditions, change, "condition")?;
    save(ctx, &rule)?;
    Ok(rule)
}

/// Change `rule`'s actions by `change` (an added or replaced action is checked by
/// [`validate_new_action`]) and store it; the stored rule.
pub fn change_actions(
    ctx: &mut Ctx<'_>,
    mut rule: Rule,
    change: ElementChange<Action>,
) -> Result<Rule> {
    if let ElementChange::Add(a) | ElementChange::Replace(_, a) = &change {
        validate_new_action(ctx, a)?;
    }
    apply(&mut rule.actions, change, "action")?;
    save(ctx, &rule)?;
    Ok(rule)
}

// ---------------------------------------------------------------- assignments

/// The rules assigned to object `uid`, in their order.
pub fn assigned(ctx: &Ctx<'_>, uid: &str) -> Result<Vec<(String, Assignment)>> {
    let prefix = keys::rule_assignments(uid);
    let mut out = Vec::new();
    for (key, value) in ctx.scan_prefix(&prefix)? {
        let id = String::from_utf8_lossy(&key[prefix.len()..]).into_owned();
        let a: Assignment = serde_json::from_slice(&value)
            .map_err(|e| EngineError::Internal(format!("assignment {id}: {e}")))?;
        out.push((id, a));
    }
    out.sort_by_key(|(_, a)| a.position);
    Ok(out)
}

/// Assign rule `id` to `obj` (enabled, bubbling; as Plone does). Assigning a rule that is
/// already assigned changes nothing (its place and switches stay): `Ok(false)`, as Plone answers
/// it with success; `Ok(true)` when the assignment is new.
pub fn assign(ctx: &mut Ctx<'_>, obj: &ContentRecord, id: &str) -> Result<bool> {
    require(ctx, id)?;
    let existing = assigned(ctx, &obj.uid)?;
    if existing.iter().any(|(r, _)| r == id) {
        return Ok(false);
    }
    let position = existing
        .iter()
        .map(|(_, a)| a.position + 1)
        .max()
        .unwrap_or(0);
    put_assignment(
        ctx,
        obj,
        id,
        &Assignment {
            enabled: true,
            bubbles: true,
            position,
        },
    )?;
    Ok(true)
}

fn put_assignment(ctx: &mut Ctx<'_>, obj: &ContentRecord, id: &str, a: &Assignment) -> Result<()> {
    ctx.put_json(&keys::rule_assignment(&obj.uid, id), a)?;
    ctx.emit(Event::SettingsChanged {
        settings: format!("content-rules:{id}"),
    });
    Ok(())
}

/// Check that every rule of `ids` is assigned to `obj` (400 naming the first that is not, and
/// for an empty list).
fn check_assigned(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    ids: &[String],
) -> Result<Vec<(String, Assignment)>> {
    if ids.is_empty() {
        return Err(EngineError::Invalid {
            field: "rule_ids".into(),
            message: "'rule_ids' must name at least one rule".into(),
        });
    }
    let existing = assigned(ctx, &obj.uid)?;
    let mut out = Vec::new();
    for id in ids {
        let a = existing
            .iter()
            .find(|(r, _)| r == id)
            .ok_or_else(|| EngineError::Invalid {
                field: "rule_ids".into(),
                message: format!("'rule_ids': the content rule {id} is not assigned here"),
            })?;
        out.push(a.clone());
    }
    Ok(out)
}

/// Change the assignments `ids` of `obj` with `f` (all checked first: nothing changes when one
/// is not assigned).
pub fn update_assignments(
    ctx: &mut Ctx<'_>,
    obj: &ContentRecord,
    ids: &[String],
    f: impl Fn(&mut Assignment),
) -> Result<()> {
    for (id, mut a) in check_assigned(ctx, obj, ids)? {
        f(&mut a);
        put_assignment(ctx, obj, &id, &a)?;
    }
    Ok(())
}

/// Move the rule `id` assigned to `obj` one place up (earlier) or down among the object's
/// assignments (they run in that order). A 400 when it is not assigned here or is already
/// first (up) or last (down).
pub fn move_assignment(ctx: &mut Ctx<'_>, obj: &ContentRecord, id: &str, up: bool) -> Result<()> {
    let mut order = assigned(ctx, &obj.uid)?;
    let idx = order
        .iter()
        .position(|(r, _)| r == id)
        .ok_or_else(|| EngineError::Invalid {
            field: "rule_id".into(),
            message: format!("'rule_id': the content rule {id} is not assigned here"),
        })?;
    let to = if up {
        idx.checked_sub(1)
    } else {
        Some(idx + 1)
    };
    match to {
        Some(to) if to < order.len() => order.swap(idx, to),
        _ => {
            return Err(EngineError::Invalid {
                field: "rule_id".into(),
                message: format!(
                    "'rule_id': the content rule {id} is already the {} here",
                    if up { "first" } else { "last" }
                ),
            })
        }
    }
    for (position, (rid, a)) in order.iter_mut().enumerate() {
        let position = position as u64;
        if a.position != position {
            a.position = position;
            put_assignment(ctx, obj, rid, a)?;
        }
    }
    Ok(())
}

/// Unassign the rules `ids` from `obj` (all checked first).
pub fn unassign(ctx: &mut Ctx<'_>, obj: &ContentRecord, ids: &[String]) -> Result<()> {
    for (id, _) in check_assigned(ctx, obj, ids)? {
        ctx.delete(&keys::rule_assignment(&obj.uid, &id))?;
        ctx.emit(Event::SettingsChanged {
            settings: format!("content-rules:{id}"),
        });
    }
    Ok(())
}

/// The rules assigned above `obj` that bubble down to it, nearest folder first: (rule id, the
/// assignment, the path of the folder it is assigned to).
pub fn acquired(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Vec<(String, Assignment)>> {
    let mut out = Vec::new();
    for a in tree::ancestors(ctx, obj)?.iter().rev() {
        for (id, asg) in assigned(ctx, &a.uid)? {
            if asg.bubbles && !out.iter().any(|(r, _): &(String, Assignment)| *r == id) {
                out.push((id, asg));
            }
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------- running the rules

/// What an event is about, as the conditions and actions see it.
struct Subject {
    trigger: &'static str,
    /// The object (loaded when it still exists).
    obj: Option<ContentRecord>,
    uid: Option<String>,
    path: Option<String>,
    type_name: Option<String>,
    /// Where the rules are looked up first.
    container: Option<String>,
    transition: Option<String>,
    /// For user events: the user.
    login: Option<String>,
    extra: Map<String, Value>,
}

fn parent_path(path: &str) -> String {
    match path.rfind('/') {
        Some(i) => path[..i].to_string(),
        None => String::new(),
    }
}

fn last_segment(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or("")
}

fn subject_of(ctx: &Ctx<'_>, event: &Event) -> Result<Option<Subject>> {
    let mut s = Subject {
        trigger: "",
        obj: None,
        uid: None,
        path: None,
        type_name: None,
        container: None,
        transition: None,
        login: None,
        extra: Map::new(),
    };
    let content = |s: &mut Subject, trigger, uid: &str, path: &str| {
        s.trigger = trigger;
        s.uid = Some(uid.to_string());
        s.path = Some(path.to_string());
        s.container = Some(if path.is_empty() {
            String::new()
        } else {
            parent_path(path)
        });
    };
    match event {
        Event::Added {
            uid, path, parent, ..
        } => {
            if parent.as_ref().is_some_and(|p| ctx.added_here.contains(p)) {
                return Ok(None); // a member of a copied folder: Plone announces the top only
            }
            content(&mut s, "onAfterAdd", uid, path);
        }
        Event::Copied {
            uid, path, source, ..
        } => {
            content(&mut s, "onAfterCopy", uid, path);
            s.extra.insert("source_uid".into(), json!(source));
        }
        Event::Modified {
            uid, path, fields, ..
        } => {
            content(&mut s, "onAfterModified", uid, path);
            s.extra.insert("fields".into(), json!(fields));
        }
        Event::Removed {
            uid,
            path,
            type_name,
            parent,
        }
        | Event::Binned {
            uid,
            path,
            type_name,
            parent,
        } => {
            // With the recycle bin on, a delete bins (`Binned`); `Removed` then means a purge of
            // the bin, which is no new deletion.
            if matches!(event, Event::Removed { .. }) && recyclebin::enabled(ctx)? {
                return Ok(None);
            }
            // Once for a deleted subtree, as Plone: for its top (whose folder is still there).
            let top = match parent {
                Some(p) => tree::load(ctx, p)?.is_some(),
                None => false,
            };
            if !top {
                return Ok(None);
            }
            content(&mut s, "onAfterDelete", uid, path);
            s.type_name = Some(type_name.clone());
        }
        Event::Moved {
            uid,
            old_path,
            new_path,
            old_parent,
            new_parent,
        } => {
            if old_parent == new_parent && last_segment(old_path) == last_segment(new_path) {
                return Ok(None); // a descendant of what moved
            }
            content(&mut s, "onAfterMove", uid, new_path);
            s.extra.insert("old_path".into(), json!(old_path));
        }
        Event::Transitioned {
            uid,
            path,
            transition,
            from,
            to,
        } => {
            content(&mut s, "onAfterChangeWorkflow", uid, path);
            s.transition = Some(transition.clone());
            s.extra.insert("transition".into(), json!(transition));
            s.extra.insert("from".into(), json!(from));
            s.extra.insert("to".into(), json!(to));
        }
        Event::CommentAdded {
            uid,
            path,
            comment_id,
        } => {
            content(&mut s, "onAfterCommentAdded", uid, path);
            s.extra.insert("comment_id".into(), json!(comment_id));
        }
        Event::CommentRemoved {
            uid,
            path,
            comment_id,
        } => {
            content(&mut s, "onAfterCommentRemoved", uid, path);
            s.extra.insert("comment_id".into(), json!(comment_id));
        }
        Event::UserLoggedIn { login }
        | Event::UserLoggedOut { login }
        | Event::UserAdded { login }
        | Event::UserRemoved { login } => {
            s.trigger = match event {
                Event::UserLoggedIn { .. } => "onAfterLogin",
                Event::UserLoggedOut { .. } => "onAfterLogout",
                Event::UserAdded { .. } => "onAfterCreateUser",
                _ => "onAfterDeleteUser",
            };
            s.login = Some(login.clone());
            s.container = Some(String::new());
        }
        _ => return Ok(None),
    }
    // Comments are about their object; the rules of the object's folder apply.
    if let Some(uid) = &s.uid {
        s.obj = tree::load(ctx, uid)?;
        if let Some(o) = &s.obj {
            s.type_name = Some(o.type_name.clone());
        }
    }
    Ok(Some(s))
}

/// Runs the content rules on the events of each request ([`crate::site::registry`]); owns (and cleans
/// when the object is removed) its assignments `R:a:<uid>:`.
pub struct RulesSubscriber;

impl Subscriber for RulesSubscriber {
    fn name(&self) -> &'static str {
        "rules"
    }

    fn on_event(&self, ctx: &mut Ctx<'_>, event: &Event) -> Result<()> {
        if let Event::Removed { uid, .. } = event {
            ctx.delete_prefix(&keys::rule_assignments(uid))?;
        }
        if ctx
            .scan(
                keys::RULE_ASSIGNMENT_PREFIX,
                b"R:b",
                crate::core::store::Direction::Forward,
                1,
            )?
            .is_empty()
        {
            return Ok(()); // no rule is assigned anywhere
        }
        let Some(subject) = subject_of(ctx, event)? else {
            if let Event::Added { uid, .. } = event {
                ctx.added_here.push(uid.clone());
            }
            return Ok(());
        };
        if let Event::Added { uid, .. } = event {
            ctx.added_here.push(uid.clone());
        }
        let cause = ctx.event_cause.clone();
        if let Some(last) = cause.last() {
            if !get(ctx, last)?.is_some_and(|r| r.cascading) {
                return Ok(());
            }
        }
        run(ctx, &subject, &cause)
    }
}

fn run(ctx: &mut Ctx<'_>, s: &Subject, cause: &[String]) -> Result<()> {
    let Some(container_path) = &s.container else {
        return Ok(());
    };
    let container = match tree::at_path(ctx, container_path)? {
        Some(c) => c,
        None => return Ok(()),
    };
    let mut chain = vec![container.clone()];
    chain.extend(tree::ancestors(ctx, &container)?.into_iter().rev());
    let mut executed: BTreeSet<String> = BTreeSet::new();
    for (depth, folder) in chain.iter().enumerate() {
        for (id, asg) in assigned(ctx, &folder.uid)? {
            if !asg.enabled || (depth > 0 && !asg.bubbles) || executed.contains(&id) {
                continue;
            }
            let Some(rule) = get(ctx, &id)? else { continue };
            if !rule.enabled || rule.event != s.trigger {
                continue;
            }
            if !conditions_hold(ctx, &rule, s)? {
                continue;
            }
            if cause.contains(&rule.id) {
                return Err(EngineError::bad_request(format!(
                    "Content rule '{}' ({}) would loop: its own actions trigger it again; \
                     nothing was changed",
                    rule.id, rule.title
                )));
            }
            executed.insert(id.clone());
            let saved = std::mem::take(&mut ctx.running_rules);
            ctx.running_rules = cause.to_vec();
            ctx.running_rules.push(rule.id.clone());
            let out = perform(ctx, &rule, s);
            ctx.running_rules = saved;
            out?;
            if rule.stop {
                return Ok(());
            }
        }
    }
    Ok(())
}

fn file_name(obj: &ContentRecord) -> Option<String> {
    ["file", "image"].iter().find_map(|f| {
        obj.fields
            .get(*f)
            .and_then(|v| v.get("filename"))
            .and_then(Value::as_str)
            .map(str::to_string)
    })
}

fn conditions_hold(ctx: &Ctx<'_>, rule: &Rule, s: &Subject) -> Result<bool> {
    for c in &rule.conditions {
        let ok = match c {
            Condition::PortalType { check_types } => s
                .type_name
                .as_ref()
                .is_some_and(|t| check_types.contains(t)),
            Condition::FileExtension { file_extension } => {
                let want = file_extension.trim_start_matches('.').to_lowercase();
                s.obj
                    .as_ref()
                    .and_then(file_name)
                    .and_then(|n| n.rsplit_once('.').map(|(_, e)| e.to_lowercase()))
                    .is_some_and(|e| e == want)
            }
            Condition::WorkflowState { wf_states } => s
                .obj
                .as_ref()
                .and_then(|o| o.review_state.as_ref())
                .is_some_and(|st| wf_states.contains(st)),
            Condition::WorkflowTransition { wf_transitions } => s
                .transition
                .as_ref()
                .is_some_and(|t| wf_transitions.contains(t)),
            Condition::Group { group_names } => match &ctx.principal {
                crate::core::security::Principal::User(u) => {
                    u.groups.iter().any(|g| group_names.contains(g))
                }
                crate::core::security::Principal::Anonymous => false,
            },
            Condition::Role { role_names } => {
                let roles = match &s.obj {
                    Some(o) => {
                        let anc = tree::ancestors(ctx, o)?;
                        ctx.principal.roles_on(o, &anc)
                    }
                    None => ctx.principal.global_roles(),
                };
                role_names.iter().any(|r| roles.contains(r))
            }
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Who caused the event: the caller, or for a login the user who logged in.
fn actor(ctx: &Ctx<'_>, s: &Subject) -> String {
    ctx.principal
        .login()
        .or(s.login.as_deref().filter(|_| s.trigger == "onAfterLogin"))
        .unwrap_or("Anonymous User")
        .to_string()
}

fn substitute(ctx: &Ctx<'_>, text: &str, s: &Subject) -> String {
    let url = s.path.as_deref().map(|p| ctx.url(p)).unwrap_or_default();
    let title = s
        .obj
        .as_ref()
        .and_then(|o| o.fields.get("title"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    text.replace("${title}", &title)
        .replace("${url}", &url)
        .replace("${absolute_url}", &url)
        .replace("${type}", s.type_name.as_deref().unwrap_or_default())
        .replace("${user_id}", &actor(ctx, s))
        .replace("${event}", s.trigger)
        .replace("&e", s.trigger)
        .replace("&c", &url)
        .replace("&u", &actor(ctx, s))
}

/// The JSON description of the event a webhook posts.
fn event_document(ctx: &Ctx<'_>, rule: &Rule, s: &Subject) -> Value {
    let mut doc = Map::new();
    doc.insert("trigger".into(), json!(s.trigger));
    doc.insert("rule".into(), json!(rule.id));
    doc.insert("actor".into(), json!(actor(ctx, s)));
    doc.insert("time".into(), json!(crate::core::clock::iso(&ctx.now())));
    if let Some(path) = &s.path {
        let mut o = Map::new();
        o.insert("@id".into(), json!(ctx.url(path)));
        o.insert("UID".into(), json!(s.uid));
        o.insert("@type".into(), json!(s.type_name));
        if let Some(obj) = &s.obj {
            o.insert("id".into(), json!(obj.id));
            o.insert(
                "title".into(),
                obj.fields.get("title").cloned().unwrap_or(Value::Null),
            );
            o.insert("review_state".into(), json!(obj.review_state));
        }
        doc.insert("object".into(), Value::Object(o));
    }
    if let Some(login) = &s.login {
        doc.insert("user".into(), json!(login));
    }
    for (k, v) in &s.extra {
        doc.insert(k.clone(), v.clone());
    }
    Value::Object(doc)
}

fn the_object(s: &Subject, what: &str) -> Result<ContentRecord> {
    s.obj.clone().ok_or_else(|| {
        EngineError::bad_request(format!(
            "A content rule's {what} action needs an object, and the {} event has none",
            s.trigger
        ))
    })
}

fn target(ctx: &Ctx<'_>, folder: &str) -> Result<ContentRecord> {
    folder_at(ctx, folder)?.ok_or_else(|| {
        EngineError::bad_request(format!(
            "A content rule's target folder '{folder}' does not exist"
        ))
    })
}

fn perform(ctx: &mut Ctx<'_>, rule: &Rule, s: &Subject) -> Result<()> {
    for action in &rule.actions {
        match action {
            Action::Logger {
                target_logger,
                logging_level,
                message,
            } => {
                let line = format!(
                    "[{target_logger} {logging_level}] {}",
                    substitute(ctx, message, s)
                );
                if let Some(log) = &ctx.core.options.info_log {
                    log(&line);
                }
            }
            Action::Notify {
                message,
                message_type,
            } => {
                let text = substitute(ctx, message, s);
                ctx.notices.push(format!("{message_type}: {text}"));
            }
            Action::Copy { target_folder } => {
                let obj = the_object(s, "copy")?;
                let dest = target(ctx, target_folder)?;
                operations::transfer(ctx, operations::Transfer::Copy, &obj, &dest)?;
            }
            Action::Move { target_folder } => {
                let obj = the_object(s, "move")?;
                let dest = target(ctx, target_folder)?;
                if tree::is_within(&dest, &obj) {
                    return Err(EngineError::bad_request(format!(
                        "Content rule '{}' cannot move '{}' into itself",
                        rule.id, obj.path
                    )));
                }
                operations::transfer(ctx, operations::Transfer::Move, &obj, &dest)?;
            }
            Action::Delete {} => {
                let obj = the_object(s, "delete")?;
                if obj.is_root() {
                    return Err(EngineError::bad_request(
                        "A content rule cannot delete the site root",
                    ));
                }
                let cmd = operations::Delete {
                    locks: operations::Locks::Bypass,
                    purge: false,
                };
                operations::delete(ctx, &obj, &cmd)?;
            }
            Action::Workflow { transition } => {
                let mut obj = the_object(s, "transition")?;
                workflow::take(
                    ctx,
                    None,
                    &mut obj,
                    transition,
                    &workflow::TransitionOptions::default(),
                )?;
            }
            Action::Versioning { comment } => {
                let obj = the_object(s, "versioning")?;
                versioning::record(ctx, &obj, Map::new(), comment.clone())?;
            }
            Action::Mail {
                subject,
                source,
                recipients,
                exclude_actor,
                message,
            } => {
                let mut to = recipient_list(recipients);
                if *exclude_actor {
                    if let Some(login) = ctx.principal.login() {
                        let email = crate::people::auth::users::get(ctx, login)?
                            .map(|u| u.email)
                            .unwrap_or_default();
                        to.retain(|r| r != login && (email.is_empty() || *r != email));
                    }
                }
                let to = mail_addresses(ctx, to)?;
                if to.is_empty() {
                    continue;
                }
                let subject = substitute(ctx, subject, s);
                let body = substitute(ctx, message, s);
                let mut outgoing = mail::from_site(ctx, to, subject, body)?;
                if !source.is_empty() {
                    outgoing.from = source.clone();
                    outgoing.from_name = None;
                }
                let mut params = Map::new();
                params.insert("rule".into(), json!(rule.id));
                params.insert("trigger".into(), json!(s.trigger));
                mail::queue(ctx, outgoing, &rule.title, params)?;
            }
            Action::Webhook { url } => {
                let doc = event_document(ctx, rule, s);
                let body = serde_json::to_string(&doc)
                    .map_err(|e| EngineError::Internal(e.to_string()))?;
                let signature = jobs::sign(&rule.secret, body.as_bytes());
                let mut params = Map::new();
                params.insert("rule".into(), json!(rule.id));
                params.insert("trigger".into(), json!(s.trigger));
                params.insert("url".into(), json!(url));
                if let Some(p) = &s.path {
                    params.insert("object".into(), json!(ctx.url(p)));
                }
                let job = jobs::new_job(ctx, &format!("Webhook: {url}"), &rule.title, params);
                jobs::enqueue(
                    ctx,
                    job,
                    Delivery::Webhook {
                        url: url.clone(),
                        body,
                        signature,
                    },
                )?;
            }
        }
    }
    Ok(())
}

/// The recipients of a mail action: its comma-separated entries, trimmed, empty ones left out.
fn recipient_list(recipients: &str) -> Vec<String> {
    recipients
        .split(',')
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty())
        .collect()
}

/// The addresses of a mail action's recipients: an e-mail address as is, a user's login as the
/// user's address; an entry that is neither (a login whose user is gone, or who has no valid
/// address) is left out, since no delivery could ever succeed.
fn mail_addresses(ctx: &Ctx<'_>, recipients: Vec<String>) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for r in recipients {
        if mail::is_address(&r) {
            out.push(r);
        } else if let Some(u) = crate::people::auth::users::get(ctx, &r)? {
            if mail::is_address(&u.email) {
                out.push(u.email);
            }
        }
    }
    Ok(out)
}
