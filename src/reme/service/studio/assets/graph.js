// The memory graph: digest nodes coloured by bucket, their links to each other and (optionally) to
// their sources, drawn on a canvas so that thousands of nodes stay smooth. Layout: buckets on a
// ring, nodes on a sunflower spiral around their bucket, then a few rounds of springs along the
// links with grid-limited repulsion (linear time per round). Filters only hide; they never re-lay out.
import { job } from "./api.js";
import { h, route } from "./dom.js";
import { t } from "./i18n.js";
import { failure, show } from "./ui.js";

const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
const BATCH = 250; // traverse seeds per request
const ROUNDS = 40;

async function loadGraph() {
  const listed = await job("list", { path: "digest", recursive: true, extensions: [".md"] });
  if (!listed.success) return { error: listed };
  const files = listed.metadata.entries.filter((e) => e.type === "file" && !e.path.split("/").pop().startsWith("_"));
  const nodes = new Map(files.map((e) => [e.path, { path: e.path, bucket: e.path.split("/")[1] || "", mtime: e.mtime, source: false }]));
  const edges = [];
  const paths = [...nodes.keys()];
  const batches = [];
  for (let i = 0; i < paths.length; i += BATCH) batches.push(job("traverse", { path: paths.slice(i, i + BATCH), depth: 1, direction: "forward" }));
  // A batch the job refuses (a file name it will not take) is asked again path by path.
  const replies = [];
  for (const [i, reply] of (await Promise.all(batches)).entries()) {
    if (reply.success) replies.push(reply);
    else {
      const one = paths.slice(i * BATCH, (i + 1) * BATCH).map((path) => job("traverse", { path, depth: 1, direction: "forward" }));
      replies.push(...(await Promise.all(one)).filter((r) => r.success));
    }
  }
  for (const reply of replies) {
    for (const e of reply.metadata.edges) {
      if (!e.resolved || e.resolved === e.source || !nodes.has(e.source)) continue;
      if (!nodes.has(e.resolved)) nodes.set(e.resolved, { path: e.resolved, bucket: "", mtime: 0, source: true });
      edges.push([e.source, e.resolved, e.predicate || ""]);
    }
  }
  return { nodes: [...nodes.values()], edges };
}

function layout(nodes, edges, buckets) {
  const index = new Map(nodes.map((n, i) => [n.path, i]));
  // Buckets sit on a ring just wide enough for their spirals (9·√n units across) side by side.
  const sizes = new Map();
  for (const n of nodes) if (!n.source) sizes.set(n.bucket, (sizes.get(n.bucket) || 0) + 1);
  const widest = 9 * Math.sqrt(Math.max(1, ...sizes.values())) + 20;
  const ring = buckets.length > 1 ? (buckets.length * 2.6 * widest) / (2 * Math.PI) : 0;
  const counters = new Map();
  buckets.forEach((b, i) => counters.set(b, { i: 0, angle: (2 * Math.PI * i) / Math.max(buckets.length, 1) }));
  const core = [];
  for (const [i, n] of nodes.entries()) {
    if (n.source) continue;
    const c = counters.get(n.bucket);
    const r = 9 * Math.sqrt(c.i);
    const a = c.i * 2.39996;
    c.i += 1;
    n.x = ring * Math.cos(c.angle) + r * Math.cos(a);
    n.y = ring * Math.sin(c.angle) + r * Math.sin(a);
    core.push(i);
  }
  const links = edges.map(([s, d]) => [index.get(s), index.get(d)]);
  const springs = links.filter(([s, d]) => !nodes[s].source && !nodes[d].source);
  const cell = 24;
  const key = (x, y) => Math.floor(x / cell) * 65536 + Math.floor(y / cell);
  for (let round = 0; round < ROUNDS; round++) {
    const heat = 1 - round / ROUNDS;
    const grid = new Map();
    for (const i of core) {
      const k = key(nodes[i].x, nodes[i].y);
      const list = grid.get(k);
      if (list) list.push(i);
      else grid.set(k, [i]);
    }
    for (const i of core) {
      const n = nodes[i];
      const gx = Math.floor(n.x / cell), gy = Math.floor(n.y / cell);
      for (let dx = -1; dx <= 1; dx++) for (let dy = -1; dy <= 1; dy++) {
        const list = grid.get((gx + dx) * 65536 + gy + dy);
        if (!list) continue;
        for (const j of list) {
          if (j <= i) continue;
          const m = nodes[j];
          let ex = n.x - m.x, ey = n.y - m.y;
          const dist2 = ex * ex + ey * ey || 0.01;
          if (dist2 > cell * cell) continue;
          // Pushed apart up to half a cell per round, however close they started.
          const push = Math.min((cell * cell / dist2 - 1) * 0.12 * heat, cell / 2 / Math.sqrt(dist2));
          ex *= push; ey *= push;
          n.x += ex; n.y += ey; m.x -= ex; m.y -= ey;
        }
      }
    }
    for (const [s, d] of springs) {
      const a = nodes[s], b = nodes[d];
      // Links inside a bucket pull hard, links across buckets gently: buckets stay apart as clusters.
      const pull = (a.bucket === b.bucket ? 0.006 : 0.0008) * heat;
      const ex = (b.x - a.x) * pull, ey = (b.y - a.y) * pull;
      a.x += ex; a.y += ey; b.x -= ex; b.y -= ey;
    }
  }
  // Sources sit near the nodes that cite them (mean position, a little spread); no forces needed.
  const sums = new Map();
  for (const [s, d] of links) {
    if (!nodes[d].source) continue;
    const sum = sums.get(d) || [0, 0, 0];
    sum[0] += nodes[s].x; sum[1] += nodes[s].y; sum[2] += 1;
    sums.set(d, sum);
  }
  for (const [d, [x, y, count]] of sums) {
    const angle = d * 2.39996;
    nodes[d].x = x / count + 14 * Math.cos(angle);
    nodes[d].y = y / count + 14 * Math.sin(angle);
  }
  for (const n of nodes) if (n.x === undefined) [n.x, n.y] = [0, 0];
  return links;
}

