"""import_chatgpt: the branch the user saw, redaction, new turns only, tool calls, queued distillation."""

from __future__ import annotations

import json
from pathlib import Path

from tests.pipelines.conftest import scripted
from tests.pipelines.imports_support import DATA, front, run_ok, transcript
from tests.pipelines.port_jobs import (  # noqa: F401  (the fixture)
    MakePortApp,
    PortApp,
    app_on_port_fixture,
    port_app_fixture,
    real_app_fixture,
)
from tests.pipelines.test_auto_memory import card_script

from reme import ReMe


async def test_chatgpt_export_keeps_only_the_branch_the_user_saw(real_app: ReMe, workspace_dir: Path) -> None:
    app = real_app  # searches, writes or exports: jobs of the application
    meta = await run_ok(app, "import_chatgpt", source=str(DATA / "conversations.json"))
    kyoto_id = "chatgpt-6650a1b2-0c3d-4e5f-8a9b-0123456789ab"
    kyoto = transcript(workspace_dir / "session" / "dialog" / f"{kyoto_id}.jsonl")
    assert [m["id"] for m in kyoto] == ["u1", "a1", "u2b", "a2b", "a3"]  # no system, hidden, old branch, tool
    assert kyoto[2]["content"].startswith("[image]\nMake it 5 days, with a day in Nara.")
    assert kyoto[3]["content"].startswith("[tool call python: ")
    assert kyoto[0]["created_at"] == "2024-06-01T00:00:00.500000+00:00"
    assert "vegetarian" not in json.dumps(kyoto) and "regenerated away" not in json.dumps(kyoto)
    # a conversation without current_node follows the last child from the root
    sourdough = transcript(
        workspace_dir / "session" / "dialog" / "chatgpt-7770c0de-0000-4000-8000-000000000002.jsonl"
    )
    assert [m["role"] for m in sourdough] == ["user", "assistant"]
    note = workspace_dir / "imports" / "chatgpt" / "6650a1b2-0c3d-4e5f-8a9b-0123456789ab.md"
    keys = front(note)
    assert keys["name"] == "Trip to Kyoto"
    assert keys["source"] == "chatgpt"
    assert keys["source_conversation"] == f"[[session/dialog/{kyoto_id}.jsonl]]"
    assert keys["import_id"] == "6650a1b2-0c3d-4e5f-8a9b-0123456789ab"
    assert {s["item"].split(" ", 1)[0] for s in meta["skipped"]} == {"conversations[2]", "conversations[3]"}
    assert len(meta["created"]) == 4  # two transcripts, two notes

    hits = (await app.run("search", query="Nara five day plan", limit=3)).metadata["results"]
    assert any(hit["path"] == f"session/dialog/{kyoto_id}.jsonl" for hit in hits)

    again = await run_ok(app, "import_chatgpt", source=str(DATA))  # the export folder works too
    assert again["created"] == again["updated"] == []
    assert len(again["unchanged"]) == 4


async def test_a_chatgpt_export_is_redacted_like_a_captured_session(
    app: PortApp, workspace_dir: Path, tmp_path: Path
) -> None:
    data = json.loads((DATA / "conversations.json").read_text())
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
    data[1]["mapping"]["q"]["message"]["content"]["parts"] = [f"my key is {secret}, keep it safe"]
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps(data[1:2]), encoding="utf-8")
    await run_ok(app, "import_chatgpt", source=str(export))
    written = "".join(
        p.read_text(encoding="utf-8")
        for p in workspace_dir.rglob("*")
        if p.is_file() and "metadata" not in p.parts
    )
    assert secret not in written and "keep it safe" in written


async def test_a_longer_chatgpt_conversation_adds_only_its_new_turns(
    app: PortApp, workspace_dir: Path, tmp_path: Path
) -> None:
    data = json.loads((DATA / "conversations.json").read_text())
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps(data[1:2]), encoding="utf-8")
    await run_ok(app, "import_chatgpt", source=str(export))
    path = workspace_dir / "session" / "dialog" / "chatgpt-7770c0de-0000-4000-8000-000000000002.jsonl"
    first = path.read_text(encoding="utf-8")
    mapping = data[1]["mapping"]
    mapping["r"]["children"] = ["q2"]
    mapping["q2"] = {
        "id": "q2",
        "parent": "r",
        "children": [],
        "message": {
            "id": "q2",
            "author": {"role": "user"},
            "create_time": 1718000900.0,
            "content": {"content_type": "text", "parts": ["And in the fridge?"]},
        },
    }
    export.write_text(json.dumps(data[1:2]), encoding="utf-8")
    meta = await run_ok(app, "import_chatgpt", source=str(export), queue_distillation=True)
    assert meta["updated"] == [
        "imports/chatgpt/7770c0de-0000-4000-8000-000000000002.md",
        "session/dialog/chatgpt-7770c0de-0000-4000-8000-000000000002.jsonl",
    ]
    second = path.read_text(encoding="utf-8")
    assert second.startswith(first) and [m["id"] for m in transcript(path)] == ["q", "r", "q2"]
    # the changed conversation waits for auto_memory_pending as a pending card
    [card] = meta["pending_cards"]
    card_front = front(workspace_dir / card)
    assert card_front["pending"] is True
    assert card_front["session_id"] == "chatgpt-7770c0de-0000-4000-8000-000000000002"
    assert card.startswith("daily/2024-06-10/")


