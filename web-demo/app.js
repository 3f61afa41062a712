// The offline editor: a plain ES module on top of host-wasm (no server, no framework, no build step).
// Every read and write is a REST API request answered by the engine compiled to WebAssembly,
// persisted in IndexedDB. The requests are the ones a client of host-server would send.
import init, { openSite } from "./pkg/engine.js";

const params = new URLSearchParams(location.search);
// ?server=<url>&login=<login>: a replica of that server's site (issue 18); the password is kept in
// sessionStorage by the connect form, never in the URL.
const SERVER = params.get("server");
const SERVER_LOGIN = params.get("login") || "";
const SITE_NAME = params.get("site") || (SERVER ? `replica:${SERVER}:${SERVER_LOGIN}` : "web-demo");
// ?languages=en,de opens (or creates) the site with the multilingual-content profile: one language
// root folder per language. The settings are stored, so later opens need not repeat it.
const LANGUAGES = (params.get("languages") || "").split(",").map((s) => s.trim()).filter(Boolean);
const ML_SITE = { site: "web-demo-multilingual", languages: "en,de" }; // the header's "multilingual site" link
const BASE = new URL("api", location.href).href.replace(/\/$/, ""); // e.g. http://127.0.0.1:8766/api
const USER = "admin";
const PASSWORD = "offline-admin"; // 8 characters or more: the password policy holds for a new site's admin
const AUTH = "Basic " + btoa(`${USER}:${PASSWORD}`); // the demo's local admin (created on first open)

const $ = (sel) => document.querySelector(sel);
let site;
let siteTitle = "Site";
/** The selected item: {path, type, folderish, obj}. */
let selected = null;
/** Lock tokens of the locks this page took (object path → token); kept in memory only. */
const locks = new Map();
/** Copied or cut item waiting to be pasted: {mode: "copy" | "cut", path, title}. */
let clipboard = null;
/** Multilingual sites: {languages: [{token, title}], roots: {code: path}}; null otherwise. */
let ml = null;
/** The current language (multilingual sites): the tree shows that language root's navigation. */
let lang = null;
/** The last translations of the selected item ({code: path}), for the language switcher. */
let translationsOfSelected = {};

// ---- API ------------------------------------------------------------------------------------

/** `path` + `/@endpoint` (the root is "" so that "/@navigation" rather than "//@navigation"). */
const at = (path, endpoint) => `${path === "/" ? "" : path}/${endpoint}`;
/** The object a request path addresses: "/a/b/@lock?x" → "/a/b". */
const objectPathOf = (path) => path.split("?")[0].split("/@")[0] || "/";

/**
 * One API call; resolves with {status, body}; shows API errors to the user and throws them.
 * While this page holds the lock of the addressed object (or of `opts.lockFor`), the request
 * carries its `Lock-Token`.
 */
async function api(method, path, body, opts = {}) {
  // a replica acts as its server user: the host adds the local credentials itself
  const headers = SERVER ? { Accept: "application/json" } : { Accept: "application/json", Authorization: AUTH };
  const token = locks.get(opts.lockFor || objectPathOf(path));
  if (token) headers["Lock-Token"] = token;
  if (opts.ifMatch) headers["If-Match"] = opts.ifMatch;
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await site.fetch(new Request(BASE + path, init));
  const text = await resp.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON */
  }
  if (SERVER && method !== "GET" && resp.ok) scheduleSync();
  // this page's own write moves the version its open form is based on
  const etag = resp.headers.get("ETag");
  if (method === "PATCH" && resp.ok && etag && editedVersion.has(objectPathOf(path))) editedVersion.set(objectPathOf(path), etag);
  if (!resp.ok) {
    const msg = json && json.message ? `${json.type || "Error"}: ${json.message}` : text;
    showError(`${method} ${path.split("?")[0]} failed (${resp.status}) — ${msg}`);
    throw Object.assign(new Error(msg), { status: resp.status, body: json });
  }
  return { status: resp.status, body: json, etag: resp.headers.get("ETag") };
}

/** The version (ETag) of each object whose edit form this page shows, as it was when the form
 *  loaded: saves send it as If-Match, so a save based on a version another tab has changed since
 *  is refused (412) instead of overwriting that tab's edit. */
const editedVersion = new Map();

function showError(msg) {
  const el = $("#error");
  el.textContent = msg;
  el.hidden = false;
}
function clearError() {
  $("#error").hidden = true;
}
/** Run an action from a button: errors are already in the banner; never an unhandled rejection. */
const action = (fn) => (e) => {
  e?.preventDefault?.();
  clearError();
  Promise.resolve()
    .then(fn)
    .catch((err) => {
      if (err.status === undefined) showError(`Unexpected error: ${err.message || err}`);
    });
};

const pathOf = (id) => new URL(id).pathname.slice(new URL(BASE).pathname.length) || "/";
const el = (tag, props = {}, ...children) => {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...children.filter((c) => c != null && c !== false));
  return e;
};
const button = (text, props, onClick) => {
  const b = el("button", { type: "button", ...props }, text);
  if (onClick) b.addEventListener("click", action(onClick));
  return b;
};
const fmtTime = (iso) => {
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleString("en-GB", { dateStyle: "medium", timeStyle: "short" });
};
const languageTitle = (code) => ml?.languages.find((l) => l.token === code)?.title || code;

// ---- tree (@navigation) ---------------------------------------------------------------------

/** The navigation root the tree shows: the current language root, else the site root. */
const navRootPath = () => (ml && lang && ml.roots[lang]) || "/";

async function navigation(path, depth) {
  const nav = (await api("GET", `${at(path, "@navigation")}?expand.navigation.depth=${depth}`)).body;
  // Content items only: not "Home" (the navigation root itself) nor the control panel's extra
  // link items, neither of which has an @type.
  return nav.items.filter((i) => i["@type"]);
}

async function renderTree() {
  const rootPath = navRootPath();
  let top;
  if (rootPath === "/") {
    top = treeNode({ path: "/", title: siteTitle, type: "Site", folderish: true }, await navigation("/", 3));
  } else {
    // A multilingual site: the site root, the root folder of the current language with its
    // navigation, and whatever else the site root's own navigation lists.
    const langNode = treeNode(
      { path: rootPath, title: languageTitle(lang), type: "Language", folderish: true },
      await navigation(rootPath, 3),
    );
    const others = await navigation("/", 1);
    top = treeNode({ path: "/", title: siteTitle, type: "Site", folderish: true }, others, langNode);
  }
  $("#tree").replaceChildren(top);
}

function navItem(item) {
  return {
    path: pathOf(item["@id"]),
    title: item.title,
    type: item["@type"],
    folderish: item.is_folderish,
    state: item.review_state,
    items: item.items || [],
  };
}

