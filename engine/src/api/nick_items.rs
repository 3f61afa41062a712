//! Catalog items as a Nick site shows them (`@search`, `@navigation`, `@navroot`, `@catalog`):
//! every catalog metadata column Nick keeps ([`NICK_FIELDS`]), whatever `metadata_fields` asks
//! for. A Plone site's items are [`super::summaries`] and [`super::serialize::summary`]; both
//! shapes are built from the same stored object, so the profile changes the presentation only.
//!
//! Where Nick's columns differ from Plone's: an empty `Description` or `Subject` is `null`,
//! `exclude_from_nav` is `false` when unset (below the root), `EffectiveDate`/`ExpirationDate` are `null` rather
//! than `"None"`, `mime_type` is `null` for an object without a file, `markdown` is the blocks'
//! Markdown ending in a blank line, and the event columns `start`, `end` and `recurrence`,
//! `position_in_parent` (the index in the folder's order) and `deleted` are there too. The
//! site root (which has no workflow here) shows as Nick's root does: `published`, effective
//! since its creation.

use serde_json::{json, Map, Value};

use super::file_fields;
use super::serialize;
use crate::core::error::Result;
use crate::core::model::ContentRecord;
use crate::runtime::context::Ctx;

/// The columns of a Nick catalog item, in Nick's order.
pub const NICK_FIELDS: &[&str] = &[
    "@id",
    "@type",
    "title",
    "UID",
    "path",
    "Description",
    "Title",
    "Subject",
    "is_folderish",
    "markdown",
    "exclude_from_nav",
    "Type",
    "getId",
    "Creator",
    "id",
    "image_field",
    "image_scales",
    "portal_type",
    "position_in_parent",
    "review_state",
    "modified",
    "Date",
    "expires",
    "end",
    "start",
    "recurrence",
    "created",
    "deleted",
    "effective",
    "getObjSize",
    "hasPreviewImage",
    "listCreators",
    "mime_type",
    "CreationDate",
    "EffectiveDate",
    "ExpirationDate",
    "ModificationDate",
];

/// The Nick catalog item of `obj` ([`NICK_FIELDS`]).
pub fn item(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Map<String, Value>> {
    let mut m = Map::new();
    for name in NICK_FIELDS {
        m.insert((*name).to_string(), column(ctx, obj, name)?);
    }
    Ok(m)
}

/// `null` for a missing value, an empty string or an empty list.
fn null_if_empty(v: Option<&Value>) -> Value {
    match v {
        None => Value::Null,
        Some(Value::String(s)) if s.is_empty() => Value::Null,
        Some(Value::Array(a)) if a.is_empty() => Value::Null,
        Some(v) => v.clone(),
    }
}

/// One column of the Nick item of `obj`.
fn column(ctx: &Ctx<'_>, obj: &ContentRecord, name: &str) -> Result<Value> {
    let field = |n: &str| obj.fields.get(n).cloned().unwrap_or(Value::Null);
    Ok(match name {
        // The root's URL ends in `/`, as Nick writes it.
        "@id" if obj.is_root() => json!(format!("{}/", ctx.url(&obj.path))),
        "Description" => null_if_empty(obj.fields.get("description")),
        "Subject" => null_if_empty(obj.fields.get("subjects")),
        "markdown" => {
            let md = crate::content::exports::markdown(obj);
            let md = md.trim_end_matches('\n');
            json!(if md.is_empty() {
                String::new()
            } else {
                format!("{md}\n\n")
            })
        }
        // `false` unless set; the site root's is its stored value (Nick's root type has no
        // such field: `null`).
        "exclude_from_nav" if obj.is_root() => field("exclude_from_nav"),
        "exclude_from_nav" => json!(field("exclude_from_nav").as_bool().unwrap_or(false)),
        "position_in_parent" => json!(crate::content::tree::index_in_parent(ctx, obj)?),
        "review_state" => serialize::nick_review_state(obj),
        "start" | "end" | "recurrence" => field(name),
        "deleted" => json!(false),
        "effective" | "EffectiveDate" => serialize::nick_effective(obj),
        "expires" | "ExpirationDate" => field("expires"),
        "mime_type" => {
            let ty = ctx.type_of(obj)?;
            match file_fields::primary_file(&ty, &obj.fields) {
                Some(f) => json!(f.content_type),
                None => Value::Null,
            }
        }
        other => serialize::catalog_value(ctx, obj, other)?.unwrap_or(Value::Null),
    })
}
