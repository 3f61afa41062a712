// volto-offline's Service Worker (a module worker, registered by the add-on with scope "/").
//
// What it does, on Volto's origin:
// - caches the app: the build's static files (listed in /offline-precache.json, written by
//   scripts/volto.sh --offline), the engine's wasm package (/offline-pkg/), and an app shell for
//   a navigation that cannot reach the network: the site root as Volto's server renders it for
//   the user with their session token taken out (one per user, deleted at their logout) and for
//   nobody; when it is served, the token is taken from Volto's own cookie at that moment (see
//   "the app shell" below), so a page load never brings back a session that ended;
// - keeps a replica of the server's site for the logged-in editor (host-wasm's openSite with a
//   server, on IndexedDB): opened with the token of Volto's @login answer (or of the first API call
//   that carries one), kept current by sync rounds while the browser is online, removed at logout;
// - answers Volto's /++api++/... calls: from the server while it can be reached and nothing waits to
//   be sent (network first), from the replica otherwise. Writes answered by the replica are
//   recorded as pending writes and replayed in order when the server is back; what the server
//   refuses becomes a conflict, listed by the add-on's view (/offline-sync).
//
// One replica per user (IndexedDB database "volto-offline:<login>"); requests are answered from the
// replica of the user named by their own bearer token only, so another user of the browser never
// sees it, and anonymous requests never reach a replica.
//
// Also: while online, the worker follows the server's change stream (Server-Sent Events of
// `GET /@changes`, reached through the add-on's streaming route of Volto's server) and starts a
// round as soon as something changes; when the server refuses the user's token (a round answered
// 401, or a token whose `exp` passed) it sends nothing more until Volto's login gives a new token
// of the same user; images: the bytes of the images in the replica (every scale) and those Volto
// showed are kept in a per-user cache (`volto-offline-files:<login>`), with the image fields the
// replica does not hold, and put back into the replica's answers offline.
// The loader of the engine's two modules (host-wasm/js/engine.js): the first module at once, the
// full one when a request needs an endpoint the first leaves out.
import init, { openSite } from "/offline-pkg/engine.js";

const ORIGIN = self.location.origin;
const API_PREFIX = "/++api++";
const APP_CACHE = "volto-offline-app";
const SHELL_CACHE = "volto-offline-shell";
// The pages cache of earlier versions of this worker, which kept the pages Volto rendered for the
// logged-in user (their session token in the serialized state): deleted when this one activates.
const LEGACY_CACHES = ["volto-offline-pages"];
// The app shell's key in SHELL_CACHE, and how old it may get before an online navigation fetches
// it again (its content is re-read through the API anyway; its scripts change with the build,
// which installs a new worker).
const SHELL_KEY = "/__volto-offline-shell__";
const SHELL_MAX_AGE_MS = 10 * 60 * 1000;
// How long a failed network attempt makes the worker answer from the replica without trying.
const OFFLINE_GRACE_MS = 5000;
// Sync rounds while online: at most this often (pending writes are sent at the next round) while
// the change stream is not open; with the stream open, a change starts a round at once and
// rounds run at least this often (the visibility check of each round, and a stream that misses).
const SYNC_EVERY_MS = 5000;
const SYNC_EVERY_STREAMING_MS = 30000;
// Reconnecting a change stream that ended or failed: after this long (the server's `retry`).
const STREAM_RETRY_MS = 2000;
// Images of the replica (their scales) fetched into the files cache: at most this often, this many.
const PREFETCH_EVERY_MS = 20000;
const PREFETCH_MAX = 200;
// The key prefix of the image fields kept in a user's files cache, per object path.
const META_PREFIX = "/__volto-offline-meta__";

const realFetch = self.fetch.bind(self);

