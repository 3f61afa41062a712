// The offline editor: a plain ES module on top of host-wasm (no server, no framework, no build step).
// Every read and write is a REST API request answered by the engine compiled to WebAssembly,
// persisted in IndexedDB. The requests are the ones a client of host-server would send.
import init, { openSite } from "./pkg/host_wasm.js";

const params = new URLSearchParams(location.search);
const SITE_NAME = params.get("site") || "web-demo";
const BASE = new URL("api", location.href).href.replace(/\/$/, ""); // e.g. http://127.0.0.1:8766/api
const AUTH = "Basic " + btoa("admin:admin"); // the demo's local admin (created on first open)

const $ = (sel) => document.querySelector(sel);
let site;
let selected = null; // {path, type, folderish}

/** One API call; resolves with {status, body}; shows API errors to the user and throws them. */
async function api(method, path, body) {
  const headers = { Accept: "application/json", Authorization: AUTH };
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await site.fetch(new Request(BASE + path, init));
  const text = await resp.text();
  const json = text ? JSON.parse(text) : null;
  if (!resp.ok) {
    const msg = json && json.message ? `${json.type || "Error"}: ${json.message}` : text;
    showError(`${method} ${path} failed (${resp.status}) — ${msg}`);
    throw Object.assign(new Error(msg), { status: resp.status, body: json });
  }
  return { status: resp.status, body: json };
}

function showError(msg) {
  const el = $("#error");
  el.textContent = msg;
  el.hidden = false;
}
function clearError() {
  $("#error").hidden = true;
}

const pathOf = (id) => new URL(id).pathname.slice(new URL(BASE).pathname.length) || "/";
const el = (tag, props = {}, ...children) => {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...children.filter((c) => c != null));
  return e;
};

// ---- tree -----------------------------------------------------------------------------------

async function renderTree() {
  const root = (await api("GET", "/?b_size=1000")).body;
  const tree = $("#tree");
  tree.replaceChildren(await treeNode({ "@id": root["@id"], title: root.title, "@type": "Site", is_folderish: true }, root));
}

async function treeNode(item, loaded) {
  const path = pathOf(item["@id"]);
  const folderish = item.is_folderish ?? item["@type"] !== "Page";
  const node = el(
    "div",
    { className: "node", tabIndex: 0, title: path },
    el("span", { className: "icon" }, folderish ? "▸" : "▫"),
    el("span", { className: "label" }, item.title || item.id || path),
    el("span", { className: "type" }, item["@type"]),
  );
  node.dataset.path = path;
  if (selected && selected.path === path) node.classList.add("selected");
  node.addEventListener("click", () => select(path));
  const li = el("li", {}, node);
  if (folderish) {
    const data = loaded || (await api("GET", `${path === "/" ? "" : path}?b_size=1000`)).body;
    const ul = el("ul");
    for (const child of data.items || []) ul.append(await treeNode(child));
    li.append(ul);
  }
  return li;
}

// ---- editor ---------------------------------------------------------------------------------

async function select(path) {
  clearError();
  const obj = (await api("GET", path)).body;
  selected = { path, type: obj["@type"], folderish: obj.is_folderish };
  document.querySelectorAll(".tree .node").forEach((n) => n.classList.toggle("selected", n.dataset.path === path));
  renderEditor(obj);
}

/** The text of the page: the plaintext of its first `slate` block in blocks_layout order. */
function slateBlock(obj) {
  const blocks = obj.blocks || {};
  for (const id of obj.blocks_layout?.items || []) {
    if (blocks[id] && blocks[id]["@type"] === "slate") return [id, blocks[id]];
  }
  return [null, null];
}

