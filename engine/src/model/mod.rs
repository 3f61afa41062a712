//! The content model: the stored record of a content object, the type registry, ids, blocks and
//! languages.

pub mod blocks;
pub mod fields;
pub mod ids;
pub mod language;
pub mod types;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use types::{ContentType, TypeRegistry};

/// A content object as stored under `o:<uid>`.
///
/// Structural data (identity, place in the tree, ownership, workflow state) are typed fields; the
/// schema-driven field values of the object's type live in `fields`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ContentRecord {
    /// Unique id (32 lowercase hex digits).
    pub uid: String,
    /// Id within the parent (`root` for the site root).
    pub id: String,
    /// Site path: `""` for the root, otherwise `/a/b`.
    pub path: String,
    /// Parent's uid; `None` only for the site root.
    pub parent: Option<String>,
    /// Content type name (`@type`).
    #[serde(rename = "type")]
    pub type_name: String,
    /// Position within the parent (key of the `c:` entry).
    pub pos: u64,
    /// Creation time.
    pub created: DateTime<Utc>,
    /// Last modification time.
    pub modified: DateTime<Utc>,
    /// Owner's login.
    pub owner: String,
    /// Workflow state; `None` for types without workflow (the site root).
    pub review_state: Option<String>,
    /// Number of children (folderish objects).
    #[serde(default)]
    pub child_count: u64,
    /// Position the next added child gets.
    #[serde(default)]
    pub next_pos: u64,
    /// Local roles granted on this object (and inherited below it): login → roles.
    #[serde(default)]
    pub local_roles: BTreeMap<String, Vec<String>>,
    /// Schema field values (title, description, blocks, ...).
    pub fields: Map<String, Value>,
}

impl ContentRecord {
    /// A string field, or `""`.
    pub fn str_field(&self, name: &str) -> &str {
        self.fields.get(name).and_then(Value::as_str).unwrap_or("")
    }

    /// The title.
    pub fn title(&self) -> &str {
        self.str_field("title")
    }

    /// The description.
    pub fn description(&self) -> &str {
        self.str_field("description")
    }

    /// True for the site root.
    pub fn is_root(&self) -> bool {
        self.parent.is_none()
    }

    /// The path of the parent (`""` for children of the root), or `None` for the root.
    pub fn parent_path(&self) -> Option<&str> {
        if self.is_root() {
            return None;
        }
        Some(self.path.rsplit_once('/').map(|(p, _)| p).unwrap_or(""))
    }

    /// The paths of every ancestor, root first (`""`, `/a`, `/a/b` for `/a/b/c`).
    pub fn ancestor_paths(&self) -> Vec<String> {
        ancestor_paths(&self.path)
    }
}

/// The paths of every ancestor of `path`, root first.
pub fn ancestor_paths(path: &str) -> Vec<String> {
    if path.is_empty() {
        return Vec::new();
    }
    let mut out = vec![String::new()];
    let mut acc = String::new();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    for seg in &segs[..segs.len().saturating_sub(1)] {
        acc.push('/');
        acc.push_str(seg);
        out.push(acc.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_of_a_path() {
        assert_eq!(ancestor_paths(""), Vec::<String>::new());
        assert_eq!(ancestor_paths("/a"), vec![String::new()]);
        assert_eq!(
            ancestor_paths("/a/b/c"),
            vec!["".to_string(), "/a".into(), "/a/b".into()]
        );
    }
}
