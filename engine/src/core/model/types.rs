//! The type registry: content types and behaviors as data. The built-in set (`types.json`) is
//! written to the store when a site is created (and by a migration for older sites); from then on
//! the stored records are the registry, edited through `@types` and the `dexterity-types` control
//! panel ([`crate::content::content_types`]). A type names its behaviors (shared groups of fields), its own
//! fields, whether it is folderish, which types it may contain, its layouts and its workflow.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::fields::FieldDef;
use crate::core::error::{EngineError, Result};

/// The built-in registry data.
pub const BUILTIN_TYPES: &str = include_str!("types.json");

/// A form tab: its id, title and help text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldsetDef {
    /// Its id (`default`, `dates`, ...).
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its help text.
    #[serde(default)]
    pub description: String,
}

/// A behavior as stored: a named group of fields that types share.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BehaviorData {
    /// Its name (`plone.dublincore`, ...).
    pub name: String,
    /// Its title.
    pub title: String,
    /// What it adds.
    #[serde(default)]
    pub description: String,
    /// The fieldsets its fields use (other than `default`).
    #[serde(default)]
    pub fieldsets: Vec<FieldsetDef>,
    /// Its fields.
    pub fields: Vec<FieldDef>,
}

/// A content type as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeData {
    /// Type name (`@type`).
    pub name: String,
    /// Human title.
    pub title: String,
    /// What it is for.
    #[serde(default)]
    pub description: String,
    /// Whether objects of this type contain others.
    pub folderish: bool,
    /// Whether it may be added anywhere that does not restrict its types.
    #[serde(default)]
    pub global_allow: bool,
    /// For folderish types: the types allowed inside (`None`: every globally allowed type).
    #[serde(default)]
    pub allowed_types: Option<Vec<String>>,
    /// Default layout (view).
    pub layout: String,
    /// Every layout it offers (the default one included).
    #[serde(default)]
    pub layouts: Vec<String>,
    /// Workflow id, if the type is workflowed.
    pub workflow: Option<String>,
    /// Whether objects of this type may take comments (when the site and the object allow it).
    #[serde(default)]
    pub allow_discussion: bool,
    /// Its behaviors, by name, in schema order.
    pub behaviors: Vec<String>,
    /// Its own fields (after the behaviors' ones).
    #[serde(default)]
    pub fields: Vec<FieldDef>,
    /// Its own fieldsets (beyond those its behaviors bring).
    #[serde(default)]
    pub fieldsets: Vec<FieldsetDef>,
    /// Nick's behaviors that are parts of what every type here has (`basic`, `dates`, ...),
    /// switched on in a Nick site's types panel: kept as set and shown, they change nothing
    /// ([`crate::content::content_types::NICK_BEHAVIORS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nick_switches: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct RegistryData {
    behaviors: Vec<BehaviorData>,
    types: Vec<TypeData>,
}

/// One content type, with its behaviors' fields resolved.
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
    /// Every field, in schema order: the behaviors' fields, then the type's own.
    pub fields: Vec<FieldDef>,
    /// Where each field of `fields` comes from (same index): the behavior's name, or `None` for
    /// the type's own fields.
    pub sources: Vec<Option<String>>,
    /// The form tabs, in order: `default` first, then those of the behaviors and the type's own.
    pub fieldsets: Vec<FieldsetDef>,
    /// The stored record it was built from.
    pub data: TypeData,
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

    /// Whether the type has the behavior `name`.
    pub fn has_behavior(&self, name: &str) -> bool {
        self.data.behaviors.iter().any(|b| b == name)
    }
}

/// All content types, by name, and the behaviors they draw on.
#[derive(Debug, Clone)]
pub struct TypeRegistry {
    types: BTreeMap<String, Arc<ContentType>>,
    behaviors: BTreeMap<String, BehaviorData>,
}

impl TypeRegistry {
    /// Parse registry data (the format of `types.json`).
    pub fn from_json(data: &str) -> Result<Self> {
        let (behaviors, types) = parse(data)?;
        Self::build(behaviors, types)
    }

    /// Resolve stored behaviors and types into a registry. A type naming an unknown behavior,
    /// or two fields of one type with the same name, is an error naming them.
    pub fn build(behaviors: Vec<BehaviorData>, types: Vec<TypeData>) -> Result<Self> {
        let behaviors: BTreeMap<String, BehaviorData> =
            behaviors.into_iter().map(|b| (b.name.clone(), b)).collect();
        let mut out = BTreeMap::new();
        for t in types {
            let ct = resolve(&behaviors, t)?;
            out.insert(ct.name.clone(), Arc::new(ct));
        }
        Ok(TypeRegistry {
            types: out,
            behaviors,
        })
    }

    /// The built-in registry (the data of `types.json`).
    pub fn builtin() -> Self {
        // The built-in data is part of the binary and covered by tests; failing here is a build bug.
        Self::from_json(BUILTIN_TYPES).unwrap_or_else(|e| panic!("built-in types.json: {e}"))
    }

