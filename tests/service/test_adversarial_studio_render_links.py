"""Studio shows as links exactly the links the index holds (docs/spec.md §2.2), on a real `reme start`
and a real headless Chromium: escaped `\\[[x]]` is text, fences open and close by the index's rules
(```` ```js ```` closes nothing), a fence inside a blockquote is no code to the index so its links
show, and `[[a\\|b]]` in a table keeps its target. Everything stays text (no HTML is injected).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.service.studio_support import LINKS, outlinks, put, show
from tests.support import ServiceProcess, start_service_process

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)

PLAIN = "#/note/digest%2Fwiki%2Fplain.md"
INJECTED = """() => [...document.querySelectorAll("main *")].filter((el) =>
  [...el.attributes].some((a) => a.name.startsWith("on")) || /^(script|iframe|svg|img)$/i.test(el.tagName)
).map((el) => el.tagName)"""


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    ws = tmp_path_factory.mktemp("studio-render-links") / "ws"
    put(ws, "digest/wiki/plain.md", "---\nname: Plain\n---\n# Plain\n\nNothing odd here.\n")
    started = start_service_process(ws, "service.port=0", "scheduler.cron=false")
    yield started
    started.stop()


def test_escaped_wikilinks_show_as_text_and_link_nowhere(page: Any, service: ServiceProcess) -> None:
    text = (
        "One \\[[digest/wiki/esc-one.md]] and three \\\\\\[[digest/wiki/esc-three.md]] stay text.\n\n"
        "Two \\\\[[plain]] link after a backslash; \\![[plain|bang]] is no embed.\n\n"
        "An escaped tick opens no code: \\`[[plain|ticked]]` and \\*not em\\*.\n"
    )
    body = show(page, service, "digest/wiki/escaped.md", text)
    shown = body.inner_text()
    assert "One [[digest/wiki/esc-one.md]] and three \\[[digest/wiki/esc-three.md]] stay text." in shown
    assert "Two \\plain link" in shown
    assert "; !bang is no embed." in shown
    assert "tick opens no code: `ticked` and *not em*." in shown
    assert page.evaluate(LINKS) == [["plain", PLAIN], ["bang", PLAIN], ["ticked", PLAIN]]
    assert body.locator(".embed-box, code, em").count() == 0
    assert outlinks(service, "digest/wiki/escaped.md") == {"plain"}


def test_fences_open_and_close_as_the_index_reads_them(page: Any, service: ServiceProcess) -> None:
    text = (
        "```js\n"
        "[[digest/wiki/fenced-one.md]]\n"
        "```js\n"
        "[[digest/wiki/fenced-two.md]]\n"
        "````  \n"
        "After the fence [[plain]].\n\n"
        "~~~\n"
        "[[digest/wiki/tilde.md]]\n"
        "```\n"
        "~~~ not a close\n"
        "~~~~\n"
        "Then [[plain|tilde-done]].\n\n"
        "```a`b [[plain|info]] is no fence\n"
        "[[plain|next]]\n"
        "\u00a0``` [[plain|nbsp]]\n"
        "```<!--`--> [[plain|commented-info]]\n"
        "| a | b |\n"
        "|---|---|\n"
        "| [[plain|cell]] | x |\n"
        "```|\n"
        "| [[digest/wiki/fenced-row.md]] |\n"
        "```\n"
    )
    body = show(page, service, "digest/wiki/fences.md", text)
    assert body.locator("pre code").all_inner_texts() == [
        "[[digest/wiki/fenced-one.md]]\n```js\n[[digest/wiki/fenced-two.md]]",
        "[[digest/wiki/tilde.md]]\n```\n~~~ not a close",
        "| [[digest/wiki/fenced-row.md]] |",
    ]
    assert page.evaluate(LINKS) == [
        ["plain", PLAIN],
        ["tilde-done", PLAIN],
        ["info", PLAIN],
        ["next", PLAIN],
        ["nbsp", PLAIN],
        ["commented-info", PLAIN],
        ["cell", PLAIN],
    ]
    assert outlinks(service, "digest/wiki/fences.md") == {"plain"}


def test_a_fence_in_a_blockquote_shows_the_links_the_index_counts(page: Any, service: ServiceProcess) -> None:
    text = (
        "> Quoted:\n"
        "> ```\n"
        "> [[plain|quoted]]\n"
        "> ```\n"
        "> inline ```[[digest/wiki/span.md]]``` stays code\n\n"
        "```\n"
        "> [[digest/wiki/fenced-quote.md]]\n"
        "```\n"
    )
    body = show(page, service, "digest/wiki/quoted.md", text)
    assert page.evaluate(LINKS) == [["quoted", PLAIN]]
    assert body.locator("blockquote pre").count() == 0
    assert body.locator("blockquote code").all_inner_texts() == ["[[digest/wiki/span.md]]"]
    assert body.locator("pre code").all_inner_texts() == ["> [[digest/wiki/fenced-quote.md]]"]
    assert outlinks(service, "digest/wiki/quoted.md") == {"plain"}


def test_a_table_keeps_escaped_bars_inside_links_and_code(page: Any, service: ServiceProcess) -> None:
    text = (
        "| link | code |\n"
        "|---|---|\n"
        "| [[plain\\|piped]] | `a|[[digest/wiki/in-code.md]]` |\n"
        "| [[plain|bare]] | \\| bar |\n"
    )
    body = show(page, service, "digest/wiki/table.md", text)
    assert body.locator("td").all_inner_texts() == ["piped", "a|[[digest/wiki/in-code.md]]", "bare", "| bar"]
    assert page.evaluate(LINKS) == [["piped", PLAIN], ["bare", PLAIN]]
    assert outlinks(service, "digest/wiki/table.md") == {"plain"}


def test_escapes_and_fences_stay_text_and_inert(page: Any, service: ServiceProcess) -> None:
    text = (
        "\\<img src=x onerror=window.pwnd=1> \\[[<script>window.pwnd=1</script>]]\n"
        "> ```\n"
        "> <svg onload=window.pwnd=1> [[plain|<b onclick=window.pwnd=1>x</b>]]\n"
        "```<img src=x onerror=window.pwnd=1>\n"
        "<script>window.pwnd=1</script>\n"
        "```\n"
    )
    body = show(page, service, "digest/wiki/inert.md", text)
    shown = body.inner_text()
    assert "<img src=x onerror=window.pwnd=1> [[<script>window.pwnd=1</script>]]" in shown
    assert "<svg onload=window.pwnd=1>" in shown
    assert page.evaluate(LINKS) == [["<b onclick=window.pwnd=1>x</b>", PLAIN]]
    assert body.locator("pre code").all_inner_texts() == ["<script>window.pwnd=1</script>"]
    assert page.evaluate("window.pwnd") is None
    assert page.evaluate(INJECTED) == []


@pytest.mark.parametrize(
    "text",
    [
        "\\" * 200_001 + "[[plain]]\n",
        "\\" * 200_000 + "[[plain]]\n",
        "\\[[" * 60_000 + "\n",
        "```js\n" * 20_000 + "[[plain]]\n",
        "> ```\n" * 20_000 + "> [[plain]]\n",
        "| a | b |\n|---|---|\n" + "| `" * 30_000 + "[[plain]]\n",
        "| a | b |\n|---|---|\n| " + "[[x|" * 30_000 + "\n",
    ],
    ids=[
        "odd-backslashes",
        "even-backslashes",
        "escaped-opens",
        "info-fences",
        "quoted-fences",
        "cell-ticks",
        "cell-opens",
    ],
)
def test_hostile_escape_and_fence_shapes_render(page: Any, service: ServiceProcess, text: str) -> None:
    show(page, service, "digest/wiki/shape.md", text)
    while more := page.query_selector("button[data-action=more]"):  # a long note comes in pages
        more.click()
        more.wait_for_element_state("hidden")
    assert page.locator("main .failure").count() == 0
    expected = outlinks(service, "digest/wiki/shape.md")
    assert [target for _, target in page.evaluate(LINKS)] == ([PLAIN] if expected else [])
