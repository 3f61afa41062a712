//! A replica of a server site: the browser keeps a copy of what its user may view on a
//! `host-server`, edits it offline, and syncs the edits back, keeping what the server refuses as
//! conflicts for the user to resolve.
//!
//! The module is sans-IO, as automerge's or yrs' sync is: it never sends anything itself. The host
//! asks [`Sync::next_request`] for the next HTTP request to make ([`Outgoing`]), performs it, and
//! hands the answer back to [`Sync::receive`] (or a network failure to [`Sync::failed`]); all
//! state lives in the local store under `H:` ([`crate::core::keys`]), written in the same transactions
//! as the content it describes. So the whole protocol is tested natively with canned answers,
//! and the browser host only fetches and persists.
//!
//! A sync round, in order: log in (when the host holds a password and no token is stored);
//! fetch the server version of new conflicts; replay the pending writes in order (each with
//! `If-Match` naming the server version it was based on and its own `Idempotency-Key`); a full
//! download when the replica is new or its cursor expired (take the change cursor with
//! `GET /@changes`, list everything with `@search`, fetch what differs, remove what the server no
//! longer lists); fetch the objects queued; then follow `GET /@changes?since=` once; then check
//! visibility: list what the user may view now (`@search`, `UID`/`modified`/`review_state` only,
//! one request per [`PAGE`] objects) and remove what is no longer listed. The feed reports what
//! happened to objects, not that the user lost a group or a role, so each round re-checks rather
//! than trusting the feed alone. A server without a change feed (404 on `@changes`) is followed
//! by that full listing each round instead. [`Sync::purged`] tells the host that a round removed
//! something, so it drops the older states it keeps (the browser's change-set log).
//!
//! Local writes: [`prepare_write`] before the local engine runs an unsafe request, and
//! [`record_write`] after it succeeded, record a [`PendingWrite`]; the host persists both in one
//! storage transaction.

pub mod import;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::content::{operations, tree};
use crate::core::error::{EngineError, Result};
use crate::core::keys;
use crate::core::store::{prefix_end, Direction};
use crate::runtime::context::Ctx;

pub use import::{server_path, Imported};

/// How many objects one listing page or change feed page asks for.
pub const PAGE: u64 = 500;
/// The longest wait (ms) between two attempts of a write the server failed with a 5xx.
pub const MAX_BACKOFF_MS: i64 = 5 * 60 * 1000;

/// The server a replica site copies (`H:config`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// The server's site root URL (`http://host:8080`), without a trailing slash.
    pub server: String,
    /// The user the replica acts for (also the local admin's login).
    pub login: String,
    /// The server's token for that user, once logged in.
    #[serde(default)]
    pub token: Option<String>,
}

/// Where a full download stands.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "lowercase")]
pub enum Phase {
    /// Nothing downloaded yet, or the cursor expired: start a full download.
    #[default]
    Fresh,
    /// Listing the server's objects, at `b_start`; `cursor` is the change cursor taken first.
    Listing {
        /// The next listing page starts here.
        b_start: u64,
        /// The change cursor taken before the listing (none without a change feed).
        cursor: Option<String>,
    },
    /// Downloaded: following the change feed.
    Following,
}

/// A replica's sync position (`H:sync`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SyncState {
    /// The change feed position the local copy reflects.
    pub cursor: Option<String>,
    /// The download phase.
    pub phase: Phase,
    /// `Some(false)` when the server has no change feed (followed by listing everything).
    pub feed: Option<bool>,
    /// Why the last round stopped early, if it did.
    pub last_error: Option<String>,
    /// "Work offline": set by one tab, it holds back the rounds of every tab of this replica
    /// (it is stored with the replica, not kept in one tab's memory).
    #[serde(default)]
    pub held: bool,
}

/// A write made on the replica, waiting to be sent to the server (`H:w:<seq>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingWrite {
    /// Its number: writes are replayed in this order.
    pub seq: u64,
    /// The HTTP method.
    pub method: String,
    /// The site path the request names (`/folder/page/@workflow/publish`).
    pub path: String,
    /// The query string, without `?`.
    #[serde(default)]
    pub query: String,
    /// The headers to send again (`Content-Type`, `Prefer`).
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The body (text).
    #[serde(default)]
    pub body: String,
    /// The local uid of the object the path names, if any.
    pub target: Option<String>,
    /// The local uid of that object's parent.
    #[serde(default)]
    pub parent: Option<String>,
    /// The server version (`ETag`) the local copy of the target reflected when the write was
    /// made: sent as `If-Match`.
    pub base: Option<String>,
    /// The idempotency key: the server runs a write with a given key once.
    pub key: String,
    /// The object this write created locally (a POST of content), with its local path.
    #[serde(default)]
    pub created: Option<(String, String)>,
    /// Failed attempts (5xx, no answer).
    #[serde(default)]
    pub attempts: u32,
    /// Not before this time (ms since the epoch).
    #[serde(default)]
    pub next_try: i64,
    /// The last failure.
    #[serde(default)]
    pub last_error: Option<String>,
}

/// A write the server refused (`H:c:<seq>`), kept with both versions until the user resolves it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conflict {
    /// The write's number (the conflict's id).
    pub id: u64,
    /// The refused write (`None` when the stored entry could not be read: see `raw`).
    pub write: Option<PendingWrite>,
    /// The unreadable stored entry, for a corrupt one.
    #[serde(default)]
    pub raw: Option<String>,
    /// The server's status (0 for a corrupt entry).
    pub status: u16,
    /// The server's message.
    pub message: String,
    /// The local version: the local copy's fields (title, blocks, ...) and `review_state`, when
    /// the write was refused (`None`: no local object, e.g. a delete).
    pub local: Option<Value>,
    /// The server's representation of the object (`None`: it has none, or not fetched yet).
    pub server: Option<Value>,
    /// The server's version (`ETag`) of it.
    pub server_version: Option<String>,
    /// Whether the server's version was fetched.
    #[serde(default)]
    pub server_fetched: bool,
}

/// What a request of the replica is for; handed back with its answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// `POST /@login`.
    Login,
    /// `GET /@changes` without `since`: the cursor before a full download.
    Cursor,
    /// A page of the full listing.
    List {
        /// Its start.
        b_start: u64,
    },
    /// `GET` of one object.
    Fetch {
        /// Its server path.
        path: String,
    },
    /// `GET /@changes?since=`.
    Changes,
    /// A pending write.
    Replay {
        /// Its number.
        seq: u64,
    },
    /// The server version of a conflict's object.
    ConflictServer {
        /// The conflict.
        id: u64,
    },
    /// `POST /@logout`: the user leaves; the server ends the replica's token.
    Logout,
}

/// The request that ends the replica's server token (`None`: not a replica, or no token), for a
/// host logging its user out before it wipes the local copy.
pub fn logout_request(ctx: &Ctx<'_>) -> Result<Option<Outgoing>> {
    let Some(cfg) = config(ctx)? else {
        return Ok(None);
    };
    let Some(token) = cfg.token.as_deref() else {
        return Ok(None);
    };
    Ok(Some(Outgoing {
        step: Step::Logout,
        method: "POST".into(),
        url: format!("{}/@logout", cfg.server.trim_end_matches('/')),
        headers: json_headers(Some(token)),
        body: None,
    }))
}

/// An HTTP request the host must make for the replica.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    /// What it is for.
    pub step: Step,
    /// The method.
    pub method: String,
    /// The absolute URL.
    pub url: String,
    /// The headers.
    pub headers: Vec<(String, String)>,
    /// The body, if any.
    pub body: Option<String>,
}

/// The server's answer to an [`Outgoing`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Incoming {
    /// The status.
    pub status: u16,
    /// The headers.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Incoming {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    fn message(&self) -> String {
        let j = self.json();
        j.get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("HTTP {}", self.status))
    }
}

/// How a conflict is resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// Keep the local version: send the write again, based on the server's current version.
    Mine,
    /// Take the server's version: the local copy becomes the server's, the write is dropped.
    Theirs,
}

/// The state of a replica as the host shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    /// The server.
    pub server: String,
    /// The user.
    pub login: String,
    /// Writes waiting to be sent.
    pub pending: usize,
    /// Conflicts waiting for the user.
    pub conflicts: usize,
    /// Whether the first download finished.
    pub downloaded: bool,
    /// Why the last round stopped early, if it did.
    pub last_error: Option<String>,
    /// Whether "work offline" holds the rounds back ([`set_held`]).
    pub held: bool,
}

/// "Work offline" (`true`) or not: while held, no round of any tab of the replica talks to the
/// server (writes keep being recorded and wait).
pub fn set_held(ctx: &mut Ctx<'_>, held: bool) -> Result<()> {
    let mut s = state(ctx)?;
    if s.held != held {
        s.held = held;
        save_state(ctx, &s)?;
    }
    Ok(())
}

/// The replica's configuration, if this site is a replica.
pub fn config(ctx: &Ctx<'_>) -> Result<Option<Config>> {
    ctx.get_json(keys::REPLICA_CONFIG)
}

/// Make this site a replica of `config.server` (or change its credentials).
pub fn set_config(ctx: &mut Ctx<'_>, config: &Config) -> Result<()> {
    ctx.put_json(keys::REPLICA_CONFIG, config)
}

/// A token of the replica's local admin (the user the replica acts as locally), issued without
/// a password: the host is the only caller of the local engine, so it needs no stored secret to
/// log in, and no password of the local admin is kept anywhere in plain text (its user record
/// holds a hash, as every user's). `None` when the site is not a replica or has no such user.
pub fn local_token(ctx: &Ctx<'_>) -> Result<Option<String>> {
    let Some(cfg) = config(ctx)? else {
        return Ok(None);
    };
    match crate::people::auth::users::get(ctx, &cfg.login)? {
        Some(user) => crate::people::auth::issue_token(ctx, &user).map(Some),
        None => Ok(None),
    }
}