function renderEditor(obj) {
  const path = pathOf(obj["@id"]);
  const isPage = obj["@type"] === "Page";
  const [, block] = slateBlock(obj);
  const form = el("form", { id: "edit-form" });
  form.append(
    el("h2", {}, obj.title || "(untitled)"),
    el("div", { className: "meta" }, `${obj["@type"]} · ${obj["@id"]} · ${obj.review_state ?? "no workflow"} · modified ${obj.modified}`),
    el("label", { htmlFor: "f-title" }, "Title"),
    el("input", { id: "f-title", type: "text", value: obj.title || "" }),
    el("label", { htmlFor: "f-description" }, "Description"),
    el("textarea", { id: "f-description", rows: 2, value: obj.description || "" }),
  );
  if (isPage) {
    form.append(
      el("label", { htmlFor: "f-text" }, "Text"),
      el("textarea", { id: "f-text", value: block ? block.plaintext || "" : "" }),
    );
  }
  const saved = el("span", { className: "saved", id: "saved" });
  const actions = el("div", { className: "actions" }, el("button", { type: "submit", className: "primary", id: "save" }, "Save"));
  if (path !== "/") {
    const del = el("button", { type: "button", className: "danger", id: "delete" }, "Delete");
    del.addEventListener("click", () => remove(path, obj.title));
    actions.append(del);
  }
  actions.append(saved);
  form.append(actions);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    save(obj, path).catch(() => {});
  });
  $("#editor").replaceChildren(form);
}

async function save(obj, path) {
  clearError();
  const patch = { title: $("#f-title").value, description: $("#f-description").value };
  if (obj["@type"] === "Page") {
    const text = $("#f-text").value;
    const [id0] = slateBlock(obj);
    const id = id0 || crypto.randomUUID();
    const blocks = { ...(obj.blocks || {}) };
    blocks[id] = { "@type": "slate", plaintext: text, value: [{ type: "p", children: [{ text }] }] };
    const items = [...(obj.blocks_layout?.items || [])];
    if (!items.includes(id)) items.push(id);
    Object.assign(patch, { blocks, blocks_layout: { items } });
  }
  await api("PATCH", path, patch);
  await renderTree();
  await select(path);
  $("#saved").textContent = "Saved.";
}

async function remove(path, title) {
  if (!confirm(`Delete "${title}" and everything in it?`)) return;
  clearError();
  await api("DELETE", path);
  selected = null;
  $("#editor").replaceChildren(el("p", { className: "empty" }, "Deleted. Select an item in the tree."));
  await renderTree();
}

function containerPath() {
  if (!selected) return "/";
  if (selected.folderish) return selected.path;
  return selected.path.replace(/\/[^/]+$/, "") || "/";
}

function askTitle(type) {
  clearError();
  const input = el("input", { type: "text", id: "new-title", placeholder: `Title of the new ${type.toLowerCase()}`, required: true });
  const form = el("form", { className: "create" }, input, el("button", { type: "submit", className: "primary", id: "create" }, "Create"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const parent = containerPath();
    try {
      const created = (await api("POST", parent === "/" ? "/" : parent, { "@type": type, title: input.value })).body;
      form.remove();
      await renderTree();
      await select(pathOf(created["@id"]));
    } catch {
      /* shown by api() */
    }
  });
  document.querySelector("form.create")?.remove();
  $(".toolbar").after(form);
  input.focus();
}

// ---- start ----------------------------------------------------------------------------------

async function main() {
  try {
    await init();
    site = await openSite(SITE_NAME, { baseUrl: BASE, adminPassword: "admin", title: "My offline site" });
  } catch (e) {
    showError(`Cannot start: ${e.message || e}`);
    $("#status").textContent = "failed";
    return;
  }
  site.onchange = () => renderTree().catch(() => {}); // another tab saved something
  $("#new-folder").addEventListener("click", () => askTitle("Folder"));
  $("#new-page").addEventListener("click", () => askTitle("Page"));
  try {
    await renderTree();
    await select("/");
  } catch {
    /* shown */
  }
  $("#status").textContent = `site "${SITE_NAME}" · ${BASE}`;
  document.body.dataset.ready = "1";
  if ("serviceWorker" in navigator && !params.has("nosw")) {
    navigator.serviceWorker
      .register("./sw.js", { type: "module" })
      .then(() => navigator.serviceWorker.ready)
      .then(() => ($("#sw-status").textContent = "Offline ready: a Service Worker answers /api/ and caches this page."))
      .catch((e) => ($("#sw-status").textContent = `(no Service Worker: ${e.message})`));
  }
}

main();
