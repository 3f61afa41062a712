//! Importing a server's representation of an object into the replica's local store, and removing
//! objects the server no longer shows.
//!
//! What is kept of a server object: its uid (the site root keeps its local uid, mapped under
//! `H:u:`/`H:U:`), id, path, type, creation and modification dates, workflow state, revision (so
//! the local `ETag` names the same revision) and the field values of its type, turned back into
//! their stored form (`language` from `{token, title}`, links in blocks from the server's URLs to
//! `resolveuid` form). Not replicated: file and image fields (the bytes stay on the server),
//! history, comments, local roles and sharing, locks; the local copy's history starts with the
//! import. Every change goes through [`crate::content::operations`] ([`operations::mirror`],
//! [`operations::delete`]), so the catalog and the other subscribers see `Added`, `Modified` and
//! `Removed` events as for any local change.

use serde_json::{Map, Value};

use crate::core::error::{EngineError, Result};
use crate::core::keys;
use crate::core::model::fields::FieldKind;
use crate::runtime::context::Ctx;
use crate::{content::operations, content::tree};

/// What [`import`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Imported {
    /// The object was added locally (its local uid).
    Added(String),
    /// The local copy was updated (its local uid).
    Updated(String),
    /// The object could not be placed: its parent is not in the replica (yet).
    NoParent,
    /// The local object at that path has pending writes: left as it is.
    Busy,
    /// The object moved or was renamed on the server: the local copy was removed, and the
    /// replica should download everything again to place its subtree.
    Moved,
}

/// The site path of an `@id` of the server `server` (`""` for the root), or `None` when the URL
/// is not under it.
pub fn server_path(server: &str, at_id: &str) -> Option<String> {
    let rest = at_id.strip_prefix(server.trim_end_matches('/'))?;
    let rest = rest.trim_end_matches('/');
    if rest.is_empty() || rest.starts_with('/') {
        Some(rest.to_string())
    } else {
        None
    }
}

/// The local uid of the server object `server_uid`.
pub fn local_uid(ctx: &Ctx<'_>, server_uid: &str) -> Result<String> {
    Ok(match ctx.get(&keys::replica_local_uid(server_uid))? {
        Some(b) => String::from_utf8_lossy(&b).into_owned(),
        None => server_uid.to_string(),
    })
}

/// The server uid of the local object `local`.
pub fn server_uid(ctx: &Ctx<'_>, local: &str) -> Result<String> {
    Ok(match ctx.get(&keys::replica_server_uid(local))? {
        Some(b) => String::from_utf8_lossy(&b).into_owned(),
        None => local.to_string(),
    })
}

/// The revision named by an `ETag` of the form `"<uid>-<rev>"`.
fn etag_rev(etag: &str) -> Option<u64> {
    etag.trim_matches('"').rsplit_once('-')?.1.parse().ok()
}

