// Service Worker (module): answers every request under ./api/ from the engine (host-wasm on
// IndexedDB), so an unchanged client that uses plain fetch("/api/...") works offline, and caches
// the page itself. Register with navigator.serviceWorker.register("./sw.js", { type: "module" }).
import init, { openSite } from "./pkg/engine.js";

const CACHE = "web-demo-shell-v1";
// the loader and both modules: the full one is only loaded when a request needs it, but offline
// it must be here already
const SHELL = ["./", "./index.html", "./app.js", "./style.css", "./pkg/engine.js", "./pkg/host_wasm.js",
  "./pkg/host_wasm_bg.wasm", "./pkg/host_wasm_full.js", "./pkg/host_wasm_full_bg.wasm"];
const BASE = new URL("api", self.registration.scope).href.replace(/\/$/, "");
const SITE_NAME = "web-demo";

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(CACHE).then((c) => c.addAll(SHELL)).then(() => self.skipWaiting()));
});
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

let sitePromise = null;
function getSite() {
  if (!sitePromise) {
    sitePromise = (async () => {
      const wasmUrl = new URL("./pkg/host_wasm_bg.wasm", self.registration.scope);
      const wasm = (await caches.match(wasmUrl)) || (await fetch(wasmUrl));
      const fullUrl = new URL("./pkg/host_wasm_full_bg.wasm", self.registration.scope);
      const full = async () => (await caches.match(fullUrl)) || fetch(fullUrl);
      await init({ module_or_path: wasm, full });
      return openSite(SITE_NAME, { baseUrl: BASE, adminPassword: "offline-admin", title: "My offline site" });
    })();
    sitePromise.catch(() => (sitePromise = null)); // retry on the next request
  }
  return sitePromise;
}

function isApi(url) {
  return url === BASE || url.startsWith(BASE + "/") || url.startsWith(BASE + "?");
}

self.addEventListener("fetch", (event) => {
  const url = event.request.url;
  if (isApi(url)) {
    event.respondWith(
      getSite()
        .then((site) => site.fetch(event.request))
        .catch(
          (e) =>
            new Response(JSON.stringify({ type: "ServiceUnavailable", message: `engine not available: ${e.message || e}` }), {
              status: 503,
              headers: { "Content-Type": "application/json" },
            }),
        ),
    );
    return;
  }
  if (event.request.method !== "GET" || new URL(url).origin !== self.location.origin) return;
  // the page: network first (fresh while developing), the cache when offline
  event.respondWith(
    fetch(event.request)
      .then((resp) => {
        if (resp.ok) {
          const copy = resp.clone();
          caches.open(CACHE).then((c) => c.put(event.request, copy));
        }
        return resp;
      })
      .catch(() => caches.match(event.request, { ignoreSearch: true }).then((r) => r || Response.error())),
  );
});
