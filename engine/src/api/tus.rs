//! tus 1.0.0 resumable uploads (`@tus-upload` adds a File or Image to a folder, `@tus-replace`
//! replaces an object's file): `OPTIONS` (the protocol), `POST` (start: `Upload-Length`,
//! `Upload-Metadata`), `HEAD` (the offset reached), `PATCH` (a piece at `Upload-Offset`, body
//! `application/offset+octet-stream`; the last piece creates or updates the object) and
//! `DELETE` (cancel). The rules are in [`crate::content::uploads`] and [`crate::content::files`].

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::{json, Map};

use super::extract::Call;
use super::router::{Carriage, Registry, RouteDef};
use crate::content::files::{self, StoredFile};
use crate::content::tree;
use crate::content::uploads::{self, Upload};
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::fields::FieldKind;
use crate::core::model::{ids, ContentRecord, ContentType};
use crate::core::security::Permission;
use crate::people::permissions::Access as _;
use crate::runtime::context::Ctx;

/// The protocol version spoken.
pub const TUS_VERSION: &str = "1.0.0";

/// Register the tus routes.
pub fn register(r: &mut Registry) {
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

/// `Upload-Metadata`: comma-separated `key base64(value)` pairs.
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
        file_field(ctx.type_of(obj)?.as_ref())?;
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
            crate::content::locking::check_can_change(ctx, call.lock_token(), &obj)?;
            replace_file(ctx, &mut obj, &upload)?;
            obj.path.clone()
        } else {
            add_file(ctx, &mut obj, &upload)?
        };
        resp = resp.with_header("Location", &ctx.url(&path));
    }
    Ok(resp)
}

/// The first file or image field of `ty`; a 400 when it has none.
fn file_field(ty: &ContentType) -> Result<(String, FieldKind)> {
    ty.fields
        .iter()
        .find(|f| matches!(f.kind, FieldKind::File | FieldKind::Image))
        .map(|f| (f.name.clone(), f.kind))
        .ok_or_else(|| {
            EngineError::bad_request(format!("A {} has no file or image field", ty.title))
        })
}

/// The stored file a finished upload becomes in field `field` of `owner`.
fn stored_file(
    ctx: &mut Ctx<'_>,
    upload: &Upload,
    owner: &str,
    field: &str,
    kind: FieldKind,
) -> Result<StoredFile> {
    let filename = upload
        .metadata
        .get("filename")
        .cloned()
        .unwrap_or_else(|| "upload".into());
    let content_type = upload
        .metadata
        .get("content-type")
        .or_else(|| upload.metadata.get("filetype"))
        .cloned()
        .unwrap_or_else(|| files::guess_content_type(&filename).to_string());
    let decoded = if kind == FieldKind::Image {
        let bytes = crate::content::blobs::read_all(ctx, &upload.blob)?;
        Some(files::decode(field, &bytes)?)
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
        decoded,
    )
}

/// Add the File (or Image, for an image content type; or the `@type` of the metadata) a
/// finished upload makes inside `parent`; its path.
fn add_file(ctx: &mut Ctx<'_>, parent: &mut ContentRecord, upload: &Upload) -> Result<String> {
    let parent_type = ctx.type_of(parent)?;
    let content_type = upload
        .metadata
        .get("content-type")
        .or_else(|| upload.metadata.get("filetype"))
        .cloned()
        .unwrap_or_default();
    let type_name = upload.metadata.get("@type").cloned().unwrap_or_else(|| {
        if content_type.starts_with("image/") {
            "Image".into()
        } else {
            "File".into()
        }
    });
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
    let (field, kind) = file_field(&ty)?;
    let login = caller(ctx);
    let filename = upload
        .metadata
        .get("filename")
        .cloned()
        .unwrap_or_else(|| "upload".into());
    let mut fields = Map::new();
    fields.insert("title".into(), json!(filename));
    fields.insert("creators".into(), json!([login]));
    if ty.field("language").is_some() {
        let lang = crate::content::multilingual::language_for_new_child(ctx, parent)?;
        fields.insert("language".into(), json!(lang));
    }
    let base = ids::normalize(&filename);
    let mut id = base.clone();
    let mut n = 0;
    while tree::has_child(ctx, parent, &id)? {
        n += 1;
        id = format!("{base}-{n}");
    }
    let mut rec = tree::new_record(ctx, &ty, &id, &login, fields);
    let stored = stored_file(ctx, upload, &rec.uid.clone(), &field, kind)?;
    rec.fields.insert(field, serde_json::to_value(stored)?);
    tree::add(ctx, parent, &mut rec, None)?;
    Ok(rec.path)
}

/// Put a finished upload in the first file field of `obj`, releasing the file it had (unless
/// the type keeps versions, one of which still names it).
fn replace_file(ctx: &mut Ctx<'_>, obj: &mut ContentRecord, upload: &Upload) -> Result<()> {
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
