// Studio's shell: the hash router, the workspace tree (lazy, by layer), live updates, language,
// theme and keyboard shortcuts. Views live in their own modules.
import { job } from "./api.js";
import { h, route } from "./dom.js";
import { editView, createNote, hasUnsavedEdits } from "./edit.js";
import { language, setLanguage, t } from "./i18n.js";
import { noteView } from "./note.js";
import { refreshReview, reviewView, runView } from "./review.js";
import { searchView } from "./search.js";
import { statusView } from "./status.js";
import { dialog, main, show } from "./ui.js";

const LAYERS = [["daily", "Daily"], ["digest", "Digest"], ["resource", "Resources"], ["session", "Sessions"], ["imports", "Imports"]];
const HIDDEN = new Set(["metadata"]);
const NAV = [["", "Notes"], ["search", "Search"], ["graph", "Graph"], ["review", "Review"], ["status", "Status"], ["chat", "Chat"]];

// A part of the route as written when it is not valid percent-encoding (a hand-typed or foreign
// link): the view then says it cannot find it, instead of the page throwing before any view.
function decoded(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

function parseHash() {
  const [where, query] = location.hash.replace(/^#\/?/, "").split("?");
  const parts = where.split("/").filter(Boolean).map(decoded);
  return { parts, query: new URLSearchParams(query || "") };
}

let rendering = 0;
async function render() {
  const ticket = ++rendering;
  const { parts, query } = parseHash();
  const [view, ...rest] = parts;
  const arg = rest.join("/");
  document.querySelectorAll("#nav a").forEach((a) => a.classList.toggle("active", a.dataset.view === (view === "note" || view === "edit" ? "" : view || "")));
  main().setAttribute("aria-busy", "true");
  try {
    if (view === "note") await noteView(arg, Number(query.get("line")) || 0);
    else if (view === "edit") await editView(arg);
    else if (view === "search") await searchView(arg);
    else if (view === "review") await reviewView();
    else if (view === "run") await runView(arg);
    else if (view === "status") await statusView();
    else if (view === "graph") await (await import("./graph.js")).graphView();
    else if (view === "chat") (await import("./chat.js")).chatView();
    else show(t("Notes"), h("p", { class: "muted" }, t("Select a note in the tree.")));
  } catch (error) {
    show(t("Failed"), h("pre", { class: "failure" }, String(error)));
  } finally {
    if (ticket === rendering) main().setAttribute("aria-busy", "false");
  }
  main().dataset.view = view || "home";
}

// ---- the tree -------------------------------------------------------------------------------

async function fillFolder(details) {
  const path = details.dataset.path;
  const reply = await job("list", { path });
  const box = details.querySelector(":scope > .children");
  if (!reply.success) {
    box.replaceChildren(h("div", { class: "muted" }, String(reply.answer)));
    return;
  }
  const entries = reply.metadata.entries.filter((e) => !HIDDEN.has(e.path));
  const newestFirst = path === "daily" || path.startsWith("daily/") || path.startsWith("session");
  entries.sort((a, b) => (a.type === b.type ? 0 : a.type === "dir" ? -1 : 1) || (newestFirst ? b.path.localeCompare(a.path) : a.path.localeCompare(b.path)));
  box.replaceChildren(...entries.map((e) => (e.type === "dir" ? folder(e.path, e.path.split("/").pop()) : fileItem(e.path))));
  details.dataset.loaded = "true";
  if (!entries.length) box.append(h("div", { class: "muted" }, t("Nothing here.")));
}

function folder(path, label) {
  const details = h("details", { class: "folder", dataset: { path } }, h("summary", {}, label), h("div", { class: "children" }));
  details.addEventListener("toggle", () => {
    if (details.open && !details.dataset.loaded) fillFolder(details);
  });
  return details;
}

function fileItem(path) {
  return h("a", { class: "file", href: route("note", path), dataset: { path } }, path.split("/").pop());
}

async function buildTree() {
  const tree = document.getElementById("tree");
  const reply = await job("list", { path: "" });
  const entries = reply.success ? reply.metadata.entries : [];
  const dirs = new Set(entries.filter((e) => e.type === "dir").map((e) => e.path));
  const items = [];
  for (const [name, label] of LAYERS) if (dirs.has(name)) items.push(folder(name, t(label)));
  const others = entries.filter((e) => !LAYERS.some(([n]) => n === e.path) && !HIDDEN.has(e.path));
  if (others.length) {
    const other = h("details", { class: "folder", open: true }, h("summary", {}, t("Other")), h("div", { class: "children" },
      others.map((e) => (e.type === "dir" ? folder(e.path, e.path) : fileItem(e.path)))));
    items.push(other);
  }
  tree.replaceChildren(
    h("div", { class: "tree-head" }, h("strong", {}, t("Workspace")),
      h("button", { type: "button", class: "small", dataset: { action: "new" }, onclick: () => createNote() }, "+ " + t("New"))),
    ...items);
}

// ---- live updates ---------------------------------------------------------------------------

function onChange(event) {
  const data = JSON.parse(event.data);
  const live = document.getElementById("live");
  live.classList.add("pulse");
  setTimeout(() => live.classList.remove("pulse"), 600);
  const parents = new Set(data.paths.map((p) => p.path.split("/").slice(0, -1).join("/")));
  for (const parent of parents) {
    const details = document.querySelector(`#tree details[data-path="${CSS.escape(parent)}"]`);
    if (details && details.dataset.loaded) fillFolder(details);
  }
  if (parents.has("")) buildTree();
  const view = main().dataset.view;
  const current = main().dataset.path;
  const touched = (prefixes) => data.truncated || data.paths.some((p) => prefixes.some((x) => p.path.startsWith(x)));
  if (view === "note" && current && touched([current])) render();
  else if (view === "edit" && current && touched([current]) && !hasUnsavedEdits()) render();
  else if (view === "review" && touched(["session/", "journal/", "daily/"])) refreshReview();
  window.dispatchEvent(new CustomEvent("reme:change", { detail: data }));
}

function connectLive() {
  const source = new EventSource("/studio/events");
  const live = document.getElementById("live");
  source.addEventListener("open", () => live.classList.add("on"));
  source.addEventListener("error", () => live.classList.remove("on"));
  source.addEventListener("change", onChange);
}

// ---- header: navigation, search, language, theme, keys --------------------------------------

function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  localStorage.setItem("reme-theme", theme);
}

function header() {
  const search = h("input", { id: "search-input", type: "search", placeholder: t("Search the memory…"), "aria-label": t("Search"), autocomplete: "off" });
  search.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && search.value.trim()) location.hash = route("search", search.value.trim());
  });
  const theme = document.documentElement.dataset.theme;
  document.getElementById("top").replaceChildren(
    h("a", { class: "brand", href: "#/" }, "reme ", h("span", {}, "Studio")),
    h("nav", { id: "nav", "aria-label": "views" }, NAV.map(([view, label], i) =>
      h("a", { href: "#/" + view, dataset: { view }, title: `Alt+${i + 1}` }, t(label)))),
    search,
    h("span", { id: "live", title: t("Live") }, "●"),
    h("button", { type: "button", class: "small", dataset: { action: "lang" }, title: t("Language"), onclick: () => {
      setLanguage(language() === "zh" ? "en" : "zh");
      start();
    } }, language() === "zh" ? "EN" : "中文"),
    h("button", { type: "button", class: "small", dataset: { action: "theme" }, title: t("Theme"), onclick: (event) => {
      applyTheme(document.documentElement.dataset.theme === "dark" ? "light" : "dark");
      event.currentTarget.textContent = document.documentElement.dataset.theme === "dark" ? "☀" : "☾";
    } }, theme === "dark" ? "☀" : "☾"));
}

