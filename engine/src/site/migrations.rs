//! Schema migrations: a store written by an earlier schema version is upgraded in place when an
//! engine opens it.
//!
//! [`STEPS`] is an ordered list; each step upgrades the keyspace from one version to the next.
//! [`run`] applies every step from the store's `s:schema` up to [`keys::SCHEMA_VERSION`] in the
//! write transaction it is given, then writes the new version, so an upgrade commits whole or not
//! at all (a crash mid-way leaves the old schema, and the next open runs it again). A store
//! without a site is left alone; a newer or unknown version is refused with a message that says
//! so ([`check`]).
//!
//! [`crate::Engine::new`] runs the migrations, and [`crate::Engine::migration_report`] tells hosts
//! what ran.

use crate::content::counters;
use crate::core::error::{EngineError, Result};
use crate::core::keys;
use crate::runtime::context::Ctx;

/// One upgrade step: from schema `from` to `from + 1`.
pub struct Step {
    /// The schema version this step upgrades.
    pub from: u32,
    /// What it does, for logs.
    pub description: &'static str,
    /// The upgrade, in the migration's write transaction. Must not write `s:schema` ([`run`]
    /// does).
    pub run: fn(&mut Ctx<'_>) -> Result<()>,
}

/// Every step, in order: `STEPS[i].from` is the first version plus `i`.
pub const STEPS: &[Step] = &[
    Step {
        from: 1,
        description: "per-object counters: q:<uid> becomes n:<uid>:h; n:<uid>:v and n:<uid>:m \
                      continue the version and comment numbering",
        run: v1_to_v2,
    },
    Step {
        from: 2,
        description: "the configuration registry (k:<name>): every stored record gets its \
                      default; the site-wide discussion switch moves from the site root's \
                      allow_discussion to plone.app.discussion.globally_enabled",
        run: discussion_switch_to_registry,
    },
    Step {
        from: 3,
        description: "the type registry becomes data: the built-in types and behaviors are \
                      written under y:t:<type> and y:b:<behavior>",
        run: types_as_data,
    },
    Step {
        from: 4,
        description: "catalog: every object indexed (x: entries, full-text and subject \
                      postings, links)",
        run: build_catalog,
    },
    Step {
        from: 5,
        description: "files and images: the types File, Image and Video are installed (y:t:); \
                      blobs (f:, F:) and tus uploads (T:) are new keys, absent until used",
        run: file_types,
    },
    Step {
        from: 6,
        description: "catalog: entries in a compact binary encoding with the object's terms and \
                      links (x:t: and x:f: retired); the catalog is rebuilt",
        run: catalog_binary_entries,
    },
    Step {
        from: 7,
        description: "users' portraits become blobs (f:, owned by @portrait:<login>): the user \
                      record keeps the blob's id and size instead of the base64 image",
        run: portraits_as_blobs,
    },
    Step {
        from: 8,
        description: "the behavior volto.preview_image (preview_image, preview_caption) is \
                      installed (y:b:) and given to the types Folder, Page, News Item and Event",
        run: preview_image_behavior,
    },
    Step {
        from: 9,
        description: "catalog: full-text postings carry what ranking and filtering need \
                      (interned allowedRolesAndUsers x:a:/x:A:, dates, creation, term \
                      frequency); the catalog is rebuilt",
        run: catalog_ranked_postings,
    },
    Step {
        from: 10,
        description: "relations: the relation index (L:) is built from every object's \
                      relatedItems; with multilingual content, the language root folders \
                      stored as Folder become LRF and the site root gets the \
                      language-switcher layout",
        run: relations_and_language_roots,
    },
    Step {
        from: 11,
        description: "catalog: each entry gets a listing copy under its parent and position \
                      (x:c:<parent uid>:<pos>), so a folder's children and their entries are \
                      read with range scans",
        run: catalog_listing_copies,
    },
    Step {
        from: 12,
        description: "catalog: entries keep an event's start and end and the relatedItems, with \
                      field postings (x:i:start, x:i:end, x:i:getRawRelatedItems) for the \
                      indexes start, end and getRawRelatedItems; objects with such values are \
                      indexed again",
        run: catalog_field_postings,
    },
    Step {
        from: 13,
        description: "catalog: each folder counts the children Anonymous may view \
                      (x:v:<parent uid>), so an anonymous listing reads only its batch",
        run: catalog_anonymous_counts,
    },
];

/// The schema version this build reads and writes.
pub fn current_version() -> u32 {
    keys::SCHEMA_VERSION
}

/// What opening a store migrated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The schema version the store had (`None`: no site, nothing to migrate).
    pub from: Option<u32>,
    /// The schema version it has now (`None`: no site).
    pub to: Option<u32>,
    /// The descriptions of the steps that ran, in order (empty: the store was current).
    pub steps: Vec<&'static str>,
}

