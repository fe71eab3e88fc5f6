"""Studio under attack, on a real `reme start` and a real headless Chromium: untrusted text in every
place the page shows it, cross-site requests, undo raced by hand edits and a second tab, paths that
leave the workspace, content built to make the page's parsers take minutes, and a file name the
file watcher cannot read.

A payload that ran would set `window.__pwned`; each check also ends on what the files on disk say.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.pipelines.dream_support import (
    CARD,
    CARD_TEXT,
    DAY,
    NODE,
    body,
    extract_run,
    integrate_run,
    report,
    unit,
)
from tests.service.studio_support import TODAY, XSS, EventListener, put, snapshot
from tests.support import ServiceProcess, scripted_overrides, start_service_process

from reme.app import captures

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)

TOKEN = "adversarial-studio-token"
IMG = "<img src=x onerror=window.__pwned=1>"
DREAM = [
    extract_run(unit()),
    integrate_run(
        [
            {"tool": "digest_write", "args": {"path": NODE, "content": body(CARD), "description": XSS}},
            report("CREATE", NODE, reason=XSS),
        ]
    ),
]
# Every element with a handler attribute, script, frame or SVG in the page, and every link that is
# neither a route of the page nor http(s)/mailto: what an injection would leave behind.
INJECTED = """() => {
  const bad = [];
  for (const el of document.querySelectorAll("*")) {
    if ([...el.attributes].some((a) => a.name.startsWith("on"))) bad.push(el.outerHTML.slice(0, 120));
    if (el.closest("main") && /^(script|iframe|object|embed|svg)$/i.test(el.tagName)) bad.push(el.tagName);
  }
  for (const a of document.querySelectorAll("main a[href]")) {
    const href = a.getAttribute("href");
    if (!/^(#\\/|https?:\\/\\/|mailto:)/i.test(href)) bad.push(href);
  }
  for (const img of document.querySelectorAll("main img[src]")) {
    if (!img.getAttribute("src").startsWith("data:image/")) bad.push(img.getAttribute("src"));
  }
  return bad;
}"""


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    ws = tmp_path_factory.mktemp("adversarial-studio") / "ws"
    put(ws, CARD, CARD_TEXT)
    put(ws, "digest/wiki/plain.md", "---\nname: Plain\n---\n# Plain\n\nNothing odd here.\n")
    put(
        ws,
        f"daily/{TODAY}/interests.yaml",
        f"date: {TODAY}\ntopics:\n  - title: {json.dumps(XSS)}\n    reason: {json.dumps(XSS)}\n"
        f"    evidence: {json.dumps(IMG)}\n    keywords: [x]\n    paths: [{json.dumps('digest/wiki/' + IMG)}]\n",
    )
    started = start_service_process(
        ws, "service.port=0", "timezone=UTC", *scripted_overrides(DREAM, cron=False)
    )
    reply = httpx.post(f"{started.url}/proactive_rebuild", json={}, timeout=30).json()
    assert reply["success"], reply["answer"]
    yield started
    started.stop()


@pytest.fixture(scope="module")
def dream(service: ServiceProcess) -> dict[str, Any]:
    """One dream run that created NODE (its reason and description are payloads), and the files before it."""
    before = snapshot(service.workspace, "digest", "daily")
    reply = httpx.post(f"{service.url}/auto_dream", json={"date": DAY}, timeout=60).json()
    assert reply["success"], reply["answer"]
    assert (service.workspace / NODE).is_file()
    return {"run_id": reply["metadata"]["run_id"], "before": before}


class Tab:
    """A browser context of its own (own session cookie) with the page's uncaught errors collected."""

    def __init__(self, browser: Any, url: str) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 800})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.goto(f"{url}/studio")
        self.page.wait_for_selector("#tree .folder")

    def inert(self) -> None:
        """Nothing injected, nothing ran, nothing thrown."""
        assert self.page.evaluate("window.__pwned") is None
        assert self.page.evaluate(INJECTED) == []
        assert not self.errors, self.errors


@pytest.fixture
def tab(browser: Any, service: ServiceProcess) -> Iterator[Tab]:
    opened = Tab(browser, service.url)
    yield opened
    opened.context.close()


def route(service: ServiceProcess, view: str, arg: str) -> str:
    return f"{service.url}/studio#/{view}/{arg.replace('/', '%2F')}"


def as_before(ws: Path, before: dict[str, str]) -> bool:
    """Every file of `before` byte-identical, the dream's node gone (files other tests add are ignored)."""
    now = snapshot(ws, "digest", "daily")
    return NODE not in now and all(now.get(path) == sha for path, sha in before.items())


