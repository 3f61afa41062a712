//! A site that replicates a server site ([`engine::replica`]): the host performs the HTTP requests
//! the engine's sync core asks for, with the global `fetch`, and persists its state with the rest
//! of the site. Opened with `openSite(name, {server, credentials})`.
//!
//! # One writer per replica
//!
//! Tabs of one browser profile share a replica (one IndexedDB database). A sync round holds the
//! Web Lock `host-wasm:sync:<site name>` (`navigator.locks.request(name, {ifAvailable: true})`)
//! from its first request to its last write, so only one tab of a replica talks to the server at a
//! time and a pending write is never sent by two tabs at once. A round that finds the lock held
//! does not wait: it skips, reports `skipped: true` in its status, and the tab holding the lock
//! sends every pending write (they are shared through IndexedDB). Every way a pending write
//! leaves (`sync()`, the first round of `openSite`, the round after `resolveConflict`) is this
//! round. Where `navigator.locks` is missing or refuses (old browsers, Node, an opaque origin),
//! rounds run unlocked as before: a tab still runs one round at a time, and the `Idempotency-Key`
//! of each write keeps a write sent twice by two tabs from being applied twice.

use std::cell::{Cell, RefCell};

use engine::replica::{self, Incoming, Outgoing, Resolution};
use js_sys::{Function, Promise};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::{js_err, Site};

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** The sync state of a replica site (`site.syncStatus()`, `site.sync()`, `onsync`). */
export interface SyncStatus {
  server: string; login: string;
  /** writes made here and not yet accepted by the server */
  pending: number;
  /** writes the server refused, waiting for `resolveConflict` */
  conflicts: number;
  /** whether the first full download finished */
  downloaded: boolean;
  /** whether the last round reached the server (and "work offline" does not hold) */
  online: boolean;
  /** "work offline" holds every tab of this replica back (`setOnline(false)` in any tab) */
  held: boolean;
  /** the last `sync()` of this tab did not run a round because another round of this replica
   *  was running (in another tab, which holds the replica's Web Lock and sends every pending
   *  write, or in this tab); the counts above are read from the shared replica */
  skipped: boolean;
  lastError: string | null;
}
"#;

/// `credentials` of the open options.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct Credentials {
    /// The user's login (required with `token` too: the local site acts as that user).
    pub login: Option<String>,
    /// The password, kept in memory only, to log in (again).
    pub password: Option<String>,
    /// A server token for the user.
    pub token: Option<String>,
}

/// What a replica handle keeps in memory.
#[derive(Default)]
pub struct ReplicaState {
    /// The sync core's session.
    pub sync: RefCell<replica::Sync>,
    /// The local admin's token, sent with local requests that carry no `Authorization`.
    pub local_auth: RefCell<Option<String>>,
    /// `setOnline(false)` was called.
    pub forced_offline: Cell<bool>,
    /// The last round reached the server.
    pub reached: Cell<bool>,
    /// A round is running.
    pub running: Cell<bool>,
    /// The last `sync()` of this handle skipped its round (another round held the replica).
    pub skipped: Cell<bool>,
    /// Called after each round with the status.
    pub onsync: RefCell<Option<Function>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsStatus {
    server: String,
    login: String,
    pending: usize,
    conflicts: usize,
    downloaded: bool,
    online: bool,
    held: bool,
    skipped: bool,
    last_error: Option<String>,
}

fn to_js<T: Serialize>(v: &T) -> Result<JsValue, JsValue> {
    v.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| js_err(e.to_string()))
}