function treeNode(info, children, first) {
  const node = el(
    "button",
    { type: "button", className: "node", title: info.path },
    el("span", { className: "icon", ariaHidden: "true" }, info.folderish ? "▸" : "▫"),
    el("span", { className: "label" }, info.title || info.path),
    info.state ? el("span", { className: `dot state-${info.state}`, title: info.state }, el("span", { className: "sr-only" }, info.state)) : null,
    el("span", { className: "type" }, info.type),
  );
  node.dataset.path = info.path;
  if (selected && selected.path === info.path) {
    node.classList.add("selected");
    node.setAttribute("aria-current", "true");
  }
  node.addEventListener("click", action(() => select(info.path)));
  const li = el("li", {}, node);
  const kids = (children || []).map((c) => {
    const n = navItem(c);
    return treeNode(n, n.items);
  });
  if (first) kids.unshift(first);
  if (kids.length) li.append(el("ul", {}, ...kids));
  return li;
}

function markSelected() {
  document.querySelectorAll(".tree .node").forEach((n) => {
    const on = selected && n.dataset.path === selected.path;
    n.classList.toggle("selected", on);
    if (on) n.setAttribute("aria-current", "true");
    else n.removeAttribute("aria-current");
  });
}

// ---- languages ------------------------------------------------------------------------------

async function loadLanguages() {
  const tr = (await api("GET", "/@translations")).body;
  const roots = Object.fromEntries(Object.entries(tr.root || {}).map(([code, url]) => [code, pathOf(url)]));
  if (!Object.keys(roots).length) {
    ml = null;
    lang = null;
    return;
  }
  const panel = (await api("GET", "/@controlpanels/language")).body.data;
  ml = { languages: panel.available_languages, roots };
  if (!lang) lang = panel.default_language.token;
}

function renderLanguages() {
  const box = $("#languages");
  box.hidden = !ml;
  if (!ml) return box.replaceChildren();
  box.replaceChildren(
    el("span", { className: "group-label", id: "languages-label" }, "Language"),
    ...ml.languages.map(({ token, title }) =>
      button(title, { className: "lang", ariaPressed: String(token === lang), lang: token }, () => switchLanguage(token)),
    ),
  );
  box.querySelectorAll("button").forEach((b, i) => (b.dataset.lang = ml.languages[i].token));
}

/** Go to the translation of the selected item in `code`, else to that language's root folder. */
async function switchLanguage(code) {
  lang = code;
  const target = translationsOfSelected[code] || ml.roots[code] || "/";
  renderLanguages();
  await renderTree();
  await select(target);
}

// ---- selection and the editor ---------------------------------------------------------------

async function select(path) {
  clearError();
  const got = await api("GET", path);
  const obj = got.body;
  editedVersion.clear();
  if (got.etag) editedVersion.set(path, got.etag);
  selected = { path, type: obj["@type"], folderish: obj.is_folderish, obj };
  if (path === "/") siteTitle = obj.title || siteTitle;
  // A lock this page took but which is gone (expired, or removed elsewhere): forget its token.
  if (!obj.lock?.locked) locks.delete(path);
  const objLang = obj.language?.token;
  if (ml && objLang && ml.roots[objLang] && objLang !== lang && path !== "/") {
    lang = objLang;
    renderLanguages();
    await renderTree();
  }
  markSelected();
  await renderEditor(obj);
  renderClipboard();
  await renderPanels(obj);
}

/** Re-read the selected item (after an action changed it), keeping the tree in step. */
async function refresh({ tree = false } = {}) {
  if (tree) await renderTree();
  await select(selected.path);
}

/** The text of the page: the plaintext of its first `slate` block in blocks_layout order that
 * is not an attachment link. */
function slateBlock(obj) {
  const blocks = obj.blocks || {};
  for (const id of obj.blocks_layout?.items || []) {
    if (blocks[id] && blocks[id]["@type"] === "slate" && !attachmentOf(blocks[id])) return [id, blocks[id]];
  }
  return [null, null];
}

/** The link of an attachment block (a slate paragraph holding nothing but one link, as "Attach
 * file" adds it): `{url, text}`, else null. */
function attachmentOf(block) {
  const v = block.value;
  if (block["@type"] !== "slate" || !Array.isArray(v) || v.length !== 1) return null;
  const links = (v[0].children || []).filter((c) => c.type === "link");
  const texts = (v[0].children || []).filter((c) => c.type !== "link" && (c.text || "").trim());
  if (links.length !== 1 || texts.length) return null;
  return { url: links[0].data?.url, text: (links[0].children || []).map((c) => c.text || "").join("") };
}

/** JSON Schemas of the content types (`GET @types/<Type>`), by type name. */
const schemas = new Map();

/** The schema add and edit forms are built from: `GET /@types/<Type>` (fetched once per type). */
async function schemaOf(type) {
  if (!schemas.has(type)) schemas.set(type, (await api("GET", `/@types/${encodeURIComponent(type)}`)).body);
  return schemas.get(type);
}

/** Fields the form does not render from the schema: structure (blocks, edited as the Text
 * below), rich text (the demo edits the text as a block), and the change note (its own input). */
const SPECIAL = new Set(["blocks", "blocks_layout", "changeNote"]);

/** One input for field `name` of the schema, holding `value`; null when the demo has no widget
 * for its kind. Ids are `f-<name>`. */
function fieldInput(name, prop, value, required) {
  const id = `f-${name.toLowerCase()}`;
  const label = el("label", { htmlFor: id }, prop.title || name, required ? el("span", { className: "required", title: "required" }, " *") : null);
  const help = prop.description ? el("small", { className: "help" }, prop.description) : null;
  let input;
  if (prop.widget === "richtext" || prop.type === "dict") return null;
  if (isFileField(prop)) {
    // Uploaded as base64 in the JSON body; on an edit form, empty keeps the stored file.
    input = el("input", { id, type: "file", accept: isImageField(prop) ? "image/*" : "" });
    const current = value?.filename ? el("small", { className: "help current-file" }, `Now: ${value.filename} (${fmtSize(value.size)}); choose a file to replace it.`) : null;
    if (required && !value) input.setAttribute("aria-required", "true");
    return el("div", { className: "field" }, label, input, current, help);
  }
  if (prop.type === "boolean") {
    input = el("input", { id, type: "checkbox", checked: value === true });
    return el("div", { className: "check" }, input, label, help);
  }
  if (prop.type === "array") {
    input = el("input", { id, type: "text", value: (value || []).join(", "), placeholder: "comma-separated" });
  } else if (prop.widget === "textarea") {
    input = el("textarea", { id, rows: 2, value: value || "" });
  } else if (prop.widget === "datetime") {
    input = el("input", { id, type: "datetime-local", value: value ? String(value).slice(0, 16) : "" });
  } else if (prop.type === "integer" || prop.type === "number") {
    input = el("input", { id, type: "number", value: value ?? "" });
  } else if (prop.vocabulary) {
    // A choice (language): shown, not edited, in this demo.
    input = el("input", { id, type: "text", value: value?.title || value?.token || value || "", readOnly: true });
  } else {
    const type = { email: "email", url: "url" }[prop.widget] || "text";
    input = el("input", { id, type, value: value ?? "" });
  }
  // Marked, not enforced by the browser: the API's 400 names a missing field.
  if (required) input.setAttribute("aria-required", "true");
  if (prop.maxLength) input.maxLength = prop.maxLength;
  return el("div", { className: "field" }, label, input, help);
}

/** The value the input of field `name` holds, in the JSON the API takes (a chosen file: read
 * and base64-encoded, as plone.restapi takes uploads). */
