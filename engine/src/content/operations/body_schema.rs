//! The JSON Schemas of content bodies, one per content type, built at run time from the type
//! registry: the same field definitions [`super::create`] and [`super::edit`] validate a body
//! against ([`FieldDef::input_schema`], written next to [`FieldDef::validate`]), and the same
//! rules for the keys that are no field ([`super::READ_ONLY`], `@`-metadata, `layout`, `id`,
//! `@type`, `relatedItems`). `@openapi` publishes them; a test checks, type by type and field by
//! field, that a value one of them refuses is refused by the parse and one it accepts is
//! accepted.

use serde_json::{json, Map, Value};

use super::READ_ONLY;
use crate::core::error::Result;
use crate::core::model::fields::{shared_input_schemas, FieldDef, FieldKind};
use crate::core::model::ContentType;
use crate::runtime::context::Ctx;

/// The schemas of every content type's bodies.
#[derive(Debug, Clone)]
pub struct BodySchemas {
    /// Named schemas: the shared ones, `Echoed` (the keys accepted and ignored), and per type
    /// its create body and its edit body.
    pub components: Vec<(String, Value)>,
    /// Per type that can be added somewhere: its name and the component of its create body.
    pub create: Vec<(String, String)>,
    /// Per type: the component of its edit body.
    pub edit: Vec<String>,
}

/// The name of the component with what a client sends back and the parse ignores.
const ECHOED: &str = "Echoed";

/// A component name (letters, digits, `.`, `-`, `_`) for `type_name` plus `suffix`.
fn component_name(type_name: &str, suffix: &str) -> String {
    let mut name: String = type_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.push_str(suffix);
    name
}

/// The schema of one field of `ty` in a body: [`FieldDef::input_schema`], but `relatedItems`
/// also takes objects carrying a `UID`, as the parse normalizes them (each UID must exist).
fn field_schema(def: &FieldDef, refs: &str, creating: bool) -> Value {
    if def.name == "relatedItems" {
        let uid = json!({"type": "string", "pattern": "^[0-9a-f]{32}$"});
        return json!({
            "description": "Related items: UIDs of existing objects, or objects carrying `UID`",
            "type": "array",
            "items": {"anyOf": [
                uid,
                {"type": "object", "required": ["UID"], "properties": {"UID": uid}},
            ]},
        });
    }
    def.input_schema(refs, creating)
}

/// The schema of a body for `ty`: a create body (`creating`, with `@type` and the required
/// fields that have no default) or an edit body (every key optional; a PATCH also takes
/// `ordering` and `sort`, described by `edit_extra`).
fn type_schema(
    ty: &ContentType,
    refs: &str,
    creating: bool,
    edit_extra: &Map<String, Value>,
) -> Value {
    let mut props = Map::new();
    props.insert(
        "@type".into(),
        json!({"const": ty.name, "description": "The content type"}),
    );
    props.insert(
        "id".into(),
        json!({
            "description": if creating {
                "The new object's id (made from its title when absent or empty)"
            } else {
                "A new id: renames the object in place"
            },
            "type": ["string", "null"],
            "maxLength": crate::core::model::ids::MAX_ID_LEN,
            "pattern": if creating {
                "^$|^[A-Za-z0-9-][A-Za-z0-9_.~-]*$"
            } else {
                "^[A-Za-z0-9-][A-Za-z0-9_.~-]*$"
            },
        }),
    );
    props.insert(
        "layout".into(),
        json!({"description": "The view", "type": "string", "pattern": "^[^/ ]+$"}),
    );
    if !creating {
        props.extend(edit_extra.clone());
    }
    let mut required = Vec::new();
    if creating {
        required.push(json!("@type"));
    }
    for def in &ty.fields {
        let mut schema = field_schema(def, refs, creating);
        if creating && def.required && def.default.as_ref().is_none_or(Value::is_null) {
            required.push(json!(def.name));
            // A new object's required field counts as missing when blank, whatever its kind
            // (the kinds of text, and dates, refuse a blank value themselves).
            if !def.kind.has_length() && def.kind != FieldKind::Datetime {
                schema = json!({
                    "allOf": [schema, {"not": {"type": "string", "pattern": "^\\s*$"}}],
                });
            }
        }
        props.insert(def.name.clone(), schema);
    }
    let what = if creating { "A new" } else { "Changes to a" };
    json!({
        "title": ty.title,
        "description": format!(
            "{what} {} ({}): its fields; unknown keys are refused, the computed ones an object \
             is served with are accepted and ignored",
            ty.title, ty.name
        ),
        "type": "object",
        "$ref": format!("{refs}{ECHOED}"),
        "properties": props,
        "required": required,
        "unevaluatedProperties": false,
    })
}

/// The schemas of the create and edit bodies of every type in the site's registry, with
/// component names that do not clash with `taken`; `refs` is the prefix of a reference to a
/// component (`#/components/schemas/`) and `edit_extra` the properties a PATCH body adds.
pub fn body_schemas(
    ctx: &Ctx<'_>,
    refs: &str,
    taken: &dyn Fn(&str) -> bool,
    edit_extra: &Map<String, Value>,
) -> Result<BodySchemas> {
    let types = ctx.types()?;
    let mut components: Vec<(String, Value)> = shared_input_schemas(refs)
        .into_iter()
        .map(|(n, s)| (n.to_string(), s))
        .collect();
    let mut echoed = Map::new();
    for key in READ_ONLY {
        echoed.insert(key.to_string(), json!({}));
    }
    components.push((
        ECHOED.into(),
        json!({
            "description": "What a client may send back of an object as served: these and every \
                            `@`-prefixed key are accepted and ignored",
            "properties": echoed,
            "patternProperties": {"^@": {}},
        }),
    ));
    let free = |base: String, components: &[(String, Value)]| {
        if taken(&base) || components.iter().any(|(n, _)| *n == base) {
            format!("Content.{base}")
        } else {
            base
        }
    };
    let mut create = Vec::new();
    let mut edit = Vec::new();
    for ty in types.all() {
        let addable = types.all().any(|parent| parent.allows(ty));
        if addable {
            let name = free(component_name(&ty.name, ""), &components);
            components.push((name.clone(), type_schema(ty, refs, true, edit_extra)));
            create.push((ty.name.clone(), name));
        }
        let name = free(component_name(&ty.name, "Changes"), &components);
        components.push((name.clone(), type_schema(ty, refs, false, edit_extra)));
        edit.push(name);
    }
    Ok(BodySchemas {
        components,
        create,
        edit,
    })
}
