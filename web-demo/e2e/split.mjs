// The engine's two modules through their loader (web-demo/pkg/engine.js, built by
// scripts/web-demo.sh), in headless Chromium: a site opened with the first module answers the
// usual requests itself; the first request to an endpoint it leaves out loads the full module,
// which opens the same IndexedDB database and answers it, and every later request. Each answer
// must equal the answer of a site opened with the full module from the start (deterministic
// sites: same clock and ids), no answer may be the first module's 501, and what the first module
// wrote must be there after the move. Exits 1 on any difference.
//
//   node web-demo/e2e/split.mjs
import { launchChromium, serveDemo } from "./serve.mjs";

const { server, port } = await serveDemo();
const browser = await launchChromium();

// Requests in order; `together` runs its requests at the same time (the upgrade must wait for
// the first module's requests in flight and queue the later ones).
// The status each must have (also on the full module alone), so that the run compares real work.
const STEPS = [
  ["POST", "/", { "@type": "Page", id: "doc", title: "Made by the first module" }, 201],
  ["GET", "/doc", null, 200],
  ["PATCH", "/doc", { title: "Edited by the first module" }, 204],
  ["GET", "/@search?portal_type=Page", null, 200],
  {
    together: [
      ["GET", "/doc", null, 200],
      ["GET", "/doc/@aliases", null, 200],
      ["POST", "/", { "@type": "Page", id: "doc2", title: "Second" }, 201],
      ["GET", "/doc2", null, 200],
    ],
  },
  ["POST", "/doc/@aliases", { items: [{ path: "/old-doc" }] }, 201],
  ["GET", "/doc/@aliases", null, 200],
  ["GET", "/old-doc", null, 301],
  ["GET", "/doc/@history", null, 200],
  ["GET", "/doc", null, 200],
  ["GET", "/@openapi", null, 200],
  ["GET", "/@controlpanels", null, 200],
  ["GET", "/doc/@sharing", null, 200],
  ["GET", "/doc/@nothing-like-this", null, 404],
  ["DELETE", "/doc2", null, 204],
  ["GET", "/@search?portal_type=Page", null, 200],
];

let failed = 0;
try {
  const page = await browser.newPage();
  page.on("pageerror", (e) => console.log("pageerror:", e.message));
  page.on("console", (m) => m.type() === "error" && console.log(`console: ${m.text()}`));
  await page.goto(`http://127.0.0.1:${port}/sync-test.html`);
  const result = await page.evaluate(async (steps) => {
    const BASE = "http://localhost:8080";
    const opts = { baseUrl: BASE, adminPassword: "secret", deterministic: true };
    const headers = (body) => ({
      Accept: "application/json",
      Authorization: "Basic " + btoa("admin:secret"),
      ...(body ? { "Content-Type": "application/json" } : {}),
    });
    const run = async (site, [method, path, body, expected]) => {
      const resp = await site.fetch(
        new Request(BASE + path, { method, headers: headers(body), body: body ? JSON.stringify(body) : undefined, redirect: "manual" }),
      );
      return {
        req: `${method} ${path}`,
        expected,
        status: resp.status,
        notInBuild: resp.headers.get("Engine-Not-In-Build"),
        body: await resp.text(),
        build: site.build,
      };
    };
    const sequence = async (site) => {
      const out = [];
      for (const step of steps) {
        if (step.together) out.push(...(await Promise.all(step.together.map((s) => run(site, s)))));
        else out.push(await run(site, step));
      }
      return out;
    };
    const loader = await import("/pkg/engine.js");
    await loader.default();
    const t0 = performance.now();
    const split = await loader.openSite(`split-${Date.now()}`, opts);
    const startedAs = split.build;
    const got = await sequence(split);
    const ms = performance.now() - t0;
    split.close();
    // the same on a site of the full module alone
    const full = await import("/pkg/host_wasm_full.js");
    await full.default();
    const alone = await full.openSite(`full-${Date.now()}`, opts);
    const want = await sequence(alone);
    alone.close();
    // storage "memory": opened with the full module at once
    const mem = await loader.openSite(`mem-${Date.now()}`, { ...opts, storage: "memory" });
    return { startedAs, got, want, ms, memoryBuild: mem.build };
  }, STEPS);
  const check = (ok, what) => {
    if (!ok) failed++;
    console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  };
  check(result.startedAs === "lean", `the site opens with the first module (${result.startedAs})`);
  let moved = null;
  result.got.forEach((g, i) => {
    const w = result.want[i];
    if (moved === null && g.build === "full") moved = g.req;
    check(g.notInBuild === null && g.status !== 501, `${g.req}: no "not in this build" answer reaches the caller`);
    check(g.status === g.expected, `${g.req}: ${g.status} (${g.build} module), expected ${g.expected}`);
    check(g.status === w.status && g.body === w.body, `${g.req}: the same answer as the full module alone (${w.status})`);
    if (g.status !== w.status || g.body !== w.body) console.log(`  got  ${g.body.slice(0, 300)}\n  want ${w.body.slice(0, 300)}`);
  });
  check(moved !== null, `the site moved to the full module at: ${moved}`);
  check(result.got.at(-1).build === "full", "and stayed there");
  check(result.memoryBuild === "full", `a site in memory opens with the full module (${result.memoryBuild})`);
  console.log(`${result.got.length} requests through the loader in ${result.ms.toFixed(0)} ms (the full module's loading included)`);
} finally {
  await browser.close();
  server.close();
}
console.log(failed ? `${failed} check(s) failed` : "all checks passed");
process.exit(failed ? 1 : 0);
