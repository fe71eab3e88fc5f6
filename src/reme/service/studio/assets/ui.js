// Shared pieces of the page: the main pane, modal dialogs, toasts, and the job-failure banner.
import { add, h } from "./dom.js";
import { t } from "./i18n.js";

export function main() {
  return document.getElementById("main");
}

// Replace the main pane with a view: a heading and its content.
export function show(title, ...content) {
  const pane = main();
  pane.replaceChildren(h("h1", { class: "view-title" }, title));
  add(pane, content);
  return pane;
}

export function toast(text, kind = "info") {
  const box = document.getElementById("toast");
  const item = h("div", { class: "toast " + kind, role: kind === "error" ? "alert" : "status" }, text);
  box.append(item);
  setTimeout(() => item.remove(), kind === "error" ? 8000 : 4000);
}

export function failure(response) {
  return h("div", { class: "failure", role: "alert" }, String(response.answer ?? t("Failed")));
}

// A modal dialog: `body` nodes plus buttons; resolves with the chosen button's value (null on Escape).
export function dialog(title, body, buttons) {
  return new Promise((resolve) => {
    const el = h("dialog", { class: "modal", "aria-label": title });
    const row = h("div", { class: "buttons" });
    for (const [label, value, kind] of buttons) {
      row.append(
        h("button", { type: "button", class: kind || "", dataset: { value: String(value) }, onclick: () => {
          el.close();
          resolve(value);
        } }, label),
      );
    }
    el.append(h("h2", {}, title), ...body, row);
    el.addEventListener("cancel", () => resolve(null));
    el.addEventListener("close", () => setTimeout(() => el.remove(), 0));
    document.body.append(el);
    el.showModal();
    (el.querySelector("input, textarea") || row.lastChild)?.focus();
  });
}

export async function confirmBox(title, body, label, kind = "danger") {
  return (await dialog(title, body, [[t("Cancel"), false], [label, true, kind]])) === true;
}

// Ask for one text value; null when cancelled.
export async function ask(title, label, value = "") {
  const input = h("input", { type: "text", value, "aria-label": label, class: "wide" });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter") input.closest("dialog").querySelector("button.primary").click();
  });
  const ok = await dialog(title, [h("label", {}, label, input)], [[t("Cancel"), false], [t("Confirm"), true, "primary"]]);
  return ok ? input.value.trim() : null;
}