async function fieldValue(name, prop) {
  const input = document.getElementById(`f-${name.toLowerCase()}`);
  if (!input || input.readOnly) return undefined;
  if (isFileField(prop)) return input.files[0] ? await upload(input.files[0]) : undefined;
  if (prop.type === "boolean") return input.checked;
  if (prop.type === "array") return input.value.split(",").map((s) => s.trim()).filter(Boolean);
  if (prop.widget === "datetime") return input.value ? `${input.value}:00` : null;
  if (prop.type === "integer" || prop.type === "number") return input.value === "" ? null : Number(input.value);
  return input.value;
}

/** Whether a schema property is a file or image field: its factory (`File Upload`, `Image`), as in
 * Plone's schemas, which name no widget for them. */
const isImageField = (prop) => prop.factory === "Image" || prop.widget === "image";
const isFileField = (prop) => prop.factory === "File Upload" || isImageField(prop) || prop.widget === "file";

/** A byte count for people: "93 B", "1.2 KB", "3.4 MB". */
function fmtSize(n) {
  if (n == null) return "?";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** A browser File as the upload JSON the API takes: `{data, encoding: "base64", filename,
 * content-type}`. */
async function upload(file) {
  const dataUrl = await new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(r.result);
    r.onerror = () => reject(r.error);
    r.readAsDataURL(file);
  });
  return {
    data: String(dataUrl).slice(String(dataUrl).indexOf(",") + 1),
    encoding: "base64",
    filename: file.name,
    "content-type": file.type || "application/octet-stream",
  };
}

/** Object URLs of downloaded bytes, by API URL: an `<img>` or a link cannot carry the
 * Authorization header, so the bytes are fetched from the engine and shown from memory. */
const blobUrls = new Map();

/** An object URL holding the bytes the API serves at `url` (absolute, under BASE). */
async function blobUrl(url) {
  if (!blobUrls.has(url)) {
    const resp = await site.fetch(new Request(url, { headers: { Authorization: AUTH } }));
    if (!resp.ok) throw new Error(`GET ${url} failed (${resp.status})`);
    blobUrls.set(url, URL.createObjectURL(await resp.blob()));
  }
  return blobUrls.get(url);
}

/** The fields of the schema's default fieldset that the form renders. */
function formFields(schema) {
  const fieldset = schema.fieldsets.find((f) => f.id === "default") || { fields: [] };
  return fieldset.fields.filter((n) => !SPECIAL.has(n) && schema.properties[n]);
}

async function renderEditor(obj) {
  const path = pathOf(obj["@id"]);
  // Bytes shown before may have changed (a replaced image keeps its URLs): fetch them afresh.
  for (const u of blobUrls.values()) URL.revokeObjectURL(u);
  blobUrls.clear();
  const schema = await schemaOf(obj["@type"]);
  const hasBlocks = Boolean(schema.properties.blocks);
  const [, block] = slateBlock(obj);
  const form = el("form", { id: "edit-form" });
  form.append(
    el("h2", {}, obj.title || "(untitled)"),
    el(
      "div",
      { className: "meta" },
      `${obj.type_title || obj["@type"]} · ${path}`,
      obj.language?.token && ml ? ` · ${obj.language.title}` : null,
      ` · modified ${fmtTime(obj.modified)}`,
    ),
  );
  // The form comes from the type's schema: its default fieldset, labels, widgets, required.
  for (const name of formFields(schema)) {
    const input = fieldInput(name, schema.properties[name], obj[name], schema.required.includes(name));
    if (input) form.append(input);
  }
  if (hasBlocks && !obj.is_folderish) {
    form.append(
      el("label", { htmlFor: "f-text" }, "Text"),
      el("textarea", { id: "f-text", value: block ? block.plaintext || "" : "" }),
    );
  }
  if (schema.properties.changeNote) {
    form.append(
      el("label", { htmlFor: "f-changenote" }, "Change note ", el("span", { className: "optional" }, "(optional, shown in the history)")),
      el("input", { id: "f-changenote", type: "text", placeholder: "What did you change?" }),
    );
  }
  const actions = el("div", { className: "actions" }, el("button", { type: "submit", className: "primary", id: "save" }, "Save"));
  if (path !== "/") {
    actions.append(
      button("Copy", { id: "copy", title: "Copy this item; paste it into a folder" }, () => toClipboard("copy")),
      button("Cut", { id: "cut", title: "Move this item; paste it into another folder" }, () => toClipboard("cut")),
      button("Delete", { id: "delete", className: "danger" }, () => remove(path, obj.title)),
    );
  }
  actions.append(el("span", { className: "saved", id: "saved", role: "status" }));
  form.append(actions);
  form.addEventListener("submit", action(() => save(obj, path, schema)));
  $("#editor").replaceChildren(form);
  for (const name of Object.keys(schema.properties).filter((n) => isFileField(schema.properties[n]))) {
    if (obj[name]) $("#editor").append(await fileView(name, obj[name]));
  }
  if (hasBlocks && !obj.is_folderish) $("#editor").append(await mediaView(obj, path));
  if (obj.is_folderish && obj.items_total) {
    // The folder's own items (the GET above answers them): reaches items below the tree's depth.
    const list = el("ul", { className: "plain contents", id: "contents" });
    for (const item of obj.items) {
      const p = pathOf(item["@id"]);
      list.append(el("li", {}, button(item.title || p, { className: "link", title: p }, () => select(p)), el("span", { className: "muted small-text" }, item["@type"])));
    }
    const more = obj.items_total > obj.items.length ? el("p", { className: "muted" }, `… and ${obj.items_total - obj.items.length} more.`) : null;
    $("#editor").append(el("h3", { className: "contents-title" }, `Contents (${obj.items_total})`), list);
    if (more) $("#editor").append(more);
  }
}

/** What an Image or File object holds: the file's name, type, size and a download link; for an
 * image its size in pixels, the preview scale and every scale (`@@images/<field>/<scale>`). */
async function fileView(name, file) {
  const box = el("section", { className: "file-view", id: `file-${name}` });
  const download = el("a", { className: "download", href: await blobUrl(file.download), download: file.filename }, "Download");
  box.append(
    el("h3", {}, file.width ? "Image" : "File"),
    el(
      "p",
      { className: "file-meta" },
      el("strong", { className: "file-name" }, file.filename),
      ` · ${file["content-type"]} · `,
      el("span", { className: "file-size" }, fmtSize(file.size)),
      file.width ? ` · ${file.width}×${file.height} px` : null,
      " · ",
      download,
    ),
  );
  if (file.scales) {
    const preview = file.scales.preview || file.scales.thumb;
    if (preview) box.append(el("img", { className: "preview", alt: `${file.filename}, preview scale`, src: await blobUrl(preview.download) }));
    const rows = Object.entries(file.scales)
      .sort((a, b) => a[1].width - b[1].width || a[0].localeCompare(b[0]))
      .map(([scale, s]) => {
        const open = el("button", { type: "button", className: "link scale-open" }, "show");
        open.addEventListener(
          "click",
          action(async () => {
            box.querySelector("img.preview")?.setAttribute("src", await blobUrl(s.download));
            box.querySelector("img.preview")?.setAttribute("alt", `${file.filename}, ${scale} scale`);
          }),
        );
        const tr = el("tr", {}, el("td", {}, scale), el("td", { className: "num" }, `${s.width}×${s.height}`), el("td", {}, open));
        tr.dataset.scale = scale;
        return tr;
      });
    box.append(
      el(
        "table",
        { className: "scales", ariaLabel: "Image scales" },
        el("thead", {}, el("tr", {}, el("th", {}, "Scale"), el("th", {}, "Size"), el("th", {}, ""))),
        el("tbody", {}, ...rows),
      ),
    );
  }
  return box;
}

