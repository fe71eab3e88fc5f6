// Chat with the memory through the `chat` stream job: streamed text, tool calls, cited paths, usage.
import { stream } from "./api.js";
import { h, link } from "./dom.js";
import { t } from "./i18n.js";
import { show } from "./ui.js";

const history = [];

export function chatView() {
  const log = h("div", { class: "chat-log", "aria-live": "polite" });
  const input = h("textarea", { class: "chat-input", rows: 2, placeholder: t("Ask about your memory…"), "aria-label": t("Ask") });
  const send = async () => {
    const query = input.value.trim();
    if (!query) return;
    input.value = "";
    const answer = h("div", { class: "chat-answer" });
    const tools = h("ul", { class: "chat-tools" });
    const foot = h("div", { class: "chat-foot muted" });
    log.append(h("div", { class: "chat-question" }, query), h("div", { class: "chat-turn" }, tools, answer, foot));
    let text = "";
    await stream("chat", { query, history: history.slice(-10) }, (chunk) => {
      if (chunk.type === "text") {
        text += chunk.text;
        answer.textContent = text;
      } else if (chunk.type === "tool_call") {
        tools.append(h("li", {}, h("code", {}, chunk.tool), " ", h("span", { class: "muted" }, JSON.stringify(chunk.args))));
      } else if (chunk.type === "tool_result") {
        tools.lastChild?.append(chunk.success ? " ✓" : " ✗");
      } else if (chunk.type === "error") {
        answer.append(h("div", { class: "failure" }, String(chunk.message)));
      } else if (chunk.type === "done") {
        const meta = chunk.metadata || {};
        const sources = meta.sources || [];
        const usage = meta.usage || {};
        // citations of notes the answer was not drawn from (checked after the text streamed)
        const unverified = (meta.unverified_citations || []).map((c) => `[[${c.target}]] (${t(c.reason)})`);
        foot.replaceChildren(
          sources.length ? h("div", {}, t("Cited") + ": ", sources.map((p, i) => [i ? ", " : "", link(p, "note", p)])) : null,
          unverified.length ? h("div", { class: "notice unverified" }, t("Unverified citations") + ": " + unverified.join(", ")) : null,
          h("div", {}, `${t("Tokens")}: ${Object.entries(usage).map(([k, v]) => `${k} ${v}`).join(" · ") || "0"}`));
      }
    });
    history.push({ role: "user", content: query }, { role: "assistant", content: text });
  };
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      send();
    }
  });
  return show(t("Chat"), log, h("div", { class: "chat-row" }, input, h("button", { type: "button", class: "primary", onclick: send }, t("Ask"))));
}
