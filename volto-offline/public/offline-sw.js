// volto-offline's Service Worker (a module worker, registered by the add-on with scope "/").
//
// What it does, on Volto's origin:
// - caches the app: the build's static files (listed in /offline-precache.json, written by
//   scripts/volto.sh --offline), the engine's wasm package (/offline-pkg/), and every page Volto's
//   server rendered (the app shell for a navigation that cannot reach the network);
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
import init, { openSite } from "/offline-pkg/host_wasm.js";

const ORIGIN = self.location.origin;
const API_PREFIX = "/++api++";
const APP_CACHE = "volto-offline-app";
const PAGES_CACHE = "volto-offline-pages";
// A navigation answered from the cache when the network fails: the last page of the site root
// Volto rendered, else the last page it rendered at all.
const SHELL_ROOT = "/__volto-offline-shell__/root";
const SHELL_ANY = "/__volto-offline-shell__/any";
// How long a failed network attempt makes the worker answer from the replica without trying.
const OFFLINE_GRACE_MS = 5000;
// Sync rounds while online: at most this often (pending writes are sent at the next round).
const SYNC_EVERY_MS = 5000;

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

function wasm() {
  if (!wasmReady) {
    wasmReady = (async () => {
      const url = new URL("/offline-pkg/host_wasm_bg.wasm", ORIGIN).href;
      const cached = await caches.match(url);
      await init({ module_or_path: cached || realFetch(url) });
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
    return typeof c.sub === "string" && c.sub ? { login: c.sub, token, exp: c.exp || 0 } : null;
  } catch {
    return null;
  }
}

// The replica of `user`, opened (or created: the first download runs then) when it is not the open
// one. Opening another user's replica closes the open one first. A new token of the same user (a
// new login, e.g. after the server refused an expired one) reopens the replica with it.
function replicaFor(user) {
  if (current && current.login === user.login) {
    if (current.token !== user.token && (!user.exp || user.exp * 1000 > Date.now())) {
      current.token = user.token;
      openReplica(current, current.ready);
    }
    return current;
  }
  const entry = { login: user.login, token: user.token, site: null };
  openReplica(entry, current ? current.ready : null);
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
    const site = await openSite(dbName(entry.login), {
      baseUrl: ORIGIN,
      server: ORIGIN,
      credentials: { login: entry.login, token: entry.token },
    });
    entry.site = site;
    lastSync = Date.now();
    noteStatus(site.syncStatus());
    return site;
  })();
  entry.ready.catch((e) => {
    console.error("volto-offline: cannot open the replica", e);
    if (current === entry) current = null;
  });
}

function noteStatus(st) {
  lastStatus = st;
  if (st.online) offlineUntil = 0;
  else if (st.lastError && st.lastError.startsWith("no answer")) offlineUntil = Date.now() + OFFLINE_GRACE_MS;
}

function offlineNow() {
  return !clientsOnline || Date.now() < offlineUntil;
}

// One sync round of the open replica, unless one runs, the browser is offline, or one ran less than
// SYNC_EVERY_MS ago (`force` skips that last check).
function scheduleSync(force) {
  if (!current || !current.site || syncing || !clientsOnline) return syncing;
  if (!force && Date.now() - lastSync < SYNC_EVERY_MS) return null;
  const site = current.site;
  syncing = site
    .sync()
    .then(noteStatus)
    .catch((e) => console.error("volto-offline: sync", e))
    .finally(() => {
      lastSync = Date.now();
      syncing = null;
    });
  return syncing;
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
  return site.fetch(new Request(url.href, { method: req.method, headers, body }));
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
  const local = offlineNow() || (entry.site && entry.site.pending() > 0);
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
  }
  return resp;
}

// Volto's logout: sent to the server (answered by the replica when it cannot be reached), then the
// replica is closed and, when nothing waits to be sent, deleted with the pages cache. A replica with
// pending writes or conflicts stays (closed) for its user's next login: nothing is dropped silently.
async function logout(req) {
  const user = bearer(req);
  let resp = null;
  try {
    resp = await throughProxy(req.clone());
  } catch {
    resp = null;
  }
  const entry = current && (!user || current.login === user.login) ? current : null;
  if (entry) {
    current = null;
    const site = await entry.ready.catch(() => null);
    if (site) {
      if (!resp) resp = await fromReplica(site, req);
      const st = site.syncStatus();
      if (st.pending === 0 && st.conflicts === 0) {
        await site.logout(true).catch((e) => console.error("volto-offline: logout", e));
      } else {
        site.close();
      }
    }
  }
  await caches.delete(PAGES_CACHE);
  lastStatus = null;
  return resp || jsonError(503, "ServiceUnavailable", "The server cannot be reached.");
}

// ---- the app ---------------------------------------------------------------------------------

async function precache() {
  const cache = await caches.open(APP_CACHE);
  const list = await realFetch("/offline-precache.json", { cache: "no-store" }).then((r) => r.json());
  const files = ["/offline-pkg/host_wasm.js", "/offline-pkg/host_wasm_bg.wasm", ...list.files];
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

// A navigation: the page Volto's server renders, kept for offline use; offline, the kept copy of
// that page, else the app shell (Volto then loads the page's content through the API, which the
// replica answers).
async function navigation(req) {
  const url = new URL(req.url);
  try {
    const resp = await realFetch(req);
    if (resp.status < 500) {
      if (resp.ok && (resp.headers.get("content-type") || "").includes("text/html")) {
        const cache = await caches.open(PAGES_CACHE);
        const key = url.origin + url.pathname;
        await cache.put(key, resp.clone());
        await cache.put(SHELL_ANY, resp.clone());
        if (url.pathname === "/") await cache.put(SHELL_ROOT, resp.clone());
      }
      return resp;
    }
  } catch {
    // offline: below
  }
  const cache = await caches.open(PAGES_CACHE);
  const hit =
    (await cache.match(url.origin + url.pathname)) || (await cache.match(SHELL_ROOT)) || (await cache.match(SHELL_ANY));
  return hit || new Response("Offline, and this page was never loaded online.", { status: 503 });
}

self.addEventListener("install", (event) => {
  event.waitUntil(
    caches
      .delete(APP_CACHE)
      .then(precache)
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("fetch", (event) => {
  const req = event.request;
  const url = new URL(req.url);
  if (url.origin !== ORIGIN) return;
  if (url.pathname === API_PREFIX || url.pathname.startsWith(API_PREFIX + "/")) {
    event.respondWith(handleApi(req));
    return;
  }
  if (req.method !== "GET") return;
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
  }
  if (msg.token) {
    const user = claims(msg.token);
    if (user) replicaFor(user);
  }
  const site = current && current.site;
  switch (msg.type) {
    case "status": {
      if (site) {
        scheduleSync(site.pending() > 0 && Date.now() - lastSync > 1000);
        const st = site.syncStatus();
        return { replica: true, login: current.login, ...st, online: clientsOnline && !offlineNow() && st.online, syncing: !!syncing };
      }
      return { replica: false, opening: !!current, online: clientsOnline && !offlineNow() };
    }
    case "details":
      if (!site) return { replica: false };
      return { replica: true, pending: site.pendingWrites(), conflicts: site.conflicts(), status: site.syncStatus() };
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