    /// The type named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<ContentType>> {
        self.types.get(name).cloned()
    }

    /// The type named `name`, or an internal error (for names read from stored records).
    pub fn require(&self, name: &str) -> Result<Arc<ContentType>> {
        self.get(name)
            .ok_or_else(|| EngineError::Internal(format!("stored object has unknown type {name}")))
    }

    /// Every type, by name.
    pub fn all(&self) -> impl Iterator<Item = &Arc<ContentType>> {
        self.types.values()
    }

    /// The behavior named `name`.
    pub fn behavior(&self, name: &str) -> Option<&BehaviorData> {
        self.behaviors.get(name)
    }

    /// Every behavior, by name.
    pub fn behaviors(&self) -> impl Iterator<Item = &BehaviorData> {
        self.behaviors.values()
    }
}

/// The behaviors and types of registry data in the format of `types.json`.
pub fn parse(data: &str) -> Result<(Vec<BehaviorData>, Vec<TypeData>)> {
    let data: RegistryData = serde_json::from_str(data)
        .map_err(|e| EngineError::Internal(format!("invalid type registry: {e}")))?;
    Ok((data.behaviors, data.types))
}

/// The type `t` with its behaviors' fields and fieldsets resolved.
pub fn resolve(behaviors: &BTreeMap<String, BehaviorData>, t: TypeData) -> Result<ContentType> {
    let mut fields: Vec<FieldDef> = Vec::new();
    let mut sources = Vec::new();
    let mut fieldsets = vec![FieldsetDef {
        id: "default".into(),
        title: "Default".into(),
        description: String::new(),
    }];
    let add_fieldsets = |list: &[FieldsetDef], fieldsets: &mut Vec<FieldsetDef>| {
        for fs in list {
            if !fieldsets.iter().any(|f| f.id == fs.id) {
                fieldsets.push(fs.clone());
            }
        }
    };
    let mut push = |f: &FieldDef, source: Option<&str>, fields: &mut Vec<FieldDef>| {
        if fields.iter().any(|g| g.name == f.name) {
            return Err(EngineError::bad_request(format!(
                "Type '{}' would have two fields named '{}'",
                t.name, f.name
            )));
        }
        fields.push(f.clone());
        sources.push(source.map(str::to_string));
        Ok(())
    };
    for b in &t.behaviors {
        let data = behaviors.get(b).ok_or_else(|| {
            EngineError::bad_request(format!("Type '{}' names an unknown behavior '{b}'", t.name))
        })?;
        add_fieldsets(&data.fieldsets, &mut fieldsets);
        for f in &data.fields {
            push(f, Some(b), &mut fields)?;
        }
    }
    add_fieldsets(&t.fieldsets, &mut fieldsets);
    for f in &t.fields {
        push(f, None, &mut fields)?;
    }
    Ok(ContentType {
        name: t.name.clone(),
        title: t.title.clone(),
        folderish: t.folderish,
        global_allow: t.global_allow,
        allowed_types: t.allowed_types.clone(),
        layout: t.layout.clone(),
        workflow: t.workflow.clone(),
        allow_discussion: t.allow_discussion,
        fields,
        sources,
        fieldsets,
        data: t,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_registry_has_the_types() {
        let r = TypeRegistry::builtin();
        let site = r.get("Site").unwrap();
        let folder = r.get("Folder").unwrap();
        let page = r.get("Page").unwrap();
        assert!(site.folderish && folder.folderish && !page.folderish);
        assert!(site.allows(&page) && folder.allows(&folder) && !page.allows(&page));
        assert!(!folder.allows(&site));
        assert!(page.field("blocks").is_some());
        assert_eq!(
            page.workflow.as_deref(),
            Some("simple_publication_workflow")
        );
        for name in ["Event", "Link", "News Item", "Feed"] {
            assert!(r.get(name).is_some(), "{name}");
        }
        assert!(r.get("Event").unwrap().field("start").unwrap().required);
        assert!(r.get("Link").unwrap().field("remoteUrl").is_some());
    }

    #[test]
    fn adding_a_type_is_data() {
        let data = BUILTIN_TYPES.replacen(
            "\"types\": [",
            "\"types\": [{\"name\": \"Thing\", \"title\": \"Thing\", \"folderish\": false, \
             \"global_allow\": true, \"layout\": \"thing_view\", \"workflow\": null, \
             \"behaviors\": [\"plone.dublincore\"]},",
            1,
        );
        let r = TypeRegistry::from_json(&data).unwrap();
        assert_eq!(r.get("Thing").unwrap().layout, "thing_view");
    }

    #[test]
    fn duplicate_fields_are_refused() {
        let (behaviors, mut types) = parse(BUILTIN_TYPES).unwrap();
        let page = types.iter_mut().find(|t| t.name == "Page").unwrap();
        page.fields.push(FieldDef::new(
            "title",
            crate::core::model::fields::FieldKind::String,
        ));
        let err = TypeRegistry::build(behaviors, types).unwrap_err();
        assert!(err.to_string().contains("'title'"), "{err}");
    }
}
