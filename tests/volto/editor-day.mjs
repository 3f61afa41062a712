// An editor's day in Volto (the Plone front end) against host-server, through Volto's UI only:
// playwright-core drives Debian's /usr/bin/chromium. Fixtures are made through the REST API; the
// steps themselves only click and type. A screenshot per step goes to $VOLTO_ARTIFACTS (default
// artifacts/volto/). The first failing step fails the run (exit 1); the steps after it are listed as
// not run. No step is retried.
//
//   node tests/volto/editor-day.mjs <volto URL> <backend URL>
// with ADMIN_PASSWORD set to the backend's admin password. scripts/volto-e2e.sh starts both.
import { mkdirSync } from "node:fs";
import { deflateSync } from "node:zlib";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { launchChromium, runSteps, summary } from "./steps.mjs";

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

// A small RGB PNG (a gradient) made here, so the test needs no binary file in the repository.
function makePng(width, height) {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([len, body, sum]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const rows = [];
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 3);
    for (let x = 0; x < width; x++) row.set([(20 + x * 2) % 256, (80 + y * 2) % 256, 160], 1 + x * 3);
    rows.push(row);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(Buffer.concat(rows))),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

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

// What Volto's add form gives a folder that lists its items: a title block and a listing block.
const listingBlocks = {
  blocks: { "b-title": { "@type": "title" }, "b-list": { "@type": "listing", querystring: {} } },
  blocks_layout: { items: ["b-title", "b-list"] },
};

async function fixtures() {
  await api("PATCH", "/", { title: SITE_TITLE });
  // Comments are off by default (as in Plone); the comments step needs them on.
  await api("PATCH", "/@controlpanels/discussion", { globally_enabled: true });
  await api("POST", "/", { "@type": "Folder", id: "news", title: "News", ...listingBlocks });
  await api("POST", "/news/@workflow/publish", {});
  await api("POST", "/news", {
    "@type": "Page", id: "harbour-opens", title: "The harbour opens", description: "Boats welcome from May.",
    allow_discussion: true,
    // What Volto's add form creates: a title block and a text (slate) block.
    blocks: {
      "b-title": { "@type": "title" },
      "b-text": { "@type": "slate", plaintext: "The new quay is ready.",
                  value: [{ type: "p", children: [{ text: "The new quay is ready." }] }] },
    },
    blocks_layout: { items: ["b-title", "b-text"] },
  });
  await api("POST", "/news/harbour-opens/@workflow/publish", {});
  // An archive for the folder contents step: three pages, a sub-folder to paste into, and a page
  // elsewhere that links to one of them (the delete confirmation must name it).
  await api("POST", "/", { "@type": "Folder", id: "archive", title: "Archive", ...listingBlocks });
  await api("POST", "/archive", { "@type": "Folder", id: "past", title: "Past years" });
  for (const [id, title] of [["minutes-2024", "Minutes 2024"], ["minutes-2025", "Minutes 2025"], ["old-notice", "Old notice"]]) {
    await api("POST", "/archive", { "@type": "Page", id, title });
  }
  await api("POST", "/", {
    "@type": "Page", id: "notice-board", title: "Notice board",
    blocks: {
      "b-title": { "@type": "title" },
      "b-link": { "@type": "slate", plaintext: "See the old notice.",
                  value: [{ type: "p", children: [{ text: "See the " },
                    { type: "link", data: { url: "/archive/old-notice" }, children: [{ text: "old notice" }] },
                    { text: "." }] }] },
    },
    blocks_layout: { items: ["b-title", "b-link"] },
  });
  // For the date sort: two published notices with effective dates and a draft without one (Plone
  // sorts a missing date as the floor, so newest first it comes last).
  await api("POST", "/", { "@type": "Folder", id: "notices", title: "Notices" });
  for (const [id, title, effective] of [
    ["lighthouse-repairs", "Lighthouse repairs", "2025-03-01T09:00:00+00:00"],
    ["lighthouse-reopens", "Lighthouse reopens", "2026-01-15T09:00:00+00:00"],
    ["lighthouse-history", "Lighthouse history", null],
  ]) {
    await api("POST", "/notices", { "@type": "Page", id, title, ...(effective ? { effective } : {}) });
    if (effective) await api("POST", `/notices/${id}/@workflow/publish`, { effective });
  }
  // For the Relations panel: a page whose related items name the harbour page.
  fx.harbourUid = (await api("GET", "/news/harbour-opens")).UID;
  fx.ferryUid = (await api("POST", "/", {
    "@type": "Page", id: "ferry-timetable", title: "Ferry timetable", relatedItems: [fx.harbourUid],
    blocks: { "b-title": { "@type": "title" } }, blocks_layout: { items: ["b-title"] },
  })).UID;
}

// What the fixtures made that steps need (UIDs).
const fx = {};

// ---- steps --------------------------------------------------------------------------------------

const steps = [];
const step = (name, fn) => steps.push({ name, fn });

const settle = (page) => page.waitForLoadState("networkidle", { timeout: 30000 });
const JANE = { login: "jane", password: "harbour-master-2027", fullname: "Jane Quay" };

