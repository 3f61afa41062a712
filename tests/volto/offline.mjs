// Volto offline (issue 37), through Volto's UI only: Volto built with the volto-offline add-on
// (scripts/volto.sh --offline) in front of host-server, driven by playwright-core in Debian's
// /usr/bin/chromium. An editor logs in online; the browser context goes offline AND the server is
// stopped; the editor browses, searches, opens the contents view, edits a page, adds a page and a
// folder, reloads the tab, publishes; the server comes back with a conflicting edit made meanwhile
// through its API; the browser comes back online: the server has every other change, the conflict
// shows in the add-on's view and is resolved there ("Keep mine"). A screenshot per step goes to
// $VOLTO_ARTIFACTS (default artifacts/volto-offline/). The first failing step fails the run.
//
//   node tests/volto/offline.mjs <volto URL> <backend URL>
// with ADMIN_PASSWORD (the backend's admin), SERVER_PID (the running server, stopped by the test)
// and SERVER_CMD (a JSON array: the command that starts it again on the same data and port).
// scripts/volto-offline-e2e.sh sets all of them.
import { spawn } from "node:child_process";
import { mkdirSync, openSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { launchChromium, runSteps, summary } from "./steps.mjs";

const [volto, backend] = process.argv.slice(2);
const { ADMIN_PASSWORD, SERVER_PID, SERVER_CMD } = process.env;
if (!volto || !backend || !ADMIN_PASSWORD || !SERVER_PID || !SERVER_CMD) {
  console.error("usage: ADMIN_PASSWORD=... SERVER_PID=... SERVER_CMD='[...]' node offline.mjs <volto URL> <backend URL>");
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const artifacts = process.env.VOLTO_ARTIFACTS || join(here, "..", "..", "artifacts", "volto-offline");
mkdirSync(artifacts, { recursive: true });
const admin = { login: "admin", password: ADMIN_PASSWORD };

// ---- the server: stopped and started again by the test ----------------------------------------

let serverPid = Number(SERVER_PID);
let restarted = null;

function stopServer() {
  process.kill(serverPid, "SIGTERM");
}

async function serverAnswers() {
  try {
    const r = await fetch(backend + "/", { headers: { Accept: "application/json" } });
    return r.status < 500;
  } catch {
    return false;
  }
}

async function startServer() {
  const [cmd, ...args] = JSON.parse(SERVER_CMD);
  const out = openSync(join(artifacts, "server-restarted.log"), "a");
  restarted = spawn(cmd, args, { stdio: ["ignore", out, out] });
  serverPid = restarted.pid;
  await waitFor(serverAnswers, "the restarted server to answer", 20000);
}

// ---- the REST API (fixtures and checks), Basic auth straight to the server ---------------------

async function api(method, path, body) {
  const headers = {
    Accept: "application/json",
    Authorization: "Basic " + Buffer.from(`${admin.login}:${admin.password}`).toString("base64"),
  };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(backend + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

const textBlocks = (text) => ({
  blocks: {
    "b-title": { "@type": "title" },
    "b-text": { "@type": "slate", plaintext: text, value: [{ type: "p", children: [{ text }] }] },
  },
  blocks_layout: { items: ["b-title", "b-text"] },
});

async function fixtures() {
  await api("PATCH", "/", { title: "Harbour Library" });
  // What Volto's add form gives a folder: a title block and a listing of its items.
  await api("POST", "/", {
    "@type": "Folder", id: "library", title: "Library", description: "Books and rules.",
    blocks: { "b-title": { "@type": "title" }, "b-list": { "@type": "listing", querystring: {} } },
    blocks_layout: { items: ["b-title", "b-list"] },
  });
  await api("POST", "/library/@workflow/publish", {});
  await api("POST", "/library", { "@type": "Page", id: "rules", title: "Library rules", ...textBlocks("Whisper, and return books on time.") });
  await api("POST", "/", { "@type": "Page", id: "opening-hours", title: "Opening hours", description: "When we are open.", ...textBlocks("Monday to Friday, nine to five.") });
  await api("POST", "/opening-hours/@workflow/publish", {});
}

// ---- helpers -----------------------------------------------------------------------------------

const settle = (page) => page.waitForLoadState("networkidle", { timeout: 30000 }).catch(() => {});

async function waitFor(check, what, timeout = 10000) {
  const end = Date.now() + timeout;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`waited ${timeout} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function see(locator, what, timeout = 15000) {
  await locator.first().waitFor({ state: "visible", timeout }).catch(() => {
    throw new Error(`not shown: ${what}`);
  });
}

async function heading(page, text, what) {
  await see(page.locator("h1.documentFirstHeading", { hasText: text }), what || `the heading '${text}'`);
}

// The toolbar indicator's state (data-* attributes), or null when it is not there.
async function indicator(page) {
  const el = page.locator("#volto-offline-status");
  if (!(await el.count())) return null;
  const get = (a) => el.first().getAttribute(a);
  return {
    online: await get("data-online"),
    downloaded: await get("data-downloaded"),
    pending: Number(await get("data-pending")),
    conflicts: Number(await get("data-conflicts")),
  };
}

async function waitIndicator(page, want, what, timeout = 30000) {
  let last = null;
  await waitFor(
    async () => {
      last = await indicator(page);
      return !!last && Object.entries(want).every(([k, v]) => (typeof v === "function" ? v(last[k]) : last[k] === v));
    },
    `${what} (the indicator says ${JSON.stringify(last)})`,
    timeout,
  ).catch(async (e) => {
    const d = await workerDetails(page);
    const v = (d && d.value) || {};
    console.log(`volto-offline-e2e: the Service Worker's status: ${JSON.stringify(v.status || d)}`);
    for (const w of v.pending || []) console.log(`volto-offline-e2e:   waiting: ${w.method} ${w.path} (${w.last_error || "not tried"})`);
    for (const c of v.conflicts || []) console.log(`volto-offline-e2e:   conflict: ${c.status} ${c.message}`);
    throw new Error(`${e.message.replace(/\(the indicator says .*\)$/, "")}(the indicator says ${JSON.stringify(last)})`);
  });
}

// What the Service Worker reports about the replica (for a failing step's log).
async function workerDetails(page) {
  return page.evaluate(() => new Promise((resolve) => {
    const sw = navigator.serviceWorker && navigator.serviceWorker.controller;
    if (!sw) return resolve("no Service Worker controls the page");
    const ch = new MessageChannel();
    ch.port1.onmessage = (e) => resolve(e.data);
    sw.postMessage({ type: "details", online: navigator.onLine }, [ch.port2]);
    setTimeout(() => resolve("no answer"), 5000);
  })).catch((e) => `cannot ask: ${e.message}`);
}

// Navigate inside Volto without a page load, as a click on one of its links does (its router
// follows the browser history's popstate).
async function goInside(page, path) {
  await page.evaluate((p) => {
    window.history.pushState({}, "", p);
    window.dispatchEvent(new PopStateEvent("popstate", { state: {} }));
  }, path);
  await settle(page);
}

async function setTitle(page, text) {
  const title = page.locator(".block.title [contenteditable=true]").first();
  await see(title, "the title block in the form");
  await title.click();
  await page.keyboard.press("Control+A");
  await page.keyboard.type(text);
}

// ---- steps -------------------------------------------------------------------------------------

const steps = [];
const step = (name, fn) => steps.push({ name, fn });

step("log in online: the Service Worker controls the page and the offline copy downloads", async (page) => {
  await page.goto(volto + "/login");
  await settle(page);
  await page.waitForFunction(() => !!navigator.serviceWorker && !!navigator.serviceWorker.controller, null, { timeout: 60000 })
    .catch(() => { throw new Error("no Service Worker controls the page"); });
  await page.fill("#login", admin.login);
  await page.fill("#password", admin.password);
  await page.click("#login-form-submit");
  await page.locator("body.has-toolbar").waitFor({ timeout: 15000 });
  await settle(page);
  await waitIndicator(page, { online: "yes", downloaded: "yes", pending: 0, conflicts: 0 }, "the offline copy to be downloaded", 60000);
  // pages the editor opens online are kept for offline reloads
  for (const p of ["/", "/library", "/opening-hours"]) {
    await page.goto(volto + p);
    await settle(page);
  }
  await heading(page, "Opening hours");
});

step("the browser goes offline and the server stops", async (page) => {
  await page.context().setOffline(true);
  stopServer();
  await waitFor(async () => !(await serverAnswers()), "the server to stop", 15000);
  await waitIndicator(page, { online: "no" }, "the indicator to say offline");
  if (await page.evaluate(() => navigator.onLine)) throw new Error("navigator.onLine is still true in the offline context");
});

step("offline: browse through the navigation, open the contents view, search", async (page) => {
  await page.locator("nav a", { hasText: "Library" }).first().click();
  await page.waitForURL(/\/library$/);
  await heading(page, "Library");
  await page.click('#toolbar a[aria-label="Contents"]');
  await page.waitForURL(/\/library\/contents$/);
  await see(page.locator("#content-core table a", { hasText: "Library rules" }), "the page in the contents view");
  await goInside(page, "/search?SearchableText=whisper");
  await see(page.locator("#page-search a, .searchresults a, #content-core a", { hasText: "Library rules" }), "the search result");
});

step("offline: edit a page (title, description, text)", async (page) => {
  await goInside(page, "/opening-hours");
  await heading(page, "Opening hours");
  await page.click("#toolbar a.edit");
  await page.waitForURL(/\/opening-hours\/edit$/);
  await settle(page);
  await setTitle(page, "Opening hours (offline)");
  await page.fill("textarea#field-description", "Changed without the server.");
  const text = page.locator(".block-editor-slate [contenteditable=true]").first();
  await text.click();
  await page.keyboard.press("End");
  await page.keyboard.type(" Closed on holidays.");
  await page.click("#toolbar-save");
  await page.waitForURL(/\/opening-hours$/, { timeout: 15000 });
  await heading(page, "Opening hours (offline)");
  await see(page.locator("#page-document", { hasText: "Closed on holidays." }), "the edited text");
  await waitIndicator(page, { pending: (n) => n >= 1 }, "a write waiting to be sent");
});

step("offline: add a page and a folder", async (page) => {
  await goInside(page, "/library");
  await heading(page, "Library");
  await page.click("#toolbar-add");
  await page.click("#toolbar-add-page");
  await page.waitForURL(/\/library\/add\?type=Page$/);
  await settle(page);
  await setTitle(page, "Written offline");
  await page.fill("textarea#field-description", "A page made without the server.");
  await page.click("#toolbar-save");
  await page.waitForURL(/\/library\/written-offline$/, { timeout: 15000 });
  await heading(page, "Written offline");
  await goInside(page, "/");
  await page.click("#toolbar-add");
  await page.click("#toolbar-add-folder");
  await page.waitForURL(/\/add\?type=Folder$/);
  await settle(page);
  await setTitle(page, "Offline folder");
  await page.click("#toolbar-save");
  await page.waitForURL(/\/offline-folder$/, { timeout: 15000 });
  await heading(page, "Offline folder");
});

step("offline: reload the tab, the changes stay", async (page) => {
  await page.goto(volto + "/library/written-offline");
  await settle(page);
  await heading(page, "Written offline", "the page added offline after a reload");
  await page.reload();
  await settle(page);
  await heading(page, "Written offline", "the page added offline after a second reload");
  await page.goto(volto + "/opening-hours");
  await settle(page);
  await heading(page, "Opening hours (offline)", "the edit after a reload");
});

step("offline: publish the new page (state menu)", async (page) => {
  await goInside(page, "/library/written-offline");
  await heading(page, "Written offline");
  await page.click("#toolbar-more");
  const menu = page.locator(".menu-more");
  await see(menu.locator(".react-select__single-value", { hasText: "Private" }), "the state Private in the menu");
  await menu.locator(".react-select__control").first().click();
  const done = page.waitForResponse((r) => r.request().method() === "POST" && r.url().includes("/@workflow/"));
  await page.locator(".react-select__option", { hasText: "Publish" }).first().click();
  const res = await done;
  if (!res.ok()) throw new Error(`'Publish' answered ${res.status()}`);
  await settle(page);
  await see(menu.locator(".react-select__single-value", { hasText: "Published" }), "the state Published");
  await page.keyboard.press("Escape");
  await waitIndicator(page, { online: "no", pending: (n) => n >= 4 }, "four writes waiting (edit, page, folder, publish)");
});

step("the server comes back with a conflicting edit; the browser goes online: writes replayed, one conflict", async (page) => {
  await startServer();
  // made while the editor is still offline: the editor's edit was based on the version before it
  await api("PATCH", "/opening-hours", { title: "Opening hours (changed on the server)" });
  await page.context().setOffline(false);
  await waitIndicator(page, { online: "yes", pending: 0, conflicts: 1 }, "the writes replayed and one conflict", 90000);
  const added = await api("GET", "/library/written-offline");
  if (added.title !== "Written offline" || added.review_state !== "published") {
    throw new Error(`the server's /library/written-offline: ${added.title} / ${added.review_state}`);
  }
  const folder = await api("GET", "/offline-folder");
  if (folder.title !== "Offline folder") throw new Error(`the server's /offline-folder: ${folder.title}`);
  const edited = await api("GET", "/opening-hours");
  if (edited.title !== "Opening hours (changed on the server)") throw new Error(`the conflict was overwritten: ${edited.title}`);
});

step("the conflict view shows both versions; 'Keep mine' resolves it", async (page) => {
  await page.click("#volto-offline-status");
  await page.waitForURL(/\/offline-sync$/);
  const conflict = page.locator(".volto-offline-conflict").first();
  await see(conflict, "the conflict in the view");
  const title = conflict.locator('tr[data-field="title"]');
  await see(title.locator("td.mine", { hasText: "Opening hours (offline)" }), "my title");
  await see(title.locator("td.theirs", { hasText: "Opening hours (changed on the server)" }), "their title");
  await page.screenshot({ path: join(artifacts, "conflict-view.png") });
  await conflict.locator("button.volto-offline-keep-mine").click();
  await see(page.locator(".volto-offline-no-conflicts"), "no conflicts left", 60000);
  await waitIndicator(page, { pending: 0, conflicts: 0 }, "nothing waiting", 60000);
  const edited = await api("GET", "/opening-hours");
  if (edited.title !== "Opening hours (offline)" || edited.description !== "Changed without the server.") {
    throw new Error(`the server's /opening-hours after 'Keep mine': ${edited.title} / ${edited.description}`);
  }
});

// ---- run -------------------------------------------------------------------------------------

const browser = await launchChromium();
let failed = null;
let n = 0;
const pageErrors = [];
try {
  await fixtures();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("console", (m) => {
    if (m.type() === "error" && process.env.VOLTO_E2E_TRACE) console.log(`volto-offline-e2e: console: ${m.text()}`);
  });
  page.on("response", async (res) => {
    // VOLTO_E2E_TRACE=1 prints every API answer, not only those of 400 or more
    if (!res.url().includes("/++api++") || (res.status() < 400 && !process.env.VOLTO_E2E_TRACE)) return;
    const body = await res.text().catch(() => "");
    console.log(`volto-offline-e2e: api ${res.request().method()} ${res.url()} -> ${res.status()} ${body.slice(0, 300)}`);
  });
  ({ n, failed } = await runSteps(page, steps, { label: "volto-offline-e2e", artifacts, pageErrors }));
} catch (e) {
  console.log(`volto-offline-e2e: FAIL setup: ${e.message}`);
  failed = "setup";
} finally {
  await browser.close();
  if (restarted) restarted.kill("SIGTERM");
}
process.exit(summary("volto-offline-e2e", steps, n, failed));