// The replica's server is Volto's origin (its @ids are the server's @ids as Volto sees them), and
// the server's API is reached through Volto's proxy at /++api++. host-wasm's sync calls the global
// fetch, so the worker's global fetch maps <origin>/<path> to <origin>/++api++/<path> for API
// requests (they all ask for JSON). A gateway error of Volto's proxy (502, 504: the server does not
// answer) is no answer from the server.
self.fetch = async (input, init) => {
  const req = input instanceof Request ? input : new Request(input, init);
  const url = new URL(req.url);
  const api = (req.headers.get("accept") || "").includes("application/json");
  if (url.origin !== ORIGIN || url.pathname.startsWith(API_PREFIX) || !api) return realFetch(req);
  url.pathname = API_PREFIX + (url.pathname === "/" ? "" : url.pathname);
  // a new request from the parts: Chromium's fetch fails ("Failed to fetch") on a Request copied
  // with `new Request(url, request)` when that request has a body
  const body = ["GET", "HEAD"].includes(req.method) ? undefined : await req.arrayBuffer();
  return throughProxy(new Request(url.href, { method: req.method, headers: req.headers, body }));
};

async function throughProxy(req) {
  const resp = await realFetch(req);
  if (resp.status === 502 || resp.status === 504) {
    throw new TypeError(`the server does not answer (Volto's proxy: ${resp.status})`);
  }
  return resp;
}

// ---- state -----------------------------------------------------------------------------------

let wasmReady = null;
/** The open replica: { login, token, ready: Promise<Site> } */
let current = null;
let offlineUntil = 0;
let clientsOnline = true;
let syncing = null;
let lastSync = 0;
let lastStatus = null;
/** Times measured by the worker (ms): `openMs`, the last opening of a replica (with its round). */
const figures = {};

function wasm() {
  if (!wasmReady) {
    wasmReady = (async () => {
      const url = new URL("/offline-pkg/host_wasm_bg.wasm", ORIGIN).href;
      const fullUrl = new URL("/offline-pkg/host_wasm_full_bg.wasm", ORIGIN).href;
      const cached = await caches.match(url);
      const full = async () => (await caches.match(fullUrl)) || realFetch(fullUrl);
      await init({ module_or_path: cached || realFetch(url), full });
    })();
    wasmReady.catch(() => (wasmReady = null));
  }
  return wasmReady;
}

const dbName = (login) => `volto-offline:${login}`;

function jsonError(status, type, message) {
  return new Response(JSON.stringify({ type, message }), {
    status,
    headers: { "Content-Type": "application/json" },
  });
}

// The user a request's bearer token names ({ login, token, exp }), or null.
function bearer(req) {
  const h = req.headers.get("authorization") || "";
  const m = /^Bearer\s+(\S+)$/i.exec(h);
  return m ? claims(m[1]) : null;
}

function claims(token) {
  try {
    const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const c = JSON.parse(atob(part + "=".repeat((4 - (part.length % 4)) % 4)));
    return typeof c.sub === "string" && c.sub
      ? { login: c.sub, token, exp: c.exp || 0, iat: c.iat || 0 }
      : null;
  } catch {
    return null;
  }
}

const expired = (user) => !!user.exp && user.exp * 1000 <= Date.now();

// The replica of `user`, opened (or created: the first download runs then) when it is not the open
// one. Opening another user's replica closes the open one first. A newer token of the same user (a
// new login, e.g. after the server refused the old one) reopens the replica with it; an older one
// (a request Volto sent before the login) changes nothing.
function replicaFor(user) {
  if (current && current.login === user.login) {
    const newer = user.iat > current.iat || (user.iat === current.iat && user.exp > current.exp);
    if (current.token !== user.token && newer && !expired(user)) {
      current.token = user.token;
      current.iat = user.iat;
      current.exp = user.exp;
      current.needsLogin = false;
      openReplica(current, current.ready);
    }
    return current;
  }
  const entry = {
    login: user.login,
    token: user.token,
    iat: user.iat,
    exp: user.exp,
    site: null,
    // the server refused the token (or it expired): nothing is sent until a new login
    needsLogin: expired(user),
  };
  openReplica(entry, current ? current.ready : null);
  if (current) stopStream();
  current = entry;
  return entry;
}