export async function graphView() {
  const started = performance.now();
  const data = await loadGraph();
  if (data.error) return show(t("Graph"), failure(data.error));
  const { nodes, edges } = data;
  const loaded = performance.now();
  const buckets = [...new Set(nodes.filter((n) => !n.source).map((n) => n.bucket))].sort();
  const colour = new Map(buckets.map((b, i) => [b, PALETTE[i % PALETTE.length]]));
  const links = layout(nodes, edges, buckets);
  const laidOut = performance.now();
  const canvas = h("canvas", { class: "graph-canvas", "aria-label": `${t("Graph")}: ${nodes.length} ${t("Nodes")}`, role: "img" });
  const shown = new Set(buckets);
  const state = { sources: false, since: "", focus: "", depth: 2, hover: null, view: { x: 0, y: 0, k: 1 } };
  const info = h("span", { class: "muted graph-info" });
  const tip = h("div", { class: "graph-tip", hidden: true });

  const visible = () => {
    const sinceS = state.since ? Date.parse(state.since) / 1000 : 0;
    let keep = nodes.map((n) => (n.source ? state.sources : shown.has(n.bucket) && n.mtime >= sinceS));
    if (state.focus) {
      const start = nodes.findIndex((n) => n.path === state.focus);
      if (start >= 0) {
        const next = new Map();
        for (const [s, e] of links) {
          (next.get(s) || next.set(s, []).get(s)).push(e);
          (next.get(e) || next.set(e, []).get(e)).push(s);
        }
        const reach = new Set([start]);
        let frontier = [start];
        for (let d = 0; d < state.depth; d++) {
          frontier = frontier.flatMap((a) => (next.get(a) || []).filter((b) => !reach.has(b) && reach.add(b)));
        }
        keep = keep.map((k, i) => k && reach.has(i));
      }
    }
    return keep;
  };

  const draw = () => {
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth, height = canvas.clientHeight;
    if (canvas.width !== width * ratio || canvas.height !== height * ratio) {
      canvas.width = width * ratio;
      canvas.height = height * ratio;
    }
    const g = canvas.getContext("2d");
    const style = getComputedStyle(document.documentElement);
    const { x, y, k } = state.view;
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, height);
    g.translate(width / 2 + x, height / 2 + y);
    g.scale(k, k);
    const keep = visible();
    g.strokeStyle = style.getPropertyValue("--edge").trim() || "rgba(128,128,128,.35)";
    g.lineWidth = 0.6 / k;
    const shownLinks = links.filter(([s, d]) => keep[s] && keep[d]);
    const shownEdges = shownLinks.length;
    g.globalAlpha = Math.min(1, Math.max(0.15, 600 / (shownEdges || 1)));  // thousands of edges stay a haze, not a blot
    g.beginPath();
    for (const [s, d] of shownLinks) {
      g.moveTo(nodes[s].x, nodes[s].y);
      g.lineTo(nodes[d].x, nodes[d].y);
    }
    g.stroke();
    g.globalAlpha = 1;
    let shownNodes = 0;
    for (const [bucket, fill] of [...colour.entries(), ["", "#999"]]) {
      g.fillStyle = fill;
      g.beginPath();
      nodes.forEach((n, i) => {
        if (!keep[i] || (n.source ? "" : n.bucket) !== bucket) return;
        shownNodes += 1;
        const r = Math.max(n.source ? 2 : 3.5, (n.source ? 1.5 : 2.5) / k);  // never under a few pixels on screen
        g.moveTo(n.x + r, n.y);
        g.arc(n.x, n.y, r, 0, 2 * Math.PI);
      });
      g.fill();
    }
    if (k > 2.5) {
      g.fillStyle = style.getPropertyValue("--fg").trim() || "#222";
      g.font = `${11 / k}px sans-serif`;
      nodes.forEach((n, i) => keep[i] && g.fillText(n.path.split("/").pop().replace(/\.md$/, ""), n.x + 5, n.y + 3));
    }
    info.textContent = `${shownNodes} ${t("Nodes")} · ${shownEdges} ${t("Edges")}`;
    return shownNodes;
  };

  const toWorld = (event) => {
    const rect = canvas.getBoundingClientRect();
    const { x, y, k } = state.view;
    return [(event.clientX - rect.left - rect.width / 2 - x) / k, (event.clientY - rect.top - rect.height / 2 - y) / k];
  };
  const nearest = (event) => {
    const [wx, wy] = toWorld(event);
    const keep = visible();
    let best = null, bestD = (8 / state.view.k) ** 2;
    nodes.forEach((n, i) => {
      const d = (n.x - wx) ** 2 + (n.y - wy) ** 2;
      if (keep[i] && d < bestD) [best, bestD] = [n, d];
    });
    return best;
  };
  let drag = null;
  canvas.addEventListener("pointerdown", (e) => (drag = { x: e.clientX, y: e.clientY, moved: false }));
  canvas.addEventListener("pointermove", (e) => {
    if (drag) {
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 2) drag.moved = true;
      state.view.x += dx; state.view.y += dy;
      drag.x = e.clientX; drag.y = e.clientY;
      draw();
      return;
    }
    const n = nearest(e);
    tip.hidden = !n;
    if (n) {
      tip.textContent = n.path;
      tip.style.left = `${e.offsetX + 12}px`;
      tip.style.top = `${e.offsetY + 12}px`;
    }
  });
  canvas.addEventListener("pointerup", (e) => {
    const clicked = drag && !drag.moved ? nearest(e) : null;
    drag = null;
    if (clicked) location.hash = route("note", clicked.path);
  });
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const factor = Math.exp(-e.deltaY * 0.0015);
    state.view.k = Math.min(20, Math.max(0.05, state.view.k * factor));
    draw();
  }, { passive: false });

  const filters = h("div", { class: "graph-filters" },
    h("fieldset", {}, h("legend", {}, t("Buckets")), buckets.map((b) =>
      h("label", { class: "bucket-toggle" }, h("input", { type: "checkbox", checked: true, dataset: { bucket: b }, onchange: (e) => {
        e.target.checked ? shown.add(b) : shown.delete(b);
        draw();
      } }), h("span", { class: "swatch", dataset: { colour: colour.get(b) } }), " ", b || "/"))),
    h("label", {}, h("input", { type: "checkbox", onchange: (e) => { state.sources = e.target.checked; draw(); } }), " ", t("Sources")),
    h("label", {}, t("Since"), " ", h("input", { type: "date", onchange: (e) => { state.since = e.target.value; draw(); } })),
    h("label", {}, t("Focus"), " ", h("input", { type: "text", class: "focus-input", placeholder: "digest/…", onchange: (e) => { state.focus = e.target.value.trim(); draw(); } })),
    h("label", {}, t("Depth"), " ", h("input", { type: "number", min: 1, max: 6, value: 2, onchange: (e) => { state.depth = Number(e.target.value) || 1; draw(); } })),
    info);
  for (const swatch of filters.querySelectorAll(".swatch")) swatch.style.background = swatch.dataset.colour;
  const pane = show(t("Graph"), filters, h("div", { class: "graph-wrap" }, canvas, tip));
  // Fit the whole graph in view, then draw once and record how long it all took.
  const xs = nodes.map((n) => n.x), ys = nodes.map((n) => n.y);
  const spanX = Math.max(...xs, 1) - Math.min(...xs, 0), spanY = Math.max(...ys, 1) - Math.min(...ys, 0);
  state.view.k = Math.min(canvas.clientWidth / (spanX + 40), canvas.clientHeight / (spanY + 40)) || 1;
  state.view.x = -((Math.max(...xs, 0) + Math.min(...xs, 0)) / 2) * state.view.k;
  state.view.y = -((Math.max(...ys, 0) + Math.min(...ys, 0)) / 2) * state.view.k;
  const drawStart = performance.now();
  draw();
  const done = performance.now();
  window.__remeGraph = {
    nodes: nodes.length, edges: links.length, ms: done - started,
    loadMs: loaded - started, layoutMs: laidOut - loaded, drawMs: done - drawStart,
  };
  canvas.dataset.ready = "true";
  window.addEventListener("resize", draw);
  return pane;
}