/// Make this site a replica of `server`, or update the replica's settings: a change of server or
/// of login drops the stored token, and a `token` given replaces it. The login the replica syncs
/// as. No password is stored ([`local_token`] logs the host in).
pub fn open(
    ctx: &mut Ctx<'_>,
    server: &str,
    login: Option<&str>,
    token: Option<&str>,
) -> Result<String> {
    let mut cfg = config(ctx)?.unwrap_or_else(|| Config {
        server: server.to_string(),
        login: login.unwrap_or_default().to_string(),
        token: None,
    });
    if cfg.server != server {
        cfg.server = server.to_string();
        cfg.token = None;
    }
    if let Some(l) = login.filter(|l| !l.is_empty()) {
        if l != cfg.login {
            cfg.token = None;
        }
        cfg.login = l.to_string();
    }
    if let Some(t) = token {
        cfg.token = Some(t.to_string());
    }
    set_config(ctx, &cfg)?;
    // earlier versions stored the local admin's password here in plain text
    ctx.delete(keys::REPLICA_LOCAL)?;
    Ok(cfg.login)
}

fn state(ctx: &Ctx<'_>) -> Result<SyncState> {
    Ok(ctx.get_json(keys::REPLICA_SYNC)?.unwrap_or_default())
}

fn save_state(ctx: &mut Ctx<'_>, s: &SyncState) -> Result<()> {
    ctx.put_json(keys::REPLICA_SYNC, s)
}

/// The replica's status.
pub fn status(ctx: &Ctx<'_>) -> Result<Option<Status>> {
    let Some(c) = config(ctx)? else {
        return Ok(None);
    };
    let s = state(ctx)?;
    Ok(Some(Status {
        server: c.server,
        login: c.login,
        pending: ctx.scan_prefix(keys::REPLICA_WRITES)?.len(),
        conflicts: ctx.scan_prefix(keys::REPLICA_CONFLICTS)?.len(),
        downloaded: s.phase == Phase::Following,
        last_error: s.last_error,
        held: s.held,
    }))
}

/// The pending writes, in replay order (unreadable entries left out: they become conflicts at
/// the next round).
pub fn pending(ctx: &Ctx<'_>) -> Result<Vec<PendingWrite>> {
    Ok(ctx
        .scan_prefix(keys::REPLICA_WRITES)?
        .into_iter()
        .filter_map(|(_, v)| serde_json::from_slice(&v).ok())
        .collect())
}

/// The conflicts, oldest first.
pub fn conflicts(ctx: &Ctx<'_>) -> Result<Vec<Conflict>> {
    Ok(ctx
        .scan_prefix(keys::REPLICA_CONFLICTS)?
        .into_iter()
        .filter_map(|(_, v)| serde_json::from_slice(&v).ok())
        .collect())
}

/// The local uids that pending writes (or unresolved conflicts) touch: their local copies are
/// not overwritten by the server's.
fn busy_uids(ctx: &Ctx<'_>) -> Result<std::collections::BTreeSet<String>> {
    let mut out = std::collections::BTreeSet::new();
    for w in pending(ctx)? {
        out.extend(w.target.clone());
        out.extend(w.created.map(|c| c.0));
    }
    for c in conflicts(ctx)? {
        if let Some(w) = c.write {
            out.extend(w.target.clone());
            out.extend(w.created.map(|c| c.0));
        }
    }
    Ok(out)
}

/// The object path a request path names: the part before an `@endpoint` (`/a/b/@workflow/x` →
/// `/a/b`; `/` → `""`).
pub fn object_path(path: &str) -> String {
    let p = match path.find("/@") {
        Some(i) => &path[..i],
        None => path,
    };
    p.trim_end_matches('/').to_string()
}

/// Whether a request to `path` is about the session rather than the site (`@login`, `@logout`,
/// `@login-renew`, and `@lock`, the editing lock a front end such as Volto takes while its edit
/// form is open): those are never recorded as pending writes. A lock taken offline only guards
/// the local edit; replayed later it would lock the server's object with a token the replayed
/// edit does not carry (the server refuses an edit without the lock's token, even its owner's),
/// and locks are not replicated either way.
pub fn is_session_path(path: &str) -> bool {
    let last = path.rsplit('/').next().unwrap_or("");
    matches!(last, "@login" | "@logout" | "@login-renew" | "@lock")
}

/// What `prepare_write` found before a local write ran.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Draft {
    target: Option<String>,
    parent: Option<String>,
    base: Option<String>,
}

/// Before the local engine runs the unsafe request to `path`: the object it names and the
/// server version of its local copy.
pub fn prepare_write(ctx: &Ctx<'_>, path: &str) -> Result<Draft> {
    let Some(rec) = tree::at_path(ctx, &object_path(path))? else {
        return Ok(Draft::default());
    };
    let base = ctx
        .get(&keys::replica_version(&rec.uid))?
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    Ok(Draft {
        target: Some(rec.uid),
        parent: rec.parent,
        base,
    })
}

/// The local write `req` (method, path, query, headers, body) succeeded with `answer`: record it
/// as a pending write. Returns its number.
pub fn record_write(
    ctx: &mut Ctx<'_>,
    req: &crate::core::http::Request,
    draft: Draft,
    answer: &crate::core::http::Response,
) -> Result<u64> {
    let seq = next_seq(ctx)?;
    let mut created = None;
    if req.method.as_str() == "POST" && answer.status == 201 {
        let body = answer.json_body();
        if let (Some(uid), Some(at_id)) = (
            body.get("UID").and_then(Value::as_str),
            body.get("@id").and_then(Value::as_str),
        ) {
            if let Some(p) = server_path(&req.base_url, at_id) {
                created = Some((uid.to_string(), p));
            }
        }
    }
    let keep = ["content-type", "prefer"];
    let w = PendingWrite {
        seq,
        method: req.method.as_str().to_string(),
        path: req.path.clone(),
        query: req.query.clone(),
        headers: req
            .headers
            .iter()
            .filter(|(k, _)| keep.contains(&k.to_ascii_lowercase().as_str()))
            .cloned()
            .collect(),
        body: String::from_utf8_lossy(&req.body).into_owned(),
        target: draft.target,
        parent: draft.parent,
        base: draft.base,
        key: ctx.new_uid(),
        created,
        attempts: 0,
        next_try: 0,
        last_error: None,
    };
    ctx.put_json(&keys::replica_write(seq), &w)?;
    Ok(seq)
}

fn next_seq(ctx: &mut Ctx<'_>) -> Result<u64> {
    let n: u64 = ctx
        .get(keys::REPLICA_NEXT)?
        .and_then(|b| String::from_utf8_lossy(&b).parse().ok())
        .unwrap_or(1);
    ctx.put(keys::REPLICA_NEXT, (n + 1).to_string().as_bytes())?;
    Ok(n)
}

/// The local copy of an object for a conflict: its fields and workflow state.
fn local_snapshot(ctx: &Ctx<'_>, uid: Option<&str>) -> Result<Option<Value>> {
    let Some(uid) = uid else { return Ok(None) };
    Ok(tree::load(ctx, uid)?.map(|rec| {
        let mut m: Map<String, Value> = rec.fields.clone();
        m.insert("@type".into(), Value::String(rec.type_name.clone()));
        m.insert(
            "review_state".into(),
            rec.review_state
                .clone()
                .map(Value::String)
                .unwrap_or(Value::Null),
        );
        Value::Object(m)
    }))
}

/// Resolve conflict `id`. [`Resolution::Mine`] queues the write again, based on the server's
/// version; [`Resolution::Theirs`] makes the local copy the server's. To merge, take the
/// server's version and then make the merged edit as a new local write.
pub fn resolve(ctx: &mut Ctx<'_>, id: u64, how: Resolution) -> Result<()> {
    let c: Conflict = ctx
        .get_json(&keys::replica_conflict(id))
        .ok()
        .flatten()
        .ok_or_else(|| EngineError::NotFound {
            url: format!("conflict {id}"),
            context: None,
        })?;
    let Some(cfg) = config(ctx)? else {
        return Err(EngineError::bad_request("this site is not a replica"));
    };
    match (how, c.write) {
        (Resolution::Mine, None) => {
            return Err(EngineError::bad_request(
                "a corrupt entry cannot be sent again; take the server's version to drop it",
            ))
        }
        (Resolution::Mine, Some(mut w)) => {
            if !c.server_fetched {
                return Err(EngineError::bad_request(
                    "the server's version of this conflict is not known yet: sync first",
                ));
            }
            w.seq = next_seq(ctx)?;
            w.base = c.server_version.clone();
            w.key = ctx.new_uid();
            w.attempts = 0;
            w.next_try = 0;
            w.last_error = None;
            if let (Some(t), Some(v)) = (&w.target, &c.server_version) {
                ctx.put(&keys::replica_version(t), v.as_bytes())?;
            }
            ctx.put_json(&keys::replica_write(w.seq), &w)?;
        }
        (Resolution::Theirs, w) => {
            ctx.delete(&keys::replica_conflict(id))?;
            if let Some(w) = w {
                match &c.server {
                    Some(obj) => {
                        let busy = busy_uids(ctx)?;
                        import::import(
                            ctx,
                            &cfg.server,
                            obj,
                            c.server_version.as_deref(),
                            &cfg.login,
                            &|u| busy.contains(u),
                        )?;
                    }
                    None => {
                        for uid in w.created.iter().map(|c| &c.0).chain(w.target.iter()) {
                            if !busy_uids(ctx)?.contains(uid) {
                                import::remove(ctx, uid)?;
                            }
                        }
                    }
                }
            }
            return Ok(());
        }
    }
    ctx.delete(&keys::replica_conflict(id))?;
    Ok(())
}

/// Check a merge of conflict `id` before anything changes: the server's version taken
/// ([`Resolution::Theirs`]) and then edited with `fields` (the fields the user picked as theirs
/// own), through the same [`operations::edit`] a local PATCH runs, so the merged object meets
/// the type's schema, its required fields and its rules (an event's dates) exactly as the edit
/// will check them. Only an edit of an object both versions have can be merged. This writes
/// into `ctx`: run it in a transaction that is never committed (`Engine::replica_check_merge`),
/// so the replica and the conflict stay as they are whatever it answers.
pub fn check_merge(ctx: &mut Ctx<'_>, id: u64, fields: Map<String, Value>) -> Result<()> {
    let c: Conflict = ctx
        .get_json(&keys::replica_conflict(id))
        .ok()
        .flatten()
        .ok_or_else(|| EngineError::NotFound {
            url: format!("conflict {id}"),
            context: None,
        })?;
    let edit_of_both = c
        .write
        .as_ref()
        .is_some_and(|w| w.method == "PATCH" && w.created.is_none())
        && c.server_fetched;
    let server_uid = c
        .server
        .as_ref()
        .and_then(|s| s.get("UID"))
        .and_then(Value::as_str)
        .filter(|_| edit_of_both)
        .map(str::to_string)
        .ok_or_else(|| {
            EngineError::bad_request(
                "only an edit of an object both versions have can be merged field by field",
            )
        })?;
    resolve(ctx, id, Resolution::Theirs)?;
    let uid = import::local_uid(ctx, &server_uid)?;
    let mut obj = tree::load(ctx, &uid)?.ok_or_else(|| EngineError::NotFound {
        url: format!("the local copy of {server_uid}"),
        context: None,
    })?;
    operations::edit(
        ctx,
        &mut obj,
        operations::Edit {
            locks: operations::Locks::Bypass,
            type_name: None,
            fields,
            rename: None,
        },
    )
}