impl Report {
    /// How many steps ran.
    pub fn steps_run(&self) -> usize {
        self.steps.len()
    }
}

/// The schema version of the store `ctx` reads: `None` when it has no site. A version newer than
/// this build's, or one that is not a number, is an error that says so.
pub fn check(ctx: &Ctx<'_>) -> Result<Option<u32>> {
    let Some(v) = ctx.get(keys::SCHEMA)? else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&v);
    match text.parse::<u32>() {
        Ok(n) if n > keys::SCHEMA_VERSION => Err(EngineError::Internal(format!(
            "the data was written by a newer version (schema {n}; this build reads {}); \
             upgrade the program",
            keys::SCHEMA_VERSION
        ))),
        Ok(n) if n >= first_supported() => Ok(Some(n)),
        _ => Err(EngineError::Internal(format!(
            "unknown schema version {text:?}; this build reads {} (and upgrades {} and later)",
            keys::SCHEMA_VERSION,
            first_supported()
        ))),
    }
}

/// The oldest schema version the steps start from.
fn first_supported() -> u32 {
    STEPS.first().map_or(keys::SCHEMA_VERSION, |s| s.from)
}

/// Whether the store `ctx` reads needs [`run`] (it has a site of an older schema). Errors as
/// [`check`].
pub fn needed(ctx: &Ctx<'_>) -> Result<bool> {
    Ok(check(ctx)?.is_some_and(|v| v < keys::SCHEMA_VERSION))
}

/// Upgrade the store of `ctx` (a write transaction) to [`keys::SCHEMA_VERSION`]; the caller
/// commits. Does nothing to a store without a site or one already current.
pub fn run(ctx: &mut Ctx<'_>) -> Result<Report> {
    let Some(from) = check(ctx)? else {
        return Ok(Report::default());
    };
    let mut report = Report {
        from: Some(from),
        to: Some(from),
        steps: Vec::new(),
    };
    let mut version = from;
    while version < keys::SCHEMA_VERSION {
        let step = STEPS
            .iter()
            .find(|s| s.from == version)
            .ok_or_else(|| EngineError::Internal(format!("no migration from schema {version}")))?;
        (step.run)(ctx)?;
        report.steps.push(step.description);
        version += 1;
    }
    if version != from {
        ctx.put(keys::SCHEMA, version.to_string().as_bytes())?;
    }
    report.to = Some(version);
    Ok(report)
}

/// Schema 2 → 3: the type registry, compiled in until then, is written to the store
/// ([`crate::content::content_types::install_builtin`]); records already there are kept, so running the
/// step twice changes nothing more.
fn types_as_data(ctx: &mut Ctx<'_>) -> Result<()> {
    crate::content::content_types::install_builtin(ctx)
}

/// Schema 1 → 2: the per-object counters of [`crate::content::counters`].
///
/// For every object (every uid under `p:`): the history counter `n:<uid>:h` continues after the
/// schema-1 `q:<uid>` (the last history number handed out; every schema-1 allocation wrote it);
/// the version counter `n:<uid>:v` after the newest version; the comment counter `n:<uid>:m`
/// after the last comment. Then every `q:` key is deleted. A counter that already holds a larger
/// value keeps it, so running the step twice changes nothing more.
fn v1_to_v2(ctx: &mut Ctx<'_>) -> Result<()> {
    let uids: Vec<String> = ctx
        .scan_prefix(b"p:")?
        .into_iter()
        .map(|(_, v)| String::from_utf8_lossy(&v).into_owned())
        .collect();
    for uid in &uids {
        let history = match ctx.get(&keys::v1_history_seq(uid))? {
            Some(b) => {
                let last = std::str::from_utf8(&b)
                    .ok()
                    .and_then(|t| t.parse::<u64>().ok())
                    .ok_or_else(|| {
                        EngineError::Internal(format!(
                            "q:{uid} holds {:?}, not a number",
                            String::from_utf8_lossy(&b)
                        ))
                    })?;
                Some(last.saturating_add(1))
            }
            // Entries written before the history sequence existed carry number 0.
            None if ctx.last_with_prefix(&keys::versions_prefix(uid))?.is_some()
                || ctx
                    .last_with_prefix(&keys::workflow_history_prefix(uid))?
                    .is_some() =>
            {
                Some(1)
            }
            None => None,
        };
        let version = crate::content::versioning::latest(ctx, uid)?.map(|v| u64::from(v) + 1);
        let comment = ctx
            .last_with_prefix(&keys::comments_prefix(uid))?
            .and_then(|(k, _)| keys::trailing_u64(&k))
            .map(|s| s.saturating_add(1));
        for (key, next) in [
            (keys::history_counter(uid), history),
            (keys::version_counter(uid), version),
            (keys::comment_counter(uid), comment),
        ] {
            if let Some(next) = next {
                if counters::peek(ctx, &key)? < next {
                    counters::set(ctx, &key, next)?;
                }
            }
        }
    }
    ctx.delete_prefix(keys::V1_HISTORY_SEQ_PREFIX)
}