/** A page's images (image blocks, shown from the image's preview scale) and attachments (link
 * blocks to uploaded files), with the buttons that upload new ones into the page's folder. */
async function mediaView(obj, path) {
  const box = el("section", { className: "media", id: "media" }, el("h3", {}, "Images and attachments"));
  const blocks = obj.blocks || {};
  const list = el("ul", { className: "plain media-list" });
  for (const id of obj.blocks_layout?.items || []) {
    const b = blocks[id];
    if (!b) continue;
    if (b["@type"] === "image" && b.url) {
      const img = el("img", { alt: b.alt || "", className: "block-image" });
      try {
        img.src = await blobUrl(`${b.url}/@@images/image/preview`);
      } catch {
        img.alt = `${b.alt || "image"} (not available)`;
      }
      list.append(el("li", { className: "media-image" }, img, el("span", { className: "muted small-text" }, b.alt || pathOf(b.url))));
    }
    const att = attachmentOf(b);
    if (att?.url) {
      const open = button(att.text || pathOf(att.url), { className: "link attachment", title: pathOf(att.url) }, () => select(pathOf(att.url)));
      list.append(el("li", { className: "media-file" }, "📎 ", open));
    }
  }
  if (!list.children.length) list.append(el("li", { className: "muted" }, "None yet."));
  const pickImage = el("input", { type: "file", accept: "image/*", id: "insert-image", className: "sr-only" });
  const pickFile = el("input", { type: "file", id: "attach-file", className: "sr-only" });
  pickImage.addEventListener("change", action(() => addMedia(obj, path, pickImage.files[0], "Image")));
  pickFile.addEventListener("change", action(() => addMedia(obj, path, pickFile.files[0], "File")));
  box.append(
    list,
    el(
      "div",
      { className: "buttons" },
      el("label", { className: "button", htmlFor: "insert-image" }, "Insert image…"),
      pickImage,
      el("label", { className: "button", htmlFor: "attach-file" }, "Attach file…"),
      pickFile,
    ),
    el("p", { className: "hint" }, `Uploads go into “${containerTitle()}” as an Image or a File; the page gets a block that shows or links it.`),
  );
  return box;
}

/** Upload `file` as an Image or File next to the page, then add the block that shows it (an
 * image block) or links it (a paragraph with one link) at the end of the page. */
async function addMedia(obj, path, file, type) {
  if (!file) return;
  const field = type === "Image" ? "image" : "file";
  const created = (await api("POST", containerPath(), { "@type": type, title: file.name, [field]: await upload(file) })).body;
  const id = crypto.randomUUID();
  const block =
    type === "Image"
      ? { "@type": "image", url: created["@id"], alt: file.name }
      : {
          "@type": "slate",
          plaintext: file.name,
          value: [{ type: "p", children: [{ text: "" }, { type: "link", data: { url: created["@id"] }, children: [{ text: file.name }] }, { text: "" }] }],
        };
  const blocks = { ...(obj.blocks || {}), [id]: block };
  const items = [...(obj.blocks_layout?.items || []), id];
  await api("PATCH", path, { blocks, blocks_layout: { items } });
  await refresh({ tree: true });
}

async function save(obj, path, schema) {
  // Only what changed: the schema says how each input maps to the field's JSON.
  const patch = {};
  for (const name of formFields(schema)) {
    const value = await fieldValue(name, schema.properties[name]);
    if (value !== undefined && JSON.stringify(value) !== JSON.stringify(obj[name] ?? (schema.properties[name].type === "array" ? [] : ""))) {
      patch[name] = value;
    }
  }
  if ($("#f-text")) {
    const text = $("#f-text").value;
    const [id0, old] = slateBlock(obj);
    if (!old || (old.plaintext || "") !== text) {
      const id = id0 || crypto.randomUUID();
      const blocks = { ...(obj.blocks || {}) };
      blocks[id] = { "@type": "slate", plaintext: text, value: [{ type: "p", children: [{ text }] }] };
      const items = [...(obj.blocks_layout?.items || [])];
      if (!items.includes(id)) items.push(id);
      Object.assign(patch, { blocks, blocks_layout: { items } });
    }
  }
  const note = $("#f-changenote")?.value.trim();
  if (note) patch.changeNote = note;
  await api("PATCH", path, patch, { ifMatch: editedVersion.get(path) });
  await refresh({ tree: true });
  $("#saved").textContent = "Saved.";
}

async function remove(path, title) {
  if (!confirm(`Delete "${title}" and everything in it?`)) return;
  await api("DELETE", path);
  locks.delete(path);
  if (clipboard?.path === path) clipboard = null;
  selected = null;
  $("#editor").replaceChildren(el("p", { className: "empty" }, "Deleted. Select an item in the tree."));
  $("#panels").replaceChildren();
  $("#side").replaceChildren();
  $("#breadcrumbs").replaceChildren();
  renderClipboard();
  await renderTree();
  await renderBin();
}

// ---- recycle bin (@recyclebin) ----------------------------------------------------------------

let binOpen = false;

/** The bin's items (`GET /@recyclebin`), each with Restore and Purge, and "Empty". */
async function renderBin() {
  const list = $("#bin-list");
  $("#bin-toggle").ariaExpanded = String(binOpen);
  list.hidden = !binOpen;
  if (!binOpen) return;
  const bin = (await api("GET", "/@recyclebin")).body;
  const ul = el("ul", { className: "bin-items" });
  for (const item of bin.items) {
    const below = item.has_children ? " (and what was in it)" : "";
    ul.append(
      el(
        "li",
        { className: "bin-item" },
        el("span", { className: "bin-title", title: item.path }, `${item.title || item.id}`),
        el("small", {}, ` ${item["@type"]} from ${item.parent_path}${below}, deleted ${fmtTime(item.deletion_date)} by ${item.deleted_by}`),
        button("Restore", { className: "bin-restore" }, () => restoreFromBin(item)),
        button("Purge", { className: "bin-purge" }, async () => {
          if (!confirm(`Delete "${item.title || item.id}" for good?`)) return;
          await api("DELETE", `/@recyclebin/${item.recycle_id}`);
          await renderBin();
        }),
      ),
    );
  }
  const empty = bin.items.length
    ? button("Empty the recycle bin", { className: "bin-empty" }, async () => {
        if (!confirm("Delete everything in the recycle bin for good?")) return;
        await api("DELETE", "/@recyclebin");
        await renderBin();
      })
    : el("p", { className: "hint" }, "The recycle bin is empty.");
  list.replaceChildren(ul, empty);
}

