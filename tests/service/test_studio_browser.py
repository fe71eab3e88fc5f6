"""Studio in a real headless Chromium against a real `reme start` service on a workspace with content.

One service and one browser for the module; each test gets a fresh browser context (own session
cookie). Every check ends on what the files on disk say, not only on what the page shows.
"""

from __future__ import annotations

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
    create_turns,
    extract_run,
    integrate_run,
    unit,
)
from tests.service.studio_support import (
    TODAY,
    XSS,
    XSS_NAME,
    build_workspace,
    put,
    screenshot,
    snapshot,
)
from tests.support import ServiceProcess, scripted_overrides, start_service_process

from reme.app import captures

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)

CHAT = {
    "run": "",  # the chat agent's run has no name
    "turns": [
        {"tool": "search", "args": {"query": "coconut milk"}},
        {"text": "Nate makes coconut milk ice cream [[daily/none-such.md]]."},  # cites no note
    ],
}
SCRIPT = [extract_run(unit()), integrate_run(create_turns()), CHAT]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    ws = tmp_path_factory.mktemp("studio") / "ws"
    build_workspace(ws)
    put(ws, CARD, CARD_TEXT)
    started = start_service_process(
        ws, "service.port=0", "timezone=UTC", *scripted_overrides(SCRIPT, cron=False)
    )
    reply = httpx.post(f"{started.url}/proactive_rebuild", json={}, timeout=30).json()
    assert reply["success"], reply["answer"]
    yield started
    started.stop()


@pytest.fixture
def page(browser: Any, service: ServiceProcess) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    # Playwright's 30 s default is a hang guard; on 2 shared cores with the suite's other workers a
    # busy service (audit, agenda) has taken longer, so the guard is widened, never a timing check.
    context.set_default_timeout(90_000)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.goto(f"{service.url}/studio")
    tab.wait_for_selector("#tree .folder")
    yield tab
    context.close()
    assert not errors, errors


