"""The locked split of ../shared/data: a tuning part and a locked test part, by source document.

Every accuracy script reads its grounding examples through this module, so that all of them see
the same two parts:

    from _split import split
    tuning, locked = split(examples)

How the split is made, once and for all (``SEED`` and ``LOCKED_SHARE`` never change; changing
them would put rows that choices were made on into the locked part):

- the unit is the group cross-validation keeps together: a RAGTruth ``source_id`` (all the
  answers written from one document) or a HaluEval question pair;
- groups are stratified by (data set, task), and within each stratum ordered by
  ``sha256(f"{SEED}:{group}")``; the first ``round(LOCKED_SHARE * n)`` groups are locked;
- the rule depends only on the group names, not on the order of the file or of the rows, so
  a row never moves between parts.

Tune (features, cuts, thresholds, model choices) on the tuning part only, with cross-validation
grouped by document inside it. Score the locked part once per shipped change, and report it as
such (``accuracy.py --locked``). ``fingerprint`` summarises both parts so a reader can check
that a run used this split.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from typing import Protocol, TypeVar

SEED = 20261125
LOCKED_SHARE = 0.3


class _Grouped(Protocol):
    @property
    def dataset(self) -> str: ...

    @property
    def task(self) -> str: ...

    @property
    def group(self) -> str: ...


E = TypeVar("E", bound=_Grouped)


def _rank(group: str) -> str:
    return hashlib.sha256(f"{SEED}:{group}".encode()).hexdigest()


def locked_groups(examples: Sequence[_Grouped]) -> frozenset[str]:
    """The groups of ``examples`` that belong to the locked test part."""
    strata: dict[tuple[str, str], set[str]] = defaultdict(set)
    for example in examples:
        strata[(example.dataset, example.task)].add(example.group)
    locked: set[str] = set()
    taken: set[str] = set()
    for key in sorted(strata):
        groups = sorted(strata[key] - taken, key=_rank)
        taken |= strata[key]
        locked.update(groups[: round(LOCKED_SHARE * len(groups))])
    return frozenset(locked)


def split(examples: Sequence[E]) -> tuple[list[E], list[E]]:
    """(tuning part, locked part) of ``examples``, each in the original order."""
    locked = locked_groups(examples)
    return (
        [e for e in examples if e.group not in locked],
        [e for e in examples if e.group in locked],
    )


def fingerprint(examples: Sequence[_Grouped]) -> dict[str, object]:
    """Rows and groups per part and stratum, and a hash of the locked groups' names."""
    locked = locked_groups(examples)
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for example in examples:
        part = "locked" if example.group in locked else "tuning"
        counts[f"{example.dataset}/{example.task}"][part] += 1
    digest = hashlib.sha256("\n".join(sorted(locked)).encode()).hexdigest()[:12]
    return {
        "seed": SEED,
        "locked_share": LOCKED_SHARE,
        "rows": {k: dict(v) for k, v in sorted(counts.items())},
        "locked_groups": len(locked),
        "locked_groups_sha256": digest,
    }


# The other labelled sets of ../shared/data (ARES, toxicity, PII) as rows, with the locked split.
#
# ``_datasets`` reads RAGTruth and HaluEval as grounding examples; this module reads the three
# other dev files (see the data folder's DATA.md) as ``LabelledRow`` values that carry what
# ``_split`` needs (``dataset``, ``task``, ``group``), so every one of them is split by the same
# rule, seed and share as the grounding sets:
#
# - **ARES** (``ares_relevance.dev.jsonl``): the stratum is the row's source set (``nq``,
#   ``hotpotqa``, ...); the group is a connected component of rows that share a query or a
#   document (one query's positive and negative rows, and any other query about the same
#   passage, stay together), named after the component's first query in sorted order.
# - **Toxicity** (``toxicity_mixed.dev.jsonl``): the stratum is the row's source; the group is the
#   near-duplicate cluster the toxicity head's cross-validation already keeps together (the first
#   50 characters, lower-cased: ToxiGen repeats a prefix across seeds).
# - **PII** (``pii_presidio_synth.dev.jsonl``): the stratum is the source file; the group is the
#   row's template (rows filled from one template stay together).
# - **Foreign sentences** (not in the data folder): the example sentences spaCy ships for each
#   language it supports (``spacy.lang.<code>.examples``, MIT), English and the multi-language
#   ``xx`` left out: answers in another language than an English question. One stratum; the
#   group is the language, so a locked language is never seen while choosing.
#
# The rule depends only on group names, never on the order of the file, so a row never moves
# between parts. ``split`` and ``fingerprint`` are ``_split``'s, unchanged.
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
