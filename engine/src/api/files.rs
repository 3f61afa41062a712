//! Downloads: `@@download/<field>`, `@@display-file/<field>` and `@@images/<field>[/<scale>]`
//! (the bytes of a file or image field, with `Range` and `If-None-Match` support), and the JSON
//! form of file and image fields in content answers and catalog items (the rules are in
//! [`crate::content::files`]).

use std::collections::BTreeMap;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use super::extract::Call;
use super::router::{Registry, RouteDef};
use crate::content::files::{self, Served, StoredFile};
use crate::core::error::{EngineError, Result};
use crate::core::http::{BlobStream, Response};
use crate::core::model::fields::FieldKind;
use crate::core::model::{ContentRecord, ContentType};
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register the download routes.
pub fn register(r: &mut Registry) {
    r.route(
        RouteDef::get("@download/{field}/{filename?}", download)
            .requires(Permission::View)
            .summary(
                "The bytes of file field `field` as an attachment (`Content-Disposition: \
                 attachment`), with `ETag`, `If-None-Match` (304) and one `Range` (206, 416)",
            ),
    );
    r.route(
        RouteDef::get("@display-file/{field}/{filename?}", display)
            .requires(Permission::View)
            .summary("The bytes of file field `field`, shown inline; as `@@download` otherwise"),
    );
    r.route(
        RouteDef::get("@images/{field}/{scale?}", images)
            .requires(Permission::View)
            .summary(
                "Image field `field` inline, or its scale `scale` (a size of \
                 `plone.allowed_sizes`; another name is a 404)",
            ),
    );
}

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
            format!("{prefix}@@images/{field}")
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

/// The stored file of field `name` of `obj`; a 404 when the type has no such file field or the
/// object has no file in it.
fn field_file(
    ctx: &Ctx<'_>,
    call: &Call<'_>,
    obj: &ContentRecord,
    name: &str,
) -> Result<(FieldKind, StoredFile)> {
    let ty = ctx.type_of(obj)?;
    let not_found = || EngineError::NotFound {
        url: call.route.url(&ctx.base_url),
        context: Some(ctx.url(&obj.path)),
    };
    let def = ty
        .field(name)
        .filter(|d| matches!(d.kind, FieldKind::File | FieldKind::Image))
        .ok_or_else(not_found)?;
    let file = files::stored(&obj.fields, name).ok_or_else(not_found)?;
    Ok((def.kind, file))
}

/// GET `@@download/<field>`: the file as an attachment.
pub fn download(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let field = call.param("field").unwrap_or("");
    let (_, file) = field_file(ctx, call, &obj, field)?;
    serve(ctx, call, whole(&file), Some(&file.filename), "attachment")
}

/// GET `@@display-file/<field>`: the file inline.
pub fn display(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let field = call.param("field").unwrap_or("");
    let (_, file) = field_file(ctx, call, &obj, field)?;
    serve(ctx, call, whole(&file), Some(&file.filename), "inline")
}

/// GET `@@images/<field>[/<scale>]`: the image, or one of its scales, inline.
pub fn images(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let field = call.param("field").unwrap_or("");
    let (kind, file) = field_file(ctx, call, &obj, field)?;
    match call.param("scale") {
        None => serve(ctx, call, whole(&file), Some(&file.filename), "inline"),
        Some(scale) => {
            if kind != FieldKind::Image {
                return Err(EngineError::NotFound {
                    url: call.route.url(&ctx.base_url),
                    context: Some(ctx.url(&obj.path)),
                });
            }
            let served = files::scale_bytes(ctx, &file, scale).map_err(|e| match e {
                EngineError::BadRequest(m) => EngineError::NotFound {
                    url: format!("{} ({m})", call.route.url(&ctx.base_url)),
                    context: Some(ctx.url(&obj.path)),
                },
                other => other,
            })?;
            serve(ctx, call, served, Some(&file.filename), "inline")
        }
    }
}

fn whole(file: &StoredFile) -> Served {
    Served::Blob {
        id: file.blob.clone(),
        size: file.size,
        content_type: file.content_type.clone(),
    }
}

/// Characters kept as they are in `filename*` (RFC 5987 `attr-char`).
const ATTR: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'!')
    .remove(b'#')
    .remove(b'$')
    .remove(b'&')
    .remove(b'+')
    .remove(b'-')
    .remove(b'.')
    .remove(b'^')
    .remove(b'_')
    .remove(b'`')
    .remove(b'|')
    .remove(b'~');

