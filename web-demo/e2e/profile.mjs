// CPU profiles of host-wasm in headless Chromium, through the DevTools protocol (playwright's
// CDP session): one profile each of a cold open, a run of GETs and a run of POSTs on a site of
// N objects, printed as the top self-time functions (and written as .cpuprofile files that
// Chrome DevTools opens). Build the profiled package with the wasm name section kept:
//   scripts/web-demo.sh --build-only && wasm-opt -Os -g (see bench/RESULTS.md, "where the time goes")
// Usage: node profile.mjs [--pkg pkg-prof] [--n 100000] [--site prof-100k] [--out DIR] [--user-data DIR]
// The site is seeded once (in bulks) into a persistent browser profile and reused by later runs.
import { mkdirSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { dirname, extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const PKG = arg("pkg", "pkg-prof");
const N = Number(arg("n", "100000"));
const SITE = arg("site", `prof-${N}`);
const OUT = arg("out", "/tmp/wasm-profiles");
const USER_DATA = arg("user-data", "/tmp/wasm-profile-chromium");
const TOP = Number(arg("top", "25"));
const STEPS = arg("steps", "open,composition,compress,get,post").split(",");
mkdirSync(OUT, { recursive: true });

const demo = join(dirname(fileURLToPath(import.meta.url)), "..");
const types = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };
const server = createServer(async (req, res) => {
  const path = normalize(decodeURIComponent(new URL(req.url, "http://localhost").pathname));
  const file = join(demo, path);
  try {
    const body = await readFile(file);
    res.writeHead(200, {
      "Content-Type": types[extname(file)] || "application/octet-stream",
      "Cross-Origin-Opener-Policy": "same-origin",
      "Cross-Origin-Embedder-Policy": "require-corp",
    });
    res.end(body);
  } catch {
    res.writeHead(404);
    res.end();
  }
});
// a fixed port: IndexedDB belongs to the origin, and the seeded site must be found again
const port = Number(arg("port", "8791"));
await new Promise((res) => server.listen(port, "127.0.0.1", res));
const ctx = await chromium.launchPersistentContext(USER_DATA, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"],
});

// Self time per function (name + script), from a CDP profile: each sample's time delta is
// charged to the node it hit.
function summarize(profile, label) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = (profile.timeDeltas[i + 1] ?? 0) / 1000; // ms until the next sample
    const n = byId.get(profile.samples[i]);
    const cf = n.callFrame;
    const where = cf.url.startsWith("wasm") ? "wasm" : cf.url ? cf.url.split("/").pop() : "";
    const key = `${cf.functionName || "(anonymous)"}${where ? ` [${where}]` : ""}`;
    self.set(key, (self.get(key) || 0) + dt);
    total += dt;
  }
  const idle = self.get("(idle)") || 0;
  const busy = total - idle;
  const wasm = [...self].filter(([k]) => k.endsWith(".wasm]")).reduce((s, [, v]) => s + v, 0);
  console.log(`\n== ${label}: ${total.toFixed(1)} ms sampled, idle ${idle.toFixed(1)} ms, busy ${busy.toFixed(1)} ms (wasm ${wasm.toFixed(1)} ms)`);
  console.log(`   top ${TOP} by self time (share of busy time):`);
  [...self]
    .filter(([k]) => k !== "(idle)")
    .sort((a, b) => b[1] - a[1])
    .slice(0, TOP)
    .forEach(([k, v]) => console.log(`   ${v.toFixed(1).padStart(8)} ms ${((100 * v) / busy).toFixed(1).padStart(5)}%  ${k}`));
}

const page = await ctx.newPage();
page.on("pageerror", (e) => console.log("pageerror:", e.message));
page.on("console", (m) => m.type() === "error" && console.log(`console: ${m.text()}`));
await page.goto(`http://127.0.0.1:${port}/profile.html?pkg=${PKG}`);
await page.waitForSelector("body[data-ready='1']", { timeout: 60000 });
const cdp = await page.context().newCDPSession(page);
await cdp.send("Profiler.enable");
await cdp.send("Profiler.setSamplingInterval", { interval: 100 }); // us
async function profiled(label, fn) {
  await cdp.send("Profiler.start");
  const r = await fn();
  const { profile } = await cdp.send("Profiler.stop");
  const file = join(OUT, `${label}.cpuprofile`);
  writeFileSync(file, JSON.stringify(profile));
  summarize(profile, `${label} (${file})`);
  return r;
}