// (Re)open `entry`'s replica with its token, once `previous` (a handle to close first) settled.
function openReplica(entry, previous) {
  entry.site = null;
  entry.ready = (async () => {
    if (previous) {
      const old = await previous.catch(() => null);
      if (old) old.close();
    }
    await wasm();
    const t0 = performance.now();
    // a token known to be refused is not given: the replica then sends nothing
    const credentials = entry.needsLogin ? { login: entry.login } : { login: entry.login, token: entry.token };
    const site = await openSite(dbName(entry.login), { baseUrl: ORIGIN, server: ORIGIN, credentials });
    figures.openMs = Math.round(performance.now() - t0);
    if (current !== entry) {
      site.close(); // another user logged in meanwhile
      return site;
    }
    entry.site = site;
    lastSync = Date.now();
    noteStatus(site.syncStatus());
    followStream();
    prefetchImages(entry, site);
    return site;
  })();
  entry.ready.catch((e) => {
    console.error("volto-offline: cannot open the replica", e);
    if (current === entry) current = null;
  });
}

// What the sync core says when the server refused the credentials, or has none to send.
const REFUSED = /^(the server refused the credentials|not logged in to the server)/;

function noteStatus(st) {
  lastStatus = st;
  if (st.online) offlineUntil = 0;
  else if (st.lastError && st.lastError.startsWith("no answer")) offlineUntil = Date.now() + OFFLINE_GRACE_MS;
  if (current && st.lastError && REFUSED.test(st.lastError)) {
    // a round got 401: no more rounds (nothing is sent) until Volto's login brings a new token
    current.needsLogin = true;
    stopStream();
  }
}

function offlineNow() {
  return !clientsOnline || Date.now() < offlineUntil;
}

// One sync round of the open replica, unless one runs, the browser is offline, or one ran less than
// SYNC_EVERY_MS ago (`force` skips that last check).
function scheduleSync(force) {
  if (!current || !current.site || !clientsOnline) return syncing;
  if (current.needsLogin || expired(current)) {
    current.needsLogin = true;
    return syncing;
  }
  if (syncing) {
    if (force) again = true; // a change arrived during the round: one more after it
    return syncing;
  }
  const every = stream.open ? SYNC_EVERY_STREAMING_MS : SYNC_EVERY_MS;
  if (!force && Date.now() - lastSync < every) return null;
  const entry = current;
  const site = current.site;
  again = false;
  syncing = site
    .sync()
    .then(noteStatus)
    .catch((e) => console.error("volto-offline: sync", e))
    .finally(() => {
      lastSync = Date.now();
      syncing = null;
      if (current === entry) {
        followStream();
        prefetchImages(entry, site);
        if (again) scheduleSync(true);
      }
    });
  return syncing;
}

// ---- the change stream -----------------------------------------------------------------------

// The open stream of the current replica's user: { open, controller, login, events, retry }.
const stream = { open: false, controller: null, login: null, events: 0, retry: null, lastId: null };
let again = false;

function stopStream() {
  if (stream.controller) stream.controller.abort();
  stream.controller = null;
  stream.open = false;
  stream.login = null;
  clearTimeout(stream.retry);
  stream.retry = null;
}

// Follow the server's change stream (`GET /@changes`, `Accept: text/event-stream`) as the current
// user while the browser is online: each change starts a round at once. Volto's own proxy keeps a
// whole answer before passing it on, so the add-on's server route streams this one (src/server.js).
function followStream() {
  const entry = current;
  if (!entry || !entry.site || entry.needsLogin || !clientsOnline || offlineNow()) return;
  if (stream.controller && stream.login === entry.login) return; // already followed
  stopStream();
  const controller = new AbortController();
  stream.controller = controller;
  stream.login = entry.login;
  const headers = { Accept: "text/event-stream", Authorization: `Bearer ${entry.token}` };
  if (stream.lastId) headers["Last-Event-ID"] = stream.lastId;
  const ended = (why) => {
    if (stream.controller !== controller) return;
    stream.controller = null;
    stream.open = false;
    if (why === 401) {
      noteStatus({ ...(lastStatus || {}), lastError: "the server refused the credentials (change stream)" });
      return;
    }
    stream.retry = setTimeout(() => {
      stream.retry = null;
      if (current === entry) followStream();
    }, STREAM_RETRY_MS);
  };
  (async () => {
    const resp = await realFetch(`${ORIGIN}${API_PREFIX}/@changes`, { headers, signal: controller.signal });
    if (!resp.ok || !(resp.headers.get("content-type") || "").includes("text/event-stream") || !resp.body) {
      if (resp.status === 410) stream.lastId = null; // the cursor expired: from now on
      return ended(resp.status);
    }
    stream.open = true;
    scheduleSync(true); // what changed before the stream opened
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const message = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = "message";
        let id = null;
        for (const line of message.split("\n")) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("id:")) id = line.slice(3).trim();
        }
        if (event === "change") {
          stream.events += 1;
          if (id) stream.lastId = id;
          scheduleSync(true);
        }
      }
    }
    ended(0);
  })().catch(() => ended(0));
}

