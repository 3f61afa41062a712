//! Content types as stored data: installing the built-in registry, the types a caller may add
//! in a context, and every change to the registry (adding and removing types, fields and
//! fieldsets, switching behaviors). Every change is checked against the whole registry (no
//! unknown behavior, no two fields of one type with the same name) and against the stored
//! content of the type (a change that would make a stored value invalid is refused, naming the
//! field; a required field may lack a value, as in Plone), then written under `y:t:<name>` and
//! announced ([`Event::TypeChanged`]).
//!
//! Reads go through [`Ctx::types`] (cached per store generation). The functions
//! [`type_titles`], [`behavior_titles`] and [`field_factories`] are what vocabularies list.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::core::model::fields::{self, ChoiceValue, FieldDef, FieldKind, FACTORIES};
use crate::core::model::types::{self, BehaviorData, FieldsetDef, TypeData, BUILTIN_TYPES};
use crate::core::model::{ContentRecord, ContentType};
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;
use crate::site::profile::SiteProfile;

/// The name reported as the `behavior` of a type's own fields and fieldsets (as the reference
/// names its generated schemas).
pub const OWN_SCHEMA: &str = "plone.dexterity.schema.generated";

/// Write every built-in behavior and type that the store does not hold yet (site creation, and
/// the migration of sites written before types were data). Stored records are kept as they are.
pub fn install_builtin(ctx: &mut Ctx<'_>) -> Result<()> {
    let (behaviors, types) = types::parse(BUILTIN_TYPES)?;
    for b in behaviors {
        let key = keys::behavior(&b.name);
        if ctx.get(&key)?.is_none() {
            ctx.put_json(&key, &b)?;
        }
    }
    for t in types {
        let key = keys::content_type(&t.name);
        if ctx.get(&key)?.is_none() {
            let name = t.name.clone();
            ctx.put_json(&key, &t)?;
            ctx.emit(Event::TypeChanged {
                name,
                removed: false,
            });
        }
    }
    Ok(())
}

/// Write the behaviors and types of `data` (registry data in the format of `types.json`) over
/// the stored ones of the same names: a site profile's own type set (a Nick site's,
/// [`crate::site::nick_defaults`]), written when the site is created. Behaviors and types it
/// does not name stay as they are.
pub fn install_set(ctx: &mut Ctx<'_>, data: &str) -> Result<()> {
    let (behaviors, types) = types::parse(data)?;
    for b in behaviors {
        ctx.put_json(&keys::behavior(&b.name), &b)?;
    }
    for t in types {
        let name = t.name.clone();
        ctx.put_json(&keys::content_type(&t.name), &t)?;
        ctx.emit(Event::TypeChanged {
            name,
            removed: false,
        });
    }
    Ok(())
}

/// Make the stored types `names` folderish (they may then hold items): what a Nick site does
/// for its Page and Event at creation ([`crate::site::profile`]), as Nick's types are.
pub fn make_folderish(ctx: &mut Ctx<'_>, names: &[&str]) -> Result<()> {
    for name in names {
        let key = keys::content_type(name);
        let Some(mut t) = ctx.get_json::<TypeData>(&key)? else {
            continue;
        };
        if t.folderish {
            continue;
        }
        t.folderish = true;
        ctx.put_json(&key, &t)?;
        ctx.emit(Event::TypeChanged {
            name: (*name).to_string(),
            removed: false,
        });
    }
    Ok(())
}

/// One entry of the types list of a context.
#[derive(Debug, Clone)]
pub struct Addable {
    /// The type.
    pub ty: Arc<ContentType>,
    /// Whether the caller may add one in the context now.
    pub addable: bool,
}

/// Every type but the site root's, by title, each with whether the caller may add it inside
/// `context` (the context is folderish, allows the type, and the caller may add content there).
/// A Nick site lists every type, the site root's too (never addable), by name, as Nick does.
pub fn addable_types(ctx: &Ctx<'_>, context: &ContentRecord) -> Result<Vec<Addable>> {
    let registry = ctx.types()?;
    let here = registry.require(&context.type_name)?;
    let may_add = here.folderish && ctx.permitted(Permission::AddContent, context)?;
    let nick = ctx.profile().is_nick();
    let mut out: Vec<Addable> = registry
        .all()
        .filter(|t| nick || t.name != "Site")
        .map(|t| Addable {
            addable: may_add && t.name != "Site" && here.allows(t),
            ty: t.clone(),
        })
        .collect();
    if nick {
        out.sort_by(|a, b| a.ty.name.cmp(&b.ty.name));
    } else {
        out.sort_by(|a, b| a.ty.title.cmp(&b.ty.title).then(a.ty.name.cmp(&b.ty.name)));
    }
    Ok(out)
}

