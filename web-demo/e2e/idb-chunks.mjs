// Does cutting the snapshot into more, smaller records slow the read an open does? (bench/RESULTS.md,
// "The browser host's write", step 3.) Plain IndexedDB in a persistent Chromium profile, no wasm:
// for each record size, TOTAL bytes of snapshot-like data (JSON text, numbers varying) are written
// as TOTAL / size records of one object store, the database is closed, and reading every record
// back in one transaction (`getAll`, as an open would) is timed: medians of 3, each on a freshly
// opened connection. Usage: node web-demo/e2e/idb-chunks.mjs [TOTAL_MB] [sizes in KiB, comma-separated]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { serveDemo } from "./serve.mjs";

const TOTAL = Number(process.argv[2] || 64) << 20;
const SIZES = (process.argv[3] || "32768,4096,1024,256,32").split(",").map((k) => Number(k) << 10);
const { server, port } = await serveDemo({
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Embedder-Policy": "require-corp",
});
const dir = mkdtempSync(join(tmpdir(), "idb-chunks-"));
const ctx = await chromium.launchPersistentContext(dir, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"],
});
try {
  const page = await ctx.newPage();
  await page.goto(`http://127.0.0.1:${port}/sync-test.html`);
  for (const size of SIZES) {
    const r = await page.evaluate(async ([total, size]) => {
      const idb = (req) => new Promise((res, rej) => { req.onsuccess = () => res(req.result); req.onerror = () => rej(req.error); });
      const done = (tx) => new Promise((res, rej) => { tx.oncomplete = res; tx.onabort = () => rej(tx.error); });
      const name = `chunks-${size}`;
      const open = () => {
        const req = indexedDB.open(name, 1);
        req.onupgradeneeded = () => req.result.createObjectStore("snapshot");
        return idb(req);
      };
      // snapshot-like bytes: records of JSON text with varying numbers (compressible, like the real one)
      const text = new TextEncoder();
      const chunk = (i) => {
        const out = new Uint8Array(size);
        let at = 0;
        for (let j = 0; at < size; j++) {
          const b = text.encode(`{"@type":"Page","id":"p${i * 1000 + j}","title":"Page ${(i * 7919 + j * 104729) % 1000003}","review_state":"private","modified":"2026-11-28T13:${j % 60}:00Z"}`);
          out.set(b.subarray(0, size - at), at);
          at += b.length;
        }
        return out;
      };
      let db = await open();
      const n = Math.ceil(total / size);
      const t0 = performance.now();
      for (let i = 0; i < n; i += 64) {
        const tx = db.transaction("snapshot", "readwrite");
        for (let k = i; k < Math.min(n, i + 64); k++) tx.objectStore("snapshot").put(chunk(k), `chunk:${k}`);
        await done(tx);
      }
      const writeMs = performance.now() - t0;
      db.close();
      const reads = [];
      for (let round = 0; round < 3; round++) {
        const t = performance.now();
        db = await open();
        const all = await idb(db.transaction("snapshot").objectStore("snapshot").getAll());
        reads.push(performance.now() - t);
        if (all.length !== n) throw new Error(`read ${all.length} of ${n} records`);
        db.close();
      }
      await idb(indexedDB.deleteDatabase(name));
      reads.sort((a, b) => a - b);
      return { n, writeMs, readMs: reads[1], reads };
    }, [TOTAL, size]);
    console.log(`${String(size >> 10).padStart(6)} KiB records: ${String(r.n).padStart(5)} of them; written in ${r.writeMs.toFixed(0)} ms; read back ${r.readMs.toFixed(1)} ms (median of 3: ${r.reads.map((x) => x.toFixed(0)).join(", ")})`);
  }
} finally {
  await ctx.close();
  server.close();
  rmSync(dir, { recursive: true, force: true });
}
