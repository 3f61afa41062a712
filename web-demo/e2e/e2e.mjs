// End-to-end test of the web demo in headless Chromium (Debian's /usr/bin/chromium via playwright-core):
// create a page, edit its text, reload and find it again (IndexedDB), read it with a plain fetch()
// through the Service Worker, reload offline, show an API error; then every control of the editor
// through the UI: navigation tree and breadcrumbs, workflow, history (change note, view, revert),
// locking (Lock-Token, the 403 without it), aliases, copy/cut/paste, comments, and a multilingual
// site (language switcher, translate, unlink, link), the recycle bin (delete, restore, purge), files (an image
// inserted into a page and its scales, an attached file downloaded, a broken image refused), and an Event added and edited through the forms
// built from its schema (@types). Saves screenshots in artifacts/.
// Needs web-demo/pkg (./scripts/web-demo.sh --build-only). Run: node web-demo/e2e/e2e.mjs
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { deflateSync } from "node:zlib";
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

/** A w×h RGB PNG (a gradient), encoded here: no image files in the repository, no dependency. */
function png(w, h) {
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
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const raw = Buffer.alloc((w * 3 + 1) * h);
  for (let y = 0; y < h; y++) {
    const row = y * (w * 3 + 1);
    for (let x = 0; x < w; x++) raw.set([(x * 255) / w, (y * 255) / h, 128], row + 1 + x * 3);
  }
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([sig, chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
}
let browser;
let failed = false;
try {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
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
      headers: { Accept: "application/json", Authorization: "Basic " + btoa("admin:offline-admin") },
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

  const expect = (cond, what) => {
    if (!cond) throw new Error(what);
  };
  const textOf = async (sel) => ((await page.textContent(sel)) || "").replace(/\s+/g, " ").trim();
  const open = async (path, title) => {
    await page.click(`.tree .node[data-path='${path}']`);
    await page.waitForSelector(`#editor h2:text-is('${title}')`);
    const crumb = path === "/" ? "Home" : title; // the root's breadcrumb is "Home"
    await page.waitForSelector(`#breadcrumbs [aria-current]:text-is('${crumb}')`);
  };

  step("navigation tree (@navigation) and breadcrumbs (@breadcrumbs)");
  await page.waitForSelector(".tree li:has(> .node[data-path='/notes']) > ul > li > .node[data-path='/notes/inside-notes']");
  await open("/notes/inside-notes", "Inside notes");
  const crumbs = await page.$$eval("#breadcrumbs li", (lis) => lis.map((l) => l.textContent.trim()));
  expect(JSON.stringify(crumbs) === JSON.stringify(["Home", "Notes", "Inside notes"]), `breadcrumbs: ${JSON.stringify(crumbs)}`);
  await page.click("#breadcrumbs button:text-is('Notes')");
  await page.waitForSelector("#editor h2:text-is('Notes')");
  await page.click("#contents button:text-is('Inside notes')"); // the folder lists its contents
  await page.waitForSelector("#editor h2:text-is('Inside notes')");

  step("workflow: publish, the state shows published");
  await open("/offline-hello", "Offline hello");
  expect((await textOf("#wf-state")) === "Private", `state before: ${await textOf("#wf-state")}`);
  await page.click("#workflow button[data-transition='publish']");
  await page.waitForSelector("#wf-state:text-is('Published')");
  await page.waitForSelector(".tree .node[data-path='/offline-hello'] .dot.state-published");
  await page.waitForSelector("#workflow button[data-transition='retract']");
  await page.waitForSelector("#history li.workflow:has-text('Publish')");

  step("history: edit with a change note, view the old version, revert");
  await page.fill("#f-text", "Second draft of the text.");
  await page.fill("#f-changenote", "Rewrote the text");
  await page.click("#save");
  await page.waitForSelector("#saved:text-is('Saved.')");
  const newest = await textOf("#history li:first-child");
  expect(/Edited/.test(newest) && /Rewrote the text/.test(newest), `newest history entry: ${newest}`);
  const previous = page.locator("#history li.versioning").nth(1);
  const prevVersion = await previous.getAttribute("data-version");
  await previous.locator("button.view-version").click();
  await page.waitForSelector("#version-view .old-text");
  const oldText = await textOf("#version-view .old-text");
  expect(oldText === "This text lives in IndexedDB.", `version ${prevVersion} text: ${oldText}`);
  await page.click("#version-view button.revert-shown");
  await page.waitForSelector(`#saved:text-is('Reverted to version ${prevVersion}.')`);
  const reverted = await page.inputValue("#f-text");
  expect(reverted === "This text lives in IndexedDB.", `text after revert: ${reverted}`);
  const revertEntry = await textOf("#history li:first-child");
  expect(revertEntry.includes(`Reverted to revision ${prevVersion}`), `history after revert: ${revertEntry}`);
  await page.screenshot({ path: join(artifacts, "web-demo-history.png"), fullPage: true });

  step("locking: lock, edit with the token, the indicator, 403 without the token, unlock");
  await page.click("#lock");
  await page.waitForSelector("#lock-status.mine");
  expect((await textOf("#lock-status")).includes("Locked by you"), `lock status: ${await textOf("#lock-status")}`);
  await page.fill("#f-description", "Edited while locked");
  await page.click("#save");
  await page.waitForSelector("#saved:text-is('Saved.')"); // only with the Lock-Token header
  await page.reload(); // the token was in memory only: this page no longer holds it
  await ready();
  await open("/offline-hello", "Offline hello");
  await page.waitForSelector("#lock-status.other");
  await page.fill("#f-description", "Edited without the token");
  await page.click("#save");
  await page.waitForSelector("#error:not([hidden])");
  const lockErr = await textOf("#error");
  expect(/PATCH \/offline-hello failed \(403\).*Resource is locked/.test(lockErr), `lock error banner: ${lockErr}`);
  console.log(`e2e: error shown: ${lockErr}`);
  await page.click("#unlock");
  await page.waitForSelector("#lock-status:text-is('Unlocked.')");
  await page.fill("#f-description", "Edited after unlocking");
  await page.click("#save");
  await page.waitForSelector("#saved:text-is('Saved.')");
  expect((await page.inputValue("#f-description")) === "Edited after unlocking", "the edit after unlocking was not saved");
  await page.click("#lock");
  await page.waitForSelector("#lock-status.mine");
  await page.click("#unlock");
  await page.waitForSelector("#lock-status:text-is('Unlocked.')");

  step("aliases: add, listed, remove");
  await page.fill("#alias-path", "/hello-old");
  await page.click("#add-alias");
  await page.waitForSelector("#aliases li[data-alias='/hello-old']");
  const viaAlias = await page.evaluate(async () => {
    const r = await fetch("/api/hello-old", { headers: { Accept: "application/json" } }); // follows the redirect
    return { status: r.status, redirected: r.redirected, title: (await r.json()).title };
  });
  expect(viaAlias.redirected && viaAlias.status === 200 && viaAlias.title === "Offline hello",
    `the alias through the Service Worker: ${JSON.stringify(viaAlias)}`);
  await page.click("#aliases li[data-alias='/hello-old'] button.remove-alias");
  await page.waitForSelector("#aliases li[data-alias='/hello-old']", { state: "detached" });

  step("copy and paste into a folder; cut and paste to the site root");
  await page.click("#copy");
  await page.waitForSelector("#clipboard-text:text-is('Copied: “Offline hello”')");
  await open("/notes", "Notes");
  await page.waitForSelector("#paste:text-is('Paste into “Notes”')");
  await page.screenshot({ path: join(artifacts, "web-demo-clipboard.png"), fullPage: true });
  await page.click("#paste");
  await page.waitForSelector(".tree .node[data-path='/notes/offline-hello']");
  await page.waitForSelector("#breadcrumbs [aria-current]:text-is('Offline hello')");
  expect((await textOf("#editor .meta")).includes("/notes/offline-hello"), `pasted: ${await textOf("#editor .meta")}`);
  expect((await textOf("#wf-state")) === "Private", "a copy starts private");
  await page.waitForSelector(".tree .node[data-path='/offline-hello']"); // the original stays
  await open("/notes/inside-notes", "Inside notes");
  await page.click("#cut");
  await open("/", "My offline site");
  await page.click("#paste");
  await page.waitForSelector(".tree .node[data-path='/inside-notes']");
  await page.waitForSelector(".tree .node[data-path='/notes/inside-notes']", { state: "detached" });
  await page.waitForSelector("#aliases li[data-alias='/notes/inside-notes']"); // the move left an alias
  expect(await page.isHidden("#clipboard"), "the clipboard is empty after a cut is pasted");

  step("comments: discussion off, enable, comment, reply, edit, delete");
  await open("/offline-hello", "Offline hello");
  await page.waitForSelector("#discussion-off");
  await page.click("#enable-discussion");
  await page.waitForSelector("#new-comment");
  expect(!(await page.$("#discussion-off")), "still says discussion is off");
  await page.fill("#new-comment", "First comment");
  await page.click("#post-comment");
  await page.waitForSelector(".comment .comment-text:text-is('First comment')");
  const first = await page.getAttribute(".comment:has(> .comment-text:text-is('First comment'))", "data-id");
  await page.click(`.comment[data-id='${first}'] > .buttons .reply`);
  await page.fill(`.comment[data-id='${first}'] form.comment-edit textarea`, "A reply");
  await page.click(`.comment[data-id='${first}'] form.comment-edit button[type=submit]`);
  await page.waitForSelector(`.comment[data-id='${first}'] .comments .comment-text:text-is('A reply')`);
  await page.click(`.comment[data-id='${first}'] > .buttons .edit-comment`);
  await page.fill(`.comment[data-id='${first}'] form.comment-edit textarea`, "First comment, edited");
  await page.click(`.comment[data-id='${first}'] form.comment-edit button[type=submit]`);
  await page.waitForSelector(`.comment[data-id='${first}'] > .comment-text:text-is('First comment, edited')`);
  await page.waitForSelector("#comments-panel h3:text-is('Comments (2)')");
  await page.screenshot({ path: join(artifacts, "web-demo-comments.png"), fullPage: true });
  await page.click(`.comment[data-id='${first}'] .comments .delete-comment`);
  await page.waitForSelector("#comments-panel h3:text-is('Comments (1)')");
  expect(!(await page.$(".comment-text:text-is('A reply')")), "the reply is still there");

  await page.click(".tree .node[data-path='/offline-hello']");
  await page.waitForSelector("#editor h2:text-is('Offline hello')");
  const shot = join(artifacts, "web-demo.png");

  await page.screenshot({ path: shot, fullPage: true });
  step(`screenshot: ${shot}`);

  step("types: add an Event from its schema (start and end required), edit it in the schema-built form");
  await page.click(".tree .node[data-path='/']");
  await page.waitForSelector("#editor h2:text-is('My offline site')");
  await page.selectOption("#new-other", "Event");
  await page.fill("#new-title", "Sprint");
  await page.click("#create");
  await page.waitForSelector("#error:not([hidden])");
  const missing = await page.textContent("#error");
  expect(/POST \/ failed \(400\).*'(start|end)'/.test(missing), `error banner: ${missing}`);
  await page.fill("#f-start", "2026-03-01T09:00");
  await page.fill("#f-end", "2026-03-01T17:00");
  await page.click("#create");
  await page.waitForSelector("#editor h2:text-is('Sprint')");
  await page.fill("#f-location", "Berlin");
  await page.fill("#f-contact_email", "ann@example.org");
  await page.click("#save");
  await page.waitForSelector("#saved:text-is('Saved.')");
  expect((await page.inputValue("#f-location")) === "Berlin", "the location was not saved");
  expect((await page.inputValue("#f-start")) === "2026-03-01T09:00", "the start did not read back");
  expect(await page.isVisible("label[for='f-end'] .required"), "the end is not marked required");
  await page.screenshot({ path: join(artifacts, "web-demo-event.png"), fullPage: true });

  step("recycle bin: delete a page, find it in the bin, restore it; delete it again and purge it");
  await page.click(".tree .node[data-path='/']");
  await page.waitForSelector("#editor h2:text-is('My offline site')");
  await page.click("#new-page");
  await page.fill("#new-title", "Binned page");
  await page.click("#create");
  await page.waitForSelector("#editor h2:text-is('Binned page')");
  await page.click("#delete");
  await page.waitForSelector("#editor p.empty");
  await page.waitForSelector(".tree .node[data-path='/binned-page']", { state: "detached" });
  await page.click("#bin-toggle");
  await page.waitForSelector("#bin-list .bin-item .bin-title:text-is('Binned page')");
  await page.screenshot({ path: join(artifacts, "web-demo-recyclebin.png"), fullPage: true });
  await page.click("#bin-list .bin-item:has(.bin-title:text-is('Binned page')) .bin-restore");
  await page.waitForSelector("#editor h2:text-is('Binned page')");
  await page.waitForSelector(".tree .node[data-path='/binned-page']");
  await page.waitForSelector("#bin-list p.hint:text-is('The recycle bin is empty.')");
  await page.click("#delete");
  await page.waitForSelector("#bin-list .bin-item .bin-title:text-is('Binned page')");
  await page.click("#bin-list .bin-item:has(.bin-title:text-is('Binned page')) .bin-purge");
  await page.waitForSelector("#bin-list p.hint:text-is('The recycle bin is empty.')");
  await page.click("#bin-toggle");

  step("files: insert an image into a page (uploaded as an Image, shown from its preview scale), open it and its scales; attach a file and download it");
  await open("/", "My offline site");
  await page.click("#new-page");
  await page.fill("#new-title", "Gallery");
  await page.click("#create");
  await page.waitForSelector("#editor h2:text-is('Gallery')");
  await page.setInputFiles("#insert-image", { name: "harbour.png", mimeType: "image/png", buffer: png(400, 300) });
  await page.waitForSelector("#media .media-image img.block-image");
  await page.waitForFunction(() => document.querySelector("#media img.block-image")?.naturalWidth === 400);
  await page.waitForSelector(".tree .node[data-path='/harbour.png']");
  await open("/harbour.png", "harbour.png");
  expect((await textOf("#file-image .file-meta")).includes("400×300 px"), `image meta: ${await textOf("#file-image .file-meta")}`);
  expect((await textOf("#file-image tr[data-scale='icon'] td.num")) === "32×24", `icon scale: ${await textOf("#file-image tr[data-scale='icon']")}`);
  expect((await textOf("#file-image tr[data-scale='thumb'] td.num")) === "128×96", `thumb scale: ${await textOf("#file-image tr[data-scale='thumb']")}`);
  await page.waitForFunction(() => document.querySelector("#file-image img.preview")?.naturalWidth === 400);
  await page.click("#file-image tr[data-scale='thumb'] button.scale-open");
  await page.waitForFunction(() => document.querySelector("#file-image img.preview")?.naturalWidth === 128);
  await page.screenshot({ path: join(artifacts, "web-demo-image-scales.png"), fullPage: true });
  await open("/gallery", "Gallery");
  await page.setInputFiles("#attach-file", { name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("meeting notes\n") });
  await page.waitForSelector("#media button.attachment:text-is('notes.txt')");
  expect((await page.$$("#media .media-image img.block-image")).length === 1, "the image block went missing");
  await page.click("#media button.attachment:text-is('notes.txt')");
  await page.waitForSelector("#editor h2:text-is('notes.txt')");
  expect((await textOf("#file-file .file-size")) === "14 B", `file size: ${await textOf("#file-file .file-size")}`);
  const downloaded = await page.$eval("#file-file a.download", async (a) => (await fetch(a.href)).text());
  expect(downloaded === "meeting notes\n", `downloaded: ${JSON.stringify(downloaded)}`);
  await page.setInputFiles("#f-file", { name: "broken.png", mimeType: "image/png", buffer: Buffer.from("not a png") });
  await page.click("#save");
  await page.waitForSelector("#editor h2:text-is('notes.txt')");
  await page.waitForSelector("#file-file .file-name:text-is('broken.png')");
  await open("/harbour.png", "harbour.png");
  await page.setInputFiles("#f-image", { name: "broken.png", mimeType: "image/png", buffer: Buffer.from("not a png") });
  await page.click("#save");
  await page.waitForSelector("#error:not([hidden])");
  expect((await textOf("#error")).includes("400"), `broken image error: ${await textOf("#error")}`);
  await open("/harbour.png", "harbour.png");
  expect((await textOf("#file-image .file-name")) === "harbour.png", "a refused upload changed the image");

  step("multilingual: open a site with en and de, language roots in the tree and the switcher");
  await page.click("#site-switch");
  await page.waitForURL(/site=web-demo-multilingual/);
  await ready();
  await page.waitForSelector("#languages button[data-lang='en'][aria-pressed='true']");
  await page.waitForSelector("#languages button[data-lang='de'][aria-pressed='false']");
  await page.waitForSelector(".tree li:has(> .node[data-path='/']) > ul > li > .node[data-path='/en']");
  await page.waitForSelector("#editor h2:text-is('English')");
  await page.click("#new-page");
  await page.fill("#new-title", "Welcome");
  await page.click("#create");
  await page.waitForSelector("#editor h2:text-is('Welcome')");
  expect((await textOf("#editor .meta")).includes("/en/welcome"), `new page: ${await textOf("#editor .meta")}`);
  const mlCrumbs = await page.$$eval("#breadcrumbs li", (lis) => lis.map((l) => l.textContent.trim()));
  expect(JSON.stringify(mlCrumbs) === JSON.stringify(["English", "Welcome"]), `breadcrumbs: ${JSON.stringify(mlCrumbs)}`);

  step("multilingual: translate into de (the tree switches to de), switch language back and forth");
  await page.click("#translations-panel button.translate[data-lang='de']");
  await page.waitForSelector("#editor h2:text-is('Welcome (de)')");
  await page.waitForSelector("#languages button[data-lang='de'][aria-pressed='true']");
  await page.waitForSelector(".tree .node[data-path='/de/welcome-de']");
  expect(!(await page.$(".tree .node[data-path='/en/welcome']")), "the tree still shows the en page in de");
  await page.waitForSelector("#translations li[data-language='en']");
  await page.click("#languages button[data-lang='en']");
  await page.waitForSelector("#editor h2:text-is('Welcome')");
  await page.waitForSelector(".tree .node[data-path='/en/welcome'].selected");
  await page.click("#languages button[data-lang='de']");
  await page.waitForSelector("#editor h2:text-is('Welcome (de)')");

  step("multilingual: unlink and link a translation");
  await page.click("#translations li[data-language='en'] button.unlink");
  await page.waitForSelector("#translations:text-is('No translations linked.')");
  await page.click("#languages button[data-lang='en']"); // no translation now: the en root folder
  await page.waitForSelector("#editor h2:text-is('English')");
  await open("/en/welcome", "Welcome");
  await page.fill("#link-path", "/de/welcome-de");
  await page.click("#link-translation");
  await page.waitForSelector("#translations li[data-language='de']");
  await page.screenshot({ path: join(artifacts, "web-demo-multilingual.png"), fullPage: true });
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
