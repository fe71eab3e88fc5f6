"""Daily jobs (docs/spec.md §8): cards, the day index page with its marker block, idempotence, dates."""

from __future__ import annotations

from datetime import UTC, datetime


def disk(app, path: str) -> str:
    return (app.workspace_dir / path).read_text(encoding="utf-8")


async def test_daily_create_writes_a_session_card_byte_for_byte(app):
    response = await app.run("daily_create", date="2026-06-01", session_id="s1", description="A chat")
    assert response.success and response.metadata == {"path": "daily/2026-06-01/s1.md", "created": True}
    assert disk(app, "daily/2026-06-01/s1.md") == (
        "---\nname: s1\ndescription: A chat\nsession_id: s1\n"
        "source_conversation: '[[session/dialog/s1.jsonl]]'\n---\n"
    )


async def test_daily_create_is_idempotent(app):
    first = await app.run("daily_create", date="2026-06-01", name="standup.md", session_id="abc-1")
    assert first.metadata["path"] == "daily/2026-06-01/standup.md"
    before = disk(app, "daily/2026-06-01/standup.md")
    again = await app.run("daily_create", date="2026-06-01", name="standup", description="other")
    assert again.success and again.metadata == {"path": "daily/2026-06-01/standup.md", "created": False}
    assert disk(app, "daily/2026-06-01/standup.md") == before
    assert "name: standup\nsession_id: abc-1\nsource_conversation: '[[session/dialog/abc-1.jsonl]]'" in before


async def test_daily_create_day_page_defaults_to_today_in_the_app_timezone(app):
    today = datetime.now(UTC).date().isoformat()
    response = await app.run("daily_create")
    assert response.metadata == {"path": f"daily/{today}.md", "created": True}
    assert disk(app, f"daily/{today}.md") == (
        f"---\nname: '{today}'\ndescription: 0 note(s).\n---\n<!-- notes:auto -->\n<!-- /notes:auto -->\n"
    )
    assert (await app.run("daily_create")).metadata["created"] is False


async def test_daily_reindex_writes_the_sorted_block_and_quotes_the_date(app):
    await app.run("daily_create", date="2026-06-01", name="zeta", description="Last one")
    await app.run("daily_create", date="2026-06-01", session_id="alpha", description="First\nline two")
    (app.workspace_dir / "daily/2026-06-01/plain.md").write_text("no front matter\n")
    response = await app.run("daily_reindex", date="2026-06-01")
    assert response.success and response.metadata["changed"] is True and response.metadata["count"] == 3
    assert disk(app, "daily/2026-06-01.md") == (
        "---\nname: '2026-06-01'\ndescription: 3 note(s).\n---\n"
        "<!-- notes:auto -->\n"
        "- [[daily/2026-06-01/alpha.md]] name: alpha description: First line two\n"
        "- [[daily/2026-06-01/plain.md]] name: plain description:\n"
        "- [[daily/2026-06-01/zeta.md]] name: zeta description: Last one\n"
        "<!-- /notes:auto -->\n"
    )


async def test_daily_reindex_preserves_user_text_and_rewrites_only_on_change(app):
    page = app.workspace_dir / "daily/2026-06-01.md"
    page.write_text(
        "---\nname: '2026-06-01'\nmood: good  # mine\n---\n# My day\nbefore\n"
        "<!-- notes:auto -->\nstale line\n<!-- /notes:auto -->\nafter\n"
    )
    await app.run("daily_create", date="2026-06-01", name="a", description="A")
    first = await app.run("daily_reindex", date="2026-06-01")
    assert first.metadata["changed"] is True
    expected = (
        "---\nname: '2026-06-01'\nmood: good  # mine\ndescription: 1 note(s).\n---\n# My day\nbefore\n"
        "<!-- notes:auto -->\n- [[daily/2026-06-01/a.md]] name: a description: A\n<!-- /notes:auto -->\nafter\n"
    )
    assert page.read_text() == expected
    stamp = page.stat().st_mtime_ns
    second = await app.run("daily_reindex", date="2026-06-01")
    assert (
        second.metadata["changed"] is False
        and page.stat().st_mtime_ns == stamp
        and page.read_text() == expected
    )


async def test_daily_reindex_appends_the_block_to_a_page_without_markers(app):
    page = app.workspace_dir / "daily/2026-06-01.md"
    page.write_text("Notes written by hand.\n")
    await app.run("daily_reindex", date="2026-06-01")
    assert page.read_text() == (
        "---\nname: '2026-06-01'\ndescription: 0 note(s).\n---\nNotes written by hand.\n\n"
        "<!-- notes:auto -->\n<!-- /notes:auto -->\n"
    )


async def test_daily_list_returns_cards_with_names_and_descriptions(app):
    await app.run("daily_create", date="2026-06-02", name="b", description="Bee")
    await app.run("daily_create", date="2026-06-02", name="a")
    (app.workspace_dir / "daily/2026-06-02/notes.txt").write_text("not a card")
    response = await app.run("daily_list", date="2026-06-02")
    assert response.metadata == {
        "date": "2026-06-02",
        "notes": [
            {"path": "daily/2026-06-02/a.md", "name": "a", "description": ""},
            {"path": "daily/2026-06-02/b.md", "name": "b", "description": "Bee"},
        ],
    }
    assert (await app.run("daily_list", date="2026-06-03")).metadata["notes"] == []


async def test_invalid_dates_are_refused_and_nothing_is_written(app):
    for day in ("2026-02-30", "2026-6-1", "June 1", "2026-06-01T00:00"):
        for job in ("daily_create", "daily_list", "daily_reindex"):
            response = await app.run(job, date=day)
            assert not response.success and "date" in response.answer
    assert list((app.workspace_dir / "daily").iterdir()) == []


async def test_a_past_days_page_does_not_say_today_but_a_reme04_page_keeps_its_words(app) -> None:
    root = app.workspace_dir
    assert (await app.run("daily_create", date="2020-01-02", name="old")).success
    await app.run("daily_reindex", date="2020-01-02")
    assert "description: 1 note(s).\n" in (root / "daily/2020-01-02.md").read_text()
    page = root / "daily/2020-01-03.md"
    (root / "daily/2020-01-03").mkdir()
    (root / "daily/2020-01-03/a.md").write_text("---\nname: a\ndescription: d\n---\nx\n")
    page.write_text("---\nname: '2020-01-03'\ndescription: 1 note(s) today.\n---\n")  # as ReMe 0.4 wrote it
    await app.run("daily_reindex", date="2020-01-03")
    assert "description: 1 note(s) today.\n" in page.read_text()  # same count: read as it is
