// Benchmark of host-wasm in the browser (see bench.html; printed by scripts/bench.sh).
import init, { openSite, deleteSite } from "./pkg/engine.js";

const BASE = "http://localhost:8080";
const AUTH = "Basic " + btoa("admin:secret-password");
const out = document.getElementById("out");
const lines = [];
const log = (s) => {
  lines.push(s);
  console.log(s); // live progress for e2e/bench.mjs
  out.textContent = lines.join("\n");
};
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const req = (site, method, path, body) =>
  site.fetch(
    new Request(BASE + path, {
      method,
      headers: { Accept: "application/json", Authorization: AUTH, ...(body ? { "Content-Type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    }),
  );
async function ok(respPromise, want) {
  const r = await respPromise;
  if (r.status !== want) throw new Error(`expected ${want}, got ${r.status}: ${await r.text()}`);
  await r.arrayBuffer();
  return r;
}

const results = {};
// Sizes to seed and measure, cumulative (`bench.html?sizes=1000,10000` for a shorter run).
const SIZES = (new URLSearchParams(location.search).get("sizes") || "1000,10000,100000")
  .split(",")
  .map(Number);
// `?bulk=N`: seed with N POSTs per IndexedDB write (`Site.beginBulk()` / `endBulk()`) instead
// of one durable write per POST (which makes seeding 100k quadratic: every 200th write
// rewrites the whole snapshot). Only the seeding changes; the measured GETs and POSTs do not.
const BULK = Number(new URLSearchParams(location.search).get("bulk") || 0);
const GET_SAMPLES = 300;
async function main() {
  const t0 = performance.now();
  await init();
  results.wasm_init_ms = performance.now() - t0;
  log(`wasm init (fetch + compile + instantiate): ${results.wasm_init_ms.toFixed(1)} ms`);

  const name = `bench-${Date.now()}`;
  let site = await openSite(name, { baseUrl: BASE, adminPassword: "secret-password" });
  const FOLDERS = 10;
  for (let f = 0; f < FOLDERS; f++) await ok(req(site, "POST", "/", { "@type": "Folder", id: `f${f}`, title: `Folder ${f}` }), 201);
  let count = FOLDERS;
  const seedTo = async (n) => {
    const t = performance.now();
    const start = count;
    while (count < n) {
      if (count % 10000 === 0 && count > start) log(`  ... ${count} objects (${((performance.now() - t) / 1000).toFixed(0)} s)`);
      if (BULK && count % BULK === 0) site.beginBulk();
      const f = count % FOLDERS;
      await ok(req(site, "POST", `/f${f}`, { "@type": "Page", id: `p${count}`, title: `Page ${count}`, description: "seed" }), 201);
      count++;
      if (BULK && (count % BULK === 0 || count === n)) await site.endBulk();
    }
    log(`seeded ${n - start} objects in ${((performance.now() - t) / 1000).toFixed(1)} s (${((performance.now() - t) / (n - start)).toFixed(2)} ms per POST${BULK ? `, bulk: ${BULK} POSTs per IndexedDB write` : ""})`);
  };

  for (const n of SIZES) {
    await seedTo(n);
    site.close();
    site.free();
    const opens = [];
    let phases;
    for (let i = 0; i < 5; i++) {
      const t = performance.now();
      const s = await openSite(name, { baseUrl: BASE });
      opens.push(performance.now() - t);
      phases = s.openTimings ? s.openTimings() : null;
      s.close();
      s.free();
    }
    // The IndexedDB part of an open alone: read the snapshot records (no wasm).
    const raw = [];
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      const db = await new Promise((res, rej) => {
        const r = indexedDB.open(name);
        r.onsuccess = () => res(r.result);
        r.onerror = () => rej(r.error);
      });
      // all records of the snapshot store (the chunks, their count, the version), as openSite
      // reads them, in one transaction
      const records = await new Promise((res, rej) => {
        const r = db.transaction("snapshot").objectStore("snapshot").getAll();
        r.onsuccess = () => res(r.result);
        r.onerror = () => rej(r.error);
      });
      raw.push(performance.now() - t);
      db.close();
      const bytes = records.reduce((sum, v) => sum + (v && v.byteLength ? v.byteLength : 0), 0);
      if (i === 0) log(`${n} objects: snapshot ${bytes} bytes`);
    }
    log(`${n} objects: reading the snapshot alone (IndexedDB, no wasm): ${median(raw).toFixed(1)} ms (median of 3)`);
    site = await openSite(name, { baseUrl: BASE });
    // warm up auth (the first Basic check runs argon2; later ones hit the engine's cache)
    await ok(req(site, "GET", "/f1/p11"), 200);
    // Pages p10 .. p<n-1> exist; page p<k> lives in folder f<k % FOLDERS>.
    const page = (i) => {
      const k = 10 + ((i * 7919) % (n - 10));
      return `/f${k % FOLDERS}/p${k}`;
    };
    for (let i = 0; i < 30; i++) await ok(req(site, "GET", page(1000 + i)), 200); // warm-up, not timed
    const gets = [];
    for (let i = 0; i < GET_SAMPLES; i++) {
      const t = performance.now();
      await ok(req(site, "GET", page(i)), 200);
      gets.push(performance.now() - t);
    }
    const posts = [];
    for (let i = 0; i < 30; i++) {
      const t = performance.now();
      await ok(req(site, "POST", `/f${i % FOLDERS}`, { "@type": "Page", title: `Bench ${n} ${i}` }), 201);
      posts.push(performance.now() - t);
    }
    results[n] = { open_ms: median(opens), get_ms: median(gets), post_ms: median(posts) };
    if (phases) log(`${n} objects: open phases (last open, ms): ${Object.entries(phases).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(", ")}`);
    log(`${n} objects: cold open ${median(opens).toFixed(1)} ms (median of 5), GET ${median(gets).toFixed(3)} ms (median of ${GET_SAMPLES}), POST ${median(posts).toFixed(2)} ms (median of 30)`);
  }
  // The full module (pkg/engine.js loads it on the first request the first module leaves out):
  // the time of that first request (fetching and compiling the module, opening the site again)
  // and the GET on the full module.
  const t1 = performance.now();
  await ok(req(site, "GET", "/@aliases"), 200);
  results.upgrade_ms = performance.now() - t1;
  log(`first request the first module leaves out (GET /@aliases: full module fetched, compiled, site reopened): ${results.upgrade_ms.toFixed(1)} ms (build now: ${site.build})`);
  const gets = [];
  for (let i = 0; i < GET_SAMPLES; i++) {
    const t = performance.now();
    await ok(req(site, "GET", `/f${(10 + i) % 10}/p${10 + i}`), 200);
    gets.push(performance.now() - t);
  }
  results.full_get_ms = median(gets);
  log(`full module: GET page ${results.full_get_ms.toFixed(3)} ms (median of ${GET_SAMPLES}, pages p10..p${9 + GET_SAMPLES})`);
  site.close();
  site.free();
  await deleteSite(name);
}

main()
  .then(() => {
    document.body.dataset.done = "1";
    window.benchResults = results;
  })
  .catch((e) => {
    log(`FAILED: ${e.message || e}`);
    document.body.dataset.done = "error";
  });
