//! Related content: the embedding vector of every object, and the objects nearest to one.
//!
//! With an embedding model configured ([`crate::EngineOptions::embedder`]), the
//! [`VectorsSubscriber`] embeds an object's text ([`text_of`]: title, description, the text of
//! its blocks and of its rich text) when it is added, restored, or its text fields change, and
//! stores the vector at `E:v:<uid>`; it drops the vector when the object is removed or binned.
//! `E:model` names the model that made the stored vectors: [`sync`] (run when a store is opened
//! and when a site is created) recomputes every vector when it names another model, or none (a
//! site written before, or changed while no model was configured: changes then drop `E:model`).
//!
//! [`nearest`] is an exact search: the cosine of the object's vector with every stored vector,
//! best first, keeping the objects the caller may view. Reading every vector costs about
//! `objects × dimensions × 4` bytes per request: fine up to some 100,000 objects (40 MB at 256
//! dimensions is tens of milliseconds natively); beyond that an approximate index (HNSW, IVF) is
//! needed.

use serde_json::Value;

use crate::ai::embedding::{self, Embedder};
use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;
use crate::runtime::subscriber::Subscriber;

/// The message of every AI endpoint when no model is configured (Nick's).
pub const DISABLED: &str = "AI is disabled.";

/// Fields whose change changes an object's text.
const TEXT_FIELDS: &[&str] = &["title", "description", "blocks", "blocks_layout", "text"];

/// The configured embedder, or 400 "AI is disabled.".
pub fn embedder<'c>(ctx: &'c Ctx<'_>) -> Result<&'c dyn Embedder> {
    ctx.core
        .options
        .embedder
        .as_deref()
        .ok_or_else(|| EngineError::BadRequest(DISABLED.into()))
}

/// The text an object's vector is made of: its title, description, the text of its blocks (in
/// layout order: a slate block's `plaintext`, else the `text`, `title` and `description`
/// strings inside a block) and its rich text (tags stripped), one per line.
pub fn text_of(obj: &ContentRecord) -> String {
    let mut out = String::new();
    let mut push = |s: &str| {
        let s = s.trim();
        if !s.is_empty() {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(s);
        }
    };
    push(obj.title());
    push(obj.description());
    if let Some(Value::Object(blocks)) = obj.fields.get("blocks") {
        let order: Vec<&str> = obj
            .fields
            .get("blocks_layout")
            .and_then(|l| l.get("items"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let ordered = order.iter().filter_map(|id| blocks.get(*id)).chain(
            blocks
                .iter()
                .filter(|(id, _)| !order.contains(&id.as_str()))
                .map(|(_, b)| b),
        );
        for b in ordered {
            match b.get("plaintext").and_then(Value::as_str) {
                Some(t) => push(t),
                None => {
                    let mut strings = Vec::new();
                    block_strings(b, &mut strings);
                    for s in strings {
                        push(s);
                    }
                }
            }
        }
    }
    if let Some(data) = obj
        .fields
        .get("text")
        .and_then(|t| t.get("data"))
        .and_then(Value::as_str)
    {
        push(&crate::catalog::text::strip_tags(data));
    }
    out
}

/// The strings under `text`, `title` and `description` keys of a block, at any depth.
fn block_strings<'v>(v: &'v Value, out: &mut Vec<&'v str>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("text" | "title" | "description", Value::String(s)) => out.push(s),
                    _ => block_strings(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| block_strings(v, out)),
        _ => {}
    }
}

/// Store the vector of `obj`.
fn store_vector(ctx: &mut Ctx<'_>, e: &dyn Embedder, obj: &ContentRecord) -> Result<()> {
    let v = e.embed(&text_of(obj));
    ctx.put(&keys::vector(&obj.uid), &embedding::to_bytes(&v))
}

/// Make the stored vectors those of the configured model: when `E:model` names another model
/// (or none), recompute the vector of every object and record the model. How many vectors were
/// computed (0 when they were current or no model is configured).
pub fn sync(ctx: &mut Ctx<'_>) -> Result<usize> {
    let Some(e) = ctx.core.options.embedder.clone() else {
        return Ok(0);
    };
    let id = e.id();
    if ctx.get(keys::VECTOR_MODEL)?.as_deref() == Some(id.as_bytes()) {
        return Ok(0);
    }
    ctx.delete_prefix(keys::VECTOR_PREFIX)?;
    let mut n = 0;
    for (_, bytes) in ctx.scan_prefix(b"o:")? {
        let obj: ContentRecord = serde_json::from_slice(&bytes)?;
        store_vector(ctx, e.as_ref(), &obj)?;
        n += 1;
    }
    ctx.put(keys::VECTOR_MODEL, id.as_bytes())?;
    Ok(n)
}

/// The objects nearest to `obj` by the cosine of their vectors, best first: at most `limit`,
/// only those the caller may view, never `obj` itself. 400 "AI is disabled." without a model.
pub fn nearest(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    limit: usize,
) -> Result<Vec<(ContentRecord, f64)>> {
    let e = embedder(ctx)?;
    let query = match ctx.get(&keys::vector(&obj.uid))? {
        Some(b) => embedding::from_bytes(&b),
        None => e.embed(&text_of(obj)),
    };
    let mut scored: Vec<(f64, String)> = Vec::new();
    for (key, bytes) in ctx.scan_prefix(keys::VECTOR_PREFIX)? {
        let uid = String::from_utf8_lossy(&key[keys::VECTOR_PREFIX.len()..]).into_owned();
        if uid == obj.uid {
            continue;
        }
        let v = embedding::from_bytes(&bytes);
        if v.len() != query.len() {
            continue;
        }
        scored.push((embedding::cosine(&query, &v), uid));
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut out = Vec::new();
    for (sim, uid) in scored {
        if out.len() >= limit {
            break;
        }
        let Some(rec) = tree::load(ctx, &uid)? else {
            continue;
        };
        if ctx.permitted(Permission::View, &rec)? {
            out.push((rec, sim));
        }
    }
    Ok(out)
}

/// Keeps the vectors `E:v:<uid>` (and `E:model`): see the module documentation.
pub struct VectorsSubscriber;

impl Subscriber for VectorsSubscriber {
    fn name(&self) -> &'static str {
        "vectors"
    }

    fn on_event(&self, ctx: &mut Ctx<'_>, event: &Event) -> Result<()> {
        let embedder = ctx.core.options.embedder.clone();
        match event {
            Event::Removed { uid, .. } | Event::Binned { uid, .. } => {
                ctx.delete(&keys::vector(uid))?;
            }
            Event::Added { uid, .. } | Event::Restored { uid, .. } => {
                self.refresh(ctx, embedder.as_deref(), uid)?
            }
            Event::Modified { uid, fields, .. }
                if fields.iter().any(|f| TEXT_FIELDS.contains(&f.as_str())) =>
            {
                self.refresh(ctx, embedder.as_deref(), uid)?
            }
            _ => {}
        }
        Ok(())
    }
}

impl VectorsSubscriber {
    /// Recompute the vector of `uid`; without a model, forget which model made the stored
    /// vectors (they are now stale), so that the next engine with a model recomputes them.
    fn refresh(&self, ctx: &mut Ctx<'_>, e: Option<&dyn Embedder>, uid: &str) -> Result<()> {
        match e {
            Some(e) => {
                if let Some(obj) = tree::load(ctx, uid)? {
                    store_vector(ctx, e, &obj)?;
                }
            }
            None => {
                if ctx.get(keys::VECTOR_MODEL)?.is_some() {
                    ctx.delete(keys::VECTOR_MODEL)?;
                }
            }
        }
        Ok(())
    }
}
