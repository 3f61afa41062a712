// Volto offline (issue 37), through Volto's UI only: Volto built with the volto-offline add-on
// (scripts/volto.sh --offline) in front of host-server, driven by playwright-core in Debian's
// /usr/bin/chromium. An editor logs in online; the browser context goes offline AND the server is
// stopped; the editor browses, searches, opens the contents view, edits a page, adds a page and a
// folder, reloads the tab, publishes; the server comes back with a conflicting edit made meanwhile
// through its API; the browser comes back online: the server has every other change, the conflict
// shows in the add-on's view and is resolved there ("Keep mine"). Also: the worker follows the
// server's change stream; an image synced online shows offline; the history view shows an offline
// edit; a reorder in the contents view offline reaches the server; a second conflict is resolved
// by a merge of fields, a merge the event's schema refuses changes nothing (the conflict and the
// choices stay, the error shows); no page the worker keeps holds a session token, and a reload
// after an offline logout is logged out; a session revoked while offline makes the worker send nothing until the
// editor logs in again; a second user of the browser sees none of the first one's writes, which
// wait (through a logout) for the first user's next login. Figures (the replica's opening, an
// offline GET and PATCH through the worker) are printed, not asserted. A screenshot per step goes
// to $VOLTO_ARTIFACTS (default artifacts/volto-offline/). The first failing step fails the run.
//
//   node tests/volto/offline.mjs <volto URL> <backend URL>
// with ADMIN_PASSWORD (the backend's admin), SERVER_PID (the running server, stopped by the test)
// and SERVER_CMD (a JSON array: the command that starts it again on the same data and port).
// scripts/volto-offline-e2e.sh sets all of them.
import { spawn } from "node:child_process";
import { crc32, deflateSync } from "node:zlib";
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
// the second user of the browser (a Manager: they could see the first user's writes were they on
// the server)
const other = { login: "harriet", password: `h-${ADMIN_PASSWORD}` };

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