/// Schema 2 → 3: the configuration registry. Every stored record gets its default
/// ([`crate::site::configuration::seed`]), as a new site does. Comments were enabled for the site by the
/// site root's `allow_discussion` field; now by the record
/// [`crate::site::configuration::DISCUSSION_ENABLED`] (the discussion control panel): a site whose root
/// allowed discussion gets it set to `true`; the root's field stays (it is also the root
/// object's own switch). Running it twice changes nothing more.
fn discussion_switch_to_registry(ctx: &mut Ctx<'_>) -> Result<()> {
    let Some(root) = crate::content::tree::at_path(ctx, "")? else {
        return Ok(());
    };
    let allowed = root
        .fields
        .get("allow_discussion")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let key = keys::config_record(crate::site::configuration::DISCUSSION_ENABLED);
    if allowed && ctx.get(&key)?.is_none() {
        ctx.put_json(&key, &serde_json::Value::Bool(true))?;
    }
    crate::site::configuration::seed(ctx)
}

/// Schema 5 → 6: rebuild the catalog in its binary encoding ([`crate::catalog::codec`]). A
/// catalog built by the step before in the same run is already in it: then nothing is done.
fn catalog_binary_entries(ctx: &mut Ctx<'_>) -> Result<()> {
    let first = ctx.scan(b"x:e:", b"x:e;", crate::core::store::Direction::Forward, 1)?;
    if first
        .first()
        .is_some_and(|(_, v)| v.first() == Some(&crate::catalog::codec::VERSION))
    {
        return Ok(());
    }
    build_catalog(ctx)
}

/// Schema 4 → 5: build the catalog ([`crate::catalog::rebuild`]), logging progress through
/// [`crate::EngineOptions::progress_log`].
fn build_catalog(ctx: &mut Ctx<'_>) -> Result<()> {
    let log = ctx.core.options.progress_log.clone();
    crate::catalog::rebuild(ctx, &mut |n| {
        if let Some(log) = &log {
            log(&format!("catalog: {n} objects indexed"));
        }
    })?;
    Ok(())
}

/// Schema 5 → 6: the built-in types added with files (File, Image, Video) are written to the
/// type registry ([`crate::content::content_types::install_builtin`] keeps every record already there, so
/// a site's own changes to other types stay, and running the step twice changes nothing more).
fn file_types(ctx: &mut Ctx<'_>) -> Result<()> {
    crate::content::content_types::install_builtin(ctx)
}

/// Schema 7 → 8: a portrait stored inside its user record as base64 (`portrait.data`) is moved
/// into a blob ([`crate::people::auth::users::Portrait`]); a record already in the new form is left as
/// it is. Stored data the earlier code accepted is moved as it is (it is not decoded again).
fn portraits_as_blobs(ctx: &mut Ctx<'_>) -> Result<()> {
    use base64::Engine as _;
    for (key, raw) in ctx.scan_prefix(keys::USER_PREFIX)? {
        let mut user: serde_json::Value = serde_json::from_slice(&raw)?;
        let Some(data) = user
            .pointer("/portrait/data")
            .and_then(serde_json::Value::as_str)
        else {
            continue;
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| EngineError::Internal(format!("stored portrait is not base64: {e}")))?;
        let login = String::from_utf8_lossy(&key[keys::USER_PREFIX.len()..]).into_owned();
        let owner = crate::people::auth::users::portrait_owner(&login);
        let blob = crate::content::blobs::store(ctx, &owner, &bytes)?;
        if let Some(p) = user.get_mut("portrait").and_then(|p| p.as_object_mut()) {
            p.remove("data");
            p.insert("blob".into(), blob.into());
            p.insert("size".into(), (bytes.len() as u64).into());
        }
        ctx.put(&key, &serde_json::to_vec(&user)?)?;
    }
    Ok(())
}

