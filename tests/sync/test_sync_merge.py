"""The reme-aware three-way merges (docs/spec.md §18): transcripts, notes, digest edges, topic YAML."""

from __future__ import annotations

import json

import yaml

from reme.workspace.edges import edges
from reme.workspace.gitmerge import merge


def _line(record_id: str, at: str, text: str) -> str:
    return json.dumps({"id": record_id, "role": "user", "content": text, "created_at": at})


def _jsonl(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def test_transcripts_are_a_union_by_id_in_time_order() -> None:
    base = _jsonl(_line("m1", "2026-01-01T10:00:00", "hello"))
    ours = base + _jsonl(
        _line("m2", "2026-01-01T10:01:00", "laptop"), _line("m4", "2026-01-01T10:03:00", "x")
    )
    theirs = base + _jsonl(
        _line("m3", "2026-01-01T10:02:00", "desktop"), _line("m4", "2026-01-01T10:03:00", "x")
    )
    merged = merge("session/dialog/s1.jsonl", base, ours, theirs)
    assert not merged.conflict
    ids = [json.loads(line)["id"] for line in merged.content.decode().splitlines()]
    assert ids == ["m1", "m2", "m3", "m4"]  # no duplicate, each side's order kept, interleaved by time
    both_new = merge(
        "session/dialog/s1.jsonl", None, _jsonl(_line("a", "1", "a")), _jsonl(_line("b", "2", "b"))
    )
    assert [json.loads(x)["id"] for x in both_new.content.decode().splitlines()] == ["a", "b"]


NOTE = (
    "---\nname: solar\ndescription: Solar.\ntags: [energy]\n---\n# Solar\n\nOne.\n\nTwo.\n\nThree.\n\nFour.\n"
)


def test_note_body_merges_three_way_and_front_matter_key_by_key() -> None:
    ours = NOTE.replace("One.", "One, edited here.").replace(
        "description: Solar.", "description: Solar power."
    )
    theirs = NOTE.replace("Four.", "Four, edited there.").replace(
        "tags: [energy]", "tags: [energy, pv]\nowner: ana"
    )
    merged = merge("daily/2026-01-01/solar.md", NOTE.encode(), ours.encode(), theirs.encode())
    assert not merged.conflict
    text = merged.content.decode()
    assert "One, edited here." in text and "Four, edited there." in text
    front = yaml.safe_load(text.split("---\n")[1])
    assert front == {"name": "solar", "description": "Solar power.", "tags": ["energy", "pv"], "owner": "ana"}


def test_same_lines_changed_differently_is_a_conflict_keeping_the_local_note() -> None:
    ours = NOTE.replace("Two.", "Two, says the laptop.")
    theirs = NOTE.replace("Two.", "Two, says the desktop.")
    merged = merge("daily/2026-01-01/solar.md", NOTE.encode(), ours.encode(), theirs.encode())
    assert merged.conflict and merged.content.decode() == ours
    clash = NOTE.replace("description: Solar.", "description: A.")
    other = NOTE.replace("description: Solar.", "description: B.")
    assert merge("daily/x.md", NOTE.encode(), clash.encode(), other.encode()).conflict


NODE = "---\nname: solar\n---\n# Solar\n\nBody.\n\n## Sources\n- derived_from:: [[daily/2026-01-01/a.md]]\n"


def test_a_digest_node_keeps_the_union_of_both_sides_edges() -> None:
    ours = NODE + "- derived_from:: [[daily/2026-01-02/b.md]]\n"
    theirs = NODE + "- derived_from:: [[daily/2026-01-03/c.md]]\nsee:: [[digest/wiki/wind.md]]\n"
    merged = merge("digest/wiki/solar.md", NODE.encode(), ours.encode(), theirs.encode())
    found = set(edges(merged.content.decode()))
    assert found >= set(edges(ours)) | set(edges(theirs))
    # a true conflict keeps the local node in place, with the remote's edges added back (E-1)
    clash_ours = ours.replace("Body.", "Body from here.")
    clash_theirs = theirs.replace("Body.", "Body from there.")
    conflicted = merge("digest/wiki/solar.md", NODE.encode(), clash_ours.encode(), clash_theirs.encode())
    assert conflicted.conflict and "Body from here." in conflicted.content.decode()
    assert set(edges(conflicted.content.decode())) >= set(edges(clash_ours)) | set(edges(clash_theirs))


def test_topic_yaml_merges_by_topic_id() -> None:
    base = {"version": 2, "push": True, "topics": [{"id": "aaa", "title": "A", "confidence": 0.5}]}
    ours = {**base, "topics": [{"id": "aaa", "title": "A", "confidence": 0.9}, {"id": "bbb", "title": "B"}]}
    theirs = {**base, "topics": [{"id": "aaa", "title": "A", "confidence": 0.5}, {"id": "ccc", "title": "C"}]}
    merged = merge(
        "daily/2026-01-01/interests.yaml", *(yaml.safe_dump(x).encode() for x in (base, ours, theirs))
    )
    data = yaml.safe_load(merged.content)
    assert [t["id"] for t in data["topics"]] == ["aaa", "bbb", "ccc"]
    assert data["topics"][0]["confidence"] == 0.9 and data["version"] == 2


def test_binary_and_unparsable_content_never_loses_a_side() -> None:
    merged = merge("resource/x.bin", b"\x00\xff1", b"\x00\xff2", b"\x00\xff3")
    assert merged.conflict and merged.content == b"\x00\xff2"
    broken = merge("session/dialog/s.jsonl", b"", b"not json\n", b'{"id": 1}\n')  # merged as text
    assert not broken.conflict and broken.content == b'not json\n{"id": 1}\n'
    clash = merge("resource/notes.txt", b"x\n", b"y\n", b"z\n")
    assert clash.conflict and clash.content == b"y\n"


def test_lines_added_at_the_same_place_on_both_sides_are_kept_both() -> None:
    ours = NODE + "- derived_from:: [[daily/2026-01-02/b.md]]\n"
    theirs = NODE + "- derived_from:: [[daily/2026-01-03/c.md]]\n"
    merged = merge("journal/dream/2026-01-03.md", NODE.encode(), ours.encode(), theirs.encode())
    assert not merged.conflict
    assert merged.content.decode() == ours + "- derived_from:: [[daily/2026-01-03/c.md]]\n"
