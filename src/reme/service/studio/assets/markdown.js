// A Markdown renderer that builds DOM nodes (never HTML strings): raw HTML in a note shows as text,
// links keep only http(s)/mailto or workspace paths (no javascript:, data:, ...), and [[wikilinks]]
// in every form of reme's grammar become links into Studio (dead ones are marked). Comments
// (`<!-- ... -->`, Obsidian's `%% ... %%`) show nothing and hold no link, as in the index (spec §2.2).
import { h, route } from "./dom.js";

const PREDICATE = /^([A-Za-z][A-Za-z0-9_]*)::\s*/;
const IMAGE_EXT = /\.(png|jpe?g|gif|webp|bmp|svg)$/i;
// Note text is untrusted, so every pattern fails fast: no character class runs past the next `[`,
// `(` or `<`, which made a failed match rescan the rest of the line from every start.
const INLINE = [
  // A backslash before ASCII punctuation shows that character as text (`\[[x]]` is `[[x]]`, no link),
  // as in Markdown and the index (spec §2.2); it matches before any token that the character opens.
  ["escape", /\\([!-/:-@[-`{-~])/g],
  ["wiki", /(!?)\[\[([^[\]\n|#]*)(#[^[\]\n|]*)?(?:\|([^[\]\n]*))?\]\]/g],
  ["pred", /\[([A-Za-z][A-Za-z0-9_]*)::\s*((?:[^[\]\n]|\[\[[^[\]\n]*\]\])*)\]/g],
  ["image", /!\[([^[\]\n]*)\]\(([^()\s]+)(?:\s+"[^"\n]*")?\)/g],
  ["link", /\[([^[\]\n]+)\]\(([^()\s]+)(?:\s+"[^"\n]*")?\)/g],
  ["auto", /<(https?:\/\/[^<>\s]+)>/g],
  ["strong", /\*\*([^*\n]+)\*\*|__([^_\n]+)__/g],
  ["em", /\*([^*\n]+)\*|(?<![\p{L}\p{N}])_([^_\n]+)_(?![\p{L}\p{N}])/gu],
  ["strike", /~~([^~\n]+)~~/g],
];
const MAX_QUOTE_DEPTH = 32; // deeper `>` nesting shows as text (each level is a recursion)
// What opens a code span, a comment or an escape, and the marker that closes each kind of comment.
const HIDING = /\\|`+|<!--|%%/g;
const COMMENT_END = { "<!--": "-->", "%%": "%%" };
// Stands where a comment was: no token matches across it and it shows as nothing. A noncharacter,
// so no note means it.
const HIDDEN = "\uFDD0";
const ONLY_HIDDEN = /^[\s\uFDD0]*$/;
// A fence line as the index reads one (wikilinks.py `_FENCE`): spaces or tabs, then three or more
// backticks or tildes, then the info string. No other prefix (a `>` or a list marker) makes a fence.
const FENCE = /^[ \t]*(`{3,}|~{3,})([\s\S]*)$/;
// What Python's `str.strip()` takes as blank (the index's test for an empty info string).
const PY_BLANK = /^[\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/;

// A line's fence run and info string, its line-end `\r`s dropped as the index drops them, or null.
function fenceLine(line) {
  return FENCE.exec(line.replace(/\r+$/, ""));
}

// The run that opens a fence on `line`, or null: a backtick fence's info string holds no backtick.
function fenceOpener(line) {
  const m = fenceLine(line);
  return m && !(m[1][0] === "`" && m[2].includes("`")) ? m[1] : null;
}

// Whether `line` closes the fence opened by `fence`: the same character, at least as many, no info
// string (```` ```js ```` closes nothing).
function closesFence(line, fence) {
  const m = fenceLine(line);
  return Boolean(m && m[1][0] === fence[0] && m[1].length >= fence.length && PY_BLANK.test(m[2]));
}

// The start positions of each length of backtick run in `text`, ascending.
function backtickRuns(text) {
  const runs = new Map();
  for (const run of text.matchAll(/`+/g)) {
    if (!runs.has(run[0].length)) runs.set(run[0].length, []);
    runs.get(run[0].length).push(run.index);
  }
  return runs;
}

// The first of the ascending `starts` at or after `from`, or -1 (a binary search: a line of many
// runs must not cost a scan per run).
function firstFrom(starts, from) {
  if (!starts) return -1;
  let low = 0;
  let high = starts.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (starts[mid] < from) low = mid + 1;
    else high = mid;
  }
  return low < starts.length ? starts[low] : -1;
}

// The code spans of one text (`inline` makes one per text), shaped like a global RegExp for its
// scan: a backtick run opens a span closed by the next run of the same length, an unclosed run is
// text. `hideComments` takes spans by the same rule, so what it left alone as code shows as code.
function codeSpans() {
  let runs = null;
  return {
    lastIndex: 0,
    exec(subject) {
      runs ??= backtickRuns(subject);
      const opener = /`+/g;
      opener.lastIndex = this.lastIndex;
      for (let run; (run = opener.exec(subject)); ) {
        const close = firstFrom(runs.get(run[0].length), run.index + run[0].length);
        if (close < 0) continue;
        let body = subject.slice(run.index + run[0].length, close);
        // One space each side is padding (`` `a` `` shows `a`), unless the span is all spaces.
        if (body.startsWith(" ") && body.endsWith(" ") && /[^ ]/.test(body)) body = body.slice(1, -1);
        const match = [subject.slice(run.index, close + run[0].length), body];
        match.index = run.index;
        return match;
      }
      return null;
    },
  };
}

// One line with its comments put to HIDDEN, given the closing marker of a comment still open before
// it (or null); returns the line and the marker still open after it. Code spans, comments and
// backslash escapes are taken left to right, whichever opens first winning, as the index does.
function hideComments(line, open) {
  let shown = "";
  let kept = 0; // where the text not yet copied to `shown` starts
  if (open) {
    const end = line.indexOf(open);
    if (end < 0) return [HIDDEN, open];
    shown = HIDDEN;
    kept = end + open.length;
  }
  let runs = null;
  HIDING.lastIndex = kept;
  for (let token; (token = HIDING.exec(line)); ) {
    const at = token.index;
    if (token[0] === "\\") HIDING.lastIndex = at + 2;
    else if (token[0][0] === "`") {
      runs ??= backtickRuns(line);
      const close = firstFrom(runs.get(token[0].length), at + token[0].length);
      if (close >= 0) HIDING.lastIndex = close + token[0].length;
    } else {
      const marker = COMMENT_END[token[0]];
      shown += line.slice(kept, at) + HIDDEN;
      const end = line.indexOf(marker, at + 2); // `<!-->` is an empty comment, as in HTML
      if (end < 0) return [shown, marker];
      kept = HIDING.lastIndex = end + marker.length;
    }
  }
  return [shown + line.slice(kept), null];
}

// `lines` with every comment outside fenced code hidden, given the comment open before them (its
// closing marker or null); returns them, the comment still open after the last, and the fences:
// opening line -> [end of its code, line after its closing line]. Fences are read here once, on the
// lines as written and by the index's rules (a comment's text never makes or hides one), so
// Studio's code is the index's. An unclosed comment runs to the end, and a fence inside a comment is
// comment text; an unclosed fence runs to the end. `fence` is the run of a fence open before the
// first line (its code starts there: opening line -1), and the fence still open after the last is
// returned too.
function withoutComments(lines, open, fence) {
  const fences = new Map();
  let start = -1;
  const shown = lines.map((line, i) => {
    if (!open) {
      if (fence) {
        if (closesFence(line, fence)) {
          fences.set(start, [i, i + 1]);
          fence = null;
        }
        return line;
      }
      fence = fenceOpener(line);
      if (fence) {
        start = i;
        return line;
      }
    }
    let text;
    [text, open] = hideComments(line, open);
    return text;
  });
  if (fence) fences.set(start, [lines.length, lines.length]);
  return [shown, open, fences, fence];
}

// A workspace path relative to the note's folder, or null when it leaves the workspace.
export function joinPath(base, relative) {
  const parts = relative.startsWith("/") ? [] : base.split("/").slice(0, -1);
  for (const part of relative.replace(/^\/+/, "").split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (!parts.length) return null;
      parts.pop();
    } else parts.push(part);
  }
  return parts.join("/");
}

function external(url) {
  return /^(https?:\/\/|mailto:)/i.test(url);
}

function hrefFor(url, ctx) {
  if (external(url)) return { href: url, rel: "noopener noreferrer", target: "_blank" };
  if (url.includes(":")) return null; // any other scheme (javascript:, data:, vbscript:, ...) stays text
  const [path] = url.split("#");
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    /* keep it as written */
  }
  const joined = path ? joinPath(ctx.base || "", decoded) : ctx.base;
  return joined ? { href: route("note", joined) } : null;
}

function wikilink(match, ctx) {
  const [, bang, rawTarget, anchor, alias] = match;
  // `\|` escapes the bar inside a table: the backslash is no part of the target (as in the index).
  const written = alias !== undefined && !anchor ? rawTarget.replace(/\\$/, "") : rawTarget;
  const target = written.trim();
  const label = alias !== undefined ? alias : target + (anchor || "");
  const resolved = ctx.resolve ? ctx.resolve(target) : undefined;
  if (bang && IMAGE_EXT.test(target)) {
    const img = h("img", { alt: label, class: "embed-image", dataset: { path: resolved || target } });
    ctx.images?.push(img);
    return img;
  }
  if (resolved === null) {
    return h("span", { class: "wikilink dead", title: "dead link: " + target }, label);
  }
  const path = resolved || target;
  const a = h("a", { class: bang ? "wikilink embed" : "wikilink", href: route("note", path), title: path }, label);
  return bang ? h("span", { class: "embed-box" }, "⧉ ", a) : a;
}

export function inline(text, ctx) {
  const out = document.createDocumentFragment();
  if (text.includes(HIDDEN)) {
    // Each side of a comment on its own: a link partly inside one is none.
    for (const piece of text.split(HIDDEN)) out.append(inline(piece, ctx));
    return out;
  }
  // Each pattern's next match is searched for again only once the text before it is used up, so a
  // long line costs a few passes per pattern, not a pass per token.
  const next = new Map();
  const patterns = text.includes("`") ? [["code", codeSpans()], ...INLINE] : INLINE;
  let at = 0;
  while (at < text.length) {
    let best = null;
    for (const [kind, pattern] of patterns) {
      let m = next.get(kind);
      if (m === undefined || (m && m.index < at)) {
        pattern.lastIndex = at;
        m = pattern.exec(text);
        next.set(kind, m);
      }
      if (m && (best === null || m.index < best.m.index)) best = { kind, m };
    }
    if (!best) {
      out.append(text.slice(at));
      break;
    }
    const { kind, m } = best;
    out.append(text.slice(at, m.index));
    at = m.index + m[0].length;
    if (kind === "code") out.append(h("code", {}, m[1]));
    else if (kind === "escape") out.append(m[1]);
    else if (kind === "wiki") out.append(wikilink(m, ctx));
    else if (kind === "pred") out.append(h("span", { class: "predicate" }, m[1]), inline(m[2], ctx));
    else if (kind === "strong") out.append(h("strong", {}, inline(m[1] ?? m[2], ctx)));
    else if (kind === "em") out.append(h("em", {}, inline(m[1] ?? m[2], ctx)));
    else if (kind === "strike") out.append(h("del", {}, inline(m[1], ctx)));
    else if (kind === "auto") out.append(h("a", hrefFor(m[1], ctx) || {}, m[1]));
    else if (kind === "link") {
      const attrs = hrefFor(m[2], ctx);
      out.append(attrs ? h("a", attrs, inline(m[1], ctx)) : h("span", { class: "unsafe-link" }, m[1]));
    } else if (kind === "image") {
      if (external(m[2]) || m[2].includes(":")) out.append(h("span", { class: "image-alt" }, `[${m[1]}]`));
      else {
        const path = joinPath(ctx.base || "", m[2]);
        const img = h("img", { alt: m[1], class: "embed-image", dataset: { path: path || "" } });
        if (path) ctx.images?.push(img);
        out.append(img);
      }
    }
  }
  return out;
}

// One line of running text: a leading `predicate::` becomes a badge for the links after it.
function lineContent(text, ctx) {
  const m = PREDICATE.exec(text);
  if (!m) return inline(text, ctx);
  const frag = document.createDocumentFragment();
  frag.append(h("span", { class: "predicate" }, m[1]), inline(text.slice(m[0].length), ctx));
  return frag;
}

const LIST_ITEM = /^(\s*)([-*+]|\d+[.)])\s+(.*)$/;
const TABLE_SEP = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;

// A table row's cells. A bar divides cells only outside code spans, wikilinks and escapes (`\|`), so
// `[[a|b]]` or `` `a|[[b]]` `` in a cell reads as the index reads the whole line.
function cells(line) {
  const row = line.trim();
  const token = /\\[\s\S]|`+|!?\[\[[^[\]\n]+\]\]|\|/g;
  const bars = [];
  let runs = null;
  for (let m; (m = token.exec(row)); ) {
    if (m[0] === "|") bars.push(m.index);
    else if (m[0][0] === "`") {
      runs ??= backtickRuns(row);
      const close = firstFrom(runs.get(m[0].length), m.index + m[0].length);
      if (close >= 0) token.lastIndex = close + m[0].length;
    }
  }
  if (bars[bars.length - 1] !== row.length - 1) bars.push(row.length);
  if (bars[0] !== 0) bars.unshift(-1);
  return bars.slice(1).map((bar, k) => row.slice(bars[k] + 1, bar).trim());
}

