// Volto offline's figures on one seeded site (scripts/volto-offline-figures.sh runs it per size):
// printed, never asserted. Through Volto's login form in headless Chromium: the time to open the
// editor's replica at login (a new one: the full download), measured by the Service Worker
// (`figures.openMs`) and by the page (the click on "Log in" until the toolbar's indicator says
// downloaded); the time to open it again when the worker restarts (stopped through the DevTools
// protocol, as a browser restart would); then, offline, an offline GET of a page, Volto's
// contents-view listing of a folder and a PATCH of a page, timed in the page with
// `performance.now()` around `fetch` (what Volto's API calls see).
//
//   ADMIN_PASSWORD=... node tests/volto/offline-figures.mjs <volto URL> <objects>
import { launchChromium } from "./steps.mjs";

const [volto, objects] = process.argv.slice(2);
const { ADMIN_PASSWORD } = process.env;
if (!volto || !objects || !ADMIN_PASSWORD) {
  console.error("usage: ADMIN_PASSWORD=... node offline-figures.mjs <volto URL> <objects>");
  process.exit(2);
}
const label = `volto-offline-figures: ${Number(objects).toLocaleString("en")} objects`;
const say = (text) => console.log(`${label}: ${text}`);

// What the Service Worker reports for the page's user (`figures`, `downloaded`, ...).
function workerStatus(page) {
  return page.evaluate(() => new Promise((resolve) => {
    const sw = navigator.serviceWorker && navigator.serviceWorker.controller;
    const token = (document.cookie.match(/(?:^|; )auth_token=([^;]+)/) || [])[1];
    if (!sw) return resolve(null);
    const ch = new MessageChannel();
    ch.port1.onmessage = (e) => resolve(e.data && e.data.value);
    sw.postMessage({ type: "status", token, online: navigator.onLine }, [ch.port2]);
    setTimeout(() => resolve(null), 10000);
  }));
}

async function until(check, what, timeout) {
  const end = Date.now() + timeout;
  for (;;) {
    const v = await check().catch(() => null);
    if (v) return v;
    if (Date.now() > end) throw new Error(`waited ${timeout} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

// `n` timed requests made in the page through the worker; the median and the largest (ms).
async function timed(page, n, method, path, body) {
  return page.evaluate(async ({ n, method, path, body }) => {
    const token = (document.cookie.match(/(?:^|; )auth_token=([^;]+)/) || [])[1];
    const headers = { Accept: "application/json", Authorization: `Bearer ${token}` };
    if (body) Object.assign(headers, { "Content-Type": "application/json", Prefer: "return=representation" });
    const ts = [];
    for (let i = 0; i < n; i += 1) {
      const t0 = performance.now();
      const r = await fetch(path, { method, headers, body: body ? JSON.stringify({ ...body, description: `${body.description} ${i}` }) : undefined });
      await r.text();
      if (!r.ok) throw new Error(`${method} ${path} answered ${r.status}`);
      ts.push(performance.now() - t0);
    }
    ts.sort((a, b) => a - b);
    return { median: ts[Math.floor(ts.length / 2)], max: ts[ts.length - 1] };
  }, { n, method, path, body });
}

const browser = await launchChromium();
let code = 0;
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(volto + "/login");
  await page.waitForFunction(() => !!navigator.serviceWorker && !!navigator.serviceWorker.controller, null, { timeout: 120000 });
  await page.fill("#login", "admin");
  await page.fill("#password", ADMIN_PASSWORD);
  const t0 = Date.now();
  await page.click("#login-form-submit");
  await page.locator("body.has-toolbar").waitFor({ timeout: 60000 });
  // the download of a large site takes minutes on a debug server: up to 30
  const st = await until(async () => {
    const s = await workerStatus(page);
    return s && s.replica && s.downloaded && s.figures && s.figures.openMs !== undefined ? s : null;
  }, "the replica's download", 30 * 60 * 1000);
  say(`opening a new replica at login (its full download): ${st.figures.openMs} ms in the worker, ${Date.now() - t0} ms from the click on "Log in"`);

  // the worker restarted (as after a browser restart): the replica opens again from IndexedDB
  const cdp = await context.newCDPSession(page);
  await cdp.send("ServiceWorker.enable");
  await cdp.send("ServiceWorker.stopAllWorkers");
  const t1 = Date.now();
  const again = await until(async () => {
    const s = await workerStatus(page);
    return s && s.replica && s.figures && s.figures.openMs !== undefined ? s : null;
  }, "the replica to open again", 10 * 60 * 1000);
  say(`opening the existing replica again (the worker restarted; its round included): ${again.figures.openMs} ms in the worker, ${Date.now() - t1} ms until the page's status answered`);

  await context.setOffline(true);
  await until(async () => {
    const s = await workerStatus(page);
    return s && s.online === false;
  }, "the worker to say offline", 30000);
  const get = await timed(page, 20, "GET", "/++api++/f0/p0");
  say(`offline GET of a page through the worker: median ${get.median.toFixed(1)} ms (max ${get.max.toFixed(1)}) of 20`);
  const listing = await timed(page, 10, "GET",
    "/++api++/f0/@search?path.depth=1&sort_on=getObjPositionInParent&sort_order=ascending&metadata_fields=_all&show_inactive=true&b_size=50&b_start=0");
  say(`offline contents-view listing of a folder (50 of ${Math.floor((Number(objects) - 10) / 10)} items) through the worker: median ${listing.median.toFixed(1)} ms (max ${listing.max.toFixed(1)}) of 10`);
  const patch = await timed(page, 5, "PATCH", "/++api++/f0/p0", { description: "Edited offline" });
  say(`offline PATCH of a page through the worker: median ${patch.median.toFixed(1)} ms (max ${patch.max.toFixed(1)}) of 5`);
} catch (e) {
  console.log(`${label}: FAIL ${e.message}`);
  code = 1;
} finally {
  await browser.close();
}
process.exit(code);