/** Restore to the old place; when that is gone or the id is taken there (400), ask for a folder. */
async function restoreFromBin(item) {
  const url = `/@recyclebin/${item.recycle_id}/restore`;
  let restored;
  try {
    restored = (await api("POST", url, {})).body;
  } catch (err) {
    if (err.status !== 400) throw err;
    const target = prompt(`${err.message}\n\nRestore into which folder (a path such as /news)?`, "/");
    if (!target) return;
    clearError();
    restored = (await api("POST", url, { target_path: target })).body;
  }
  await renderTree();
  await renderBin();
  await select(pathOf(restored.restored_item["@id"]));
}

function containerPath() {
  if (!selected) return navRootPath();
  if (selected.folderish) return selected.path;
  return selected.path.replace(/\/[^/]+$/, "") || "/";
}
function containerTitle() {
  if (!selected) return "the site";
  return selected.folderish ? selected.obj.title : selected.obj.parent?.title || "its folder";
}

/** The add form: the title, plus every other required field of the type's schema
 * (`GET /@types/<Type>`; an Event asks for its start and end). */
async function askTitle(type) {
  clearError();
  const schema = await schemaOf(type);
  const label = (schema.title || type).toLowerCase();
  const input = el("input", { type: "text", id: "new-title", placeholder: `Title of the new ${label}`, required: true, ariaLabel: `Title of the new ${label}` });
  const extra = schema.required.filter((n) => n !== "title" && schema.properties[n]);
  const fields = extra.map((n) => fieldInput(n, schema.properties[n], schema.properties[n].default, true)).filter(Boolean);
  const form = el("form", { className: extra.length ? "create create-fields" : "create" }, input, ...fields, el("button", { type: "submit", className: "primary", id: "create" }, "Create"));
  form.addEventListener(
    "submit",
    action(async () => {
      const parent = containerPath();
      const body = { "@type": type, title: input.value };
      for (const n of extra) {
        const v = await fieldValue(n, schema.properties[n]);
        if (v !== undefined) body[n] = v;
      }
      const created = (await api("POST", parent, body)).body;
      form.remove();
      await renderTree();
      await select(pathOf(created["@id"]));
    }),
  );
  document.querySelector("form.create")?.remove();
  $(".toolbar").after(form);
  input.focus();
}

/** The "+ Other…" menu: the types the API lists as addable at the site root, besides Folder and
 * Page (`GET /@types`). */
async function loadAddMenu() {
  const types = (await api("GET", "/@types")).body.filter((t) => t.addable && !["Folder", "Page"].includes(t.id));
  $("#new-other").replaceChildren(el("option", { value: "" }, "+ Other…"), ...types.map((t) => el("option", { value: t.id }, t.title)));
}

// ---- copy, cut, paste (@copy / @move) -------------------------------------------------------

function toClipboard(mode) {
  clipboard = { mode, path: selected.path, title: selected.obj.title };
  renderClipboard();
}

function renderClipboard() {
  const box = $("#clipboard");
  box.hidden = !clipboard;
  if (!clipboard) return box.replaceChildren();
  box.replaceChildren(
    el("span", { id: "clipboard-text" }, `${clipboard.mode === "cut" ? "Cut" : "Copied"}: “${clipboard.title}”`),
    el(
      "span",
      { className: "buttons" },
      button(`Paste into “${containerTitle()}”`, { id: "paste", className: "primary" }, paste),
      button("Clear", { id: "clear-clipboard" }, () => {
        clipboard = null;
        renderClipboard();
      }),
    ),
  );
}

async function paste() {
  const dest = containerPath();
  const { mode, path } = clipboard;
  const result = (await api("POST", at(dest, mode === "cut" ? "@move" : "@copy"), { source: path }, { lockFor: path })).body;
  const target = pathOf(result[0].target);
  if (mode === "cut") {
    clipboard = null;
    const token = locks.get(path);
    locks.delete(path);
    if (token) locks.set(target, token); // a move keeps the lock
  }
  await renderTree();
  await select(target);
}

// ---- panels ---------------------------------------------------------------------------------

function panel(id, title, ...children) {
  return el("section", { className: "panel", id, ariaLabel: title }, el("h3", {}, title), ...children);
}

async function renderPanels(obj) {
  const path = selected.path;
  const isRoot = path === "/";
  const [crumbs, wf, history, aliases, comments, translations, related] = await Promise.all([
    api("GET", at(path, "@breadcrumbs")).then((r) => r.body),
    api("GET", at(path, "@workflow")).then((r) => r.body),
    api("GET", at(path, "@history")).then((r) => r.body),
    isRoot ? null : api("GET", at(path, "@aliases")).then((r) => r.body),
    obj["@type"] === "Page" ? api("GET", at(path, "@comments")).then((r) => r.body) : null,
    ml ? api("GET", at(path, "@translations")).then((r) => r.body) : null,
    api("GET", at(path, "@related")).then((r) => r.body),
  ]);
  if (selected?.path !== path) return; // another item was selected meanwhile
  renderBreadcrumbs(crumbs);
  translationsOfSelected = Object.fromEntries((translations?.items || []).map((t) => [t.language, pathOf(t["@id"])]));
  const side = [workflowPanel(wf), lockPanel(obj)];
  if (aliases) side.push(aliasesPanel(aliases));
  if (translations && !isRoot) side.push(translationsPanel(obj, translations));
  side.push(relatedPanel(related));
  $("#side").replaceChildren(...side);
  const below = [historyPanel(history)];
  if (comments) below.push(commentsPanel(obj, comments));
  $("#panels").replaceChildren(...below);
}

// related pages (@related): the items nearest by the embedding model given to openSite

function relatedPanel(related) {
  const list = el("ol", { id: "related", className: "related" });
  for (const item of related.items) {
    const a = el("a", { href: "#" }, item.title || item.id);
    a.addEventListener("click", (e) => {
      e.preventDefault();
      action(() => select(pathOf(item["@id"])))();
    });
    list.append(el("li", {}, a, ` · ${item["@type"]} · ${item.similarity.toFixed(2)}`));
  }
  const note = el("p", { className: "hint" }, `by ${embeddingLabel}`);
  return panel("related-panel", "Related", related.items.length ? list : el("p", { className: "empty" }, "Nothing related yet."), note);
}

// breadcrumbs (@breadcrumbs)

function renderBreadcrumbs(crumbs) {
  const rootPath = pathOf(crumbs.root);
  const rootLabel = rootPath === "/" ? "Home" : languageTitle(rootPath.slice(1));
  const entries = [{ path: rootPath, title: rootLabel }, ...crumbs.items.map((i) => ({ path: pathOf(i["@id"]), title: i.title }))];
  const ol = el("ol");
  entries.forEach((e, i) => {
    const last = i === entries.length - 1;
    ol.append(
      el(
        "li",
        {},
        last
          ? el("span", { ariaCurrent: "page" }, e.title)
          : button(e.title, { className: "link", title: e.path }, () => select(e.path)),
      ),
    );
  });
  $("#breadcrumbs").replaceChildren(ol);
}

// workflow (@workflow)