// seed once
const have = Number(await page.evaluate((s) => localStorage.getItem(`seeded:${s}`) || 0, SITE));
await page.evaluate((s) => prof.open(s), SITE);
if (have < N) {
  const t = Date.now();
  console.log(`seeding ${SITE} from ${have} to ${N} objects...`);
  await page.evaluate(([a, b]) => prof.seed(a, b), [have, N]);
  await page.evaluate(([s, n]) => localStorage.setItem(`seeded:${s}`, String(n)), [SITE, N]);
  console.log(`seeded in ${((Date.now() - t) / 1000).toFixed(0)} s`);
}
await page.evaluate(() => prof.close());

if (STEPS.includes("open")) {
  const raw = [];
  for (let i = 0; i < 3; i++) raw.push(await page.evaluate((s) => prof.rawRead(s), SITE));
  console.log(`snapshot ${raw[0].bytes} bytes; plain IndexedDB read (no wasm): ${raw.map((r) => r.ms.toFixed(0)).join(", ")} ms`);
  const opens = [];
  for (let i = 0; i < 3; i++) {
    const o = await page.evaluate((s) => prof.open(s), SITE);
    opens.push(o.ms);
    await page.evaluate(() => prof.close());
    if (i === 2) console.log(`open phases: ${Object.entries(o.phases).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(", ")}`);
  }
  console.log(`cold open, unprofiled: ${opens.map((x) => x.toFixed(0)).join(", ")} ms`);
  const o = await profiled("open", () => page.evaluate((s) => prof.open(s), SITE));
  console.log(`profiled open: ${o.ms.toFixed(0)} ms; phases: ${Object.entries(o.phases).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(", ")}`);
} else {
  await page.evaluate((s) => prof.open(s), SITE);
}
if (STEPS.includes("composition")) {
  const c = await page.evaluate((s) => prof.composition(s), SITE);
  console.log(`\nsnapshot composition: ${c.total} bytes, ${c.pairs} pairs (${(c.total / N).toFixed(0)} bytes per object); by key family:`);
  Object.entries(c.fam).sort((a, b) => b[1].keyBytes + b[1].valueBytes - a[1].keyBytes - a[1].valueBytes).slice(0, 20)
    .forEach(([f, e]) => console.log(`   ${f.padEnd(8)} ${String(e.count).padStart(8)} pairs  keys ${String(e.keyBytes).padStart(10)} B  values ${String(e.valueBytes).padStart(10)} B  ${((100 * (e.keyBytes + e.valueBytes)) / c.total).toFixed(1)}%`));
}
if (STEPS.includes("compress")) {
  for (const format of ["deflate-raw"]) {
    const r = await page.evaluate(([s, f]) => prof.compressTest(s, f), [SITE, format]);
    console.log(`\ncompressed snapshot (${r.format}, the browser's CompressionStream): ${r.raw} -> ${r.zbytes} bytes (${(r.raw / r.zbytes).toFixed(1)}x); ` +
      `compress ${r.compressMs.toFixed(0)} ms, write ${r.writeMs.toFixed(0)} ms; read back ${r.readMs.toFixed(0)} ms + inflate ${r.inflateMs.toFixed(0)} ms (medians of 3)`);
  }
}
if (STEPS.includes("caller")) {
  const c = await page.evaluate(() => prof.callerCost(2000));
  console.log(`\nin the page alone, no wasm (medians of 2000): new Request(...) ${c.request.toFixed(4)} ms; new Response(${c.bytes} bytes).arrayBuffer() ${c.response.toFixed(4)} ms`);
}
if (STEPS.includes("get")) {
  await page.evaluate((n) => prof.gets(n, 100, 5000), N); // warm-up (argon2 once, caches)
  const med = await page.evaluate((n) => prof.gets(n, 300), N);
  console.log(`\nGET median, unprofiled: ${med.toFixed(3)} ms`);
  const pm = await profiled("get", () => page.evaluate((n) => prof.gets(n, 2000, 300), N));
  console.log(`GET median while profiled: ${pm.toFixed(3)} ms (2000 GETs)`);
}
if (STEPS.includes("post")) {
  const tag = Date.now();
  const med = await page.evaluate((t) => prof.posts(30, `u${t}`), tag);
  console.log(`\nPOST median, unprofiled: ${med.toFixed(2)} ms`);
  const pm = await profiled("post", () => page.evaluate((t) => prof.posts(200, `p${t}`), tag));
  console.log(`POST median while profiled: ${pm.toFixed(2)} ms (200 POSTs)`);
}
await page.evaluate(() => prof.close());
await ctx.close();
server.close();