def test_assistant_calls_to_tools_become_tool_call_notes() -> None:
    from reme.pipelines.imports.chatgpt import message_of

    node = {
        "id": "d1",
        "message": {
            "id": "d1",
            "author": {"role": "assistant"},
            "recipient": "dalle.text2im",
            "content": {"content_type": "text", "parts": ['{"prompt": "a fox in snow"}']},
        },
    }
    message = message_of(node)
    assert message is not None
    assert message["content"] == [
        {"type": "tool_use", "name": "dalle.text2im", "input": '{"prompt": "a fox in snow"}'}
    ]
    assert (
        message_of({"id": "x", "message": {"id": "x", "author": {"role": "tool"}, "content": "out"}}) is None
    )


async def test_queued_conversations_are_distilled_later_by_auto_memory_pending(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app(**scripted(card_script("- learned from ChatGPT\n", "From $session_id")))
    meta = await run_ok(
        app, "import_chatgpt", source=str(DATA / "conversations.json"), queue_distillation=True
    )
    assert sorted(meta["pending_cards"]) == [
        "daily/2024-06-01/chatgpt-6650a1b2-0c3d-4e5f-8a9b-0123456789ab.md",
        "daily/2024-06-10/chatgpt-7770c0de-0000-4000-8000-000000000002.md",
    ]
    distilled = await run_ok(app, "auto_memory_pending")
    assert len(distilled["distilled"]) == 2
    card = app.workspace_dir / "daily/2024-06-01/from-chatgpt-6650a1b2-0c3d-4e5f-8a9b-0123456789ab.md"
    keys = front(card)
    assert "pending" not in keys
    assert (
        keys["source_conversation"] == "[[session/dialog/chatgpt-6650a1b2-0c3d-4e5f-8a9b-0123456789ab.jsonl]]"
    )
    assert "learned from ChatGPT" in card.read_text()
    # a re-import of the same export queues nothing and leaves the distilled cards alone
    again = await run_ok(
        app, "import_chatgpt", source=str(DATA / "conversations.json"), queue_distillation=True
    )
    assert again["pending_cards"] == [] and "pending" not in front(card)


def test_uploaded_files_are_named_and_the_answering_model_kept() -> None:
    from reme.pipelines.imports.chatgpt import message_of

    upload = {
        "id": "u9",
        "message": {
            "id": "u9",
            "author": {"role": "user"},
            "content": {"content_type": "text", "parts": ["Summarise this."]},
            "metadata": {"attachments": [{"id": "file-1", "name": "report.pdf", "size": 1200}]},
        },
    }
    assert message_of(upload)["content"] == ["Summarise this.", "[attachment: report.pdf]"]  # type: ignore[index]
    answer = {
        "id": "a9",
        "message": {
            "id": "a9",
            "author": {"role": "assistant"},
            "content": {"content_type": "text", "parts": ["It says..."]},
            "metadata": {"model_slug": "gpt-4o"},
        },
    }
    assert message_of(answer)["metadata"] == {"model": "gpt-4o"}  # type: ignore[index]


async def test_a_reimport_after_the_user_regenerated_or_edited_keeps_only_the_branch_now_seen(
    app: PortApp, workspace_dir: Path, tmp_path: Path
) -> None:
    data = json.loads((DATA / "conversations.json").read_text())
    export = tmp_path / "conversations.json"
    data[0]["current_node"] = "a2a"  # first exported while the 3-day answer was the one shown
    export.write_text(json.dumps(data[:1]), encoding="utf-8")
    await run_ok(app, "import_chatgpt", source=str(export))
    path = workspace_dir / "session" / "dialog" / "chatgpt-6650a1b2-0c3d-4e5f-8a9b-0123456789ab.jsonl"
    assert [m["id"] for m in transcript(path)] == ["u1", "a1", "u2a", "a2a"]
    data[0]["current_node"] = "a3"  # then the user edited "3 days" into "5 days, with Nara"
    export.write_text(json.dumps(data[:1]), encoding="utf-8")
    meta = await run_ok(app, "import_chatgpt", source=str(export))
    assert "session/dialog/chatgpt-6650a1b2-0c3d-4e5f-8a9b-0123456789ab.jsonl" in meta["updated"]
    assert [m["id"] for m in transcript(path)] == ["u1", "a1", "u2b", "a2b", "a3"]
    assert "Make it 3 days" not in path.read_text(encoding="utf-8")
    again = await run_ok(app, "import_chatgpt", source=str(export))
    assert again["updated"] == [] and again["created"] == []
