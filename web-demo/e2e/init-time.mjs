// The time `init` takes for each of the engine's two modules (web-demo/pkg, scripts/web-demo.sh):
// fetch, compile and instantiate, each in a fresh page (no code cache shared), alternating, N
// times each (default 5); prints each time and the medians. No assertions.
//
//   node web-demo/e2e/init-time.mjs [N]
import { launchChromium, serveDemo } from "./serve.mjs";

const N = Number(process.argv[2] || 5);
const { server, port } = await serveDemo({ "Cache-Control": "no-store" });
const browser = await launchChromium();
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
