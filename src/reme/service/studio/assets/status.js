// Status: component health, index progress and pending vectors, the effective configuration
// (secrets redacted by app_config), and a reindex button that follows the rebuild's progress.
import { job } from "./api.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { failure, show, toast } from "./ui.js";

function keyValues(obj) {
  return h("table", { class: "kv" }, h("tbody", {}, Object.entries(obj || {}).map(([k, v]) =>
    h("tr", {}, h("th", {}, k), h("td", {}, typeof v === "object" && v !== null ? JSON.stringify(v) : String(v))))));
}

function progressOf(status) {
  const p = status?.metadata?.components?.index?.progress;
  return p && p.total ? p : null;
}

export async function statusView() {
  const [health, status, config] = await Promise.all([job("health_check"), job("status"), job("app_config")]);
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