// Open `path` in Volto and wait until it has settled.
async function open(page, path) {
  await page.goto(volto + path);
  await settle(page);
}

// Wait for `locator` to be visible, failing with `what` if it does not come.
async function see(locator, what, timeout = 10000) {
  await locator.first().waitFor({ state: "visible", timeout }).catch(() => { throw new Error(`not shown: ${what}`); });
}

// Log in through Volto's login form.
async function logIn(page, who) {
  await open(page, "/login");
  await page.fill("#login", who.login);
  await page.fill("#password", who.password);
  await page.click("#login-form-submit");
  await page.locator("body.has-toolbar").waitFor({ timeout: 15000 });
  await settle(page);
}

// Log out through the personal toolbar.
async function logOut(page) {
  await open(page, "/");
  await page.click("#toolbar-personal");
  await page.click("#toolbar-logout");
  // Volto drops its token when @logout answers, removing the auth_token cookie in the same store
  // update, and then shows its "logged out" message. The toolbar alone is no sign: it can go while
  // the route changes, before @logout has answered (and after a client-side route change
  // `settle` does not wait for the request).
  await see(page.getByText("You have been logged out from the site."), "Volto's 'logged out' message", 15000);
  await waitFor(async () => !(await page.context().cookies()).some((c) => c.name === "auth_token"),
    "the auth_token cookie to go after logout");
  await page.waitForFunction(() => !document.body.classList.contains("has-toolbar"), null, { timeout: 15000 });
  await settle(page);
}

// Poll `check` until it holds, failing with `what` after `timeout` ms.
async function waitFor(check, what, timeout = 10000) {
  const end = Date.now() + timeout;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`waited ${timeout} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// The description Volto shows for the current page (its title block renders no description; Volto
// puts it into the page's <meta name="description">).
async function expectDescription(page, text) {
  const got = await page.locator('meta[name="description"]').first().getAttribute("content").catch(() => null);
  if (got !== text) throw new Error(`the page's description is '${got}', expected '${text}'`);
}

// From the page at `path`, through the toolbar's Edit: append `suffix` to the title in the
// title block, save, and wait for the view.
async function appendToTitle(page, path, suffix) {
  await page.click("#toolbar a.edit");
  await page.waitForURL(new RegExp(`${path}/edit$`));
  await settle(page);
  const title = page.locator(".block.title [contenteditable=true]").first();
  await title.click();
  await page.keyboard.press("End");
  await title.type(suffix);
  await page.click("#toolbar-save");
  await page.waitForURL(new RegExp(`${path}$`), { timeout: 15000 });
}

// Tick the row of `path` in the folder contents table.
async function tick(page, path) {
  await page.locator(`tr[aria-label="${path}"] > :nth-child(2)`).click();
}

step("anonymous home: the site title and the logo", async (page) => {
  await open(page, "/");
  const title = await page.title();
  if (!title.includes(SITE_TITLE)) throw new Error(`page title is '${title}', expected it to name '${SITE_TITLE}'`);
  await see(page.locator(".logo img"), "the logo");
  if (await page.locator("body.has-toolbar").count()) throw new Error("an anonymous visitor sees the toolbar");
});

step("navigation and breadcrumbs", async (page) => {
  await page.locator(".navigation a", { hasText: "News" }).first().click();
  await page.waitForURL(/\/news$/);
  await settle(page);
  await see(page.locator(".breadcrumbs", { hasText: "News" }), "the breadcrumbs");
  await page.locator("a", { hasText: "The harbour opens" }).first().click();
  await page.waitForURL(/\/news\/harbour-opens$/);
  await see(page.locator("h1.documentFirstHeading", { hasText: "The harbour opens" }), "the page heading");
  await see(page.locator("p", { hasText: "The new quay is ready." }), "the page text");
  if (await page.locator(".navigation a", { hasText: "Archive" }).count()) throw new Error("anonymous sees the private folder Archive in the navigation");
});

step("log in", async (page) => {
  await logIn(page, admin);
});

step("the toolbar: Edit, Contents, Add and More", async (page) => {
  await open(page, "/news");
  for (const sel of ["#toolbar a.edit", "#toolbar a[aria-label=\"Contents\"]", "#toolbar #toolbar-add", "#toolbar #toolbar-more"]) {
    await see(page.locator(sel), `the toolbar's '${sel}'`);
  }
});

step("site setup: add a user", async (page) => {
  await open(page, "/controlpanel");
  await see(page.locator("a[href='/controlpanel/users']"), "the Users link in site setup");
  await open(page, "/controlpanel/users");
  await page.click("#toolbar-add");
  await page.fill("#field-username", JANE.login);
  await page.fill("#field-fullname", JANE.fullname);
  await page.fill("#field-email", "jane@harbour.example");
  await page.fill("#field-password", JANE.password);
  await page.locator('.modal button[title="Save"]').click({ force: true });
  await settle(page);
  await see(page.locator(".fullname", { hasText: `${JANE.fullname} (${JANE.login})` }), "the new user in the users list");
});

