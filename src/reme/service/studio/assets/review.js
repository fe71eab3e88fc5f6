// Review what the memory did: the journal of runs, a run with its actions and per-node diffs,
// revert (what it will skip and why; force behind a second confirmation), the digest audit,
// today's proactive agenda, and the captured sessions.
import { job } from "./api.js";
import { h, link, route } from "./dom.js";
import { t } from "./i18n.js";
import { confirmBox, failure, show, toast } from "./ui.js";

function counts(run) {
  const by = {};
  for (const a of run.actions) by[a.action] = (by[a.action] || 0) + 1;
  const parts = Object.entries(by).map(([k, v]) => `${v} ${k}`);
  if (run.failed_units.length) parts.push(`${run.failed_units.length} failed`);
  return parts.join(", ") || "—";
}

async function timeline() {
  const reply = await job("journal", { limit: 50 });
  if (!reply.success) return failure(reply);
  const runs = reply.metadata.runs || [];
  if (!runs.length) return h("p", { class: "muted" }, t("Nothing to review yet."));
  return h("ol", { class: "timeline" }, runs.map((run) =>
    h("li", { class: "run " + run.kind },
      h("time", {}, String(run.started_at || "")), " ",
      h("span", { class: "badge" }, run.kind), " ",
      link(run.run_id, "run", run.run_id),
      run.reverts ? h("span", { class: "muted" }, ` ↶ ${run.reverts}`) : null,
      h("span", { class: "muted" }, " · " + counts(run)))));
}

// Topics resolved or suppressed on this page: a live refresh (the truth source changed) no longer lists
// them, but the user still sees what they just did, marked done, until they leave the page.
const doneHere = new Map();

async function agenda() {
  const reply = await job("proactive_read", { include_content: false });
  if (!reply.success) return failure(reply);
  const listed = reply.metadata.topics || [];
  const topics = [...listed, ...[...doneHere.values()].filter((d) => !listed.some((x) => x.id === d.id))];
  if (!topics.length) return h("p", { class: "muted" }, t("No topics today."));
  const markDone = (li) => {
    li.classList.add("resolved");
    li.querySelectorAll("button").forEach((b) => (b.disabled = true));
  };
  const act = (topic, reason, li) => async () => {
    const done = await job("proactive_resolve", { topic_id: topic.id, reason });
    if (!done.success) return toast(done.answer, "error");
    doneHere.set(topic.id, topic);
    markDone(li);
    toast(`${t("Resolve")}: ${topic.title}`);
  };
  return h("ul", { class: "agenda" }, topics.map((topic) => {
    const li = h("li", { class: "topic", dataset: { topic: topic.id } },
      h("strong", {}, String(topic.title || topic.id)),
      h("span", { class: "muted" }, ` · ${Number(topic.confidence ?? 0).toFixed(2)}`),
      h("div", {}, String(topic.reason || "")),
      (topic.paths || []).length ? h("div", {}, topic.paths.map((p, i) => [i ? ", " : "", link(p, "note", p)])) : null);
    li.append(h("div", { class: "buttons" },
      h("button", { type: "button", dataset: { action: "resolve" }, onclick: act(topic, "resolved in Studio", li) }, t("Resolve")),
      h("button", { type: "button", dataset: { action: "suppress" }, onclick: act(topic, "suppressed in Studio: not wanted", li) }, t("Suppress"))));
    if (doneHere.has(topic.id)) markDone(li);
    return li;
  }));
}

async function audit() {
  const reply = await job("digest_audit", {});
  if (!reply.success) return failure(reply);
  const findings = reply.metadata.findings || [];
  const summary = Object.entries(reply.metadata.counts || {}).map(([k, v]) => `${k}: ${v}`).join(" · ");
  return h("div", {}, h("p", { class: "muted" }, `${reply.metadata.nodes ?? 0} ${t("Nodes")} · ${summary || "0"}`),
    h("ul", { class: "findings" }, findings.slice(0, 200).map((f) =>
      h("li", {}, h("span", { class: "badge" }, f.kind), " ", link(f.path, "note", f.path),
        " ", h("a", { href: route("edit", f.path), class: "muted" }, "✎"), " ", h("span", { class: "muted" }, String(f.detail || ""))))));
}

