"""Boosted trees for the claim model, taught with foreign claims: measured, not shipped.

    cd benchmarks && ../.venv/bin/python _faith_foreign_claims.py [--locked]

Free boosted trees for the claim model ranked the tuning part and the locked part better than
the logistic regression, and passed blatant inventions (``_faith_claim_trees.py``): RAGTruth
holds few claims that share no word with their passages and are unsupported, so the trees
learned that such a claim is mostly fine ("Sure!", "Here is the summary:"). This gives them
those claims. Every training answer hosts one *foreign claim*: a sentence of an answer written
from another document of the same data set and task (at least ``MIN_CONTENT_WORDS`` content
words, not a statement about the passages; drawn with ``TRAINING_DRAW``), featurised against
the host's passages and labelled unsupported. Foreign claims only train claim models
(``_faith_fit.fit_claim_model``, learners ending in ``+foreign``): no answer holds them and
nothing scores them as part of one. *Foreign caught* is the share of another, independent draw
of foreign claims, hosted on each fold's held-out answers, that the fold's claim model calls
unsupported (probability over 0.5): how often an invented sentence is caught.

The rules, written before the figures they judge, and what happened:

1. **Stage 1**, fold seeds 44000-47000 (no earlier choice read them), evaluation draw 45500.
   Variants: ``linear`` (shipped), ``trees`` (free trees as in ``_faith_claim_trees.py``),
   ``trees+foreign``, ``linear+foreign``. ``trees+foreign`` goes to the locked part when, over
   the mean of the four seeds: (1) the pooled RAGTruth AUROC gains at least 0.005 over linear;
   (2) no ``TARGET_BAS`` falls more than 0.01; (3) foreign caught, per task, is at least
   linear's less 0.05; (4) fitted on the whole tuning part, the unit tests' invented claims
   against the router passage are at least 0.8 unsupported as QA and as summary claims. The
   locked part is then scored once; it ships unless the locked part loses Summary's BA or the
   pooled AUROC against linear, or HaluEval's BA falls under 0.93.
   Outcome: (1) and (2) held (pooled AUROC 0.767 -> 0.779), (3) failed on data-to-text (foreign
   caught 0.915 against linear's 0.970; free trees 0.159 on summaries). Not scored locked.
2. **Stage 2**, written after stage 1's figures and before these: ``mixed``, trees with foreign
   claims for QA and summaries, the linear model for data-to-text; fresh fold seeds
   48000-51000, a fresh evaluation draw (46500; the training draw stays 44000); the same four
   rules against linear, then the locked part once with stage 1's shipping rule.
   Outcome: all four held (pooled AUROC 0.765 -> 0.780, Summary BA 0.632 -> 0.644, QA 0.683 ->
   0.689, HaluEval 0.925 -> 0.941; invented router claims 0.97-0.99 unsupported). The locked
   part (the third reading for a tree claim model) lost Summary's BA, 0.605 -> 0.573 (pooled
   AUROC 0.771 -> 0.776, QA 0.779 -> 0.811): **not shipped**, by the rule.

``--locked`` scores ``linear`` and ``mixed`` on the locked part once more; it chooses nothing.
"""

from __future__ import annotations

import pickle
import random
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from _faith_compare import TARGET_BAS, finish, over_folds, setup, show
from _faith_fit import (
    SHIPPED_PRIOR_WEIGHTS,
    Learner,
    answers_by_task,
    fit_claim_model,
    group_folds,
)
from _faith_learners import predict
from train_support import (
    BY_TASK,
    RESULTS,
    SHIPPED_RESPONSE,
    SHIPPED_RESPONSE_RECIPES,
    claims_with_labels,
)

from ragtrace.evaluators.support import featurise
from ragtrace.evaluators.support_features import _META
from ragtrace.evaluators.text import content_words

MIN_CONTENT_WORDS = 3
TRAINING_DRAW = 44000
STAGES = (
    ((44000, 45000, 46000, 47000), 45500, ("linear", "trees", "trees+foreign", "linear+foreign")),
    ((48000, 49000, 50000, 51000), 46500, ("linear", "trees+foreign", "mixed")),
)
LEARNERS: dict[str, Learner] = {
    "linear": "linear",
    "trees": "trees",
    "trees+foreign": "trees+foreign",
    "linear+foreign": "linear+foreign",
    "mixed": {"qa": "trees+foreign", "summary": "trees+foreign", "data2txt": "linear"},
}
CANDIDATES = {0: "trees+foreign", 1: "mixed"}
MIN_AUROC_GAIN = 0.005
MAX_BA_LOSS = 0.01
MAX_CAUGHT_LOSS = 0.05
MIN_INVENTED = 0.8
ROUTER = (
    "The Aurora X2 router supports WPA3. Firmware updates install automatically at night. "
    "The reset button is on the back panel."
)
INVENTED = (
    "It costs $349 and ships with a Contoso warranty.",
    "The router was designed in Norway by 40 engineers and recalled in 2019.",
    "It was designed in Norway by a team of 40 engineers.",
)


