//! The content operations: create, edit, rename, reorder, sort, move and copy ([`transfer`]),
//! delete, and the file an upload makes. Each is a typed command (a plain struct) and one function taking `&mut Ctx` that owns
//! the rules: field validation and defaults (via the type's schema), id allocation (one
//! allocator, [`allocate_id`], used by create, uploads, copy and paste), the lock check,
//! rename with automatic aliases ([`relocate`], used by rename and move), and the recycle bin.
//! Every entry point (the content, tus and copy/move handlers, content-rule actions, the
//! replica's import) calls these; they write only through [`crate::content::tree`], which emits the events.
//!
//! Nothing here reads HTTP headers or builds response JSON: the api layer passes in what it read
//! (the `Lock-Token`, the parsed body) and serializes the record it gets back.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::content::files::{self, StoredFile};
use crate::content::links;
use crate::content::tree::{self, Relocation};
use crate::content::uploads::{self, Upload};
use crate::core::error::{EngineError, Result};
use crate::core::model::fields::FieldKind;
use crate::core::model::{blocks, ids, ContentRecord, ContentType};
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

mod body_schema;
mod revert;
mod transfer;
pub use body_schema::body_schemas;
pub use revert::{revert, Revert, Reverted};
pub use transfer::{check_lock, check_transfer, transfer, Transfer};

/// Keys of the representation that clients echo back but that are computed, not stored; they are
/// accepted and ignored on create and edit.
const READ_ONLY: &[&str] = &[
    "@id",
    "@components",
    "UID",
    "created",
    "modified",
    "review_state",
    "is_folderish",
    "items",
    "items_total",
    "batching",
    "parent",
    "lock",
    "type_title",
    "version",
    "versioning_enabled",
    "working_copy",
    "working_copy_of",
    "previous_item",
    "next_item",
    "owner",
    // Volto's add and edit forms send their whole form state: the id of the block that had the
    // focus. Plone ignores it; so do we.
    "selected",
];

/// How the lock on an object is honoured by an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Locks {
    /// A caller's request: a valid lock refuses the change unless this is its token (what the
    /// request sent in `Lock-Token`).
    Honour(Option<String>),
    /// The site itself acting (content-rule actions, the replica mirroring the server): locks
    /// are not consulted.
    Bypass,
}

