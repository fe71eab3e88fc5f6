"""Loaders for the evaluation data in ``../shared/data`` beside the checkout (read in place, never copied)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# REME_BENCH_DATA points elsewhere, e.g. at a held-out copy with the same layout.
DATA_DIR = Path(
    os.environ.get("REME_BENCH_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data")
)


def read_jsonl(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


@dataclass(frozen=True)
class LocomoQuestion:
    qid: str
    question: str
    category: int
    # (file relative to the conversation folder, 1-based line) of each evidence turn that resolves.
    evidence: list[tuple[str, int]]


@dataclass(frozen=True)
class LocomoConversation:
    name: str
    notes: dict[str, str]  # "notes/YYYY-MM-DD.md" -> text
    questions: list[LocomoQuestion]


def locomo_conversations(root: Path = DATA_DIR / "locomo" / "notes") -> list[LocomoConversation]:
    """Each conversation's day notes and questions; evidence ids are resolved through dia_map.jsonl."""
    conversations = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        dia_map = {row["dia_id"]: (row["file"], row["line"]) for row in read_jsonl(folder / "dia_map.jsonl")}
        questions = [
            LocomoQuestion(
                qid=row["qid"],
                question=row["question"],
                category=int(row["category"]),
                evidence=[dia_map[e] for e in row["evidence"] if e in dia_map],
            )
            for row in read_jsonl(folder / "qa.jsonl")
        ]
        notes = {
            f"notes/{p.name}": p.read_text(encoding="utf-8") for p in sorted((folder / "notes").glob("*.md"))
        }
        conversations.append(LocomoConversation(folder.name, notes, questions))
    return conversations


def longmemeval_cases(root: Path = DATA_DIR / "longmemeval-s-dev" / "cases") -> list[dict]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(root.glob("*.json"))]


@dataclass(frozen=True)
class BeirSet:
    corpus: dict[str, str]  # doc id -> "title\ntext"
    queries: dict[str, str]  # query id -> text (only queries with judgements)
    qrels: dict[str, dict[str, int]]  # query id -> {doc id: relevance}


def beir_set(folder: Path, split: str = "test") -> BeirSet:
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / f"{split}.tsv").open(encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            query_id, doc_id, score = line.rstrip("\n").split("\t")
            qrels.setdefault(query_id, {})[doc_id] = int(score)
    corpus = {
        row["_id"]: f"{row.get('title', '')}\n{row['text']}" for row in read_jsonl(folder / "corpus.jsonl")
    }
    queries = {row["_id"]: row["text"] for row in read_jsonl(folder / "queries.jsonl") if row["_id"] in qrels}
    return BeirSet(corpus, queries, qrels)