function workflowPanel(wf) {
  const transitions = wf.transitions.map((t) => {
    const id = t["@id"].split("/@workflow/")[1];
    const b = button(t.title, { className: `transition`, title: `Transition: ${id}` }, async () => {
      await api("POST", at(selected.path, `@workflow/${id}`), {});
      await refresh({ tree: true });
    });
    b.dataset.transition = id;
    return b;
  });
  return panel(
    "workflow",
    "Workflow",
    wf.state
      ? el("p", {}, "State: ", el("strong", { id: "wf-state", className: `state state-${wf.state.id}` }, wf.state.title))
      : el("p", { className: "muted", id: "wf-state" }, "No workflow (the site root is always visible)."),
    transitions.length ? el("div", { className: "buttons" }, ...transitions) : null,
  );
}

// locking (@lock)

function lockPanel(obj) {
  const path = selected.path;
  const lock = obj.lock || { locked: false };
  const mine = locks.has(path);
  let status;
  if (!lock.locked) status = "Unlocked.";
  else if (mine) status = `Locked by you since ${fmtTime(lock.created)}; your edits carry the lock token.`;
  else
    status = `Locked by ${lock.creator_name || lock.creator} since ${fmtTime(lock.created)}. This page does not hold the lock token, so changes are refused until it is unlocked.`;
  const buttons = el("div", { className: "buttons" });
  if (!lock.locked) {
    buttons.append(
      button("Lock", { id: "lock", title: "Lock against edits by others" }, async () => {
        const info = (await api("POST", at(path, "@lock"), {})).body;
        locks.set(path, info.token);
        await refresh();
      }),
    );
  } else {
    buttons.append(
      button("Unlock", { id: "unlock" }, async () => {
        const force = !mine && lock.creator !== USER;
        await api("DELETE", at(path, "@lock"), force ? { force: true } : undefined);
        locks.delete(path);
        await refresh();
      }),
    );
  }
  return panel(
    "locking",
    "Lock",
    el(
      "p",
      { id: "lock-status", className: lock.locked ? (mine ? "lock mine" : "lock other") : "lock" },
      status,
    ),
    buttons,
  );
}

// history (@history)

function historyPanel(entries) {
  const path = selected.path;
  const list = el("ol", { id: "history", className: "history" });
  const newestVersion = entries.find((e) => e.type === "versioning")?.version;
  for (const e of entries) {
    const who = e.actor?.fullname || e.actor?.id || "";
    const li = el("li", { className: `hist ${e.type}` });
    if (e.type === "versioning") {
      li.dataset.version = e.version;
      li.append(
        el(
          "div",
          { className: "hist-head" },
          el("strong", {}, e.version === 0 ? "Created" : "Edited"),
          ` · version ${e.version}${e.version === newestVersion ? " (current)" : ""} · ${who} · ${fmtTime(e.time)}`,
        ),
      );
    } else {
      li.append(
        el(
          "div",
          { className: "hist-head" },
          el("strong", {}, e.transition_title),
          ` → ${e.state_title} · ${who} · ${fmtTime(e.time)}`,
        ),
      );
    }
    if (e.comments) li.append(el("div", { className: "note" }, e.comments));
    if (e.type === "versioning") {
      const btns = el("div", { className: "buttons" }, button("View", { className: "small view-version" }, () => viewVersion(path, e.version)));
      if (e.may_revert && e.version !== newestVersion) btns.append(button("Revert to this", { className: "small revert" }, () => revert(path, e.version)));
      li.append(btns);
    }
    list.append(li);
  }
  return panel(
    "history-panel",
    `History (${entries.length} ${entries.length === 1 ? "entry" : "entries"}, newest first)`,
    el("div", { id: "version-view" }),
    entries.length ? list : el("p", { className: "muted" }, "No history yet."),
  );
}

async function viewVersion(path, version) {
  const old = (await api("GET", at(path, `@history/${version}`))).body;
  const [, block] = slateBlock(old);
  const box = $("#version-view");
  box.className = "version-view";
  box.replaceChildren(
    el("h4", {}, `Version ${version}`),
    el("dl", {}, el("dt", {}, "Title"), el("dd", {}, old.title || ""), el("dt", {}, "Description"), el("dd", {}, old.description || "—")),
    block ? el("dl", {}, el("dt", {}, "Text"), el("dd", { className: "old-text" }, block.plaintext || "")) : null,
    el(
      "div",
      { className: "buttons" },
      button(`Revert to version ${version}`, { className: "revert-shown" }, () => revert(path, version)),
      button("Close", { id: "close-version" }, () => {
        box.replaceChildren();
        box.className = "";
      }),
    ),
  );
  box.scrollIntoView({ block: "nearest" });
}

async function revert(path, version) {
  if (!confirm(`Revert to version ${version}? The current state stays in the history.`)) return;
  await api("PATCH", at(path, "@history"), { version });
  await refresh({ tree: true });
  $("#saved").textContent = `Reverted to version ${version}.`;
}

// aliases (@aliases)

function aliasesPanel(data) {
  const path = selected.path;
  const list = el("ul", { id: "aliases", className: "plain" });
  for (const a of data.items) {
    const li = el(
      "li",
      {},
      el("code", {}, a.path),
      a.manual ? null : el("span", { className: "muted" }, " (left by a move)"),
      button("Remove", { className: "small remove-alias", ariaLabel: `Remove alias ${a.path}` }, async () => {
        await api("DELETE", at(path, "@aliases"), { items: [{ path: a.path }] });
        await refresh();
      }),
    );
    li.dataset.alias = a.path;
    list.append(li);
  }
  const input = el("input", { type: "text", id: "alias-path", placeholder: "/old-address", required: true });
  const form = el(
    "form",
    { className: "inline", id: "alias-form" },
    el("label", { htmlFor: "alias-path" }, "New alias (another path that leads here)"),
    el("div", { className: "row" }, input, el("button", { type: "submit", id: "add-alias" }, "Add")),
  );
  form.addEventListener(
    "submit",
    action(async () => {
      await api("POST", at(path, "@aliases"), { items: [{ path: input.value.trim() }] });
      await refresh();
    }),
  );
  return panel("aliases-panel", "Aliases", data.items.length ? list : el("p", { className: "muted", id: "aliases" }, "No aliases."), form);
}

// comments (@comments)

function commentsPanel(obj, data) {
  const path = selected.path;
  const canReply = data.permissions?.can_reply;
  const children = new Map(); // parent id (or "") → comments
  for (const c of data.items) {
    const k = c.in_reply_to || "";
    if (!children.has(k)) children.set(k, []);
    children.get(k).push(c);
  }
  const thread = (parent) => {
    const ul = el("ul", { className: "comments" });
    for (const c of children.get(parent) || []) ul.append(commentItem(path, c, canReply, thread));
    return ul;
  };
  const parts = [];
  if (!canReply) {
    parts.push(
      el(
        "div",
        { className: "notice", id: "discussion-off" },
        el("p", {}, "Discussion is off for this page: comments need discussion enabled for the site (the discussion control panel) and on the page."),
        button("Enable discussion", { id: "enable-discussion", className: "primary" }, async () => {
          const panel = (await api("GET", "/@controlpanels/discussion")).body;
          if (!panel.data.globally_enabled) {
            await api("PATCH", "/@controlpanels/discussion", { globally_enabled: true });
          }
          await api("PATCH", path, { allow_discussion: true });
          await refresh();
        }),
      ),
    );
  }
  parts.push(data.items.length ? thread("") : el("p", { className: "muted" }, "No comments yet."));
  if (canReply) {
    const ta = el("textarea", { id: "new-comment", rows: 2, required: true });
    const form = el(
      "form",
      { className: "inline", id: "comment-form" },
      el("label", { htmlFor: "new-comment" }, "Add a comment"),
      ta,
      el(
        "div",
        { className: "buttons" },
        el("button", { type: "submit", id: "post-comment", className: "primary" }, "Comment"),
        button("Turn discussion off", { id: "disable-discussion" }, async () => {
          await api("PATCH", path, { allow_discussion: false });
          await refresh();
        }),
      ),
    );
    form.addEventListener(
      "submit",
      action(async () => {
        await api("POST", at(path, "@comments"), { text: ta.value });
        await refresh();
      }),
    );
    parts.push(form);
  }
  return panel("comments-panel", `Comments (${data.items_total})`, ...parts);
}