/// A sync session of one host handle: what it holds in memory only (the password, where the
/// current round stands).
#[derive(Debug, Default)]
pub struct Sync {
    /// The server password, when the host was given one (never stored).
    pub password: Option<String>,
    polled: bool,
    /// The visibility check of this round ran (or a full listing made it needless).
    verified: bool,
    /// The listing under way is the visibility check (not a download).
    verifying: bool,
    stopped: bool,
    /// Something was removed from the local copy in this round: the host must also forget it
    /// wherever it keeps older states (change-set logs, snapshots).
    purged: bool,
}

impl Sync {
    /// A session logging in with `password` when no token is stored.
    pub fn new(password: Option<String>) -> Self {
        Sync {
            password,
            ..Sync::default()
        }
    }

    /// Start a round: the feed is followed once more, and a round stopped by a failure goes on.
    pub fn begin_round(&mut self) {
        self.polled = false;
        self.verified = false;
        self.verifying = false;
        self.stopped = false;
        self.purged = false;
    }

    /// Whether this round removed objects from the local copy (gone on the server, or no longer
    /// visible to the user). The host then drops every older state it keeps of the site (the
    /// browser host: its change-set log and snapshot), so what the user lost access to is gone
    /// from every local store, not only from the current keyspace.
    pub fn purged(&self) -> bool {
        self.purged
    }

    fn remove(&mut self, ctx: &mut Ctx<'_>, local_uid: &str) -> Result<()> {
        if import::remove(ctx, local_uid)? {
            self.purged = true;
        }
        Ok(())
    }

    /// Whether the round stopped early (no answer, a 5xx, the credentials refused).
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// The next request of the round, or `None` when the round is over. `now_ms`: the time
    /// (ms since the epoch) for the backoff of failed writes.
    pub fn next_request(&mut self, ctx: &mut Ctx<'_>, now_ms: i64) -> Result<Option<Outgoing>> {
        if self.stopped {
            return Ok(None);
        }
        let Some(cfg) = config(ctx)? else {
            return Ok(None);
        };
        if state(ctx)?.held {
            return Ok(None); // "work offline", possibly set by another tab
        }
        let server = cfg.server.trim_end_matches('/').to_string();
        let Some(token) = cfg.token.clone() else {
            if let Some(pw) = &self.password {
                return Ok(Some(Outgoing {
                    step: Step::Login,
                    method: "POST".into(),
                    url: format!("{server}/@login"),
                    headers: json_headers(None),
                    body: Some(serde_json::json!({"login": cfg.login, "password": pw}).to_string()),
                }));
            }
            self.stop(ctx, "not logged in to the server: give credentials")?;
            return Ok(None);
        };
        let get = |step: Step, url: String| Outgoing {
            step,
            method: "GET".into(),
            url,
            headers: json_headers(Some(&token)),
            body: None,
        };
        // 1. the server's version of new conflicts
        for c in conflicts(ctx)? {
            if c.server_fetched {
                continue;
            }
            let Some(w) = &c.write else { continue };
            let path = match &w.created {
                Some(_) => object_path(&w.path), // the parent: nothing of the new object exists
                None => object_path(&w.path),
            };
            return Ok(Some(get(
                Step::ConflictServer { id: c.id },
                format!("{server}{path}"),
            )));
        }
        // 2. pending writes, in order; an unreadable one becomes a conflict
        loop {
            let first = ctx.scan(
                keys::REPLICA_WRITES,
                &prefix_end(keys::REPLICA_WRITES),
                Direction::Forward,
                1,
            )?;
            let Some((key, value)) = first.into_iter().next() else {
                break;
            };
            let w: PendingWrite = match serde_json::from_slice(&value) {
                Ok(w) => w,
                Err(e) => {
                    let id = keys::replica_seq(&key).unwrap_or(0);
                    ctx.delete(&key)?;
                    ctx.put_json(
                        &keys::replica_conflict(id),
                        &Conflict {
                            id,
                            write: None,
                            raw: Some(String::from_utf8_lossy(&value).into_owned()),
                            status: 0,
                            message: format!("the stored write could not be read: {e}"),
                            local: None,
                            server: None,
                            server_version: None,
                            server_fetched: true,
                        },
                    )?;
                    continue;
                }
            };
            if w.next_try > now_ms {
                break; // waiting out its backoff; later writes wait behind it
            }
            let mut headers = json_headers(Some(&token));
            headers.retain(|(k, _)| k != "Content-Type");
            headers.extend(w.headers.iter().cloned());
            let conditional = matches!(w.method.as_str(), "PATCH" | "PUT" | "DELETE")
                || w.path.contains("/@workflow/");
            if let (true, Some(base)) = (conditional, &w.base) {
                headers.push(("If-Match".into(), base.clone()));
            }
            headers.push(("Idempotency-Key".into(), w.key.clone()));
            let q = if w.query.is_empty() {
                String::new()
            } else {
                format!("?{}", w.query)
            };
            return Ok(Some(Outgoing {
                step: Step::Replay { seq: w.seq },
                method: w.method.clone(),
                url: format!("{server}{}{q}", w.path),
                headers,
                body: (!w.body.is_empty()).then(|| w.body.clone()),
            }));
        }
        // 3. a full download
        let mut st = state(ctx)?;
        match &st.phase {
            Phase::Fresh => {
                if st.feed == Some(false) {
                    st.phase = Phase::Listing {
                        b_start: 0,
                        cursor: None,
                    };
                    save_state(ctx, &st)?;
                } else {
                    return Ok(Some(get(Step::Cursor, format!("{server}/@changes"))));
                }
            }
            Phase::Listing { .. } | Phase::Following => {}
        }
        if let Phase::Listing { b_start, .. } = &st.phase {
            return Ok(Some(get(
                Step::List { b_start: *b_start },
                format!(
                    "{server}/@search?metadata_fields=UID&metadata_fields=modified&metadata_fields=review_state&b_size={PAGE}&b_start={b_start}"
                ),
            )));
        }
        // 4. objects to fetch (path order: parents first)
        if let Some((key, _)) = ctx
            .scan(
                keys::REPLICA_FETCH,
                &prefix_end(keys::REPLICA_FETCH),
                Direction::Forward,
                1,
            )?
            .into_iter()
            .next()
        {
            let path = String::from_utf8_lossy(&key[keys::REPLICA_FETCH.len()..]).into_owned();
            return Ok(Some(get(
                Step::Fetch { path: path.clone() },
                format!("{server}{path}"),
            )));
        }
        // 5. follow the server once per round
        if !self.polled {
            self.polled = true;
            if st.feed == Some(false) {
                st.phase = Phase::Listing {
                    b_start: 0,
                    cursor: None,
                };
                save_state(ctx, &st)?;
                return self.next_request(ctx, now_ms);
            }
            let since = st.cursor.clone().unwrap_or_default();
            return Ok(Some(get(
                Step::Changes,
                format!(
                    "{server}/@changes?since={}&limit={PAGE}",
                    percent_encode(&since)
                ),
            )));
        }
        // 6. re-check visibility once per round: list what the user may view now and remove the
        // rest. The change feed reports what happened to objects (retracted, unshared, deleted),
        // not what happened to the user (a group or a role lost), which changes what the user
        // may view without any object changing.
        if !self.verified {
            self.verified = true;
            self.verifying = true;
            st.phase = Phase::Listing {
                b_start: 0,
                cursor: st.cursor.clone(),
            };
            save_state(ctx, &st)?;
            return self.next_request(ctx, now_ms);
        }
        if st.last_error.is_some() {
            st.last_error = None;
            save_state(ctx, &st)?;
        }
        Ok(None)
    }

    fn stop(&mut self, ctx: &mut Ctx<'_>, why: &str) -> Result<()> {
        self.stopped = true;
        let mut st = state(ctx)?;
        st.last_error = Some(why.to_string());
        save_state(ctx, &st)
    }

    /// No answer came for `out` (the network failed, the server is down): the round stops, and
    /// the host's next round tries again (rounds are the retry: the demo runs one every few
    /// seconds). The write's failure is noted; backoff per write is for servers that answer with
    /// a failure ([`Sync::receive`]), which more attempts would only load further.
    pub fn failed(
        &mut self,
        ctx: &mut Ctx<'_>,
        out: &Outgoing,
        why: &str,
        _now_ms: i64,
    ) -> Result<()> {
        if let Step::Replay { seq } = &out.step {
            if let Some(mut w) = ctx.get_json::<PendingWrite>(&keys::replica_write(*seq))? {
                w.last_error = Some(format!("no answer: {why}"));
                ctx.put_json(&keys::replica_write(*seq), &w)?;
            }
        }
        self.stop(ctx, &format!("no answer from the server: {why}"))
    }

    fn back_off(&mut self, ctx: &mut Ctx<'_>, seq: u64, why: &str, now_ms: i64) -> Result<()> {
        if let Some(mut w) = ctx.get_json::<PendingWrite>(&keys::replica_write(seq))? {
            w.attempts += 1;
            let wait = (1000i64 << w.attempts.min(20)).min(MAX_BACKOFF_MS);
            w.next_try = now_ms + wait;
            w.last_error = Some(why.to_string());
            ctx.put_json(&keys::replica_write(seq), &w)?;
        }
        Ok(())
    }