// ---- the API ---------------------------------------------------------------------------------

// `req` answered by the replica `site`, as the replica's user (the server's token means nothing
// there: the replica's own credentials apply), at the site path without `/++api++`: the replica
// records a write under the path it was given, and names the object it changes (and the server
// version it was based on, sent as If-Match when it is replayed) by that path.
async function fromReplica(site, req) {
  const headers = new Headers(req.headers);
  headers.delete("authorization");
  const hasBody = !["GET", "HEAD"].includes(req.method);
  const body = hasBody ? await req.arrayBuffer() : undefined;
  const url = new URL(req.url);
  if (url.pathname === API_PREFIX || url.pathname.startsWith(API_PREFIX + "/")) {
    url.pathname = url.pathname.slice(API_PREFIX.length) || "/";
  }
  const resp = await site.fetch(new Request(url.href, { method: req.method, headers, body }));
  return req.method === "GET" ? withImages(resp) : resp;
}

async function handleApi(req) {
  const url = new URL(req.url);
  const last = url.pathname.split("/").pop();
  if (last === "@login" && req.method === "POST") return login(req);
  if (last === "@logout" && req.method === "POST") return logout(req);
  const user = bearer(req);
  if (!user) return realFetch(req).catch(() => jsonError(503, "ServiceUnavailable", "The server cannot be reached."));
  const entry = replicaFor(user);
  const unsafe = !["GET", "HEAD", "OPTIONS"].includes(req.method);
  // the replica answers while writes wait (the editor sees their own changes) and while the
  // server refuses the token (the editor keeps working; the writes wait for the next login)
  const local = offlineNow() || entry.needsLogin || (entry.site && entry.site.pending() > 0);
  if (!local) {
    try {
      const resp = await throughProxy(req.clone());
      if (unsafe && resp.ok) scheduleSync(true); // the replica follows the edit
      else scheduleSync(false);
      return resp;
    } catch {
      offlineUntil = Date.now() + OFFLINE_GRACE_MS;
    }
  } else {
    scheduleSync(false);
  }
  let site;
  try {
    site = await entry.ready;
  } catch (e) {
    return jsonError(503, "ServiceUnavailable", `The server cannot be reached and there is no offline copy: ${e.message || e}`);
  }
  return fromReplica(site, req);
}

// Volto's login: sent to the server; a token in its answer opens (or creates) that user's replica.
async function login(req) {
  let resp;
  try {
    resp = await throughProxy(req);
  } catch {
    return jsonError(503, "ServiceUnavailable", "Logging in needs the server, which cannot be reached now.");
  }
  if (resp.ok) {
    const body = await resp.clone().json().catch(() => null);
    const user = body && body.token ? claims(body.token) : null;
    if (user) replicaFor(user);
    refreshShell(false);
  }
  return resp;
}

