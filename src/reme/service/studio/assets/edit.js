// Editing through the file jobs: load → save with the sha256 it was based on (compare-and-set).
// A conflict shows both versions side by side and loses neither; create, move and delete confirm.
import { job } from "./api.js";
import { h, route } from "./dom.js";
import { t } from "./i18n.js";
import { ask, confirmBox, failure, show, toast } from "./ui.js";

let dirty = false;

export function hasUnsavedEdits() {
  return dirty;
}

export async function editView(path) {
  const loaded = await job("load", { path });
  const open = document.querySelector("textarea.editor");
  // A live refresh that finds the user typed meanwhile keeps the edits (the save's compare-and-set guards them).
  if (dirty && open && open.getAttribute("aria-label") === path) return open.parentElement;
  if (!loaded.success) return show(path, failure(loaded));
  let base = loaded.metadata.sha256;
  const area = h("textarea", { class: "editor", spellcheck: "false", "aria-label": path });
  area.value = loaded.metadata.content;
  dirty = false;
  area.addEventListener("input", () => (dirty = true));
  const conflictBox = h("div", { class: "conflict-box" });
  const save = async () => {
    const reply = await job("save", { path, content: area.value, expected_sha256: base });
    if (reply.success) {
      base = reply.metadata.sha256;
      dirty = false;
      conflictBox.replaceChildren();
      toast(t("Saved") + " " + path);
      return;
    }
    if (!reply.metadata.conflict) {
      conflictBox.replaceChildren(failure(reply));
      return;
    }
    const current = await job("load", { path });
    const theirs = current.success ? current.metadata.content : "";
    conflictBox.replaceChildren(
      h("div", { class: "conflict", role: "alert" },
        h("p", {}, t("Conflict: the file changed since you opened it.")),
        h("div", { class: "side-by-side" },
          h("section", {}, h("h3", {}, t("Your version")), h("pre", { class: "mine" }, area.value)),
          // a file deleted meanwhile has no disk version: say so rather than show an empty one
          h("section", {}, h("h3", {}, t("Version on disk")), current.success ? h("pre", { class: "theirs" }, theirs) : failure(current))),
        h("div", { class: "buttons" },
          h("button", { type: "button", class: "primary", dataset: { action: "overwrite" }, onclick: async () => {
            base = current.metadata.sha256;
            await save();
          } }, t("Save mine over it")),
          current.success && h("button", { type: "button", dataset: { action: "theirs" }, onclick: async () => {
            if (await confirmBox(t("Keep the disk version"), [h("p", {}, t("Your version"))], t("Confirm"))) {
              area.value = theirs;
              base = current.metadata.sha256;
              dirty = false;
              conflictBox.replaceChildren();
            }
          } }, t("Keep the disk version")))));
  };
  area.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && event.key === "s") {
      event.preventDefault();
      save();
    }
  });
  const pane = show(path,
    h("div", { class: "note-actions" },
      h("button", { type: "button", class: "primary", dataset: { action: "save" }, onclick: save }, t("Save")),
      h("a", { class: "button", href: route("note", path) }, t("Close"))),
    conflictBox, area);
  pane.dataset.path = path;
  area.focus();
  return pane;
}

export async function createNote(folder = "") {
  const path = await ask(t("New"), t("Path of the new note"), folder ? folder.replace(/\/?$/, "/") : "digest/wiki/");
  if (!path) return;
  const full = /\.[^/]+$/.test(path) ? path : path + ".md";
  const exists = await job("stat", { path: full });
  if (exists.success) return toast(`${full} exists`, "error");
  const reply = await job("write", { path: full, content: "" });
  if (!reply.success) return toast(reply.answer, "error");
  location.hash = route("edit", reply.metadata.path);
}

export async function moveNote(path) {
  const info = await job("stat", { path });
  const count = info.success ? info.metadata.inlink_count : 0;
  const dst = await ask(t("Move"), `${t("Move to")} (${count} ${t("inbound link(s) will be rewritten")})`, path);
  if (!dst || dst === path) return;
  const reply = await job("move", { src: path, dst });
  if (!reply.success) return toast(reply.answer, "error");
  toast(`${path} → ${dst}: ${reply.metadata.retargeted_links} ${t("link(s) rewritten")}`);
  location.hash = route("note", reply.metadata.dst);
}

export async function deleteNote(path) {
  const graph = await job("traverse", { path, depth: 1, direction: "backward" });
  const inbound = graph.success ? graph.metadata.edges.filter((e) => e.resolved === path && e.source !== path) : [];
  const body = [h("p", { class: "inbound-count" }, `${inbound.length} ${t("inbound link(s) point here and will become dead")}`)];
  if (inbound.length) body.push(h("ul", {}, inbound.slice(0, 50).map((e) => h("li", {}, e.source))));
  if (!(await confirmBox(`${t("Delete")} ${path}?`, body, t("Delete")))) return;
  const reply = await job("delete", { path });
  if (!reply.success) return toast(reply.answer, "error");
  toast(`${t("Deleted")} ${path}`);
  location.hash = "#/";
}