/// Make the request `out` with the global `fetch`; `Err` when no answer came.
async fn perform(out: &Outgoing) -> Result<Incoming, String> {
    let global = js_sys::global();
    let why = |e: JsValue| crate::idb::js_error_text(&e);
    let fetch: Function = js_sys::Reflect::get(&global, &"fetch".into())
        .map_err(why)?
        .dyn_into()
        .map_err(|_| "no fetch".to_string())?;
    let headers = web_sys::Headers::new().map_err(why)?;
    for (k, v) in &out.headers {
        headers.set(k, v).map_err(why)?;
    }
    let init = web_sys::RequestInit::new();
    init.set_method(&out.method);
    init.set_headers(&headers);
    if let Some(b) = &out.body {
        init.set_body(&JsValue::from_str(b));
    }
    let request = web_sys::Request::new_with_str_and_init(&out.url, &init).map_err(why)?;
    let promise: Promise = fetch
        .call1(&global, &request)
        .map_err(why)?
        .dyn_into()
        .map_err(why)?;
    let resp: web_sys::Response = wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .map_err(why)?
        .dyn_into()
        .map_err(why)?;
    let mut hs = Vec::new();
    for name in ["etag", "content-type", "location", "idempotent-replayed"] {
        if let Ok(Some(v)) = resp.headers().get(name) {
            hs.push((name.to_string(), v));
        }
    }
    let buf = wasm_bindgen_futures::JsFuture::from(resp.array_buffer().map_err(why)?)
        .await
        .map_err(why)?;
    Ok(Incoming {
        status: resp.status(),
        headers: hs,
        body: js_sys::Uint8Array::new(&buf).to_vec(),
    })
}

/// The name of the Web Lock a sync round of replica `site` (its IndexedDB database name) holds.
pub fn sync_lock_name(site: &str) -> String {
    format!("host-wasm:sync:{site}")
}

/// The replica's Web Lock, held until dropped; `None` inside where the browser has no Web Locks
/// (the round then runs unlocked).
struct RoundLock {
    /// Resolves the promise the lock callback returned, which releases the lock.
    release: Option<Function>,
}

/// Another round holds the replica's Web Lock.
struct LockHeld;

impl RoundLock {
    /// Take the Web Lock `name` if it is free (`ifAvailable`): `Err(LockHeld)` when another tab
    /// (or round) holds it; a lock that releases nothing when `navigator.locks` is missing or
    /// refuses the request.
    async fn try_take(name: &str) -> Result<RoundLock, LockHeld> {
        let unlocked = RoundLock { release: None };
        let Some((locks, request)) = lock_manager() else {
            return Ok(unlocked);
        };
        // `granted` resolves with the release function, with null when the lock is held, or with
        // `false` when the request failed
        let mut settle: Option<Function> = None;
        let granted = Promise::new(&mut |resolve: Function, _reject: Function| {
            settle = Some(resolve);
        });
        let Some(settle) = settle else {
            return Ok(unlocked);
        };
        let on_grant = {
            let settle = settle.clone();
            Closure::once_into_js(move |lock: JsValue| -> Promise {
                if lock.is_null() || lock.is_undefined() {
                    let _ = settle.call1(&JsValue::NULL, &JsValue::NULL);
                    return Promise::resolve(&JsValue::UNDEFINED);
                }
                let mut release: Option<Function> = None;
                let held = Promise::new(&mut |resolve: Function, _reject: Function| {
                    release = Some(resolve);
                });
                let _ = settle.call1(
                    &JsValue::NULL,
                    &release.map(JsValue::from).unwrap_or(JsValue::FALSE),
                );
                held
            })
        };
        let options = js_sys::Object::new();
        if js_sys::Reflect::set(&options, &"ifAvailable".into(), &JsValue::TRUE).is_err() {
            return Ok(unlocked);
        }
        let Ok(requested) = request.call3(&locks, &JsValue::from_str(name), &options, &on_grant)
        else {
            return Ok(unlocked);
        };
        let Some(then) = js_sys::Reflect::get(&requested, &"then".into())
            .ok()
            .and_then(|t| t.dyn_into::<Function>().ok())
        else {
            return Ok(unlocked);
        };
        // when the request settles (the lock released, or refused before the callback ran):
        // `granted` is settled by then, unless the request failed; one closure for both outcomes,
        // called once, so nothing is leaked
        let on_settled = Closure::once_into_js(move |_v: JsValue| {
            let _ = settle.call1(&JsValue::NULL, &JsValue::FALSE);
        });
        let _ = then.call2(&requested, &on_settled, &on_settled);
        match wasm_bindgen_futures::JsFuture::from(granted).await {
            Ok(v) if v.is_null() => Err(LockHeld),
            Ok(v) => Ok(RoundLock {
                release: v.dyn_into::<Function>().ok(),
            }),
            Err(_) => Ok(unlocked),
        }
    }
}

impl Drop for RoundLock {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            let _ = release.call0(&JsValue::NULL);
        }
    }
}

