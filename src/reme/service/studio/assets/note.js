// The note view: rendered Markdown with its front matter, typed edges, backlinks and dead links.
import { job } from "./api.js";
import { h, link, route } from "./dom.js";
import { t } from "./i18n.js";
import { render, inline, splitFrontMatter } from "./markdown.js";
import { failure, show } from "./ui.js";

export function titleOf(path, frontMatter) {
  const name = frontMatter && typeof frontMatter.name === "string" ? frontMatter.name : "";
  return name || path.split("/").pop();
}

async function loadImages(images) {
  for (const img of images) {
    const path = img.dataset.path;
    if (!path) continue;
    const reply = await job("read_image", { path });
    if (reply.success && /^image\//.test(reply.metadata.mime_type || "")) {
      img.src = `data:${reply.metadata.mime_type};base64,${reply.answer}`;
    } else img.replaceWith(h("span", { class: "image-alt" }, `[${img.alt || path}]`));
  }
}

function frontMatterTable(fm, ctx) {
  const rows = Object.entries(fm || {});
  if (!rows.length) return null;
  return h("details", { class: "front-matter", open: true },
    h("summary", {}, t("Front matter")),
    h("table", {}, h("tbody", {}, rows.map(([key, value]) => {
      const text = typeof value === "string" ? value : JSON.stringify(value);
      return h("tr", {}, h("th", {}, key), h("td", {}, inline(text, ctx)));
    }))));
}

function edgeItem(edge, path, outgoing) {
  const other = outgoing ? edge.resolved : edge.source;
  const label = outgoing ? edge.target + (edge.anchor ? "#" + edge.anchor : "") : edge.source;
  const item = h("li", {}, edge.predicate ? h("span", { class: "predicate" }, edge.predicate) : null);
  if (other) item.append(link(label, "note", other));
  else item.append(h("span", { class: "wikilink dead", title: t("dead link") }, label), " ", h("small", {}, t("dead link")));
  return item;
}

function linksPanel(edges, path) {
  const out = edges.filter((e) => e.source === path);
  const inbound = edges.filter((e) => e.resolved === path && e.source !== path);
  const section = (title, items, outgoing, cls) =>
    h("section", { class: cls }, h("h3", {}, `${title} (${items.length})`),
      items.length ? h("ul", {}, items.map((e) => edgeItem(e, path, outgoing))) : h("p", { class: "muted" }, t("no links")));
  return h("aside", { class: "links", "aria-label": "links" },
    section(t("Outlinks"), out.filter((e) => e.resolved), true, "outlinks"),
    section(t("Dead links"), out.filter((e) => !e.resolved), true, "deadlinks"),
    section(t("Backlinks"), inbound, false, "backlinks"));
}

function transcript(text) {
  const list = h("ol", { class: "transcript" });
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    let message = null;
    try {
      message = JSON.parse(line);
    } catch {
      /* shown as written, below */
    }
    // A record that is not a message (null, a number, a list, ...) is shown as written: one odd
    // record of an imported chat must not take the whole transcript away.
    if (message === null || typeof message !== "object" || Array.isArray(message)) {
      list.append(h("li", {}, line));
      continue;
    }
    const content = typeof message.content === "string" ? message.content
      : Array.isArray(message.content) ? message.content.map((b) => b?.text || "").join("")
      : message.content == null ? "" : JSON.stringify(message.content);
    const body = h("div", { class: "message-text" });
    for (const part of content.split(/(\[REDACTED:[a-z_]+\])/)) {
      body.append(/^\[REDACTED:/.test(part) ? h("mark", { class: "redacted" }, part) : part);
    }
    list.append(h("li", { class: "message " + (message.role || "") },
      h("div", { class: "message-head" }, String(message.role || "?"), " · ", String(message.created_at || "")), body));
  }
  return list;
}

// Show `path`; `line` (from a search hit) scrolls to the block holding it.
export async function noteView(path, line) {
  const isMarkdown = /\.(md|markdown)$/i.test(path) || !/\.[^/]+$/.test(path);
  const [reply, fm, graph] = await Promise.all([
    job("read", { path }),
    isMarkdown ? job("frontmatter_read", { path }) : Promise.resolve(null),
    job("traverse", { path, depth: 1, direction: "both" }),
  ]);
  if (!reply.success) return show(path, failure(reply));
  const real = reply.metadata.path || path;
  const edges = graph && graph.success ? graph.metadata.edges : [];
  const targets = new Map(edges.filter((e) => e.source === real).map((e) => [e.target, e.resolved]));
  const images = [];
  const ctx = { base: real, images, resolve: (target) => (targets.has(target) ? targets.get(target) : undefined) };
  const frontMatter = fm && fm.success ? fm.metadata.front_matter : null;
  let body;
  if (/\.jsonl$/i.test(real)) body = transcript(reply.answer);
  else if (isMarkdown) {
    const [, text, first] = splitFrontMatter(reply.answer);
    body = render(text, ctx, first);
  } else body = h("pre", {}, reply.answer);
  const article = h("article", { class: "note-body" }, body);
  // A large file comes in pages (the read job's bound); each further page is read on request.
  const more = (next) => {
    const button = h("button", { type: "button", class: "small", dataset: { action: "more" } },
      `${t("Load more")} (${t("Lines")} ${next}– / ${reply.metadata.total_lines})`);
    button.addEventListener("click", async () => {
      const page = await job("read", { path: real, start_line: next });
      if (!page.success) return button.replaceWith(failure(page));
      const rest = /\.jsonl$/i.test(real) ? transcript(page.answer) : isMarkdown ? render(page.answer, ctx, next) : h("pre", {}, page.answer);
      button.replaceWith(rest);
      if (page.metadata.next_start_line) article.append(more(page.metadata.next_start_line));
      loadImages(images.splice(0));
    });
    return button;
  };
  if (reply.metadata.next_start_line) article.append(more(reply.metadata.next_start_line));
  const actions = h("div", { class: "note-actions" },
    h("a", { class: "button", href: route("edit", real), accesskey: "e" }, t("Edit")),
    h("button", { type: "button", dataset: { action: "move" } }, t("Move")),
    h("button", { type: "button", class: "danger", dataset: { action: "delete" } }, t("Delete")));
  const pane = show(titleOf(real, frontMatter),
    h("div", { class: "note-path" }, real), actions,
    h("div", { class: "note-layout" },
      h("div", { class: "note-main" }, frontMatterTable(frontMatter, ctx), article),
      linksPanel(edges, real)));
  pane.dataset.path = real;
  const { moveNote, deleteNote } = await import("./edit.js");
  actions.querySelector('[data-action="move"]').addEventListener("click", () => moveNote(real));
  actions.querySelector('[data-action="delete"]').addEventListener("click", () => deleteNote(real));
  if (line) {
    const blocks = [...article.querySelectorAll("[data-line]")].filter((b) => Number(b.dataset.line) <= line);
    const target = blocks[blocks.length - 1];
    if (target) {
      target.classList.add("hit");
      target.scrollIntoView({ block: "center" });
    }
  }
  loadImages(images.splice(0));
  return pane;
}
