// DOM helpers. Everything Studio shows is built with createElement and text nodes: no HTML string
// from a note, a file name or a job answer is ever parsed, so untrusted text cannot become markup.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  add(el, children);
  return el;
}

export function add(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

// A link to a route of this page (`#/note/<path>`): the path is encoded, never interpreted.
export function route(...parts) {
  return "#/" + parts.map((p) => encodeURIComponent(p)).join("/");
}

export function link(text, ...parts) {
  return h("a", { href: route(...parts) }, text);
}

// Text with every occurrence of the query's words wrapped in <mark> (built as nodes).
export function highlighted(text, query) {
  const words = [...new Set((query || "").toLowerCase().split(/[\s\p{P}]+/u).filter((w) => w.length > 1))];
  if (!words.length) return document.createTextNode(text);
  const escaped = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const pattern = new RegExp(`(${escaped.join("|")})`, "giu");
  const out = document.createDocumentFragment();
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    out.append(text.slice(last, match.index), h("mark", {}, match[0]));
    last = match.index + match[0].length;
  }
  out.append(text.slice(last));
  return out;
}