/// `navigator.locks` and its `request` method, where the global has them.
fn lock_manager() -> Option<(JsValue, Function)> {
    let navigator = js_sys::Reflect::get(&js_sys::global(), &"navigator".into()).ok()?;
    if navigator.is_undefined() || navigator.is_null() {
        return None;
    }
    let locks = js_sys::Reflect::get(&navigator, &"locks".into()).ok()?;
    if locks.is_undefined() || locks.is_null() {
        return None;
    }
    let request = js_sys::Reflect::get(&locks, &"request".into())
        .ok()?
        .dyn_into::<Function>()
        .ok()?;
    Some((locks, request))
}

impl Site {
    fn replica(&self) -> Result<&ReplicaState, JsValue> {
        self.inner
            .replica
            .as_ref()
            .ok_or_else(|| js_err("this site is not a replica (open it with a server)"))
    }

    fn status_value(&self) -> Result<JsValue, JsValue> {
        let r = self.replica()?;
        let st = self
            .inner
            .engine
            .replica_status()
            .map_err(|e| js_err(e.to_string()))?
            .ok_or_else(|| js_err("this site is not a replica"))?;
        to_js(&JsStatus {
            server: st.server,
            login: st.login,
            pending: st.pending,
            conflicts: st.conflicts,
            downloaded: st.downloaded,
            online: !r.forced_offline.get() && !st.held && r.reached.get(),
            held: st.held,
            skipped: r.skipped.get(),
            last_error: st.last_error,
        })
    }

    /// One sync round (see [`engine::replica`]), holding the replica's Web Lock (see the
    /// module documentation): skipped when another round holds it.
    pub(crate) async fn sync_round(&self) -> Result<JsValue, JsValue> {
        let r = self.replica()?;
        if r.forced_offline.get() {
            return self.status_value();
        }
        if r.running.replace(true) {
            r.skipped.set(true);
            return self.status_value();
        }
        let lock = match RoundLock::try_take(&sync_lock_name(&self.inner.name)).await {
            Ok(lock) => lock,
            Err(LockHeld) => {
                r.running.set(false);
                r.skipped.set(true);
                // the counts as the other tab's round has left them so far
                {
                    let _turn = self.inner.queue.acquire().await;
                    self.inner
                        .catch_up()
                        .await
                        .map_err(|e| js_err(format!("sync: {e}")))?;
                }
                return self.status_value();
            }
        };
        r.skipped.set(false);
        r.sync.borrow_mut().begin_round();
        let result = self.run_round().await;
        drop(lock);
        r.running.set(false);
        result?;
        let status = self.status_value()?;
        let cb = r.onsync.borrow().clone();
        if let Some(f) = cb {
            let _ = f.call1(&JsValue::NULL, &status);
        }
        Ok(status)
    }

    async fn run_round(&self) -> Result<(), JsValue> {
        let r = self.replica()?;
        let mut reached = false;
        for _ in 0..10_000 {
            let now = js_sys::Date::now() as i64;
            let out = self
                .write_op("sync", |e| {
                    e.sync_next_request(&mut r.sync.borrow_mut(), now)
                })
                .await?;
            let Some(out) = out else { break };
            if r.forced_offline.get() {
                break;
            }
            match perform(&out).await {
                Ok(inc) => {
                    reached = true;
                    self.write_op("sync", |e| {
                        e.sync_receive(&mut r.sync.borrow_mut(), &out, &inc, now)
                    })
                    .await?;
                }
                Err(why) => {
                    reached = false;
                    self.write_op("sync", |e| {
                        e.sync_failed(&mut r.sync.borrow_mut(), &out, &why, now)
                    })
                    .await?;
                }
            }
        }
        if r.sync.borrow().purged() {
            // what the user lost access to must not survive in the change-set log or snapshot
            let _turn = self.inner.queue.acquire().await;
            self.inner
                .catch_up()
                .await
                .map_err(|e| js_err(format!("sync: {e}")))?;
            self.inner
                .forget_history()
                .await
                .map_err(|e| js_err(format!("sync: cannot purge the local history: {e}")))?;
        }
        let stopped = r.sync.borrow().stopped();
        r.reached
            .set(reached && (!stopped || self.last_error_is_http()));
        Ok(())
    }

