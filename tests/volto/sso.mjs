// Single sign-on in Volto (issue 38): Volto with @plone-collective/volto-authomatic in front of
// host-server, which has a real OpenID provider (host-server/tests/oidc/provider.mjs, with its
// sign-in form) in its --oidc-config. playwright-core drives Debian's /usr/bin/chromium: the login
// page offers "Log in with Test provider", the click leads to the provider's sign-in form, and
// signing in there lands back in Volto, logged in (the toolbar shows the user). Password login
// stays available (the add-on moves Volto's own form to /fallback_login). A screenshot per step
// goes to $VOLTO_ARTIFACTS (default artifacts/volto-sso/). The first failing step fails the run
// (exit 1); the steps after it are listed as not run. No step is retried.
//
//   node tests/volto/sso.mjs <volto URL> <backend URL> <provider's issuer URL>
// with ADMIN_PASSWORD set to the backend's admin password. scripts/volto-sso-e2e.sh starts all
// three.
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { launchChromium, runSteps, summary } from "./steps.mjs";

const [volto, backend, issuer] = process.argv.slice(2);
if (!volto || !backend || !issuer || !process.env.ADMIN_PASSWORD) {
  console.error("usage: ADMIN_PASSWORD=... node sso.mjs <volto URL> <backend URL> <issuer URL>");
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const artifacts = process.env.VOLTO_ARTIFACTS || join(here, "..", "..", "artifacts", "volto-sso");
mkdirSync(artifacts, { recursive: true });
const admin = { login: "admin", password: process.env.ADMIN_PASSWORD };
// The person who signs in at the provider, and what the provider says about them.
const ROSA = {
  sub: "sub-rosa", login: "rosa", password: "rosa-at-the-provider-42",
  claims: { preferred_username: "rosa", name: "Rosa Harbour", email: "rosa@example.org", groups: ["harbour-editors"] },
};

async function call(url, method, body, headers = {}) {
  const h = { Accept: "application/json", ...headers };
  if (body !== undefined) h["Content-Type"] = "application/json";
  const res = await fetch(url, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

const adminAuth = { Authorization: "Basic " + Buffer.from(`${admin.login}:${admin.password}`).toString("base64") };

// ---- steps --------------------------------------------------------------------------------------

const steps = [];
const step = (name, fn) => steps.push({ name, fn });
const settle = (page) => page.waitForLoadState("networkidle", { timeout: 30000 });

async function see(locator, what, timeout = 15000) {
  await locator.first().waitFor({ state: "visible", timeout }).catch(() => { throw new Error(`not shown: ${what}`); });
}

step("the login page offers the provider", async (page) => {
  // The provider's account: what it signs in with and the claims its ID token carries.
  const set = await call(`${issuer}/__test/account`, "POST", ROSA);
  if (set.status !== 200) throw new Error(`the provider refused the account: ${JSON.stringify(set.body)}`);
  const before = await call(`${backend}/@users/${ROSA.login}`, "GET", undefined, adminAuth);
  if (before.status !== 404) throw new Error(`${ROSA.login} exists before logging in: ${before.status}`);
  await page.goto(`${volto}/login`);
  await settle(page);
  await see(page.getByRole("button", { name: "Log in with Test provider" }), "the 'Log in with Test provider' button");
});

step("the button leads to the provider's sign-in form", async (page) => {
  await page.getByRole("button", { name: "Log in with Test provider" }).click();
  await page.waitForURL((u) => u.href.startsWith(`${issuer}/`), { timeout: 15000 });
  await see(page.locator("#username"), "the provider's sign-in form");
});

step("a wrong password is refused at the provider", async (page) => {
  await page.fill("#username", ROSA.login);
  await page.fill("#password", "not-her-password");
  await page.click("#sign-in");
  await see(page.locator("#error"), "the provider's error");
  if (!page.url().startsWith(`${issuer}/`)) throw new Error(`left the provider: ${page.url()}`);
});

step("signing in at the provider lands back in Volto, logged in", async (page) => {
  await page.fill("#username", ROSA.login);
  await page.fill("#password", ROSA.password);
  await page.click("#sign-in");
  await page.waitForURL((u) => u.href.startsWith(volto), { timeout: 15000 });
  await page.locator("body.has-toolbar").waitFor({ timeout: 20000 });
  await settle(page);
  if (!(await page.context().cookies()).some((c) => c.name === "auth_token")) {
    throw new Error("no auth_token cookie after the login");
  }
});

step("the toolbar shows the user", async (page) => {
  await page.click("#toolbar-personal");
  const heading = page.locator(".personal-tools header h2", { hasText: ROSA.claims.name });
  await see(heading, `'${ROSA.claims.name}' in the personal toolbar`);
  // The pane slides in; the screenshot after the step shows it where it stops.
  await page.waitForFunction(() => {
    const pane = document.querySelector(".personal-tools");
    if (!pane) return false;
    const r = pane.getBoundingClientRect();
    return r.left >= 0 && r.right <= window.innerWidth;
  }, null, { timeout: 5000 });
  await page.waitForTimeout(500);
  // The user was made from the provider's claims.
  const u = await call(`${backend}/@users/${ROSA.login}`, "GET", undefined, adminAuth);
  if (u.status !== 200) throw new Error(`@users/${ROSA.login}: ${u.status}`);
  if (u.body.fullname !== ROSA.claims.name || u.body.email !== ROSA.claims.email) {
    throw new Error(`the user's name or e-mail is not the provider's: ${JSON.stringify(u.body)}`);
  }
  const groups = (u.body.groups?.items || []).map((g) => g.id);
  if (!groups.includes("harbour-editors")) throw new Error(`not in harbour-editors: ${groups.join(", ")}`);
});

step("password login stays available at /fallback_login", async (page) => {
  const context = await page.context().browser().newContext({ viewport: { width: 1280, height: 900 } });
  const other = await context.newPage();
  try {
    await other.goto(`${volto}/fallback_login`);
    await settle(other);
    await other.fill("#login", admin.login);
    await other.fill("#password", admin.password);
    await other.click("#login-form-submit");
    await other.locator("body.has-toolbar").waitFor({ timeout: 15000 });
    await settle(other);
    await other.screenshot({ path: join(artifacts, "06-password-login.png") });
  } finally {
    await context.close();
  }
});

// ---- run ----------------------------------------------------------------------------------------

const browser = await launchChromium();
let failed = null;
let n = 0;
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  const pageErrors = [];
  const visited = [];
  page.on("framenavigated", (f) => { if (f === page.mainFrame()) visited.push(f.url()); });
  page.on("pageerror", (e) => pageErrors.push(e.message));
  // Every API answer of 400 or more is printed, so a failing step shows what the server refused.
  page.on("response", async (res) => {
    if (!res.url().includes("/++api++") || res.status() < 400) return;
    const body = await res.text().catch(() => "");
    console.log(`volto-sso: api ${res.request().method()} ${res.url()} -> ${res.status()} ${body.slice(0, 300)}`);
  });
  ({ n, failed } = await runSteps(page, steps, { label: "volto-sso", artifacts, visited, pageErrors }));
} catch (e) {
  console.log(`volto-sso: FAIL setup: ${e.message}`);
  failed = "setup";
} finally {
  await browser.close();
}
process.exit(summary("volto-sso", steps, n, failed));