impl Locks {
    /// Fail with 403 "Resource is locked." when `obj`'s lock refuses this change.
    fn check(&self, ctx: &mut Ctx<'_>, obj: &ContentRecord) -> Result<()> {
        match self {
            Locks::Honour(token) => {
                crate::content::locking::check_can_change(ctx, token.as_deref(), obj)
            }
            Locks::Bypass => Ok(()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Ids

/// How [`allocate_id`] makes the next candidate when the wanted id is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdScheme {
    /// `base-1`, `base-2`, ...: a new object (create, upload).
    Numbered,
    /// `copy_of_base`, `copy2_of_base`, ...: a copy or a moved object (paste); a 400 once the
    /// candidates grow longer than [`ids::MAX_ID_LEN`].
    CopyOf,
}

impl IdScheme {
    fn candidate(self, base: &str, n: u32) -> String {
        match self {
            IdScheme::Numbered => format!("{base}-{n}"),
            IdScheme::CopyOf if n == 1 => format!("copy_of_{base}"),
            IdScheme::CopyOf => format!("copy{n}_of_{base}"),
        }
    }
}

/// The one id allocator: `base` when no child of `parent` has it, else the first free
/// candidate of `scheme` (with parallel writes, an id another write is giving counts as taken:
/// [`tree::id_free`]).
pub fn allocate_id(
    ctx: &Ctx<'_>,
    parent: &ContentRecord,
    base: &str,
    scheme: IdScheme,
) -> Result<String> {
    if tree::id_free(ctx, parent, base)? {
        return Ok(base.to_string());
    }
    for n in 1.. {
        let candidate = scheme.candidate(base, n);
        if scheme == IdScheme::CopyOf && candidate.len() > ids::MAX_ID_LEN {
            return Err(EngineError::bad_request(format!(
                "No free id for '{base}' in the destination"
            )));
        }
        if tree::id_free(ctx, parent, &candidate)? {
            return Ok(candidate);
        }
    }
    unreachable!("ids are unbounded")
}

/// Fail with a 400 unless `id` is a legal id that no child of `parent` has.
fn check_free(ctx: &Ctx<'_>, parent: &ContentRecord, id: &str) -> Result<()> {
    ids::validate_id(id)?;
    if tree::has_child(ctx, parent, id)? {
        return Err(EngineError::bad_request(format!(
            "An object with id '{id}' already exists in '{}'",
            ctx.url(&parent.path)
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Create

/// Add a child to a folder.
#[derive(Debug, Clone)]
pub struct Create {
    /// The content type of the new object.
    pub type_name: String,
    /// The id wanted; allocated from the title (or the type name) when `None`.
    pub id: Option<String>,
    /// Field values as a client sends them (validated against the type's schema;
    /// `translation_of` links the new object as a translation).
    pub fields: Map<String, Value>,
    /// A finished upload that becomes the type's first file or image field.
    pub upload: Option<Upload>,
}

/// Fail unless the caller may add content inside `parent`: it must be folderish, and the caller
/// needs Add portal content there.
pub fn check_can_add(ctx: &Ctx<'_>, parent: &ContentRecord) -> Result<()> {
    let parent_type = ctx.type_of(parent)?;
    if !parent_type.folderish {
        return Err(EngineError::bad_request(format!(
            "Cannot add content inside '{}': a {} is not folderish",
            ctx.url(&parent.path),
            parent_type.title
        )));
    }
    ctx.require(Permission::AddContent, parent)
}

/// Add a new object inside `parent`; the new record (stored, with its path).
pub fn create(ctx: &mut Ctx<'_>, parent: &mut ContentRecord, cmd: Create) -> Result<ContentRecord> {
    check_can_add(ctx, parent)?;
    let parent_type = ctx.type_of(parent)?;
    let Create {
        type_name,
        id,
        mut fields,
        upload,
    } = cmd;
    let ty = ctx
        .types()?
        .get(&type_name)
        .ok_or_else(|| EngineError::bad_request(format!("Unknown content type '{type_name}'")))?;
    if !parent_type.allows(&ty) {
        return Err(EngineError::bad_request(format!(
            "Content type '{type_name}' may not be added inside a {}",
            parent_type.title
        )));
    }
    // A 400 on a site that is not multilingual; linked once the object exists.
    let translation_of = crate::content::multilingual::take_translation_of(ctx, &mut fields)?;
    let requested_id = match id.filter(|s| !s.is_empty()) {
        Some(id) => {
            check_free(ctx, parent, &id)?;
            Some(id)
        }
        None => None,
    };

    let login = ctx.principal.login().unwrap_or("").to_string();
    let mut rec = tree::new_record(ctx, &ty, "", &login, Map::new());
    if let Some(upload) = &upload {
        let (field, kind) = file_field(&ty)?;
        let stored = stored_file(ctx, upload, &rec.uid.clone(), &field, kind)?;
        rec.fields.insert(field, serde_json::to_value(stored)?);
    }
    let written = apply_fields(ctx, &ty, &mut rec, fields, true)?;
    if !rec.fields.contains_key("creators") {
        rec.fields.insert("creators".into(), json!([login]));
    }
    if ty.field("language").is_some() {
        // Inside a language independent folder the object has no language, whatever the
        // client named (Plone's rule); elsewhere the client's language stands.
        let lang = crate::content::multilingual::language_for_new_child(ctx, parent)?;
        if lang.is_empty() || !rec.fields.contains_key("language") {
            rec.fields.insert("language".into(), json!(lang));
        }
    }
    rec.id = match requested_id {
        Some(id) => id,
        None => {
            let base = ids::normalize(if rec.title().is_empty() {
                &ty.name
            } else {
                rec.title()
            });
            allocate_id(ctx, parent, &base, IdScheme::Numbered)?
        }
    };
    tree::add(ctx, parent, &mut rec, written.change_note)?;
    if let Some(source) = &translation_of {
        crate::content::multilingual::link(ctx, source, &rec)?;
    }
    Ok(rec)
}

/// The File (or Image, for an image; or the `@type` of its metadata) a finished upload makes
/// inside `parent`, titled with its file name; the new record.
pub fn create_from_upload(
    ctx: &mut Ctx<'_>,
    parent: &mut ContentRecord,
    upload: &Upload,
) -> Result<ContentRecord> {
    let type_name = upload.metadata.get("@type").cloned().unwrap_or_else(|| {
        if upload_content_type(upload)
            .unwrap_or_default()
            .starts_with("image/")
        {
            "Image".into()
        } else {
            "File".into()
        }
    });
    let mut fields = Map::new();
    fields.insert("title".into(), json!(upload_filename(upload)));
    create(
        ctx,
        parent,
        Create {
            type_name,
            id: None,
            fields,
            upload: Some(upload.clone()),
        },
    )
}

// ---------------------------------------------------------------------------------------------
// Fields

/// What [`apply_fields`] wrote.
struct Written {
    fields: Vec<String>,
    change_note: Option<String>,
}

/// Validate `body` against the type's schema and write the values into `rec`; when `creating`,
/// required fields left empty take their default or refuse the body.
fn apply_fields(
    ctx: &mut Ctx<'_>,
    ty: &ContentType,
    rec: &mut ContentRecord,
    body: Map<String, Value>,
    creating: bool,
) -> Result<Written> {
    let mut written = Vec::new();
    let mut change_note = None;
    let changes_fields = !body.is_empty();
    for (key, value) in body {
        // Read-only properties, and `@`-prefixed metadata other than `@type` (Volto's forms send
        // back `@static_behaviors`), are ignored as Plone ignores them.
        if READ_ONLY.contains(&key.as_str()) || (key.starts_with('@') && key != "@type") {
            continue;
        }
        if key == "layout" {
            let layout = value
                .as_str()
                .filter(|s| !s.is_empty() && !s.contains(['/', ' ']))
                .ok_or_else(|| {
                    EngineError::bad_request("'layout' must be a view name (a non-empty string)")
                })?;
            rec.fields.insert(key.clone(), json!(layout));
            written.push(key);
            continue;
        }
        let def = ty.field(&key).ok_or_else(|| {
            EngineError::bad_request(format!(
                "Unknown field '{key}' for content type '{}'",
                ty.name
            ))
        })?;
        let value = if key == "relatedItems" {
            normalize_related(ctx, &value).map_err(|e| e.for_field(&key))?
        } else if def.kind == FieldKind::RelationChoice {
            related_uid(ctx, &value).map_err(|e| e.for_field(&key))?
        } else {
            value
        };
        let value = if matches!(def.kind, FieldKind::File | FieldKind::Image) {
            files::accept(
                ctx,
                &rec.uid,
                def,
                value,
                rec.fields.get(&key),
                crate::content::versioning::is_versioned(ty),
            )
            .map_err(|e| e.for_field(&key))?
        } else {
            value
        };
        let mut stored = def.validate(&value)?;
        if def.kind == FieldKind::Blocks {
            links::to_stored(ctx, &mut stored)?;
        }
        if def.kind == FieldKind::Password {
            // kept as a salted hash only, never in clear ("" or null: no password)
            stored = match stored.as_str().filter(|s| !s.is_empty()) {
                Some(secret) => Value::String(crate::people::auth::password::hash(
                    secret,
                    ctx.core.options.password_cost,
                    ctx.core.entropy.as_ref(),
                )?),
                None => Value::Null,
            };
        }
        if def.transient {
            if key == "changeNote" {
                change_note = stored
                    .as_str()
                    .map(str::to_string)
                    .filter(|s| !s.is_empty());
            }
            continue;
        }
        rec.fields.insert(key.clone(), stored);
        written.push(key);
    }
    if creating {
        for def in ty.fields.iter().filter(|d| d.required) {
            let present = match rec.fields.get(&def.name) {
                None | Some(Value::Null) => false,
                Some(Value::String(s)) => !s.trim().is_empty(),
                Some(_) => true,
            };
            if present {
                continue;
            }
            match def.default.as_ref().filter(|d| !d.is_null()) {
                // A required field with a default starts with it.
                Some(d) => {
                    rec.fields.insert(def.name.clone(), d.clone());
                    written.push(def.name.clone());
                }
                None => {
                    return Err(EngineError::Required {
                        field: def.name.clone(),
                        message: format!("Field '{}' is required", def.name),
                    })
                }
            }
        }
    }
    if !creating && changes_fields {
        // A required field added (or made required) after the object was made: the object has
        // no value until an edit supplies one, and every edit of its fields must (as Plone's
        // edit form). A rename or a reordering alone changes no field.
        for def in ty.fields.iter().filter(|d| d.required && !d.transient) {
            let missing = matches!(rec.fields.get(&def.name), None | Some(Value::Null));
            if missing && def.default.as_ref().is_none_or(Value::is_null) {
                return Err(EngineError::Required {
                    field: def.name.clone(),
                    message: format!(
                        "Field '{}' is required: this object has no value for it yet",
                        def.name
                    ),
                });
            }
        }
    }
    if ty.has_behavior(crate::content::calendar::EVENT_BEHAVIOR) {
        crate::content::calendar::check_dates(&rec.fields)?;
    }
    if let (Some(b), Some(l)) = (rec.fields.get("blocks"), rec.fields.get("blocks_layout")) {
        blocks::check_consistency(b, l)?;
    }
    Ok(Written {
        fields: written,
        change_note,
    })
}

/// `relatedItems` as UIDs: accepts UID strings or objects carrying `UID`; every UID must exist.
fn normalize_related(ctx: &Ctx<'_>, value: &Value) -> Result<Value> {
    let arr = value
        .as_array()
        .ok_or_else(|| EngineError::bad_request("Field 'relatedItems' must be an array of UIDs"))?;
    let mut out = Vec::new();
    for item in arr {
        let uid = match item {
            Value::String(s) => s.clone(),
            Value::Object(o) => o
                .get("UID")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| EngineError::bad_request("Each related item needs a 'UID'"))?,
            _ => {
                return Err(EngineError::bad_request(
                    "Field 'relatedItems' must be an array of UIDs",
                ))
            }
        };
        if tree::load(ctx, &uid)?.is_none() {
            return Err(EngineError::bad_request(format!(
                "Related item '{uid}' does not exist"
            )));
        }
        out.push(Value::String(uid));
    }
    Ok(Value::Array(out))
}

/// A Relation Choice's value as the UID it names: a UID, a site path or URL, or an object
/// carrying `UID` or `@id`; `null` (or `""`) is no relation. The object must exist.
fn related_uid(ctx: &Ctx<'_>, value: &Value) -> Result<Value> {
    let reference = match value {
        Value::Null => return Ok(Value::Null),
        Value::String(s) if s.trim().is_empty() => return Ok(Value::Null),
        Value::String(s) => s.trim(),
        Value::Object(o) => o
            .get("UID")
            .or_else(|| o.get("@id"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                EngineError::bad_request("A related object needs a 'UID' or an '@id'")
            })?,
        // the kind's own check names what is wrong
        other => return Ok(other.clone()),
    };
    let path = reference
        .strip_prefix(ctx.base_url.as_str())
        .filter(|p| p.is_empty() || p.starts_with('/'))
        .unwrap_or(reference);
    let found = if path.starts_with('/') || path.is_empty() {
        tree::at_path(ctx, path.trim_end_matches('/'))?
    } else if path.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        tree::load(ctx, path)?
    } else {
        None
    };
    match found {
        Some(obj) => Ok(Value::String(obj.uid)),
        None => Err(EngineError::bad_request(format!(
            "Related object '{reference}' does not exist"
        ))),
    }
}

// ---------------------------------------------------------------------------------------------
// Edit, rename, reorder, sort

/// A catalog value of an object by metadata name (what [`Sort::on`] names); the api layer's
/// serializer supplies it.
pub type CatalogValue = fn(&Ctx<'_>, &ContentRecord, &str) -> Result<Option<Value>>;

/// Change an object: its fields, and optionally its id, in that order. (A PATCH that also
/// reorders or re-sorts the children runs [`reorder`] or [`sort`] after it.)
#[derive(Debug, Clone)]
pub struct Edit {
    /// Whose lock is honoured.
    pub locks: Locks,
    /// The `@type` the client sent, if any: it must be the object's own.
    pub type_name: Option<Value>,
    /// Field values as a client sends them (validated against the type's schema).
    pub fields: Map<String, Value>,
    /// A new id (ignored when it is the current one): a [`rename`], checked with the rest
    /// before the first write.
    pub rename: Option<String>,
}

/// Rename an object in place.
#[derive(Debug, Clone)]
pub struct Rename {
    /// The new id.
    pub id: String,
    /// Whose lock is honoured.
    pub locks: Locks,
}

/// Move child `obj_id` by `delta`, within `subset_ids` when given (which must match the current
/// relative order).
#[derive(Debug, Clone)]
pub struct Reorder {
    /// The id of the child to move.
    pub obj_id: String,
    /// Where to.
    pub delta: Delta,
    /// The ids the client sees, in its order.
    pub subset_ids: Option<Vec<String>>,
}

/// How far a child moves.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Delta {
    /// A signed number of places.
    Places(i64),
    /// `"top"`, `"bottom"`, or a number written as a string.
    Word(String),
}

/// Re-sort the children of a folder on a catalog field.
#[derive(Debug, Clone)]
pub struct Sort {
    /// The field (`sortable_title`, `modified`, `getObjPositionInParent`, any catalog metadata).
    pub on: String,
    /// `ascending` (default) or `descending` (`reverse`).
    pub order: Option<String>,
}

/// Apply `cmd` to `obj` (which is updated: renamed, saved). Everything is checked before the
/// first write: the lock, the type, the new id.
pub fn edit(ctx: &mut Ctx<'_>, obj: &mut ContentRecord, cmd: Edit) -> Result<()> {
    cmd.locks.check(ctx, obj)?;
    let locks = cmd.locks.clone();
    let ty = ctx.type_of(obj)?;
    if let Some(t) = &cmd.type_name {
        if t.as_str() != Some(ty.name.as_str()) {
            return Err(EngineError::bad_request(
                "The content type of an object cannot be changed",
            ));
        }
    }
    let new_id = cmd.rename.filter(|id| *id != obj.id);
    if let Some(id) = &new_id {
        check_rename(ctx, obj, id)?;
    }
    let written = apply_fields(ctx, &ty, obj, cmd.fields, false)?;
    if !written.fields.is_empty() || written.change_note.is_some() {
        obj.modified = ctx.now();
        tree::save(
            ctx,
            obj,
            tree::Change::Edit {
                fields: written.fields,
                change_note: written.change_note,
            },
        )?;
    }
    if let Some(id) = new_id {
        *obj = rename(ctx, obj, &Rename { id, locks })?;
    }
    Ok(())
}

/// Rename `obj` in place (keeping its position), leaving automatic aliases at the old paths of it
/// and its descendants; the renamed record.
pub fn rename(ctx: &mut Ctx<'_>, obj: &ContentRecord, cmd: &Rename) -> Result<ContentRecord> {
    cmd.locks.check(ctx, obj)?;
    if cmd.id == obj.id {
        return Ok(obj.clone());
    }
    check_rename(ctx, obj, &cmd.id)?;
    rename_checked(ctx, obj, &cmd.id)
}

/// Refuse a rename that cannot happen: the root, an illegal or taken id, no right to add in the
/// parent.
fn check_rename(ctx: &Ctx<'_>, obj: &ContentRecord, id: &str) -> Result<()> {
    let parent = tree::parent(ctx, obj)?
        .ok_or_else(|| EngineError::bad_request("The site root cannot be renamed"))?;
    check_free(ctx, &parent, id)?;
    ctx.require(Permission::AddContent, &parent)
}

fn rename_checked(ctx: &mut Ctx<'_>, obj: &ContentRecord, id: &str) -> Result<ContentRecord> {
    let parent_uid = obj.parent.clone().unwrap_or_default();
    relocate(ctx, obj, &parent_uid, id)?;
    tree::load(ctx, &obj.uid)?
        .ok_or_else(|| EngineError::Internal("renamed object vanished".into()))
}

/// Move `obj` (with its subtree) to `new_parent_uid` under `new_id` (a rename when the parent is
/// its own), leaving automatic aliases at the old paths: how rename and move keep old URLs
/// working. The moves made, the top object first.
pub fn relocate(
    ctx: &mut Ctx<'_>,
    obj: &ContentRecord,
    new_parent_uid: &str,
    new_id: &str,
) -> Result<Vec<Relocation>> {
    let moves = tree::relocate(ctx, obj, new_parent_uid, new_id)?;
    crate::content::aliases::record_moves(ctx, &moves)?;
    Ok(moves)
}

fn require_folderish(ctx: &Ctx<'_>, obj: &ContentRecord, what: &str) -> Result<()> {
    if ctx.type_of(obj)?.folderish {
        Ok(())
    } else {
        Err(EngineError::bad_request(format!(
            "'{what}' applies to the children of a folderish object; '{}' has none",
            ctx.url(&obj.path)
        )))
    }
}

/// Move one child of `folder` within its order (see [`Reorder`]).
pub fn reorder(
    ctx: &mut Ctx<'_>,
    folder: &mut ContentRecord,
    cmd: &Reorder,
    locks: &Locks,
) -> Result<()> {
    locks.check(ctx, folder)?;
    reorder_children(ctx, folder, cmd)
}

fn reorder_children(ctx: &mut Ctx<'_>, folder: &mut ContentRecord, spec: &Reorder) -> Result<()> {
    require_folderish(ctx, folder, "ordering")?;
    let obj_id = spec.obj_id.as_str();
    let kids = tree::children(ctx, &folder.uid, 0, usize::MAX)?;
    let order: Vec<&str> = kids.iter().map(|k| k.id.as_str()).collect();
    if !order.contains(&obj_id) {
        return Err(EngineError::bad_request(format!(
            "'ordering.obj_id': '{obj_id}' is not an item of this folder"
        )));
    }
    let subset: Vec<String> = match &spec.subset_ids {
        None => order.iter().map(|s| s.to_string()).collect(),
        Some(ids) => {
            let ids = ids.clone();
            let server: Vec<&str> = order
                .iter()
                .copied()
                .filter(|id| ids.iter().any(|s| s == id))
                .collect();
            if server.len() != ids.len() || server.iter().zip(&ids).any(|(a, b)| a != b) {
                return Err(EngineError::bad_request(
                    "Client/server ordering mismatch: 'subset_ids' does not match the current order",
                ));
            }
            ids
        }
    };
    let from = subset
        .iter()
        .position(|s| s == obj_id)
        .ok_or_else(|| EngineError::bad_request("'ordering.obj_id' must be one of 'subset_ids'"))?;
    let last = subset.len() - 1;
    let places = |d: i64| (from as i64).saturating_add(d).clamp(0, last as i64) as usize;
    let to = match &spec.delta {
        Delta::Word(s) if s == "top" => 0,
        Delta::Word(s) if s == "bottom" => last,
        Delta::Places(d) => places(*d),
        Delta::Word(s) if s.parse::<i64>().is_ok() => places(s.parse().unwrap_or(0)),
        Delta::Word(_) => {
            return Err(EngineError::bad_request(
                "'ordering.delta' must be \"top\", \"bottom\" or an integer",
            ))
        }
    };
    let mut new_subset = subset.clone();
    let moved = new_subset.remove(from);
    new_subset.insert(to, moved);
    // The subset keeps the slots it occupied; only its internal order changes.
    let mut it = new_subset.into_iter();
    let new_ids: Vec<String> = order
        .iter()
        .map(|id| {
            if subset.iter().any(|s| s == id) {
                it.next().unwrap_or_else(|| id.to_string())
            } else {
                id.to_string()
            }
        })
        .collect();
    let uids: Vec<String> = new_ids
        .iter()
        .filter_map(|id| kids.iter().find(|k| &k.id == id).map(|k| k.uid.clone()))
        .collect();
    tree::set_order(ctx, folder, &uids)
}

/// Re-sort the children of `folder` (see [`Sort`]); `catalog_value` reads the metadata named.
pub fn sort(
    ctx: &mut Ctx<'_>,
    folder: &mut ContentRecord,
    cmd: &Sort,
    locks: &Locks,
    catalog_value: CatalogValue,
) -> Result<()> {
    locks.check(ctx, folder)?;
    sort_children(ctx, folder, cmd, catalog_value)
}

fn sort_children(
    ctx: &mut Ctx<'_>,
    folder: &mut ContentRecord,
    spec: &Sort,
    catalog_value: CatalogValue,
) -> Result<()> {
    require_folderish(ctx, folder, "sort")?;
    let on = spec.on.as_str();
    let descending = match spec.order.as_deref() {
        None | Some("ascending") => false,
        Some("descending") | Some("reverse") => true,
        Some(o) => {
            return Err(EngineError::bad_request(format!(
                "'sort.order' must be \"ascending\" or \"descending\", got '{o}'"
            )))
        }
    };
    let kids = tree::children(ctx, &folder.uid, 0, usize::MAX)?;
    let mut keyed = Vec::with_capacity(kids.len());
    for k in &kids {
        let v = match on {
            "sortable_title" => Some(json!(k.title().to_lowercase())),
            "getObjPositionInParent" => Some(json!(k.pos)),
            _ => catalog_value(ctx, k, on)?,
        }
        .ok_or_else(|| EngineError::bad_request(format!("'sort.on': cannot sort on '{on}'")))?;
        keyed.push((SortKey::of(&v), k.uid.clone()));
    }
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    if descending {
        keyed.reverse();
    }
    let uids: Vec<String> = keyed.into_iter().map(|(_, u)| u).collect();
    tree::set_order(ctx, folder, &uids)
}

/// What children are sorted by: nulls first, then booleans, numbers by value (negative and
/// fractional ones included), strings case-insensitively, anything else by its JSON text.
#[derive(Debug, Clone, PartialEq)]
enum SortKey {
    Null,
    Bool(bool),
    Number(f64),
    Text(String),
}

impl SortKey {
    fn of(v: &Value) -> Self {
        match v {
            Value::Null => SortKey::Null,
            Value::Bool(b) => SortKey::Bool(*b),
            Value::Number(n) => SortKey::Number(n.as_f64().unwrap_or(0.0)),
            Value::String(s) => SortKey::Text(s.to_lowercase()),
            other => SortKey::Text(other.to_string()),
        }
    }

    fn rank(&self) -> u8 {
        match self {
            SortKey::Null => 0,
            SortKey::Bool(_) => 1,
            SortKey::Number(_) => 2,
            SortKey::Text(_) => 3,
        }
    }

    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (self, other) {
            (SortKey::Bool(a), SortKey::Bool(b)) => a.cmp(b),
            (SortKey::Number(a), SortKey::Number(b)) => a.total_cmp(b),
            (SortKey::Text(a), SortKey::Text(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Delete

/// Delete an object and everything below it.
#[derive(Debug, Clone)]
pub struct Delete {
    /// Whose lock is honoured: a locked object, or a folder holding one, is deleted only with
    /// the lock's token.
    pub locks: Locks,
    /// Remove for good even when the site's recycle bin is on (the replica mirroring a removal
    /// on the server).
    pub purge: bool,
}

/// Delete `obj` and its subtree: into the recycle bin when the site's is on (unless
/// [`Delete::purge`]), for good otherwise. The members deleted, `obj` first.
pub fn delete(ctx: &mut Ctx<'_>, obj: &ContentRecord, cmd: &Delete) -> Result<Vec<ContentRecord>> {
    if obj.is_root() {
        return Err(EngineError::bad_request("The site root cannot be deleted"));
    }
    let members = tree::subtree(ctx, obj)?;
    for member in &members {
        cmd.locks.check(ctx, member)?;
    }
    if !cmd.purge && crate::content::recyclebin::enabled(ctx)? {
        crate::content::recyclebin::bin(ctx, obj, members.clone())?;
    } else {
        tree::remove_members(ctx, obj, &members)?;
    }
    Ok(members)
}

// ---------------------------------------------------------------------------------------------
// Mirror

/// The site adding an object itself (a language root folder, a copy's members): the fields are
/// already in stored form and owner and state are given, so nothing is validated, allocated,
/// permission- or lock-checked.
#[derive(Debug, Clone)]
pub struct Place {
    /// The content type.
    pub type_name: String,
    /// The id (free in the parent: the caller looked).
    pub id: String,
    /// Who owns it.
    pub owner: String,
    /// The field values, in stored form.
    pub fields: Map<String, Value>,
    /// The workflow state (the type's initial state when `None`).
    pub review_state: Option<String>,
}

/// Add `cmd` as the last child of `parent`; the new record.
pub fn place(ctx: &mut Ctx<'_>, parent: &mut ContentRecord, cmd: Place) -> Result<ContentRecord> {
    let ty = ctx.types()?.require(&cmd.type_name)?;
    let mut rec = tree::new_record(ctx, &ty, &cmd.id, &cmd.owner, cmd.fields);
    if cmd.review_state.is_some() {
        rec.review_state = cmd.review_state;
    }
    tree::add(ctx, parent, &mut rec, None)?;
    Ok(rec)
}

/// Place an object as another site holds it (the replica importing the server's copy): its
/// uid, dates, workflow state and revision are kept and its fields are already in stored form,
/// so nothing is validated, allocated or lock-checked.
#[derive(Debug, Clone)]
pub struct Mirror {
    /// The local uid.
    pub uid: String,
    /// The site path (its parent must exist to add it).
    pub path: String,
    /// The content type.
    pub type_name: String,
    /// Who owns it locally.
    pub owner: String,
    /// The field values, in stored form.
    pub fields: Map<String, Value>,
    /// The workflow state (the type's initial state when `None` on add; kept on update).
    pub review_state: Option<String>,
    /// When it was created.
    pub created: Option<DateTime<Utc>>,
    /// When it was last modified.
    pub modified: Option<DateTime<Utc>>,
    /// Its revision where it comes from: the stored record gets the same.
    pub rev: Option<u64>,
}

/// What [`mirror`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mirrored {
    /// A new object was added.
    Added,
    /// `existing` was updated.
    Updated,
    /// Nothing: the parent path is not there.
    NoParent,
}

/// Store `cmd` over `existing` (the local record with that uid, at that path) or as a new child
/// of the object at its parent path.
pub fn mirror(ctx: &mut Ctx<'_>, existing: Option<ContentRecord>, cmd: Mirror) -> Result<Mirrored> {
    let Mirror {
        uid,
        path,
        type_name,
        owner,
        fields,
        review_state,
        created,
        modified,
        rev,
    } = cmd;
    let apply = |rec: &mut ContentRecord| {
        if let Some(m) = modified {
            rec.modified = m;
        }
        if let Some(c) = created {
            rec.created = c;
        }
        if let Some(r) = rev {
            rec.rev = r.saturating_sub(1); // the write below counts one
        }
    };
    match existing {
        Some(mut rec) => {
            let written: Vec<String> = fields.keys().cloned().collect();
            rec.fields = fields;
            rec.type_name = type_name;
            rec.review_state = review_state.or(rec.review_state);
            apply(&mut rec);
            tree::save(
                ctx,
                &mut rec,
                tree::Change::Edit {
                    fields: written,
                    change_note: None,
                },
            )?;
            Ok(Mirrored::Updated)
        }
        None => {
            let parent_path = path.rsplit_once('/').map(|(p, _)| p).unwrap_or("");
            let Some(mut parent) = tree::at_path(ctx, parent_path)? else {
                return Ok(Mirrored::NoParent);
            };
            let ty = ctx.types()?.require(&type_name)?;
            let id = path.rsplit('/').next().unwrap_or_default();
            let mut rec = tree::new_record(ctx, &ty, id, &owner, fields);
            rec.uid = uid;
            rec.review_state = review_state.or(rec.review_state);
            apply(&mut rec);
            tree::add(ctx, &mut parent, &mut rec, None)?;
            Ok(Mirrored::Added)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Files from uploads

/// The first file or image field of `ty`; a 400 when it has none.
pub fn file_field(ty: &ContentType) -> Result<(String, FieldKind)> {
    ty.fields
        .iter()
        .find(|f| matches!(f.kind, FieldKind::File | FieldKind::Image))
        .map(|f| (f.name.clone(), f.kind))
        .ok_or_else(|| {
            EngineError::bad_request(format!("A {} has no file or image field", ty.title))
        })
}

fn upload_filename(upload: &Upload) -> String {
    upload
        .metadata
        .get("filename")
        .cloned()
        .unwrap_or_else(|| "upload".into())
}

fn upload_content_type(upload: &Upload) -> Option<String> {
    upload
        .metadata
        .get("content-type")
        .or_else(|| upload.metadata.get("filetype"))
        .cloned()
}

/// The stored file a finished upload becomes in field `field` of `owner`.
fn stored_file(
    ctx: &mut Ctx<'_>,
    upload: &Upload,
    owner: &str,
    field: &str,
    kind: FieldKind,
) -> Result<StoredFile> {
    let filename = upload_filename(upload);
    let content_type = upload_content_type(upload)
        .unwrap_or_else(|| files::guess_content_type(&filename).to_string());
    let decoded = if kind == FieldKind::Image {
        let bytes = crate::content::blobs::read_all(ctx, &upload.blob)?;
        let info = files::decode(ctx, field, &bytes)?;
        Some((info, bytes))
    } else {
        None
    };
    uploads::take_finished(ctx, upload, owner)?;
    files::finish(
        ctx,
        owner,
        upload.blob.clone(),
        upload.length,
        filename,
        content_type,
        decoded
            .as_ref()
            .map(|(info, bytes)| (*info, bytes.as_slice())),
    )
}

/// Put a finished upload in the first file field of `obj`, releasing the file it had (unless
/// the type keeps versions, one of which still names it).
pub fn replace_file(
    ctx: &mut Ctx<'_>,
    obj: &mut ContentRecord,
    upload: &Upload,
    locks: &Locks,
) -> Result<()> {
    locks.check(ctx, obj)?;
    let ty = ctx.type_of(obj)?;
    let (field, kind) = file_field(&ty)?;
    let previous = files::stored(&obj.fields, &field)
        .filter(|_| !crate::content::versioning::is_versioned(&ty));
    let stored = stored_file(ctx, upload, &obj.uid.clone(), &field, kind)?;
    if let Some(p) = previous {
        files::release(ctx, &obj.uid, &p)?;
    }
    obj.fields
        .insert(field.clone(), serde_json::to_value(stored)?);
    obj.modified = ctx.now();
    tree::save(
        ctx,
        obj,
        tree::Change::Edit {
            fields: vec![field],
            change_note: None,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::security::{Principal, User};
    use crate::{Engine, EngineOptions, MemStore, SiteSetup};

    fn engine() -> Engine<MemStore> {
        let engine = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
        engine.create_site(&SiteSetup::new("secret")).unwrap();
        engine
    }

    /// Run `f` as a Manager named `admin`.
    fn as_admin<T>(
        engine: &Engine<MemStore>,
        f: impl FnOnce(&mut Ctx<'_>) -> Result<T>,
    ) -> Result<T> {
        engine.with_write(|ctx| {
            ctx.principal = Principal::User(User::new("admin", "", vec!["Manager".into()]));
            f(ctx)
        })
    }

    fn page(title: &str) -> Create {
        let mut fields = Map::new();
        fields.insert("title".into(), json!(title));
        Create {
            type_name: "Page".into(),
            id: None,
            fields,
            upload: None,
        }
    }

    fn add(ctx: &mut Ctx<'_>, cmd: Create) -> Result<ContentRecord> {
        let mut root = tree::root(ctx)?;
        create(ctx, &mut root, cmd)
    }

    #[test]
    fn numbered_ids_count_past_every_taken_one() {
        as_admin(&engine(), |ctx| {
            let a = add(ctx, page("News"))?;
            let b = add(ctx, page("News"))?;
            let c = add(ctx, page("News"))?;
            assert_eq!(
                (a.id.as_str(), b.id.as_str(), c.id.as_str()),
                ("news", "news-1", "news-2")
            );
            let root = tree::root(ctx)?;
            assert_eq!(
                allocate_id(ctx, &root, "news", IdScheme::Numbered)?,
                "news-3"
            );
            assert_eq!(
                allocate_id(ctx, &root, "other", IdScheme::Numbered)?,
                "other"
            );
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn copy_ids_prefix_and_stop_at_the_id_length_limit() {
        as_admin(&engine(), |ctx| {
            add(ctx, page("a"))?;
            let root = tree::root(ctx)?;
            assert_eq!(allocate_id(ctx, &root, "a", IdScheme::CopyOf)?, "copy_of_a");
            let mut cmd = page("x");
            cmd.id = Some("copy_of_a".into());
            add(ctx, cmd)?;
            let root = tree::root(ctx)?;
            assert_eq!(
                allocate_id(ctx, &root, "a", IdScheme::CopyOf)?,
                "copy2_of_a"
            );
            // An id at the length limit has no copy id that fits.
            let long = "l".repeat(ids::MAX_ID_LEN);
            let mut cmd = page("long");
            cmd.id = Some(long.clone());
            add(ctx, cmd)?;
            let root = tree::root(ctx)?;
            assert!(allocate_id(ctx, &root, &long, IdScheme::CopyOf).is_err());
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn a_requested_id_that_is_taken_is_refused() {
        as_admin(&engine(), |ctx| {
            add(ctx, page("Same"))?;
            let mut cmd = page("Other");
            cmd.id = Some("same".into());
            let err = add(ctx, cmd).unwrap_err();
            assert!(err.to_string().contains("already exists"), "{err}");
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn rename_leaves_an_alias_at_the_old_path() {
        as_admin(&engine(), |ctx| {
            let p = add(ctx, page("Old"))?;
            let cmd = Rename {
                id: "new".into(),
                locks: Locks::Honour(None),
            };
            let renamed = rename(ctx, &p, &cmd)?;
            assert_eq!(renamed.path, "/new");
            let alias =
                crate::content::aliases::get(ctx, "/old")?.expect("an alias at the old path");
            assert_eq!(alias.redirect_to, "/new");
            assert!(!alias.manual);
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn an_unknown_field_is_refused_and_read_only_ones_ignored() {
        as_admin(&engine(), |ctx| {
            let mut cmd = page("P");
            cmd.fields.insert("UID".into(), json!("ignored"));
            let rec = add(ctx, cmd)?;
            assert_ne!(rec.uid, "ignored");
            assert_eq!(rec.fields.get("creators"), Some(&json!(["admin"])));
            let mut cmd = page("Q");
            cmd.fields.insert("no_such_field".into(), json!(1));
            assert!(add(ctx, cmd).is_err());
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn a_lock_refuses_delete_unless_bypassed() {
        as_admin(&engine(), |ctx| {
            let p = add(ctx, page("Locked"))?;
            let lock = crate::content::locking::acquire(
                ctx,
                &p,
                &crate::content::locking::Acquire::default(),
            )?;
            let honour = Delete {
                locks: Locks::Honour(None),
                purge: true,
            };
            assert!(matches!(
                delete(ctx, &p, &honour),
                Err(EngineError::Locked(_))
            ));
            let with_token = Delete {
                locks: Locks::Honour(Some(lock.token.clone())),
                purge: true,
            };
            let p2 = add(ctx, page("Also"))?;
            let bypass = Delete {
                locks: Locks::Bypass,
                purge: true,
            };
            assert_eq!(delete(ctx, &p, &with_token)?.len(), 1);
            assert!(tree::load(ctx, &p.uid)?.is_none());
            crate::content::locking::acquire(
                ctx,
                &p2,
                &crate::content::locking::Acquire::default(),
            )?;
            delete(ctx, &p2, &bypass)?;
            assert!(tree::load(ctx, &p2.uid)?.is_none());
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn the_type_of_an_object_cannot_change() {
        as_admin(&engine(), |ctx| {
            let mut p = add(ctx, page("Typed"))?;
            let cmd = Edit {
                locks: Locks::Honour(None),
                type_name: Some(json!("Folder")),
                fields: Map::new(),
                rename: None,
            };
            assert!(edit(ctx, &mut p, cmd).is_err());
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn numbers_sort_by_value_including_negative_and_fractional() {
        let mut keys: Vec<SortKey> = [json!(10), json!(-2), json!(2.5), json!(-0.5), json!(2)]
            .iter()
            .map(SortKey::of)
            .collect();
        keys.sort_by(SortKey::cmp);
        let order: Vec<f64> = keys
            .iter()
            .map(|k| match k {
                SortKey::Number(n) => *n,
                _ => f64::NAN,
            })
            .collect();
        assert_eq!(order, vec![-2.0, -0.5, 2.0, 2.5, 10.0]);
        assert_eq!(
            SortKey::of(&json!("B")).cmp(&SortKey::of(&json!("a"))),
            std::cmp::Ordering::Greater
        );
        assert_eq!(
            SortKey::of(&Value::Null).cmp(&SortKey::of(&json!(-5))),
            std::cmp::Ordering::Less
        );
    }
}