def wait_until(page: Any, expression: str, timeout: float = 10.0) -> None:
    """Poll a JS expression (Playwright's wait_for_function compiles its predicate with eval, which
    Studio's CSP forbids, as it should)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"still false after {timeout}s: {expression}"
        page.wait_for_timeout(50)


def note_url(service: ServiceProcess, path: str) -> str:
    return f"{service.url}/studio#/note/{path.replace('/', '%2F')}"


def test_browse_the_tree_open_a_note_and_follow_its_links(
    page: Any, service: ServiceProcess, tmp_path: Path
) -> None:
    page.click("#tree details[data-path=digest] > summary")
    page.click('#tree details[data-path="digest/wiki"] > summary')
    page.click('#tree a[data-path="digest/wiki/writing.md"]')
    page.wait_for_selector("h1.view-title:text('Writing')")
    body = page.locator(".note-body")
    assert body.locator("strong").first.inner_text() == "journal"
    assert page.locator(".front-matter").inner_text().count("Why Joanna writes.") == 1
    assert body.locator(".wikilink.dead").inner_text() == "no-such-note"
    assert page.locator(".deadlinks li").count() == 1
    assert "related" in page.locator(".outlinks").inner_text()  # a typed edge, with its predicate
    wait_until(page, "document.querySelector('.embed-image')?.naturalWidth === 24")
    screenshot(page, "note", tmp_path)
    page.click(".note-body a.wikilink:text('desserts')")  # a short link, resolved as Obsidian does
    page.wait_for_selector("h1.view-title:text('Dairy-free desserts')")
    assert "digest/wiki/writing.md" in page.locator(".backlinks").inner_text()
    page.click(".note-body a.wikilink:text('writing')")
    page.wait_for_selector("h1.view-title:text('Writing')")
    page.click('.note-body a.wikilink:text("Nate\'s recipes")')  # alias with an anchor
    page.wait_for_selector("main[data-path='digest/people/nate.md']")
    assert page.locator(".note-body .predicate").inner_text() == "friend"


def test_a_long_note_reads_on_page_by_page(page: Any, service: ServiceProcess) -> None:
    page.goto(note_url(service, "digest/wiki/long.md"))
    page.wait_for_selector(".note-body li")
    assert "line 600:" not in page.locator(".note-body").inner_text()
    while page.locator("button[data-action=more]").count():
        page.click("button[data-action=more]")
        page.wait_for_timeout(100)
    assert page.locator(".note-body li").count() == 600
    assert page.locator(".note-body li").last.inner_text().startswith("line 600:")


def test_an_edit_against_a_changed_file_shows_both_versions_and_loses_neither(
    page: Any, service: ServiceProcess, tmp_path: Path
) -> None:
    path = "digest/people/joanna.md"
    page.goto(f"{service.url}/studio#/edit/{path.replace('/', '%2F')}")
    page.wait_for_selector("textarea.editor")
    editor = page.locator("textarea.editor")
    editor.fill(editor.input_value() + "\nMine: she also paints.\n")
    theirs = "---\nname: Joanna\n---\n# Joanna\n\nTheirs: changed by another interface.\n"
    reply = httpx.post(f"{service.url}/save", json={"path": path, "content": theirs}, timeout=30).json()
    assert reply["success"], reply["answer"]
    page.click("button[data-action=save]")
    page.wait_for_selector(".conflict")
    assert "Mine: she also paints." in page.locator(".conflict pre.mine").inner_text()
    assert "Theirs: changed by another interface." in page.locator(".conflict pre.theirs").inner_text()
    assert (service.workspace / path).read_text(encoding="utf-8") == theirs  # the save was refused
    screenshot(page, "conflict", tmp_path)
    page.click("button[data-action=overwrite]")
    page.wait_for_selector(".conflict", state="detached")
    assert "Mine: she also paints." in (service.workspace / path).read_text(encoding="utf-8")


def test_move_shows_the_links_it_rewrites_and_delete_the_links_left(
    page: Any, service: ServiceProcess
) -> None:
    page.goto(note_url(service, "digest/wiki/desserts.md"))
    page.click("button[data-action=move]")
    dialog = page.locator("dialog.modal")
    assert "1 inbound link(s) will be rewritten" in dialog.inner_text()
    dialog.locator("input").fill("digest/wiki/sweets.md")
    dialog.locator("button.primary").click()
    page.wait_for_selector("main[data-path='digest/wiki/sweets.md']")
    writing = (service.workspace / "digest/wiki/writing.md").read_text(encoding="utf-8")
    assert "[[sweets]]" in writing and not (service.workspace / "digest/wiki/desserts.md").exists()
    page.click("button[data-action=delete]")
    assert "1 inbound link(s) point here" in page.locator("dialog.modal").inner_text()
    page.locator("dialog.modal button.danger").click()
    wait_until(page, "location.hash === '#/'")
    assert not (service.workspace / "digest/wiki/sweets.md").exists()


def test_search_shows_the_jobs_hits_highlighted_and_opens_one(
    page: Any, service: ServiceProcess, tmp_path: Path
) -> None:
    page.fill("#search-input", "coconut milk")
    page.press("#search-input", "Enter")
    page.wait_for_selector(".hit")
    expected = httpx.post(
        f"{service.url}/search", json={"query": "coconut milk", "limit": 20}, timeout=30
    ).json()
    paths = [hit["path"] for hit in expected["metadata"]["results"]]
    assert page.locator(".hit-path").all_inner_texts() == paths
    assert page.locator(".hit mark").first.inner_text().lower() in ("coconut", "milk")
    screenshot(page, "search", tmp_path)
    page.locator(".hit-path").first.click()
    page.wait_for_selector(".note-body .hit")


def test_search_shows_each_branchs_score_when_the_job_gives_them(page: Any) -> None:
    """With vectors on the search job adds `branch_scores` to fused hits (tests/index/test_branch_scores.py);
    this service has no embedder, so its answer gets them on the way, as such a service would send."""

    def with_branches(route: Any) -> None:
        answer = route.fetch()
        body = answer.json()
        for n, hit in enumerate(body["metadata"]["results"]):
            if n == 0:
                hit["branch_scores"] = {"keyword": 7.25, "vector": 0.8125}
        route.fulfill(response=answer, json=body)

    page.route("**/search", with_branches)
    page.fill("#search-input", "coconut milk")
    page.press("#search-input", "Enter")
    page.wait_for_selector(".hit")
    assert (
        page.locator(".hit").first.locator(".branch-scores").inner_text().strip()
        == "(keyword 7.250 · vector 0.813)"
    )
    assert page.locator(".branch-scores").count() == 1  # hits without them show the fused score alone


def test_the_graph_draws_every_digest_node(page: Any, service: ServiceProcess, tmp_path: Path) -> None:
    page.click("#nav a[data-view=graph]")
    page.wait_for_selector("canvas[data-ready=true]")
    drawn = page.evaluate("window.__remeGraph")
    digest = [p for p in (service.workspace / "digest").rglob("*.md") if not p.name.startswith("_")]
    assert drawn["nodes"] >= len(digest) and drawn["edges"] >= 3
    assert page.locator(".bucket-toggle").count() >= 2
    screenshot(page, "graph", tmp_path)
    everything = page.locator(".graph-info").inner_text()
    page.fill(".focus-input", "digest/people/joanna.md")
    page.press(".focus-input", "Tab")
    page.fill("input[type=number]", "1")
    page.press("input[type=number]", "Tab")
    focused = page.locator(".graph-info").inner_text()
    assert focused != everything and int(focused.split()[0]) < int(everything.split()[0])
    page.uncheck(".bucket-toggle input[data-bucket=people]")
    assert page.locator(".graph-info").inner_text().startswith("1 ")  # joanna's wiki neighbour only


def test_revert_a_dream_run_leaves_the_files_byte_identical(
    page: Any, service: ServiceProcess, tmp_path: Path
) -> None:
    before = snapshot(service.workspace, "digest", "daily")
    reply = httpx.post(f"{service.url}/auto_dream", json={"date": DAY}, timeout=60).json()
    assert reply["success"], reply["answer"]
    assert (service.workspace / NODE).is_file()
    page.click("#nav a[data-view=review]")
    page.click(f".timeline a:text('{reply['metadata']['run_id']}')")
    page.wait_for_selector("table.actions")
    assert "CREATE" in page.locator("table.actions").inner_text()
    assert "new abstraction" in page.locator("table.actions").inner_text()  # the unit's reason
    assert page.locator(".diff .add").count() > 3
    screenshot(page, "dream-run", tmp_path)
    page.click("button[data-action=revert]")
    assert NODE in page.locator("dialog.modal .will-delete").inner_text()
    page.locator("dialog.modal button.danger").click()
    page.wait_for_selector(".revert-result .notice")
    assert snapshot(service.workspace, "digest", "daily") == before


def test_resolve_an_agenda_topic(page: Any, service: ServiceProcess, tmp_path: Path) -> None:
    page.click("#nav a[data-view=review]")
    topic = page.locator(".agenda .topic", has_text="Coconut ice cream recipe")
    page.wait_for_selector(".audit .section-body > :is(div, .failure)")
    screenshot(page, "review", tmp_path)
    topic.locator("button[data-action=resolve]").click()
    page.wait_for_selector(".agenda .topic.resolved")
    reply = httpx.post(f"{service.url}/proactive_read", json={"date": TODAY}, timeout=30).json()
    assert reply["success"] and reply["metadata"]["topics"] == []


def test_a_capture_made_elsewhere_appears_without_a_reload(page: Any, service: ServiceProcess) -> None:
    page.click("#nav a[data-view=review]")
    page.wait_for_selector(".captures-section")
    page.evaluate("window.__sameDocument = true")
    messages = [
        {
            "id": "m1",
            "role": "user",
            "content": "remember the api key ghp_8kQz3VbN1xR7tY2mW9pL4sD6fG0hJ5cA3eU1",
        }
    ]
    reply = httpx.post(
        f"{service.url}/agent_session_append",
        json={"session_id": "live-capture", "messages": messages},
        timeout=30,
    ).json()
    assert reply["success"], reply["answer"]
    page.wait_for_selector(".captures a:text('live-capture.jsonl')", timeout=15000)
    assert page.evaluate("window.__sameDocument") is True
    page.click(".captures a:text('live-capture.jsonl')")
    page.wait_for_selector(".transcript .message")
    assert "ghp_8kQz3VbN1xR7tY2mW9pL4sD6fG0hJ5cA3eU1" not in page.locator(".transcript").inner_text()


def test_status_shows_health_and_a_reindex_runs_to_the_end(
    page: Any, service: ServiceProcess, tmp_path: Path
) -> None:
    page.click("#nav a[data-view=status]")
    page.wait_for_selector(".health li")
    assert page.locator(".health li", has_text="index").count() >= 1
    page.click("button[data-action=reindex]")
    page.wait_for_selector("button[data-action=reindex]:not([disabled])", timeout=60000)
    assert page.locator(".reindex-label").inner_text()
    assert page.evaluate("document.querySelector('.reindex-progress').value") > 0
    screenshot(page, "status", tmp_path)
    page.click("button[data-action=pending]")
    page.wait_for_selector(".pending-result > *")
    assert page.locator(".pending-result").inner_text().strip()


def test_status_shows_a_failed_capture_and_a_recent_error_then_retries_and_drops_it(
    page: Any, service: ServiceProcess, tmp_path: Path
) -> None:
    lost = captures.Capture(
        session_id="lost-session",
        transcript_path=str(tmp_path / "gone.jsonl"),
        source="claude_code",
        event="Stop",
        cwd=None,
        at=time.time(),
    )
    marker = Path(captures.write_marker(str(service.workspace), lost))
    captures.failed(str(marker), "its transcript cannot be read: No such file or directory")
    reply = httpx.post(f"{service.url}/read", json={"path": "daily/none-such.md"}, timeout=30).json()
    assert not reply["success"]
    page.click("#nav a[data-view=status]")
    failed = page.locator(".captures-failed li[data-session=lost-session]")
    failed.wait_for()
    assert "cannot be read" in failed.inner_text() and "1×" in failed.inner_text()
    assert "reme hook drop session_id=lost-session" in failed.inner_text()
    errors = page.locator(".recent-errors").inner_text()
    assert "read" in errors and "none-such" in errors
    screenshot(page, "status-captures", tmp_path)
    failed.locator("button[data-action=retry-capture]").click()
    wait_until(page, "document.querySelector('li[data-session=lost-session]')?.textContent.includes('2×')")
    assert "capture_retry" in page.locator(".recent-errors").inner_text()  # the retry failed again
    page.locator("li[data-session=lost-session] button[data-action=drop-capture]").click()
    page.click("dialog.modal button.danger")
    page.wait_for_selector("li[data-session=lost-session]", state="detached")
    assert not marker.exists() and page.locator(".captures-status").inner_text().strip()


def test_chat_streams_the_answer_with_its_tool_calls_and_usage(page: Any, service: ServiceProcess) -> None:
    page.click("#nav a[data-view=chat]")
    page.fill(".chat-input", "What does Nate make?")
    page.press(".chat-input", "Enter")
    page.wait_for_selector(".chat-foot div", timeout=30000)
    assert "coconut milk ice cream" in page.locator(".chat-answer").inner_text()
    assert "search" in page.locator(".chat-tools").inner_text()
    assert "Tokens" in page.locator(".chat-foot").inner_text()
    assert "[[daily/none-such.md]] (no such note)" in page.locator(".chat-foot .unverified").inner_text()


def test_a_note_changed_elsewhere_is_shown_again_without_a_reload(page: Any, service: ServiceProcess) -> None:
    page.goto(note_url(service, "digest/people/nate.md"))
    page.wait_for_selector(".note-body h1")
    page.evaluate("window.__sameDocument = true")
    reply = httpx.post(
        f"{service.url}/edit",
        json={"path": "digest/people/nate.md", "old": "Coconut milk ice cream", "new": "Mango sorbet"},
        timeout=30,
    ).json()
    assert reply["success"], reply["answer"]
    page.wait_for_selector(".note-body p:has-text('Mango sorbet')", timeout=15000)
    assert page.evaluate("window.__sameDocument") is True


def test_planted_payloads_never_run_and_the_csp_header_is_sent(page: Any, service: ServiceProcess) -> None:
    response = page.goto(f"{service.url}/studio")
    csp = response.headers.get("content-security-policy", "")
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    page.wait_for_selector("#tree .folder")
    page.click("#tree details[data-path=digest] > summary")
    page.click('#tree details[data-path="digest/wiki"] > summary')
    page.wait_for_selector(f'#tree a[data-path="digest/wiki/{XSS_NAME}"]')
    page.goto(note_url(service, "digest/wiki/payload.md"))
    page.wait_for_selector(".note-body h1")
    assert XSS in page.locator("h1.view-title").inner_text()  # shown as text
    assert page.locator(".note-body a[href^='javascript']").count() == 0
    page.goto(note_url(service, f"digest/wiki/{XSS_NAME}"))
    page.wait_for_selector("main .failure")  # the jobs refuse such a name; the refusal shows as text
    page.fill("#search-input", XSS)
    page.press("#search-input", "Enter")
    page.wait_for_selector("main[data-view=search]")
    page.goto(f"{service.url}/studio#/search/{XSS}")
    page.wait_for_timeout(300)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("main img[src='x'], main svg").count() == 0


def test_dark_chinese_phone_width(page: Any, service: ServiceProcess, tmp_path: Path) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.click("button[data-action=theme]")
    page.click("button[data-action=lang]")
    page.wait_for_selector("#nav a:text('笔记')")
    assert page.evaluate("document.documentElement.dataset.theme") in ("dark", "light")
    page.goto(note_url(service, "digest/wiki/writing.md"))
    page.wait_for_selector(".note-body")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 400, width  # nothing forces a sideways scroll at a phone's width
    screenshot(page, "phone-dark-zh", tmp_path)
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "search-input"


def test_a_token_service_lets_the_browser_in_only_after_login(browser: Any, tmp_path: Path) -> None:
    token = "browser-login-token"
    guarded = start_service_process(
        tmp_path / "ws", "service.port=0", f"service.auth_token={token}", "scheduler.cron=false"
    )
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{guarded.url}/studio")
        page.fill("input[name=token]", "wrong")
        page.click("button[type=submit]")
        page.wait_for_selector("p.error:not(.hidden)")
        page.fill("input[name=token]", token)
        page.click("button[type=submit]")
        page.wait_for_selector("#tree .folder")  # the page's job calls pass with the cookie + CSRF header
        cookie = next(c for c in context.cookies() if c["name"] == "reme_studio")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert page.evaluate("document.cookie") == ""  # the session is out of the page's reach
        page.click("button[data-action=new]")
        page.locator("dialog.modal input").fill("digest/wiki/from-browser.md")
        page.locator("dialog.modal button.primary").click()
        page.wait_for_selector("textarea.editor")
        page.locator("textarea.editor").fill("Written through a logged-in session.\n")
        page.click("button[data-action=save]")
        page.wait_for_selector(".toast:has-text('Saved')")  # the save's own toast, not an earlier one
        written = (guarded.workspace / "digest/wiki/from-browser.md").read_text(encoding="utf-8")
        assert written == "Written through a logged-in session.\n"
    finally:
        context.close()
        guarded.stop()