/// Every type as `(name, title)`, by name: the content types vocabulary.
#[cfg(any(test, feature = "internals"))]
pub fn type_titles(ctx: &Ctx<'_>) -> Result<Vec<(String, String)>> {
    Ok(ctx
        .types()?
        .all()
        .map(|t| (t.name.clone(), t.title.clone()))
        .collect())
}

/// Nick's behaviors, by name: Nick's name, Nick's title, and the behavior it is here: `Some(b)`
/// the behavior stored as `b` (the name is accepted on every site), `None` a part of what every
/// type here has (its Dublin Core fields, an id made from its title): always on, its name
/// accepted on a Nick site only.
pub const NICK_BEHAVIORS: &[(&str, &str, Option<&str>)] = &[
    ("basic", "Basic metadata", None),
    ("blocks", "Blocks", Some("volto.blocks")),
    ("categorization", "Categorization", None),
    ("dates", "Dates", None),
    ("dublin_core", "Dublin Core metadata", None),
    (
        "exclude_from_nav",
        "Exclude from navigation",
        Some("plone.excludefromnavigation"),
    ),
    ("ownership", "Ownership", None),
    (
        "preview_image_link",
        "Preview Image Link",
        Some("volto.preview_image"),
    ),
    ("short_name", "Short name", None),
    ("versioning", "Versioning", Some("plone.versioning")),
];

/// Nick's name of the behavior a field comes from (`source`, our behavior) on a Nick site, as
/// Nick's type schemas name it (`behavior` of a property): Dublin Core's fields by their part
/// (`basic`, `categorization`, `dates`, `ownership`), the others by [`NICK_BEHAVIORS`]. `None`:
/// a behavior Nick does not have (its name stays ours).
pub fn nick_behavior_of_field(source: &str, field: &str) -> Option<&'static str> {
    match (source, field) {
        ("plone.dublincore", "title" | "description") => Some("basic"),
        ("plone.dublincore", "subjects" | "language" | "relatedItems" | "coverage") => {
            Some("categorization")
        }
        ("plone.dublincore", "effective" | "expires") => Some("dates"),
        ("plone.dublincore", _) => Some("ownership"),
        ("plone.relateditems", _) => Some("categorization"),
        _ => NICK_BEHAVIORS
            .iter()
            .find(|(_, _, stored)| *stored == Some(source))
            .map(|(n, _, _)| *n),
    }
}

/// Nick's name of the behavior a standard fieldset (form tab) belongs to on a Nick site, as
/// Nick's type schemas name it (`behavior` of a fieldset); `None` for another fieldset.
pub fn nick_behavior_of_fieldset(id: &str) -> Option<&'static str> {
    match id {
        "default" => Some("default"),
        "categorization" => Some("categorization"),
        "ownership" => Some("ownership"),
        "dates" => Some("dates"),
        "layout" => Some("blocks"),
        "settings" => Some("short_name"),
        _ => None,
    }
}

/// Nick's behaviors that its types list but its panel has no switch for (always on here).
const NICK_IMPLIED: &[&str] = &["id_from_title"];

/// What a behavior name in a type's settings names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BehaviorName<'a> {
    /// A behavior of the registry, by its stored name.
    Stored(&'a str),
    /// One of Nick's behaviors every type here has (a Nick site only): switching it changes
    /// nothing.
    AlwaysOn,
}

/// The behavior `name` names on a site with `profile`: a behavior of the registry, one of
/// Nick's names for one (every site), or one of Nick's behaviors every type has (a Nick site);
/// `None` for anything else.
pub fn behavior_named<'a>(
    registry: &'a crate::core::model::TypeRegistry,
    profile: SiteProfile,
    name: &'a str,
) -> Option<BehaviorName<'a>> {
    if registry.behavior(name).is_some() {
        return Some(BehaviorName::Stored(name));
    }
    match NICK_BEHAVIORS.iter().find(|(n, _, _)| *n == name) {
        Some((_, _, Some(stored))) => Some(BehaviorName::Stored(stored)),
        Some((_, _, None)) if profile.is_nick() => Some(BehaviorName::AlwaysOn),
        _ if profile.is_nick() && NICK_IMPLIED.contains(&name) => Some(BehaviorName::AlwaysOn),
        _ => None,
    }
}

