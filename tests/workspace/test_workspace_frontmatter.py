"""Front matter (docs/spec.md §2.1): forgiving reads, minimal-change merges, body byte-identical after any update."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from reme.workspace import frontmatter
from reme.workspace.frontmatter import FrontMatterError

HAND_WRITTEN = """---
# written by hand
name: Solar   # keep this comment
tags:
    - energy
    - "solar power"
when: 2026-06-01
nested:
  depth: 1
---
Body stays [[digest/wiki/solar.md]]
"""


def test_read_gives_json_friendly_metadata_and_the_exact_body():
    document = frontmatter.parse(HAND_WRITTEN)
    assert document.metadata == {
        "name": "Solar",
        "tags": ["energy", "solar power"],
        "when": "2026-06-01",
        "nested": {"depth": 1},
    }
    assert document.body == "Body stays [[digest/wiki/solar.md]]\n"
    assert document.head + document.body == HAND_WRITTEN
    assert document.error is None


@pytest.mark.parametrize(
    "text",
    ["---\nkey: [unclosed\n---\nbody\n", "---\n- a list\n---\nbody\n", "---\njust a string\n---\nbody\n"],
)
def test_broken_front_matter_stays_readable(text):
    document = frontmatter.parse(text)
    assert document.metadata == {} and document.body == text and document.error


def test_broken_front_matter_is_refused_for_writes():
    with pytest.raises(FrontMatterError, match="not valid YAML"):
        frontmatter.update("---\nkey: [unclosed\n---\nbody\n", {"a": 1})


def test_text_without_closing_fence_has_no_front_matter():
    text = "---\nname: x\nno closing fence\n"
    assert frontmatter.parse(text).body == text


def test_update_changes_only_the_changed_key_lines():
    updated = frontmatter.update(HAND_WRITTEN, {"name": "Sun", "status": "draft"})
    assert updated == HAND_WRITTEN.replace("name: Solar   #", "name: Sun   #").replace(
        "  depth: 1\n---", "  depth: 1\nstatus: draft\n---"
    )


def test_update_with_equal_values_changes_nothing():
    assert frontmatter.update(HAND_WRITTEN, {"name": "Solar", "when": "2026-06-01"}) == HAND_WRITTEN


def test_updated_list_keeps_the_users_indentation():
    updated = frontmatter.update(HAND_WRITTEN, {"tags": ["energy", "wind"]})
    assert "tags:\n    - energy\n    - wind\n" in updated


def test_new_front_matter_is_prepended_with_reserved_keys_first():
    assert (
        frontmatter.update("body\n", {"tags": ["a"], "description": "d", "name": "n"})
        == "---\nname: n\ndescription: d\ntags:\n- a\n---\nbody\n"
    )


def test_links_dates_and_yaml_words_are_quoted():
    text = frontmatter.update(
        "",
        {
            "source_conversation": "[[session/dialog/s1.jsonl]]",
            "name": "2026-06-01",
            "flag": "yes",
            "n": "007",
        },
    )
    assert text == (
        "---\nname: '2026-06-01'\nsource_conversation: '[[session/dialog/s1.jsonl]]'\nflag: 'yes'\nn: '007'\n---\n"
    )
    assert frontmatter.parse(text).metadata == {
        "name": "2026-06-01",
        "source_conversation": "[[session/dialog/s1.jsonl]]",
        "flag": "yes",
        "n": "007",
    }


def test_reserved_keys_must_be_strings():
    with pytest.raises(FrontMatterError, match="reserved"):
        frontmatter.update("body", {"name": 3})


def test_delete_reports_deleted_and_missing_and_keeps_comments():
    updated, deleted, missing = frontmatter.delete(HAND_WRITTEN, ["tags", "absent"])
    assert (deleted, missing) == (["tags"], ["absent"])
    assert updated == HAND_WRITTEN.replace('tags:\n    - energy\n    - "solar power"\n', "")


def test_flow_style_front_matter_falls_back_to_a_verified_round_trip():
    updated = frontmatter.update("---\n{a: 1, b: 2}\n---\nbody\n", {"b": 3, "c": "x"})
    assert frontmatter.parse(updated).metadata == {"a": 1, "b": 3, "c": "x"}
    assert updated.endswith("---\nbody\n")


# property-based ------------------------------------------------------------------------------------

keys = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
plain_text = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="\ufeff"), max_size=20
)
scalars = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | plain_text | st.just("[[digest/a.md]]")
values = scalars | st.lists(scalars, max_size=3) | st.dictionaries(keys, scalars, max_size=3)
bodies = st.text(max_size=200)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.dictionaries(keys, values, max_size=5), st.dictionaries(keys, values, max_size=5), bodies)
def test_body_is_byte_identical_after_any_update(initial, changes, body):
    text = frontmatter.update(body, initial) if initial else body
    updated = frontmatter.update(text, changes)
    document = frontmatter.parse(updated)
    if initial or changes:
        assert document.body == body
        assert document.metadata == {**initial, **changes}
        assert list(document.metadata) == list(dict.fromkeys([*_ordered(initial), *changes]))
    else:
        assert updated == body


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.dictionaries(keys, values, min_size=1, max_size=5), st.lists(keys, max_size=4), bodies)
def test_body_is_byte_identical_after_any_delete(initial, remove, body):
    text = frontmatter.update(body, initial)
    updated, deleted, missing = frontmatter.delete(text, remove)
    document = frontmatter.parse(updated)
    assert document.body == body
    assert document.metadata == {key: value for key, value in initial.items() if key not in remove}
    assert sorted(deleted + missing) == sorted(set(remove))


def _ordered(metadata: dict) -> list[str]:
    reserved = [key for key in ("name", "description") if key in metadata]
    return reserved + [key for key in metadata if key not in reserved]


def test_written_yaml_is_read_back_by_pyyaml_unchanged():
    text = frontmatter.update("", {"multi": "line one\nline two", "empty": "", "null": None})
    loaded = yaml.safe_load(text.split("---\n")[1])
    assert loaded == {"multi": "line one\nline two", "empty": "", "null": None}


def test_windows_line_endings_are_kept():
    text = "---\r\nname: A\r\ntags:\r\n  - x\r\n---\r\nbody\r\n"
    updated = frontmatter.update(text, {"tags": ["y"], "new": 1})
    assert updated == "---\r\nname: A\r\ntags:\r\n  - y\r\nnew: 1\r\n---\r\nbody\r\n"
    assert frontmatter.delete(updated, ["name"])[0] == "---\r\ntags:\r\n  - y\r\nnew: 1\r\n---\r\nbody\r\n"


@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    st.dictionaries(keys, values, min_size=1, max_size=5),
    st.dictionaries(keys, values, max_size=4),
    st.booleans(),
    st.sampled_from([2, 4]),
    bodies,
)
def test_updates_of_yaml_written_by_other_tools_keep_body_and_untouched_keys(
    initial, changes, flow, indent, body
):
    written = yaml.safe_dump(
        initial, default_flow_style=flow, indent=indent, allow_unicode=True, sort_keys=False
    )
    text = f"---\n{written}---\n{body}"
    updated = frontmatter.update(text, changes)
    document = frontmatter.parse(updated)
    assert document.body == body
    assert document.metadata == {**initial, **changes}
    if not flow:  # block style: the lines of untouched keys are kept verbatim
        for key in initial:
            if key not in changes or changes[key] == initial[key]:
                own = yaml.safe_dump({key: initial[key]}, indent=indent, allow_unicode=True, sort_keys=False)
                assert own in updated
