"""The labelled data sets and DATA.md's protocol: readers, the locked split, binary metrics.

The readers below give the labelled sets in ``$RAGTRACE_DATA_DIR`` (default ../shared/data; see
its DATA.md) as plain examples; ``split`` locks away 30% of each set's source documents once
(its notes are the comments above it); ``summary`` and ``tuned_flags`` report a binary detector.

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


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
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


# The training-only faithfulness sets (the data folder's TRAIN-DATA.md): other distributions than
# RAGTruth, never in an evaluation half. Each is one ``dataset`` and task; the group is the
# source document (the context: SummEdits repeats one document across 20-40 edited summaries),
# so ``split`` holds out 30% of each set's documents by the same seed and rule as above.
FAITH_TRAIN = {
    "summedits": "faith_train_summedits.jsonl",
    "begin": "faith_train_begin.jsonl",
    "wice": "faith_train_wice.jsonl",
}


def faith_train(folder: Path, names: Sequence[str] = tuple(FAITH_TRAIN)) -> list[GroundingExample]:
    """The training-only faithfulness sets ``names`` as grounding examples (the context as the
    single passage, the question where the set has one), grouped by context."""
    out = []
    for name in names:
        for row in _jsonl(folder / FAITH_TRAIN[name]):
            context = str(row["context"])
            out.append(
                GroundingExample(
                    id=str(row["id"]),
                    dataset=name,
                    task=str(row["task_type"]),
                    group=f"{name}-" + hashlib.sha256(context.encode()).hexdigest()[:16],
                    query=str(row.get("question") or "").strip() or None,
                    passages=(context,),
                    response=str(row["response"]),
                    label=int(row["label"]),
                )
            )
    return out


# Binary-detector metrics for the accuracy harness, as DATA.md asks for them.
#
# ``at_threshold`` gives balanced accuracy, precision/recall/F1 of the positive (hallucinated)
# class, accuracy and AUROC for scores where higher means "flag". ``tuned_flags`` picks the
# threshold by cross-validation grouped by source document: each fold's threshold maximises
# balanced accuracy on the other folds and is applied to the held-out fold only.
from collections.abc import Sequence

import numpy as np
from sklearn.metrics import balanced_accuracy_score, precision_recall_fscore_support, roc_auc_score
from sklearn.model_selection import GroupKFold

FOLDS = 5


def summary(labels: Sequence[int], scores: Sequence[float], flags: Sequence[bool]) -> dict:
    """Metrics of one detector on one slice."""
    y = np.asarray(labels, dtype=int)
    s = np.asarray(scores, dtype=float)
    f = np.asarray(flags, dtype=int)
    precision, recall, f1, _ = precision_recall_fscore_support(
        y, f, average="binary", zero_division=0
    )
    return {
        "n": len(y),
        "balanced_accuracy": round(float(balanced_accuracy_score(y, f)), 3),
        "accuracy": round(float((y == f).mean()), 3),
        "precision": round(float(precision), 3),
        "recall": round(float(recall), 3),
        "f1": round(float(f1), 3),
        "auroc": round(float(roc_auc_score(y, s)), 3) if len(set(y.tolist())) == 2 else None,
    }


def at_threshold(labels: Sequence[int], scores: Sequence[float], threshold: float) -> dict:
    """Flag where score >= threshold."""
    return summary(labels, scores, [s >= threshold for s in scores])


def best_threshold(labels: np.ndarray, scores: np.ndarray) -> float:
    """The cut (midpoint between distinct scores) with the highest balanced accuracy."""
    values = np.unique(scores)
    if len(values) == 1:
        return float(values[0])
    cuts = (values[:-1] + values[1:]) / 2
    best, best_ba = float(cuts[0]), -1.0
    for cut in cuts[:: max(1, len(cuts) // 400)]:
        ba = balanced_accuracy_score(labels, scores >= cut)
        if ba > best_ba:
            best, best_ba = float(cut), ba
    return best


def tuned_flags(
    labels: Sequence[int], scores: Sequence[float], groups: Sequence[str]
) -> list[bool]:
    """Flags from thresholds chosen on the other folds (grouped by ``groups``)."""
    y = np.asarray(labels, dtype=int)
    s = np.asarray(scores, dtype=float)
    flags = np.zeros(len(y), dtype=bool)
    folds = min(FOLDS, len(set(groups)))
    for train, test in GroupKFold(n_splits=folds).split(s, y, np.asarray(groups)):
        flags[test] = s[test] >= best_threshold(y[train], s[train])
    return flags.tolist()


# The locked split of ../shared/data: a tuning part and a locked test part, by source document.
#
# Every accuracy script reads its grounding examples through this module, so that all of them see
# the same two parts:
#
#     from _labelled_data import split
#     tuning, locked = split(examples)
#
# How the split is made, once and for all (``SEED`` and ``LOCKED_SHARE`` never change; changing
# them would put rows that choices were made on into the locked part):
#
# - the unit is the group cross-validation keeps together: a RAGTruth ``source_id`` (all the
#   answers written from one document) or a HaluEval question pair;
# - groups are stratified by (data set, task), and within each stratum ordered by
#   ``sha256(f"{SEED}:{group}")``; the first ``round(LOCKED_SHARE * n)`` groups are locked;
# - the rule depends only on the group names, not on the order of the file or of the rows, so
#   a row never moves between parts.
#
# Tune (features, cuts, thresholds, model choices) on the tuning part only, with cross-validation
# grouped by document inside it. Score the locked part once per shipped change, and report it as
# such (``accuracy.py --locked``). ``fingerprint`` summarises both parts so a reader can check
# that a run used this split.
import hashlib
from collections import defaultdict
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
# The readers above give RAGTruth and HaluEval as grounding examples; these read the three
# other dev files (see the data folder's DATA.md) as ``LabelledRow`` values that carry what
# ``split`` needs (``dataset``, ``task``, ``group``), so every one of them is split by the
# same rule, seed and share as the grounding sets:
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
# between parts. ``split`` and ``fingerprint`` are ``_labelled_data``'s, unchanged.
from collections.abc import Callable
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

    parser = argparse.ArgumentParser(description="Print the locked split of ARES, toxicity, PII.")
    parser.add_argument("--data-dir")
    args = parser.parse_args()
    folder = data_dir(args.data_dir)
    for reader in (ares, toxicity, pii, foreign_sentences):
        print(json.dumps({reader.__name__: fingerprint(reader(folder))}, indent=1))
