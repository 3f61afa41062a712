//! The site's actions as data: categories, the stored shape of an action, the actions a new site
//! has, and the check of a value written to the `plone.actions` configuration record. Which
//! actions a caller gets is [`crate::site::actions`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::core::error::{EngineError, Result};

/// The categories, in the order they are answered.
pub const CATEGORIES: &[&str] = &[
    "object",
    "object_buttons",
    "portal_tabs",
    "site_actions",
    "user",
    "document_actions",
];

/// The actions a new site has (the default of the `plone.actions` record). Icons are the names
/// of the icons Plone 6's toolbar uses. Volto's "More" menu offers "Rules" for the object
/// action `contentrules` and "URL Management" for the object button `redirection`; both need
/// what `@content-rules` and `@aliases` need (Modify).
pub const DEFAULT_ACTIONS: &str = r#"{
  "object": [
    {"id": "view", "title": "View", "icon": "toolbar-action/view", "permission": "View"},
    {"id": "edit", "title": "Edit", "icon": "toolbar-action/edit", "permission": "Modify portal content"},
    {"id": "folderContents", "title": "Contents", "icon": "toolbar-action/folderContents", "permission": "Modify portal content"},
    {"id": "history", "title": "History", "icon": "toolbar-action/history", "permission": "Modify portal content"},
    {"id": "local_roles", "title": "Sharing", "icon": "toolbar-action/sharing", "permission": "Modify portal content"},
    {"id": "contentrules", "title": "Rules", "icon": "toolbar-action/contentrules", "permission": "Modify portal content"}
  ],
  "object_buttons": [
    {"id": "cut", "title": "Cut", "icon": "plone-cut", "permission": "Delete objects"},
    {"id": "copy", "title": "Copy", "icon": "plone-copy", "permission": "View", "available_to": "authenticated"},
    {"id": "paste", "title": "Paste", "icon": "plone-paste", "permission": "Add portal content"},
    {"id": "delete", "title": "Delete", "icon": "plone-delete", "permission": "Delete objects"},
    {"id": "rename", "title": "Rename", "icon": "plone-rename", "permission": "Delete objects"},
    {"id": "redirection", "title": "URL Management", "icon": "", "permission": "Modify portal content"}
  ],
  "portal_tabs": [
    {"id": "index_html", "title": "Home", "icon": "", "permission": "View"}
  ],
  "site_actions": [
    {"id": "sitemap", "title": "Site Map", "icon": "", "permission": "View"},
    {"id": "accessibility", "title": "Accessibility", "icon": "", "permission": "View"},
    {"id": "contact", "title": "Contact", "icon": "", "permission": "View"}
  ],
  "user": [
    {"id": "preferences", "title": "Preferences", "icon": "user", "available_to": "authenticated"},
    {"id": "plone_setup", "title": "Site Setup", "icon": "toolbar-action/plone_setup", "permission": "Manage portal"},
    {"id": "login", "title": "Log in", "icon": "toolbar-action/login", "available_to": "anonymous"},
    {"id": "logout", "title": "Log out", "icon": "toolbar-action/logout", "available_to": "authenticated"}
  ],
  "document_actions": []
}"#;

/// Who an action is for, besides its permission.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AvailableTo {
    /// Every caller.
    #[default]
    Anyone,
    /// Only callers who are not logged in.
    Anonymous,
    /// Only logged-in callers.
    Authenticated,
}

/// One stored action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Action {
    /// Its id (what clients key on).
    pub id: String,
    /// Its label.
    pub title: String,
    /// Its icon's name (may be empty).
    #[serde(default)]
    pub icon: String,
    /// The permission (by its name) the caller needs on the context object.
    #[serde(default)]
    pub permission: Option<String>,
    /// Whether it is for anonymous or logged-in callers only.
    #[serde(default)]
    pub available_to: AvailableTo,
}

/// The stored actions by category.
pub type Actions = BTreeMap<String, Vec<Action>>;

/// Check a value written to `plone.actions` (the message names `field`): categories from
/// [`CATEGORIES`], actions with an id and title, permissions `known_permission` accepts.
pub fn validate(field: &str, value: &Value, known_permission: fn(&str) -> bool) -> Result<()> {
    let parsed: Actions = serde_json::from_value(value.clone())
        .map_err(|e| EngineError::bad_request(format!("Invalid value for '{field}': {e}")))?;
    for (cat, list) in &parsed {
        if !CATEGORIES.contains(&cat.as_str()) {
            return Err(EngineError::bad_request(format!(
                "Invalid value for '{field}': unknown category '{cat}' (known: {})",
                CATEGORIES.join(", ")
            )));
        }
        for a in list {
            if a.id.trim().is_empty() {
                return Err(EngineError::bad_request(format!(
                    "Invalid value for '{field}': an action in '{cat}' has an empty id"
                )));
            }
            if let Some(p) = &a.permission {
                if !known_permission(p) {
                    return Err(EngineError::bad_request(format!(
                        "Invalid value for '{field}': unknown permission '{p}' of action '{}'",
                        a.id
                    )));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_actions_are_valid() {
        let v: Value = serde_json::from_str(DEFAULT_ACTIONS).unwrap();
        validate("plone.actions", &v, |_| true).unwrap();
        assert!(validate("x", &serde_json::json!({"nope": []}), |_| true).is_err());
    }
}
