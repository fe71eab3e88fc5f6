// Search: the `search` job's hits as it returns them (path, line range, score and, with vectors on,
// each branch's score; linked notes), highlighted.
import { job } from "./api.js";
import { h, highlighted, link, route } from "./dom.js";
import { t } from "./i18n.js";
import { failure, show } from "./ui.js";

function linkList(title, links) {
  if (!links || !links.length) return null;
  return h("div", { class: "hit-links" }, h("span", { class: "muted" }, title + ": "),
    links.map((l, i) => [i ? ", " : "", link(l.name || l.path, "note", l.path)]));
}

// With vectors on, the job gives each fused hit its score in each branch that found it.
function branchScores(scores) {
  const entries = Object.entries(scores || {});
  if (!entries.length) return null;
  return h("span", { class: "muted branch-scores" },
    ` (${entries.map(([branch, score]) => `${t(branch)} ${Number(score).toFixed(3)}`).join(" · ")})`);
}

export async function searchView(query) {
  const box = document.getElementById("search-input");
  if (box && box.value !== query) box.value = query;
  if (!query) return show(t("Search"), h("p", { class: "muted" }, t("Search the memory…")));
  const reply = await job("search", { query, limit: 20 });
  if (!reply.success) return show(t("Search"), failure(reply));
  const hits = reply.metadata.results || [];
  const list = h("ol", { class: "hits" });
  for (const hit of hits) {
    list.append(h("li", { class: "hit" },
      h("div", { class: "hit-head" },
        h("a", { class: "hit-path", href: route("note", hit.path) + "?line=" + hit.start_line }, hit.path),
        h("span", { class: "muted" }, ` ${t("Lines")} ${hit.start_line}–${hit.end_line} · ${t("Score")} ${Number(hit.score).toFixed(3)}`),
        branchScores(hit.branch_scores)),
      hit.name || hit.description ? h("div", { class: "hit-name" }, hit.name || "", hit.description ? " — " + hit.description : "") : null,
      h("pre", { class: "hit-text" }, highlighted(hit.text, query)),
      linkList(t("Outlinks"), hit.outlinks),
      linkList(t("Backlinks"), hit.inlinks)));
  }
  const note = reply.metadata.index_ready === false ? h("p", { class: "notice" }, String(reply.answer).split("\n")[0]) : null;
  return show(`${t("Search")}: ${query}`, note, hits.length ? list : h("p", { class: "muted" }, t("No results.")));
}
