//! Downloads: `@@download/<field>`, `@@display-file/<field>` and `@@images/<field>[/<scale>]`
//! (the bytes of a file or image field, with `Range` and `If-None-Match` support), and the JSON
//! form of file and image fields in content answers and catalog items (the rules are in
//! [`crate::content::files`]).

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use crate::content::files::{self, Served, StoredFile};
use crate::core::error::{EngineError, Result};
use crate::core::http::{BlobStream, Response};
use crate::core::model::fields::FieldKind;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register the download routes.
pub fn register(r: &mut RouteTable) {
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

/// GET `@@images/<field>[/<scale>]` (or `@@images/<field>.<ext>`): the image, or one of its
/// scales, inline.
pub fn images(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let named = call.param("field").unwrap_or("");
    // `@@images/<field>.<ext>` (the download URL the field's JSON gives) is the image itself.
    let field = match named.rsplit_once('.') {
        Some((f, _)) if call.param("scale").is_none() && !f.is_empty() => f,
        _ => named,
    };
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
