// What the browser tools share: the web demo's folder served over HTTP on a free loopback port,
// and headless Chromium started the way every tool here starts it.
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { dirname, extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

/** The web demo's folder (web-demo/). */
export const demo = join(dirname(fileURLToPath(import.meta.url)), "..");

const types = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };

/** Serve `demo` (each answer with `headers` too); resolves to `{ server, port }`. */
export async function serveDemo(headers = {}) {
  const server = createServer(async (req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, "http://localhost").pathname));
    try {
      const body = await readFile(join(demo, path));
      res.writeHead(200, { "Content-Type": types[extname(path)] || "application/octet-stream", ...headers });
      res.end(body);
    } catch {
      res.writeHead(404);
      res.end();
    }
  });
  const port = await new Promise((res) => server.listen(0, "127.0.0.1", () => res(server.address().port)));
  return { server, port };
}

/** Headless Chromium (`CHROMIUM`, else /usr/bin/chromium). */
export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}