// Volto's logout: sent to the server (answered by the replica when it cannot be reached), then the
// replica is closed and, when nothing waits to be sent, deleted with the user's images. A replica
// with pending writes or conflicts stays (closed) for its user's next login: nothing is dropped
// silently. The user's shell is deleted; nobody's stays.
async function logout(req) {
  const user = bearer(req);
  let resp = null;
  try {
    resp = await throughProxy(req.clone());
  } catch {
    resp = null;
  }
  const entry = current && (!user || current.login === user.login) ? current : null;
  if (user) await dropShell(user.login);
  if (entry) {
    current = null;
    const site = await entry.ready.catch(() => null);
    if (site) {
      if (!resp) resp = await fromReplica(site, req);
      const st = site.syncStatus();
      if (st.pending === 0 && st.conflicts === 0) {
        await site.logout(true).catch((e) => console.error("volto-offline: logout", e));
        await caches.delete(filesCache(entry.login));
      } else {
        site.close();
      }
    }
    stopStream();
  }
  lastStatus = null;
  return resp || jsonError(503, "ServiceUnavailable", "The server cannot be reached.");
}

// ---- images ----------------------------------------------------------------------------------
//
// The replica holds no file or image bytes (engine::replica::import leaves those fields out), so
// the worker keeps them itself, per user, in the Cache Storage `volto-offline-files:<login>`
// (deleted with the replica at logout): after a round, every Image of the replica whose bytes it
// does not have yet (or that changed) is fetched from the server: its image field (as the server
// shows it: download URLs, sizes, scales) and the bytes of the original and of every scale, which
// are the URLs Volto's image tags and their srcset name. Images Volto shows online are kept too.
// Offline, the replica's answers get the kept image fields back (a content object's own field,
// the `image_scales` of listed items), and the image requests are answered from the cache.
// The Cache Storage rather than the replica: the bytes are served to <img> tags, never through
// the API, and the engine in the browser stays free of the server's scales.

const filesCache = (login) => `volto-offline-files:${login}`;
const metaCache = { login: null, map: null };
let prefetching = false;
let lastPrefetch = 0;

// The kept image fields of `login`'s objects, by `@id`: { id, modified, fields, image_scales }.
async function metaFor(login) {
  if (metaCache.login === login && metaCache.map) return metaCache.map;
  const map = new Map();
  const cache = await caches.open(filesCache(login));
  for (const key of await cache.keys()) {
    if (!new URL(key.url).pathname.startsWith(META_PREFIX)) continue;
    const m = await (await cache.match(key)).json().catch(() => null);
    if (m && m.id) map.set(m.id, m);
  }
  metaCache.login = login;
  metaCache.map = map;
  return map;
}

const isFileField = (v) => !!v && typeof v === "object" && typeof v.download === "string" && !!v["content-type"];

// Fetch into the files cache what the replica's images need offline (see above).
async function prefetchImages(entry, site) {
  if (prefetching || Date.now() - lastPrefetch < PREFETCH_EVERY_MS) return;
  if (!clientsOnline || offlineNow() || entry.needsLogin) return;
  prefetching = true;
  lastPrefetch = Date.now();
  try {
    const listed = await site
      .fetch(new Request(`${ORIGIN}/@search?portal_type=Image&sort_on=modified&sort_order=descending&b_size=${PREFETCH_MAX}&metadata_fields=modified`, { headers: { Accept: "application/json" } }))
      .then((r) => r.json());
    const cache = await caches.open(filesCache(entry.login));
    const metas = await metaFor(entry.login);
    for (const item of listed.items || []) {
      if (current !== entry || entry.needsLogin) return;
      const id = item["@id"];
      const known = metas.get(id);
      if (known && known.modified === item.modified) continue;
      const path = new URL(id).pathname;
      const resp = await realFetch(`${ORIGIN}${API_PREFIX}${path}`, {
        headers: { Accept: "application/json", Authorization: `Bearer ${entry.token}` },
      });
      if (!resp.ok) continue;
      const obj = await resp.json();
      const fields = {};
      for (const [k, v] of Object.entries(obj)) if (isFileField(v)) fields[k] = v;
      let complete = true;
      for (const f of Object.values(fields)) {
        const urls = [f.download, ...Object.values(f.scales || {}).map((sc) => sc.download)];
        for (const u of urls) {
          const abs = new URL(u, `${id}/`).href;
          if (await cache.match(abs)) continue;
          const r = await realFetch(abs).catch(() => null);
          if (r && r.ok) await cache.put(abs, r);
          else complete = false;
        }
      }
      const meta = { id, modified: complete ? item.modified : null, fields, image_scales: obj.image_scales || null };
      metas.set(id, meta);
      await cache.put(`${ORIGIN}${META_PREFIX}${path}`, new Response(JSON.stringify(meta), { headers: { "Content-Type": "application/json" } }));
    }
  } catch (e) {
    console.error("volto-offline: keeping images", e);
  } finally {
    prefetching = false;
  }
}