    /// Whether the round stopped on an answer of the server (it is reachable) rather than on a
    /// missing one.
    fn last_error_is_http(&self) -> bool {
        self.inner
            .engine
            .replica_status()
            .ok()
            .flatten()
            .and_then(|s| s.last_error)
            .is_some_and(|e| !e.starts_with("no answer"))
    }
}

#[wasm_bindgen]
impl Site {
    /// Whether this site replicates a server site.
    #[wasm_bindgen(getter, js_name = isReplica)]
    pub fn is_replica(&self) -> bool {
        self.inner.replica.is_some()
    }

    /// Run one sync round with the server: replay the writes made here (in order, with
    /// `If-Match` and an `Idempotency-Key`), download what changed there. Resolves with the
    /// status once the round is over (a failure to reach the server is in `lastError`, not a
    /// rejection). Does nothing while `setOnline(false)` holds, and skips (`skipped: true` in the
    /// status) while another round of this replica runs, in this tab or in another one holding
    /// the replica's Web Lock (`host-wasm:sync:<site name>`), which sends the pending writes.
    #[wasm_bindgen(unchecked_return_type = "SyncStatus")]
    pub async fn sync(&self) -> Result<JsValue, JsValue> {
        self.sync_round().await
    }

    /// The sync status now.
    #[wasm_bindgen(js_name = syncStatus, unchecked_return_type = "SyncStatus")]
    pub fn sync_status(&self) -> Result<JsValue, JsValue> {
        self.status_value()
    }

    /// Whether the last round reached the server and `setOnline(false)` does not hold.
    #[wasm_bindgen(getter)]
    pub fn online(&self) -> bool {
        let held = self
            .inner
            .engine
            .replica_status()
            .ok()
            .flatten()
            .is_some_and(|s| s.held);
        self.replica()
            .map(|r| !r.forced_offline.get() && !held && r.reached.get())
            .unwrap_or(false)
    }

    /// `false`: "work offline": stop talking to the server (writes keep being recorded). The
    /// choice is stored with the replica, so it holds back the rounds of every tab of it, and
    /// stays after a reload; `true`: allowed again (call `sync()` to go on).
    #[wasm_bindgen(js_name = setOnline)]
    pub async fn set_online(&self, online: bool) -> Result<(), JsValue> {
        self.replica()?.forced_offline.set(!online);
        self.write_op("setOnline", |e| e.replica_set_held(!online))
            .await
    }

    /// How many writes wait to be sent.
    pub fn pending(&self) -> Result<u32, JsValue> {
        self.inner
            .engine
            .replica_pending()
            .map(|p| p.len() as u32)
            .map_err(|e| js_err(e.to_string()))
    }

    /// The writes waiting to be sent, in order.
    #[wasm_bindgen(js_name = pendingWrites)]
    pub fn pending_writes(&self) -> Result<JsValue, JsValue> {
        let p = self
            .inner
            .engine
            .replica_pending()
            .map_err(|e| js_err(e.to_string()))?;
        to_js(&p)
    }

    /// The writes the server refused, each with `id`, `write`, `status`, `message`, `local` (the
    /// local copy's fields) and `server` (the server's representation, or null).
    pub fn conflicts(&self) -> Result<JsValue, JsValue> {
        let c = self
            .inner
            .engine
            .replica_conflicts()
            .map_err(|e| js_err(e.to_string()))?;
        to_js(&c)
    }

