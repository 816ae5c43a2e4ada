"""Response models whose weights' signs are bounded, measured on the tuning part and on probes.

    cd benchmarks && ../.venv/bin/python _faith_response_signs.py [--locked]

Why. The demo's assistant copies its answers from the help centre, yet ``faithfulness`` passed
30% of its answers (``make demo``): a one-sentence answer copied verbatim from its passage gets
a hallucination probability of about 0.33, above the ``short_qa`` threshold of 0.25. The
``short_qa`` response model was fitted on 690 HaluEval answers and 10 RAGTruth ones, and its
weight on ``mean_similarity`` is positive (+0.88): in HaluEval the true answers are a few words
("Delhi"; median 2 words on the tuning part, 99% under 8), far in meaning from any passage
sentence, and the invented ones are fluent sentences (median 9 words) close to them, so there
the closer an answer is to its passages the likelier it is invented. The ``qa`` and ``data2txt``
response models also weigh similarity (and data2txt's bigram support) toward hallucination. A
copied sentence is as close as an answer gets.

A signed response model (``_faith_fit.ResponseRecipe(signed=True)``, ``_faith_learners.
fit_signed``) has the same class-balanced objective with each weight's sign bounded by
``RESPONSE_SIGNS``: a more doubtful claim never makes an answer less doubtful; more bigram
support, similarity or word coverage never more (the claim count is free). Claim models are
unchanged throughout. Probes (``_faith_probes``): answers whose label holds by construction (a
verbatim passage sentence, two, or one plus a sentence from another document), from the tuning
part's QA questions and from the demo's help centre, scored by each recipe fitted on the whole
tuning part; and a set written by a helper who saw neither the detector nor its data
(``data/short_answer_probes.json``).

**First stage** (seeds 8000-11000 of ``_faith_fit.group_folds``, which no earlier choice read).
The first candidate, every response model signed (``all signed``), had this rule written before
its figures: ship if (1) the share of verbatim probes flagged is at most half the recipe's
before; (2) the share of ``added`` probes flagged falls by no more than 0.05 on either source;
(3) no tuning balanced accuracy (RAGTruth QA, Summary, Data2txt, overall; HaluEval) falls by
more than 0.01, nor the pooled RAGTruth AUROC by more than 0.005. It failed (2) and (3): HaluEval
0.931 -> 0.904, Data2txt 0.619 -> 0.594, demo ``added`` 0.88 -> 0.56 (term (2) was ill-posed: the
recipe before flagged every demo answer of one sentence, copied or not). Two variants were then
looked at on the same seeds: only ``short_qa`` signed (RAGTruth unchanged, HaluEval 0.904), and
``short_qa`` signed with the answer's missing numbers and names as two more features
(``candidate``: HaluEval 0.928, verbatim probes flagged 0).

**Second stage**, the candidate against the recipe before, on fresh seeds 12000-15000 and the
helper's set, read by this run only. The rule, written before those figures: ship the candidate
if (1) the verbatim probes flagged (both sources) are at most 0.05 and at most half of before;
(2) on each probe source, the ``added`` share flagged minus the verbatim share flagged grows;
(3) on the helper's set, the balanced accuracy over its answers does not fall and the share of
its supported answers flagged falls; (4) no tuning balanced accuracy falls by more than 0.01,
nor the pooled RAGTruth AUROC by more than 0.005. Then ``--locked`` scores the locked part once,
both recipes; the candidate ships unless the locked HaluEval BA falls by more than 0.02 or a
RAGTruth BA by more than 0.01.

Answers are read as written (``train_support.READING``, ``"raw"``), as they were when this was
chosen, before the evaluator read past citation markers (``_faith_answer_markup.py``).

**After shipping**, a second helper wrote another set (``data/short_answer_probes_2.json``: 15
other domains, and faithful yes/no answers as a sixth kind), read first by this script's last
table: a check on the shipped change, with no rule and nothing chosen from it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from _faith_compare import finish, over_folds, setup, show, tuning_holds
from _faith_fit import SHIPPED_PRIOR_WEIGHTS, ResponseRecipe, fit_recipe, score_answers
from _faith_probes import (
    WRITTEN_2,
    demo_probes,
    flag_rates,
    probe_data,
    question_probes,
    written_probes,
)
from sklearn.metrics import balanced_accuracy_score
from train_support import (
    BY_TASK,
    SHIPPED_RESPONSE,
    SHORT_QA_RESPONSE,
)

from ragtrace.evaluators.support_response import CALIBRATIONS

FIRST_SEEDS = (8000, 9000, 10000, 11000)
SECOND_SEEDS = (12000, 13000, 14000, 15000)
MAX_CAUGHT_LOSS = 0.05
MAX_VERBATIM = 0.05
BEFORE = {"by_task": BY_TASK, "prior_weights": SHIPPED_PRIOR_WEIGHTS}
ALL_SIGNED = {k: ResponseRecipe(SHIPPED_RESPONSE, True) for k in ("", *CALIBRATIONS)}
FIRST = {
    "before": BEFORE,
    "all signed": {**BEFORE, "response_recipes": ALL_SIGNED},
    "short signed": {
        **BEFORE,
        "response_recipes": {"short_qa": ResponseRecipe(SHIPPED_RESPONSE, True)},
    },
    "candidate": {
        **BEFORE,
        "response_recipes": {"short_qa": ResponseRecipe(SHORT_QA_RESPONSE, True)},
    },
}
SECOND = {"before": FIRST["before"], "candidate": FIRST["candidate"]}


def probe_rates(
    run: Any, variants: dict[str, dict[str, Any]], probes: list[Any]
) -> dict[str, dict[str, float]]:
    """Each variant's flag rates on ``probes`` (and, where they have both labels, its balanced
    accuracy on each source), fitted on the whole tuning part."""
    data = probe_data(probes, run.args.embedding_model, run.reading)
    every = np.arange(len(probes))
    out = {}
    for label, options in variants.items():
        scored = score_answers(
            data, fit_recipe(run.data, run.tuning, SHIPPED_RESPONSE, **options), every
        )
        flagged = scored.values > scored.thresholds
        out[label] = flag_rates(probes, flagged, 0)
        for source in sorted({p.dataset for p in probes}):
            rows = [k for k, p in enumerate(probes) if p.dataset == source]
            out[label][f"{source} BA"] = balanced_accuracy_score(data.labels[rows], flagged[rows])
    return out


def verbatim(rates: dict[str, float], source: str | None = None) -> float:
    """Mean share flagged of the verbatim families (of ``source``, else of both built ones)."""
    keys = [
        k
        for k in rates
        if k.split(" ")[1] in ("extract1", "extract2") and (source is None or k.startswith(source))
    ]
    return float(np.mean([rates[k] for k in keys]))


def first_rule(tuning: dict[str, dict[str, float]], probes: dict[str, dict[str, float]]) -> bool:
    """The first stage's rule for ``all signed``, printed term by term."""
    before, after = probes["before"], probes["all signed"]
    halves = verbatim(after) <= verbatim(before) / 2
    caught = all(
        before[k] - after[k] <= MAX_CAUGHT_LOSS for k in before if k.endswith("added flagged")
    )
    print(f"first rule (all signed): verbatim at most half: {halves}; added held: {caught}")
    return tuning_holds(tuning["before"], tuning["all signed"]) and halves and caught


