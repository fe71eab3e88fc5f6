// Status: component health, index progress and pending vectors, failed and pending captures (with
// retry and drop), the job runs that failed lately, the effective configuration (secrets redacted
// by app_config), and a reindex button that follows the rebuild's progress.
import { job } from "./api.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { confirmBox, failure, show, toast } from "./ui.js";

function keyValues(obj) {
  return h("table", { class: "kv" }, h("tbody", {}, Object.entries(obj || {}).map(([k, v]) =>
    h("tr", {}, h("th", {}, k), h("td", {}, typeof v === "object" && v !== null ? JSON.stringify(v) : String(v))))));
}

function progressOf(status) {
  const p = status?.metadata?.components?.index?.progress;
  return p && p.total ? p : null;
}

function ago(seconds) {
  const s = Math.round(Number(seconds) || 0);
  return s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${Math.round(s / 3600)} h`;
}

// Captures the hooks queued that are not saved: failed ones with their reason, a retry and a drop
// button each (and the commands that do the same), pending ones, sessions saved with records skipped.
function capturesBody(reply, refresh) {
  if (!reply.success) return failure(reply);
  const { failed = [], pending = [], damaged = [], retry } = reply.metadata;
  if (!failed.length && !pending.length && !damaged.length) return h("p", { class: "muted" }, t("Every capture is saved."));
  const act = async (event, name, params, done) => {
    event.target.disabled = true;
    const answer = await job(name, params);
    toast(String(answer.answer).split("\n")[0], answer.success ? "info" : "error");
    if (done) done(answer);
    await refresh();
  };
  const drop = async (event, id) => {
    if (await confirmBox(t("Drop this capture?"), [h("p", {}, id), h("p", { class: "muted" }, t("Its transcript is not saved further; what was saved stays."))], t("Drop")))
      await act(event, "capture_drop", { session_id: id });
  };
  const row = (entry, kind) => h("li", { class: "capture-" + kind, dataset: { session: entry.session_id } },
    h("strong", {}, entry.session_id), " ",
    kind === "failed"
      ? [h("span", { class: "muted" }, `${t("failed")} ${entry.attempts}× · ${entry.at}`), h("div", { class: "capture-reason" }, entry.reason)]
      : h("span", { class: "muted" }, `${t("queued")} ${ago(entry.age_s)} ${t("ago")}`),
    entry.transcript_path ? h("div", { class: "muted capture-path" }, entry.transcript_path) : null,
    h("div", { class: "capture-actions" },
      h("button", { type: "button", dataset: { action: "retry-capture" }, onclick: (e) => act(e, "capture_retry", { session_id: entry.session_id }) }, t("Retry")), " ",
      h("button", { type: "button", class: "danger", dataset: { action: "drop-capture" }, onclick: (e) => drop(e, entry.session_id) }, t("Drop")), " ",
      h("code", { class: "muted" }, entry.drop)));
  return [
    failed.length ? [h("h3", {}, t("Failed captures")), h("ul", { class: "captures-failed" }, failed.map((e) => row(e, "failed")))] : null,
    pending.length ? [h("h3", {}, t("Pending captures")), h("ul", { class: "captures-pending" }, pending.map((e) => row(e, "pending")))] : null,
    damaged.length ? [h("h3", {}, t("Saved with records skipped")), h("ul", { class: "captures-damaged" }, damaged.map((d) =>
      h("li", {}, h("strong", {}, d.session_id), " ", h("span", { class: "muted" }, Object.entries(d.skipped).map(([k, n]) => `${n} ${k}`).join(", ")))))] : null,
    failed.length || pending.length ? h("p", {},
      h("button", { type: "button", class: "primary", dataset: { action: "retry-captures" }, onclick: (e) => act(e, "capture_retry", {}) }, t("Retry all")), " ",
      h("span", { class: "muted" }, t("or run") + " "), h("code", {}, retry)) : null,
  ];
}

function errorsBody(reply) {
  if (!reply.success) return failure(reply);
  const errors = reply.metadata.errors || [];
  if (!errors.length) return h("p", { class: "muted" }, t("No job failed since the service started."));
  return h("table", { class: "recent-errors" }, h("tbody", {}, errors.map((e) =>
    h("tr", {}, h("td", { class: "muted" }, e.at), h("th", {}, e.job), h("td", { class: "error-message" }, e.message)))));
}

export async function statusView() {
  const [health, status, config, capturesReply, errors] = await Promise.all([
    job("health_check"), job("status"), job("app_config"), job("capture_status"), job("recent_errors", { limit: 20 })]);
  const capturesBox = h("div", { class: "captures-status" });
  const errorsBox = h("div", { class: "errors-status" }, errorsBody(errors));
  const refresh = async () => {
    const [again, lately] = await Promise.all([job("capture_status"), job("recent_errors", { limit: 20 })]);
    capturesBox.replaceChildren(...[capturesBody(again, refresh)].flat(Infinity).filter(Boolean));
    errorsBox.replaceChildren(errorsBody(lately));
  };
  capturesBox.replaceChildren(...[capturesBody(capturesReply, refresh)].flat(Infinity).filter(Boolean));
  const components = health.metadata?.components || {};
  const bar = h("progress", { max: 1, value: 0, class: "reindex-progress", hidden: true });
  const label = h("span", { class: "muted reindex-label" });
  const reindex = async (event) => {
    event.target.disabled = true;
    bar.hidden = false;
    let running = true;
    const poll = async () => {
      while (running) {
        const p = progressOf(await job("status"));
        if (p && running) {
          bar.max = p.total;
          bar.value = p.done;
          label.textContent = `${p.phase || t("Index")}: ${p.done}/${p.total}`;
        }
        await new Promise((r) => setTimeout(r, 300));
      }
    };
    poll();
    const reply = await job("reindex");
    running = false;
    bar.value = bar.max;
    label.textContent = String(reply.answer).split("\n")[0];
    event.target.disabled = false;
    toast(reply.success ? t("Reindex") + " ✓" : String(reply.answer), reply.success ? "info" : "error");
  };
  return show(t("Status"),
    h("section", { class: "status-section" }, h("h2", {}, t("Components")),
      h("ul", { class: "health" }, Object.entries(components).map(([name, entry]) =>
        h("li", { class: "health-" + entry.status }, h("span", { class: "dot" }), h("strong", {}, name), " ", String(entry.status),
          entry.reason || entry.error ? h("span", { class: "muted" }, " — " + (entry.reason || entry.error)) : null)))),
    h("section", { class: "status-section captures-section-status" }, h("h2", {}, t("Captures")), capturesBox),
    h("section", { class: "status-section" }, h("h2", {}, t("Recent errors")), errorsBox),
    h("section", { class: "status-section" }, h("h2", {}, t("Index")),
      status.success ? [keyValues(status.metadata.folders && Object.fromEntries(Object.entries(status.metadata.folders).map(([k, v]) => [k + "/", `${v.files} files, ${v.bytes} B`]))),
        Object.entries(status.metadata.components || {}).map(([name, stats]) => h("div", {}, h("h3", {}, name), keyValues(stats)))] : failure(status),
      h("p", {}, h("button", { type: "button", class: "primary", dataset: { action: "reindex" }, onclick: reindex }, t("Reindex")), " ", bar, " ", label)),
    h("section", { class: "status-section" }, h("h2", {}, t("Pending cards")),
      h("p", { class: "muted" }, t("Session cards left pending (no model, or a failed call) are distilled again by auto_memory_pending.")),
      h("p", {}, h("button", { type: "button", dataset: { action: "pending" }, onclick: async (event) => {
        event.target.disabled = true;
        const reply = await job("auto_memory_pending", {});
        event.target.disabled = false;
        const out = event.target.closest("section").querySelector(".pending-result");
        out.replaceChildren(reply.success ? h("pre", {}, String(reply.answer)) : failure(reply));
      } }, t("Distil pending cards"))), h("div", { class: "pending-result" })),
    h("section", { class: "status-section" }, h("h2", {}, t("Configuration")),
      h("details", {}, h("summary", {}, "app_config"), h("pre", { class: "config" }, String(config.answer)))));
}
