// End-to-end test of offline editing against a real server (issue 18), in headless Chromium:
// the real host-server binary, started here on a scratch data directory, behind a small
// same-origin proxy that also serves the web demo (the page talks to `/srv/...`; stopping the
// server makes those requests fail at the network level, as a lost connection does).
//
// 1. a replica fills itself from the server (openSite with {server, credentials});
// 2. the server stops: edit a page, create a page, delete a page; the UI sees the changes, three
//    writes wait; reload the page while still offline: the writes are still there;
// 3. the server comes back: one sync round sends them; the server's API shows the edit, the new
//    page (with the server's uid in the replica) and the deletion;
// 4. two browser contexts (two replicas) edit the same page while the server is down: the first
//    to sync wins, the second gets a conflict listed with both versions (nothing lost), shown in
//    the demo's conflicts panel; "keep mine" sends it again and the server takes it; a merge
//    (the server's title, the local description); a replica opened with a token;
// 5. the web demo: connect form, online indicator, writes waiting, conflicts panel;
// 6. two tabs (two pages of one browser context) on one replica: (a) both start a round at once
//    with writes waiting: one runs (it holds the replica's Web Lock), the other reports
//    `skipped`, and each write reaches the server once; (b) a stale tab of the demo saves over a
//    version another tab changed: 412 shown, the server keeps the other tab's title; (c) "work
//    offline" set in one tab holds back the other tab's rounds; (d) without Web Locks (removed
//    from the context) both rounds run and the idempotency key keeps the write from running twice.
//
// Needs web-demo/pkg (./scripts/web-demo.sh --build-only) and a host-server binary
// (HOST_SERVER_BIN, default $CARGO_TARGET_DIR/debug/host-server or ../../target/debug/host-server).
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { createServer, request as httpRequest } from "node:http";
import { createServer as netServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, extname, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const demo = join(here, "..");
const root = join(here, "..", "..");
const artifacts = join(root, "artifacts");
mkdirSync(artifacts, { recursive: true });
const bin =
  process.env.HOST_SERVER_BIN ||
  join(process.env.CARGO_TARGET_DIR || join(root, "target"), "debug", "host-server");
if (!existsSync(bin)) throw new Error(`no host-server binary at ${bin} (cargo build -p host-server)`);

const step = (s) => console.log(`sync-e2e: ${s}`);
const fail = (msg) => {
  throw new Error(msg);
};
const eq = (a, b, what) => {
  if (JSON.stringify(a) !== JSON.stringify(b)) fail(`${what}: expected ${JSON.stringify(b)}, got ${JSON.stringify(a)}`);
};

const freePort = () =>
  new Promise((res) => {
    const s = netServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });

const serverPort = await freePort();
const proxyPort = await freePort();
const origin = `http://127.0.0.1:${proxyPort}`;
const serverUrl = `${origin}/srv`;
const direct = `http://127.0.0.1:${serverPort}`;
const data = mkdtempSync(join(tmpdir(), "sync-e2e-"));
const PASSWORD = "sync-e2e-secret";

let server = null;
async function startServer() {
  // --public-url: the @ids the pages see are under /srv of the front
  server = spawn(bin, ["--listen", `127.0.0.1:${serverPort}`, "--data", data, "--public-url", serverUrl], {
    env: { ...process.env, ADMIN_PASSWORD: PASSWORD, RUST_LOG: "warn" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise((res, rej) => {
    let out = "";
    server.stdout.on("data", (d) => {
      out += d;
      if (out.includes("listening on")) res();
    });
    server.on("exit", (c) => rej(new Error(`host-server exited with ${c}`)));
  });
}
async function stopServer() {
  const s = server;
  server = null;
  const gone = new Promise((res) => s.on("exit", res));
  s.kill("SIGTERM");
  await gone;
}

// The same-origin front: the demo's files, and /srv/* forwarded to the server; while `proxyGate`
// is a promise, requests wait for it; while `proxyLog` is an array, each is noted there as
// "METHOD /path".
let proxyGate = null;
let proxyLog = null;
const types = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css", ".wasm": "application/wasm", ".json": "application/json" };
const proxy = createServer((req, res) => {
  if (req.url === "/srv" || req.url.startsWith("/srv/") || req.url.startsWith("/srv?")) {
    const path = req.url.slice(4) || "/";
    const headers = { ...req.headers };
    delete headers.host;
    if (proxyLog) proxyLog.push(`${req.method} ${path.split("?")[0]}`);
    const forward = () => {
    const up = httpRequest({ host: "127.0.0.1", port: serverPort, method: req.method, path: path.startsWith("/") ? path : `/${path}`, headers }, (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      ur.pipe(res);
    });
    up.on("error", () => req.socket.destroy()); // the server is down: the connection drops
    req.pipe(up);
    };
    if (proxyGate) {
      req.pause();
      proxyGate.then(() => {
        req.resume();
        forward();
      });
    } else forward();
    return;
  }
  const rel = normalize(decodeURIComponent(req.url.split("?")[0])).replace(/^(\.\.[/\\])+/, "");
  const file = join(demo, rel === "/" ? "index.html" : rel);
  if (!file.startsWith(demo) || !existsSync(file)) {
    res.writeHead(404);
    res.end("not found");
    return;
  }
  res.writeHead(200, { "Content-Type": types[extname(file)] || "application/octet-stream" });
  res.end(readFileSync(file));
});
await new Promise((r) => proxy.listen(proxyPort, "127.0.0.1", r));

// The server's API, for fixtures and checks (as admin, directly).
const auth = "Basic " + Buffer.from(`admin:${PASSWORD}`).toString("base64");
async function api(method, path, body) {
  const r = await fetch(direct + path, {
    method,
    headers: { Authorization: auth, Accept: "application/json", "Content-Type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : null };
}

let browser;
let ok = false;
try {
  await startServer();
  step(`host-server on ${direct}, page origin ${origin}`);
  eq((await api("POST", "/", { "@type": "Folder", title: "News" })).status, 201, "create folder");
  for (const title of ["Hello", "Old", "Shared"])
    eq((await api("POST", "/news", { "@type": "Page", title })).status, 201, `create ${title}`);

  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking", "--no-first-run"],
  });

  // A page of the origin with the module loaded and a replica opened as `window.site`.
  async function openReplica(ctx, name) {
    const page = await ctx.newPage();
    page.on("pageerror", (e) => console.log(`pageerror (${name}):`, e.message));
    await page.goto(`${origin}/sync-test.html`);
    await page.evaluate(
      async ({ name, serverUrl, password }) => {
        const m = await import("/pkg/engine.js");
        await m.default();
        window.site = await m.openSite(name, {
          server: serverUrl,
          credentials: { login: "admin", password },
          baseUrl: "http://replica.local",
        });
      },
      { name, serverUrl, password: PASSWORD },
    );
    return page;
  }
  const local = (page, method, path, body) =>
    page.evaluate(
      async ({ method, path, body }) => {
        const r = await window.site.request(method, path, {
          headers: { Accept: "application/json", "Content-Type": "application/json" },
          body: body ? JSON.stringify(body) : undefined,
        });
        const t = await r.text();
        return { status: r.status, json: t ? JSON.parse(t) : null };
      },
      { method, path, body },
    );
  const sync = (page) => page.evaluate(() => window.site.sync());

  // 1. fill
  const ctxA = await browser.newContext();
  let a = await openReplica(ctxA, "replica-a");
  let st = await a.evaluate(() => window.site.syncStatus());
  eq([st.downloaded, st.online, st.pending], [true, true, 0], "replica A after open");
  const hello = await local(a, "GET", "/news/hello");
  const serverHello = await api("GET", "/news/hello");
  eq(hello.status, 200, "local GET of a replicated page");
  eq(hello.json.UID, serverHello.json.UID, "replicated uid");
  eq(hello.json.title, "Hello", "replicated title");
  step("replica A filled from the server");

  // 2. offline: edit, create, delete
  await stopServer();
  eq((await local(a, "PATCH", "/news/hello", { title: "Hello, edited offline" })).status, 204, "offline edit");
  const created = await local(a, "POST", "/news", { "@type": "Page", title: "Written offline" });
  eq(created.status, 201, "offline create");
  eq((await local(a, "DELETE", "/news/old")).status, 204, "offline delete");
  eq((await local(a, "GET", "/news/hello")).json.title, "Hello, edited offline", "the UI sees the edit");
  st = await sync(a);
  eq([st.online, st.pending], [false, 3], "a round while the server is down");
  step(`offline: 3 writes waiting (${st.lastError})`);

  await a.reload();
  await a.evaluate(
    async ({ serverUrl, password }) => {
      const m = await import("/pkg/engine.js");
      await m.default();
      window.site = await m.openSite("replica-a", { server: serverUrl, credentials: { login: "admin", password }, baseUrl: "http://replica.local" });
    },
    { serverUrl, password: PASSWORD },
  );
  st = await a.evaluate(() => window.site.syncStatus());
  eq(st.pending, 3, "pending writes after a reload while offline");
  eq((await local(a, "GET", "/news/written-offline")).status, 200, "the offline page after the reload");
  step("the writes survived a reload while offline");

  // 3. back online
  await startServer();
  st = await sync(a);
  eq([st.online, st.pending, st.conflicts], [true, 0, 0], "after the round with the server back");
  eq((await api("GET", "/news/hello")).json.title, "Hello, edited offline", "server: the edit");
  const fresh = await api("GET", "/news/written-offline");
  eq(fresh.status, 200, "server: the page created offline");
  eq((await api("GET", "/news/old")).status, 404, "server: the deletion");
  eq((await local(a, "GET", "/news/written-offline")).json.UID, fresh.json.UID, "the replica holds the server's uid");
  step("back online: the server has the edit, the new page and the deletion");

  // 4. two replicas, one page, both offline
  const ctxB = await browser.newContext();
  const b = await openReplica(ctxB, "replica-b");
  eq((await local(b, "GET", "/news/shared")).json.title, "Shared", "replica B filled");
  await stopServer();
  eq((await local(a, "PATCH", "/news/shared", { title: "Shared: A's title" })).status, 204, "A edits");
  eq((await local(b, "PATCH", "/news/shared", { title: "Shared: B's title" })).status, 204, "B edits");
  await startServer();
  st = await sync(a);
  eq([st.pending, st.conflicts], [0, 0], "A syncs first");
  st = await sync(b);
  eq([st.pending, st.conflicts], [0, 1], "B gets a conflict");
  const conflicts = await b.evaluate(() => window.site.conflicts());
  eq(conflicts[0].status, 412, "conflict status");
  eq(conflicts[0].local.title, "Shared: B's title", "conflict: the local version");
  eq(conflicts[0].server.title, "Shared: A's title", "conflict: the server version");
  eq((await local(b, "GET", "/news/shared")).json.title, "Shared: B's title", "B's edit is kept locally");
  eq((await api("GET", "/news/shared")).json.title, "Shared: A's title", "A's edit is on the server");
  step("two replicas: the second gets a conflict with both versions, nothing lost");

  await b.evaluate((id) => window.site.resolveConflict(id, "mine"), conflicts[0].id);
  st = await sync(b);
  eq([st.pending, st.conflicts], [0, 0], "B after keeping its version");
  eq((await api("GET", "/news/shared")).json.title, "Shared: B's title", "server after keep mine");
  st = await sync(a);
  eq((await local(a, "GET", "/news/shared")).json.title, "Shared: B's title", "A follows the server");
  step("keep mine: the server takes B's version, A follows");

  // merge: A changes the title, B the description of the same page, both offline
  await stopServer();
  eq((await local(a, "PATCH", "/news/hello", { title: "Hello from A" })).status, 204, "A edits the title");
  eq((await local(b, "PATCH", "/news/hello", { description: "Described by B" })).status, 204, "B edits the description");
  await startServer();
  eq((await sync(a)).pending, 0, "A syncs");
  st = await sync(b);
  eq(st.conflicts, 1, "B's edit conflicts");
  const m = (await b.evaluate(() => window.site.conflicts()))[0];
  eq([m.local.description, m.server.title], ["Described by B", "Hello from A"], "both versions");
  await b.evaluate((id) => window.site.resolveConflict(id, "merge", { description: "Described by B" }), m.id);
  eq((await local(b, "GET", "/news/hello")).json.title, "Hello from A", "the merge starts from the server's version");
  st = await sync(b);
  eq([st.pending, st.conflicts], [0, 0], "B after the merge");
  const merged = (await api("GET", "/news/hello")).json;
  eq([merged.title, merged.description], ["Hello from A", "Described by B"], "server after the merge");
  step("merge: the server's title and B's description");

  // a replica opened with a token instead of a password
  const token = (await (await fetch(`${direct}/@login`, { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" }, body: JSON.stringify({ login: "admin", password: PASSWORD }) })).json()).token;
  const d = await ctxB.newPage();
  await d.goto(`${origin}/sync-test.html`);
  const dst = await d.evaluate(
    async ({ serverUrl, token }) => {
      const m = await import("/pkg/engine.js");
      await m.default();
      window.site = await m.openSite("replica-token", { server: serverUrl, credentials: { login: "admin", token }, baseUrl: "http://replica.local" });
      const r = await window.site.request("GET", "/news/hello", { headers: { Accept: "application/json" } });
      return [window.site.syncStatus(), (await r.json()).description];
    },
    { serverUrl, token },
  );
  eq([dst[0].downloaded, dst[0].online, dst[1]], [true, true, "Described by B"], "a replica opened with a token");
  step("a replica opened with a token");

  // cross-origin: a second server, on its own address with CORS for the page's origin; a conflict
  // there proves If-Match goes out and ETag comes back through CORS
  const port2 = await freePort();
  const data2 = mkdtempSync(join(tmpdir(), "sync-e2e-cors-"));
  const server2 = spawn(bin, ["--listen", `127.0.0.1:${port2}`, "--data", data2, "--cors-origin", origin], {
    env: { ...process.env, ADMIN_PASSWORD: PASSWORD, RUST_LOG: "warn" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    await new Promise((res) => server2.stdout.on("data", (d) => String(d).includes("listening on") && res()));
    const direct2 = `http://127.0.0.1:${port2}`;
    const api2 = async (method, path, body) => {
      const r = await fetch(direct2 + path, { method, headers: { Authorization: auth, Accept: "application/json", "Content-Type": "application/json" }, body: body ? JSON.stringify(body) : undefined });
      const t = await r.text();
      return { status: r.status, json: t ? JSON.parse(t) : null };
    };
    eq((await api2("POST", "/", { "@type": "Page", title: "Across" })).status, 201, "a page on the second server");
    const x = await ctxB.newPage();
    await x.goto(`${origin}/sync-test.html`);
    await x.evaluate(
      async ({ direct2, password }) => {
        const m = await import("/pkg/engine.js");
        await m.default();
        window.site = await m.openSite("replica-cors", { server: direct2, credentials: { login: "admin", password }, baseUrl: "http://replica.local" });
      },
      { direct2, password: PASSWORD },
    );
    eq((await local(x, "GET", "/across")).json.title, "Across", "cross-origin replica filled");
    eq((await local(x, "PATCH", "/across", { title: "Across, from the replica" })).status, 204, "cross-origin edit");
    eq((await api2("PATCH", "/across", { title: "Across, on the server" })).status, 204, "a server edit meanwhile");
    const xs = await sync(x);
    eq([xs.online, xs.conflicts], [true, 1], "cross-origin: the conditional write is refused");
    eq((await api2("GET", "/across")).json.title, "Across, on the server", "nothing overwritten");
    step("cross-origin (CORS): If-Match sent, ETag read, the conflict kept");
  } finally {
    const gone = new Promise((res) => server2.on("exit", res));
    server2.kill("SIGTERM");
    await gone;
    rmSync(data2, { recursive: true, force: true });
  }

  // 5. the web demo: connect form, indicator, writes waiting, conflicts panel
  const ctxC = await browser.newContext();
  const c = await ctxC.newPage();
  c.on("pageerror", (e) => console.log("pageerror (demo):", e.message));
  await c.goto(`${origin}/?nosw`);
  await c.waitForSelector("body[data-ready='1']", { timeout: 30000 });
  await c.click("#connect summary");
  await c.fill("#connect-server", serverUrl);
  await c.fill("#connect-login", "admin");
  await c.fill("#connect-password", PASSWORD);
  await c.click("#connect-form button[type=submit]");
  await c.waitForURL(/server=/);
  await c.waitForSelector("body[data-ready='1']", { timeout: 30000 });
  await c.waitForFunction(() => document.querySelector("#sync-online")?.textContent === "online", null, { timeout: 15000 });
  await c.click("#sync-offline"); // work offline: this demo must sync after replica A
  await c.click("#tree button[data-path='/news']");
  await c.click("#tree button[data-path='/news/shared']");
  await c.waitForFunction(() => document.querySelector("#f-title")?.value === "Shared: B's title", null, { timeout: 10000 });
  await c.fill("#f-title", "Shared: the demo's title");
  await c.click("#save");
  await c.waitForFunction(() => document.querySelector("#sync-pending")?.textContent === "1 write waiting", null, { timeout: 10000 });
  eq((await local(a, "PATCH", "/news/shared", { title: "Shared: A again" })).status, 204, "A edits again");
  st = await sync(a);
  eq(st.pending, 0, "A syncs before the demo");
  await c.click("#sync-offline"); // back online: syncs
  try {
    await c.waitForSelector("#conflicts:not([hidden]) .conflict", { timeout: 15000 });
  } catch (e) {
    await c.screenshot({ path: join(artifacts, "sync-demo-failure.png"), fullPage: true });
    console.log("demo state:", await c.textContent("#sync"), "| error:", await c.textContent("#error"));
    console.log("demo replica:", JSON.stringify(await c.evaluate(() => [window.site?.syncStatus(), window.site?.pendingWrites()])));
    throw e;
  }
  const row = await c.$$eval("#conflicts .conflict-fields tr", (trs) =>
    trs.map((tr) => [...tr.children].map((td) => td.textContent)).find((r) => r[0] === "title"),
  );
  eq(row.slice(0, 3), ["title", "Shared: the demo's title", "Shared: A again"], "the demo's conflict row");
  await c.screenshot({ path: join(artifacts, "sync-conflict.png"), fullPage: true });
  await c.click("#conflicts .keep-mine");
  await c.waitForSelector("#conflicts[hidden]", { state: "attached", timeout: 15000 });
  await c.waitForFunction(() => document.querySelector("#sync-pending")?.textContent === "0 writes waiting", null, { timeout: 15000 });
  eq((await api("GET", "/news/shared")).json.title, "Shared: the demo's title", "server after the demo's keep mine");
  step("web demo: connect form, online indicator, writes waiting, conflicts panel, keep mine");

  // 6. two tabs of one replica: two pages of ONE browser context share its IndexedDB database
  await ctxC.close(); // the demo above syncs every 5 s: its requests must not mix with these
  for (const title of ["Tab one", "Tab two", "Tab three"])
    eq((await api("POST", "/news", { "@type": "Page", title })).status, 201, `create ${title}`);
  const historyLength = async (path) => (await api("GET", `${path}/@history`)).json.length;
  const ctxT = await browser.newContext();
  const t1 = await openReplica(ctxT, "replica-tabs");
  const t2 = await openReplica(ctxT, "replica-tabs");
  const before = { one: await historyLength("/news/tab-one"), two: await historyLength("/news/tab-two") };
  // (a) a write in each tab, then both tabs start a round at once; the server's answers wait
  // until one of the two calls has come back (the skipped one needs no answer), so the round
  // that took the lock is still running when the other one asks for it
  eq((await local(t1, "PATCH", "/news/tab-one", { title: "Tab one, from tab 1" })).status, 204, "tab 1 writes");
  eq((await local(t2, "PATCH", "/news/tab-two", { title: "Tab two, from tab 2" })).status, 204, "tab 2 writes");
  eq((await t2.evaluate(() => window.site.syncStatus())).pending, 2, "two writes wait in the shared replica (tab 2 caught up with tab 1 before writing)");
  // both tabs' rounds at once, the server's answers held back until one of them came back (or
  // `wait` ms passed): the statuses and the requests that went out
  const raceRounds = async (p1, p2, wait) => {
    let openGate;
    proxyGate = new Promise((res) => (openGate = res));
    proxyLog = [];
    const rounds = [sync(p1), sync(p2)];
    const firstBack = await Promise.race([...rounds, new Promise((res) => setTimeout(() => res(null), wait))]);
    proxyGate = null;
    openGate();
    if (firstBack === null) console.log("sync-e2e: neither round came back while the server's answers waited (both are running)");
    const both = await Promise.all(rounds);
    const sent = proxyLog;
    proxyLog = null;
    return { both, sent };
  };
  const { both, sent } = await raceRounds(t1, t2, 10000);
  eq(both.map((st) => st.skipped).sort(), [false, true], "one round runs, the other is skipped");
  const ran = both.find((st) => !st.skipped);
  eq([ran.pending, ran.conflicts, ran.online], [0, 0, true], "the round that ran sent both writes");
  eq(sent.filter((r) => r === "PATCH /news/tab-one").length, 1, "tab 1's write went to the server once");
  eq(sent.filter((r) => r === "PATCH /news/tab-two").length, 1, "tab 2's write went to the server once");
  eq((await api("GET", "/news/tab-one")).json.title, "Tab one, from tab 1", "server: tab 1's write");
  eq((await api("GET", "/news/tab-two")).json.title, "Tab two, from tab 2", "server: tab 2's write");
  eq(await historyLength("/news/tab-one"), before.one + 1, "one new version of tab one on the server");
  eq(await historyLength("/news/tab-two"), before.two + 1, "one new version of tab two on the server");
  const skippedTab = both[0].skipped ? t1 : t2;
  st = await sync(skippedTab);
  eq([st.skipped, st.pending, st.conflicts], [false, 0, 0], "the skipped tab's next round runs, nothing left");
  step(`two tabs: one round ran (${sent.length} requests), the other was skipped; each write reached the server once`);

  // (c) "work offline" in tab 1 holds back tab 2's rounds
  await t1.evaluate(() => window.site.setOnline(false));
  eq((await local(t2, "PATCH", "/news/tab-three", { title: "Tab three, held" })).status, 204, "tab 2 writes");
  proxyLog = [];
  st = await sync(t2);
  const heldSent = proxyLog;
  proxyLog = null;
  eq([st.held, st.online, st.pending], [true, false, 1], "tab 2 is held by tab 1's work offline");
  eq(heldSent, [], "tab 2 sent nothing while held");
  eq((await api("GET", "/news/tab-three")).json.title, "Tab three", "server: unchanged while held");
  await t1.evaluate(() => window.site.setOnline(true));
  st = await sync(t2);
  eq([st.held, st.pending], [false, 0], "tab 2 after tab 1 goes back online");
  eq((await api("GET", "/news/tab-three")).json.title, "Tab three, held", "server: the held write, once allowed");
  step("two tabs: work offline in one tab holds back the other's rounds");

  // (d) where the browser has no Web Locks, both rounds run (as before); the idempotency key of
  // each write keeps the one sent by both tabs from running twice on the server
  const ctxN = await browser.newContext();
  await ctxN.addInitScript(() => Object.defineProperty(Navigator.prototype, "locks", { value: undefined }));
  const n1 = await openReplica(ctxN, "replica-no-locks");
  const n2 = await openReplica(ctxN, "replica-no-locks");
  eq(await n1.evaluate(() => navigator.locks), undefined, "no navigator.locks in this context");
  const beforeN = await historyLength("/news/tab-two");
  eq((await local(n1, "PATCH", "/news/tab-two", { title: "Tab two, without Web Locks" })).status, 204, "a write");
  const unlocked = await raceRounds(n1, n2, 2000);
  eq(unlocked.both.map((st) => [st.skipped, st.pending, st.conflicts]), [[false, 0, 0], [false, 0, 0]], "without Web Locks both rounds run");
  eq((await api("GET", "/news/tab-two")).json.title, "Tab two, without Web Locks", "server: the write");
  eq(await historyLength("/news/tab-two"), beforeN + 1, "server: the write ran once");
  const patches = unlocked.sent.filter((r) => r === "PATCH /news/tab-two").length;
  step(`no Web Locks: both rounds ran, the write was sent ${patches} time(s) and ran once on the server`);
  await ctxN.close();

  // (b) the demo in two tabs on one replica: both show the same page; tab A saves a title; tab B,
  // still showing the version it loaded, saves another title: refused (412, shown), nothing of it
  // reaches the server, which keeps A's title
  const ctxD = await browser.newContext();
  const demoTab = async () => {
    const p = await ctxD.newPage();
    p.on("pageerror", (e) => console.log("pageerror (demo tab):", e.message));
    return p;
  };
  const da = await demoTab();
  await da.goto(`${origin}/?nosw`);
  await da.waitForSelector("body[data-ready='1']", { timeout: 30000 });
  await da.click("#connect summary");
  await da.fill("#connect-server", serverUrl);
  await da.fill("#connect-login", "admin");
  await da.fill("#connect-password", PASSWORD);
  await da.click("#connect-form button[type=submit]");
  await da.waitForURL(/server=/);
  await da.waitForSelector("body[data-ready='1']", { timeout: 30000 });
  await da.waitForFunction(() => document.querySelector("#sync-online")?.textContent === "online", null, { timeout: 15000 });
  const db = await demoTab(); // the same replica, opened from its stored token (no password in this tab)
  await db.goto(da.url());
  await db.waitForSelector("body[data-ready='1']", { timeout: 30000 });
  const stale = "/news/tab-one";
  const beforeStale = await historyLength(stale);
  for (const p of [da, db]) {
    await p.click("#tree button[data-path='/news']");
    await p.click(`#tree button[data-path='${stale}']`);
    await p.waitForFunction(() => document.querySelector("#f-title")?.value === "Tab one, from tab 1", null, { timeout: 10000 });
  }
  await da.fill("#f-title", "Tab one: A's title");
  await da.click("#save");
  await da.waitForFunction(() => document.querySelector("#saved")?.textContent === "Saved.", null, { timeout: 10000 });
  await db.fill("#f-title", "Tab one: B's stale title");
  await db.click("#save");
  await db.waitForFunction(() => !document.querySelector("#error").hidden, null, { timeout: 10000 }).catch(async () => {
    const server = (await api("GET", stale)).json.title;
    fail(`the stale tab's save was not refused (no error shown; the server's title: ${JSON.stringify(server)})`);
  });
  const shownError = await db.textContent("#error");
  if (!shownError.includes("(412)")) fail(`the stale tab's save: expected a 412 shown, got ${JSON.stringify(shownError)}`);
  await db.screenshot({ path: join(artifacts, "sync-stale-tab.png"), fullPage: true });
  // the demo syncs on its own (after a write, every 5 s): wait until nothing is left to send
  // (the tabs share the pending writes; whichever tab's round runs sends them)
  await da.waitForFunction(() => window.site.syncStatus().pending === 0, null, { timeout: 20000, polling: 250 }).catch(async (e) => {
    console.log("demo tab:", JSON.stringify(await da.evaluate(() => [window.site.syncStatus(), window.site.pendingWrites()])));
    throw e;
  });
  eq((await api("GET", stale)).json.title, "Tab one: A's title", "server: A's title kept");
  eq(await historyLength(stale), beforeStale + 1, "server: one new version (A's), none from the stale tab");
  eq((await local(db, "GET", stale)).json.title, "Tab one: A's title", "the stale tab's replica holds A's title");
  eq((await db.evaluate(() => window.site.conflicts())).length, 0, "no conflict left to resolve");
  step("two demo tabs: the stale tab's save is refused (412 shown), the server keeps A's title");
  ok = true;
} finally {
  if (browser) await browser.close().catch(() => {});
  if (server) await stopServer().catch(() => {});
  proxy.close();
  rmSync(data, { recursive: true, force: true });
}
console.log(ok ? "sync-e2e: PASS" : "sync-e2e: FAIL");
process.exit(ok ? 0 : 1);
