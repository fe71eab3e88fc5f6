"""Markdown chunker: sections, heading paths, line ranges and every kind of split."""

from __future__ import annotations

from reme.index.chunking import Chunk, chunk_text


def lines_of(text: str, chunk: Chunk) -> str:
    return "\n".join(text.split("\n")[chunk.start_line - 1 : chunk.end_line])


DAY_NOTE = """# 2023-05-08

## Session 1 (13:56) - Caroline & Melanie

- **Caroline**: Hey Mel! Good to see you!
- **Melanie**: I'm swamped with the kids & work.
- **Caroline**: I went to a LGBTQ support group yesterday.

## Session 2 (18:01) - Caroline & Melanie

- **Melanie**: I painted a lake sunrise last year.
"""


def test_day_note_chunks_carry_date_and_speakers_and_exact_lines() -> None:
    chunks = chunk_text("daily/2023-05-08.md", DAY_NOTE)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 7), (9, 11)]
    assert chunks[0].heading_path == ["2023-05-08", "Session 1 (13:56) - Caroline & Melanie"]
    assert chunks[1].heading_path == ["2023-05-08", "Session 2 (18:01) - Caroline & Melanie"]
    for chunk in chunks:
        assert chunk.text == lines_of(DAY_NOTE, chunk)
        assert chunk.search_text.startswith(" > ".join(chunk.heading_path))
        assert chunk.text in chunk.search_text


def test_chunks_never_cross_a_heading_and_cover_every_line() -> None:
    text = "# A\n\nalpha\n\n## B\n\nbeta\n\n### C\n\ngamma\n\n## D\n\ndelta\n"
    chunks = chunk_text("notes/x.md", text, chunk_chars=10_000)
    assert [c.heading_path for c in chunks] == [["A"], ["A", "B"], ["A", "B", "C"], ["A", "D"]]
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    content = {n for n, line in enumerate(text.split("\n"), 1) if line.strip()}
    assert content <= covered


def test_front_matter_is_counted_in_lines_and_searchable_but_not_chunk_text() -> None:
    text = "---\nname: Tea\ndescription: green tea notes\n---\n# Tea\n\nSencha is grassy.\n"
    (chunk,) = chunk_text("digest/food/tea.md", text)
    assert (chunk.start_line, chunk.end_line) == (5, 7)
    assert chunk.text == "# Tea\n\nSencha is grassy."
    assert "green tea notes" in chunk.search_text


def test_front_matter_is_found_where_the_reader_finds_it() -> None:
    """One notion of the front matter (workspace.fmsplit): a BOM before it (Windows editors) or an
    indented `---` in the body changes nothing about where it ends."""
    bom = "\ufeff---\nname: Tea\n---\n# Tea\n\nSencha is grassy.\n"
    (chunk,) = chunk_text("digest/food/tea.md", bom)
    assert (chunk.start_line, chunk.end_line, chunk.heading_path) == (4, 6, ["Tea"])
    assert "name: Tea" not in chunk.text and "name: Tea" in chunk.search_text
    indented = "  ---\nname: x\n  ---\nSencha\n"  # no front matter to the reader: all of it is body
    chunks = chunk_text("digest/food/x.md", indented)
    assert chunks[0].start_line == 1 and "name: x" in "".join(c.text for c in chunks)


def test_broken_front_matter_does_not_crash() -> None:
    text = "---\nname: [unclosed\n  : : bad: yaml: {\n---\nBody line.\n"
    chunks = chunk_text("digest/x.md", text)
    assert [(c.start_line, c.end_line, c.text) for c in chunks] == [(5, 5, "Body line.")]
    unterminated = "---\nname: x\nno closing fence\n"
    assert chunk_text("digest/y.md", unterminated)  # treated as body, still chunked


def test_table_split_repeats_header_and_separator() -> None:
    rows = [f"| item {i:03d} | value {i:03d} |" for i in range(40)]
    text = "# Data\n\n| name | value |\n|------|-------|\n" + "\n".join(rows) + "\n"
    chunks = chunk_text("notes/table.md", text, chunk_chars=300)
    assert len(chunks) > 2
    for chunk in chunks:
        body = chunk.text.split("\n")
        header_at = body.index("| name | value |")
        assert body[header_at + 1] == "|------|-------|"
        data = body[header_at + 2 :]
        assert data == text.split("\n")[chunk.end_line - len(data) : chunk.end_line]
        assert len(chunk.text) <= 300 + len("# Data\n\n")
    data_lines = [n for c in chunks for n in range(c.end_line - c.text.count("\n| item") + 1, c.end_line + 1)]
    assert data_lines == list(range(5, 45))
    assert chunks[0].start_line == 1  # the heading rides along with the first part


