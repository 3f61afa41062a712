// The browser engine in two modules: the loader every page and worker imports instead of
// `host_wasm.js`. Same API (`init`, `openSite`, `deleteSite`, `StaticEmbedding`).
//
// The package holds two builds of host-wasm from one source: `host_wasm_bg.wasm`, the first
// module (cargo feature `lean`: the engine without its rarely used endpoint families, their code
// and data, see engine::api::RARE_FAMILIES), and `host_wasm_full_bg.wasm`, the whole engine.
// `init` loads the first only. A site answers every request from it until one reaches an endpoint
// it leaves out: the lean engine answers that request 501 with the header `Engine-Not-In-Build`,
// having changed nothing. The loader then fetches the full module, opens the same site with it
// (every write of the lean handle is in IndexedDB before its answer, and the loader waits for
// the lean handle's requests in progress), closes the lean handle, answers the request there and
// routes everything to the full module from then on. No client sees the 501.
//
// A site with `storage: "memory"` has no state another module could open, so it is opened with
// the full module from the start.
//
// Both glue files are imported statically: a Service Worker may not `import()` at run time.
import initLean, * as lean from "./host_wasm.js";
import initFull, * as full from "./host_wasm_full.js";

/** The header of the lean engine's "not in this build" answer (engine::NOT_IN_BUILD_HEADER). */
export const NOT_IN_BUILD = "Engine-Not-In-Build";

let fullSource;
let fullReady = null;

/**
 * Load the first module. `options` are `host_wasm.js`'s (`{ module_or_path }`), plus `full`: the
 * full module's `module_or_path`, or a function returning it, called when it is first needed
 * (default: `host_wasm_full_bg.wasm` next to this file).
 */
export default async function init(options) {
  if (options && typeof options === "object" && "full" in options) {
    const { full: source, ...rest } = options;
    fullSource = source;
    return initLean(Object.keys(rest).length ? rest : undefined);
  }
  return initLean(options);
}

/** Load the full module now (it is loaded on first need otherwise); resolves when it is ready. */
export function loadFull() {
  if (!fullReady) {
    const source = typeof fullSource === "function" ? fullSource() : fullSource;
    fullReady = initFull(source === undefined ? undefined : { module_or_path: source });
    fullReady.catch(() => (fullReady = null));
  }
  return fullReady;
}

/** Whether the full module is loaded. */
export function fullLoaded() {
  return fullReady !== null;
}

/** Open a site (host-wasm's `openSite`); the handle moves to the full module when it needs to. */
export async function openSite(name, options) {
  if (options && options.storage === "memory") {
    await loadFull();
    return handle(new SplitSite(name, options, await full.openSite(name, options), "full"));
  }
  return handle(new SplitSite(name, options, await lean.openSite(name, options), "lean"));
}

/** Delete a site's database (close its handles first). */
export function deleteSite(name) {
  return lean.deleteSite(name);
}

export const StaticEmbedding = lean.StaticEmbedding;

// A request that can be sent again after the lean module answered it 501: a `Request` with a
// body is cloned before the first attempt reads it (a GET's is sent as it is).
function again(input) {
  return input instanceof Request && input.body !== null ? input.clone() : input;
}

class SplitSite {
  constructor(name, options, site, build) {
    this.name = name;
    this.options = options;
    this.site = site;
    this.build = build;
    this.upgrading = null;
    this.busy = new Set();
    this.bulk = false;
    // what the caller set on the handle, given to the full module's handle too
    this.props = new Map();
    this.calls = new Map();
    this.fetch = this.fetch.bind(this);
    this.request = this.request.bind(this);
  }

  track(p) {
    if (p && typeof p.then === "function") {
      this.busy.add(p);
      const done = () => this.busy.delete(p);
      p.then(done, done);
    }
    return p;
  }

  upgrade() {
    if (!this.upgrading) {
      this.upgrading = (async () => {
        await loadFull();
        // what the lean handle is doing finishes first: its writes reach IndexedDB before it answers
        while (this.busy.size) await Promise.allSettled([...this.busy]);
        const old = this.site;
        if (this.bulk) await old.endBulk();
        const next = await full.openSite(this.name, this.options);
        for (const [k, v] of this.props) next[k] = v;
        for (const [k, args] of this.calls) next[k](...args);
        if (this.bulk) next.beginBulk();
        this.site = next;
        this.build = "full";
        old.close();
      })();
      this.upgrading.catch(() => (this.upgrading = null));
    }
    return this.upgrading;
  }

  async fetch(input, init) {
    if (this.upgrading) await this.upgrading;
    if (this.build === "full") return this.site.fetch(input, init);
    const retry = again(input);
    const resp = await this.track(this.site.fetch(input, init));
    if (resp.status !== 501 || !resp.headers.has(NOT_IN_BUILD)) return resp;
    await this.upgrade();
    return this.site.fetch(retry, init);
  }

  request(method, url, init) {
    const whole = url.startsWith("/") ? this.site.baseUrl + url : url;
    return this.fetch(whole, { ...(init || {}), method });
  }
}

// The handle the caller gets: `fetch`, `request` and `build` ("lean" or "full") are the loader's;
// every other property and method is the open handle's.
function handle(split) {
  return new Proxy(split, {
    get(t, prop) {
      if (prop === "fetch" || prop === "request" || prop === "build") return t[prop];
      if (prop === "upgrade") return () => t.upgrade();
      const v = t.site[prop];
      if (typeof v !== "function") return v;
      return (...args) => {
        if (prop === "setOnline") t.calls.set(prop, args);
        if (prop === "beginBulk") t.bulk = true;
        if (prop === "endBulk") t.bulk = false;
        return t.track(v.apply(t.site, args));
      };
    },
    set(t, prop, value) {
      t.site[prop] = value;
      t.props.set(prop, value);
      return true;
    },
  });
}
