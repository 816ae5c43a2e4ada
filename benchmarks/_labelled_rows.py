"""The other labelled sets of ../shared/data (ARES, toxicity, PII) as rows, with the locked split.

``_datasets`` reads RAGTruth and HaluEval as grounding examples; this module reads the three
other dev files (see the data folder's DATA.md) as ``LabelledRow`` values that carry what
``_split`` needs (``dataset``, ``task``, ``group``), so every one of them is split by the same
rule, seed and share as the grounding sets:

- **ARES** (``ares_relevance.dev.jsonl``): the stratum is the row's source set (``nq``,
  ``hotpotqa``, ...); the group is a connected component of rows that share a query or a
  document (one query's positive and negative rows, and any other query about the same
  passage, stay together), named after the component's first query in sorted order.
- **Toxicity** (``toxicity_mixed.dev.jsonl``): the stratum is the row's source; the group is the
  near-duplicate cluster the toxicity head's cross-validation already keeps together (the first
  50 characters, lower-cased: ToxiGen repeats a prefix across seeds).
- **PII** (``pii_presidio_synth.dev.jsonl``): the stratum is the source file; the group is the
  row's template (rows filled from one template stay together).
- **Foreign sentences** (not in the data folder): the example sentences spaCy ships for each
  language it supports (``spacy.lang.<code>.examples``, MIT), English and the multi-language
  ``xx`` left out: answers in another language than an English question. One stratum; the
  group is the language, so a locked language is never seen while choosing.

The rule depends only on group names, never on the order of the file, so a row never moves
between parts. ``split`` and ``fingerprint`` are ``_split``'s, unchanged.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _split import fingerprint, split

ARES = "ares_relevance.dev.jsonl"
TOXICITY = "toxicity_mixed.dev.jsonl"
PII = "pii_presidio_synth.dev.jsonl"

__all__ = ["LabelledRow", "ares", "fingerprint", "foreign_sentences", "pii", "split", "toxicity"]


@dataclass(frozen=True)
class LabelledRow:
    """One labelled row: its split keys and the file's own fields."""

    id: str
    dataset: str  # "ares" | "toxicity" | "pii"
    task: str  # the stratum: ARES source set, toxicity source, PII source file
    group: str
    fields: dict[str, Any] = field(compare=False, hash=False)


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def ares(folder: Path) -> list[LabelledRow]:
    """ARES rows, grouped by the components of shared queries and documents."""
    rows = list(_jsonl(folder / ARES))
    parent: dict[str, str] = {}

    def find(node: str) -> str:
        while parent.setdefault(node, node) != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for row in rows:
        a, b = find("q:" + str(row["query"])), find("d:" + str(row["document"]))
        if a != b:
            parent[max(a, b)] = min(a, b)
    members: dict[str, list[str]] = {}
    for row in rows:
        members.setdefault(find("q:" + str(row["query"])), []).append(str(row["query"]))
    names = {root: "ares-" + _digest(min(queries)) for root, queries in members.items()}
    return [
        LabelledRow(
            id=str(row["id"]),
            dataset="ares",
            task=str(row["dataset"]),
            group=names[find("q:" + str(row["query"]))],
            fields=row,
        )
        for row in rows
    ]


def _rows(
    folder: Path, file: str, dataset: str, stratum: str, group: Callable[[dict[str, Any]], str]
) -> list[LabelledRow]:
    """Each row of ``file`` with its stratum field's value as task and its group."""
    return [
        LabelledRow(
            id=str(row["id"]),
            dataset=dataset,
            task=str(row[stratum]),
            group=f"{dataset}-" + _digest(group(row)),
            fields=row,
        )
        for row in _jsonl(folder / file)
    ]


def toxicity(folder: Path) -> list[LabelledRow]:
    """Toxicity rows, grouped by near-duplicate prefix."""
    return _rows(folder, TOXICITY, "toxicity", "source", lambda row: str(row["text"])[:50].lower())


def pii(folder: Path) -> list[LabelledRow]:
    """PII rows, grouped by template."""
    return _rows(folder, PII, "pii", "source_file", lambda row: str(row["template"]))


def foreign_sentences(folder: Path | None = None) -> list[LabelledRow]:
    """spaCy's example sentences in every language but English (``folder`` is not used)."""
    import importlib
    import pkgutil

    import spacy.lang

    rows = []
    for info in sorted(pkgutil.iter_modules(spacy.lang.__path__), key=lambda m: m.name):
        if not info.ispkg or info.name in ("en", "xx"):
            continue
        try:
            module = importlib.import_module(f"spacy.lang.{info.name}.examples")
        except ImportError:
            continue
        for i, sentence in enumerate(getattr(module, "sentences", ())):
            if isinstance(sentence, str) and sentence.strip():
                rows.append(
                    LabelledRow(
                        id=f"spacy-{info.name}-{i}",
                        dataset="foreign",
                        task="spacy-examples",
                        group=f"foreign-{info.name}",
                        fields={"language": info.name, "text": sentence.strip()},
                    )
                )
    return rows


if __name__ == "__main__":
    import argparse

    from _datasets import data_dir

    parser = argparse.ArgumentParser(description="Print the locked split of ARES, toxicity, PII.")
    parser.add_argument("--data-dir")
    args = parser.parse_args()
    folder = data_dir(args.data_dir)
    for reader in (ares, toxicity, pii, foreign_sentences):
        print(json.dumps({reader.__name__: fingerprint(reader(folder))}, indent=1))
