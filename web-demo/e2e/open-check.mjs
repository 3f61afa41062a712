// What an open reads after N writes, per package: the database's version, the snapshot's version,
// the number of log entries, and the open's phases (medians of 5 opens). Compares builds on one
// point: pass the package directories, e.g. node open-check.mjs 1000 pkg-before pkg-after
import { launchChromium, serveDemo } from "./serve.mjs";

const N = Number(process.argv[2] || 1000);
const PKGS = process.argv.slice(3).length ? process.argv.slice(3) : ["pkg"];
const { server, port } = await serveDemo({
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Embedder-Policy": "require-corp",
});
const browser = await launchChromium();
try {
  for (const pkg of PKGS) {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`http://127.0.0.1:${port}/sync-test.html`);
    const r = await page.evaluate(async ([pkg, n]) => {
      const mod = await import(`/${pkg}/host_wasm.js`);
      await mod.default();
      const BASE = "http://localhost:8080";
      const name = `open-check-${Date.now()}`;
      let site = await mod.openSite(name, { baseUrl: BASE, adminPassword: "secret-password" });
      const post = (path, body) => site.fetch(new Request(BASE + path, { method: "POST", headers: { Accept: "application/json", "Content-Type": "application/json", Authorization: "Basic " + btoa("admin:secret-password") }, body: JSON.stringify(body) }));
      for (let f = 0; f < 10; f++) await post("/", { "@type": "Folder", id: `f${f}`, title: `Folder ${f}` });
      for (let i = 10; i < n; i++) await post(`/f${i % 10}`, { "@type": "Page", id: `p${i}`, title: `Page ${i}`, description: "seed" });
      site.close();
      site.free();
      const idb = (req) => new Promise((res, rej) => { req.onsuccess = () => res(req.result); req.onerror = () => rej(req.error); });
      const db = await idb(indexedDB.open(name));
      const tx = db.transaction(["meta", "log", "snapshot", "kv"]);
      const [version, snap, logs, kv] = await Promise.all([
        idb(tx.objectStore("meta").get("version")), idb(tx.objectStore("snapshot").get("version")),
        idb(tx.objectStore("log").count()), idb(tx.objectStore("kv").count()),
      ]);
      db.close();
      const opens = [];
      const phases = {};
      for (let i = 0; i < 5; i++) {
        const t = performance.now();
        site = await mod.openSite(name, { baseUrl: BASE });
        opens.push(performance.now() - t);
        for (const [k, v] of Object.entries(site.openTimings())) (phases[k] ||= []).push(v);
        site.close();
        site.free();
      }
      await mod.deleteSite(name);
      const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
      return { version, snap, logs, kv, open: median(opens), phases: Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, median(v)])) };
    }, [pkg, N]);
    console.log(`${pkg}: version ${r.version}, snapshot at ${r.snap}, ${r.logs} log entries, ${r.kv} kv pairs; open ${r.open.toFixed(1)} ms (median of 5): ` +
      Object.entries(r.phases).filter(([, v]) => v >= 0.05).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(", "));
  }
} finally {
  await browser.close();
  server.close();
}