    /// The server answered `out` with `inc`.
    pub fn receive(
        &mut self,
        ctx: &mut Ctx<'_>,
        out: &Outgoing,
        inc: &Incoming,
        now_ms: i64,
    ) -> Result<()> {
        let Some(mut cfg) = config(ctx)? else {
            return Ok(());
        };
        let server = cfg.server.trim_end_matches('/').to_string();
        if inc.status == 401 || (out.step == Step::Login && inc.status >= 400) {
            cfg.token = None;
            set_config(ctx, &cfg)?;
            if out.step == Step::Login {
                self.password = None; // do not try the same password again
            }
            if self.password.is_none() {
                return self.stop(
                    ctx,
                    &format!("the server refused the credentials: {}", inc.message()),
                );
            }
            return Ok(());
        }
        if inc.status >= 500 || inc.status == 408 || inc.status == 429 {
            if let Step::Replay { seq } = &out.step {
                self.back_off(ctx, *seq, &inc.message(), now_ms)?;
            }
            return self.stop(ctx, &format!("the server failed: {}", inc.message()));
        }
        let body = inc.json();
        match &out.step {
            Step::Login => {
                cfg.token = body
                    .get("token")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                if cfg.token.is_none() {
                    return self.stop(ctx, "the server's login answer has no token");
                }
                set_config(ctx, &cfg)?;
            }
            Step::Cursor => {
                let mut st = state(ctx)?;
                if inc.status == 200 {
                    st.feed = Some(true);
                    st.phase = Phase::Listing {
                        b_start: 0,
                        cursor: body
                            .get("cursor")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                    };
                } else {
                    st.feed = Some(false);
                    st.phase = Phase::Listing {
                        b_start: 0,
                        cursor: None,
                    };
                }
                save_state(ctx, &st)?;
            }
            Step::List { b_start } => {
                if inc.status != 200 {
                    return self.stop(ctx, &format!("listing failed: {}", inc.message()));
                }
                self.receive_listing(ctx, &server, *b_start, &body)?;
            }
            Step::Fetch { path } => {
                // the version the feed named, for an answer whose ETag the browser hides (a
                // cross-origin server that does not expose it)
                let feed_version = ctx
                    .get(&keys::replica_fetch(path))?
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .filter(|v| !v.is_empty());
                ctx.delete(&keys::replica_fetch(path))?;
                let busy = busy_uids(ctx)?;
                if inc.status == 200 {
                    let version = inc.header("etag").map(str::to_string).or(feed_version);
                    let got =
                        import::import(ctx, &server, &body, version.as_deref(), &cfg.login, &|u| {
                            busy.contains(u)
                        });
                    match got {
                        Ok(Imported::Moved) => {
                            let mut st = state(ctx)?;
                            st.phase = Phase::Fresh;
                            save_state(ctx, &st)?;
                        }
                        Ok(_) => {}
                        Err(e) => {
                            // a representation the local engine cannot take: report, go on
                            let mut st = state(ctx)?;
                            st.last_error = Some(format!("cannot import {path}: {e}"));
                            save_state(ctx, &st)?;
                        }
                    }
                } else if let Some(rec) = tree::at_path(ctx, path)? {
                    // gone, or no longer visible to us
                    if !busy.contains(&rec.uid) {
                        self.remove(ctx, &rec.uid)?;
                    }
                }
            }
            Step::Changes => {
                let mut st = state(ctx)?;
                // 410: the cursor expired; 400: the server does not take it (a cursor of another
                // server, say); 404/405: no change feed there. Each time: download everything.
                if matches!(inc.status, 400 | 404 | 405 | 410) {
                    if matches!(inc.status, 404 | 405) {
                        st.feed = Some(false);
                    }
                    st.phase = Phase::Fresh;
                    st.cursor = None;
                    save_state(ctx, &st)?;
                    self.polled = false;
                    return Ok(());
                }
                let busy = busy_uids(ctx)?;
                for ch in body
                    .get("changes")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let Some(suid) = ch.get("UID").and_then(Value::as_str) else {
                        continue;
                    };
                    let luid = import::local_uid(ctx, suid)?;
                    if ch.get("action").and_then(Value::as_str) == Some("removed") {
                        if !busy.contains(&luid) {
                            self.remove(ctx, &luid)?;
                        }
                        continue;
                    }
                    let version = ch.get("version").and_then(Value::as_str);
                    let have = ctx
                        .get(&keys::replica_version(&luid))?
                        .map(|b| String::from_utf8_lossy(&b).into_owned());
                    if version.is_some() && have.as_deref() == version {
                        continue;
                    }
                    if let Some(p) = ch.get("path").and_then(Value::as_str) {
                        let p = if p == "/" {
                            ""
                        } else {
                            p.trim_end_matches('/')
                        };
                        ctx.put(&keys::replica_fetch(p), version.unwrap_or("").as_bytes())?;
                    }
                }
                if let Some(c) = body.get("cursor").and_then(Value::as_str) {
                    st.cursor = Some(c.to_string());
                }
                save_state(ctx, &st)?;
                if body.get("more").and_then(Value::as_bool) == Some(true) {
                    self.polled = false;
                }
            }
            Step::Replay { seq } => {
                let Some(w) = ctx.get_json::<PendingWrite>(&keys::replica_write(*seq))? else {
                    return Ok(());
                };
                if (200..300).contains(&inc.status) {
                    accept(ctx, &server, &cfg.login, w, inc)?;
                } else {
                    ctx.delete(&keys::replica_write(*seq))?;
                    let local_uid = w
                        .created
                        .as_ref()
                        .map(|c| c.0.clone())
                        .or_else(|| w.target.clone());
                    let local = local_snapshot(ctx, local_uid.as_deref())?;
                    ctx.put_json(
                        &keys::replica_conflict(*seq),
                        &Conflict {
                            id: *seq,
                            write: Some(w),
                            raw: None,
                            status: inc.status,
                            message: inc.message(),
                            local,
                            server: None,
                            server_version: None,
                            server_fetched: false,
                        },
                    )?;
                }
            }
            Step::Logout => {
                cfg.token = None;
                set_config(ctx, &cfg)?;
            }
            Step::ConflictServer { id } => {
                if let Some(mut c) = ctx.get_json::<Conflict>(&keys::replica_conflict(*id))? {
                    c.server_fetched = true;
                    if inc.status == 200 && c.write.as_ref().is_some_and(|w| w.created.is_none()) {
                        c.server = Some(body);
                        c.server_version = inc.header("etag").map(str::to_string);
                    }
                    ctx.put_json(&keys::replica_conflict(*id), &c)?;
                }
            }
        }
        Ok(())
    }

    fn receive_listing(
        &mut self,
        ctx: &mut Ctx<'_>,
        server: &str,
        b_start: u64,
        body: &Value,
    ) -> Result<()> {
        let items = body
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for item in &items {
            let (Some(suid), Some(at_id)) = (
                item.get("UID").and_then(Value::as_str),
                item.get("@id").and_then(Value::as_str),
            ) else {
                continue;
            };
            let Some(path) = server_path(server, at_id) else {
                continue;
            };
            ctx.put(&keys::replica_listed(suid), b"")?;
            let luid = import::local_uid(ctx, suid)?;
            let same = match tree::load(ctx, &luid)? {
                Some(rec) => {
                    let modified = item
                        .get("modified")
                        .and_then(Value::as_str)
                        .and_then(crate::core::model::fields::parse_datetime);
                    let state = item.get("review_state").and_then(Value::as_str);
                    rec.path == path
                        && modified == Some(rec.modified)
                        && state.unwrap_or("") == rec.review_state.as_deref().unwrap_or("")
                        && ctx.get(&keys::replica_version(&luid))?.is_some()
                }
                None => false,
            };
            if !same {
                ctx.put(&keys::replica_fetch(&path), b"")?;
            }
        }
        let total = body.get("items_total").and_then(Value::as_u64).unwrap_or(0);
        let next = b_start + items.len() as u64;
        let mut st = state(ctx)?;
        let cursor = match &st.phase {
            Phase::Listing { cursor, .. } => cursor.clone(),
            _ => None,
        };
        if !items.is_empty() && next < total {
            st.phase = Phase::Listing {
                b_start: next,
                cursor,
            };
            return save_state(ctx, &st);
        }
        // The listing is complete: the root is always there; remove what the server no longer
        // lists (unless writes are waiting on it).
        let busy = busy_uids(ctx)?;
        let root = tree::root(ctx)?;
        let mut gone = Vec::new();
        for (_, uid) in ctx.scan_prefix(b"p:")? {
            let uid = String::from_utf8_lossy(&uid).into_owned();
            if uid == root.uid || busy.contains(&uid) {
                continue;
            }
            let suid = import::server_uid(ctx, &uid)?;
            if ctx.get(&keys::replica_listed(&suid))?.is_none() {
                gone.push(uid);
            }
        }
        for uid in gone {
            self.remove(ctx, &uid)?; // a removed ancestor took it already: a no-op
        }
        ctx.delete_prefix(keys::REPLICA_LISTED)?;
        // the root's own representation (title, ...) is not in a search result; a visibility
        // check leaves it to the feed
        if !std::mem::take(&mut self.verifying) {
            ctx.put(&keys::replica_fetch(""), b"")?;
        }
        if st.feed == Some(true) {
            if let Some(c) = cursor {
                st.cursor = Some(c);
            }
        }
        st.phase = Phase::Following;
        self.polled = true;
        self.verified = true;
        save_state(ctx, &st)
    }
}

