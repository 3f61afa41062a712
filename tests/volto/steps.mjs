// The step runner the Volto end-to-end scripts share (editor-day.mjs, offline.mjs, sso.mjs): each
// step runs in order on one page, with a numbered screenshot after it; the first failing step stops
// the run, leaving its screenshot, the page's markup beside it and where the browser was.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

/** Headless Chromium as every Volto script drives it (`CHROMIUM` picks the binary). */
export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

/**
 * Runs `steps` ({name, fn(page)}) on `page`, printing one line per step prefixed with `label`.
 * `visited` (the main frame's addresses) and `pageErrors` (uncaught page errors) are the caller's
 * listeners' lists, shown when a step fails. Returns {n, failed}: how many steps were started and
 * the name of the failed one (null when all passed).
 */
export async function runSteps(page, steps, { label, artifacts, visited = [], pageErrors = [] }) {
  let n = 0;
  for (const s of steps) {
    n += 1;
    const slug = s.name.replace(/[^a-z0-9]+/gi, "-").toLowerCase().slice(0, 60);
    const shot = join(artifacts, `${String(n).padStart(2, "0")}-${slug}.png`);
    const t0 = Date.now();
    try {
      await s.fn(page);
      await page.screenshot({ path: shot });
      console.log(`${label}: ok   ${n}. ${s.name} (${Date.now() - t0} ms) ${shot}`);
    } catch (e) {
      await page.screenshot({ path: shot }).catch(() => {});
      // The page's markup beside the screenshot: what the step looked for may be there but hidden.
      try { writeFileSync(shot.replace(/\.png$/, ".html"), await page.content()); } catch {}
      console.log(`${label}: FAIL ${n}. ${s.name}: ${e.message.split("\n").slice(0, 3).join(" | ")} ${shot}`);
      console.log(`${label}: the browser was at ${page.url()}; its last addresses: ${visited.slice(-6).join(" -> ")}`);
      if (pageErrors.length) console.log(`${label}: page errors: ${pageErrors.join(" | ")}`);
      return { n, failed: s.name };
    }
  }
  return { n, failed: null };
}

/** Prints the steps not run and the summary line; returns the process's exit code. */
export function summary(label, steps, n, failed) {
  for (const s of steps.slice(n)) console.log(`${label}: not run: ${s.name}`);
  console.log(`${label}: ${failed ? n - 1 : n} of ${steps.length} steps passed`);
  return failed ? 1 : 0;
}
