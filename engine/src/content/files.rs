//! Where files and images of content objects are decided: what an upload must be, how it is
//! stored (a blob, [`crate::content::blobs`]), the image scales made from it, and which bytes a download
//! or a scale serves.
//!
//! A file field stores a [`StoredFile`] (the blob's id, file name, content type, size; for images
//! the width, height and one [`StoredScale`] per size of `plone.allowed_sizes`). Scales are made
//! when the image is stored, each a blob of its own (a scale as large as the image is the image's
//! own blob), so serving one is a read. A new image (or file) is a new blob: the old blob and its
//! scales are released in the same transaction, so nothing stale stays behind and every URL's
//! `ETag` (the blob id) changes. A size added to `plone.allowed_sizes` later is made on request
//! ([`scale_bytes`]) until the image is stored again.
//!
//! Limits: an upload larger than `plone.max_file_size` is a 413 naming the field; an image field
//! whose bytes do not decode as JPEG, PNG, GIF or WebP is a 400. Either way the request changes
//! nothing (the blobs written so far go with its transaction).

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::blobs;
use crate::core::error::{EngineError, Result};
use crate::core::images::{ImageCodec, ImageError, ImageInfo};
use crate::core::model::fields::{FieldDef, FieldKind};
use crate::runtime::context::Ctx;
use crate::site::configuration;

/// The stored value of a file or image field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredFile {
    /// The blob holding the bytes.
    pub blob: String,
    /// The file name the client gave.
    pub filename: String,
    /// The media type.
    #[serde(rename = "content-type")]
    pub content_type: String,
    /// Bytes.
    pub size: u64,
    /// Pixels across (images).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    /// Pixels down (images).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    /// The scales made when the image was stored, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scales: BTreeMap<String, StoredScale>,
}

/// One stored scale of an image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredScale {
    /// The blob holding it (the image's own blob when the scale is the image's size).
    pub blob: String,
    /// Pixels across.
    pub width: u32,
    /// Pixels down.
    pub height: u32,
    /// Bytes.
    pub size: u64,
    /// Its media type.
    #[serde(rename = "content-type")]
    pub content_type: String,
}

/// What a client sends for a file field (plone.restapi's form).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Upload {
    /// The bytes: base64 text when `encoding` is `base64`, else the text itself.
    pub data: String,
    /// `base64`, or absent / `utf-8` / `utf8` for text.
    #[serde(default)]
    pub encoding: Option<String>,
    /// The file name.
    #[serde(default)]
    pub filename: Option<String>,
    /// The media type (detected for images).
    #[serde(default, rename = "content-type")]
    pub content_type: Option<String>,
}

/// One size of `plone.allowed_sizes`: a scale fits inside `width` x `height`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleSize {
    /// Its name (`preview`).
    pub name: String,
    /// The box's width.
    pub width: u32,
    /// The box's height.
    pub height: u32,
}

/// The sizes of the site's `plone.allowed_sizes` (entries that do not read `name w:h` are
/// skipped).
pub fn allowed_sizes(ctx: &Ctx<'_>) -> Result<Vec<ScaleSize>> {
    let v = configuration::get(ctx, configuration::ALLOWED_SIZES)?;
    Ok(v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter_map(parse_size)
                .collect()
        })
        .unwrap_or_default())
}

/// `name w:h` as a [`ScaleSize`].
pub fn parse_size(s: &str) -> Option<ScaleSize> {
    let (name, dims) = s.trim().split_once(' ')?;
    let (w, h) = dims.trim().split_once(':')?;
    Some(ScaleSize {
        name: name.to_string(),
        width: w.trim().parse().ok()?,
        height: h.trim().parse().ok()?,
    })
}

/// The largest file an upload may store (`plone.max_file_size`, bytes).
pub fn max_file_size(ctx: &Ctx<'_>) -> Result<u64> {
    Ok(configuration::get(ctx, configuration::MAX_FILE_SIZE)?
        .as_u64()
        .unwrap_or(u64::MAX))
}

/// A 413 unless `size` fits `plone.max_file_size`.
pub fn check_size(ctx: &Ctx<'_>, field: &str, size: u64) -> Result<()> {
    let limit = max_file_size(ctx)?;
    if size > limit {
        return Err(EngineError::FileTooLarge {
            field: field.to_string(),
            size,
            limit,
        });
    }
    Ok(())
}