step("site setup: add a group and make the user a member", async (page) => {
  await open(page, "/controlpanel/groups");
  await page.click("#toolbar-add");
  await page.fill("#field-title", "Harbour editors");
  await page.fill("#field-description", "They keep the team pages.");
  await page.fill("#field-groupname", "harbour-editors");
  await page.fill("#field-email", "editors@harbour.example");
  await page.locator('.modal button[title="Save"]').click({ force: true });
  await settle(page);
  await see(page.locator("text=harbour-editors"), "the new group in the groups list");
  await open(page, "/controlpanel/usergroupmembership");
  const box = page.locator(`#source-row-${JANE.login} div.checkbox_harbour-editors input`);
  await box.first().waitFor({ state: "attached", timeout: 10000 }).catch(() => { throw new Error("no membership checkbox for jane in harbour-editors"); });
  // A Semantic UI checkbox: its input is hidden, the click goes to its box; Volto PATCHes the group.
  const patched = page.waitForResponse((r) => r.request().method() === "PATCH" && r.url().includes("/@groups/harbour-editors"));
  await page.locator(`#source-row-${JANE.login} div.checkbox_harbour-editors`).first().click();
  const res = await patched;
  if (!res.ok()) throw new Error(`the membership PATCH answered ${res.status()}`);
  await settle(page);
  await page.reload();
  await settle(page);
  if (!(await page.locator(`#source-row-${JANE.login} div.checkbox_harbour-editors input`).first().isChecked())) {
    throw new Error("the membership did not stay after a reload");
  }
});

step("site setup: the content types panel", async (page) => {
  await open(page, "/controlpanel/dexterity-types");
  for (const t of ["Page", "Folder", "News Item", "Event"]) {
    await see(page.locator(`a[href="/controlpanel/dexterity-types/${t.replace(" ", "%20")}"], a[href="/controlpanel/dexterity-types/${t}"]`), `the type ${t} in the types panel`);
  }
  await page.locator(`a[href="/controlpanel/dexterity-types/Page"]`).first().click();
  await settle(page);
  await see(page.locator("#field-title"), "the Page type's settings form");
});
step("site setup: every panel Volto lists opens without an error", async (page) => {
  await open(page, "/controlpanel");
  const hrefs = [...new Set(await page.locator('.controlpanel a[href^="/controlpanel/"]').evaluateAll(
    (as) => as.map((a) => a.getAttribute("href"))))];
  if (hrefs.length < 15) throw new Error(`site setup lists only ${hrefs.length} panels`);
  const errors = [];
  const visited = [];
  const onError = (e) => errors.push(e.message);
  const onResponse = (r) => {
    if (r.status() >= 400 && r.url().includes("/++api++")) errors.push(`${r.request().method()} ${r.url()} answered ${r.status()}`);
  };
  page.on("pageerror", onError);
  page.on("response", onResponse);
  try {
    for (const href of hrefs) {
      errors.length = 0;
      await open(page, href);
      const broken = await page.locator("text=Sorry, something went wrong").count();
      if (broken || errors.length) throw new Error(`the panel ${href} fails: ${errors.join(" | ") || "Volto's error page"}`);
      visited.push(href);
    }
  } finally {
    page.off("pageerror", onError);
    page.off("response", onResponse);
  }
  console.log(`volto-e2e:      ${visited.length} panels work: ${visited.join(" ")}`);
});

step("add a Folder with a title and a description", async (page) => {
  await open(page, "/");
  await page.click("#toolbar-add");
  await page.click("#toolbar-add-folder");
  await page.waitForURL(/\/add\?type=Folder$/);
  await settle(page);
  const title = page.locator(".block.title [contenteditable=true]").first();
  await title.click();
  await title.type("Team");
  await page.fill("textarea#field-description", "Pages the harbour team keeps.");
  await page.click("#toolbar-save");
  await page.waitForURL(/\/team$/, { timeout: 15000 });
  await see(page.locator("h1.documentFirstHeading", { hasText: "Team" }), "the folder's heading");
  await expectDescription(page, "Pages the harbour team keeps.");
});

