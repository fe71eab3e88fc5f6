"""The day index page links the day's proactive topics (`interests.yaml`) while the file exists."""

from __future__ import annotations


async def test_the_day_page_links_interests_yaml_only_while_it_exists(app):
    await app.run("daily_create", date="2026-06-20", name="standup")
    (app.workspace_dir / "daily/2026-06-20/interests.yaml").write_text(
        "version: 2\ntopics: []\n", encoding="utf-8"
    )
    response = await app.run("daily_reindex", date="2026-06-20")
    assert response.success and response.metadata["count"] == 1  # interests.yaml is not a card
    page = (app.workspace_dir / "daily/2026-06-20.md").read_text(encoding="utf-8")
    assert page.endswith(
        "<!-- notes:auto -->\n"
        "- [[daily/2026-06-20/standup.md]] name: standup description:\n"
        "- proactive:: [[daily/2026-06-20/interests.yaml]]\n"
        "<!-- /notes:auto -->\n"
    )
    assert "description: 1 note(s)." in page
    (app.workspace_dir / "daily/2026-06-20/interests.yaml").unlink()
    assert (await app.run("daily_reindex", date="2026-06-20")).metadata["changed"] is True
    assert "interests.yaml" not in (app.workspace_dir / "daily/2026-06-20.md").read_text(encoding="utf-8")
