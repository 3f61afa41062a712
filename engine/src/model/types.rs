//! The type registry, loaded from data (`types.json`): adding a content type is adding an entry
//! there, not code. A type names its behaviors (groups of fields), whether it is folderish, which
//! types it may contain, its default layout and its workflow.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::fields::FieldDef;
use crate::error::{EngineError, Result};

/// The built-in registry data.
pub const BUILTIN_TYPES: &str = include_str!("types.json");

#[derive(Debug, Deserialize)]
struct RegistryData {
    behaviors: BTreeMap<String, Vec<FieldDef>>,
    types: Vec<TypeData>,
}

#[derive(Debug, Deserialize)]
struct TypeData {
    name: String,
    title: String,
    folderish: bool,
    #[serde(default)]
    global_allow: bool,
    #[serde(default)]
    allowed_types: Option<Vec<String>>,
    layout: String,
    workflow: Option<String>,
    #[serde(default)]
    allow_discussion: bool,
    behaviors: Vec<String>,
}

/// One content type.
#[derive(Debug, Clone)]
pub struct ContentType {
    /// Type name (`@type`).
    pub name: String,
    /// Human title (`type_title`).
    pub title: String,
    /// Whether objects of this type contain others.
    pub folderish: bool,
    /// Whether it may be added anywhere that does not restrict its types.
    pub global_allow: bool,
    /// For folderish types: the types allowed inside (`None`: every globally allowed type).
    pub allowed_types: Option<Vec<String>>,
    /// Default `layout`.
    pub layout: String,
    /// Workflow id, if the type is workflowed.
    pub workflow: Option<String>,
    /// Whether objects of this type may take comments (when the site and the object allow it).
    pub allow_discussion: bool,
    /// Every field, in schema order.
    pub fields: Vec<FieldDef>,
}

impl ContentType {
    /// The field definition named `name`.
    pub fn field(&self, name: &str) -> Option<&FieldDef> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Whether an object of type `child` may be added inside an object of this type.
    pub fn allows(&self, child: &ContentType) -> bool {
        self.folderish
            && match &self.allowed_types {
                Some(list) => list.iter().any(|t| t == &child.name),
                None => child.global_allow,
            }
    }
}

/// All content types, by name.
#[derive(Debug, Clone)]
pub struct TypeRegistry {
    types: BTreeMap<String, ContentType>,
}

impl TypeRegistry {
    /// Parse registry data (the format of `types.json`).
    pub fn from_json(data: &str) -> Result<Self> {
        let data: RegistryData = serde_json::from_str(data)
            .map_err(|e| EngineError::Internal(format!("invalid type registry: {e}")))?;
        let mut types = BTreeMap::new();
        for t in data.types {
            let mut fields = Vec::new();
            for b in &t.behaviors {
                let defs = data.behaviors.get(b).ok_or_else(|| {
                    EngineError::Internal(format!("type {} names unknown behavior {b}", t.name))
                })?;
                fields.extend(defs.iter().cloned());
            }
            types.insert(
                t.name.clone(),
                ContentType {
                    name: t.name,
                    title: t.title,
                    folderish: t.folderish,
                    global_allow: t.global_allow,
                    allowed_types: t.allowed_types,
                    layout: t.layout,
                    workflow: t.workflow,
                    allow_discussion: t.allow_discussion,
                    fields,
                },
            );
        }
        Ok(TypeRegistry { types })
    }

    /// The built-in registry (Site, Folder, Page).
    pub fn builtin() -> Self {
        // The built-in data is part of the binary and covered by tests; failing here is a build bug.
        Self::from_json(BUILTIN_TYPES).unwrap_or_else(|e| panic!("built-in types.json: {e}"))
    }

    /// The type named `name`.
    pub fn get(&self, name: &str) -> Option<&ContentType> {
        self.types.get(name)
    }

    /// The type named `name`, or an internal error (for names read from stored records).
    pub fn require(&self, name: &str) -> Result<&ContentType> {
        self.get(name)
            .ok_or_else(|| EngineError::Internal(format!("stored object has unknown type {name}")))
    }

    /// Every type.
    pub fn all(&self) -> impl Iterator<Item = &ContentType> {
        self.types.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_registry_has_the_three_types() {
        let r = TypeRegistry::builtin();
        let site = r.get("Site").unwrap();
        let folder = r.get("Folder").unwrap();
        let page = r.get("Page").unwrap();
        assert!(site.folderish && folder.folderish && !page.folderish);
        assert!(site.allows(page) && folder.allows(folder) && !page.allows(page));
        assert!(!folder.allows(site));
        assert!(page.field("blocks").is_some());
        assert_eq!(
            page.workflow.as_deref(),
            Some("simple_publication_workflow")
        );
    }

    #[test]
    fn adding_a_type_is_data() {
        let data = BUILTIN_TYPES.replace(
            "\"types\": [",
            "\"types\": [{\"name\": \"News Item\", \"title\": \"News Item\", \"folderish\": false, \
             \"global_allow\": true, \"layout\": \"newsitem_view\", \"workflow\": null, \
             \"behaviors\": [\"dublincore\"]},",
        );
        let r = TypeRegistry::from_json(&data).unwrap();
        assert_eq!(r.get("News Item").unwrap().layout, "newsitem_view");
    }
}