async function api(method, path, body, auth) {
  const headers = {
    Accept: "application/json",
    Authorization: auth || "Basic " + Buffer.from(`${admin.login}:${admin.password}`).toString("base64"),
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
  await api("POST", "/library", {
    "@type": "Image", id: "harbour-map", title: "Harbour map",
    image: { data: png(320, 200).toString("base64"), encoding: "base64", filename: "harbour-map.png", "content-type": "image/png" },
  });
  await api("POST", "/", {
    "@type": "Event", id: "harbour-fair", title: "Harbour fair",
    start: "2027-06-10T10:00:00Z", end: "2027-06-10T16:00:00Z",
  });
  await api("POST", "/@users", { username: other.login, email: "harriet@example.org", password: other.password, roles: ["Manager"] });
}

// A `w` x `h` RGB PNG (stripes), for the image fixture.
function png(w, h) {
  const row = (y) => Buffer.from([0, ...Array.from({ length: w }, (_, x) => [(x * 3) & 255, (y * 5) & 255, ((x + y) >> 2) & 255]).flat()]);
  const raw = Buffer.concat(Array.from({ length: h }, (_, y) => row(y)));
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type), data])));
    return Buffer.concat([len, Buffer.from(type), data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
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
    loginNeeded: await get("data-login-needed"),
    stream: await get("data-stream"),
    streamEvents: Number(await get("data-stream-events")),
    images: Number(await get("data-images")),
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

// What the Service Worker reports as the status of the page's user (`figures` among it).
async function workerStatus(page) {
  return page.evaluate(() => new Promise((resolve) => {
    const sw = navigator.serviceWorker && navigator.serviceWorker.controller;
    const token = (document.cookie.match(/(?:^|; )auth_token=([^;]+)/) || [])[1];
    if (!sw) return resolve(null);
    const ch = new MessageChannel();
    ch.port1.onmessage = (e) => resolve(e.data && e.data.value);
    sw.postMessage({ type: "status", token, online: navigator.onLine }, [ch.port2]);
    setTimeout(() => resolve(null), 5000);
  }));
}

const figures = [];
function figure(text) {
  figures.push(text);
  console.log(`volto-offline-e2e: figure: ${text}`);
}

// Log in through Volto's login form (the page is on it or goes there). The form must show at once:
// no cookie is dropped for it (a stale session coming back is a failure, see step 18).
async function logIn(page, who) {
  if (!/\/login/.test(page.url())) await page.goto(volto + "/login");
  await settle(page);
  const form = await page.locator("#login").first().waitFor({ timeout: 15000 }).then(() => true, () => false);
  const loggedIn = (await page.locator("body.has-toolbar").count()) > 0;
  if (!form || loggedIn) {
    const cookie = await page.evaluate(() => document.cookie).catch(() => "?");
    throw new Error(`not shown: the login form (at ${page.url()}, logged in: ${loggedIn}, session cookie: ${cookie.includes("auth_token=")})`);
  }
  await page.fill("#login", who.login);
  await page.fill("#password", who.password);
  await page.click("#login-form-submit");
  await page.locator("body.has-toolbar").waitFor({ timeout: 15000 });
  await settle(page);
}

// Every response the browser keeps in Cache Storage that is a page or JSON, scanned for a session
// token (a JSON Web Token, or `token` itself): [{cache, url, type, token}] of those holding one,
// and how many pages (text/html) are kept at all.
async function keptTokens(page, token) {
  return page.evaluate(async (tok) => {
    const jwt = /eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{8,}/;
    const found = [];
    let pages = 0;
    for (const name of await caches.keys()) {
      const cache = await caches.open(name);
      for (const req of await cache.keys()) {
        const resp = await cache.match(req);
        const type = (resp && resp.headers.get("content-type")) || "";
        if (!/text\/html|json/.test(type)) continue;
        if (type.includes("text/html")) pages += 1;
        const text = await resp.text();
        if (jwt.test(text) || (tok && text.includes(tok))) found.push({ cache: name, url: req.url, type });
      }
    }
    return { found, pages };
  }, token || null);
}

// Fails when a page or JSON answer the browser keeps holds a session token.
async function noKeptToken(page, when) {
  const token = await page.evaluate(() => (document.cookie.match(/(?:^|; )auth_token=([^;]+)/) || [])[1] || null);
  const { found, pages } = await keptTokens(page, token);
  if (found.length) {
    throw new Error(`${when}: ${found.length} kept response(s) hold a session token: ${found.map((f) => `${f.cache} ${f.url}`).join(", ")}`);
  }
  return pages;
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
  const st = await workerStatus(page);
  if (st && st.figures && st.figures.openMs !== undefined) {
    figure(`opening the replica at login (a new one: the full download of ${st.downloaded ? "the site" : "?"}): ${st.figures.openMs} ms`);
  }
  // the image's bytes (every scale) are kept once the replica has it
  await waitIndicator(page, { images: (n) => n >= 1 }, "the image's bytes kept for offline use", 60000);
  // pages the editor opens online are kept for offline reloads
  for (const p of ["/", "/library", "/opening-hours"]) {
    await page.goto(volto + p);
    await settle(page);
  }
  await heading(page, "Opening hours");
  // the app shell is kept for offline page loads, and nothing kept holds the session's token
  await waitFor(async () => (await noKeptToken(page, "online, logged in")) >= 1, "the app shell to be kept", 30000);
});

step("online: the worker follows the server's change stream; an edit through the API arrives at once", async (page) => {
  await waitIndicator(page, { stream: "open" }, "the change stream to be open", 30000);
  const before = (await indicator(page)).streamEvents;
  await api("PATCH", "/library", { description: "Books, rules and maps." });
  await waitIndicator(page, { streamEvents: (n) => n > before }, "the change to come through the stream", 15000);
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

step("offline: an image synced online shows (its bytes kept by the worker)", async (page) => {
  await goInside(page, "/library/harbour-map");
  await heading(page, "Harbour map");
  const img = page.locator("#content-core img, #page-document img, .view-wrapper img").first();
  await see(img, "the image");
  await waitFor(() => img.evaluate((el) => el.complete && el.naturalWidth > 0), "the image's bytes to load offline", 10000)
    .catch(async (e) => {
      throw new Error(`${e.message}: ${await img.evaluate((el) => `${el.currentSrc} ${el.naturalWidth}`)}`);
    });
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

step("offline: the history view shows the offline edit", async (page) => {
  await goInside(page, "/opening-hours/historyview");
  const rows = page.locator("#content-core table tbody tr, .history table tbody tr, table tbody tr");
  await see(rows, "the history's rows");
  // the newest entry is the offline edit: a version after the download, by the editor
  const first = rows.first();
  const text = await first.innerText();
  const version = Number((await first.locator("td").first().innerText()).trim());
  if (!(version >= 1)) throw new Error(`the newest history entry is not an edit made here: ${text}`);
  await goInside(page, "/opening-hours");
  await heading(page, "Opening hours (offline)");
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

step("offline: reorder in the contents view (the new page to the top)", async (page) => {
  await goInside(page, "/library/contents");
  const row = (title) => page.locator("#content-core table tbody tr", { hasText: title });
  await see(row("Written offline"), "the new page in the contents view");
  const names = () => page.locator("#content-core table tbody tr").evaluateAll((rs) => rs.map((r) => (r.querySelector(".icon-align-name") || r).innerText.trim().split("\n")[0].trim()));
  const before = await names();
  if (before[0] === "Written offline") throw new Error(`the new page is already first: ${before}`);
  // The drag, with the mouse moved in small steps (react-dnd's HTML5 backend needs a move after
  // the press to start a drag). A gesture that did not start a drag sends nothing: it is made
  // again, at most three times; every attempt that sends the reorder must succeed, and the order
  // is checked after a reload below.
  let res = null;
  for (let attempt = 1; attempt <= 3 && !res; attempt++) {
    if (attempt > 1) {
      console.log(`volto-offline-e2e: note: the drag (attempt ${attempt - 1}) sent no reorder; dragging again`);
      await goInside(page, "/library/contents");
      await see(row("Written offline"), "the new page in the contents view");
    }
    const saved = page
      .waitForResponse((r) => r.request().method() === "PATCH" && /\/library$/.test(new URL(r.url()).pathname), { timeout: 8000 })
      .catch(() => null);
    const from = await row("Written offline").locator(".drag.handle").first().boundingBox();
    const to = await row(before[0]).first().boundingBox();
    if (!from || !to) throw new Error("the rows of the contents view have no position");
    const [x, y] = [from.x + from.width / 2, from.y + from.height / 2];
    await page.mouse.move(x, y);
    await page.mouse.down();
    await page.mouse.move(x, y - 4, { steps: 4 });
    await page.mouse.move(x, to.y + 5, { steps: 20 });
    await page.mouse.up();
    res = await saved;
  }
  if (!res) throw new Error("three drags in the contents view sent no reorder");
  if (!res.ok()) throw new Error(`the reorder answered ${res.status()}`);
  await page.reload();
  await settle(page);
  await see(row("Written offline"), "the contents view after a reload");
  const after = await names();
  if (after[0] !== "Written offline") throw new Error(`the order after the reorder: ${after.join(", ")}`);
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
  if (!(await page.locator("body.has-toolbar").count())) throw new Error("logged out by the offline reload");
  await noKeptToken(page, "after the offline reloads");
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
  await waitIndicator(page, { online: "no", pending: (n) => n >= 5 }, "five writes waiting (edit, page, folder, reorder, publish)");
});

step("figures: an offline GET and PATCH answered through the worker (printed, not asserted)", async (page) => {
  const m = await page.evaluate(async () => {
    const token = (document.cookie.match(/(?:^|; )auth_token=([^;]+)/) || [])[1];
    const headers = { Accept: "application/json", Authorization: `Bearer ${token}` };
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const gets = [];
    for (let i = 0; i < 20; i += 1) {
      const t0 = performance.now();
      const r = await fetch("/++api++/library/rules", { headers });
      await r.json();
      if (!r.ok) throw new Error(`GET answered ${r.status}`);
      gets.push(performance.now() - t0);
    }
    const patches = [];
    for (let i = 0; i < 5; i += 1) {
      const t0 = performance.now();
      const r = await fetch("/++api++/library/rules", {
        method: "PATCH",
        headers: { ...headers, "Content-Type": "application/json", Prefer: "return=representation" },
        body: JSON.stringify({ description: `Kept offline (${i + 1}).` }),
      });
      await r.text();
      if (!r.ok) throw new Error(`PATCH answered ${r.status}`);
      patches.push(performance.now() - t0);
    }
    return { get: median(gets), getMax: Math.max(...gets), patch: median(patches), patchMax: Math.max(...patches) };
  });
  figure(`offline GET of a page through the worker: median ${m.get.toFixed(1)} ms (max ${m.getMax.toFixed(1)}) over 20`);
  figure(`offline PATCH of a page through the worker: median ${m.patch.toFixed(1)} ms (max ${m.patchMax.toFixed(1)}) over 5`);
  await waitIndicator(page, { pending: (n) => n >= 10 }, "the five PATCHes waiting too");
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
  const library = await api("GET", "/library");
  const order = library.items.map((i) => i["@id"].split("/").pop());
  if (order[0] !== "written-offline") throw new Error(`the server's order of /library: ${order.join(", ")}`);
  const rules = await api("GET", "/library/rules");
  if (rules.description !== "Kept offline (5).") throw new Error(`the server's /library/rules description: ${rules.description}`);
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

// An edit of a page through Volto's form: title and description.
async function editPage(page, path, title, description) {
  await goInside(page, path);
  await page.click("#toolbar a.edit");
  await page.waitForURL(new RegExp(`${path}/edit$`));
  await settle(page);
  await setTitle(page, title);
  await page.fill("textarea#field-description", description);
  await page.click("#toolbar-save");
  await page.waitForURL(new RegExp(`${path}$`), { timeout: 15000 });
  await heading(page, title);
}

step("a second conflict is resolved by a merge of fields: their title, my description", async (page) => {
  await page.context().setOffline(true);
  await waitIndicator(page, { online: "no" }, "the indicator to say offline");
  await editPage(page, "/opening-hours", "Hours (mine)", "My description, written offline.");
  await waitIndicator(page, { pending: 1 }, "the edit waiting");
  await api("PATCH", "/opening-hours", { title: "Hours (theirs)", description: "Their description." });
  await page.context().setOffline(false);
  await waitIndicator(page, { online: "yes", pending: 0, conflicts: 1 }, "the edit refused as a conflict", 60000);
  await page.click("#volto-offline-status");
  await page.waitForURL(/\/offline-sync$/);
  const conflict = page.locator(".volto-offline-conflict").first();
  await see(conflict.locator("button.volto-offline-merge"), "the Merge button");
  await see(conflict.locator('tr[data-field="title"] td.theirs', { hasText: "Hours (theirs)" }), "their title");
  // only fields both versions have are offered (a server-only field is not the edit's to send)
  const offered = await conflict.locator("tr[data-field]").evaluateAll((rows) => rows
    .filter((r) => r.querySelector("input.volto-offline-pick-mine"))
    .map((r) => [r.dataset.field, r.querySelector("td.mine").innerText.trim(), r.querySelector("td.theirs").innerText.trim()]));
  const oneSided = offered.filter(([, mine, theirs]) => mine === "—" || theirs === "—");
  if (oneSided.length) throw new Error(`the merge offers fields one side lacks: ${oneSided.map(([k]) => k).join(", ")}`);
  await conflict.locator('tr[data-field="title"] input.volto-offline-pick-theirs').check();
  await conflict.locator('tr[data-field="description"] input.volto-offline-pick-mine').check();
  await page.screenshot({ path: join(artifacts, "conflict-merge.png") });
  await conflict.locator("button.volto-offline-merge").click();
  await see(page.locator(".volto-offline-no-conflicts"), "no conflicts left", 60000);
  await waitIndicator(page, { pending: 0, conflicts: 0 }, "nothing waiting", 60000);
  const merged = await api("GET", "/opening-hours");
  if (merged.title !== "Hours (theirs)" || merged.description !== "My description, written offline.") {
    throw new Error(`the server's /opening-hours after the merge: ${merged.title} / ${merged.description}`);
  }
});

// The radio picked for `field` in `conflict`: "mine", "theirs" or null.
async function picked(conflict, field) {
  for (const side of ["mine", "theirs"]) {
    if (await conflict.locator(`tr[data-field="${field}"] input.volto-offline-pick-${side}`).isChecked()) return side;
  }
  return null;
}

step("a merge the type's schema refuses changes nothing: the conflict and its choices stay, the error shows", async (page) => {
  await page.context().setOffline(true);
  await waitIndicator(page, { online: "no" }, "the indicator to say offline");
  // the event moved two days later offline: the PATCH Volto's edit form sends, through the worker
  const status = await page.evaluate(async () => {
    const token = (document.cookie.match(/(?:^|; )auth_token=([^;]+)/) || [])[1];
    const r = await fetch("/++api++/harbour-fair", {
      method: "PATCH",
      headers: { Accept: "application/json", "Content-Type": "application/json", Authorization: `Bearer ${token}` },
      body: JSON.stringify({ start: "2027-06-12T10:00:00Z", end: "2027-06-12T16:00:00Z" }),
    });
    return r.status;
  });
  if (status >= 300) throw new Error(`the offline edit of the event answered ${status}`);
  await waitIndicator(page, { pending: 1 }, "the event's edit waiting");
  // meanwhile, on the server: renamed and moved two days earlier
  await api("PATCH", "/harbour-fair", { title: "Harbour fair (moved)", start: "2027-06-08T10:00:00Z", end: "2027-06-08T16:00:00Z" });
  await page.context().setOffline(false);
  await waitIndicator(page, { online: "yes", pending: 0, conflicts: 1 }, "the event's edit refused as a conflict", 60000);
  await page.click("#volto-offline-status");
  await page.waitForURL(/\/offline-sync$/);
  const conflict = page.locator(".volto-offline-conflict").first();
  await see(conflict.locator("button.volto-offline-merge"), "the Merge button");
  for (const f of ["title", "start", "end"]) {
    await see(conflict.locator(`tr[data-field="${f}"] input.volto-offline-pick-mine`), `a choice for '${f}'`);
  }
  // their title and end, my start: the merged event would end before it starts
  await conflict.locator('tr[data-field="title"] input.volto-offline-pick-theirs').check();
  await conflict.locator('tr[data-field="start"] input.volto-offline-pick-mine').check();
  await conflict.locator('tr[data-field="end"] input.volto-offline-pick-theirs').check();
  await conflict.locator("button.volto-offline-merge").click();
  const error = conflict.locator(".volto-offline-conflict-error");
  await see(error, "the refused merge's error beside the conflict", 30000);
  const text = await error.innerText();
  if (!/end/.test(text)) throw new Error(`the error does not name the field: ${text}`);
  await page.screenshot({ path: join(artifacts, "conflict-merge-refused.png") });
  // nothing changed: the conflict is there with the choices made, nothing was sent
  await new Promise((r) => setTimeout(r, 3500)); // the view reloads the conflicts every 3 s
  const still = await indicator(page);
  if (still.conflicts !== 1 || still.pending !== 0) throw new Error(`after the refused merge: ${JSON.stringify(still)}`);
  const picks = { title: await picked(conflict, "title"), start: await picked(conflict, "start"), end: await picked(conflict, "end") };
  if (picks.title !== "theirs" || picks.start !== "mine" || picks.end !== "theirs") {
    throw new Error(`the choices after the refused merge: ${JSON.stringify(picks)}`);
  }
  const server = await api("GET", "/harbour-fair");
  if (!server.start.startsWith("2027-06-08T10:00")) throw new Error(`the server's event changed: ${server.start}`);
  // my end too: accepted, sent with the server's version
  await conflict.locator('tr[data-field="end"] input.volto-offline-pick-mine').check();
  await conflict.locator("button.volto-offline-merge").click();
  await see(page.locator(".volto-offline-no-conflicts"), "no conflicts left", 60000);
  await waitIndicator(page, { pending: 0, conflicts: 0 }, "nothing waiting", 60000);
  const merged = await api("GET", "/harbour-fair");
  if (merged.title !== "Harbour fair (moved)" || !merged.start.startsWith("2027-06-12T10:00") || !merged.end.startsWith("2027-06-12T16:00")) {
    throw new Error(`the server's event after the merge: ${merged.title} / ${merged.start} / ${merged.end}`);
  }
});

step("a session revoked while offline: nothing is sent, 'log in to sync', the login sends the edit", async (page) => {
  await page.context().setOffline(true);
  await waitIndicator(page, { online: "no" }, "the indicator to say offline");
  await editPage(page, "/library/written-offline", "Written offline (session revoked)", "Edited while the session was ended elsewhere.");
  await waitIndicator(page, { pending: 1 }, "the edit waiting");
  // every session of the editor ends on the server (as "log out everywhere" does)
  const { token } = await api("POST", "/@login", { login: admin.login, password: admin.password });
  await api("POST", "/@logout", { all: true }, `Bearer ${token}`);
  await page.context().setOffline(false);
  await waitIndicator(page, { loginNeeded: "yes", pending: 1 }, "the indicator to ask for a login, the edit still waiting", 60000);
  const before = await api("GET", "/library/written-offline");
  if (before.title === "Written offline (session revoked)") throw new Error("the edit was sent with the revoked session");
  await new Promise((r) => setTimeout(r, 6000)); // rounds would run meanwhile: none may send
  if ((await indicator(page)).pending !== 1) throw new Error("the waiting edit left with the revoked session");
  await page.click("#volto-offline-status");
  await page.waitForURL(/\/login/);
  await logIn(page, admin);
  await waitIndicator(page, { loginNeeded: "no", online: "yes", downloaded: "yes", pending: 0, conflicts: 0 }, "the edit sent after the login", 60000);
  const sent = await api("GET", "/library/written-offline");
  if (sent.title !== "Written offline (session revoked)") throw new Error(`the server's /library/written-offline after the login: ${sent.title}`);
});

step("logout with writes waiting; a second user sees none of them; the first user's next login sends them", async (page) => {
  await page.context().setOffline(true);
  await waitIndicator(page, { online: "no" }, "the indicator to say offline");
  await goInside(page, "/");
  await settle(page);
  // the add menu, once more if the first click did not lead to the form (a re-render took it)
  for (let attempt = 0; attempt < 3 && !/\/add\?type=Page$/.test(page.url()); attempt += 1) {
    if (!(await page.locator("#toolbar-add-page").isVisible())) await page.click("#toolbar-add");
    await page.click("#toolbar-add-page");
    await page.waitForURL(/\/add\?type=Page$/, { timeout: 8000 }).catch(() => {});
  }
  await page.waitForURL(/\/add\?type=Page$/, { timeout: 1000 });
  await settle(page);
  await setTitle(page, "Admin draft");
  await page.click("#toolbar-save");
  await page.waitForURL(/\/admin-draft$/, { timeout: 15000 });
  await waitIndicator(page, { pending: 1 }, "the new page waiting");
  // log out offline: the replica and its waiting write stay, closed, for this user
  await goInside(page, "/logout");
  await page.locator("body.has-toolbar").waitFor({ state: "detached", timeout: 15000 });
  await waitFor(async () => !(await page.evaluate(() => document.cookie.includes("auth_token="))), "Volto to drop its session cookie");
  // the tab reloaded offline right after the logout: Volto from the app shell, logged out (the
  // shell holds no session, and the one it is given is the cookie's: none)
  await page.reload();
  await settle(page);
  const after = await page.evaluate(() => ({
    volto: !!window.__data,
    token: !!(window.__data && window.__data.userSession && window.__data.userSession.token),
    cookie: document.cookie.includes("auth_token="),
    toolbar: document.body.classList.contains("has-toolbar"),
  }));
  if (!after.volto) throw new Error(`the offline reload after the logout did not load Volto: ${(await page.content()).slice(0, 200)}`);
  if (after.token || after.cookie || after.toolbar) {
    throw new Error(`the offline reload after the logout brought a session back: ${JSON.stringify(after)}`);
  }
  await noKeptToken(page, "after the logout");
  await page.context().setOffline(false);
  await page.goto(volto + "/login");
  await settle(page);
  await logIn(page, other);
  await waitIndicator(page, { online: "yes", downloaded: "yes", pending: 0, conflicts: 0 }, "the second user's own copy, nothing waiting", 60000);
  const st = await workerStatus(page);
  if (!st || st.login !== other.login) throw new Error(`the worker's replica is not the second user's: ${JSON.stringify(st)}`);
  await goInside(page, "/offline-sync");
  await see(page.locator(".volto-offline-nothing-pending"), "nothing waiting for the second user");
  await new Promise((r) => setTimeout(r, 6000)); // a round or more of the second user
  const drafts = await api("GET", "/@search?SearchableText=Admin%20draft");
  if (drafts.items_total !== 0) throw new Error("the first user's page reached the server during the second user's session");
  // offline, the second user's copy has no trace of it either
  await page.context().setOffline(true);
  await waitIndicator(page, { online: "no" }, "the indicator to say offline");
  await goInside(page, "/search?SearchableText=draft");
  await settle(page);
  if (await page.locator("#page-search a, .searchresults a, #content-core a", { hasText: "Admin draft" }).count()) {
    throw new Error("the second user's copy shows the first user's page");
  }
  await page.context().setOffline(false);
  await waitIndicator(page, { online: "yes" }, "the indicator to say online");
  await goInside(page, "/logout");
  await page.locator("body.has-toolbar").waitFor({ state: "detached", timeout: 15000 });
  await waitFor(async () => !(await page.evaluate(() => document.cookie.includes("auth_token="))), "Volto to drop the second user's session cookie");
  await logIn(page, admin);
  await waitIndicator(page, { online: "yes", downloaded: "yes", pending: 0, conflicts: 0 }, "the first user's waiting page sent after their login", 60000);
  const st2 = await workerStatus(page);
  if (st2 && st2.figures) figure(`opening an existing replica at login (a round sends its waiting write): ${st2.figures.openMs} ms`);
  const draft = await api("GET", "/admin-draft");
  if (draft.title !== "Admin draft") throw new Error(`the server's /admin-draft: ${draft.title}`);
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
if (figures.length) console.log(`volto-offline-e2e: figures:\n${figures.map((f) => `  - ${f}`).join("\n")}`);
process.exit(summary("volto-offline-e2e", steps, n, failed));