// The replica's JSON answer `resp` with the kept image fields of the objects it shows put back.
async function withImages(resp) {
  const entry = current;
  if (!entry || !resp.ok || !(resp.headers.get("content-type") || "").includes("application/json")) return resp;
  const metas = await metaFor(entry.login);
  if (!metas.size) return resp;
  const body = await resp.clone().json().catch(() => null);
  if (!body || typeof body !== "object") return resp;
  let changed = false;
  const fill = (obj, listed) => {
    const m = obj && typeof obj["@id"] === "string" ? metas.get(obj["@id"]) : null;
    if (!m) return;
    const names = Object.keys(m.fields);
    if (listed) {
      if (!obj.image_scales && names.length) {
        obj.image_scales = m.image_scales || Object.fromEntries(names.map((k) => [k, [m.fields[k]]]));
        obj.image_field = obj.image_field || names[0];
        changed = true;
      }
      return;
    }
    for (const k of names) {
      if (obj[k] === undefined || obj[k] === null) {
        obj[k] = m.fields[k];
        changed = true;
      }
    }
  };
  fill(body, false);
  if (Array.isArray(body.items)) body.items.forEach((i) => fill(i, true));
  if (!changed) return resp;
  const headers = new Headers(resp.headers);
  headers.delete("content-length");
  return new Response(JSON.stringify(body), { status: resp.status, statusText: resp.statusText, headers });
}

// An image or file of the site (`@@images`, `@@download`, `@@display-file`; Volto's server passes
// them to the API): the network while it answers, kept for the logged-in user; else the kept copy.
async function fileAsset(req) {
  const entry = current;
  const name = entry ? filesCache(entry.login) : null;
  if (!offlineNow()) {
    try {
      const resp = await realFetch(req);
      if (resp.status < 500) {
        if (resp.ok && name) {
          const copy = resp.clone();
          caches.open(name).then((c) => c.put(req.url, copy));
        }
        return resp;
      }
    } catch {
      // offline: below
    }
  }
  const hit = name ? await caches.match(req.url, { cacheName: name }) : null;
  return hit || new Response("Offline, and this image was not kept.", { status: 504 });
}

// ---- the app ---------------------------------------------------------------------------------

async function precache() {
  const cache = await caches.open(APP_CACHE);
  const list = await realFetch("/offline-precache.json", { cache: "no-store" }).then((r) => r.json());
  const pkg = ["engine.js", "host_wasm.js", "host_wasm_bg.wasm", "host_wasm_full.js", "host_wasm_full_bg.wasm"];
  const files = [...pkg.map((f) => `/offline-pkg/${f}`), ...list.files];
  // one by one: a file that fails is fetched again when it is asked for
  await Promise.allSettled(files.map((f) => cache.add(new Request(f, { cache: "no-store" }))));
}

function isStatic(path) {
  return path.startsWith("/static/") || path.startsWith("/offline-pkg/") || /\.(ico|png|svg|webmanifest|woff2?)$/.test(path);
}

async function staticAsset(req) {
  const hit = await caches.match(req, { cacheName: APP_CACHE });
  if (hit) return hit;
  const resp = await realFetch(req);
  if (resp.ok) {
    const copy = resp.clone();
    caches.open(APP_CACHE).then((c) => c.put(req, copy));
  }
  return resp;
}

