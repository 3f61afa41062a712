// An editor's day in Volto (the Plone front end) against host-server, through Volto's UI only:
// playwright-core drives Debian's /usr/bin/chromium. Fixtures are made through the REST API; the
// steps themselves only click and type. A screenshot per step goes to $VOLTO_ARTIFACTS (default
// artifacts/volto/). The first failing step fails the run (exit 1); the steps after it are listed as
// not run. No step is retried.
//
//   node tests/volto/editor-day.mjs <volto URL> <backend URL>
// with ADMIN_PASSWORD set to the backend's admin password. scripts/volto-e2e.sh starts both.
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const [volto, backend] = process.argv.slice(2);
if (!volto || !backend || !process.env.ADMIN_PASSWORD) {
  console.error("usage: ADMIN_PASSWORD=... node editor-day.mjs <volto URL> <backend URL>");
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const artifacts = process.env.VOLTO_ARTIFACTS || join(here, "..", "..", "artifacts", "volto");
mkdirSync(artifacts, { recursive: true });
const admin = { login: "admin", password: process.env.ADMIN_PASSWORD };
const SITE_TITLE = "Harbour Town Council";

// ---- fixtures, through the REST API -------------------------------------------------------------

async function api(method, path, body, auth = admin) {
  const headers = { Accept: "application/json" };
  if (auth) {
    headers.Authorization = "Basic " + Buffer.from(`${auth.login}:${auth.password}`).toString("base64");
  }
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(backend + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`fixture ${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

async function fixtures() {
  await api("PATCH", "/", { title: SITE_TITLE });
  await api("POST", "/", { "@type": "Folder", id: "news", title: "News" });
  await api("POST", "/news/@workflow/publish", {});
  await api("POST", "/news", {
    "@type": "Page", id: "harbour-opens", title: "The harbour opens", description: "Boats welcome from May.",
    // What Volto's add form creates: a title block and a text (slate) block.
    blocks: {
      "b-title": { "@type": "title" },
      "b-text": { "@type": "slate", plaintext: "The new quay is ready.",
                  value: [{ type: "p", children: [{ text: "The new quay is ready." }] }] },
    },
    blocks_layout: { items: ["b-title", "b-text"] },
  });
  await api("POST", "/news/harbour-opens/@workflow/publish", {});
}

// ---- steps --------------------------------------------------------------------------------------

const steps = [];
const step = (name, fn) => steps.push({ name, fn });

const settle = (page) => page.waitForLoadState("networkidle", { timeout: 30000 });

step("anonymous home: the site title and the logo", async (page) => {
  await page.goto(volto + "/");
  await settle(page);
  const title = await page.title();
  if (!title.includes(SITE_TITLE)) throw new Error(`page title is '${title}', expected it to name '${SITE_TITLE}'`);
  await page.locator(".logo img").first().waitFor({ state: "visible", timeout: 10000 });
  if (await page.locator("body.has-toolbar").count()) throw new Error("an anonymous visitor sees the toolbar");
});

step("navigation and breadcrumbs", async (page) => {
  await page.locator(".navigation a", { hasText: "News" }).first().click();
  await page.waitForURL(/\/news$/);
  await settle(page);
  await page.locator(".breadcrumbs", { hasText: "News" }).waitFor({ timeout: 10000 });
  await page.locator("a", { hasText: "The harbour opens" }).first().click();
  await page.waitForURL(/\/news\/harbour-opens$/);
  await page.locator("h1.documentFirstHeading", { hasText: "The harbour opens" }).waitFor({ timeout: 10000 });
  await page.locator("p", { hasText: "The new quay is ready." }).first().waitFor({ timeout: 10000 });
});

step("log in", async (page) => {
  await page.goto(volto + "/login");
  await settle(page);
  await page.fill("#login", admin.login);
  await page.fill("#password", admin.password);
  await page.click("#login-form-submit");
  await page.locator("body.has-toolbar").waitFor({ timeout: 15000 });
  await settle(page);
});

step("the toolbar: Edit, Contents, Add and More", async (page) => {
  await page.goto(volto + "/news");
  await settle(page);
  for (const sel of ["#toolbar a.edit", "#toolbar a[aria-label=\"Contents\"]", "#toolbar #toolbar-add", "#toolbar #toolbar-more"]) {
    await page.locator(sel).first().waitFor({ state: "visible", timeout: 10000 })
      .catch(() => { throw new Error(`the toolbar has no '${sel}'`); });
  }
});

step("add a Page with a title and text", async (page) => {
  await page.goto(volto + "/news");
  await settle(page);
  await page.click("#toolbar-add");
  await page.click("#toolbar-add-page");
  await page.waitForURL(/\/news\/add\?type=Page$/);
  await settle(page);
  const title = page.locator(".block.title [contenteditable=true]").first();
  await title.click();
  await title.type("Ferry timetable");
  // The new page's text block (the schema's default blocks: a title and an empty text block).
  const text = page.locator(".block-editor-slate [contenteditable=true]").first();
  await text.click();
  await text.type("Boats leave every hour.");
  await page.click("#toolbar-save");
  await page.waitForURL(/\/news\/ferry-timetable$/, { timeout: 15000 });
  await page.locator("h1.documentFirstHeading", { hasText: "Ferry timetable" }).waitFor({ timeout: 10000 });
  await page.locator("p", { hasText: "Boats leave every hour." }).first().waitFor({ timeout: 10000 });
});

step("folder contents lists the folder's items", async (page) => {
  await page.goto(volto + "/news/contents");
  await settle(page);
  const table = page.locator("#content-core table");
  await table.locator("a", { hasText: "The harbour opens" }).first().waitFor({ timeout: 10000 });
  await table.locator("a", { hasText: "Ferry timetable" }).first().waitFor({ timeout: 10000 });
});

step("the search page finds a page by a word of its text", async (page) => {
  await page.goto(volto + "/search?SearchableText=quay");
  await settle(page);
  await page.locator(".summary.url", { hasText: "The harbour opens" }).first().waitFor({ timeout: 10000 });
  const found = await page.locator(".summary.url").count();
  if (found !== 1) throw new Error(`the search for 'quay' shows ${found} results, expected 1`);
});

step("the history view of a page", async (page) => {
  await page.goto(volto + "/news/ferry-timetable");
  await settle(page);
  await page.click("#toolbar-more");
  await page.locator('.menu-more a[href*="/historyview"]').click();
  await page.waitForURL(/\/news\/ferry-timetable\/historyview$/);
  await page.locator("text=History of").first().waitFor({ timeout: 10000 });
});

step("the sharing view of a folder", async (page) => {
  await page.goto(volto + "/news");
  await settle(page);
  await page.click("#toolbar-more");
  await page.locator('.menu-more a[href*="/sharing"]').click();
  await page.waitForURL(/\/news\/sharing$/);
  await page.locator("text=Sharing for").first().waitFor({ timeout: 10000 });
});

step("log out", async (page) => {
  await page.goto(volto + "/news");
  await settle(page);
  await page.click("#toolbar-personal");
  await page.click("#toolbar-logout");
  await page.waitForFunction(() => !document.body.classList.contains("has-toolbar"), null, { timeout: 15000 });
  const cookies = await page.context().cookies();
  if (cookies.some((c) => c.name === "auth_token")) throw new Error("the auth_token cookie is still set after logout");
});

// ---- run ----------------------------------------------------------------------------------------

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"],
});
let failed = null;
let n = 0;
try {
  await fixtures();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  // Every API answer of 400 or more is printed (request body and answer), so a failing step shows
  // what the server refused.
  page.on("response", async (res) => {
    if (res.status() < 400 || !res.url().includes("/++api++")) return;
    const req = res.request();
    const body = await res.text().catch(() => "");
    console.log(`volto-e2e: api ${req.method()} ${res.url()} -> ${res.status()} ${body.slice(0, 300)}`);
    if (req.postData()) console.log(`volto-e2e:   request body: ${req.postData().slice(0, 600)}`);
  });
  for (const s of steps) {
    n += 1;
    const shot = join(artifacts, `${String(n).padStart(2, "0")}-${s.name.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}.png`);
    const t0 = Date.now();
    try {
      await s.fn(page);
      await page.screenshot({ path: shot });
      console.log(`volto-e2e: ok   ${n}. ${s.name} (${Date.now() - t0} ms) ${shot}`);
    } catch (e) {
      await page.screenshot({ path: shot }).catch(() => {});
      console.log(`volto-e2e: FAIL ${n}. ${s.name}: ${e.message.split("\n")[0]} ${shot}`);
      if (pageErrors.length) console.log(`volto-e2e: page errors: ${pageErrors.join(" | ")}`);
      failed = s.name;
      break;
    }
  }
} catch (e) {
  console.log(`volto-e2e: FAIL setup: ${e.message}`);
  failed = "setup";
} finally {
  await browser.close();
}
for (const s of steps.slice(n)) console.log(`volto-e2e: not run: ${s.name}`);
console.log(`volto-e2e: ${failed ? n - 1 : n} of ${steps.length} steps passed`);
process.exit(failed ? 1 : 0);