step("add a Page with a title, description, text and a link to another page", async (page) => {
  await open(page, "/team");
  await page.click("#toolbar-add");
  await page.click("#toolbar-add-page");
  await page.waitForURL(/\/team\/add\?type=Page$/);
  await settle(page);
  const title = page.locator(".block.title [contenteditable=true]").first();
  await title.click();
  await title.type("Duty roster");
  await page.fill("textarea#field-description", "Who keeps watch, and when.");
  const text = page.locator(".block-editor-slate [contenteditable=true]").first();
  await text.click();
  await text.type("Read the harbour news");
  await see(text.locator("text=Read the harbour news"), "the typed text in the editor");
  // Select the sentence (a triple click selects the paragraph) and make it a link to another page
  // through slate's hovering toolbar.
  await text.click({ clickCount: 3 });
  // Then pause as a person does. Volto's slate editor records a selection 200 ms after the last
  // selection change (SlateEditor's onSelect) and inserts a link only at a recorded selection; a
  // script that selects, opens the link form and presses Enter within those 200 ms (on a loaded
  // machine the timer fires later still) gets no link, and no error either.
  await page.waitForTimeout(1000);
  const addLink = page.locator('.slate-inline-toolbar a[title="Add link"]').first();
  await see(addLink, "slate's toolbar with 'Add link' over the selected text");
  await addLink.click();
  const url = page.locator(".slate-toolbar .link-form-container input").first();
  await see(url, "the link form");
  // One input event with the whole address, as a paste gives: typed key by key, the controlled
  // input re-renders between keys (Volto turns the address into a site path once the host is
  // complete), and on a loaded machine keys got lost. Enter only once Volto shows the site path.
  await url.fill(`${volto}/news/harbour-opens`);
  await page.waitForFunction((el) => el.value === "/news/harbour-opens", await url.elementHandle(), { timeout: 10000 })
    .catch(async () => { throw new Error(`the link form holds '${await url.inputValue()}', expected '/news/harbour-opens'`); });
  await url.press("Enter");
  await see(page.locator(".block-editor-slate a.slate-editor-link"), "the link in the editor");
  await page.click("#toolbar-save");
  await page.waitForURL(/\/team\/duty-roster$/, { timeout: 15000 });
  await see(page.locator("h1.documentFirstHeading", { hasText: "Duty roster" }), "the page heading");
  await expectDescription(page, "Who keeps watch, and when.");
  const link = page.locator("#page-document a", { hasText: "Read the harbour news" }).first();
  await see(link, "the link in the page");
  const href = await link.getAttribute("href");
  if (!href || !href.endsWith("/news/harbour-opens")) throw new Error(`the link points at '${href}'`);
  await link.click();
  await page.waitForURL(/\/news\/harbour-opens$/);
  await see(page.locator("h1.documentFirstHeading", { hasText: "The harbour opens" }), "the linked page");
});

step("edit a page and save", async (page) => {
  await open(page, "/team/duty-roster");
  await appendToTitle(page, "/team/duty-roster", " for the summer");
  await see(page.locator("h1.documentFirstHeading", { hasText: "Duty roster for the summer" }), "the edited heading");
});

step("history: a diff between versions, then a revert", async (page) => {
  await open(page, "/team/duty-roster");
  await page.click("#toolbar-more");
  await page.locator('.menu-more a[href*="/historyview"]').click();
  await page.waitForURL(/\/team\/duty-roster\/historyview$/);
  await settle(page);
  await see(page.locator("text=History of"), "the history view");
  // The newest version's "What" links to the diff between it and the one before.
  await page.locator('#page-history a.item[href*="/diff?one=0&two=1"]').first().click();
  await page.waitForURL(/\/diff\?one=0&two=1$/);
  await settle(page);
  await see(page.locator("#page-diff"), "the diff view");
  await see(page.locator("#page-diff", { hasText: "for the summer" }), "the changed title in the diff");
  // Back to the history: revert to the first version.
  await open(page, "/team/duty-roster/historyview");
  const rows = page.locator("#page-history tbody tr");
  const first = rows.filter({ has: page.locator("td:first-child", { hasText: /^0$/ }) });
  await first.locator(".ui.dropdown").first().click();
  await first.locator(".item", { hasText: "Revert to this revision" }).first().click();
  await settle(page);
  await open(page, "/team/duty-roster");
  await see(page.locator("h1.documentFirstHeading", { hasText: /^Duty roster$/ }), "the reverted heading");
});

step("the state menu: submit, publish, retract", async (page) => {
  await open(page, "/team/duty-roster");
  await page.click("#toolbar-more");
  const menu = page.locator(".menu-more");
  await see(menu.locator(".react-select__single-value", { hasText: "Private" }), "the state Private in the menu");
  for (const [transition, state] of [["Submit for publication", "Pending review"], ["Publish", "Published"], ["Retract", "Private"]]) {
    await menu.locator(".react-select__control").first().click();
    const done = page.waitForResponse((r) => r.request().method() === "POST" && r.url().includes("/@workflow/"));
    await page.locator(".react-select__option", { hasText: transition }).first().click();
    const res = await done;
    if (!res.ok()) throw new Error(`'${transition}' answered ${res.status()}`);
    await settle(page);
    await see(menu.locator(".react-select__single-value", { hasText: state }), `the state ${state} after '${transition}'`);
  }
  await page.keyboard.press("Escape");
});