def second_rule(
    tuning: dict[str, dict[str, float]],
    probes: dict[str, dict[str, float]],
    written: dict[str, dict[str, float]],
) -> bool:
    """The second stage's rule for the candidate, printed term by term."""
    before, after = probes["before"], probes["candidate"]
    low = verbatim(after) <= min(MAX_VERBATIM, verbatim(before) / 2)
    apart = all(
        after[f"{s} added flagged"] - verbatim(after, s)
        > before[f"{s} added flagged"] - verbatim(before, s)
        for s in ("demo", "questions")
    )
    supported = ("verbatim", "paraphrase", "short")
    flags = {
        label: float(np.mean([rates[f"written {k} flagged"] for k in supported]))
        for label, rates in written.items()
    }
    held = written["candidate"]["written BA"] >= written["before"]["written BA"]
    fewer = flags["candidate"] < flags["before"]
    print(
        f"second rule (candidate): verbatim low: {low}; added further from verbatim: {apart}; "
        f"written BA held: {held}; written supported answers flagged "
        f"{flags['before']:.3f} -> {flags['candidate']:.3f}: {fewer}"
    )
    return tuning_holds(tuning["before"], tuning["candidate"]) and low and apart and held and fewer


def main() -> None:
    run = setup(__doc__.split("\n")[0], reading="raw")  # as chosen: before answer_markup
    built = question_probes(run.examples, run.tuning) + demo_probes()
    first, _ = over_folds(run.data, run.examples, run.tuning, FIRST, FIRST_SEEDS, SHIPPED_RESPONSE)
    show(f"first stage: tuning part, mean of fold assignments {FIRST_SEEDS}", first)
    first_probes = probe_rates(run, FIRST, built)
    show("first stage: probes, fitted on the whole tuning part", first_probes)
    first_ships = first_rule(first, first_probes)
    second, _ = over_folds(
        run.data, run.examples, run.tuning, SECOND, SECOND_SEEDS, SHIPPED_RESPONSE
    )
    show(f"second stage: tuning part, mean of fold assignments {SECOND_SEEDS}", second)
    written = probe_rates(run, SECOND, written_probes())
    show("second stage: the helper's set, fitted on the whole tuning part", written)
    ships = second_rule(second, {k: first_probes[k] for k in SECOND}, written)
    print(
        f"all signed: {'ship' if first_ships else 'do not ship'}; candidate: "
        f"{'ship' if ships else 'do not ship'}"
    )
    confirmed = probe_rates(run, SECOND, written_probes(WRITTEN_2))
    show("after shipping: the second helper's set, fitted on the whole tuning part", confirmed)
    result: dict[str, object] = {
        "first": {"seeds": FIRST_SEEDS, "tuning": first, "probes": first_probes},
        "second": {"seeds": SECOND_SEEDS, "tuning": second, "written": written},
        "second_written_set": confirmed,
        "all_signed_ships": first_ships,
        "candidate_ships": ships,
    }
    finish(result, "faith_response_signs", run, SECOND, SHIPPED_RESPONSE)


if __name__ == "__main__":
    main()