/// Switch Nick's behavior `name` (one every type here has: [`BehaviorName::AlwaysOn`]) on or
/// off in `data`: kept and shown in a Nick site's types panel, it changes nothing else. Only
/// the names of Nick's panel switches are kept (`id_from_title` has none).
pub fn set_nick_switch(data: &mut TypeData, name: &str, on: bool) {
    if !NICK_BEHAVIORS
        .iter()
        .any(|(n, _, stored)| *n == name && stored.is_none())
    {
        return;
    }
    let has = data.nick_switches.iter().any(|s| s == name);
    if on && !has {
        data.nick_switches.push(name.to_string());
        data.nick_switches.sort();
    } else if !on && has {
        data.nick_switches.retain(|s| s != name);
    }
}

/// Every behavior as `(name, title)`, by name: the behaviors vocabulary (Nick's behaviors on a
/// Nick site).
pub fn behavior_titles(ctx: &Ctx<'_>) -> Result<Vec<(String, String)>> {
    if ctx.profile().is_nick() {
        return Ok(NICK_BEHAVIORS
            .iter()
            .map(|(n, t, _)| (n.to_string(), t.to_string()))
            .collect());
    }
    Ok(ctx
        .types()?
        .behaviors()
        .map(|b| (b.name.clone(), b.title.clone()))
        .collect())
}

/// The factories a field may be added with, as `(token, title)` (`label_textline_field`,
/// `Text line (String)`): the field factories vocabulary. A factory is named by either.
pub fn field_factories() -> Vec<(&'static str, &'static str)> {
    FACTORIES
        .iter()
        .filter(|f| f.listed)
        .map(|f| (f.token, f.title))
        .collect()
}

/// The type named `name`, or a 404 for `url`.
pub fn require_type(ctx: &Ctx<'_>, name: &str, url: &str) -> Result<Arc<ContentType>> {
    ctx.types()?.get(name).ok_or_else(|| EngineError::NotFound {
        url: url.to_string(),
        context: Some(ctx.url("")),
    })
}

/// Every stored object of type `name` (a walk of the whole tree: schema changes are rare).
pub fn objects_of_type(ctx: &Ctx<'_>, name: &str) -> Result<Vec<ContentRecord>> {
    let root = tree::root(ctx)?;
    Ok(tree::subtree(ctx, &root)?
        .into_iter()
        .filter(|o| o.type_name == name)
        .collect())
}

/// How many objects of each type are stored.
pub fn counts(ctx: &Ctx<'_>) -> Result<BTreeMap<String, u64>> {
    let root = tree::root(ctx)?;
    let mut out = BTreeMap::new();
    for o in tree::subtree(ctx, &root)? {
        *out.entry(o.type_name).or_insert(0) += 1;
    }
    Ok(out)
}

/// Store `data` as the type of its name (new or changed): resolved against the stored
/// behaviors (unknown behaviors and duplicate field names are 400s naming them), and checked
/// against every stored object of the type for each field that is new or changed (a stored
/// value the new definition refuses is a 400 naming the field; a missing value of a new or now
/// required field is not: the object keeps none until an edit supplies it). Nothing is written
/// when a check fails.
pub fn save_type(ctx: &mut Ctx<'_>, data: TypeData) -> Result<Arc<ContentType>> {
    let registry = ctx.types()?;
    let behaviors: BTreeMap<String, BehaviorData> = registry
        .behaviors()
        .map(|b| (b.name.clone(), b.clone()))
        .collect();
    for t in data.allowed_types.iter().flatten() {
        if t != &data.name && registry.get(t).is_none() {
            return Err(EngineError::bad_request(format!(
                "Unknown content type '{t}' in 'allowed_content_types'"
            )));
        }
    }
    let resolved = types::resolve(&behaviors, data.clone())?;
    if let Some(old) = registry.get(&data.name) {
        let changed: Vec<&FieldDef> = resolved
            .fields
            .iter()
            .filter(|f| old.field(&f.name) != Some(*f))
            .collect();
        if !changed.is_empty() {
            for obj in objects_of_type(ctx, &data.name)? {
                for f in &changed {
                    f.check_stored(obj.fields.get(&f.name)).map_err(|e| {
                        EngineError::bad_request(format!(
                            "{e} (object {}); the type was not changed",
                            ctx.url(&obj.path)
                        ))
                    })?;
                }
            }
        }
    }
    ctx.put_json(&keys::content_type(&data.name), &data)?;
    ctx.emit(Event::TypeChanged {
        name: data.name.clone(),
        removed: false,
    });
    ctx.types()?.require(&data.name)
}

