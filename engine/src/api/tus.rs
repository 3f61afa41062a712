//! tus 1.0.0 resumable uploads (`@tus-upload` adds a File or Image to a folder, `@tus-replace`
//! replaces an object's file): `OPTIONS` (the protocol), `POST` (start: `Upload-Length`,
//! `Upload-Metadata`), `HEAD` (the offset reached), `PATCH` (a piece at `Upload-Offset`, body
//! `application/offset+octet-stream`; the last piece creates or updates the object) and
//! `DELETE` (cancel). The rules are in [`crate::content::uploads`], [`crate::content::files`] and
//! [`crate::content::operations`] (the object a finished upload makes or changes).

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;

use super::extract::Call;
use super::router::{Carriage, RouteDef, RouteTable};
use crate::content::files;
use crate::content::operations::{self, Locks};
use crate::content::uploads::{self, Upload};
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access as _;
use crate::runtime::context::Ctx;

/// The protocol version spoken.
pub const TUS_VERSION: &str = "1.0.0";

/// Register the tus routes.
pub fn register(r: &mut RouteTable) {
    for (name, replace) in [("@tus-upload", false), ("@tus-replace", true)] {
        r.route(
            RouteDef::options(name, options)
                .summary("The tus protocol: version, extensions (creation, expiration, termination), largest upload"),
        );
        let post = RouteDef::post(name, if replace { post_replace } else { post_upload })
            .status(201)
            .summary(if replace {
                "Start replacing the object's file (Modify): `Upload-Length`, `Upload-Metadata`; 201 with the upload's `Location`"
            } else {
                "Start an upload of a new File or Image into this folder (Add portal content): `Upload-Length`, `Upload-Metadata` (filename, content-type, optional @type); 201 with the upload's `Location`"
            });
        r.route(if replace {
            post.requires(Permission::Modify)
        } else {
            post.requires(Permission::AddContent)
        });
    }
    r.route(
        RouteDef::get("@tus-upload/{id}", head)
            .checked_by_handler()
            .summary("`HEAD`: the upload's `Upload-Offset` and `Upload-Length` (its creator only)"),
    );
    r.route(
        RouteDef::patch("@tus-upload/{id}", patch)
            .carried(Carriage::Pieces)
            .checked_by_handler()
            .status(204)
            .summary(
                "A piece at `Upload-Offset` (409 when the upload is elsewhere); the last one \
                 creates the File or Image (its `Location`) or replaces the object's file",
            ),
    );
    r.route(
        RouteDef::delete("@tus-upload/{id}", cancel)
            .checked_by_handler()
            .status(204)
            .summary("Cancel the upload: its bytes are deleted"),
    );
}

fn tus(resp: Response) -> Response {
    resp.with_header("Tus-Resumable", TUS_VERSION)
}

/// OPTIONS: what this server speaks.
pub fn options(ctx: &mut Ctx<'_>, _call: &Call<'_>, _obj: ContentRecord) -> Result<Response> {
    let max = files::max_file_size(ctx)?;
    Ok(tus(Response::empty(204))
        .with_header("Tus-Version", TUS_VERSION)
        .with_header("Tus-Extension", "creation,expiration,termination")
        .with_header("Tus-Max-Size", &max.to_string()))
}

/// `Upload-Metadata`: comma-separated `key base64(value)` pairs; a value with a control
/// character (CR, LF, ...) is refused (400 naming its key): `filename` and `content-type` are
/// sent back as header values.
fn metadata(call: &Call<'_>) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let Some(h) = call.req.header_value("upload-metadata") else {
        return Ok(out);
    };
    for pair in h.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once(' ').unwrap_or((pair, ""));
        let decoded = B64
            .decode(value.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| {
                EngineError::bad_request(format!(
                    "Upload-Metadata: the value of '{key}' is not base64-encoded UTF-8"
                ))
            })?;
        if crate::core::model::fields::has_control_characters(&decoded) {
            return Err(EngineError::bad_request(format!(
                "Upload-Metadata: the value of '{key}' must not contain control characters \
                 (CR, LF, tab, ...)"
            )));
        }
        out.insert(key.to_string(), decoded);
    }
    Ok(out)
}

fn header_u64(call: &Call<'_>, name: &str) -> Result<u64> {
    let v = call
        .req
        .header_value(name)
        .ok_or_else(|| EngineError::bad_request(format!("The {name} header is required")))?;
    v.trim().parse().map_err(|_| {
        EngineError::bad_request(format!(
            "The {name} header must be a whole number of bytes, got '{v}'"
        ))
    })
}