async function captures() {
  const reply = await job("list", { path: "session/dialog", sort_by: "mtime", extensions: [".jsonl"] });
  if (!reply.success) return h("p", { class: "muted" }, t("Nothing here."));
  const entries = (reply.metadata.entries || []).filter((e) => e.type === "file").sort((a, b) => b.mtime - a.mtime);
  if (!entries.length) return h("p", { class: "muted" }, t("Nothing here."));
  return h("ul", { class: "captures" }, entries.slice(0, 50).map((e) =>
    h("li", {}, link(e.path.split("/").pop(), "note", e.path), h("span", { class: "muted" }, ` · ${new Date(e.mtime * 1000).toLocaleString()} · ${e.size} B`))));
}

// What the memory wrote lately (auto_memory cards, imports, proactive files, digest nodes), newest first.
async function recent() {
  const folders = ["daily", "digest", "imports"];
  const replies = await Promise.all(folders.map((path) => job("list", { path, recursive: true, sort_by: "mtime", limit: 15 })));
  const entries = replies.filter((r) => r.success).flatMap((r) => r.metadata.entries).filter((e) => e.type === "file");
  entries.sort((a, b) => b.mtime - a.mtime);
  if (!entries.length) return h("p", { class: "muted" }, t("Nothing here."));
  return h("ul", { class: "captures recent" }, entries.slice(0, 20).map((e) =>
    h("li", {}, link(e.path, "note", e.path), h("span", { class: "muted" }, ` · ${new Date(e.mtime * 1000).toLocaleString()}`))));
}

// Sections fill in as their jobs answer; the audit (one search per node: seconds on a big digest)
// runs once when the page opens and again on demand, never on every live change.
const SECTIONS = [["runs", "Runs", timeline], ["agenda-section", "Agenda", agenda], ["captures-section", "Captures", captures], ["recent-section", "Recent changes", recent]];

async function fill(box, load) {
  box.replaceChildren(h("p", { class: "muted" }, t("Loading") + "…"));
  box.replaceChildren(await load());
}

export function refreshReview() {
  for (const [cls, , load] of SECTIONS) {
    const box = document.querySelector(`.review-section.${cls} > .section-body`);
    if (box) fill(box, load);
  }
}

export async function reviewView() {
  doneHere.clear();
  const section = (title, cls, load) => {
    const body = h("div", { class: "section-body" });
    fill(body, load);
    return h("section", { class: "review-section " + cls }, h("h2", {}, t(title)), body);
  };
  const auditBody = h("div", { class: "section-body" });
  fill(auditBody, audit);
  return show(t("Review"),
    h("div", { class: "review-grid" },
      SECTIONS.map(([cls, title, load]) => section(title, cls, load)),
      h("section", { class: "review-section audit" },
        h("h2", {}, t("Audit"), " ", h("button", { type: "button", class: "small", dataset: { action: "audit" }, onclick: () => fill(auditBody, audit) }, "↻")),
        auditBody)));
}

// A created node the journal keeps no after-state for: its current text is what the run added.
async function withCreatedText(diff) {
  if (diff.change !== "created" || diff.diff) return diff;
  const current = await job("load", { path: diff.path });
  if (!current.success) return diff;
  const lines = current.metadata.content.replace(/\n$/, "").split("\n");
  return { ...diff, diff: ["--- /dev/null", `+++ b/${diff.path}`, ...lines.map((l) => "+" + l)].join("\n") };
}

function diffView(diff) {
  const pre = h("pre", { class: "diff" });
  for (const line of (diff.diff || "").split("\n")) {
    const cls = line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : line.startsWith("@@") ? "hunk" : "";
    pre.append(h("span", { class: cls }, line + "\n"));
  }
  return h("section", { class: "node-diff" },
    h("h3", {}, h("span", { class: "badge" }, diff.change), " ", link(diff.path, "note", diff.path)),
    diff.note ? h("p", { class: "notice" }, diff.note) : null, pre);
}