/// Add a new type: `name` must be a free, well-formed type name.
pub fn add_type(ctx: &mut Ctx<'_>, data: TypeData) -> Result<Arc<ContentType>> {
    check_name(&data.name, "type")?;
    if ctx.types()?.get(&data.name).is_some() {
        return Err(EngineError::bad_request(format!(
            "A content type '{}' already exists",
            data.name
        )));
    }
    save_type(ctx, data)
}

/// Remove the type `name`. Refused (400) for the site root's type and for a type that still has
/// content; other types stop allowing it inside them.
pub fn remove_type(ctx: &mut Ctx<'_>, name: &str) -> Result<()> {
    if name == "Site" {
        return Err(EngineError::bad_request(
            "The type of the site root cannot be removed",
        ));
    }
    let n = objects_of_type(ctx, name)?.len();
    if n > 0 {
        return Err(EngineError::bad_request(format!(
            "The content type '{name}' cannot be removed: {n} object(s) of it exist"
        )));
    }
    let registry = ctx.types()?;
    for t in registry.all() {
        if t.name != name && t.allowed_types.iter().flatten().any(|a| a == name) {
            let mut data = t.data.clone();
            if let Some(list) = data.allowed_types.as_mut() {
                list.retain(|a| a != name);
            }
            save_type(ctx, data)?;
        }
    }
    ctx.delete(&keys::content_type(name))?;
    ctx.emit(Event::TypeChanged {
        name: name.to_string(),
        removed: true,
    });
    Ok(())
}

/// A type's own field as Nick's type definition describes it (`schema.properties.<name>`).
#[derive(Debug, Clone)]
pub struct DefinedField {
    /// Its name.
    pub name: String,
    /// Nick's factory (`File` is our `File Upload`; the others are ours).
    pub factory: String,
    /// Its title.
    pub title: String,
    /// Its help text.
    pub description: String,
    /// Whether it is required (`schema.required`).
    pub required: bool,
    /// The widget forms use, if given.
    pub widget: Option<String>,
}

/// A new type as Nick's type definition gives it (what `POST @controlpanels/dexterity-types`
/// also takes, on every site): its settings, its own fields and its behaviors (ours, or Nick's
/// names of them; Nick's `folderish` behavior makes it folderish).
#[derive(Debug, Clone)]
pub struct TypeDefinition {
    /// Its settings (title, description, ...); `behaviors` and `fields` are filled from below.
    pub data: TypeData,
    /// Its behaviors as given.
    pub behaviors: Vec<String>,
    /// Its own fields.
    pub fields: Vec<DefinedField>,
}

/// Add the type `def` describes: its behaviors (every type keeps `plone.dublincore`; Nick's
/// names of its parts are accepted on every site), then its own fields. An unknown behavior or factory is a 400 naming it; the request's transaction
/// then rolls back, so no type is added.
pub fn add_defined_type(ctx: &mut Ctx<'_>, def: TypeDefinition) -> Result<Arc<ContentType>> {
    let registry = ctx.types()?;
    let mut data = def.data;
    for given in &def.behaviors {
        // Listing one of Nick's Dublin Core parts switches on what every type has anyway: that
        // is unambiguous on every site (only switching them off is, so the panel's PATCH takes
        // them on a Nick site only).
        match behavior_named(&registry, SiteProfile::Nick, given) {
            Some(BehaviorName::Stored(b)) => {
                if !data.behaviors.iter().any(|x| x == b) {
                    data.behaviors.push(b.to_string());
                }
            }
            Some(BehaviorName::AlwaysOn) => set_nick_switch(&mut data, given, true),
            None if given == "folderish" => data.folderish = true,
            None => {
                return Err(EngineError::Invalid {
                    field: "schema".into(),
                    message: format!("Unknown behavior '{given}' in 'schema.behaviors'"),
                })
            }
        }
    }
    let name = data.name.clone();
    let mut ty = add_type(ctx, data)?;
    for f in def.fields {
        let factory = if f.factory == "File" {
            "File Upload".to_string()
        } else {
            f.factory
        };
        add_field(
            ctx,
            &ty,
            NewField {
                id: Some(f.name.clone()),
                factory,
                title: f.title,
                description: f.description,
                required: f.required,
                values: None,
            },
        )?;
        ty = require_type(ctx, &name, &name)?;
        if let Some(widget) = f.widget {
            let default = ty
                .field(&f.name)
                .and_then(|d| d.widget_name().map(str::to_string));
            if default.as_deref() != Some(widget.as_str()) {
                change_field(
                    ctx,
                    &ty,
                    &f.name,
                    FieldChange {
                        widget: Some(Some(widget)),
                        ..FieldChange::default()
                    },
                )?;
                ty = require_type(ctx, &name, &name)?;
            }
        }
    }
    Ok(ty)
}