/// The stored file of field `name` of an object's fields, if it has one.
pub fn stored(fields: &serde_json::Map<String, Value>, name: &str) -> Option<StoredFile> {
    fields
        .get(name)
        .filter(|v| v.is_object())
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}

/// Turn what a client sent for file or image field `def` of object `owner` into the stored form,
/// writing the blob (and scales) in the request's transaction:
/// - an upload `{data, encoding, filename, content-type}` stores a new file and releases the
///   blobs of `previous`;
/// - `null` clears the field (releasing the blobs);
/// - any other object (the serialized field a form sends back unchanged) keeps `previous`.
///
/// With `history_keeps` (the object's type keeps versions), the blobs of `previous` are not
/// released: an older version still names them, and reverting to it must find its file. They go
/// with the object.
pub fn accept(
    ctx: &mut Ctx<'_>,
    owner: &str,
    def: &FieldDef,
    value: Value,
    previous: Option<&Value>,
    history_keeps: bool,
) -> Result<Value> {
    let previous_file = previous
        .filter(|v| v.is_object())
        .and_then(|v| serde_json::from_value::<StoredFile>(v.clone()).ok())
        .filter(|_| !history_keeps);
    let upload = match value {
        Value::Null => {
            if let Some(p) = &previous_file {
                release(ctx, owner, p)?;
            }
            return Ok(Value::Null);
        }
        Value::Object(ref o) if !o.contains_key("data") => {
            return match previous {
                Some(p) => Ok(p.clone()),
                None => Err(EngineError::bad_request(format!(
                    "Field '{}' must be an upload {{data, encoding, filename, content-type}}",
                    def.name
                ))),
            };
        }
        Value::Object(_) => serde_json::from_value::<Upload>(value)
            .map_err(|e| EngineError::bad_request(format!("Field '{}': {e}", def.name)))?,
        other => {
            return Err(EngineError::bad_request(format!(
                "Field '{}' must be an upload {{data, encoding, filename, content-type}} or null, \
                 got {}",
                def.name,
                crate::core::model::fields::json_kind(&other)
            )))
        }
    };
    let bytes = match upload.encoding.as_deref() {
        Some("base64") => B64.decode(upload.data.trim().as_bytes()).map_err(|e| {
            EngineError::bad_request(format!(
                "Field '{}': 'data' is not valid base64 ({e})",
                def.name
            ))
        })?,
        None | Some("utf-8") | Some("utf8") => upload.data.into_bytes(),
        Some(other) => {
            return Err(EngineError::bad_request(format!(
                "Field '{}': unknown encoding '{other}' (use 'base64')",
                def.name
            )))
        }
    };
    check_size(ctx, &def.name, bytes.len() as u64)?;
    let filename = upload.filename.unwrap_or_default();
    let content_type = upload
        .content_type
        .filter(|c| !c.trim().is_empty())
        .unwrap_or_else(|| guess_content_type(&filename).to_string());
    let stored = store_new(ctx, owner, def, &bytes, filename, content_type)?;
    if let Some(p) = &previous_file {
        release(ctx, owner, p)?;
    }
    Ok(serde_json::to_value(stored)?)
}

/// Store `bytes` as the new content of field `def` of `owner`: a blob, and for an image its
/// dimensions and scales (a 400 when it is not an image this engine decodes).
fn store_new(
    ctx: &mut Ctx<'_>,
    owner: &str,
    def: &FieldDef,
    bytes: &[u8],
    filename: String,
    content_type: String,
) -> Result<StoredFile> {
    let decoded = if def.kind == FieldKind::Image {
        Some(decode(ctx, &def.name, bytes)?)
    } else {
        None
    };
    let blob = blobs::store(ctx, owner, bytes)?;
    finish(
        ctx,
        owner,
        blob,
        bytes.len() as u64,
        filename,
        content_type,
        decoded.map(|info| (info, bytes)),
    )
}

