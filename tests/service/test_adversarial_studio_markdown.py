"""Studio's note view and comments, on a real `reme start` and a real headless Chromium.

A link inside an HTML comment is no link to the index (docs/spec.md §2.2), and Obsidian shows
neither `<!-- ... -->` nor `%% ... %%`: Studio must show no comment text and no link from one,
while code spans and fences keep theirs as code, and a comment's raw HTML never becomes markup.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.service.studio_support import LINKS, outlinks, put, show
from tests.support import ServiceProcess, start_service_process

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)

PLAIN = "#/note/digest%2Fwiki%2Fplain.md"
# Every element with a handler attribute and every script, frame or SVG in the page: what an
# injection would leave behind.
INJECTED = """() => {
  const bad = [];
  for (const el of document.querySelectorAll("*")) {
    if ([...el.attributes].some((a) => a.name.startsWith("on"))) bad.push(el.outerHTML.slice(0, 120));
    if (el.closest("main") && /^(script|iframe|object|embed|svg|img)$/i.test(el.tagName)) bad.push(el.tagName);
  }
  return bad;
}"""


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    ws = tmp_path_factory.mktemp("studio-markdown") / "ws"
    put(ws, "digest/wiki/plain.md", "---\nname: Plain\n---\n# Plain\n\nNothing odd here.\n")
    started = start_service_process(ws, "service.port=0", "scheduler.cron=false")
    yield started
    started.stop()


def test_html_comments_show_nothing_and_link_nowhere_as_in_the_index(
    page: Any, service: ServiceProcess
) -> None:
    text = (
        "# Day <!-- [[digest/wiki/heading-hidden.md]] -->\n\n"
        "Before <!-- [[digest/wiki/inline-hidden.md]] secret-inline --> after [[plain]].\n"
        "[[plain]]<!-- secret-side -->[[plain|beside]] and [[plain<!-- secret-cut -->]] split.\n\n"
        "<!-- notes:auto -->\n"
        "- [[digest/wiki/plain.md]] listed\n"
        "<!-- /notes:auto -->\n\n"
        '<!-- reme:node path="digest/wiki/plain.md" -->\n\n'
        "Starts here <!-- runs on\n"
        "[[digest/wiki/multi-hidden.md]] secret-multi\n"
        "```\n"
        "secret-fence-in-comment\n"
        "--> ends here.\n\n"
        "| a | b <!-- | [[digest/wiki/cell-hidden.md]] --> |\n"
        "|---|---|\n"
        "| x | y <!-- secret-cell --> |\n"
    )
    body = show(page, service, "digest/wiki/html.md", text)
    shown = body.inner_text()
    for hidden in ("<!--", "-->", "secret", "hidden", "notes:auto", "reme:node", "runs on"):
        assert hidden not in shown
    for kept in ("Before", "after", "Starts here", "ends here.", "listed", "split"):
        assert kept in shown
    assert body.locator("h1").inner_text() == "Day"
    assert page.evaluate(LINKS) == [
        ["plain", PLAIN],
        ["plain", PLAIN],
        ["beside", PLAIN],
        ["digest/wiki/plain.md", PLAIN],
    ]
    assert body.locator("td").all_inner_texts() == ["x", "y"]
    # The body's links are the ones the index holds.
    assert outlinks(service, "digest/wiki/html.md") == {"digest/wiki/plain.md", "plain"}


def test_obsidian_comments_show_nothing_and_link_nowhere(page: Any, service: ServiceProcess) -> None:
    text = (
        "Obsidian %% [[digest/wiki/inline-hidden.md]] secret-inline %% shown [[plain]].\n"
        "%%secret-tight%%[[plain|beside]] and %%[[plain]]\n"
        "secret-multi [[digest/wiki/multi-hidden.md]]\n"
        "%% after the block.\n\n"
        "%%\n"
        "# secret-heading\n"
        "- [[digest/wiki/block-hidden.md]]\n"
        "%%\n\n"
        "An HTML one holds a pair: <!-- %% [[digest/wiki/mixed-hidden.md]] %% --> visible.\n"
        "The other holds an opener: %% <!-- [[digest/wiki/mixed-hidden.md]] %% visible too.\n"
    )
    body = show(page, service, "digest/wiki/obsidian.md", text)
    shown = body.inner_text()
    for hidden in ("%%", "<!--", "secret", "hidden"):
        assert hidden not in shown
    for kept in ("Obsidian", "shown", "after the block.", "visible.", "visible too."):
        assert kept in shown
    assert body.locator("h1").count() == 0
    assert page.evaluate(LINKS) == [["plain", PLAIN], ["beside", PLAIN]]
    assert outlinks(service, "digest/wiki/obsidian.md") == {"plain"}


def test_comments_in_code_spans_and_fences_stay_code(page: Any, service: ServiceProcess) -> None:
    text = (
        "Inline `<!-- [[digest/wiki/a.md]] -->` and ``a `%% b %%` c`` then [[plain]].\n\n"
        "```html\n"
        "<!-- [[digest/wiki/b.md]] fenced -->\n"
        "%% fenced %%\n"
        "```\n\n"
        "- an item\n"
        "  ```\n"
        "  <!-- in a list's fence -->\n"
        "  ```\n\n"
        "A code span opened first wins: `<!--` [[plain|after]] `-->`\n"
    )
    body = show(page, service, "digest/wiki/code.md", text)
    assert body.locator("p code").all_inner_texts() == [
        "<!-- [[digest/wiki/a.md]] -->",
        "a `%% b %%` c",
        "<!--",
        "-->",
    ]
    assert body.locator("pre code").all_inner_texts() == [
        "<!-- [[digest/wiki/b.md]] fenced -->\n%% fenced %%",
        "  <!-- in a list's fence -->",
    ]
    assert page.evaluate(LINKS) == [["plain", PLAIN], ["after", PLAIN]]
    assert outlinks(service, "digest/wiki/code.md") == {"plain"}


HOSTILE = (
    "<!-- --><script>window.__pwned=1</script> after-empty\n"
    "<!--><img src=x onerror=window.__pwned=1> after-short\n"
    "<!-- <img src=x onerror=window.__pwned=1> [[plain]] secret-img --> after-img\n"
    "--><svg onload=window.__pwned=1> <!-- -- > still hidden --> after-svg\n"
    "%%<script>window.__pwned=1</script>%%<b onclick=window.__pwned=1>bold</b>\n"
    "[[plain]] <!-- never closed <script>window.__pwned=1</script>\n"
    "[[digest/wiki/after-open.md]] nothing-after-the-open-comment\n\n"
    "# secret-heading\n"
)


def test_hostile_comments_stay_text_and_inert(page: Any, service: ServiceProcess) -> None:
    body = show(page, service, "digest/wiki/hostile.md", HOSTILE)
    shown = body.inner_text()
    # What stands outside a comment shows as the text it is; what stands inside shows not at all.
    assert "<script>window.__pwned=1</script> after-empty" in shown
    assert "<img src=x onerror=window.__pwned=1> after-short" in shown
    assert "--><svg onload=window.__pwned=1> after-svg" in shown
    assert "after-img" in shown
    assert "<b onclick=window.__pwned=1>bold</b>" in shown
    for hidden in ("secret", "still hidden", "never closed", "nothing-after"):
        assert hidden not in shown
    assert page.evaluate(LINKS) == [["plain", PLAIN]]
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate(INJECTED) == []
    assert outlinks(service, "digest/wiki/hostile.md") == {"plain"}


def test_a_comment_open_at_a_page_end_hides_the_next_page_until_it_closes(
    page: Any, service: ServiceProcess
) -> None:
    """A note longer than one page of the read job comes in pages; a comment runs across them."""
    filler = "".join(f"- hidden line {i} [[digest/wiki/paged-{i}.md]] {'words ' * 8}\n" for i in range(400))
    text = f"# Paged\n\nshown-first [[plain]] <!-- opens\n{filler}--> shown-last [[plain|last]]\n"
    body = show(page, service, "digest/wiki/paged.md", text)
    assert page.locator("button[data-action=more]").count() == 1
    while more := page.query_selector("button[data-action=more]"):
        more.click()
        more.wait_for_element_state("hidden")  # replaced by the page it read
    shown = body.inner_text()
    assert "shown-first" in shown
    assert "hidden line" not in shown
    assert page.evaluate(LINKS) == [["plain", PLAIN], ["last", PLAIN]]


@pytest.mark.parametrize(
    "text",
    [
        "<!--" * 30_000 + "\n",
        "%%" * 60_000 + "[[plain]]\n",
        "<!-- -->" * 15_000 + "\n",
        "`<!--" * 30_000 + "\n",
        "".join(f"{'`' * n} <!-- " for n in range(1, 400)) + "\n",
        "\\<!--" * 30_000 + "\n",
        "<!-- a\n" + "```\n" * 20_000 + "-->\n",
    ],
    ids=["opens", "percents", "closed", "ticks-then-opens", "runs", "escapes", "fences-in-comment"],
)
def test_hostile_comment_shapes_render(page: Any, service: ServiceProcess, text: str) -> None:
    show(page, service, "digest/wiki/shape.md", text)
    assert page.locator("main .failure").count() == 0
    assert page.evaluate(LINKS) == ([["plain", PLAIN]] if "[[plain]]" in text else [])