/// What a new field is made from.
#[derive(Debug, Clone)]
pub struct NewField {
    /// Its name; `None`: made from the title (`Author email` → `author_email`).
    pub id: Option<String>,
    /// The factory (one of [`field_factories`]).
    pub factory: String,
    /// Its title.
    pub title: String,
    /// Its help text.
    pub description: String,
    /// Whether it is required.
    pub required: bool,
    /// Choice and Multiple Choice: the values it offers (none: an empty list, given later).
    pub values: Option<Vec<ChoiceValue>>,
}

/// A change to a field definition; `None` leaves a property as it is.
#[derive(Debug, Clone, Default)]
pub struct FieldChange {
    /// New title.
    pub title: Option<String>,
    /// New help text.
    pub description: Option<String>,
    /// Required or not.
    pub required: Option<bool>,
    /// New default (`Some(None)` removes it).
    pub default: Option<Option<serde_json::Value>>,
    /// New shortest length.
    pub min_length: Option<Option<u64>>,
    /// New longest length.
    pub max_length: Option<Option<u64>>,
    /// New widget.
    pub widget: Option<Option<String>>,
    /// Move to this fieldset.
    pub fieldset: Option<String>,
    /// Choice and Multiple Choice: the values it offers (stored values must stay among them).
    pub values: Option<Vec<ChoiceValue>>,
}

/// A field or fieldset addressed under a type.
pub enum Member<'t> {
    /// A field, and the behavior it comes from (`None`: the type's own).
    Field(&'t FieldDef, Option<&'t str>),
    /// A fieldset and its fields.
    Fieldset(&'t FieldsetDef, Vec<String>),
}

/// The field or fieldset `name` of `ty`, if any (fields first).
pub fn member<'t>(ty: &'t ContentType, name: &str) -> Option<Member<'t>> {
    if let Some(i) = ty.fields.iter().position(|f| f.name == name) {
        return Some(Member::Field(&ty.fields[i], ty.sources[i].as_deref()));
    }
    ty.fieldsets
        .iter()
        .find(|fs| fs.id == name)
        .map(|fs| Member::Fieldset(fs, fieldset_fields(ty, &fs.id)))
}

/// The names of the fields of `ty` in fieldset `id`, in schema order.
pub fn fieldset_fields(ty: &ContentType, id: &str) -> Vec<String> {
    ty.fields
        .iter()
        .filter(|f| f.fieldset_id() == id)
        .map(|f| f.name.clone())
        .collect()
}

