"""The day index page lists cards only (docs/spec.md §8): the day's `interests.yaml` never enters its block, and a
page that an older version linked it from loses that line at the next reindex."""

from __future__ import annotations


async def test_the_day_page_holds_one_line_per_card_and_nothing_else(app):
    await app.run("daily_create", date="2026-06-20", name="standup")
    (app.workspace_dir / "daily/2026-06-20/interests.yaml").write_text(
        "version: 2\ntopics: []\n", encoding="utf-8"
    )
    response = await app.run("daily_reindex", date="2026-06-20")
    assert response.success and response.metadata["count"] == 1  # interests.yaml is not a card
    page = app.workspace_dir / "daily/2026-06-20.md"
    block = (
        "<!-- notes:auto -->\n"
        "- [[daily/2026-06-20/standup.md]] name: standup description:\n"
        "<!-- /notes:auto -->\n"
    )
    assert page.read_text(encoding="utf-8").endswith(block)
    # a page written by an older version (with the proactive link) is cleaned once, then left alone
    page.write_text(
        page.read_text(encoding="utf-8").replace(
            "<!-- /notes:auto -->", "- proactive:: [[daily/2026-06-20/interests.yaml]]\n<!-- /notes:auto -->"
        ),
        encoding="utf-8",
    )
    assert (await app.run("daily_reindex", date="2026-06-20")).metadata["changed"] is True
    assert page.read_text(encoding="utf-8").endswith(block)
    assert (await app.run("daily_reindex", date="2026-06-20")).metadata["changed"] is False