// ---- the app shell ---------------------------------------------------------------------------
//
// Volto's server renders each page with the Redux state serialized into it (`window.__data`),
// the session token (`userSession.token`) included, and Volto's client writes the token of the
// state it starts from into its `auth_token` cookie (persistAuthToken). So a kept copy of a page
// rendered for a logged-in user brings that user's session back whenever it is loaded, also
// after the logout ended it (an offline reload, a navigation whose network attempt failed, a
// load racing the logout): earlier versions kept such pages as they came. Now the worker keeps
// the site root only, and never with a token in it:
// - per user, the root as Volto renders it for them (their actions, navigation, types: what
//   Volto's manage views such as the contents view read from the state on a page load), with
//   their token taken out of the state (refused if any token is left), deleted at their logout;
// - for nobody, the root fetched without cookies: the shell of a browser with no session.
// A navigation that cannot reach the network gets the shell of the user of Volto's cookie as it
// is then (read with the Cookie Store API; none, or a browser without it: nobody's), with a small
// script that sets the state's token from that cookie, as Volto's server does with the request's
// cookie. Volto then shows the page asked for, its content loaded through the API (the replica).

// A JSON Web Token anywhere in a text: what a kept shell must never hold.
const JWT = /eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{8,}/g;
const shellKey = (login) => `${ORIGIN}${SHELL_KEY}/${login ? `user/${encodeURIComponent(login)}` : "nobody"}`;
const shellFetched = new Map();
let shellFetching = null;

// The user of Volto's session cookie now ({ login, token, ... }), or null (no cookie, or no Cookie
// Store API in this browser's workers).
async function cookieUser() {
  try {
    const c = self.cookieStore ? await self.cookieStore.get("auth_token") : null;
    return c && c.value ? claims(decodeURIComponent(c.value)) : null;
  } catch {
    return null;
  }
}

// Fetch the root again as nobody and, when Volto's cookie names a user, as that user, when their
// copy is missing or older than SHELL_MAX_AGE_MS (`force`: now).
function refreshShell(force) {
  if (shellFetching) return shellFetching;
  shellFetching = (async () => {
    const user = await cookieUser();
    for (const who of user ? [null, user] : [null]) {
      const key = shellKey(who && who.login);
      if (!force && Date.now() - (shellFetched.get(key) || 0) < SHELL_MAX_AGE_MS) continue;
      const resp = await realFetch(new Request(ORIGIN + "/", {
        credentials: who ? "include" : "omit",
        cache: "no-store",
        headers: { Accept: "text/html" },
      })).catch(() => null);
      if (!resp || !resp.ok || !(resp.headers.get("content-type") || "").includes("text/html")) continue;
      let html = await resp.text();
      if (!html.includes("window.__data=")) continue;
      if (who) {
        // rendered for the cookie's user: their token out of the state, and the page theirs
        const tokens = html.match(JWT) || [];
        if (!tokens.length || tokens.some((t) => (claims(t) || {}).login !== who.login)) continue;
        for (const t of new Set(tokens)) html = html.split(`"${t}"`).join("null");
      }
      JWT.lastIndex = 0;
      if (JWT.test(html)) continue;
      const cache = await caches.open(SHELL_CACHE);
      await cache.put(key, new Response(html, { headers: { "Content-Type": "text/html; charset=utf-8" } }));
      shellFetched.set(key, Date.now());
    }
  })()
    .catch((e) => console.error("volto-offline: keeping the app shell", e))
    .finally(() => (shellFetching = null));
  return shellFetching;
}

// The user's shell is theirs only: deleted at their logout.
async function dropShell(login) {
  const cache = await caches.open(SHELL_CACHE);
  await cache.delete(shellKey(login));
  shellFetched.delete(shellKey(login));
}

// Runs in the page right after Volto's serialized state, before its scripts: the session is the
// one of Volto's cookie now (none after a logout), as Volto's server would render it.
const SESSION_FROM_COOKIE =
  "<script>(function(){var d=window.__data,m=document.cookie.match(/(?:^|;\\s*)auth_token=([^;]+)/);" +
  "if(d&&d.userSession){d.userSession.token=m?decodeURIComponent(m[1]):null;}})();</script>";