/// Add a field to the type `ty`. An unknown factory or a name the type already has (as a field
/// or a fieldset) is a 400 naming it. A required field may be added to a type with content, as
/// in Plone: its objects stay without a value (and read back the field's empty value) until an
/// edit, which must then supply one. A Choice or Multiple Choice field takes its `values`; a
/// Relation Choice field offers the catalog's objects.
pub fn add_field(ctx: &mut Ctx<'_>, ty: &ContentType, new: NewField) -> Result<FieldDef> {
    let factory = fields::factory_named(&new.factory).ok_or_else(|| {
        EngineError::bad_request(format!(
            "Unknown field factory '{}' for field '{}'; known: {}",
            new.factory,
            new.title,
            field_factories()
                .iter()
                .map(|(_, title)| *title)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    let kind = factory.kind;
    let name = match new.id {
        Some(id) => id,
        None => normalize(&new.title),
    };
    check_name(&name, "field")?;
    if ty.field(&name).is_some() || ty.fieldsets.iter().any(|f| f.id == name) {
        return Err(EngineError::bad_request(format!(
            "Type '{}' already has a field or fieldset named '{name}'",
            ty.name
        )));
    }
    let mut def = FieldDef::new(&name, kind);
    def.title = new.title;
    def.description = new.description;
    def.required = new.required;
    if factory.title != kind.factory() {
        def.factory = Some(factory.title.to_string());
    }
    if kind.has_values() {
        let values = new.values.unwrap_or_default();
        fields::check_values(&name, &values)?;
        def.values = Some(values);
    } else if new.values.is_some() {
        return Err(not_a_choice(&name));
    }
    if kind == FieldKind::RelationChoice {
        def.vocabulary = Some(RELATION_VOCABULARY.to_string());
    }
    let mut data = ty.data.clone();
    data.fields.push(def.clone());
    save_type(ctx, data)?;
    Ok(def)
}

/// The vocabulary a Relation Choice field's objects come from (as `relatedItems`').
pub const RELATION_VOCABULARY: &str = "plone.app.vocabularies.Catalog";

fn not_a_choice(name: &str) -> EngineError {
    EngineError::Invalid {
        field: "values".into(),
        message: format!(
            "Field '{name}' is not a Choice or Multiple Choice field: 'values' does not apply"
        ),
    }
}

/// Change the own field `name` of `ty` (fields of behaviors are shared and cannot be changed
/// through one type: a 400 naming the behavior).
pub fn change_field(
    ctx: &mut Ctx<'_>,
    ty: &ContentType,
    name: &str,
    change: FieldChange,
) -> Result<()> {
    let mut data = ty.data.clone();
    let def = own_field(ty, &mut data, name)?;
    let values_changed = change.values.is_some();
    if let Some(values) = change.values {
        if !def.kind.has_values() {
            return Err(not_a_choice(name));
        }
        fields::check_values(name, &values)?;
        def.values = Some(values);
    }
    if let Some(t) = change.title {
        def.title = t;
    }
    if let Some(d) = change.description {
        def.description = d;
    }
    if let Some(r) = change.required {
        def.required = r;
    }
    if let Some(d) = change.default {
        def.default = d;
        def.check_default()?;
    } else if values_changed {
        // the default must stay among the values
        def.check_default()?;
    }
    if let Some(m) = change.min_length {
        def.min_length = m;
    }
    if let Some(m) = change.max_length {
        def.max_length = m;
    }
    if (def.min_length.is_some() || def.max_length.is_some()) && !def.kind.has_length() {
        return Err(EngineError::bad_request(format!(
            "Field '{name}' is not a text field: 'minLength' and 'maxLength' do not apply"
        )));
    }
    if let Some(w) = change.widget {
        def.widget = w;
    }
    if let Some(fs) = change.fieldset {
        if fs != "default" && !ty.fieldsets.iter().any(|f| f.id == fs) {
            return Err(EngineError::bad_request(format!(
                "Type '{}' has no fieldset '{fs}' to move field '{name}' to",
                ty.name
            )));
        }
        def.fieldset = (fs != "default").then_some(fs);
    }
    save_type(ctx, data).map(|_| ())
}

/// Remove the own field `name` of `ty`. Values stored for it stay on the objects, unread.
pub fn remove_field(ctx: &mut Ctx<'_>, ty: &ContentType, name: &str) -> Result<()> {
    let mut data = ty.data.clone();
    own_field(ty, &mut data, name)?;
    data.fields.retain(|f| f.name != name);
    save_type(ctx, data).map(|_| ())
}

/// Add a fieldset (`id` from the title when `None`).
pub fn add_fieldset(
    ctx: &mut Ctx<'_>,
    ty: &ContentType,
    id: Option<String>,
    title: String,
    description: String,
) -> Result<FieldsetDef> {
    let id = id.unwrap_or_else(|| normalize(&title));
    check_name(&id, "fieldset")?;
    if ty.fieldsets.iter().any(|f| f.id == id) || ty.field(&id).is_some() {
        return Err(EngineError::bad_request(format!(
            "Type '{}' already has a field or fieldset named '{id}'",
            ty.name
        )));
    }
    let fs = FieldsetDef {
        id,
        title,
        description,
    };
    let mut data = ty.data.clone();
    data.fieldsets.push(fs.clone());
    save_type(ctx, data)?;
    Ok(fs)
}

/// Change the title, description or fields of the type's own fieldset `id`; `fields` (own
/// fields of the type) are moved into it.
pub fn change_fieldset(
    ctx: &mut Ctx<'_>,
    ty: &ContentType,
    id: &str,
    title: Option<String>,
    description: Option<String>,
    fields: Option<Vec<String>>,
) -> Result<()> {
    let mut data = ty.data.clone();
    if let Some(fs) = data.fieldsets.iter_mut().find(|f| f.id == id) {
        if let Some(t) = title {
            fs.title = t;
        }
        if let Some(d) = description {
            fs.description = d;
        }
    } else if !ty.fieldsets.iter().any(|f| f.id == id) {
        return Err(EngineError::bad_request(format!(
            "Type '{}' has no fieldset '{id}'",
            ty.name
        )));
    } else if title.is_some() || description.is_some() {
        return Err(EngineError::bad_request(format!(
            "Fieldset '{id}' comes from a behavior; its title cannot be changed for one type"
        )));
    }
    for name in fields.into_iter().flatten() {
        let def = own_field(ty, &mut data, &name)?;
        def.fieldset = (id != "default").then(|| id.to_string());
    }
    save_type(ctx, data).map(|_| ())
}

/// Remove the type's own fieldset `id`; its fields move to `default`.
pub fn remove_fieldset(ctx: &mut Ctx<'_>, ty: &ContentType, id: &str) -> Result<()> {
    let mut data = ty.data.clone();
    if !data.fieldsets.iter().any(|f| f.id == id) {
        return Err(EngineError::bad_request(format!(
            "Fieldset '{id}' of type '{}' is not the type's own and cannot be removed",
            ty.name
        )));
    }
    data.fieldsets.retain(|f| f.id != id);
    for f in data.fields.iter_mut() {
        if f.fieldset.as_deref() == Some(id) {
            f.fieldset = None;
        }
    }
    save_type(ctx, data).map(|_| ())
}

/// The own field `name` in `data` (the stored form of `ty`), or a 400/404-worthy error.
fn own_field<'d>(ty: &ContentType, data: &'d mut TypeData, name: &str) -> Result<&'d mut FieldDef> {
    if let Some(i) = ty.fields.iter().position(|f| f.name == name) {
        if let Some(b) = &ty.sources[i] {
            return Err(EngineError::bad_request(format!(
                "Field '{name}' comes from the behavior '{b}' and cannot be changed for type '{}'",
                ty.name
            )));
        }
    }
    data.fields
        .iter_mut()
        .find(|f| f.name == name)
        .ok_or_else(|| {
            EngineError::bad_request(format!("Type '{}' has no field '{name}'", ty.name))
        })
}

/// The name of a new type made from its title on a site with `profile`: the normalized title
/// (`My Type` → `my_type`), or on a Nick site the title itself when it is a well-formed type
/// name (Nick names a type by its title: `My Type`).
pub fn type_name_from_title(profile: SiteProfile, title: &str) -> String {
    let title = title.trim();
    if profile.is_nick() && check_name(title, "type").is_ok() {
        title.to_string()
    } else {
        normalize(title)
    }
}

/// `Author email` → `author_email`: lowercase ASCII letters, digits and `_`.
pub fn normalize(title: &str) -> String {
    let mut out = String::new();
    for c in title.trim().chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

/// A field, fieldset or type name: starts with a letter, then letters, digits and `_` (type
/// names may also hold `-`, `.` and spaces, like `News Item`).
fn check_name(name: &str, what: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || c == '_'
                || (what == "type" && matches!(c, '-' | '.' | ' '))
        });
    if ok {
        Ok(())
    } else {
        Err(EngineError::bad_request(format!(
            "Invalid {what} name '{name}': it must start with a letter and hold only letters, \
             digits and '_'"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_make_names() {
        assert_eq!(normalize("Author email"), "author_email");
        assert_eq!(normalize("  Contact Info! "), "contact_info");
        assert!(check_name("author_email", "field").is_ok());
        assert!(check_name("_x", "field").is_err());
        assert!(check_name("", "field").is_err());
    }
}