step("folder contents: list, sort, rename, cut and paste, delete with the link warning", async (page) => {
  await open(page, "/archive/contents");
  const table = page.locator("#content-core table");
  for (const t of ["Past years", "Minutes 2024", "Minutes 2025", "Old notice"]) await see(table.locator("a", { hasText: t }), `${t} in the contents`);
  // Sort by title, descending: the folder's order changes (Volto PATCHes the folder with `sort`).
  await page.locator(".icon.configuration-svg").first().click();
  await page.locator(".sort_sortable_title").first().hover();
  await page.locator(".item.sort_sortable_title_descending").first().click();
  await settle(page);
  await see(page.locator("tbody > tr:nth-child(1)", { hasText: "Past years" }), "Past years first after sorting by title, descending");
  await see(page.locator("tbody > tr:nth-child(4)", { hasText: "Minutes 2024" }), "Minutes 2024 last after sorting by title, descending");
  // Rename Minutes 2025.
  await tick(page, "/archive/minutes-2025");
  await page.locator('button[aria-label="Rename"]').first().click();
  await page.fill('input[name="0_title"]', "Minutes 2025 (approved)");
  await page.fill('input[name="0_id"]', "minutes-2025-approved");
  await page.locator('.modal button[title="Save"]').click();
  await settle(page);
  await see(table.locator('a[href^="/archive/minutes-2025-approved"]', { hasText: "Minutes 2025 (approved)" }), "the renamed page");
  // Cut Minutes 2024 and paste it into Past years.
  await tick(page, "/archive/minutes-2024");
  await page.locator('button[aria-label="Cut"]').first().click();
  // Into Past years by its link (the clipboard lives in Volto's state: a page load would lose it).
  await table.locator("a", { hasText: "Past years" }).first().click();
  await page.waitForURL(/\/archive\/past\/contents$/);
  await settle(page);
  await page.locator('button[aria-label="Paste"]').first().click();
  await settle(page);
  await see(page.locator("#content-core table a", { hasText: "Minutes 2024" }), "the pasted page in Past years");
  await open(page, "/archive/contents");
  if (await page.locator("#content-core table a", { hasText: "Minutes 2024" }).count()) throw new Error("Minutes 2024 is still in Archive after the paste");
  // Delete Old notice: the confirmation names the page that links to it.
  await tick(page, "/archive/old-notice");
  await page.locator('button[aria-label="Delete"]').first().click();
  const modal = page.locator(".ui.modal");
  await see(modal, "the delete confirmation");
  await see(modal.locator("a", { hasText: "Notice board" }), "the linking page in the delete confirmation");
  await modal.locator(".ui.primary.button").click();
  await settle(page);
  await page.waitForFunction(() => !document.querySelector('tr[aria-label="/archive/old-notice"]'), null, { timeout: 10000 });
});

step("sharing: give a group the Editor role on a folder", async (page) => {
  await open(page, "/team");
  await page.click("#toolbar-more");
  await page.locator('.menu-more a[href*="/sharing"]').click();
  await page.waitForURL(/\/team\/sharing$/);
  await settle(page);
  await see(page.locator("text=Sharing for"), "the sharing view");
  const search = page.getByPlaceholder(/search for user or group/i);
  await search.fill("harbour");
  await search.press("Enter");
  await settle(page);
  const row = page.locator("tr", { hasText: "Harbour editors" });
  await see(row, "the group in the sharing search results");
  await row.locator('input[value="harbour-editors:Editor"]').first().locator("xpath=..").click();
  await page.getByRole("button", { name: /save/i }).click();
  await settle(page);
  await open(page, "/team/sharing");
  const saved = page.locator("tr", { hasText: "Harbour editors" }).locator('input[value="harbour-editors:Editor"]').first();
  await saved.waitFor({ state: "attached", timeout: 10000 }).catch(() => { throw new Error("the group is not listed after saving"); });
  if (!(await saved.isChecked())) throw new Error("the Editor role of the group is not checked after saving");
});

step("a listing block shows the folder's pages", async (page) => {
  await open(page, "/team/edit");
  const text = page.locator(".block-editor-slate [contenteditable=true]").last();
  await text.click();
  await text.type("/listing");
  await page.keyboard.press("Enter");
  await see(page.locator(".block.listing .listing-body", { hasText: "Duty roster" }), "the folder's page in the listing block (editor)");
  await page.click("#toolbar-save");
  await page.waitForURL(/\/team$/, { timeout: 15000 });
  await see(page.locator("#page-document .listing-body", { hasText: "Duty roster" }), "the folder's page in the listing block");
});

step("an image block with an uploaded image", async (page) => {
  await open(page, "/team/edit");
  const text = page.locator(".block-editor-slate [contenteditable=true]").last();
  await text.click();
  await page.locator(".block-add-button").first().click();
  await page.locator(".blocks-chooser .ui.basic.icon.button.image", { hasText: "Image" }).first().click();
  const created = page.waitForResponse((r) => r.request().method() === "POST" && r.url().endsWith("/++api++/team"));
  await page.locator('.block.image input[type="file"]').first().setInputFiles({
    name: "harbour.png", mimeType: "image/png", buffer: makePng(96, 64),
  });
  const res = await created;
  if (res.status() !== 201) throw new Error(`the upload answered ${res.status()}: ${(await res.text()).slice(0, 200)}`);
  await settle(page);
  await page.click("#toolbar-save");
  await page.waitForURL(/\/team$/, { timeout: 15000 });
  await settle(page);
  const img = page.locator('#page-document .block.image img').first();
  await see(img, "the uploaded image in the page");
  const src = await img.getAttribute("src");
  if (!src || !src.includes("/team/harbour.png/@@images/image")) throw new Error(`the image block shows '${src}'`);
  const width = await img.evaluate((el) => el.complete ? el.naturalWidth : 0);
  if (!width) throw new Error(`the image did not load (src ${await img.getAttribute("src")})`);
});