// What a revert will do, as the journal job decides it by the revert's own rule (`revert` per diff).
function plan(diffs) {
  const will = { restore: [], delete: [], skip: [] };
  for (const d of diffs) {
    if (d.revert === "skip") will.skip.push([d.path, d.revert_reason]);
    else if (d.revert === "delete") will.delete.push(d.path);
    else if (d.revert === "restore") will.restore.push(d.path);
  }
  return will;
}

function planList(will) {
  const part = (title, items, cls) => items.length
    ? h("div", { class: cls }, h("h3", {}, `${title} (${items.length})`),
      h("ul", {}, items.map((i) => (Array.isArray(i) ? h("li", {}, i[0], " — ", i[1]) : h("li", {}, i)))))
    : null;
  return [part(t("will restore"), will.restore, "will-restore"), part(t("will delete"), will.delete, "will-delete"),
    part(t("will skip"), will.skip, "will-skip")];
}

export async function runView(runId) {
  const reply = await job("journal", { run_id: runId });
  if (!reply.success) return show(runId, failure(reply));
  const { run, diffs } = reply.metadata;
  const result = h("div", { class: "revert-result" });
  const revert = async (force) => {
    const again = await job("journal", { run_id: runId });
    const will = plan(again.success ? again.metadata.diffs : diffs);
    if (!(await confirmBox(t("Revert this run?"), planList(will), t("Revert")))) return;
    let done = await job("dream_revert", { run_id: runId, force: false });
    if (done.success && done.metadata.skipped.length && force) {
      const lost = [h("p", {}, t("Later changes to these files will be lost:")),
        h("ul", {}, done.metadata.skipped.map((s) => h("li", {}, `${s.path} — ${s.reason}`)))];
      if (await confirmBox(t("Force revert"), lost, t("Force revert"))) {
        // only the versions just shown: a file changed again meanwhile is skipped and named, not lost
        done = await job("dream_revert", { run_id: runId, force: true, confirmed: done.metadata.skipped_sha256 });
      }
    }
    if (!done.success) return result.replaceChildren(failure(done));
    const m = done.metadata;
    result.replaceChildren(h("div", { class: "notice", role: "status" },
      h("strong", {}, t("Revert done")), ` · ${t("Restored")} ${m.restored.length} · ${t("Deleted")} ${m.deleted.length} · ${t("Skipped")} ${m.skipped.length}`,
      m.skipped.length ? h("ul", {}, m.skipped.map((s) => h("li", {}, `${s.path} — ${s.reason}`))) : null,
      m.skipped.length ? h("button", { type: "button", class: "danger", dataset: { action: "force" }, onclick: () => revert(true) }, t("Force revert")) : null));
    toast(t("Revert done"));
  };
  return show(`${run.kind} ${run.run_id}`,
    h("p", { class: "muted" }, `${run.started_at || ""} → ${run.finished_at || ""}`, run.reverts ? ` · ↶ ${run.reverts}` : ""),
    h("div", { class: "note-actions" },
      h("button", { type: "button", class: "danger", dataset: { action: "revert" }, onclick: () => revert(false) }, t("Revert"))),
    result,
    h("h2", {}, t("Actions")),
    h("table", { class: "actions" }, h("tbody", {}, run.actions.map((a) =>
      h("tr", {}, h("td", {}, h("span", { class: "badge" }, a.action)), h("td", {}, a.target_path ? link(a.target_path, "note", a.target_path) : ""),
        h("td", {}, String(a.unit || "")), h("td", {}, String(a.reason || "")))))),
    run.failed_units.length ? h("ul", { class: "failures" }, run.failed_units.map((f) => h("li", {}, `${f.unit}: ${f.error}`))) : null,
    h("h2", {}, t("Diffs")), (await Promise.all((diffs || []).map(withCreatedText))).map(diffView));
}