/// Complete a stored file whose bytes are blob `blob` (already owned by `owner`): for an image
/// (`decoded`: what [`decode`] read and the bytes), its dimensions, detected type and scales.
pub fn finish(
    ctx: &mut Ctx<'_>,
    owner: &str,
    blob: String,
    size: u64,
    filename: String,
    content_type: String,
    decoded: Option<(ImageInfo, &[u8])>,
) -> Result<StoredFile> {
    let mut file = StoredFile {
        blob,
        filename,
        content_type,
        size,
        width: None,
        height: None,
        scales: BTreeMap::new(),
    };
    if let Some((info, bytes)) = decoded {
        file.content_type = info.kind.mime().to_string();
        file.width = Some(info.width);
        file.height = Some(info.height);
        file.scales = make_scales(ctx, owner, &file, &info, bytes)?;
    }
    Ok(file)
}

/// Read an image with the host's codec ([`crate::core::images`]); a 400 naming `field` when the
/// bytes are not a JPEG, PNG, GIF or WebP image.
pub fn decode(ctx: &Ctx<'_>, field: &str, bytes: &[u8]) -> Result<ImageInfo> {
    read_image(ctx.core.options.images.as_ref(), field, bytes)
}

/// [`decode`] with a given codec.
pub fn read_image(codec: &dyn ImageCodec, field: &str, bytes: &[u8]) -> Result<ImageInfo> {
    codec.read(bytes).map_err(|e| codec_error(field, e))
}

/// `bytes` (an image read as `info`) scaled to each of `sizes` with `codec`.
pub fn scale_image(
    codec: &dyn ImageCodec,
    field: &str,
    bytes: &[u8],
    info: &ImageInfo,
    sizes: &[(u32, u32)],
) -> Result<Vec<Vec<u8>>> {
    let made = codec
        .scale(bytes, info.kind, sizes)
        .map_err(|e| codec_error(field, e))?;
    if made.len() != sizes.len() {
        return Err(EngineError::Internal(format!(
            "the image codec made {} scales of {}",
            made.len(),
            sizes.len()
        )));
    }
    Ok(made)
}

fn codec_error(field: &str, e: ImageError) -> EngineError {
    match e {
        ImageError::Pending => EngineError::ImageWorkPending,
        ImageError::Unreadable(why) => EngineError::bad_request(format!(
            "Field '{field}': the upload is not an image this site can read (JPEG, PNG, GIF or \
             WebP): {why}"
        )),
    }
}

/// The dimensions of a scale of a `w` x `h` image that fits inside `size`'s box: the image's
/// proportions, never larger than the image, at least one pixel.
pub fn fit(w: u32, h: u32, size: &ScaleSize) -> (u32, u32) {
    if w <= size.width && h <= size.height {
        return (w, h);
    }
    let ratio = (size.width as f64 / w as f64).min(size.height as f64 / h as f64);
    let sw = ((w as f64 * ratio).round() as u32).clamp(1, w);
    let sh = ((h as f64 * ratio).round() as u32).clamp(1, h);
    (sw, sh)
}

/// Make every scale of `plone.allowed_sizes` of image `file` (read as `info` from `bytes`):
/// the host's codec makes each distinct size once, largest first; a size as large as the image
/// is the image's own blob.
fn make_scales(
    ctx: &mut Ctx<'_>,
    owner: &str,
    file: &StoredFile,
    info: &ImageInfo,
    bytes: &[u8],
) -> Result<BTreeMap<String, StoredScale>> {
    let mut sizes: Vec<(ScaleSize, (u32, u32))> = allowed_sizes(ctx)?
        .into_iter()
        .map(|s| {
            let d = fit(info.width, info.height, &s);
            (s, d)
        })
        .collect();
    sizes.sort_by_key(|(_, (w, h))| std::cmp::Reverse(u64::from(*w) * u64::from(*h)));
    let mut wanted: Vec<(u32, u32)> = Vec::new();
    for (_, d) in &sizes {
        if *d != (info.width, info.height) && !wanted.contains(d) {
            wanted.push(*d);
        }
    }
    let codec = ctx.core.options.images.clone();
    let mut encoded = scale_image(codec.as_ref(), "image", bytes, info, &wanted)?.into_iter();
    let content_type = info.kind.scale_mime();
    let mut out = BTreeMap::new();
    let mut made: BTreeMap<(u32, u32), StoredScale> = BTreeMap::new();
    for (size, (w, h)) in sizes {
        if (w, h) == (info.width, info.height) {
            out.insert(
                size.name,
                StoredScale {
                    blob: file.blob.clone(),
                    width: w,
                    height: h,
                    size: file.size,
                    content_type: file.content_type.clone(),
                },
            );
            continue;
        }
        if let Some(s) = made.get(&(w, h)) {
            out.insert(size.name, s.clone());
            continue;
        }
        let bytes = encoded.next().unwrap_or_default();
        let blob = blobs::store(ctx, owner, &bytes)?;
        let s = StoredScale {
            blob,
            width: w,
            height: h,
            size: bytes.len() as u64,
            content_type: content_type.to_string(),
        };
        made.insert((w, h), s.clone());
        out.insert(size.name, s);
    }
    Ok(out)
}