step("comments: add one and reply", async (page) => {
  await open(page, "/news/harbour-opens");
  await page.fill("textarea#field-comment", "Will the ferry stop here?");
  await page.locator('#comment-add-id button[type="submit"], form button[type="submit"]').first().click();
  await see(page.locator(".comment", { hasText: "Will the ferry stop here?" }), "the new comment");
  await page.locator('a[aria-label="Reply"]').first().click();
  await page.locator('[id^="reply-place-"] textarea#field-comment').fill("Yes, from June.");
  await page.locator('[id^="reply-place-"] button[type="submit"]').click();
  await see(page.locator(".comment", { hasText: "Yes, from June." }), "the reply");
});

step("the search page finds a page by a word of its text", async (page) => {
  await open(page, "/search?SearchableText=quay");
  await see(page.locator(".summary.url", { hasText: "The harbour opens" }), "the search result");
  const found = await page.locator(".summary.url").count();
  if (found !== 1) throw new Error(`the search for 'quay' shows ${found} results, expected 1`);
});

step("add an Image through the add form's file input; its scales answer", async (page) => {
  await open(page, "/team");
  await page.click("#toolbar-add");
  await page.click("#toolbar-add-image");
  await page.waitForURL(/\/team\/add\?type=Image$/);
  await settle(page);
  await page.fill("#field-title", "Quay at dawn");
  // Plone's Image schema gives the field no widget, so Volto shows a file input (not its image
  // picker, which would upload a stray Image and then save a URL).
  const input = page.locator('input#field-image[type="file"]');
  await input.waitFor({ state: "attached", timeout: 10000 }).catch(() => { throw new Error("no file input for the image field"); });
  await input.setInputFiles({ name: "quay.png", mimeType: "image/png", buffer: makePng(320, 200) });
  const created = page.waitForResponse((r) => r.request().method() === "POST" && r.url().endsWith("/++api++/team"));
  await page.click("#toolbar-save");
  const res = await created;
  if (res.status() !== 201) throw new Error(`the add form's save answered ${res.status()}: ${(await res.text()).slice(0, 300)}`);
  const made = await res.json();
  await page.waitForURL(/\/team\/quay-at-dawn$/, { timeout: 15000 });
  await settle(page);
  await see(page.locator("h1.documentFirstHeading", { hasText: "Quay at dawn" }), "the image's heading");
  const img = page.locator('#view img[src*="/team/quay-at-dawn/@@images/image"]').first();
  await see(img, "the image in its view");
  await waitFor(async () => (await img.evaluate((el) => (el.complete ? el.naturalWidth : 0))) > 0, "the image in its view to load");
  // The scales the server lists for it answer with an image of the scale's width.
  const scales = made.image && made.image.scales;
  if (!scales || !scales.preview || !scales.thumb) throw new Error(`the new image lists no preview/thumb scales: ${JSON.stringify(made.image).slice(0, 300)}`);
  for (const name of ["thumb", "preview"]) {
    const url = scales[name].download.replace(/^https?:\/\/[^/]+/, volto);
    const got = await page.evaluate(async (u) => {
      const r = await fetch(u);
      const b = await r.blob();
      const bitmap = r.ok && b.type.startsWith("image/") ? await createImageBitmap(b) : null;
      return { status: r.status, type: b.type, width: bitmap ? bitmap.width : 0 };
    }, url);
    if (got.status !== 200 || !got.type.startsWith("image/")) throw new Error(`the ${name} scale ${url} answered ${got.status} ${got.type}`);
    if (got.width !== scales[name].width) throw new Error(`the ${name} scale is ${got.width} px wide, listed as ${scales[name].width}`);
  }
  // The add form made one Image, not a stray upload beside it.
  const images = (await api("GET", "/team/@search?portal_type=Image&path.depth=1")).items.map((i) => i.title);
  if (images.filter((t) => t === "Quay at dawn").length !== 1) throw new Error(`the folder holds the images ${JSON.stringify(images)}`);
});

step("search sorted by 'Date (newest first)': a page without an effective date comes last", async (page) => {
  await open(page, "/search?SearchableText=lighthouse");
  const results = page.locator("#content-core .summary.url");
  await see(results.filter({ hasText: "Lighthouse history" }), "the undated page in the results");
  const sorted = page.waitForResponse((r) => r.url().includes("/@search") && r.url().includes("sort_on=effective"));
  await page.locator('button.button-sort[name="effective"]').click();
  const res = await sorted;
  if (!res.ok()) throw new Error(`the sorted search answered ${res.status()}`);
  await settle(page);
  const want = ["Lighthouse reopens", "Lighthouse repairs", "Lighthouse history"];
  let got = [];
  await waitFor(async () => {
    got = await results.allInnerTexts();
    return JSON.stringify(got) === JSON.stringify(want);
  }, "the newest-first order").catch(() => { throw new Error(`newest first shows ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`); });
});