/// Schema 8 → 9: the built-in behavior `volto.preview_image` is written to the registry, and the
/// stored types Folder, Page, News Item and Event that lack it get it after `volto.blocks` (as a
/// new site has them). A site's other changes to those types stay.
fn preview_image_behavior(ctx: &mut Ctx<'_>) -> Result<()> {
    const BEHAVIOR: &str = "volto.preview_image";
    crate::content::content_types::install_builtin(ctx)?;
    for name in ["Folder", "Page", "News Item", "Event"] {
        let key = keys::content_type(name);
        let Some(mut data) = ctx.get_json::<crate::core::model::types::TypeData>(&key)? else {
            continue;
        };
        if data.behaviors.iter().any(|b| b == BEHAVIOR) {
            continue;
        }
        let at = data
            .behaviors
            .iter()
            .position(|b| b == "volto.blocks")
            .map_or(data.behaviors.len(), |i| i + 1);
        data.behaviors.insert(at, BEHAVIOR.to_string());
        ctx.put_json(&key, &data)?;
        ctx.emit(crate::core::events::Event::TypeChanged {
            name: name.to_string(),
            removed: false,
        });
    }
    Ok(())
}

/// Schema 9 → 10: rebuild the catalog so full-text postings carry their
/// [`crate::catalog::postings::Meta`]. A catalog built by an earlier step of the same run
/// already has them: then nothing is done.
fn catalog_ranked_postings(ctx: &mut Ctx<'_>) -> Result<()> {
    let first = ctx.scan(b"x:w:", b"x:w;", crate::core::store::Direction::Forward, 1)?;
    if first
        .first()
        .is_some_and(|(_, v)| crate::catalog::postings::Meta::decode(v).is_some())
    {
        return Ok(());
    }
    build_catalog(ctx)
}

/// Schema 10 → 11: build the relation index ([`crate::content::relations`]) from the objects'
/// `relatedItems`, and, on a site with the multilingual-content profile installed, install it
/// again (idempotent), which makes the language root folders `LRF`s.
fn relations_and_language_roots(ctx: &mut Ctx<'_>) -> Result<()> {
    crate::content::relations::rebuild(ctx, false)?;
    let s = crate::content::multilingual::settings(ctx)?;
    let content = crate::content::multilingual::PROFILE_MULTILINGUAL_CONTENT;
    if s.is_multilingual() && s.has_profile(content) {
        crate::content::multilingual::profiles::install(ctx, content)?;
    }
    Ok(())
}

/// Schema 11 → 12: write the listing copy (`x:c:`) of every catalog entry
/// ([`crate::catalog::write_listing_copies`]); a catalog built by an earlier step of the same run
/// has them already, and writing them again changes nothing.
fn catalog_listing_copies(ctx: &mut Ctx<'_>) -> Result<()> {
    let log = ctx.core.options.progress_log.clone();
    let n = crate::catalog::write_listing_copies(ctx, 1000)?;
    if let Some(log) = &log {
        log(&format!("catalog: {n} listing copies written"));
    }
    Ok(())
}

/// Schema 12 → 13: index the values the catalog keeps since schema 13 (an event's `start` and
/// `end`, `relatedItems`) with their field postings ([`crate::catalog::index_added_fields`]);
/// objects without them keep their entries. Running it again changes nothing.
fn catalog_field_postings(ctx: &mut Ctx<'_>) -> Result<()> {
    let log = ctx.core.options.progress_log.clone();
    let n = crate::catalog::index_added_fields(ctx)?;
    if let Some(log) = &log {
        log(&format!(
            "catalog: {n} objects indexed again for start, end and related items"
        ));
    }
    Ok(())
}

/// Schema 13 → 14: count, for every folder, the children Anonymous may view
/// ([`crate::catalog::count_anonymous_children`], from the listing copies). Running it again
/// writes the same counts.
fn catalog_anonymous_counts(ctx: &mut Ctx<'_>) -> Result<()> {
    let log = ctx.core.options.progress_log.clone();
    let n = crate::catalog::count_anonymous_children(ctx, 1000)?;
    if let Some(log) = &log {
        log(&format!(
            "catalog: {n} folders with children anonymous visitors may view counted"
        ));
    }
    Ok(())
}