// Whether line `i` starts a block other than a paragraph (`fences` as `withoutComments` gives them).
function startsBlock(lines, i, fences) {
  const line = lines[i];
  return (
    fences.has(i) || /^#{1,6}\s/.test(line) || /^\s*>/.test(line) || LIST_ITEM.test(line) ||
    (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]))
  );
}

function list(lines, i, firstLine, ctx, fences) {
  const root = { children: [], indent: -1 };
  const stack = [root];
  let n = i;
  while (n < lines.length) {
    const m = LIST_ITEM.exec(lines[n]);
    if (!m) {
      // An indented fence ends the list (it shows as code, as the index reads it), not its item.
      if (lines[n].trim() && /^\s+/.test(lines[n]) && !fences.has(n) && stack.length > 1) {
        stack[stack.length - 1].text += " " + lines[n].trim();
        n += 1;
        continue;
      }
      break;
    }
    const indent = m[1].replace(/\t/g, "    ").length;
    while (stack.length > 1 && indent <= stack[stack.length - 1].indent) stack.pop();
    const item = { indent, ordered: /\d/.test(m[2]), text: m[3], children: [], line: firstLine + n - i };
    stack[stack.length - 1].children.push(item);
    stack.push(item);
    n += 1;
  }
  const build = (items) => {
    const el = h(items[0].ordered ? "ol" : "ul", {});
    for (const item of items) {
      const li = h("li", { dataset: { line: item.line } });
      const task = /^\[([ xX])\]\s+(.*)$/.exec(item.text);
      if (task) li.append(h("input", { type: "checkbox", disabled: true, checked: task[1] !== " " }), " ");
      li.append(lineContent(task ? task[2] : item.text, ctx));
      if (item.children.length) li.append(build(item.children));
      el.append(li);
    }
    return el;
  };
  return { el: build(root.children), next: n };
}