def test_fenced_code_split_repeats_fences() -> None:
    code = [f"print('line {i}')" for i in range(60)]
    text = "Intro.\n\n```python\n" + "\n".join(code) + "\n```\n"
    chunks = chunk_text("notes/code.md", text, chunk_chars=200)
    parts = [c for c in chunks if "print(" in c.text]
    assert len(parts) > 3
    for chunk in parts:
        body = chunk.text.split("\n")
        assert body[0] == "```python" and body[-1] == "```"
        assert body[1:-1] == text.split("\n")[chunk.start_line - 1 : chunk.end_line]
    assert parts[0].start_line == 4 and parts[-1].end_line == 63


def test_lists_are_packed_by_whole_items() -> None:
    items = [f"- item {i}: " + "word " * 8 + f"\n  continued {i}" for i in range(20)]
    text = "\n".join(items) + "\n"
    chunks = chunk_text("notes/list.md", text, chunk_chars=220)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.text.startswith("- item ")
        assert chunk.text.split("\n")[-1].startswith("  continued")
        assert len(chunk.text) <= 220
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 40


def test_over_long_leaf_is_split_by_lines_with_part_labels() -> None:
    paragraph = "\n".join(f"sentence number {i} of a very long paragraph" for i in range(50))
    text = "# Long\n\n" + paragraph + "\n"
    chunks = chunk_text("notes/long.md", text, chunk_chars=400)
    total = len(chunks)
    assert total > 3
    for i, chunk in enumerate(chunks, 1):
        assert f"[Part {i}/{total}]" in chunk.text
        assert chunk.text.split("\n")[-1] == text.split("\n")[chunk.end_line - 1]
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 52
    starts = [c.start_line for c in chunks[1:]]
    ends = [c.end_line for c in chunks[:-1]]
    assert all(s == e + 1 for s, e in zip(starts, ends, strict=True))


def test_over_long_list_item_is_split_by_lines() -> None:
    long_item = "- big item\n" + "\n".join(f"  detail line {i} with some words" for i in range(30))
    text = "- small item\n" + long_item + "\n- last item\n"
    chunks = chunk_text("notes/items.md", text, chunk_chars=300)
    labelled = [c for c in chunks if c.text.startswith("[Part ")]
    assert len(labelled) >= 2
    assert chunks[0].text == "- small item"
    assert chunks[-1].text == "- last item" and chunks[-1].start_line == 33


def test_ids_are_stable_and_only_change_with_the_chunk() -> None:
    first = chunk_text("daily/2023-05-08.md", DAY_NOTE)
    again = chunk_text("daily/2023-05-08.md", DAY_NOTE)
    assert [c.id for c in first] == [c.id for c in again]
    assert len({c.id for c in first}) == len(first)
    edited = chunk_text("daily/2023-05-08.md", DAY_NOTE.replace("lake sunrise", "lake sunset"))
    assert edited[0].id == first[0].id and edited[1].id != first[1].id
    moved = chunk_text("daily/2023-05-09.md", DAY_NOTE)
    assert not {c.id for c in moved} & {c.id for c in first}


def test_heading_only_sections_lend_their_heading_to_the_next_chunk() -> None:
    text = "# Day\n\n## Morning\n\n### Walk\n\nWent for a walk.\n"
    (chunk,) = chunk_text("daily/2024-01-01.md", text)
    assert (chunk.start_line, chunk.end_line) == (1, 7)
    assert chunk.heading_path == ["Day", "Morning", "Walk"]
    only_headings = chunk_text("notes/h.md", "# One\n\n## Two\n")
    assert [(c.start_line, c.end_line) for c in only_headings] == [(1, 3)]


def test_empty_text_gives_no_chunks_and_bad_size_is_rejected() -> None:
    assert chunk_text("notes/empty.md", "  \n\n") == []
    try:
        chunk_text("notes/x.md", "text", chunk_chars=0)
    except ValueError as error:
        assert "chunk_chars" in str(error)
    else:
        raise AssertionError("chunk_chars=0 was accepted")


def test_crlf_line_endings_keep_line_numbers() -> None:
    text = "# T\r\n\r\nfirst\r\nsecond\r\n"
    (chunk,) = chunk_text("notes/crlf.md", text)
    assert (chunk.start_line, chunk.end_line) == (1, 4)
    assert "\r" not in chunk.text