// The shell of the cookie's user (else nobody's) as served: its state's session from the cookie.
async function shellPage() {
  const user = await cookieUser();
  const kept =
    (user && (await caches.match(shellKey(user.login), { cacheName: SHELL_CACHE }))) ||
    (await caches.match(shellKey(null), { cacheName: SHELL_CACHE }));
  if (!kept) return null;
  const html = await kept.text();
  const at = html.indexOf("</script>", html.indexOf("window.__data="));
  if (at < 0) return null;
  const end = at + "</script>".length;
  return new Response(html.slice(0, end) + SESSION_FROM_COOKIE + html.slice(end), {
    status: 200,
    headers: { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" },
  });
}

// A navigation: the page Volto's server renders (never kept); when the network fails, the app
// shell (above). A working network also refreshes the shells when they are old.
async function navigation(req) {
  try {
    const resp = await realFetch(req);
    if (resp.status < 500) {
      if (resp.ok) refreshShell(false);
      return resp;
    }
  } catch {
    // offline: below
  }
  const shell = await shellPage();
  return shell || new Response("Offline, and the app was never loaded online.", { status: 503 });
}

self.addEventListener("install", (event) => {
  event.waitUntil(
    caches
      .delete(APP_CACHE)
      .then(precache)
      .then(() => refreshShell(true))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener("activate", (event) =>
  event.waitUntil(
    Promise.all(LEGACY_CACHES.map((name) => caches.delete(name))).then(() => self.clients.claim()),
  ),
);

self.addEventListener("fetch", (event) => {
  const req = event.request;
  const url = new URL(req.url);
  if (url.origin !== ORIGIN) return;
  if (url.pathname === API_PREFIX || url.pathname.startsWith(API_PREFIX + "/")) {
    event.respondWith(handleApi(req));
    return;
  }
  if (req.method !== "GET") return;
  if (/\/@@(images|download|display-file)(\/|$)/.test(url.pathname)) {
    event.respondWith(fileAsset(req));
    return;
  }
  if (req.mode === "navigate") {
    event.respondWith(navigation(req));
    return;
  }
  if (isStatic(url.pathname)) {
    event.respondWith(staticAsset(req));
  }
});

// ---- the add-on's messages (the toolbar indicator, the /offline-sync view) ------------------------

async function answer(msg) {
  if (typeof msg.online === "boolean") {
    const back = msg.online && !clientsOnline;
    clientsOnline = msg.online;
    if (back) offlineUntil = 0;
    if (!msg.online) stopStream();
  }
  if (msg.token) {
    const user = claims(msg.token);
    if (user) replicaFor(user);
  }
  followStream();
  const site = current && current.site;
  switch (msg.type) {
    case "status": {
      if (site) {
        scheduleSync(site.pending() > 0 && Date.now() - lastSync > 1000);
        const st = site.syncStatus();
        const metas = await metaFor(current.login);
        return {
          replica: true,
          login: current.login,
          ...st,
          online: clientsOnline && !offlineNow() && st.online,
          syncing: !!syncing,
          needsLogin: !!current.needsLogin,
          stream: { open: stream.open, events: stream.events },
          images: [...metas.values()].filter((m) => m.modified).length,
          figures,
        };
      }
      return { replica: false, opening: !!current, online: clientsOnline && !offlineNow(), needsLogin: !!(current && current.needsLogin) };
    }
    case "details":
      if (!site) return { replica: false };
      return {
        replica: true,
        pending: site.pendingWrites(),
        conflicts: site.conflicts(),
        status: { ...site.syncStatus(), needsLogin: !!current.needsLogin },
      };
    case "resolve":
      if (!site) throw new Error("no offline copy is open");
      await site.resolveConflict(msg.id, msg.how, msg.fields || undefined);
      if (syncing) await syncing;
      await scheduleSync(true);
      return { ok: true, status: site.syncStatus() };
    case "sync":
      if (!site) throw new Error("no offline copy is open");
      if (syncing) await syncing;
      await scheduleSync(true);
      return { ok: true, status: site.syncStatus() };
    default:
      throw new Error(`unknown message ${msg.type}`);
  }
}

self.addEventListener("message", (event) => {
  const port = event.ports && event.ports[0];
  const msg = event.data || {};
  const work = answer(msg).then(
    (value) => port && port.postMessage({ ok: true, value }),
    (e) => port && port.postMessage({ ok: false, error: String((e && e.message) || e) }),
  );
  event.waitUntil(work);
});
