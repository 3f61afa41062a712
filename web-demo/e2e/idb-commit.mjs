// What a create's IndexedDB transaction costs, apart from the engine (bench/RESULTS.md, "The
// browser host's write"). A real create's change set is taken from a site's `log` store (one POST
// through pkg/engine.js), then plain IndexedDB transactions are timed in the same page, no wasm:
//   kv+log     one `put` per key into `kv`, the change set into `log`, the version into `meta`
//              (host-wasm's write up to this round)
//   log        the change set into `log` and the version into `meta` only (this round's write)
//   meta       the version alone: the commit wait with (almost) nothing to write
// each with the transaction's default durability (what host-wasm passes: nothing) and, for
// comparison only, with `durability: "relaxed"` and `"strict"`. Medians of N transactions, the kinds alternating.
// Run twice: in a fresh browser context (what bench.mjs uses: Chromium keeps its IndexedDB in
// memory) and in a persistent profile on disk (what profile.mjs and a real browser use).
// Usage: node web-demo/e2e/idb-commit.mjs [N]   (needs web-demo/pkg: scripts/web-demo.sh --build-only)
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { launchChromium, serveDemo } from "./serve.mjs";

const N = Number(process.argv[2] || 200);
// cross-origin isolated: performance.now() in 5 us steps instead of 100 us
const { server, port } = await serveDemo({
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Embedder-Policy": "require-corp",
});
const profileDir = mkdtempSync(join(tmpdir(), "idb-commit-"));
for (const where of ["fresh context (IndexedDB in memory)", "persistent profile (IndexedDB on disk)"]) {
  const onDisk = where.startsWith("persistent");
  const browser = onDisk ? null : await launchChromium();
  const ctx = onDisk
    ? await chromium.launchPersistentContext(profileDir, {
        executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
        headless: true,
        args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"],
      })
    : await browser.newContext();
  const page = await ctx.newPage();
  page.on("pageerror", (e) => console.log("pageerror:", e.message));
  await page.goto(`http://127.0.0.1:${port}/sync-test.html`); // an empty page of the origin
  const r = await page.evaluate(async (n) => {
    const { default: init, openSite, deleteSite } = await import("/pkg/engine.js");
    await init();
    const BASE = "http://localhost:8080";
    const name = `idb-commit-${Date.now()}`;
    const site = await openSite(name, { baseUrl: BASE, adminPassword: "secret-password" });
    const resp = await site.fetch(new Request(BASE + "/", {
      method: "POST",
      headers: { Accept: "application/json", "Content-Type": "application/json", Authorization: "Basic " + btoa("admin:secret-password") },
      body: JSON.stringify({ "@type": "Page", title: "A page", description: "seed" }),
    }));
    if (resp.status !== 201) throw new Error(`create answered ${resp.status}`);
    const version = site.version;
    site.close();
    site.free();
    const idb = (req) => new Promise((res, rej) => { req.onsuccess = () => res(req.result); req.onerror = () => rej(req.error); });
    let db = await idb(indexedDB.open(name));
    const entry = await idb(db.transaction("log").objectStore("log").get(version));
    const durability = db.transaction("meta", "readwrite").durability;
    db.close();
    await deleteSite(name);

    // a scratch database with the same stores
    const scratch = `${name}-scratch`;
    const open = indexedDB.open(scratch, 1);
    open.onupgradeneeded = () => { for (const s of ["kv", "meta", "log"]) open.result.createObjectStore(s); };
    db = await idb(open);
    const done = (tx) => new Promise((res, rej) => { tx.oncomplete = res; tx.onabort = () => rej(tx.error); });
    let v = 0;
    const bump = (k) => { // a copy of the entry whose keys differ per transaction (a new object)
      const tag = new TextEncoder().encode(String(k).padStart(8, "0"));
      return entry.map(([key, value]) => { const kk = new Uint8Array(key.length + 8); kk.set(key); kk.set(tag, key.length); return [kk, value]; });
    };
    const kinds = {
      "kv+log": (tx, e) => { const kv = tx.objectStore("kv"); for (const [k, val] of e) val ? kv.put(val, k) : kv.delete(k); },
      log: () => {},
      meta: null,
    };
    const times = {};
    const durabilities = ["default", "relaxed", "strict"];
    for (const dur of durabilities) {
      for (const kind of Object.keys(kinds)) times[`${kind} (${dur})`] = [];
    }
    for (let i = 0; i < n; i++) {
      for (const dur of durabilities) {
        for (const [kind, extra] of Object.entries(kinds)) {
          const e = bump(++v);
          const stores = kind === "kv+log" ? ["kv", "meta", "log"] : kind === "log" ? ["meta", "log"] : ["meta"];
          const t = performance.now();
          const tx = db.transaction(stores, "readwrite", dur === "default" ? undefined : { durability: dur });
          tx.objectStore("meta").get("version");
          if (extra) extra(tx, e);
          if (kind !== "meta") tx.objectStore("log").put(e, v);
          tx.objectStore("meta").put(v, "version");
          await done(tx);
          times[`${kind} (${dur})`].push(performance.now() - t);
        }
      }
    }
    db.close();
    await idb(indexedDB.deleteDatabase(scratch));
    const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
    const bytes = entry.reduce((s, [k, val]) => s + k.length + (val ? val.length : 0), 0);
    return { keys: entry.length, bytes, durability, medians: Object.fromEntries(Object.entries(times).map(([k, xs]) => [k, median(xs)])) };
  }, N);
  console.log(`${where}: a create's change set: ${r.keys} keys, ${r.bytes} bytes of keys and values; a transaction opened without options has durability "${r.durability}"`);
  for (const [k, ms] of Object.entries(r.medians)) console.log(`  ${k.padEnd(18)} ${ms.toFixed(3)} ms (median of ${N})`);
  await ctx.close();
  if (browser) await browser.close();
}
server.close();
rmSync(profileDir, { recursive: true, force: true });