// A heading's text without its closing `#`s and spaces, cut by a loop: a pattern for them
// backtracked over a long run of spaces for minutes.
function headingText(text) {
  let end = text.trimEnd().length;
  while (end > 0 && text[end - 1] === "#") end -= 1;
  return text.slice(0, end).trimEnd();
}

// The blocks of `text` (a note body whose first line is line `firstLine` of the file; `depth`
// blockquotes deep). `ctx.openComment` carries a comment left open at the end of one page of a
// note into the next page's render, and `ctx.openFence` a fence left open. Lines end at `\n` only, as the index reads them. A fence is code
// only outside blockquotes: the index reads `> ```` as text and counts the links after it.
export function render(text, ctx, firstLine = 1, depth = 0) {
  const out = document.createDocumentFragment();
  let lines = text.split("\n");
  let fences = new Map();
  if (depth === 0) {
    const carriedIn = [ctx.openComment || null, ctx.openFence || null];
    [lines, ctx.openComment, fences, ctx.openFence] = withoutComments(lines, ...carriedIn);
  }
  lines = lines.map((line) => line.replace(/\r+$/, ""));
  // A line of nothing but comments is blank (it ends a paragraph, as an HTML block does).
  lines = lines.map((line) => (line.includes(HIDDEN) && ONLY_HIDDEN.test(line) ? "" : line));
  let i = 0;
  const carried = fences.get(-1); // the rest of a fence opened on an earlier page
  if (carried) {
    const code = lines.slice(0, carried[0]).join("\n");
    out.append(h("pre", { dataset: { line: firstLine } }, h("code", {}, code)));
    i = carried[1];
  }
  while (i < lines.length) {
    const line = lines[i];
    const at = { dataset: { line: firstLine + i } };
    if (!line.trim()) {
      i += 1;
      continue;
    }
    const fence = fences.get(i);
    if (fence) {
      out.append(h("pre", at, h("code", {}, lines.slice(i + 1, fence[0]).join("\n"))));
      i = fence[1];
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/s.exec(line);
    if (heading) {
      out.append(h("h" + heading[1].length, at, inline(headingText(heading[2]), ctx)));
      i += 1;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      out.append(h("hr", at));
      i += 1;
      continue;
    }
    if (depth < MAX_QUOTE_DEPTH && /^\s*>/.test(line)) {
      const quoted = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ""));
      out.append(h("blockquote", at, render(quoted.join("\n"), ctx, at.dataset.line, depth + 1)));
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1])) {
      const table = h("table", at);
      table.append(h("thead", {}, h("tr", {}, cells(line).map((c) => h("th", {}, inline(c, ctx))))));
      const body = h("tbody", {});
      i += 2;
      while (i < lines.length && lines[i].includes("|") && lines[i].trim() && !fences.has(i)) {
        body.append(h("tr", {}, cells(lines[i++]).map((c) => h("td", {}, inline(c, ctx)))));
      }
      table.append(body);
      out.append(h("div", { class: "table-wrap" }, table));
      continue;
    }
    if (LIST_ITEM.test(line)) {
      const { el, next } = list(lines, i, firstLine + i, ctx, fences);
      out.append(el);
      i = next;
      continue;
    }
    const para = h("p", at);
    let first = true;
    while (i < lines.length && lines[i].trim() && (first || !startsBlock(lines, i, fences))) {
      if (!first) para.append(PREDICATE.test(lines[i]) ? h("br") : " ");
      para.append(lineContent(lines[i].trim(), ctx));
      first = false;
      i += 1;
    }
    out.append(para);
  }
  return out;
}

// Front matter split off the top of a note: [yamlText | null, body, the body's first line number].
export function splitFrontMatter(text) {
  const m = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(\r?\n|$)/.exec(text);
  if (!m) return [null, text, 1];
  return [m[1], text.slice(m[0].length), m[0].split("\n").length];
}
