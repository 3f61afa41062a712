// End-to-end test of the web demo in headless Chromium (Debian's /usr/bin/chromium via playwright-core):
// create a page, edit its text, reload and find it again (IndexedDB), read it with a plain fetch()
// through the Service Worker, reload offline, show an API error. Saves artifacts/web-demo.png.
// Needs web-demo/pkg (./scripts/web-demo.sh --build-only). Run: node web-demo/e2e/e2e.mjs
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const demo = join(here, "..");
const artifacts = join(here, "..", "..", "artifacts");
mkdirSync(artifacts, { recursive: true });

const freePort = () =>
  new Promise((res) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });

const port = await freePort();
const server = spawn("python3", ["-m", "http.server", String(port), "--bind", "127.0.0.1", "--directory", demo], {
  stdio: "ignore",
});
const url = `http://127.0.0.1:${port}/`;
for (let i = 0; i < 50; i++) {
  try {
    await fetch(url);
    break;
  } catch {
    await new Promise((r) => setTimeout(r, 100));
  }
}

const step = (s) => console.log(`e2e: ${s}`);
let browser;
let failed = false;
try {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  const context = await browser.newContext({ viewport: { width: 1100, height: 700 } });
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("console", (m) => m.type() === "error" && console.log("console error:", m.text()));
  page.on("dialog", (d) => d.accept());
  const ready = () => page.waitForSelector("body[data-ready='1']", { timeout: 30000 });

  step(`open ${url}`);
  await page.goto(url);
  await ready();

  step("create a page");
  await page.click("#new-page");
  await page.fill("#new-title", "Offline hello");
  await page.click("#create");
  await page.waitForSelector("#editor h2:text-is('Offline hello')");
  await page.fill("#f-description", "Written without a server");
  await page.fill("#f-text", "This text lives in IndexedDB.");
  await page.click("#save");
  await page.waitForSelector("#saved:text-is('Saved.')");

  step("create a folder and a page inside it");
  await page.click(".tree .node[data-path='/']");
  await page.waitForSelector("#editor h2:text-is('My offline site')");
  await page.click("#new-folder");
  await page.fill("#new-title", "Notes");
  await page.click("#create");
  await page.waitForSelector("#editor h2:text-is('Notes')");
  await page.click("#new-page");
  await page.fill("#new-title", "Inside notes");
  await page.click("#create");
  await page.waitForSelector(".tree .node[data-path='/notes/inside-notes']");

  step("reload: the page is still there");
  await page.reload();
  await ready();
  await page.click(".tree .node[data-path='/offline-hello']");
  await page.waitForSelector("#editor h2:text-is('Offline hello')");
  const text = await page.inputValue("#f-text");
  const description = await page.inputValue("#f-description");
  if (text !== "This text lives in IndexedDB.") throw new Error(`text after reload: ${JSON.stringify(text)}`);
  if (description !== "Written without a server") throw new Error(`description after reload: ${JSON.stringify(description)}`);

  step("an unchanged client: plain fetch('/api/...') answered by the Service Worker");
  await page.waitForFunction(() => navigator.serviceWorker && navigator.serviceWorker.controller, null, { timeout: 30000 });
  const viaSw = await page.evaluate(async () => {
    const r = await fetch("/api/offline-hello", {
      headers: { Accept: "application/json", Authorization: "Basic " + btoa("admin:admin") },
    });
    return { status: r.status, body: await r.json() };
  });
  if (viaSw.status !== 200 || viaSw.body.title !== "Offline hello" || viaSw.body.blocks_layout.items.length !== 1) {
    throw new Error(`fetch through the Service Worker: ${JSON.stringify(viaSw).slice(0, 500)}`);
  }

  step("offline: reload with the network cut, the editor still works");
  await context.setOffline(true);
  await page.reload();
  await ready();
  await page.waitForSelector(".tree .node[data-path='/notes/inside-notes']");
  await context.setOffline(false);

  step("API errors are shown to the user");
  await page.click(".tree .node[data-path='/offline-hello']");
  await page.waitForSelector("#editor h2:text-is('Offline hello')");
  await page.fill("#f-title", "");
  await page.click("#save");
  await page.waitForSelector("#error:not([hidden])");
  const err = await page.textContent("#error");
  if (!/PATCH \/offline-hello failed \(4\d\d\)/.test(err)) throw new Error(`error banner: ${err}`);
  console.log(`e2e: error shown: ${err}`);
  await page.fill("#f-title", "Offline hello");
  await page.click("#save");
  await page.waitForSelector("#saved:text-is('Saved.')");

  await page.click(".tree .node[data-path='/offline-hello']");
  await page.waitForSelector("#editor h2:text-is('Offline hello')");
  const shot = join(artifacts, "web-demo.png");
  await page.screenshot({ path: shot, fullPage: true });
  step(`screenshot: ${shot}`);
  if (pageErrors.length) throw new Error(`uncaught page errors: ${pageErrors.join("; ")}`);
  console.log("e2e: PASS");
} catch (e) {
  failed = true;
  console.error("e2e: FAIL:", e.message);
  try {
    const pages = browser?.contexts().flatMap((c) => c.pages()) || [];
    if (pages[0]) await pages[0].screenshot({ path: join(artifacts, "web-demo-failure.png"), fullPage: true });
  } catch {}
} finally {
  await browser?.close();
  server.kill();
}
process.exit(failed ? 1 : 0);
