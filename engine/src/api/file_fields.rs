//! How stored files and images appear in representations: a file or image field's JSON
//! (plone.restapi's form, with its download and scale URLs), the `image_scales` of catalog
//! items, and which field is an object's image or primary file. Content answers, listings and
//! the `@@images`/`@@download` family all read them from here.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::content::files::{self, StoredFile};
use crate::core::model::fields::FieldKind;
use crate::core::model::ContentType;

/// A file field as content answers show it (plone.restapi's form).
#[derive(Debug, Serialize, JsonSchema)]
pub struct FileInfo {
    /// The media type.
    #[serde(rename = "content-type")]
    pub content_type: String,
    /// Where the bytes are.
    pub download: String,
    /// The file name.
    pub filename: String,
    /// Bytes.
    pub size: u64,
    /// Pixels across (images).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    /// Pixels down (images).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    /// The scales, by name (images).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scales: Option<BTreeMap<String, ScaleInfo>>,
}

/// One scale of an image field.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScaleInfo {
    /// Where it is.
    pub download: String,
    /// Pixels across.
    pub width: u32,
    /// Pixels down.
    pub height: u32,
}

/// The JSON of a stored file or image field: its URLs under `base` (the object's URL, or `""`
/// for the relative URLs of catalog items). `null` stays `null`.
pub fn field_json(base: &str, field: &str, kind: FieldKind, stored: &Value) -> Value {
    let Some(file) = serde_json::from_value::<StoredFile>(stored.clone()).ok() else {
        return Value::Null;
    };
    let sep = if base.is_empty() { "" } else { "/" };
    let info = info(&format!("{base}{sep}"), field, kind, &file);
    serde_json::to_value(info).unwrap_or(Value::Null)
}

fn info(prefix: &str, field: &str, kind: FieldKind, file: &StoredFile) -> FileInfo {
    let is_image = kind == FieldKind::Image;
    FileInfo {
        content_type: file.content_type.clone(),
        download: if is_image {
            format!("{prefix}@@images/{field}.{}", image_extension(file))
        } else {
            format!("{prefix}@@download/{field}")
        },
        filename: file.filename.clone(),
        size: file.size,
        width: file.width,
        height: file.height,
        scales: is_image.then(|| {
            file.scales
                .iter()
                .map(|(name, s)| {
                    (
                        name.clone(),
                        ScaleInfo {
                            download: format!("{prefix}@@images/{field}/{name}"),
                            width: s.width,
                            height: s.height,
                        },
                    )
                })
                .collect()
        }),
    }
}

/// The file name extension of an image's URL (`@@images/image.png`, the shape of Plone's
/// download URL, which clients recognise as an image file): the uploaded file name's, else the
/// media type's subtype.
pub fn image_extension(file: &StoredFile) -> String {
    let from_name = file
        .filename
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .filter(|e| !e.is_empty() && e.chars().all(|c| c.is_ascii_alphanumeric()));
    from_name.unwrap_or_else(|| match file.content_type.split('/').nth(1).unwrap_or("") {
        "jpeg" | "pjpeg" => "jpg".to_string(),
        "svg+xml" => "svg".to_string(),
        "" => "bin".to_string(),
        other => other.chars().filter(char::is_ascii_alphanumeric).collect(),
    })
}

/// One entry of `image_scales` in catalog items: a field's image with relative URLs and its
/// name (Volto joins them to the item's `@id`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct CatalogImage {
    /// The field.
    #[serde(flatten)]
    pub info: FileInfo,
    /// The field's name.
    pub field: String,
}

/// `image_scales` of a catalog item of type `ty` with field values `fields`: every image field
/// that has an image, by field name, each a one-element list (as Plone lists them).
pub fn image_scales(ty: &ContentType, fields: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    for f in ty.fields.iter().filter(|f| f.kind == FieldKind::Image) {
        if let Some(file) = files::stored(fields, &f.name) {
            let item = CatalogImage {
                info: info("", &f.name, f.kind, &file),
                field: f.name.clone(),
            };
            if let Ok(v) = serde_json::to_value(item) {
                out.insert(f.name.clone(), Value::Array(vec![v]));
            }
        }
    }
    Value::Object(out)
}

/// The first image field of type `ty` that has an image in `fields` (`image_field`,
/// `hasPreviewImage`).
pub fn image_field(ty: &ContentType, fields: &Map<String, Value>) -> Option<String> {
    ty.fields
        .iter()
        .filter(|f| f.kind == FieldKind::Image)
        .find(|f| files::stored(fields, &f.name).is_some())
        .map(|f| f.name.clone())
}

/// The first file or image field of type `ty`'s own (not a behavior's: a page's preview image
/// does not make it a file) with a value in `fields` (`mime_type`, `getObjSize` of files).
pub fn primary_file(ty: &ContentType, fields: &Map<String, Value>) -> Option<StoredFile> {
    ty.fields
        .iter()
        .zip(&ty.sources)
        .filter(|(f, source)| {
            source.is_none() && matches!(f.kind, FieldKind::File | FieldKind::Image)
        })
        .find_map(|(f, _)| files::stored(fields, &f.name))
}
