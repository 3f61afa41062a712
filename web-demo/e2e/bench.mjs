// Prints the host-wasm figures: release wasm size (raw, gzip) and, from bench.html in headless
// Chromium, cold open times with 1,000 and 10,000 objects in IndexedDB and GET/POST medians.
// Run via ./scripts/bench.sh (which builds web-demo/pkg first). No assertions on timings.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { chromium } from "playwright-core";

const demo = join(dirname(fileURLToPath(import.meta.url)), "..");
const wasm = readFileSync(join(demo, "pkg", "host_wasm_bg.wasm"));
const glue = readFileSync(join(demo, "pkg", "host_wasm.js"));
console.log(`release wasm (after wasm-opt -Oz): ${wasm.length} bytes raw, ${gzipSync(wasm, { level: 9 }).length} bytes gzip`);
console.log(`JS glue host_wasm.js: ${glue.length} bytes raw, ${gzipSync(glue, { level: 9 }).length} bytes gzip`);

const port = await new Promise((res) => {
  const s = createServer();
  s.listen(0, "127.0.0.1", () => {
    const { port } = s.address();
    s.close(() => res(port));
  });
});
const server = spawn("python3", ["-m", "http.server", String(port), "--bind", "127.0.0.1", "--directory", demo], { stdio: "ignore" });
await new Promise((r) => setTimeout(r, 700));
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"],
});
let code = 0;
try {
  const page = await browser.newPage();
  page.on("pageerror", (e) => console.log("pageerror:", e.message));
  await page.goto(`http://127.0.0.1:${port}/bench.html`);
  await page.waitForSelector("body[data-done]", { timeout: 20 * 60 * 1000 });
  console.log(await page.textContent("#out"));
  if ((await page.getAttribute("body", "data-done")) !== "1") code = 1;
} finally {
  await browser.close();
  server.kill();
}
process.exit(code);