    /// Resolve conflict `id`: `"mine"` sends the write again based on the server's current
    /// version; `"theirs"` makes the local copy the server's and drops the write; `"merge"`
    /// takes the server's copy and then edits it with `mergedFields` (a new pending write),
    /// after checking that edit first (`Engine::replica_check_merge`): a merge the type's schema
    /// refuses is an error and the conflict stays as it was.
    #[wasm_bindgen(js_name = resolveConflict)]
    pub async fn resolve_conflict(
        &self,
        id: f64,
        how: String,
        merged_fields: Option<js_sys::Object>,
    ) -> Result<(), JsValue> {
        self.replica()?;
        let id = id as u64;
        let resolution = match how.as_str() {
            "mine" => Resolution::Mine,
            "theirs" | "merge" => Resolution::Theirs,
            other => {
                return Err(js_err(format!(
                    "resolveConflict: {other:?}: use \"mine\", \"theirs\" or \"merge\""
                )))
            }
        };
        let target = self
            .inner
            .engine
            .replica_conflicts()
            .map_err(|e| js_err(e.to_string()))?
            .into_iter()
            .find(|c| c.id == id)
            .and_then(|c| c.server)
            .and_then(|s| s.get("@id").and_then(|v| v.as_str()).map(str::to_string));
        if how == "merge" && (merged_fields.is_none() || target.is_none()) {
            return Err(js_err(
                "resolveConflict: \"merge\" needs the merged fields and a server version",
            ));
        }
        if let (true, Some(fields)) = (how == "merge", &merged_fields) {
            // The merged object is checked first, by the engine's own edit, in a transaction
            // that is never committed: a refused merge leaves the conflict (and the local copy)
            // as they were, so the fields picked as mine are not lost.
            let json = js_sys::JSON::stringify(fields)?
                .as_string()
                .unwrap_or_default();
            let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&json)
                .map_err(|e| js_err(format!("resolveConflict: the merged fields: {e}")))?;
            let _turn = self.inner.queue.acquire().await;
            self.inner
                .catch_up()
                .await
                .map_err(|e| js_err(format!("resolveConflict: {e}")))?;
            self.inner
                .engine
                .replica_check_merge(id, map)
                .map_err(|e| {
                    js_err(format!(
                        "resolveConflict: the merged version is refused, nothing was changed: {e}"
                    ))
                })?;
        }
        self.write_op("resolveConflict", |e| {
            e.replica_resolve(id, resolution.clone())
        })
        .await?;
        if let (Some(fields), Some(at_id)) = (merged_fields, target) {
            let cfg_server = self
                .inner
                .engine
                .replica_config()
                .map_err(|e| js_err(e.to_string()))?
                .map(|c| c.server)
                .unwrap_or_default();
            let path = replica::server_path(&cfg_server, &at_id).unwrap_or_default();
            let body = js_sys::JSON::stringify(&fields)?
                .as_string()
                .unwrap_or_default();
            let mut req = engine::Request::new(
                engine::Method::parse("PATCH"),
                if path.is_empty() { "/" } else { &path },
                &self.inner.base_url,
            )
            .header("Content-Type", "application/json");
            req.body = body.into_bytes();
            let resp = self.handle(req).await;
            if !(200..300).contains(&resp.status) {
                return Err(js_err(format!(
                    "resolveConflict: the merged edit failed: {}",
                    String::from_utf8_lossy(&resp.body)
                )));
            }
        }
        Ok(())
    }

    /// Log the user out and wipe the replica: end its server token (`POST /@logout`, best
    /// effort: offline, the token stays valid on the server until it expires), close this handle
    /// and delete the site's IndexedDB database (content, pending writes, conflicts, the token
    /// and the local admin's password), so the next user of this browser profile finds nothing
    /// and must give credentials to open a replica again. Refused while writes wait to be sent,
    /// unless `discardPending` is true.
    pub async fn logout(&self, discard_pending: Option<bool>) -> Result<(), JsValue> {
        self.replica()?;
        let engine = &self.inner.engine;
        let pending = engine
            .replica_pending()
            .map_err(|e| js_err(e.to_string()))?
            .len();
        if pending > 0 && !discard_pending.unwrap_or(false) {
            return Err(js_err(format!(
                "logout: {pending} write(s) are not on the server yet: sync first, or call logout(true) to discard them"
            )));
        }
        if let Ok(Some(out)) = engine.replica_logout_request() {
            let _ = perform(&out).await; // offline: the token expires on its own
        }
        let _turn = self.inner.queue.acquire().await;
        self.inner.close();
        crate::idb::delete_db(&self.inner.name).await.map_err(|e| {
            js_err(format!(
                "logout: cannot delete the local copy: {}",
                crate::idb::js_error_text(&e)
            ))
        })
    }

    /// Called with the status after each sync round.
    #[wasm_bindgen(setter)]
    pub fn set_onsync(&self, f: Option<Function>) -> Result<(), JsValue> {
        *self.replica()?.onsync.borrow_mut() = f;
        Ok(())
    }
}