step("personal information: save the form", async (page) => {
  await open(page, "/");
  await page.click("#toolbar-personal");
  await page.locator('.personal-tools a[href="/personal-information"]').click();
  const name = page.locator("#field-fullname");
  await see(name, "the personal information form");
  await settle(page);
  await name.fill("Harbour Master");
  // The site's first account has no e-mail address yet; the form requires one.
  await page.fill("#field-email", "master@harbour.example");
  const saved = page.waitForResponse((r) => r.request().method() === "PATCH" && r.url().includes("/@users/admin"), { timeout: 10000 })
    .catch(() => { throw new Error("the form sent no PATCH (did Volto refuse a field?)"); });
  await page.locator('button[aria-label="Save"], button[title="Save"]').first().click();
  const res = await saved;
  if (!res.ok()) throw new Error(`saving answered ${res.status()}: ${(await res.text()).slice(0, 200)}`);
  await settle(page);
  await open(page, "/personal-information");
  await see(page.locator("#field-fullname"), "the personal information form after a reload");
  await waitFor(async () => (await page.locator("#field-fullname").inputValue()) === "Harbour Master", "the saved full name in the form")
    .catch(async () => { throw new Error(`the full name reads '${await page.locator("#field-fullname").inputValue()}' after saving`); });
  if ((await page.locator("#field-email").inputValue()) !== "master@harbour.example") throw new Error("the e-mail address did not stay after saving");
});

step("content rules: add a rule in the Rules panel, assign it on a page through 'Rules'", async (page) => {
  await open(page, "/controlpanel/rules");
  await page.getByRole("button", { name: "Add content rule" }).click();
  await page.waitForURL(/\/controlpanel\/rules\/add$/);
  await settle(page);
  const field = (label) => page.locator(".inline.field", { has: page.locator(`label:text-is("${label}")`) }).first();
  await field("Title").locator("input").fill("Tell the harbour master");
  await field("Description").locator("input, textarea").first().fill("Logs every change to the duty roster.");
  await field("Triggering event").locator(".react-select__control").click();
  await page.locator(".react-select__option", { hasText: "Object modified" }).first().click();
  const added = page.waitForResponse((r) => r.request().method() === "POST" && r.url().includes("/@controlpanels/content-rules"));
  await page.getByRole("button", { name: "Save" }).click();
  const res = await added;
  if (!res.ok()) throw new Error(`adding the rule answered ${res.status()}: ${(await res.text()).slice(0, 200)}`);
  await page.waitForURL(/\/controlpanel\/rules$/, { timeout: 15000 });
  await settle(page);
  await see(page.locator("p", { hasText: "Tell the harbour master" }), "the new rule in the Rules panel");
  await see(page.locator("p", { hasText: "Object modified" }), "the rule's trigger by its title");
  // On the page, through the More menu's "Rules".
  await open(page, "/team/duty-roster");
  await page.click("#toolbar-more");
  await page.locator('.menu-more a[href$="/team/duty-roster/rules"]').click();
  await page.waitForURL(/\/team\/duty-roster\/rules$/);
  await settle(page);
  await page.locator("#rules .ui.selection.dropdown").first().click();
  await page.locator("#rules .ui.selection.dropdown .item", { hasText: "Tell the harbour master" }).first().click();
  const assigned = page.waitForResponse((r) => r.request().method() === "POST" && r.url().includes("/team/duty-roster/@content-rules"));
  await page.locator("#rules").getByRole("button", { name: "Add" }).click();
  const ares = await assigned;
  if (!ares.ok()) throw new Error(`assigning the rule answered ${ares.status()}: ${(await ares.text()).slice(0, 200)}`);
  await settle(page);
  await open(page, "/team/duty-roster/rules");
  await see(page.locator("#rules td", { hasText: "Tell the harbour master" }), "the assigned rule in the page's rules after a reload");
});

step("URL management: add an alias to a page; the alias leads to it", async (page) => {
  await open(page, "/team/duty-roster");
  await page.click("#toolbar-more");
  await page.locator('.menu-more a[href$="/team/duty-roster/aliases"]').click();
  await page.waitForURL(/\/team\/duty-roster\/aliases$/);
  await settle(page);
  await page.fill("#alternative-url-input", "/watch");
  const added = page.waitForResponse((r) => r.request().method() === "POST" && r.url().includes("/team/duty-roster/@aliases"));
  await page.click("#submit-alias");
  const res = await added;
  if (!res.ok()) throw new Error(`adding the alias answered ${res.status()}: ${(await res.text()).slice(0, 200)}`);
  await settle(page);
  await open(page, "/team/duty-roster/aliases");
  await see(page.locator("#aliases label", { hasText: "/watch" }), "the alias in the page's URL management after a reload");
  await open(page, "/watch");
  await page.waitForURL(/\/team\/duty-roster$/, { timeout: 15000 }).catch(() => { throw new Error(`/watch shows ${page.url()}`); });
  await see(page.locator("h1.documentFirstHeading", { hasText: "Duty roster" }), "the page behind the alias");
});

