// Steps for e2e/profile.mjs: it calls these from the Node side between `Profiler.start` and
// `Profiler.stop`, so each CPU profile holds one phase only. `?pkg=pkg-prof` loads a build that
// kept the wasm name section (wasm-opt -g), so the profile names Rust functions.
const pkg = new URLSearchParams(location.search).get("pkg") || "pkg";
const mod = await import(`./${pkg}/host_wasm.js`);
await mod.default();

const BASE = "http://localhost:8080";
const AUTH = "Basic " + btoa("admin:secret-password");
const FOLDERS = 10;
let site = null;
const req = (method, path, body) =>
  site.fetch(
    new Request(BASE + path, {
      method,
      headers: { Accept: "application/json", Authorization: AUTH, ...(body ? { "Content-Type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    }),
  );
async function ok(p, want) {
  const r = await p;
  if (r.status !== want) throw new Error(`expected ${want}, got ${r.status}: ${await r.text()}`);
  await r.arrayBuffer();
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
};

window.prof = {
  // Open (creating if needed) the site `name`; returns the open time and its phases.
  async open(name) {
    if (site) { site.close(); site.free(); site = null; }
    const t = performance.now();
    site = await mod.openSite(name, { baseUrl: BASE, adminPassword: "secret-password" });
    return { ms: performance.now() - t, phases: Object.fromEntries(Object.entries(site.openTimings())) };
  },
  close() {
    if (site) { site.close(); site.free(); site = null; }
  },
  // Seed pages p<from> .. p<to-1> (folders f0..f9 first when from == 0), in bulks of 10,000.
  async seed(from, to) {
    if (from === 0) {
      for (let f = 0; f < FOLDERS; f++) await ok(req("POST", "/", { "@type": "Folder", id: `f${f}`, title: `Folder ${f}` }), 201);
      from = FOLDERS;
    }
    for (let c = from; c < to; c++) {
      if ((c - from) % 10000 === 0) site.beginBulk();
      await ok(req("POST", `/f${c % FOLDERS}`, { "@type": "Page", id: `p${c}`, title: `Page ${c}`, description: "seed" }), 201);
      if ((c + 1 - from) % 10000 === 0 || c + 1 === to) await site.endBulk();
    }
  },
  // `k` GETs of pages of an `n`-object site (as bench.js picks them); returns the median in ms.
  async gets(n, k, offset = 0) {
    const ts = [];
    for (let i = 0; i < k; i++) {
      const j = 10 + (((i + offset) * 7919) % (n - 10));
      const t = performance.now();
      await ok(req("GET", `/f${j % FOLDERS}/p${j}`), 200);
      ts.push(performance.now() - t);
    }
    return median(ts);
  },
  // `k` POSTs of new pages (each durable in IndexedDB before it resolves); median in ms.
  async posts(k, tag) {
    const ts = [];
    for (let i = 0; i < k; i++) {
      const t = performance.now();
      await ok(req("POST", `/f${i % FOLDERS}`, { "@type": "Page", title: `Prof ${tag} ${i}` }), 201);
      ts.push(performance.now() - t);
    }
    return median(ts);
  },
  // Read the snapshot records with plain IndexedDB (no wasm), as bench.js does.
  async rawRead(name) {
    const t = performance.now();
    const db = await new Promise((res, rej) => {
      const r = indexedDB.open(name);
      r.onsuccess = () => res(r.result);
      r.onerror = () => rej(r.error);
    });
    const records = await new Promise((res, rej) => {
      const r = db.transaction("snapshot").objectStore("snapshot").getAll();
      r.onsuccess = () => res(r.result);
      r.onerror = () => rej(r.error);
    });
    db.close();
    const bytes = records.reduce((s, v) => s + (v && v.byteLength ? v.byteLength : 0), 0);
    return { ms: performance.now() - t, bytes };
  },
  // What a GET costs outside the engine, in the page alone (no wasm): building the `Request` as
  // `req` does, and a `Response` of a typical page answer read back with `arrayBuffer()`, as
  // host-wasm builds it and `ok` reads it. Medians over `k` calls, in ms.
  async callerCost(k) {
    const body = new TextEncoder().encode(JSON.stringify({ "@id": BASE + "/f1/p11", title: "Page 11", description: "seed", text: null, items: [], review_state: "private", x: "y".repeat(1500) }));
    const init = { status: 200, headers: [["content-type", "application/json"]] };
    const reqs = [], resps = [];
    for (let i = 0; i < k; i++) {
      let t = performance.now();
      new Request(BASE + `/f${i % FOLDERS}/p${i}`, { method: "GET", headers: { Accept: "application/json", Authorization: AUTH } });
      reqs.push(performance.now() - t);
      t = performance.now();
      await new Response(body, init).arrayBuffer();
      resps.push(performance.now() - t);
    }
    return { request: median(reqs), response: median(resps), bytes: body.length };
  },
  // Bytes of the snapshot per key family (`o:`, `x:e:`, ...): it is `[u32 LE len][key][u32 LE
  // len][value]...` (host-wasm/src/idb.rs, encode_snapshot), in chunks.
  async composition(name) {
    const db = await new Promise((res, rej) => {
      const r = indexedDB.open(name);
      r.onsuccess = () => res(r.result);
      r.onerror = () => rej(r.error);
    });
    const store = db.transaction("snapshot").objectStore("snapshot");
    const get = (k) => new Promise((res, rej) => { const r = store.get(k); r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
    const n = await get("chunks");
    const parts = [];
    for (let i = 0; i < n; i++) parts.push(await get(`chunk:${i}`));
    db.close();
    const all = new Uint8Array(parts.reduce((s, c) => s + c.byteLength, 0));
    let o = 0;
    for (const c of parts) { all.set(c, o); o += c.byteLength; }
    const dv = new DataView(all.buffer);
    const fam = {};
    let pairs = 0;
    for (let i = 0; i < all.length; ) {
      const kl = dv.getUint32(i, true);
      const key = all.subarray(i + 4, i + 4 + kl);
      i += 4 + kl;
      const vl = dv.getUint32(i, true);
      i += 4 + vl;
      let cut = key.indexOf(58); // ':'
      if ((key[0] === 120 || key[0] === 121 || key[0] === 115) && cut === 1) { const c2 = key.indexOf(58, 2); if (c2 > 0 && c2 < 5) cut = c2; }
      const f = new TextDecoder().decode(key.subarray(0, cut < 0 ? key.length : cut + 1));
      const e = (fam[f] ||= { count: 0, keyBytes: 0, valueBytes: 0 });
      e.count++; e.keyBytes += kl + 4; e.valueBytes += vl + 4;
      pairs++;
    }
    return { total: all.length, pairs, fam };
  },
  // What compressing the snapshot would change (no wasm): compress each chunk with the
  // browser's own CompressionStream, store the results in a scratch database, then time reading
  // them back and decompressing with DecompressionStream (median of 3).
  async compressTest(name, format = "deflate-raw") {
    const idb = (n, upgrade) =>
      new Promise((res, rej) => {
        const r = upgrade ? indexedDB.open(n, 1) : indexedDB.open(n);
        r.onupgradeneeded = () => upgrade && upgrade(r.result);
        r.onsuccess = () => res(r.result);
        r.onerror = () => rej(r.error);
      });
    const done = (r) => new Promise((res, rej) => { r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
    const txDone = (tx) => new Promise((res, rej) => { tx.oncomplete = res; tx.onerror = tx.onabort = () => rej(tx.error); });
    const pipe = async (u8, stream) => new Uint8Array(await new Response(new Blob([u8]).stream().pipeThrough(stream)).arrayBuffer());
    const src = await idb(name);
    const chunks = (await done(src.transaction("snapshot").objectStore("snapshot").getAll())).filter((v) => v && v.byteLength);
    src.close();
    const raw = chunks.reduce((s, c) => s + c.byteLength, 0);
    let t = performance.now();
    const packed = [];
    for (const c of chunks) packed.push(await pipe(c, new CompressionStream(format)));
    const compressMs = performance.now() - t;
    const zbytes = packed.reduce((s, c) => s + c.byteLength, 0);
    const scratch = `${name}-z`;
    await new Promise((res) => { const r = indexedDB.deleteDatabase(scratch); r.onsuccess = r.onerror = res; });
    let db = await idb(scratch, (d) => d.createObjectStore("snapshot"));
    t = performance.now();
    const tx = db.transaction("snapshot", "readwrite");
    packed.forEach((c, i) => tx.objectStore("snapshot").put(c, `chunk:${i}`));
    await txDone(tx);
    const writeMs = performance.now() - t;
    db.close();
    const reads = [], inflates = [];
    for (let k = 0; k < 3; k++) {
      t = performance.now();
      db = await idb(scratch);
      const got = await done(db.transaction("snapshot").objectStore("snapshot").getAll());
      db.close();
      reads.push(performance.now() - t);
      t = performance.now();
      let out = 0;
      for (const c of got) out += (await pipe(c, new DecompressionStream(format))).byteLength;
      inflates.push(performance.now() - t);
      if (out !== raw) throw new Error(`decompressed ${out} bytes, expected ${raw}`);
    }
    await new Promise((res) => { const r = indexedDB.deleteDatabase(scratch); r.onsuccess = r.onerror = res; });
    return { format, raw, zbytes, compressMs, writeMs, readMs: median(reads), inflateMs: median(inflates) };
  },
};
document.body.dataset.ready = "1";
document.getElementById("out").textContent = `ready (${pkg})`;