def test_search_text_borrows_bordering_lines_of_the_same_section_only() -> None:
    turns = [f"- **Ann**: turn {i} about topic{i}" for i in range(12)]
    text = "# Day\n\n## Talk\n\n" + "\n".join(turns) + "\n\n## Other\n\nunrelated words\n"
    chunks = chunk_text("daily/2024-01-01.md", text, chunk_chars=120, context_chars=10)
    talk = [c for c in chunks if c.heading_path == ["Day", "Talk"]]
    assert len(talk) >= 3
    for before, chunk, after in zip(talk, talk[1:], talk[2:], strict=False):
        assert before.text.split("\n")[-1] in chunk.search_text  # one whole line at least
        assert after.text.split("\n")[0] in chunk.search_text
        assert before.text.split("\n")[-2] not in chunk.search_text  # but no more within 10 chars
        assert chunk.text in chunk.search_text
    other = chunks[-1]
    assert other.heading_path == ["Day", "Other"]
    assert "topic" not in other.search_text and "unrelated" not in talk[-1].search_text
    plain = chunk_text("daily/2024-01-01.md", text, chunk_chars=120, context_chars=0)
    assert [c.text for c in plain] == [c.text for c in chunks]
    assert [c.id for c in plain] == [c.id for c in chunks]  # context never changes ids or text


def test_one_over_long_line_gets_exactly_one_label_per_part() -> None:
    text = "line one\n" + "word " * 100 + "\nline three\n"
    chunks = chunk_text("notes/x.md", text, chunk_chars=120)
    total = len(chunks)
    assert total > 3
    for i, chunk in enumerate(chunks, 1):
        assert chunk.text.count("[Part ") == 1 and chunk.text.startswith(f"[Part {i}/{total}]\n")
        assert len(chunk.text) <= 120
    assert [c.start_line for c in chunks[1:-1]] == [2] * (total - 2)
    assert "".join(c.text.split("\n", 1)[1].replace(" ", "") for c in chunks[1:-1]) == "word" * 100


def test_context_reaches_across_several_small_chunks_but_not_other_sections() -> None:
    turns = [f"- **Ann**: turn {i} about topic{i}" for i in range(12)]
    text = "# Day\n\n## Talk\n\n" + "\n".join(turns) + "\n\n## Other\n\nunrelated words\n"
    chunks = chunk_text("daily/2024-01-01.md", text, chunk_chars=60, context_chars=100)
    talk = [c for c in chunks if c.heading_path == ["Day", "Talk"]]
    middle = talk[len(talk) // 2]

    def topics(lines: str) -> set[int]:
        return {int(line.split("topic")[1]) for line in lines.split("\n") if "topic" in line}

    own = topics(middle.text)
    borrowed = topics(middle.search_text) - own
    # 100 characters of 30-character turns: three whole turns each side, across several chunks.
    assert len(own) == 1 and len(talk) == 12
    assert borrowed == set(range(min(own) - 3, min(own))) | set(range(max(own) + 1, max(own) + 4))
    assert "unrelated" not in talk[-1].search_text and "topic" not in chunks[-1].search_text


def test_own_text_outranks_the_same_words_borrowed_as_context(tmp_path) -> None:
    from reme.index.keyword import KeywordIndex
    from reme.index.tokenizer import Tokenizer

    turns = [f"- **Ann**: filler line number {i} with ordinary chatter" for i in range(8)]
    turns[3] = "- **Ann**: we adopted a greyhound called Comet"
    text = "# Day\n\n## Talk\n\n" + "\n".join(turns) + "\n"
    chunks = chunk_text("daily/2024-01-01.md", text, chunk_chars=120, context_chars=400)
    holder = next(c for c in chunks if "greyhound" in c.text)
    assert len(chunks) >= 3 and all("greyhound" in c.search_text for c in chunks)
    index = KeywordIndex(tmp_path, Tokenizer())
    index.upsert("daily/2024-01-01.md", [(c.id, c.search_text) for c in chunks])
    index.commit()
    ranked = [chunk_id for chunk_id, _ in index.search("greyhound Comet", 10)]
    assert ranked[0] == holder.id and len(ranked) == len(chunks)


def test_dated_paths_are_searchable_by_the_date_in_words() -> None:
    for path in ("daily/2023-05-08.md", "daily/2023-05-08/standup.md", "resource/2023-05-08/a.txt"):
        (chunk,) = chunk_text(path, "# Notes\n\nWe met at the park.\n")
        assert "8 May 2023" in chunk.search_text.split("\n") and "8 May" not in chunk.text
    for path in ("daily/2023-13-08.md", "daily/notes.md", "2023-05-08.md", "digest/x/2023-05-08.md"):
        (chunk,) = chunk_text(path, "# Notes\n\nWe met at the park.\n")
        assert "May" not in chunk.search_text