function commentItem(path, c, canReply, thread) {
  const body = el("p", { className: "comment-text" }, c.text?.data ?? "");
  const li = el(
    "li",
    { className: "comment" },
    el("div", { className: "comment-head" }, el("strong", {}, c.author_name), ` · ${fmtTime(c.creation_date)}`, c.modification_date !== c.creation_date ? " (edited)" : null),
    body,
  );
  li.dataset.id = c.comment_id;
  const url = at(path, `@comments/${c.comment_id}`);
  const textForm = (label, initial, submitText, send) => {
    li.querySelector("form.comment-edit")?.remove();
    const ta = el("textarea", { rows: 2, value: initial, className: "comment-input", required: true, ariaLabel: label });
    const form = el("form", { className: "comment-edit" }, ta, el("div", { className: "buttons" }, el("button", { type: "submit", className: "primary small" }, submitText), button("Cancel", { className: "small" }, () => form.remove())));
    form.addEventListener("submit", action(() => send(ta.value)));
    btns.after(form);
    ta.focus();
  };
  const btns = el("div", { className: "buttons" });
  if (canReply)
    btns.append(
      button("Reply", { className: "small reply" }, () =>
        textForm(`Reply to ${c.author_name}`, "", "Send reply", async (text) => {
          await api("POST", url, { text });
          await refresh();
        }),
      ),
    );
  if (c.is_editable)
    btns.append(
      button("Edit", { className: "small edit-comment" }, () =>
        textForm("Edit the comment", c.text?.data ?? "", "Save comment", async (text) => {
          await api("PATCH", url, { text });
          await refresh();
        }),
      ),
    );
  if (c.is_deletable)
    btns.append(
      button("Delete", { className: "small danger delete-comment" }, async () => {
        if (!confirm("Delete this comment and its replies?")) return;
        await api("DELETE", url);
        await refresh();
      }),
    );
  li.append(btns, thread(c.comment_id));
  return li;
}

// translations (@translations, @translation-locator)

function translationsPanel(obj, data) {
  const path = selected.path;
  const own = obj.language?.token;
  const list = el("ul", { id: "translations", className: "plain" });
  const have = new Set([own]);
  for (const t of data.items) {
    have.add(t.language);
    const p = pathOf(t["@id"]);
    const li = el(
      "li",
      {},
      el("span", { className: "lang-tag" }, t.language),
      button(p, { className: "link", title: `Open the ${languageTitle(t.language)} translation` }, () => select(p)),
      button("Unlink", { className: "small unlink", ariaLabel: `Unlink the ${languageTitle(t.language)} translation` }, async () => {
        await api("DELETE", at(path, "@translations"), { language: t.language });
        await refresh();
      }),
    );
    li.dataset.language = t.language;
    list.append(li);
  }
  const missing = ml.languages.filter((l) => !have.has(l.token));
  const translate = missing.map((l) => {
    const b = button(`Translate into ${l.title}`, { className: "translate" }, () => createTranslation(obj, l.token));
    b.dataset.lang = l.token;
    return b;
  });
  const input = el("input", { type: "text", id: "link-path", placeholder: "/de/some-page", required: true });
  const form = el(
    "form",
    { className: "inline", id: "link-form" },
    el("label", { htmlFor: "link-path" }, "Link an existing item as a translation (its path)"),
    el("div", { className: "row" }, input, el("button", { type: "submit", id: "link-translation" }, "Link")),
  );
  form.addEventListener(
    "submit",
    action(async () => {
      await api("POST", at(path, "@translations"), { id: input.value.trim() });
      await refresh();
    }),
  );
  return panel(
    "translations-panel",
    "Translations",
    el("p", {}, "This item is in ", el("strong", {}, obj.language?.title || own || "no language"), "."),
    data.items.length ? list : el("p", { className: "muted", id: "translations" }, "No translations linked."),
    translate.length ? el("div", { className: "buttons" }, ...translate) : null,
    form,
  );
}

/** A new item in `code`, placed where @translation-locator says, linked as a translation. */
async function createTranslation(obj, code) {
  const where = pathOf((await api("GET", `${at(selected.path, "@translation-locator")}?target_language=${code}`)).body["@id"]);
  const created = (
    await api("POST", where, {
      "@type": obj["@type"],
      title: `${obj.title} (${code})`,
      description: obj.description || "",
      language: code,
      translation_of: obj.UID,
    })
  ).body;
  lang = code;
  renderLanguages();
  await renderTree();
  await select(pathOf(created["@id"]));
}

// ---- server sync (replica sites) ------------------------------------------------------------

let syncTimer = null;
/** Sync soon (after a write). The host runs one round of a replica at a time across all its tabs
 *  and skips a call made meanwhile (`skipped` in the status). */
function scheduleSync() {
  clearTimeout(syncTimer);
  syncTimer = setTimeout(() => syncNow().catch(() => {}), 300);
}
async function syncNow() {
  if (!site?.isReplica) return;
  const st = await site.sync();
  await renderSync(st);
}
async function renderSync(st = site.syncStatus()) {
  $("#sync-state").hidden = false;
  const online = $("#sync-online");
  online.textContent = st.online ? "online" : "offline";
  online.className = `badge ${st.online ? "online" : "offline"}`;
  $("#sync-pending").textContent = `${st.pending} write${st.pending === 1 ? "" : "s"} waiting`;
  $("#sync-offline").checked = st.held; // "work offline" may have been set in another tab
  // one tab of a replica syncs at a time (a Web Lock): this tab's round was skipped, the other
  // tab's round sends the writes
  $("#sync-skipped").hidden = !st.skipped;
  $("#sync-error").textContent = st.lastError ? `(${st.lastError})` : "";
  await renderConflicts();
}

const shown = (v) => (v === undefined || v === null ? "" : typeof v === "string" ? v : JSON.stringify(v));
/** The fields worth showing side by side: those an editor sets that differ between the versions. */
function differingFields(local, server) {
  const skip = new Set(["@id", "@type", "UID", "id", "parent", "items", "items_total", "@components", "modified", "created", "version", "previous_item", "next_item", "allow_discussion", "is_folderish", "lock", "layout", "type_title", "batching", "owner"]);
  // the local copy holds the replicated fields only: compare those (all the server's when none)
  const keys = new Set(local ? Object.keys(local) : Object.keys(server || {}));
  return [...keys].filter((k) => !skip.has(k) && shown(local?.[k]) !== shown(server?.[k] && typeof server[k] === "object" && "token" in server[k] ? server[k].token : server?.[k]));
}