step("the Relations panel shows a page's related item", async (page) => {
  await open(page, "/controlpanel/relations");
  // The relation names come from the statistics, each with its count.
  await page.locator(".select_relation .ui.dropdown").first().click();
  const name = page.locator(".select_relation .select-relation-relatedItems");
  await see(name, "relatedItems among the relation names");
  const count = (await name.innerText()).trim();
  if (count !== "relatedItems (1)") throw new Error(`the relation name reads '${count}', expected 'relatedItems (1)'`);
  await name.click();
  await settle(page);
  const row = page.locator(`#source-row-${fx.ferryUid}`);
  await see(row, "the page with related items as a source in the relations matrix");
  await see(row.locator(".item-title", { hasText: "Ferry timetable" }), "the source's title");
  const box = row.locator(`.checkbox_${fx.harbourUid} input`).first();
  await box.waitFor({ state: "attached", timeout: 10000 }).catch(() => { throw new Error("no column for the related page"); });
  if (!(await box.isChecked())) throw new Error("the relation Ferry timetable -> The harbour opens is not ticked");
});

step("the Undo panel: undo an edit and see it undone", async (page) => {
  await open(page, "/ferry-timetable");
  await appendToTitle(page, "/ferry-timetable", " (winter)");
  await see(page.locator("h1.documentFirstHeading", { hasText: "Ferry timetable (winter)" }), "the edited heading");
  await open(page, "/controlpanel/undo");
  const row = page.locator("#page-undo tbody tr", { hasText: "/ferry-timetable edited" }).first();
  await see(row, "the edit in the Undo panel");
  await row.locator('input[type="checkbox"]').check();
  const undone = page.waitForResponse((r) => r.request().method() === "PATCH" && r.url().includes("/@transactions"));
  await page.click("#undo-button");
  const res = await undone;
  if (!res.ok()) throw new Error(`the undo answered ${res.status()}: ${(await res.text()).slice(0, 200)}`);
  await settle(page);
  await open(page, "/ferry-timetable");
  await see(page.locator("h1.documentFirstHeading", { hasText: /^Ferry timetable$/ }), "the title as it was before the edit");
});

step("log out", async (page) => {
  await logOut(page);
  const cookies = await page.context().cookies();
  if (cookies.some((c) => c.name === "auth_token")) throw new Error("the auth_token cookie is still set after logout");
});

step("a second user, Editor by the group's local role, edits inside the folder only", async (page) => {
  await logIn(page, JANE);
  await open(page, "/team/duty-roster");
  await see(page.locator("#toolbar a.edit"), "Edit for jane inside the shared folder");
  await appendToTitle(page, "/team/duty-roster", " (checked)");
  await see(page.locator("h1.documentFirstHeading", { hasText: "Duty roster (checked)" }), "jane's edit");
  await open(page, "/news/harbour-opens");
  await see(page.locator("h1.documentFirstHeading", { hasText: "The harbour opens" }), "a page outside the folder");
  if (await page.locator("#toolbar a.edit").count()) throw new Error("jane sees Edit outside the shared folder");
  await open(page, "/news/harbour-opens/edit");
  await see(page.locator("h1", { hasText: "Forbidden" }), "Volto's Forbidden page for jane's edit outside the folder");
  if (await page.locator(".block.title [contenteditable=true]").count()) throw new Error("jane gets an edit form outside the shared folder");
  // Nor may she add content at the site root.
  await open(page, "/");
  if (await page.locator("#toolbar-add").count()) throw new Error("jane sees Add at the site root");
  await logOut(page);
});

// ---- run ----------------------------------------------------------------------------------------

const browser = await launchChromium();
let failed = null;
let n = 0;
try {
  await fixtures();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  const pageErrors = [];
  // The main frame's addresses (full loads and client-side route changes), for a failure report.
  const visited = [];
  page.on("framenavigated", (f) => { if (f === page.mainFrame()) visited.push(f.url().replace(volto, "")); });
  page.on("pageerror", (e) => pageErrors.push(e.message));
  // Every API answer of 400 or more is printed (request body and answer), so a failing step shows
  // what the server refused.
  page.on("response", async (res) => {
    if (!res.url().includes("/++api++")) return;
    // VOLTO_E2E_TRACE=1 prints every API write too (what Volto sent and what it got back).
    const trace = process.env.VOLTO_E2E_TRACE && res.request().method() !== "GET";
    if (res.status() < 400 && !trace) return;
    const req = res.request();
    const body = await res.text().catch(() => "");
    console.log(`volto-e2e: api ${req.method()} ${res.url()} -> ${res.status()} ${body.slice(0, 300)}`);
    if (req.postData()) console.log(`volto-e2e:   request body: ${req.postData().slice(0, 600)}`);
  });
  ({ n, failed } = await runSteps(page, steps, { label: "volto-e2e", artifacts, visited, pageErrors }));
} catch (e) {
  console.log(`volto-e2e: FAIL setup: ${e.message}`);
  failed = "setup";
} finally {
  await browser.close();
}
process.exit(summary("volto-e2e", steps, n, failed));
