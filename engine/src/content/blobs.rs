//! Binary data in the store: blobs cut into fixed-size chunks under their own keys.
//!
//! A blob is `f:<id>:m` (its [`BlobMeta`]) plus `f:<id>:c<n>` for n = 0.. (each [`CHUNK_SIZE`]
//! bytes, the last one shorter). It is written through the request's transaction with the same
//! [`Ctx`] operations as every other record, so every [`crate::core::store::Store`] (memory, SQLite,
//! IndexedDB) holds blobs with this one code, and a request that fails leaves none behind. A
//! writer never holds more than one chunk: [`BlobWriter::write`] stores full chunks as they fill,
//! so appending (tus `PATCH`) touches only the last, partial chunk. Readers take one range at a
//! time ([`read_range`]), so a host can stream a large download chunk by chunk.
//!
//! A blob that belongs to an object is listed under `F:<uid>:<id>`; [`BlobsSubscriber`] removes
//! every blob of a removed object. A user's portrait is a blob owned by `@portrait:<login>`
//! ([`crate::people::auth::users::portrait_owner`]), removed with the user. Blob ids are fresh uids, never reused: a blob's bytes do not
//! change once it belongs to an object (a new upload is a new blob), so its id is its `ETag`.

use serde::{Deserialize, Serialize};

use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::runtime::context::Ctx;
use crate::runtime::subscriber::Subscriber;

/// Bytes per chunk of new blobs (256 KiB): small enough that one chunk is a cheap row in every
/// backend, large enough that a 100 MB file is 400 keys.
pub const CHUNK_SIZE: usize = 256 * 1024;

/// What is stored about a blob besides its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobMeta {
    /// Its length in bytes.
    pub size: u64,
    /// The chunk size it was written with.
    pub chunk_size: u64,
}

impl BlobMeta {
    /// How many chunks hold the bytes.
    pub fn chunks(&self) -> u64 {
        self.size.div_ceil(self.chunk_size.max(1))
    }
}

/// Writes one blob through a transaction, a chunk at a time.
#[derive(Debug)]
pub struct BlobWriter {
    id: String,
    meta: BlobMeta,
    /// The bytes of the last, unfilled chunk (never a full chunk).
    tail: Vec<u8>,
}

impl BlobWriter {
    /// A new, empty blob with a fresh id.
    pub fn create(ctx: &mut Ctx<'_>) -> Result<Self> {
        let id = ctx.new_uid();
        let meta = BlobMeta {
            size: 0,
            chunk_size: CHUNK_SIZE as u64,
        };
        ctx.put_json(&keys::blob_meta(&id), &meta)?;
        Ok(BlobWriter {
            id,
            meta,
            tail: Vec::new(),
        })
    }

    /// Reopen blob `id` to append to it (an unfinished upload).
    pub fn append_to(ctx: &Ctx<'_>, id: &str) -> Result<Self> {
        let meta = meta(ctx, id)?;
        let partial = meta.size % meta.chunk_size;
        let tail = if partial == 0 {
            Vec::new()
        } else {
            let n = (meta.size / meta.chunk_size) as u32;
            ctx.get(&keys::blob_chunk(id, n))?
                .ok_or_else(|| EngineError::Internal(format!("blob {id} lost chunk {n}")))?
        };
        Ok(BlobWriter {
            id: id.to_string(),
            meta,
            tail,
        })
    }

    /// The blob's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Bytes written so far.
    pub fn size(&self) -> u64 {
        self.meta.size
    }

    /// Append `bytes`: every chunk they fill is stored now.
    pub fn write(&mut self, ctx: &mut Ctx<'_>, mut bytes: &[u8]) -> Result<()> {
        let cs = self.meta.chunk_size as usize;
        while !bytes.is_empty() {
            let room = cs - self.tail.len();
            let take = room.min(bytes.len());
            self.tail.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            self.meta.size += take as u64;
            let n = ((self.meta.size - 1) / self.meta.chunk_size) as u32;
            if self.tail.len() == cs {
                ctx.put(&keys::blob_chunk(&self.id, n), &self.tail)?;
                self.tail.clear();
            }
        }
        Ok(())
    }

    /// Store the last partial chunk and the metadata; the blob is complete.
    pub fn finish(self, ctx: &mut Ctx<'_>) -> Result<BlobMeta> {
        if !self.tail.is_empty() {
            let n = (self.meta.size / self.meta.chunk_size) as u32;
            ctx.put(&keys::blob_chunk(&self.id, n), &self.tail)?;
        }
        ctx.put_json(&keys::blob_meta(&self.id), &self.meta)?;
        Ok(self.meta)
    }
}

/// Store `bytes` as a new blob owned by object `owner`; its id.
pub fn store(ctx: &mut Ctx<'_>, owner: &str, bytes: &[u8]) -> Result<String> {
    let mut w = BlobWriter::create(ctx)?;
    w.write(ctx, bytes)?;
    let id = w.id().to_string();
    w.finish(ctx)?;
    adopt(ctx, owner, &id)?;
    Ok(id)
}

/// Make object `owner` an owner of blob `id` (the blob goes with its last owner).
pub fn adopt(ctx: &mut Ctx<'_>, owner: &str, id: &str) -> Result<()> {
    ctx.put(&keys::owned_blob(owner, id), b"")?;
    ctx.put(&keys::blob_owner(id, owner), b"")
}