fn caller(ctx: &Ctx<'_>) -> String {
    ctx.principal.login().unwrap_or("").to_string()
}

fn start(
    ctx: &mut Ctx<'_>,
    call: &Call<'_>,
    obj: &ContentRecord,
    replace: bool,
) -> Result<Response> {
    if replace {
        operations::file_field(ctx.type_of(obj)?.as_ref())?;
        crate::content::locking::check_can_change(ctx, call.lock_token(), obj)?;
    } else if !ctx.type_of(obj)?.folderish {
        return Err(EngineError::bad_request(format!(
            "Cannot upload into '{}': it is not folderish",
            ctx.url(&obj.path)
        )));
    }
    let length = header_u64(call, "Upload-Length")?;
    let meta = metadata(call)?;
    let who = caller(ctx);
    let upload = uploads::start(ctx, &obj.uid, replace, length, meta, &who)?;
    let location = format!("{}/@tus-upload/{}", ctx.url(&obj.path), upload.id);
    Ok(tus(Response::empty(201)).with_header("Location", &location))
}

/// POST `@tus-upload`: start adding a file.
pub fn post_upload(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    start(ctx, call, &obj, false)
}

/// POST `@tus-replace`: start replacing the object's file.
pub fn post_replace(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    start(ctx, call, &obj, true)
}

/// The upload named in the path, after the caller's right to it: Add portal content on the
/// folder (a new object) or Modify on the object (a replacement).
fn upload_of(ctx: &Ctx<'_>, call: &Call<'_>, obj: &ContentRecord) -> Result<Upload> {
    // Who may neither add here nor change this object has no upload here: 401 / 403.
    if !ctx.permitted(Permission::Modify, obj)? {
        ctx.require(Permission::AddContent, obj)?;
    }
    let id = call.param("id").unwrap_or("");
    let who = caller(ctx);
    let upload = uploads::get(ctx, id, &obj.uid, &who).map_err(|_| EngineError::NotFound {
        url: call.route.url(&ctx.base_url),
        context: Some(ctx.url(&obj.path)),
    })?;
    let needed = if upload.replace {
        Permission::Modify
    } else {
        Permission::AddContent
    };
    ctx.require(needed, obj)?;
    Ok(upload)
}

/// HEAD (GET) `@tus-upload/<id>`: where the upload is.
pub fn head(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    ctx.require(Permission::View, &obj)?;
    let upload = upload_of(ctx, call, &obj)?;
    Ok(tus(Response::empty(200))
        .with_header("Upload-Offset", &upload.offset.to_string())
        .with_header("Upload-Length", &upload.length.to_string())
        .with_header("Cache-Control", "no-store"))
}

/// DELETE `@tus-upload/<id>`: cancel it.
pub fn cancel(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    ctx.require(Permission::View, &obj)?;
    let upload = upload_of(ctx, call, &obj)?;
    uploads::cancel(ctx, &upload)?;
    Ok(tus(Response::empty(204)))
}

/// PATCH `@tus-upload/<id>`: one piece; the last one makes the file.
pub fn patch(ctx: &mut Ctx<'_>, call: &Call<'_>, mut obj: ContentRecord) -> Result<Response> {
    ctx.require(Permission::View, &obj)?;
    let upload = upload_of(ctx, call, &obj)?;
    let ct = call.req.header_value("content-type").unwrap_or("");
    if ct.split(';').next().map(str::trim) != Some("application/offset+octet-stream") {
        return Err(EngineError::UnsupportedMediaType(format!(
            "A tus PATCH body must be application/offset+octet-stream, got '{ct}'"
        )));
    }
    let offset = header_u64(call, "Upload-Offset")?;
    let upload = uploads::append(ctx, upload, offset, &call.req.body)?;
    let mut resp =
        tus(Response::empty(204)).with_header("Upload-Offset", &upload.offset.to_string());
    if upload.complete() {
        let path = if upload.replace {
            let locks = Locks::Honour(call.lock_token().map(str::to_string));
            operations::replace_file(ctx, &mut obj, &upload, &locks)?;
            obj.path.clone()
        } else {
            operations::create_from_upload(ctx, &mut obj, &upload)?.path
        };
        resp = resp.with_header("Location", &ctx.url(&path));
    }
    Ok(resp)
}