def foreign_claims(
    examples: Sequence[Any], answers: np.ndarray, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(feature rows, host answers): one foreign claim for each of ``answers``, drawn with
    ``seed`` from the other documents' answers among them (cached under results/)."""
    cache = RESULTS / f"faith_foreign_{seed}.pkl"
    if cache.exists():
        with cache.open("rb") as handle:
            cached = pickle.load(handle)
        if np.array_equal(cached["host"], answers):
            return cached["X"], cached["host"]
    pool: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for i in answers.tolist():
        example = examples[i]
        for claim in claims_with_labels(example)[0]:
            if len(content_words(claim)) >= MIN_CONTENT_WORDS and not _META.search(claim):
                pool.setdefault((example.dataset, example.task), []).append((example.group, claim))
    rng = random.Random(seed)
    items = []
    for i in answers.tolist():
        donors = pool[(examples[i].dataset, examples[i].task)]
        group, claim = donors[rng.randrange(len(donors))]
        while group == examples[i].group:
            group, claim = donors[rng.randrange(len(donors))]
        items.append(([claim], list(examples[i].passages)))
    rows = []
    for start in range(0, len(items), 64):
        rows.extend(feats[0][2] for feats in featurise(items[start : start + 64]))
        print(f"  foreign claims {min(start + 64, len(items))}/{len(items)}", file=sys.stderr)
    built = {"X": np.asarray(rows), "host": answers}
    with cache.open("wb") as handle:
        pickle.dump(built, handle)
    return built["X"], built["host"]


def caught(
    data: Any,
    tuning: np.ndarray,
    learner: Learner,
    held_out: tuple[np.ndarray, np.ndarray],
    seed: int,
) -> dict[str, float]:
    """Per task, the share of ``held_out`` foreign claims hosted on each fold's held-out
    answers that the fold's claim model calls unsupported (folds as ``cross_validate``'s)."""
    rows, hosts = held_out
    out = {}
    for task, subset in answers_by_task(data, tuning, base=True).items():
        claims = data.claims_of(subset)
        flags: list[bool] = []
        for train, test in group_folds(data.groups[data.owner[claims]], seed):
            model = fit_claim_model(data, claims[train], learner)
            taken = rows[np.isin(hosts, data.owner[claims[test]])]
            flags.extend((predict(model, taken) > 0.5).tolist())
        out[f"{task} foreign caught"] = float(np.mean(flags))
    return out


def invented(data: Any, tuning: np.ndarray, learner: Learner) -> dict[str, float]:
    """The least unsupported of ``INVENTED`` against ``ROUTER``, per task's claim model fitted
    on the whole tuning part."""
    rows = np.asarray([row for _, _, row in featurise([(list(INVENTED), [ROUTER])])[0]])
    return {
        f"{task} invented, least": float(
            predict(fit_claim_model(data, data.claims_of(subset), learner), rows).min()
        )
        for task, subset in answers_by_task(data, tuning, base=True).items()
    }


def stage(run: Any, number: int) -> dict[str, Any]:
    """One stage's table and its rule's outcome."""
    seeds, draw, labels = STAGES[number]
    data, tuning = run.data, run.tuning
    held_out = foreign_claims(run.examples, tuning, draw)
    variants = {label: variant(label) for label in labels}
    mean, _ = over_folds(data, run.examples, tuning, variants, seeds, SHIPPED_RESPONSE)
    for label in labels:
        runs = [caught(data, tuning, LEARNERS[label], held_out, seed) for seed in seeds]
        mean[label].update({k: float(np.mean([r[k] for r in runs])) for k in runs[0]})
        mean[label].update(invented(data, tuning, LEARNERS[label]))
    show(f"stage {number + 1}: tuning part, mean of fold seeds {seeds}", mean, width=15)
    linear, candidate = mean["linear"], mean[CANDIDATES[number]]
    rules = {
        "1 AUROC gain": candidate["ragtruth/all AUROC"] - linear["ragtruth/all AUROC"]
        >= MIN_AUROC_GAIN,
        "2 BAs held": all(linear[k] - candidate[k] <= MAX_BA_LOSS for k in TARGET_BAS),
        "3 foreign caught": all(
            candidate[k] >= linear[k] - MAX_CAUGHT_LOSS for k in linear if k.endswith("caught")
        ),
        "4 invented flagged": all(
            candidate[f"{t} invented, least"] >= MIN_INVENTED for t in ("qa", "summary")
        ),
    }
    print(f"  {CANDIDATES[number]}: " + ", ".join(f"{k}: {v}" for k, v in rules.items()))
    return {"tuning": mean, "rules": rules}


def variant(label: str) -> dict[str, Any]:
    return {
        "by_task": BY_TASK,
        "prior_weights": SHIPPED_PRIOR_WEIGHTS,
        "response_recipes": SHIPPED_RESPONSE_RECIPES,
        "learner": LEARNERS[label],
    }


def main() -> None:
    run = setup(__doc__.split("\n")[0])
    run.data.foreign = foreign_claims(run.examples, run.tuning, TRAINING_DRAW)
    result = {f"stage {n + 1}": stage(run, n) for n in range(len(STAGES))}
    finish(
        result,
        "faith_foreign_claims",
        run,
        {k: variant(k) for k in ("linear", "mixed")},
        SHIPPED_RESPONSE,
    )


if __name__ == "__main__":
    main()
