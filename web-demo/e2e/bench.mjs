// Prints the host-wasm figures: release wasm size (raw, gzip) and, from bench.html in headless
// Chromium, cold open times with 1,000, 10,000 and 100,000 objects (BENCH_SIZES=1000,10000 for fewer) in IndexedDB and GET/POST medians.
// Run via ./scripts/bench.sh (which builds web-demo/pkg first). No assertions on timings.
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { dirname, extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { chromium } from "playwright-core";

const demo = join(dirname(fileURLToPath(import.meta.url)), "..");
// the package holds two builds (scripts/web-demo.sh): the first module, loaded at init, and the
// full one, loaded by pkg/engine.js on the first request the first leaves out
for (const [what, file] of [
  ["first module", "host_wasm_bg.wasm"],
  ["full module", "host_wasm_full_bg.wasm"],
  ["JS glue", "host_wasm.js"],
  ["JS glue (full)", "host_wasm_full.js"],
  ["loader", "engine.js"],
]) {
  const bytes = readFileSync(join(demo, "pkg", file));
  const opt = file.endsWith(".wasm") ? " (after wasm-opt -Os)" : "";
  console.log(`${what} ${file}${opt}: ${bytes.length} bytes raw, ${gzipSync(bytes, { level: 9 }).length} bytes gzip`);
}

// A static server for web-demo/ that makes the page cross-origin isolated (COOP + COEP): only then
// does Chromium give performance.now() 5 us resolution instead of 100 us (with jitter), which is
// coarser than the GET being measured.
const types = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm", ".css": "text/css" };
const server = createServer(async (req, res) => {
  const path = normalize(decodeURIComponent(new URL(req.url, "http://localhost").pathname));
  const file = join(demo, path.endsWith("/") ? path + "index.html" : path);
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
const port = await new Promise((res) => server.listen(0, "127.0.0.1", () => res(server.address().port)));
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"],
});
let code = 0;
try {
  const page = await browser.newPage();
  page.on("pageerror", (e) => console.log("pageerror:", e.message));
  const query = new URLSearchParams();
  if (process.env.BENCH_SIZES) query.set("sizes", process.env.BENCH_SIZES);
  if (process.env.BENCH_BULK) query.set("bulk", process.env.BENCH_BULK);
  await page.goto(`http://127.0.0.1:${port}/bench.html${query.size ? `?${query}` : ""}`);
  // progress lines as they come (the page also logs them to the console), errors of the engine
  page.on("console", (m) => console.log(m.type() === "error" ? `console: ${m.text()}` : `  | ${m.text()}`));
  if (!(await page.evaluate(() => self.crossOriginIsolated))) console.log("warning: page not cross-origin isolated: timer resolution 100 us");
  await page.waitForSelector("body[data-done]", { timeout: 60 * 60 * 1000 });
  console.log(await page.textContent("#out"));
  if ((await page.getAttribute("body", "data-done")) !== "1") code = 1;
} finally {
  await browser.close();
  server.close();
}
process.exit(code);