async function renderConflicts() {
  const box = $("#conflicts");
  const list = site.conflicts();
  box.hidden = list.length === 0;
  box.replaceChildren(el("h2", {}, `Conflicts (${list.length})`));
  for (const c of list) {
    const w = c.write;
    const what = w ? `${w.method} ${w.path}` : "an unreadable stored write";
    const fields = differingFields(c.local, c.server);
    const table = el("table", { className: "conflict-fields" }, el("tr", {}, el("th", {}, "field"), el("th", {}, "mine (this browser)"), el("th", {}, "theirs (server)"), el("th", {}, "merge: take")));
    for (const f of fields) {
      const sv = c.server?.[f] && typeof c.server[f] === "object" && "token" in c.server[f] ? c.server[f].token : c.server?.[f];
      const pick = el("select", { name: f }, el("option", { value: "mine" }, "mine"), el("option", { value: "theirs" }, "theirs"));
      table.append(el("tr", {}, el("td", {}, f), el("td", { className: "mine" }, shown(c.local?.[f])), el("td", { className: "theirs" }, c.server ? shown(sv) : "(none on the server)"), el("td", {}, pick)));
    }
    const merge = async () => {
      const merged = {};
      for (const sel of table.querySelectorAll("select")) if (sel.value === "mine" && c.local && sel.name !== "review_state") merged[sel.name] = c.local[sel.name];
      await site.resolveConflict(c.id, "merge", merged);
      await syncNow();
    };
    const article = el("article", { className: "conflict" },
        el("p", {}, el("strong", {}, what), ` — the server answered ${c.status || "nothing usable"}: ${c.message}`),
        c.local || c.server ? table : el("pre", {}, c.raw || ""),
        el("div", { className: "buttons" },
          button("Keep mine", { className: "keep-mine", disabled: !w }, async () => { await site.resolveConflict(c.id, "mine"); await syncNow(); }),
          button("Take theirs", { className: "take-theirs" }, async () => { await site.resolveConflict(c.id, "theirs"); await renderSync(); await refresh({ tree: true }); }),
          button("Merge", { className: "merge", disabled: !w || !c.server }, merge),
        ),
      );
    article.dataset.id = String(c.id);
    box.append(article);
  }
}

/** Log out: the server token ends and the local copy is deleted from this browser profile
 *  (writes not sent yet are lost, after a confirmation). */
async function logout() {
  const pending = site.pending();
  if (pending > 0 && !confirm(`${pending} write(s) are not on the server yet. Log out and discard them?`)) return;
  await site.logout(pending > 0);
  sessionStorage.removeItem(`password:${SERVER}:${SERVER_LOGIN}`);
  location.search = params.has("nosw") ? "?nosw" : "";
}

function setupConnectForm() {
  $("#connect-server").value = SERVER || "";
  $("#connect-login").value = SERVER_LOGIN;
  $("#connect-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const server = $("#connect-server").value.trim().replace(/\/$/, "");
    const login = $("#connect-login").value.trim();
    sessionStorage.setItem(`password:${server}:${login}`, $("#connect-password").value);
    const keep = params.has("nosw") ? "&nosw" : "";
    location.search = `?server=${encodeURIComponent(server)}&login=${encodeURIComponent(login)}${keep}`;
  });
}

// ---- start ----------------------------------------------------------------------------------

function renderSiteSwitch() {
  const link = $("#site-switch");
  if (SITE_NAME === ML_SITE.site || ml) {
    link.textContent = "Open the default site";
    link.href = "?";
  } else {
    link.textContent = "Open a multilingual site (en, de)";
    link.href = `?site=${ML_SITE.site}&languages=${ML_SITE.languages}`;
  }
}

// The embedding model of @related: the static model when ./model/ serves one (see
// scripts/prepare-embedding-model.sh and web-demo/README.md), else the test embedder (shared words).
let embeddingLabel = "the test embedder (shared words)";
async function embeddingModel() {
  try {
    const [m, t] = await Promise.all([fetch("./model/model.safetensors"), fetch("./model/tokenizer.json")]);
    if (m.ok && t.ok) {
      const model = new Uint8Array(await m.arrayBuffer());
      const tokenizer = new Uint8Array(await t.arrayBuffer());
      embeddingLabel = `the static model (${(model.length / 1e6).toFixed(1)} MB)`;
      return { name: "minilm-static", model, tokenizer };
    }
  } catch {
    /* no model served */
  }
  return "test";
}

async function main() {
  try {
    await init();
    setupConnectForm();
    const opts = { baseUrl: BASE, adminPassword: PASSWORD, title: LANGUAGES.length ? "My multilingual site" : "My offline site" };
    if (SERVER) {
      const password = sessionStorage.getItem(`password:${SERVER}:${SERVER_LOGIN}`) || undefined;
      Object.assign(opts, { server: SERVER, credentials: { login: SERVER_LOGIN, password } });
      delete opts.adminPassword;
    }
    opts.embeddingModel = await embeddingModel();
    if (LANGUAGES.length) Object.assign(opts, { profiles: ["multilingual-content"], languages: LANGUAGES });
    site = await openSite(SITE_NAME, opts);
  } catch (e) {
    showError(`Cannot start: ${e.message || e}`);
    $("#status").textContent = "failed";
    return;
  }
  site.onchange = () => renderTree().catch(() => {}); // another tab saved something
  if (site.isReplica) {
    window.site = site; // for the console and the end-to-end test
    site.onsync = () => renderTree().catch(() => {});
    $("#sync-now").addEventListener("click", action(syncNow));
    $("#sync-offline").addEventListener("change", async (e) => {
      await site.setOnline(!e.target.checked).catch((err) => showError(err.message || String(err)));
      if (!e.target.checked) scheduleSync();
      else renderSync().catch(() => {});
    });
    $("#sync-logout").addEventListener("click", action(logout));
    setInterval(() => syncNow().catch(() => {}), 5000);
    await renderSync();
  }
  $("#new-folder").addEventListener("click", action(() => askTitle("Folder")));
  $("#new-page").addEventListener("click", action(() => askTitle("Page")));
  $("#bin-toggle").addEventListener(
    "click",
    action(async () => {
      binOpen = !binOpen;
      await renderBin();
    }),
  );
  $("#new-other").addEventListener("change", (e) => {
    const type = e.target.value;
    e.target.value = "";
    if (type) action(() => askTitle(type))();
  });
  try {
    siteTitle = (await api("GET", "/")).body.title || siteTitle;
    await loadLanguages();
    await loadAddMenu();
    renderLanguages();
    renderSiteSwitch();
    await renderTree();
    await select(navRootPath());
  } catch {
    /* shown */
  }
  $("#status").textContent = SERVER
    ? `replica of ${SERVER} as ${SERVER_LOGIN}`
    : `site "${SITE_NAME}"${ml ? " · multilingual" : ""} · ${BASE}`;
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