/// Whether object `owner` owns blob `id`.
pub fn owns(ctx: &Ctx<'_>, owner: &str, id: &str) -> Result<bool> {
    Ok(ctx.get(&keys::owned_blob(owner, id))?.is_some())
}

/// The metadata of blob `id`; a 404 when there is no such blob.
pub fn meta(ctx: &Ctx<'_>, id: &str) -> Result<BlobMeta> {
    ctx.get_json(&keys::blob_meta(id))?
        .ok_or_else(|| EngineError::NotFound {
            url: format!("blob {id}"),
            context: None,
        })
}

/// Whether blob `id` exists.
pub fn exists(ctx: &Ctx<'_>, id: &str) -> Result<bool> {
    Ok(ctx.get(&keys::blob_meta(id))?.is_some())
}

/// Bytes `start..end` of blob `id` (clamped to its size), read chunk by chunk.
pub fn read_range(ctx: &Ctx<'_>, id: &str, start: u64, end: u64) -> Result<Vec<u8>> {
    let m = meta(ctx, id)?;
    let end = end.min(m.size);
    if start >= end {
        return Ok(Vec::new());
    }
    let mut out = Vec::with_capacity((end - start) as usize);
    let cs = m.chunk_size;
    let first = start / cs;
    let last = (end - 1) / cs;
    for n in first..=last {
        let chunk = ctx
            .get(&keys::blob_chunk(id, n as u32))?
            .ok_or_else(|| EngineError::Internal(format!("blob {id} lost chunk {n}")))?;
        let base = n * cs;
        let from = start.saturating_sub(base) as usize;
        let to = ((end - base) as usize).min(chunk.len());
        if from < to {
            out.extend_from_slice(&chunk[from..to]);
        }
    }
    Ok(out)
}

/// The whole of blob `id` (for decoding an image; never for serving a download).
pub fn read_all(ctx: &Ctx<'_>, id: &str) -> Result<Vec<u8>> {
    read_range(ctx, id, 0, u64::MAX)
}

/// Delete blob `id` (metadata and chunks; the chunks are deleted by number, never read),
/// whoever owns it.
pub fn delete(ctx: &mut Ctx<'_>, id: &str) -> Result<()> {
    if let Some(m) = ctx.get_json::<BlobMeta>(&keys::blob_meta(id))? {
        for n in 0..m.chunks() {
            ctx.delete(&keys::blob_chunk(id, n as u32))?;
        }
        ctx.delete(&keys::blob_meta(id))?;
    }
    Ok(())
}

/// `owner` lets go of blob `id`; the blob is deleted when no other object owns it.
pub fn release(ctx: &mut Ctx<'_>, owner: &str, id: &str) -> Result<()> {
    ctx.delete(&keys::owned_blob(owner, id))?;
    ctx.delete(&keys::blob_owner(id, owner))?;
    let owners = keys::blob_owners_prefix(id);
    let others = ctx.scan(
        &owners,
        &crate::core::store::prefix_end(&owners),
        crate::core::store::Direction::Forward,
        1,
    )?;
    if others.is_empty() {
        delete(ctx, id)?;
    }
    Ok(())
}

/// The ids of the blobs object `uid` owns.
pub fn owned(ctx: &Ctx<'_>, uid: &str) -> Result<Vec<String>> {
    let prefix = keys::owned_blobs_prefix(uid);
    Ok(ctx
        .scan_prefix(&prefix)?
        .into_iter()
        .filter_map(|(k, _)| String::from_utf8(k[prefix.len()..].to_vec()).ok())
        .collect())
}

/// The blob ids the file and image fields of object `uid` reference (their bytes and scales).
fn referenced(ctx: &Ctx<'_>, uid: &str) -> Result<Vec<String>> {
    let Some(rec) = crate::content::tree::load(ctx, uid)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for value in rec.fields.values() {
        let Some(o) = value.as_object() else { continue };
        if let Some(id) = o.get("blob").and_then(|b| b.as_str()) {
            out.push(id.to_string());
            if let Some(scales) = o.get("scales").and_then(|s| s.as_object()) {
                for s in scales.values() {
                    if let Some(id) = s.get("blob").and_then(|b| b.as_str()) {
                        out.push(id.to_string());
                    }
                }
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Keeps the owners of blobs: a removed object lets go of its blobs (`F:<uid>:`; a blob goes
/// with its last owner), an added copy owns the blobs its fields reference.
pub struct BlobsSubscriber;

impl Subscriber for BlobsSubscriber {
    fn name(&self) -> &'static str {
        "blobs"
    }

    fn on_event(&self, ctx: &mut Ctx<'_>, event: &Event) -> Result<()> {
        match event {
            Event::Removed { uid, .. } => {
                for id in owned(ctx, uid)? {
                    release(ctx, uid, &id)?;
                }
            }
            // A removed user's portrait.
            Event::UserRemoved { login } => {
                let owner = crate::people::auth::users::portrait_owner(login);
                for id in owned(ctx, &owner)? {
                    release(ctx, &owner, &id)?;
                }
            }
            // A copy shares the blobs its fields reference (an upload adopted them already).
            Event::Added { uid, .. } => {
                for id in referenced(ctx, uid)? {
                    if !owns(ctx, uid, &id)? && exists(ctx, &id)? {
                        adopt(ctx, uid, &id)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}