/// The server accepted pending write `w` with `inc`: drop it, carry what the server decided
/// (ids, versions) over to the local copy and to the writes after it.
fn accept(
    ctx: &mut Ctx<'_>,
    server: &str,
    login: &str,
    w: PendingWrite,
    inc: &Incoming,
) -> Result<()> {
    ctx.delete(&keys::replica_write(w.seq))?;
    let later = pending(ctx)?;
    let new_version = inc.header("etag").map(str::to_string);
    let mut rewritten: Vec<PendingWrite> = later.clone();

    // A child added or removed moves its parent's revision by one (the server's ETag is
    // "<uid>-<rev>"): later writes based on the parent's version before it are based on the
    // next one.
    let child_change = (w.created.is_some() && w.target.is_some()) || w.method == "DELETE";
    let parent_uid = if w.created.is_some() {
        w.target.clone()
    } else if w.method == "DELETE" {
        w.parent.clone()
    } else {
        None
    };
    if let (true, Some(p)) = (child_change, parent_uid) {
        if let Some(old) = ctx
            .get(&keys::replica_version(&p))?
            .map(|b| String::from_utf8_lossy(&b).into_owned())
        {
            if let Some(next) = bump(&old) {
                ctx.put(&keys::replica_version(&p), next.as_bytes())?;
                for l in rewritten.iter_mut() {
                    if l.target.as_deref() == Some(&p) && l.base.as_deref() == Some(&old) {
                        l.base = Some(next.clone());
                    }
                }
            }
        }
    }

    if let Some((local_uid, local_path)) = &w.created {
        let body = inc.json();
        let suid = body.get("UID").and_then(Value::as_str).map(str::to_string);
        let spath = body
            .get("@id")
            .and_then(Value::as_str)
            .and_then(|i| server_path(server, i));
        if let (Some(suid), Some(spath)) = (suid, spath) {
            for l in rewritten.iter_mut() {
                rewrite(l, local_uid, &suid, local_path, &spath);
            }
            for l in &rewritten {
                ctx.put_json(&keys::replica_write(l.seq), l)?;
            }
            // the local copy becomes the server's (its offline children come back as their
            // own creates are accepted)
            import::remove(ctx, local_uid)?;
            import::import(ctx, server, &body, new_version.as_deref(), login, &|_| {
                false
            })?;
            return Ok(());
        }
    } else if let (Some(t), Some(v)) = (&w.target, &new_version) {
        if let Some(old) = &w.base {
            for l in rewritten.iter_mut() {
                if l.target.as_deref() == Some(t) && l.base.as_deref() == Some(old) {
                    l.base = Some(v.clone());
                }
            }
        }
        ctx.put(&keys::replica_version(t), v.as_bytes())?;
    }
    for (l, before) in rewritten.iter().zip(&later) {
        if l != before {
            ctx.put_json(&keys::replica_write(l.seq), l)?;
        }
    }
    // refetch what the write changed, so the local copy is the server's
    if w.method != "DELETE" || w.path.contains("/@") {
        let p = object_path(&w.path);
        ctx.put(&keys::replica_fetch(&p), b"")?;
    } else if let Some(t) = &w.target {
        // the object is gone on both sides: so is the version of its copy
        if tree::load(ctx, t)?.is_none() {
            ctx.delete(&keys::replica_version(t))?;
        }
    }
    Ok(())
}

/// `"<uid>-<n>"` → `"<uid>-<n+1>"`.
fn bump(etag: &str) -> Option<String> {
    let inner = etag.trim_matches('"');
    let (uid, rev) = inner.rsplit_once('-')?;
    let rev: u64 = rev.parse().ok()?;
    Some(format!("\"{uid}-{}\"", rev + 1))
}

/// Rewrite a later write after the server gave the object created as `local_uid` at
/// `local_path` the uid `suid` and the path `spath`.
fn rewrite(l: &mut PendingWrite, local_uid: &str, suid: &str, local_path: &str, spath: &str) {
    if l.path == local_path || l.path.starts_with(&format!("{local_path}/")) {
        l.path = format!("{spath}{}", &l.path[local_path.len()..]);
    }
    if let Some((_, p)) = &mut l.created {
        if p.starts_with(&format!("{local_path}/")) {
            *p = format!("{spath}{}", &p[local_path.len()..]);
        }
    }
    if local_uid != suid {
        l.body = l.body.replace(local_uid, suid);
    }
    if local_path != spath {
        // links in bodies by path
        l.body = l
            .body
            .replace(&format!("{local_path}/"), &format!("{spath}/"));
        l.body = l
            .body
            .replace(&format!("{local_path}\""), &format!("{spath}\""));
    }
    if l.target.as_deref() == Some(local_uid) {
        l.target = Some(suid.to_string());
    }
    if l.parent.as_deref() == Some(local_uid) {
        l.parent = Some(suid.to_string());
    }
}

fn json_headers(token: Option<&str>) -> Vec<(String, String)> {
    let mut h = vec![
        ("Accept".to_string(), "application/json".to_string()),
        ("Content-Type".to_string(), "application/json".to_string()),
    ];
    if let Some(t) = token {
        h.push(("Authorization".into(), format!("Bearer {t}")));
    }
    h
}

fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    // The replica driven against a second engine playing the server (its real API answers, with a
    // switch for "the network is down" and for canned 5xx answers), and against canned change
    // feed answers.

    use std::sync::Arc;

    use serde_json::{json, Value};

    use super::*;
    use crate::{
        Engine, EngineOptions, MemStore, Method, Request, Response, SeededEntropy, SiteSetup,
    };

    const SERVER: &str = "http://server.test";
    const LOCAL: &str = "http://local.test";
    const ADMIN: &str = "Basic YWRtaW46c2VjcmV0"; // admin:secret

    struct Net {
        server: Engine<MemStore>,
        down: bool,
        /// Answer every replayed write with this status instead of running it.
        fail_writes: Option<u16>,
        /// Canned answers for `/@changes` (taken in order; none left: 404).
        feed: Vec<(u16, Value)>,
        /// Let the server answer `/@changes` itself (its real change feed).
        real_feed: bool,
        /// Run the next replayed write on the server but lose its answer.
        lose_next_answer: bool,
        /// Leave `ETag` out of the answers (a cross-origin server that does not expose it).
        hide_etag: bool,
        sent: Vec<Outgoing>,
    }

    struct Replica {
        engine: Engine<MemStore>,
        sync: Sync,
        now: i64,
    }

    fn engine(seed: u64) -> Engine<MemStore> {
        let mut o = EngineOptions::for_tests();
        o.entropy = Arc::new(SeededEntropy::new(seed));
        let e = Engine::new(MemStore::new(), o).unwrap();
        e.create_site(&SiteSetup::new("secret")).unwrap();
        e
    }

    fn server_call(
        server: &Engine<MemStore>,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Response {
        let mut r = Request::new(Method::parse(method), path, SERVER)
            .header("Authorization", ADMIN)
            .header("Accept", "application/json");
        if let Some(b) = body {
            r = r.json(&b);
        }
        server.handle(r)
    }

    impl Net {
        fn new() -> Net {
            let server = engine(1);
            let r = server_call(
                &server,
                "POST",
                "/",
                Some(json!({"@type": "Folder", "title": "News"})),
            );
            assert_eq!(r.status, 201);
            for t in ["Hello", "Old"] {
                let r = server_call(
                    &server,
                    "POST",
                    "/news",
                    Some(json!({"@type": "Page", "title": t})),
                );
                assert_eq!(r.status, 201);
            }
            let r = server_call(&server, "POST", "/news/hello/@workflow/publish", None);
            assert_eq!(r.status, 200);
            Net {
                server,
                down: false,
                fail_writes: None,
                feed: Vec::new(),
                real_feed: false,
                lose_next_answer: false,
                hide_etag: false,
                sent: Vec::new(),
            }
        }

        fn perform(&mut self, out: &Outgoing) -> Option<Incoming> {
            self.sent.push(out.clone());
            if self.down {
                return None;
            }
            let rest = out.url.strip_prefix(SERVER).expect("a server URL");
            if rest.starts_with("/@changes") && !self.real_feed {
                let (status, body) = if self.feed.is_empty() {
                    (404, json!({"type": "NotFound", "message": "no feed"}))
                } else {
                    self.feed.remove(0)
                };
                return Some(Incoming {
                    status,
                    headers: vec![],
                    body: body.to_string().into_bytes(),
                });
            }
            if let (Step::Replay { .. }, Some(s)) = (&out.step, self.fail_writes) {
                return Some(Incoming {
                    status: s,
                    headers: vec![],
                    body: json!({"type": "Unavailable", "message": "try later"})
                        .to_string()
                        .into_bytes(),
                });
            }
            let mut r = Request::new(Method::parse(&out.method), rest, SERVER);
            r.headers = out.headers.clone();
            r.body = out.body.clone().unwrap_or_default().into_bytes();
            let resp = self.server.handle(r);
            if self.lose_next_answer && matches!(out.step, Step::Replay { .. }) {
                self.lose_next_answer = false;
                return None;
            }
            let mut headers = resp.headers.clone();
            if self.hide_etag {
                headers.retain(|(k, _)| !k.eq_ignore_ascii_case("etag"));
            }
            Some(Incoming {
                status: resp.status,
                headers,
                body: resp.body.clone(),
            })
        }

        fn get(&self, path: &str) -> Response {
            server_call(&self.server, "GET", path, None)
        }
    }

    impl Replica {
        fn new() -> Replica {
            let engine = engine(2);
            engine
                .with_write(|ctx| {
                    set_config(
                        ctx,
                        &Config {
                            server: SERVER.into(),
                            login: "admin".into(),
                            token: None,
                        },
                    )
                })
                .unwrap();
            Replica {
                engine,
                sync: Sync::new(Some("secret".into())),
                now: 1_000_000,
            }
        }

        /// One sync round; how many requests it made.
        fn round(&mut self, net: &mut Net) -> usize {
            self.sync.begin_round();
            let mut n = 0;
            loop {
                let now = self.now;
                let out = self
                    .engine
                    .with_write(|ctx| self.sync.next_request(ctx, now))
                    .unwrap();
                let Some(out) = out else { break };
                n += 1;
                assert!(n < 200, "the round does not end: {out:?}");
                match net.perform(&out) {
                    Some(inc) => self
                        .engine
                        .with_write(|ctx| self.sync.receive(ctx, &out, &inc, now))
                        .unwrap(),
                    None => self
                        .engine
                        .with_write(|ctx| self.sync.failed(ctx, &out, "connection refused", now))
                        .unwrap(),
                }
            }
            n
        }

        /// A request to the local site, as the browser host makes it: unsafe requests are recorded.
        fn call(&self, method: &str, path: &str, body: Option<Value>) -> Response {
            let mut r = Request::new(Method::parse(method), path, LOCAL)
                .header("Authorization", ADMIN)
                .header("Accept", "application/json");
            if let Some(b) = body {
                r = r.json(&b);
            }
            if r.method.is_safe() {
                return self.engine.handle(r);
            }
            let draft = self
                .engine
                .with_write(|ctx| prepare_write(ctx, &r.path))
                .unwrap();
            let resp = self.engine.handle(r.clone());
            if (200..300).contains(&resp.status) {
                self.engine
                    .with_write(|ctx| record_write(ctx, &r, draft, &resp))
                    .unwrap();
            }
            resp
        }

        fn status(&self) -> Status {
            self.engine.with_write(|ctx| status(ctx)).unwrap().unwrap()
        }

        fn conflicts(&self) -> Vec<Conflict> {
            self.engine.with_write(|ctx| conflicts(ctx)).unwrap()
        }
    }

    fn title(r: &Response) -> String {
        r.json_body()["title"].as_str().unwrap_or("").to_string()
    }

    fn downloaded() -> (Net, Replica) {
        let mut net = Net::new();
        let mut rep = Replica::new();
        rep.round(&mut net);
        assert!(rep.status().downloaded, "{:?}", rep.status());
        (net, rep)
    }

    #[test]
    fn a_full_download_keeps_the_servers_uids_paths_states_and_versions() {
        let (net, rep) = downloaded();
        let s = net.get("/news/hello");
        let l = rep.call("GET", "/news/hello", None);
        assert_eq!(l.status, 200);
        let (sj, lj) = (s.json_body(), l.json_body());
        for k in [
            "UID",
            "id",
            "title",
            "review_state",
            "created",
            "modified",
            "@type",
        ] {
            assert_eq!(sj[k], lj[k], "{k}");
        }
        assert_eq!(s.header_value("etag"), l.header_value("etag"));
        assert_eq!(lj["@id"], json!(format!("{LOCAL}/news/hello")));
        // the folder lists both pages, in the server's order
        let items: Vec<String> = rep.call("GET", "/news", None).json_body()["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                i["@id"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(items, ["hello", "old"]);
        // local search finds what was replicated
        let found = rep
            .call("GET", "/@search?SearchableText=hello", None)
            .json_body();
        assert_eq!(found["items_total"], json!(1));
        // nothing else than the user's own view came over: no server user records, no secret
        let server_secret = net.server.with_write(|ctx| ctx.get(keys::SITE)).unwrap();
        let local_secret = rep.engine.with_write(|ctx| ctx.get(keys::SITE)).unwrap();
        assert_ne!(server_secret, local_secret);
        // a second round with no change on the server fetches nothing but the root
        let mut net = net;
        net.sent.clear();
        let mut rep = rep;
        rep.round(&mut net);
        let fetched: Vec<_> = net
            .sent
            .iter()
            .filter(|o| matches!(o.step, Step::Fetch { .. }))
            .map(|o| o.url.clone())
            .collect();
        assert_eq!(fetched, [SERVER.to_string()]);
    }

    #[test]
    fn offline_edit_create_delete_reach_the_server_when_it_comes_back() {
        let (mut net, mut rep) = downloaded();
        net.down = true;
        assert_eq!(
            rep.call(
                "PATCH",
                "/news/hello",
                Some(json!({"title": "Hello offline"}))
            )
            .status,
            204
        );
        let created = rep.call(
            "POST",
            "/news",
            Some(json!({"@type": "Page", "title": "Fresh"})),
        );
        assert_eq!(created.status, 201);
        let local_uid = created.json_body()["UID"].as_str().unwrap().to_string();
        // an edit of the page created offline, and of its folder
        assert_eq!(
            rep.call(
                "PATCH",
                "/news/fresh",
                Some(json!({"description": "made offline"}))
            )
            .status,
            204
        );
        assert_eq!(
            rep.call("PATCH", "/news", Some(json!({"title": "News (edited)"})))
                .status,
            204
        );
        assert_eq!(rep.call("DELETE", "/news/old", None).status, 204);
        // the UI sees everything at once
        assert_eq!(
            title(&rep.call("GET", "/news/hello", None)),
            "Hello offline"
        );
        assert_eq!(rep.status().pending, 5);
        rep.round(&mut net);
        assert_eq!(rep.status().pending, 5, "nothing was sent while down");
        assert!(rep.status().last_error.unwrap().contains("no answer"));

        net.down = false;
        rep.round(&mut net); // no backoff after a missing answer: the next round sends at once
        let st = rep.status();
        assert_eq!((st.pending, st.conflicts), (0, 0), "{:?}", rep.conflicts());
        assert_eq!(title(&net.get("/news/hello")), "Hello offline");
        assert_eq!(title(&net.get("/news")), "News (edited)");
        let fresh = net.get("/news/fresh");
        assert_eq!(fresh.status, 200);
        assert_eq!(fresh.json_body()["description"], json!("made offline"));
        assert_eq!(net.get("/news/old").status, 404);
        // the local copy now holds the server's uid and version of the created page
        let local = rep.call("GET", "/news/fresh", None);
        assert_eq!(local.json_body()["UID"], fresh.json_body()["UID"]);
        assert_ne!(local.json_body()["UID"], json!(local_uid));
        assert_eq!(local.json_body()["description"], json!("made offline"));
        assert_eq!(local.header_value("etag"), fresh.header_value("etag"));
    }

    #[test]
    fn each_write_carries_if_match_and_keeps_its_idempotency_key_across_retries() {
        let (mut net, mut rep) = downloaded();
        let etag = net
            .get("/news/hello")
            .header_value("etag")
            .unwrap()
            .to_string();
        rep.call("PATCH", "/news/hello", Some(json!({"title": "Again"})));
        net.fail_writes = Some(503);
        net.sent.clear();
        rep.round(&mut net);
        let first: Vec<_> = net
            .sent
            .iter()
            .filter(|o| matches!(o.step, Step::Replay { .. }))
            .cloned()
            .collect();
        assert_eq!(first.len(), 1);
        let header = |o: &Outgoing, n: &str| {
            o.headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(n))
                .map(|(_, v)| v.clone())
        };
        assert_eq!(header(&first[0], "If-Match"), Some(etag));
        let key = header(&first[0], "Idempotency-Key").unwrap();
        let w = &rep.engine.with_write(|ctx| pending(ctx)).unwrap()[0];
        assert_eq!((w.attempts, w.next_try), (1, rep.now + 2000));
        // within the backoff the write is not sent again
        net.sent.clear();
        rep.round(&mut net);
        assert!(!net
            .sent
            .iter()
            .any(|o| matches!(o.step, Step::Replay { .. })));
        // after it, with the same key
        net.fail_writes = None;
        rep.now += 2000;
        net.sent.clear();
        rep.round(&mut net);
        let again = net
            .sent
            .iter()
            .find(|o| matches!(o.step, Step::Replay { .. }))
            .unwrap();
        assert_eq!(header(again, "Idempotency-Key"), Some(key));
        assert_eq!(rep.status().pending, 0);
        assert_eq!(title(&net.get("/news/hello")), "Again");
    }

    #[test]
    fn a_write_the_server_refuses_is_kept_as_a_conflict_with_both_versions() {
        let (mut net, mut rep) = downloaded();
        rep.call("PATCH", "/news/hello", Some(json!({"title": "Mine"})));
        server_call(
            &net.server,
            "PATCH",
            "/news/hello",
            Some(json!({"title": "Theirs"})),
        );
        rep.round(&mut net);
        let cs = rep.conflicts();
        assert_eq!(cs.len(), 1);
        let c = &cs[0];
        assert_eq!(c.status, 412);
        assert_eq!(c.local.as_ref().unwrap()["title"], json!("Mine"));
        assert_eq!(c.server.as_ref().unwrap()["title"], json!("Theirs"));
        assert_eq!(
            c.server_version.as_deref(),
            net.get("/news/hello").header_value("etag")
        );
        // nothing lost: the local copy still shows mine, the server theirs
        assert_eq!(title(&rep.call("GET", "/news/hello", None)), "Mine");
        assert_eq!(title(&net.get("/news/hello")), "Theirs");
        // keep mine: sent again with the server's version
        rep.engine
            .with_write(|ctx| resolve(ctx, c.id, Resolution::Mine))
            .unwrap();
        rep.round(&mut net);
        assert_eq!(rep.status().conflicts, 0);
        assert_eq!(title(&net.get("/news/hello")), "Mine");
    }

    #[test]
    fn taking_the_servers_version_replaces_the_local_copy() {
        let (mut net, mut rep) = downloaded();
        rep.call("PATCH", "/news/hello", Some(json!({"title": "Mine"})));
        server_call(
            &net.server,
            "PATCH",
            "/news/hello",
            Some(json!({"title": "Theirs"})),
        );
        rep.round(&mut net);
        let id = rep.conflicts()[0].id;
        rep.engine
            .with_write(|ctx| resolve(ctx, id, Resolution::Theirs))
            .unwrap();
        assert_eq!(title(&rep.call("GET", "/news/hello", None)), "Theirs");
        // a merge is "theirs" and then a new edit, based on the server's version
        rep.call(
            "PATCH",
            "/news/hello",
            Some(json!({"title": "Theirs and mine"})),
        );
        rep.round(&mut net);
        assert_eq!(rep.status().conflicts, 0);
        assert_eq!(title(&net.get("/news/hello")), "Theirs and mine");
    }

    #[test]
    fn a_merge_the_schema_refuses_is_checked_first_and_changes_nothing() {
        let (mut net, mut rep) = downloaded();
        let r = server_call(
            &net.server,
            "POST",
            "/news",
            Some(json!({"@type": "Event", "id": "fair", "title": "Fair",
                "start": "2027-06-10T10:00:00Z", "end": "2027-06-10T16:00:00Z"})),
        );
        assert_eq!(r.status, 201);
        rep.round(&mut net);
        let mine = json!({"start": "2027-06-12T10:00:00Z", "end": "2027-06-12T16:00:00Z"});
        assert_eq!(rep.call("PATCH", "/news/fair", Some(mine)).status, 204);
        let theirs = json!({"title": "Fair (moved)",
            "start": "2027-06-08T10:00:00Z", "end": "2027-06-08T16:00:00Z"});
        assert_eq!(
            server_call(&net.server, "PATCH", "/news/fair", Some(theirs)).status,
            204
        );
        rep.round(&mut net);
        let cs = rep.conflicts();
        assert_eq!(cs.len(), 1);
        let id = cs[0].id;
        let fields = |v: Value| v.as_object().cloned().unwrap();
        // my start with their end: the merged event would end before it starts
        let err = rep
            .engine
            .replica_check_merge(id, fields(json!({"start": "2027-06-12T10:00:00Z"})))
            .unwrap_err();
        assert!(err.to_string().contains("'end'"), "{err}");
        // an unknown field is refused too
        assert!(rep
            .engine
            .replica_check_merge(id, fields(json!({"no_such_field": 1})))
            .is_err());
        // nothing changed: the conflict is there, the local copy still mine
        assert_eq!(rep.conflicts().len(), 1);
        let local = rep.call("GET", "/news/fair", None).json_body();
        assert_eq!(local["start"], json!("2027-06-12T10:00:00+00:00"));
        assert_eq!(local["title"], json!("Fair"));
        // my start and my end: accepted, and still nothing changed until the merge is made
        let both = fields(json!({"start": "2027-06-12T10:00:00Z", "end": "2027-06-12T16:00:00Z"}));
        rep.engine.replica_check_merge(id, both.clone()).unwrap();
        assert_eq!(rep.conflicts().len(), 1);
        assert_eq!(rep.status().pending, 0);
        // the merge itself: theirs, then the edit, sent with the server's version
        rep.engine
            .with_write(|ctx| resolve(ctx, id, Resolution::Theirs))
            .unwrap();
        assert_eq!(
            rep.call("PATCH", "/news/fair", Some(Value::Object(both)))
                .status,
            204
        );
        rep.round(&mut net);
        assert_eq!(rep.status().conflicts, 0);
        let on_server = net.get("/news/fair").json_body();
        assert_eq!(on_server["title"], json!("Fair (moved)"));
        assert_eq!(on_server["end"], json!("2027-06-12T16:00:00+00:00"));
    }

    #[test]
    fn only_an_edit_of_an_object_both_sides_have_can_be_merged() {
        let (mut net, mut rep) = downloaded();
        rep.call("PATCH", "/news/old", Some(json!({"title": "Edited"})));
        server_call(&net.server, "DELETE", "/news/old", None);
        rep.round(&mut net);
        let id = rep.conflicts()[0].id;
        let err = rep
            .engine
            .replica_check_merge(id, json!({"title": "x"}).as_object().cloned().unwrap())
            .unwrap_err();
        assert!(err.to_string().contains("merged"), "{err}");
        assert!(rep
            .engine
            .replica_check_merge(999, serde_json::Map::new())
            .is_err());
        assert_eq!(rep.conflicts().len(), 1);
    }

    #[test]
    fn a_write_to_an_object_deleted_on_the_server_is_a_conflict_and_theirs_removes_it() {
        let (mut net, mut rep) = downloaded();
        rep.call("PATCH", "/news/old", Some(json!({"title": "Edited"})));
        assert_eq!(
            server_call(&net.server, "DELETE", "/news/old", None).status,
            204
        );
        rep.round(&mut net);
        let cs = rep.conflicts();
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].status, 404);
        assert!(cs[0].server.is_none() && cs[0].server_fetched);
        assert_eq!(
            rep.call("GET", "/news/old", None).status,
            200,
            "kept while in conflict"
        );
        rep.engine
            .with_write(|ctx| resolve(ctx, cs[0].id, Resolution::Theirs))
            .unwrap();
        assert_eq!(rep.call("GET", "/news/old", None).status, 404);
    }

    #[test]
    fn a_corrupt_pending_entry_is_reported_not_replayed() {
        let (mut net, mut rep) = downloaded();
        rep.engine
            .with_write(|ctx| ctx.put(&keys::replica_write(99), b"{not json"))
            .unwrap();
        net.sent.clear();
        rep.round(&mut net);
        assert!(!net
            .sent
            .iter()
            .any(|o| matches!(o.step, Step::Replay { .. })));
        let cs = rep.conflicts();
        assert_eq!(cs.len(), 1);
        assert_eq!((cs[0].id, cs[0].status), (99, 0));
        assert_eq!(cs[0].raw.as_deref(), Some("{not json"));
        assert!(rep
            .engine
            .with_write(|ctx| resolve(ctx, 99, Resolution::Mine))
            .is_err());
        rep.engine
            .with_write(|ctx| resolve(ctx, 99, Resolution::Theirs))
            .unwrap();
        assert_eq!(rep.status().conflicts, 0);
    }

    #[test]
    fn changes_on_the_server_reach_the_replica_without_a_feed() {
        let (mut net, mut rep) = downloaded();
        // a listing tells changes by the modification time: let the server's clock move
        if let Some(c) = &net.server.core().options.test_clock {
            c.advance(5);
        }
        server_call(
            &net.server,
            "PATCH",
            "/news/hello",
            Some(json!({"title": "Changed there"})),
        );
        server_call(&net.server, "DELETE", "/news/old", None);
        server_call(
            &net.server,
            "POST",
            "/news",
            Some(json!({"@type": "Page", "title": "New there"})),
        );
        rep.round(&mut net);
        assert_eq!(
            title(&rep.call("GET", "/news/hello", None)),
            "Changed there"
        );
        assert_eq!(rep.call("GET", "/news/old", None).status, 404);
        assert_eq!(
            title(&rep.call("GET", "/news/new-there", None)),
            "New there"
        );
    }

    #[test]
    fn the_change_feed_is_followed_and_an_expired_cursor_downloads_again() {
        let mut net = Net::new();
        let hello = net.get("/news/hello").json_body();
        let old = net.get("/news/old").json_body();
        net.feed.push((
            200,
            json!({"@id": "x", "cursor": "c1", "more": false, "changes": []}),
        ));
        let mut rep = Replica::new();
        rep.round(&mut net);
        assert!(rep.status().downloaded);
        assert!(net.sent.iter().any(|o| o.url.ends_with("/@changes")));
        // the server changes a page and removes another; the feed says so
        server_call(
            &net.server,
            "PATCH",
            "/news/hello",
            Some(json!({"title": "Via the feed"})),
        );
        server_call(&net.server, "DELETE", "/news/old", None);
        let version = net
            .get("/news/hello")
            .header_value("etag")
            .unwrap()
            .to_string();
        net.feed.push((
            200,
            json!({"@id": "x", "cursor": "c2", "more": false, "changes": [
                {"cursor": "c2a", "action": "modified", "UID": hello["UID"], "@id": hello["@id"],
                 "path": "/news/hello", "parent": null, "version": version, "modified": "x"},
                {"cursor": "c2", "action": "removed", "UID": old["UID"], "@id": null, "path": null,
                 "parent": null, "version": null, "modified": "x"}
            ]}),
        ));
        net.sent.clear();
        rep.round(&mut net);
        assert!(net
            .sent
            .iter()
            .any(|o| o.url.contains("/@changes?since=c1&limit=")));
        assert_eq!(title(&rep.call("GET", "/news/hello", None)), "Via the feed");
        assert_eq!(rep.call("GET", "/news/old", None).status, 404);
        // an entry whose version the replica has is not fetched again
        net.feed.push((
            200,
            json!({"@id": "x", "cursor": "c3", "more": false, "changes": [
                {"cursor": "c3", "action": "modified", "UID": hello["UID"], "@id": hello["@id"],
                 "path": "/news/hello", "parent": null, "version": version, "modified": "x"}]}),
        ));
        net.sent.clear();
        rep.round(&mut net);
        assert!(
            !net.sent
                .iter()
                .any(|o| matches!(o.step, Step::Fetch { ref path } if path == "/news/hello")),
            "{:?}",
            net.sent
        );
        // 410: everything again, from a new cursor
        net.feed
            .push((410, json!({"type": "CursorExpired", "message": "too old"})));
        net.feed.push((
            200,
            json!({"@id": "x", "cursor": "c9", "more": false, "changes": []}),
        ));
        net.sent.clear();
        rep.round(&mut net);
        assert!(net.sent.iter().any(|o| matches!(o.step, Step::List { .. })));
        let st = rep.engine.with_write(|ctx| state(ctx)).unwrap();
        assert_eq!(st.cursor.as_deref(), Some("c9"));
        assert_eq!(st.phase, Phase::Following);
    }

    #[test]
    fn refused_credentials_stop_the_round_and_are_not_retried() {
        let mut net = Net::new();
        let mut rep = Replica::new();
        rep.sync = Sync::new(Some("wrong".into()));
        let n = rep.round(&mut net);
        assert_eq!(n, 1);
        assert!(rep
            .status()
            .last_error
            .unwrap()
            .contains("refused the credentials"));
        assert_eq!(rep.round(&mut net), 0);
    }

    #[test]
    fn the_real_change_feed_is_followed_by_versions() {
        let mut net = Net::new();
        net.real_feed = true;
        let mut rep = Replica::new();
        rep.round(&mut net);
        assert!(rep.status().downloaded);
        let st = rep.engine.with_write(|ctx| state(ctx)).unwrap();
        assert_eq!(st.feed, Some(true));
        assert!(st.cursor.is_some());
        // the server's clock does not move: only the versions tell the edit
        server_call(
            &net.server,
            "PATCH",
            "/news/hello",
            Some(json!({"title": "Same second"})),
        );
        server_call(&net.server, "DELETE", "/news/old", None);
        net.sent.clear();
        rep.round(&mut net);
        assert!(net.sent.iter().any(|o| o.url.contains("/@changes?since=")));
        // followed, not downloaded again (the listing of the round is the visibility check)
        assert!(!net.sent.iter().any(|o| matches!(o.step, Step::Cursor)));
        assert_eq!(title(&rep.call("GET", "/news/hello", None)), "Same second");
        assert_eq!(rep.call("GET", "/news/old", None).status, 404);
        // our own replayed write comes back through the feed with the version we hold
        rep.call(
            "PATCH",
            "/news/hello",
            Some(json!({"title": "From the replica"})),
        );
        rep.round(&mut net);
        assert_eq!(title(&net.get("/news/hello")), "From the replica");
        net.sent.clear();
        rep.round(&mut net);
        assert!(
            !net.sent
                .iter()
                .any(|o| matches!(o.step, Step::Fetch { ref path } if path == "/news/hello")),
            "{:?}",
            net.sent
        );
    }

    /// Every key and value of the replica's store that mentions `marker` (case-insensitive).
    fn mentions(rep: &Replica, marker: &str) -> Vec<String> {
        let marker = marker.to_lowercase();
        rep.engine
            .with_write(|ctx| ctx.scan(b"", &[0xff; 8], Direction::Forward, usize::MAX))
            .unwrap()
            .into_iter()
            .filter_map(|(k, v)| {
                let text = format!(
                    "{} = {}",
                    String::from_utf8_lossy(&k),
                    String::from_utf8_lossy(&v)
                );
                text.to_lowercase().contains(&marker).then_some(text)
            })
            .collect()
    }

    /// A server with member `mary`, who may view the private page `/news/zebra` only through
    /// `grant` (a group's role or her own role), and her replica after its first round.
    fn member_replica(grant: &str) -> (Net, Replica) {
        let mut net = Net::new();
        net.real_feed = true;
        let roles = if grant == "role" {
            json!(["Member", "Editor"])
        } else {
            json!(["Member"])
        };
        let r = server_call(
            &net.server,
            "POST",
            "/@users",
            Some(json!({"username": "mary", "password": "mary-password-1",
                "email": "mary@example.com", "roles": roles})),
        );
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        if grant == "group" {
            let r = server_call(
                &net.server,
                "POST",
                "/@groups",
                Some(json!({"groupname": "staff", "roles": ["Reader"], "users": ["mary"]})),
            );
            assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        }
        let r = server_call(&net.server, "POST", "/news/@workflow/publish", None);
        assert_eq!(r.status, 200);
        let r = server_call(
            &net.server,
            "POST",
            "/news",
            Some(json!({"@type": "Page", "title": "Zebra plans",
                "description": "quagga notes"})),
        );
        assert_eq!(r.status, 201);
        let mut rep = Replica::new();
        rep.engine
            .with_write(|ctx| {
                set_config(
                    ctx,
                    &Config {
                        server: SERVER.into(),
                        login: "mary".into(),
                        token: None,
                    },
                )
            })
            .unwrap();
        rep.sync = Sync::new(Some("mary-password-1".into()));
        rep.round(&mut net);
        assert!(rep.status().downloaded, "{:?}", rep.status());
        if grant != "none" {
            assert_eq!(rep.call("GET", "/news/zebra-plans", None).status, 200);
            assert!(!mentions(&rep, "quagga").is_empty());
        }
        (net, rep)
    }

    #[test]
    fn working_offline_is_stored_and_holds_back_every_round() {
        let (mut net, mut rep) = downloaded();
        rep.engine.with_write(|ctx| set_held(ctx, true)).unwrap();
        rep.call("PATCH", "/news/hello", Some(json!({"title": "Held"})));
        // another tab: its own session, the same store
        rep.sync = Sync::new(None);
        net.sent.clear();
        assert_eq!(rep.round(&mut net), 0);
        assert!(rep.status().held);
        assert_eq!(rep.status().pending, 1);
        assert_eq!(title(&net.get("/news/hello")), "Hello");
        rep.engine.with_write(|ctx| set_held(ctx, false)).unwrap();
        rep.round(&mut net);
        assert_eq!(rep.status().pending, 0);
        assert_eq!(title(&net.get("/news/hello")), "Held");
    }

    #[test]
    fn no_local_password_is_stored_and_the_host_logs_in_with_an_issued_token() {
        let rep = Replica::new();
        // a replica made by an earlier version kept its local admin's password in plain text
        rep.engine
            .with_write(|ctx| ctx.put(keys::REPLICA_LOCAL, b"plain-secret"))
            .unwrap();
        rep.engine
            .with_write(|ctx| open(ctx, SERVER, Some("admin"), None))
            .unwrap();
        assert_eq!(
            rep.engine
                .with_write(|ctx| ctx.get(keys::REPLICA_LOCAL))
                .unwrap(),
            None
        );
        assert!(mentions(&rep, "plain-secret").is_empty());
        let token = rep
            .engine
            .with_write(|ctx| local_token(ctx))
            .unwrap()
            .expect("a local token");
        let r = rep.engine.handle(
            Request::new(Method::parse("GET"), "/@users/admin", LOCAL)
                .header("Authorization", &format!("Bearer {token}")),
        );
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    }

    #[test]
    fn logging_out_ends_the_server_token_and_forgets_it() {
        let (mut net, mut rep) = downloaded();
        let out = rep
            .engine
            .with_write(|ctx| logout_request(ctx))
            .unwrap()
            .expect("a token to end");
        assert_eq!(out.step, Step::Logout);
        assert_eq!(out.url, format!("{SERVER}/@logout"));
        let bearer = out
            .headers
            .iter()
            .find(|(k, _)| k == "Authorization")
            .map(|(_, v)| v.clone())
            .unwrap();
        let inc = net.perform(&out).unwrap();
        assert!(inc.status < 300, "{}", String::from_utf8_lossy(&inc.body));
        rep.engine
            .with_write(|ctx| rep.sync.receive(ctx, &out, &inc, 0))
            .unwrap();
        assert_eq!(
            rep.engine
                .with_write(|ctx| config(ctx))
                .unwrap()
                .unwrap()
                .token,
            None
        );
        assert!(rep
            .engine
            .with_write(|ctx| logout_request(ctx))
            .unwrap()
            .is_none());
        // the server no longer takes the token
        let r = net.server.handle(
            Request::new(Method::parse("GET"), "/news", SERVER).header("Authorization", &bearer),
        );
        assert_eq!(r.status, 401);
    }

    #[test]
    fn leaving_the_group_that_granted_view_purges_the_object_at_the_next_round() {
        let (mut net, mut rep) = member_replica("group");
        let r = server_call(
            &net.server,
            "PATCH",
            "/@groups/staff",
            Some(json!({"users": {"mary": false}})),
        );
        assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
        rep.round(&mut net);
        assert!(rep.sync.purged());
        assert_eq!(rep.call("GET", "/news/zebra-plans", None).status, 404);
        assert_eq!(mentions(&rep, "quagga"), Vec::<String>::new());
        // the local change feed keeps the uid and path of the removal (for 30 days), not the title
        assert_eq!(mentions(&rep, "Zebra plans"), Vec::<String>::new());
        // what she still may view stays
        assert_eq!(rep.call("GET", "/news/hello", None).status, 200);
        // a round with nothing lost purges nothing
        rep.round(&mut net);
        assert!(!rep.sync.purged());
    }

    #[test]
    fn losing_the_role_that_granted_view_purges_the_object_at_the_next_round() {
        let (mut net, mut rep) = member_replica("role");
        let r = server_call(
            &net.server,
            "PATCH",
            "/@users/mary",
            Some(json!({"roles": ["Member"]})),
        );
        assert!(r.status < 300, "{}", String::from_utf8_lossy(&r.body));
        rep.round(&mut net);
        assert!(rep.sync.purged());
        assert_eq!(rep.call("GET", "/news/zebra-plans", None).status, 404);
        assert_eq!(mentions(&rep, "quagga"), Vec::<String>::new());
        assert_eq!(rep.call("GET", "/news/hello", None).status, 200);
    }

    #[test]
    fn a_retracted_page_is_purged_with_its_history() {
        let (mut net, mut rep) = member_replica("none");
        server_call(
            &net.server,
            "PATCH",
            "/news/hello",
            Some(json!({"description": "okapi"})),
        );
        rep.round(&mut net);
        assert!(!mentions(&rep, "okapi").is_empty());
        let r = server_call(&net.server, "POST", "/news/hello/@workflow/retract", None);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        rep.round(&mut net);
        assert!(rep.sync.purged());
        assert_eq!(rep.call("GET", "/news/hello", None).status, 404);
        assert_eq!(mentions(&rep, "okapi"), Vec::<String>::new());
    }

    #[test]
    fn a_write_whose_answer_was_lost_is_sent_again_and_not_run_twice() {
        let (mut net, mut rep) = downloaded();
        net.real_feed = true;
        let created = rep.call(
            "POST",
            "/news",
            Some(json!({"@type": "Page", "title": "Once"})),
        );
        assert_eq!(created.status, 201);
        net.lose_next_answer = true;
        rep.round(&mut net);
        assert_eq!(
            rep.status().pending,
            1,
            "the answer was lost: still pending"
        );
        assert_eq!(net.get("/news/once").status, 200, "but the server ran it");
        rep.round(&mut net);
        assert_eq!(rep.status().pending, 0);
        assert_eq!(net.get("/news/once-1").status, 404, "not created twice");
        let local = rep.call("GET", "/news/once", None).json_body();
        assert_eq!(local["UID"], net.get("/news/once").json_body()["UID"]);
    }

    #[test]
    fn without_an_etag_header_the_feed_names_the_version() {
        let mut net = Net::new();
        net.real_feed = true;
        let mut rep = Replica::new();
        rep.round(&mut net);
        net.hide_etag = true;
        server_call(
            &net.server,
            "PATCH",
            "/news/hello",
            Some(json!({"title": "Hidden tag"})),
        );
        rep.round(&mut net);
        let version = net
            .get("/news/hello")
            .header_value("etag")
            .map(str::to_string);
        let uid = rep.call("GET", "/news/hello", None).json_body()["UID"]
            .as_str()
            .unwrap()
            .to_string();
        let have = rep
            .engine
            .with_write(|ctx| ctx.get(&keys::replica_version(&uid)))
            .unwrap()
            .map(|b| String::from_utf8(b).unwrap());
        assert_eq!(have, version);
        assert_eq!(title(&rep.call("GET", "/news/hello", None)), "Hidden tag");
    }

    #[test]
    fn object_paths_and_session_paths() {
        assert_eq!(object_path("/a/b/@workflow/publish"), "/a/b");
        assert_eq!(object_path("/"), "");
        assert_eq!(object_path("/@sharing"), "");
        assert!(is_session_path("/@login"));
        assert!(is_session_path("/a/@lock"));
        assert!(!is_session_path("/a/@workflow/publish"));
        assert!(!is_session_path("/a"));
        assert_eq!(bump("\"abc-4\"").as_deref(), Some("\"abc-5\""));
        assert_eq!(
            server_path("http://s:1", "http://s:1/a/b").as_deref(),
            Some("/a/b")
        );
        assert_eq!(server_path("http://s:1", "http://s:1").as_deref(), Some(""));
        assert_eq!(server_path("http://s:1", "http://s:12/a"), None);
    }
}
