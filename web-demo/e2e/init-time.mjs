// The time `init` takes for each of the engine's two modules (web-demo/pkg, scripts/web-demo.sh):
// fetch, compile and instantiate, each in a fresh page (no code cache shared), alternating, N
// times each (default 5); prints each time and the medians. No assertions.
//
//   node web-demo/e2e/init-time.mjs [N]
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { dirname, extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const N = Number(process.argv[2] || 5);
const demo = join(dirname(fileURLToPath(import.meta.url)), "..");
const types = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };
const server = createServer(async (req, res) => {
  const path = normalize(decodeURIComponent(new URL(req.url, "http://localhost").pathname));
  try {
    const body = await readFile(join(demo, path));
    res.writeHead(200, { "Content-Type": types[extname(path)] || "application/octet-stream", "Cache-Control": "no-store" });
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
const times = { "host_wasm.js": [], "host_wasm_full.js": [] };
try {
  for (let i = 0; i < N; i++) {
    for (const glue of Object.keys(times)) {
      const ctx = await browser.newContext();
      const page = await ctx.newPage();
      await page.goto(`http://127.0.0.1:${port}/sync-test.html`);
      const ms = await page.evaluate(async (glue) => {
        const m = await import(`/pkg/${glue}`);
        const t = performance.now();
        await m.default();
        return performance.now() - t;
      }, glue);
      times[glue].push(ms);
      await ctx.close();
    }
  }
} finally {
  await browser.close();
  server.close();
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
for (const [glue, xs] of Object.entries(times)) {
  console.log(`${glue}: init ${xs.map((x) => x.toFixed(0)).join(", ")} ms; median ${median(xs).toFixed(1)} ms`);
}
