//! Where resumable (tus) uploads are decided: an upload is announced with its length, receives
//! its bytes in pieces at the offset it has reached, and becomes a file when complete.
//!
//! An unfinished upload is `T:<id>` ([`Upload`]) plus a blob ([`crate::content::blobs`]) holding the bytes
//! received so far; each piece is appended in its request's transaction, so a piece either lands
//! whole or not at all, and the offset a client reads back (`HEAD`) is always where to resume.
//! A piece sent at another offset is a 409. An upload that is not finished within
//! [`EXPIRY_SECS`] of its last piece expires: [`expire`] (run whenever an upload starts) deletes
//! it and its bytes, so an aborted upload leaves nothing behind. A finished upload's blob is
//! handed to the object it becomes ([`take_finished`]).
//!
//! Every change announces itself with [`Event::UploadChanged`].

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::content::blobs::{self, BlobWriter};
use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::runtime::context::Ctx;

/// Seconds an unfinished upload lives after its last piece (a day).
pub const EXPIRY_SECS: i64 = 24 * 3600;

/// An unfinished upload (`T:<id>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Upload {
    /// Its id.
    pub id: String,
    /// The blob holding the bytes received.
    pub blob: String,
    /// The announced length.
    pub length: u64,
    /// Bytes received.
    pub offset: u64,
    /// `Upload-Metadata`: `filename`, `content-type`, `@type`, ...
    pub metadata: BTreeMap<String, String>,
    /// The uid of the folder it adds to, or of the object whose file it replaces.
    pub target: String,
    /// Whether it replaces the target's file (`@tus-replace`) rather than adding an object.
    pub replace: bool,
    /// Who started it (only they may continue it).
    pub creator: String,
    /// When it expires unless a piece arrives first.
    pub expires: DateTime<Utc>,
}

impl Upload {
    /// Whether every announced byte has arrived.
    pub fn complete(&self) -> bool {
        self.offset == self.length
    }
}

/// Start an upload of `length` bytes into `target` by `creator`: a 413 when longer than
/// `plone.max_file_size`. Expired uploads are removed first.
pub fn start(
    ctx: &mut Ctx<'_>,
    target: &str,
    replace: bool,
    length: u64,
    metadata: BTreeMap<String, String>,
    creator: &str,
) -> Result<Upload> {
    expire(ctx)?;
    crate::content::files::check_size(ctx, "upload", length)?;
    let writer = BlobWriter::create(ctx)?;
    let blob = writer.id().to_string();
    writer.finish(ctx)?;
    let upload = Upload {
        id: ctx.new_uid(),
        blob,
        length,
        offset: 0,
        metadata,
        target: target.to_string(),
        replace,
        creator: creator.to_string(),
        expires: ctx.now() + Duration::seconds(EXPIRY_SECS),
    };
    ctx.put_json(&keys::upload(&upload.id), &upload)?;
    ctx.emit(Event::UploadChanged {
        id: upload.id.clone(),
        offset: 0,
    });
    Ok(upload)
}

/// The unfinished upload `id` started by `creator` into `target`; a 404 when there is none (or
/// it expired, or it is someone else's or for another target).
pub fn get(ctx: &Ctx<'_>, id: &str, target: &str, creator: &str) -> Result<Upload> {
    let upload: Option<Upload> = ctx.get_json(&keys::upload(id))?;
    upload
        .filter(|u| u.target == target && u.creator == creator && u.expires > ctx.now())
        .ok_or_else(|| EngineError::NotFound {
            url: format!("upload {id}"),
            context: None,
        })
}

/// Append `bytes` at `offset`: a 409 unless `offset` is where the upload is, a 400 when they
/// go past the announced length. Returns the upload as it now is.
pub fn append(ctx: &mut Ctx<'_>, mut upload: Upload, offset: u64, bytes: &[u8]) -> Result<Upload> {
    if offset != upload.offset {
        return Err(EngineError::Conflict(format!(
            "Upload-Offset {offset} does not match the upload's offset {}: resume from {}",
            upload.offset, upload.offset
        )));
    }
    let end = offset.saturating_add(bytes.len() as u64);
    if end > upload.length {
        return Err(EngineError::bad_request(format!(
            "The piece ends at byte {end}, past the upload's announced Upload-Length {}",
            upload.length
        )));
    }
    let mut writer = BlobWriter::append_to(ctx, &upload.blob)?;
    writer.write(ctx, bytes)?;
    writer.finish(ctx)?;
    upload.offset = end;
    upload.expires = ctx.now() + Duration::seconds(EXPIRY_SECS);
    ctx.put_json(&keys::upload(&upload.id), &upload)?;
    ctx.emit(Event::UploadChanged {
        id: upload.id.clone(),
        offset: end,
    });
    Ok(upload)
}

/// End a complete upload: its record goes, and its blob becomes `owner`'s.
pub fn take_finished(ctx: &mut Ctx<'_>, upload: &Upload, owner: &str) -> Result<()> {
    ctx.delete(&keys::upload(&upload.id))?;
    blobs::adopt(ctx, owner, &upload.blob)
}

/// Cancel an upload: its record and its bytes go.
pub fn cancel(ctx: &mut Ctx<'_>, upload: &Upload) -> Result<()> {
    blobs::delete(ctx, &upload.blob)?;
    ctx.delete(&keys::upload(&upload.id))?;
    ctx.emit(Event::UploadChanged {
        id: upload.id.clone(),
        offset: 0,
    });
    Ok(())
}

/// Remove every upload that has expired, with its bytes; how many.
pub fn expire(ctx: &mut Ctx<'_>) -> Result<usize> {
    let now = ctx.now();
    let stale: Vec<Upload> = ctx
        .values_with_prefix::<Upload>(keys::UPLOAD_PREFIX)?
        .into_iter()
        .filter(|u| u.expires <= now)
        .collect();
    for u in &stale {
        cancel(ctx, u)?;
    }
    Ok(stale.len())
}