/// `attachment; filename="a.pdf"; filename*=UTF-8''a.pdf` (the plain name with anything outside
/// printable ASCII, quotes and backslashes replaced by `_`).
fn disposition(kind: &str, filename: Option<&str>) -> String {
    match filename.filter(|f| !f.is_empty()) {
        None => kind.to_string(),
        Some(name) => {
            let plain: String = name
                .chars()
                .map(|c| {
                    if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let encoded = utf8_percent_encode(name, ATTR);
            format!("{kind}; filename=\"{plain}\"; filename*=UTF-8''{encoded}")
        }
    }
}

/// A `Range: bytes=...` header read against `size`: `Ok(None)` for no range (or one this
/// server ignores, as HTTP allows: several ranges, another unit), the byte range
/// `start..end`, or a 416 when it lies outside the file.
pub fn parse_range(header: Option<&str>, size: u64) -> Result<Option<(u64, u64)>> {
    let Some(h) = header else { return Ok(None) };
    let Some(spec) = h.trim().strip_prefix("bytes=") else {
        return Ok(None);
    };
    if spec.contains(',') {
        return Ok(None);
    }
    let unsatisfiable = || EngineError::RangeNotSatisfiable {
        range: h.to_string(),
        size,
    };
    let (a, b) = spec.split_once('-').ok_or_else(unsatisfiable)?;
    let (a, b) = (a.trim(), b.trim());
    let range = if a.is_empty() {
        let n: u64 = b.parse().map_err(|_| unsatisfiable())?;
        if n == 0 {
            return Err(unsatisfiable());
        }
        (size.saturating_sub(n), size)
    } else {
        let start: u64 = a.parse().map_err(|_| unsatisfiable())?;
        let end = if b.is_empty() {
            size
        } else {
            let last: u64 = b.parse().map_err(|_| unsatisfiable())?;
            if last < start {
                return Err(unsatisfiable());
            }
            last.saturating_add(1).min(size)
        };
        (start, end)
    };
    if range.0 >= size {
        return Err(unsatisfiable());
    }
    Ok(Some(range))
}

/// The answer serving `served`: 200 (or 206 for a `Range`), 304 when `If-None-Match` names its
/// tag; the body streamed by the host when larger than
/// [`crate::EngineOptions::stream_downloads_over`]. Also serves users' portraits
/// ([`super::users`]).
pub(super) fn serve(
    ctx: &Ctx<'_>,
    call: &Call<'_>,
    served: Served,
    filename: Option<&str>,
    kind: &str,
) -> Result<Response> {
    let (tag, size, content_type) = match &served {
        Served::Blob {
            id,
            size,
            content_type,
        } => (format!("\"{id}\""), *size, content_type.clone()),
        Served::Made {
            bytes,
            content_type,
            etag,
        } => (
            format!("\"{etag}\""),
            bytes.len() as u64,
            content_type.clone(),
        ),
    };
    if call
        .req
        .header_value("if-none-match")
        .is_some_and(|h| h.split(',').any(|t| t.trim() == tag || t.trim() == "*"))
    {
        return Ok(Response::empty(304).with_header("ETag", &tag));
    }
    let if_range_ok = call
        .req
        .header_value("if-range")
        .is_none_or(|t| t.trim() == tag);
    let range = if if_range_ok {
        parse_range(call.req.header_value("range"), size)?
    } else {
        None
    };
    let (status, start, end) = match range {
        Some((s, e)) => (206, s, e),
        None => (200, 0, size),
    };
    let mut resp = Response::empty(status)
        .with_header("Content-Type", &content_type)
        .with_header("Content-Disposition", &disposition(kind, filename))
        .with_header("Accept-Ranges", "bytes")
        .with_header("ETag", &tag)
        .with_header("Cache-Control", "private, max-age=0, must-revalidate");
    if status == 206 {
        resp = resp.with_header(
            "Content-Range",
            &format!("bytes {start}-{}/{size}", end.saturating_sub(1)),
        );
    }
    match served {
        Served::Made { bytes, .. } => {
            resp.body = bytes[start as usize..end as usize].to_vec();
        }
        Served::Blob { id, .. } => {
            if end - start > ctx.core.options.stream_downloads_over {
                resp.stream = Some(BlobStream {
                    blob: id,
                    start,
                    end,
                });
            } else {
                resp.body = crate::content::blobs::read_range(ctx, &id, start, end)?;
            }
        }
    }
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(parse_range(None, 10).unwrap(), None);
        assert_eq!(parse_range(Some("bytes=0-3"), 10).unwrap(), Some((0, 4)));
        assert_eq!(parse_range(Some("bytes=5-"), 10).unwrap(), Some((5, 10)));
        assert_eq!(parse_range(Some("bytes=-3"), 10).unwrap(), Some((7, 10)));
        assert_eq!(parse_range(Some("bytes=8-100"), 10).unwrap(), Some((8, 10)));
        assert_eq!(parse_range(Some("bytes=0-1,3-4"), 10).unwrap(), None);
        assert!(parse_range(Some("bytes=10-"), 10).is_err());
        assert!(parse_range(Some("bytes=4-2"), 10).is_err());
        assert!(parse_range(Some("bytes=x-"), 10).is_err());
    }

    #[test]
    fn dispositions_carry_both_names() {
        assert_eq!(
            disposition("attachment", Some("Ä b.pdf")),
            "attachment; filename=\"_ b.pdf\"; filename*=UTF-8''%C3%84%20b.pdf"
        );
        assert_eq!(disposition("inline", None), "inline");
    }
}
