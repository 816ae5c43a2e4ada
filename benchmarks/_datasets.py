"""Readers for the labelled sets in ../shared/data (see its DATA.md), as plain examples.

The data stay where they are (never copied into the repository). Each reader yields
``GroundingExample``: a response to check against its passages, the response-level label, the
character spans annotated as hallucinated (RAGTruth only), and the group that cross-validation
must keep together (a source document, or a HaluEval question pair).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"
RAGTRUTH = "ragtruth_test_response_level.dev.jsonl"
HALUEVAL = "halueval_qa_2000.dev.jsonl"


@dataclass(frozen=True)
class GroundingExample:
    id: str
    dataset: str  # "ragtruth" | "halueval"
    task: str  # QA | Summary | Data2txt (RAGTruth) or QA (HaluEval)
    group: str
    query: str | None
    passages: tuple[str, ...]
    response: str
    label: int
    spans: tuple[tuple[int, int], ...] = field(default=())


def data_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The data folder: ``path``, else ``$RAGTRACE_DATA_DIR``, else ../shared/data."""
    chosen = Path(path or os.environ.get("RAGTRACE_DATA_DIR") or DEFAULT_DATA_DIR)
    if not chosen.is_dir():
        raise SystemExit(f"data folder not found: {chosen} (pass --data-dir)")
    return chosen


def _jsonl(path: Path) -> Iterator[dict[str, object]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def ragtruth(folder: Path) -> list[GroundingExample]:
    """RAGTruth response-level rows; QA passages are the split ``context_passages``."""
    out = []
    for row in _jsonl(folder / RAGTRUTH):
        passages = row.get("context_passages") or [row["context"]]
        spans = tuple((int(s["start"]), int(s["end"])) for s in row["hallucination_spans"])  # type: ignore[union-attr]
        out.append(
            GroundingExample(
                id=str(row["id"]),
                dataset="ragtruth",
                task=str(row["task_type"]),
                group=f"ragtruth-{row['source_id']}",
                query=str(row.get("question") or "") or None,
                passages=tuple(str(p) for p in passages),  # type: ignore[union-attr]
                response=str(row["response"]),
                label=int(row["label"]),  # type: ignore[call-overload]
                spans=spans,
            )
        )
    return out


def halueval(folder: Path) -> list[GroundingExample]:
    """HaluEval QA pairs, with the knowledge text as the single passage."""
    return [
        GroundingExample(
            id=str(row["id"]),
            dataset="halueval",
            task="QA",
            group=f"halueval-{row['pair_id']}",
            query=str(row["question"]).strip(),
            passages=(str(row["knowledge"]),),
            response=str(row["answer"]),
            label=int(row["label"]),  # type: ignore[call-overload]
        )
        for row in _jsonl(folder / HALUEVAL)
    ]