function typing(target) {
  return target.closest("input, textarea, select, [contenteditable]");
}

document.addEventListener("keydown", (event) => {
  if (event.altKey && /^[1-6]$/.test(event.key)) {
    event.preventDefault();
    location.hash = "#/" + NAV[Number(event.key) - 1][0];
  } else if (event.key === "/" && !typing(event.target)) {
    event.preventDefault();
    document.getElementById("search-input").focus();
  } else if (event.key === "e" && !typing(event.target) && main().dataset.view === "note") {
    location.hash = route("edit", main().dataset.path);
  } else if (event.key === "?" && !typing(event.target)) {
    dialog(t("Shortcuts"), [h("ul", {},
      h("li", {}, h("kbd", {}, "/"), " ", t("Search")),
      h("li", {}, h("kbd", {}, "e"), " ", t("Edit")),
      h("li", {}, h("kbd", {}, "Ctrl+S"), " ", t("Save")),
      h("li", {}, h("kbd", {}, "Alt+1…6"), " ", NAV.map(([, l]) => t(l)).join(" · ")))], [[t("Close"), true, "primary"]]);
  }
});

window.addEventListener("beforeunload", (event) => {
  if (hasUnsavedEdits()) event.preventDefault();
});

function start() {
  setLanguage(language());
  header();
  buildTree();
  render();
}

applyTheme(localStorage.getItem("reme-theme") || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"));
window.addEventListener("hashchange", render);
start();
connectLive();