/// Release the blobs of `file` (its bytes and its scales) owned by `owner`.
pub fn release(ctx: &mut Ctx<'_>, owner: &str, file: &StoredFile) -> Result<()> {
    blobs::release(ctx, owner, &file.blob)?;
    for s in file.scales.values() {
        if s.blob != file.blob {
            blobs::release(ctx, owner, &s.blob)?;
        }
    }
    Ok(())
}

/// Bytes to serve: a stored blob (or, for a scale not stored, bytes made now), with its type.
#[derive(Debug, Clone)]
pub enum Served {
    /// A blob: its id, size and media type.
    Blob {
        /// The blob id (also the `ETag`).
        id: String,
        /// Bytes.
        size: u64,
        /// Media type.
        content_type: String,
    },
    /// A scale made for this request (a size added after the image was stored).
    Made {
        /// The bytes.
        bytes: Vec<u8>,
        /// Media type.
        content_type: String,
        /// A tag naming the source blob and the size.
        etag: String,
    },
}

/// The bytes of scale `scale` of image `file`: the stored scale, or one made now for a size of
/// `plone.allowed_sizes` the image was stored without; a 404 for a name that is not a size.
pub fn scale_bytes(ctx: &Ctx<'_>, file: &StoredFile, scale: &str) -> Result<Served> {
    if let Some(s) = file.scales.get(scale) {
        return Ok(Served::Blob {
            id: s.blob.clone(),
            size: s.size,
            content_type: s.content_type.clone(),
        });
    }
    let size = allowed_sizes(ctx)?
        .into_iter()
        .find(|s| s.name == scale)
        .ok_or_else(|| {
            EngineError::bad_request(format!(
                "Unknown image scale '{scale}': the sizes are those of plone.allowed_sizes"
            ))
        })?;
    let bytes = blobs::read_all(ctx, &file.blob)?;
    let codec = ctx.core.options.images.as_ref();
    let info = read_image(codec, "image", &bytes)?;
    let dims = fit(info.width, info.height, &size);
    let bytes = scale_image(codec, "image", &bytes, &info, &[dims])?
        .pop()
        .unwrap_or_default();
    Ok(Served::Made {
        bytes,
        content_type: info.kind.scale_mime().to_string(),
        etag: format!("{}-{}", file.blob, size.name),
    })
}

/// The media type a file name suggests (for uploads that name none).
pub fn guess_content_type(filename: &str) -> &'static str {
    let ext = filename
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "txt" => "text/plain",
        "html" | "htm" => "text/html",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "json" => "application/json",
        "csv" => "text/csv",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_keep_proportions_and_never_grow() {
        let preview = parse_size("preview 400:65536").unwrap();
        assert_eq!(fit(4000, 3000, &preview), (400, 300));
        assert_eq!(fit(215, 56, &preview), (215, 56));
        let icon = parse_size("icon 32:32").unwrap();
        assert_eq!(fit(215, 56, &icon), (32, 8));
        assert_eq!(fit(1, 5000, &icon), (1, 32));
        assert!(parse_size("bad").is_none());
    }

    #[cfg(feature = "image-codecs")]
    #[test]
    fn broken_images_are_refused() {
        let codec = crate::core::images::RustCodec::default();
        assert!(read_image(&codec, "image", b"not an image at all").is_err());
        // A PNG signature with nothing after it.
        assert!(read_image(&codec, "image", b"\x89PNG\r\n\x1a\n").is_err());
    }
}