def wait_until(page: Any, expression: str, timeout: float = 10.0) -> None:
    """Poll a JS expression (wait_for_function needs eval, which the CSP forbids)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"still false after {timeout}s: {expression}"
        page.wait_for_timeout(50)


# ---- untrusted text ---------------------------------------------------------------------------------


def test_payloads_in_the_agenda_runs_captures_errors_and_transcripts_stay_text(
    tab: Tab, service: ServiceProcess, dream: dict[str, Any], tmp_path: Path
) -> None:
    page, ws = tab.page, service.workspace
    lines = [
        {"role": IMG, "created_at": XSS, "content": f"{XSS} [REDACTED:api_key] </textarea>"},
        {"role": "assistant", "content": [{"type": "text", "text": XSS}, {"type": "image"}]},
    ]
    put(ws, "session/dialog/payload.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    lost = captures.Capture(
        session_id="payload-session",
        transcript_path=str(tmp_path / f"{IMG}.jsonl"),
        source="claude_code",
        event="Stop",
        cwd=None,
        at=time.time(),
    )
    captures.failed(captures.write_marker(str(ws), lost), f"cannot read {XSS}")
    refused = httpx.post(f"{service.url}/read", json={"path": f"daily/{IMG}.md"}, timeout=30).json()
    assert not refused["success"] and IMG in refused["answer"]  # the error echoes the payload

    page.click("#nav a[data-view=review]")
    topic = page.locator(".agenda .topic").first
    topic.wait_for()
    assert XSS in topic.locator("strong").inner_text()
    page.wait_for_selector(".captures a:text('payload.jsonl')")
    page.wait_for_selector(".audit .section-body > :is(div, .failure)")
    tab.inert()

    page.goto(route(service, "run", dream["run_id"]))
    page.wait_for_selector("table.actions")
    assert XSS in page.locator("table.actions").inner_text()
    tab.inert()

    page.goto(route(service, "note", "session/dialog/payload.jsonl"))
    page.wait_for_selector(".transcript .message")
    assert XSS in page.locator(".transcript").inner_text()
    assert page.locator(".transcript mark.redacted").count() == 1
    tab.inert()

    page.click("#nav a[data-view=status]")
    page.wait_for_selector(".captures-failed li[data-session=payload-session]")
    page.wait_for_selector(".recent-errors")
    assert XSS in page.locator(".captures-failed").inner_text()
    assert IMG in page.locator(".recent-errors").inner_text()
    tab.inert()


def test_payloads_in_front_matter_lists_wikilinks_links_svg_and_the_editor_stay_text(
    tab: Tab, service: ServiceProcess
) -> None:
    page, ws = tab.page, service.workspace
    svg = '<svg xmlns="http://www.w3.org/2000/svg" onload="window.__pwned=1"><script>window.__pwned=1</script></svg>'
    put(ws, "resource/evil.svg", svg)
    text = (
        "---\nname: Fields\n"
        f"tags: [{json.dumps(IMG)}, '</textarea><script>window.__pwned=1</script>']\n"
        f"links: {{inner: {json.dumps('[[' + IMG + ']]')}}}\n---\n"
        f"# Fields\n\n[[</textarea>{IMG}]] and [[plain|{IMG}]] and [[plain#{IMG}]]\n\n"
        "[a](JaVaScRiPt:window.__pwned=1) [b](java\tscript:window.__pwned=1) [c](data:text/html,x) "
        '[d](&#106;avascript:window.__pwned=1) <https://ok.example/"onmouseover="window.__pwned=1>\n\n'
        "![[resource/evil.svg]] ![e](../../resource/evil.svg)\n\n"
        f"| {IMG} | b |\n|---|---|\n| [x](javascript:window.__pwned=1) | {XSS} |\n\n"
        f"> {XSS}\n\n- [ ] {IMG}\n\n```\n{XSS}\n```\n"
    )
    written = httpx.post(
        f"{service.url}/write", json={"path": "digest/wiki/fields.md", "content": text}, timeout=30
    )
    assert written.json()["success"]  # through the job: its links are resolved before the page reads them
    page.goto(route(service, "note", "digest/wiki/fields.md"))
    page.wait_for_selector(".note-body table")
    wait_until(page, "[...document.querySelectorAll('.embed-image')].every((i) => i.complete)")
    assert IMG in page.locator(".front-matter").inner_text()
    assert page.locator(".note-body pre code").inner_text().strip() == XSS
    tab.inert()

    page.goto(route(service, "edit", "digest/wiki/fields.md"))
    page.wait_for_selector("textarea.editor")
    assert page.locator("textarea.editor").input_value() == text  # byte for byte, nothing parsed
    page.locator("textarea.editor").fill(text + f"\nmine {XSS}\n")
    put(ws, "digest/wiki/fields.md", text + f"\ntheirs {XSS}\n")
    page.click("button[data-action=save]")
    page.wait_for_selector(".conflict")
    assert f"theirs {XSS}" in page.locator(".conflict pre.theirs").inner_text()
    tab.inert()
    assert (ws / "digest/wiki/fields.md").read_text(encoding="utf-8") == text + f"\ntheirs {XSS}\n"


def test_a_transcript_with_records_that_are_not_messages_still_shows(
    tab: Tab, service: ServiceProcess
) -> None:
    """Imported chats and captured transcripts hold records of every shape; one odd record must not
    take the whole transcript away."""
    page = tab.page
    records = [
        "null",
        "42",
        '"a bare string"',
        "[1, 2]",
        '{"role": "tool"}',
        '{"role": "user", "content": null}',
    ]
    message = json.dumps({"role": "user", "content": "the message that matters"})
    put(service.workspace, "session/dialog/odd.jsonl", "\n".join([*records, "{not json", message]) + "\n")
    page.goto(route(service, "note", "session/dialog/odd.jsonl"))
    page.wait_for_selector(".transcript li")
    assert page.locator(".transcript > li").count() == len(records) + 2
    assert "the message that matters" in page.locator(".transcript").inner_text()
    assert page.locator("main .failure").count() == 0
    tab.inert()


# ---- bounded work on untrusted content -------------------------------------------------------------

# Each is one line of a note; before the renderer was bounded, each kept the page busy for minutes
# (backtracking patterns, one pass per token) or overflowed the stack (nested quotes).
HOSTILE = {
    "spaces-heading": "# a" + " " * 4000 + "b\n",
    "hash-heading": "# a " + "#" * 100_000 + "b\n",
    "brackets": "[" * 100_000 + "\n",
    "code-and-brackets": ("`a`" + "[" * 100) * 1000 + "\n",
    "open-links": "[a](" * 30_000 + "\n",
    "open-autolinks": "<http://" * 15_000 + "\n",
    "open-predicates": "[a:: [[" * 15_000 + "\n",
    "tokens": "`a` **b** " * 15_000 + "\n",
    "nested-quotes": "> " * 20_000 + "deep\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_markdown_renders_in_bounded_time(tab: Tab, service: ServiceProcess, name: str) -> None:
    put(service.workspace, f"digest/wiki/hostile-{name}.md", HOSTILE[name])
    started = time.monotonic()
    tab.page.goto(route(service, "note", f"digest/wiki/hostile-{name}.md"))
    tab.page.wait_for_selector(".note-body > *", timeout=5_000)
    assert time.monotonic() - started < 5
    assert tab.page.locator("main .failure").count() == 0
    assert not tab.errors, tab.errors


def test_markdown_still_renders_what_the_bounded_parser_changed(tab: Tab, service: ServiceProcess) -> None:
    """The cheaper patterns keep every form the note view documents."""
    page = tab.page
    text = (
        "# Title ##\n\n## C# notes\n\n### Tag #\n\n`code` **bold** *em* _em2_ ~~del~~ snake_case_word [[plain]] "
        "[[plain#Plain|alias]] [link](plain.md) <https://example.com/a> [rel:: [[plain]]] "
        "![img](../../resource/none.png)\n"
    )
    written = httpx.post(
        f"{service.url}/write", json={"path": "digest/wiki/forms.md", "content": text}, timeout=30
    )
    assert written.json()["success"]  # through the job, so its links are resolved at once
    page.goto(route(service, "note", "digest/wiki/forms.md"))
    page.wait_for_selector(".note-body h1")
    body = page.locator(".note-body")
    assert body.locator("h1").inner_text() == "Title"
    assert body.locator("h2").inner_text() == "C# notes"
    assert body.locator("h3").inner_text() == "Tag"  # a closing # is stripped, as before
    assert body.locator("code").inner_text() == "code"
    assert body.locator("strong").inner_text() == "bold"
    assert body.locator("em").all_inner_texts() == ["em", "em2"]
    assert body.locator("del").inner_text() == "del"
    assert "snake_case_word" in body.inner_text()
    assert body.locator("a.wikilink").all_inner_texts() == ["plain", "alias", "plain"]
    assert body.locator("a[href='#/note/digest%2Fwiki%2Fplain.md']").count() == 4
    assert body.locator("a[href='https://example.com/a']").count() == 1
    assert body.locator(".predicate").inner_text() == "rel"
    wait_until(page, "document.querySelectorAll('.note-body .image-alt').length === 1")


# ---- the live feed ---------------------------------------------------------------------------------


def test_the_live_feed_survives_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    """The watcher cannot decode such a name; it used to die with it, and no page heard of any later change."""
    ws = tmp_path / "ws"
    (ws / "daily").mkdir(parents=True)
    service = start_service_process(ws, "service.port=0", "scheduler.cron=false")
    listener = EventListener(service.url, timeout=60)
    try:
        deadline = time.monotonic() + 20
        listener.wait_open(deadline)
        with open(os.fsencode(ws / "daily") + b"/bad\xff.md", "wb") as odd:
            odd.write(b"# odd\n")
        time.sleep(1.5)
        (ws / "daily" / "after.md").write_text("# after\n", encoding="utf-8")
        assert listener.wait_for(b"daily/after.md", deadline)
        assert b'"paths": [], "truncated": true' in listener.text()  # pages reload what they show
    finally:
        service.stop()
    listener.join()


# ---- cross-site requests ---------------------------------------------------------------------------


def test_another_site_cannot_make_the_browser_change_anything(service: ServiceProcess) -> None:
    ws, url = service.workspace, service.url
    target = ws / "digest/wiki/forged.md"
    form = {"content-type": "text/plain"}  # a form post: no CORS preflight
    for origin in ("https://evil.example", "null", "http://127.0.0.1.evil.example"):
        reply = httpx.post(
            f"{url}/write",
            content='{"path": "digest/wiki/forged.md", "content": "x"}',
            headers={**form, "Origin": origin},
        )
        assert reply.status_code == 403, origin
    for job in ("write", "delete", "dream_revert", "proactive_resolve", "save"):
        assert (
            httpx.get(f"{url}/{job}", params={"path": "digest/wiki/forged.md", "content": "x"}).status_code
            == 405
        )
    assert not target.exists()

    client = httpx.Client(base_url=url)
    client.get("/studio")  # a session cookie, as the user's browser holds
    topics = httpx.post(f"{url}/proactive_read", json={}, timeout=30).json()["metadata"]["topics"]
    assert topics
    for headers in ({}, {"x-reme-csrf": "guessed"}, {"x-reme-csrf": ""}):
        refused = client.post(
            "/proactive_resolve", json={"topic_id": topics[0]["id"], "reason": "forged"}, headers=headers
        )
        assert refused.status_code == 403
        assert (
            client.post(
                "/write", json={"path": "digest/wiki/forged.md", "content": "x"}, headers=headers
            ).status_code
            == 403
        )
    again = httpx.post(f"{url}/proactive_read", json={}, timeout=30).json()["metadata"]["topics"]
    assert [t["id"] for t in again] == [t["id"] for t in topics] and not target.exists()


def test_with_a_token_a_session_is_needed_and_its_csrf_token_too(tmp_path: Path) -> None:
    guarded = start_service_process(
        tmp_path / "ws", "service.port=0", f"service.auth_token={TOKEN}", "scheduler.cron=false"
    )
    try:
        url = guarded.url
        forged = httpx.post(
            f"{url}/write",
            content="{}",
            headers={"content-type": "text/plain", "Origin": "https://evil.example"},
        )
        assert forged.status_code == 401
        assert (
            httpx.post(
                f"{url}/studio/login", data={"token": TOKEN}, headers={"Origin": "https://evil.example"}
            ).status_code
            == 403
        )
        client = httpx.Client(base_url=url)
        assert client.post("/studio/login", data={"token": TOKEN}).status_code == 303
        assert client.post("/studio/logout").status_code == 403  # logout is state-changing too
        assert (
            client.post(
                "/write", json={"path": "a.md", "content": "x"}, headers={"x-reme-csrf": "x"}
            ).status_code
            == 403
        )
        assert (
            client.get("/studio").status_code == 200 and "reme-csrf" in client.get("/studio").text
        )  # still logged in
        assert not (guarded.workspace / "a.md").exists()
    finally:
        guarded.stop()


# ---- undo ------------------------------------------------------------------------------------------


def test_revert_after_a_hand_edit_then_again_from_a_second_tab(
    browser: Any, service: ServiceProcess, dream: dict[str, Any]
) -> None:
    ws, run_id = service.workspace, dream["run_id"]
    node = ws / NODE
    edited = node.read_text(encoding="utf-8") + "\nAdded by hand.\n"
    node.write_text(edited, encoding="utf-8")
    first, second = Tab(browser, service.url), Tab(browser, service.url)
    try:
        for tab in (first, second):
            tab.page.goto(route(service, "run", run_id))
            tab.page.wait_for_selector("table.actions")
        page = first.page
        page.click("button[data-action=revert]")
        assert NODE in page.locator("dialog.modal .will-skip").inner_text()
        page.locator("dialog.modal button.danger").click()
        page.wait_for_selector(".revert-result .notice")
        assert node.read_text(encoding="utf-8") == edited  # the hand edit is kept unless forced
        page.click(".revert-result button[data-action=force]")
        page.locator("dialog.modal button.danger").click()
        forced = page.locator("dialog.modal", has_text="Later changes to these files will be lost")
        assert NODE in forced.inner_text()
        forced.locator("button.danger").click()
        wait_until(page, "document.querySelector('.revert-result')?.textContent.includes('Deleted 1')")
        assert as_before(ws, dream["before"])

        late = second.page  # opened before any of it, acting now
        late.click("button[data-action=revert]")
        late.locator("dialog.modal button.danger").click()
        late.wait_for_selector(".revert-result .notice")
        assert "Restored 0 · Deleted 0 · Skipped 0" in late.locator(".revert-result").inner_text()
        assert as_before(ws, dream["before"])
        runs = httpx.post(f"{service.url}/journal", json={"kind": "revert"}, timeout=30).json()["metadata"][
            "runs"
        ]
        assert [r["reverts"] for r in runs] == [run_id]  # the forced one; the no-op wrote nothing
        first.inert()
        second.inert()
    finally:
        first.context.close()
        second.context.close()


def test_a_save_after_the_file_was_deleted_in_another_tab_says_so(
    browser: Any, service: ServiceProcess
) -> None:
    ws = service.workspace
    put(ws, "digest/wiki/doomed.md", "# Doomed\n\nOriginal.\n")
    editor, deleter = Tab(browser, service.url), Tab(browser, service.url)
    try:
        editor.page.goto(route(service, "edit", "digest/wiki/doomed.md"))
        editor.page.wait_for_selector("textarea.editor")
        editor.page.locator("textarea.editor").fill("# Doomed\n\nMine.\n")
        deleter.page.goto(route(service, "note", "digest/wiki/doomed.md"))
        deleter.page.click("button[data-action=delete]")
        deleter.page.locator("dialog.modal button.danger").click()
        wait_until(deleter.page, "location.hash === '#/'")
        assert not (ws / "digest/wiki/doomed.md").exists()
        editor.page.click("button[data-action=save]")
        editor.page.wait_for_selector(".conflict")
        conflict = editor.page.locator(".conflict")
        assert "Mine." in conflict.locator("pre.mine").inner_text()
        assert conflict.locator(".failure").count() == 1  # the disk version is gone, not an empty file
        assert conflict.locator("button[data-action=theirs]").count() == 0
        conflict.locator("button[data-action=overwrite]").click()
        editor.page.wait_for_selector(".conflict", state="detached")
        assert (ws / "digest/wiki/doomed.md").read_text(encoding="utf-8") == "# Doomed\n\nMine.\n"
    finally:
        editor.context.close()
        deleter.context.close()


# ---- paths -----------------------------------------------------------------------------------------


def test_routes_with_paths_outside_the_workspace_or_bad_escapes_show_a_refusal(
    tab: Tab, service: ServiceProcess
) -> None:
    page, ws = tab.page, service.workspace
    secret = ws.parent / "outside.md"
    secret.write_text("# Outside\n\nTOP-SECRET\n", encoding="utf-8")
    for view, arg in (
        ("note", "../outside.md"),
        ("note", str(secret)),
        ("note", "digest/../../outside.md"),
        ("edit", "../outside.md"),
        ("edit", str(secret)),
        ("run", "../../outside"),
    ):
        page.goto(route(service, view, arg))
        wait_until(page, f"document.querySelector('h1.view-title')?.textContent === {json.dumps(arg)}")
        assert page.locator("main .failure").count() == 1, (view, arg)
        assert "TOP-SECRET" not in page.locator("main").inner_text(), (view, arg)
    page.goto(f"{service.url}/studio#/note/%E0%A4%A")  # an escape that does not decode
    wait_until(page, "document.querySelector('h1.view-title')?.textContent === '%E0%A4%A'")
    assert page.locator("main .failure").count() == 1
    tab.inert()
    for name in ("..%2F..%2Fhttp.py", "%2Fetc%2Fpasswd", "%2E%2E", "%2e%2e%2fsessions.py", "style.css%00.js"):
        answer = httpx.get(f"{service.url}/studio/assets/{name}")
        assert answer.status_code == 404 and "import" not in answer.text and "root:" not in answer.text, name
    assert secret.read_text(encoding="utf-8") == "# Outside\n\nTOP-SECRET\n"