/// Import the server's representation `obj` (a content GET's body) with its `ETag` `version`.
/// `owner` owns it locally (the replica's user); `busy` tells whether a local uid has pending writes (its copy is then left alone).
pub fn import(
    ctx: &mut Ctx<'_>,
    server: &str,
    obj: &Value,
    version: Option<&str>,
    owner: &str,
    busy: &dyn Fn(&str) -> bool,
) -> Result<Imported> {
    let bad = |what: &str| EngineError::bad_request(format!("server object without {what}"));
    let suid = obj
        .get("UID")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("UID"))?;
    let at_id = obj
        .get("@id")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("@id"))?;
    let type_name = obj
        .get("@type")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("@type"))?;
    let path = server_path(server, at_id).ok_or_else(|| bad("an @id on this server"))?;
    if type_name == crate::content::multilingual::profiles::LRF
        || type_name == crate::content::multilingual::LIF
    {
        // The server's language root folders and their language independent folders: their
        // types come with the multilingual profile, which the replica's own site need not have
        // installed.
        crate::content::multilingual::profiles::ensure_lrf_type(ctx)?;
    }
    let ty = ctx
        .types()?
        .get(type_name)
        .ok_or_else(|| EngineError::bad_request(format!("unknown type {type_name:?}")))?;
    let fields = stored_fields(ctx, server, &ty, obj)?;
    let rev = version.and_then(etag_rev);
    let date = |name: &str| {
        obj.get(name)
            .and_then(Value::as_str)
            .and_then(crate::core::model::fields::parse_datetime)
    };
    let review_state = obj
        .get("review_state")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);

    let luid = if path.is_empty() {
        // The root keeps its local uid; remember which server object it is.
        let root = tree::root(ctx)?;
        if root.uid != suid {
            ctx.put(&keys::replica_local_uid(suid), root.uid.as_bytes())?;
            ctx.put(&keys::replica_server_uid(&root.uid), suid.as_bytes())?;
        }
        root.uid
    } else {
        local_uid(ctx, suid)?
    };
    if busy(&luid) {
        return Ok(Imported::Busy);
    }
    // Another object holds the path locally (a stale copy): drop it unless it has writes waiting.
    if let Some(other) = tree::at_path(ctx, &path)? {
        if other.uid != luid {
            if busy(&other.uid) {
                return Ok(Imported::Busy);
            }
            remove(ctx, &other.uid)?;
        }
    }
    let existing = tree::load(ctx, &luid)?;
    if let Some(rec) = &existing {
        if rec.path != path {
            remove(ctx, &luid)?;
            return Ok(Imported::Moved);
        }
    }
    if let Some(v) = version {
        ctx.put(&keys::replica_version(&luid), v.as_bytes())?;
    }
    let cmd = operations::Mirror {
        uid: luid.clone(),
        path,
        type_name: type_name.to_string(),
        owner: owner.to_string(),
        fields,
        review_state,
        created: date("created"),
        modified: date("modified"),
        rev,
    };
    Ok(match operations::mirror(ctx, existing, cmd)? {
        operations::Mirrored::Added => Imported::Added(luid),
        operations::Mirrored::Updated => Imported::Updated(luid),
        operations::Mirrored::NoParent => Imported::NoParent,
    })
}

/// The field values of `obj` (a server representation) in their stored form: the fields of `ty`
/// (file and image fields left out: their bytes stay on the server) and `layout`. A value the
/// local schema refuses is left out too.
fn stored_fields(
    ctx: &Ctx<'_>,
    server: &str,
    ty: &crate::core::model::ContentType,
    obj: &Value,
) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    let Some(map) = obj.as_object() else {
        return Ok(out);
    };
    for (key, value) in map {
        if key == "layout" {
            if let Some(s) = value.as_str().filter(|s| !s.is_empty()) {
                out.insert(key.clone(), Value::String(s.to_string()));
            }
            continue;
        }
        let Some(def) = ty.field(key) else { continue };
        if matches!(def.kind, FieldKind::File | FieldKind::Image) || value.is_null() {
            continue;
        }
        let mut value = value.clone();
        match def.kind {
            FieldKind::Language => {
                if let Some(token) = value.get("token").cloned() {
                    value = token;
                }
            }
            FieldKind::Blocks => {
                strip_server(&mut value, server);
                crate::content::links::to_stored(ctx, &mut value)?;
            }
            _ => {}
        }
        if let Ok(v) = def.validate(&value) {
            out.insert(key.clone(), v);
        }
    }
    Ok(out)
}

/// Turn absolute URLs of the server inside `v` into site paths (`/a/b`), which
/// [`crate::content::links::to_stored`] resolves.
fn strip_server(v: &mut Value, server: &str) {
    let server = server.trim_end_matches('/');
    match v {
        Value::String(s) => {
            if let Some(rest) = s.strip_prefix(server) {
                if rest.is_empty() || rest.starts_with(['/', '#', '?']) {
                    *s = if rest.is_empty() {
                        "/".to_string()
                    } else {
                        rest.to_string()
                    };
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|v| strip_server(v, server)),
        Value::Object(m) => m.values_mut().for_each(|v| strip_server(v, server)),
        _ => {}
    }
}

/// Remove the local object `local_uid` and everything below it (nothing when it is not there,
/// or is the site root). Its replica bookkeeping goes with it.
pub fn remove(ctx: &mut Ctx<'_>, local_uid: &str) -> Result<bool> {
    let Some(rec) = tree::load(ctx, local_uid)? else {
        return Ok(false);
    };
    if rec.is_root() {
        return Ok(false);
    }
    // The server removed it: the local copy goes for good, whatever its lock or bin.
    let cmd = operations::Delete {
        locks: operations::Locks::Bypass,
        purge: true,
    };
    let members = operations::delete(ctx, &rec, &cmd)?;
    for m in &members {
        ctx.delete(&keys::replica_version(&m.uid))?;
    }
    Ok(true)
}
