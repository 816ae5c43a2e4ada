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
