"""Reading answers past their presentation marks, measured on the tuning part and on probes.

    cd benchmarks && ../.venv/bin/python _faith_answer_markup.py [--locked]

Why. Assistants format answers: numbered lists, bold, citation markers, source notes. Scored as
text, a copied help-centre sentence with ``[1]`` after it, or as item "1." of a list, was
flagged as a hallucination: of the demo's copied answers, 34 of 60 with citation markers, 47
of 60 as a numbered list, 45 of 60 with "(Source: Aurora help centre)", 32 of 60 under an
"**Answer:**" label (none plain). ``[1]`` and "1." are numbers the passages lack; RAGTruth's QA
answers hold numbered lists too (119 of the tuning part's 310), so the fitted models learned
from such noise.

The candidate: the detector reads every answer through ``ragtrace.evaluators.answer_markup.
blank_markup`` (list markers, bold, headings, citation markers, source notes and lines, a
leading "Answer:" label and attributions to the given material blanked, every other character
at its offset), in training (``train_support.READING = "blank_markup"``, so the spans of the
labelled data still line up) and at run time; the shipped recipe refitted on the features of
the answers so read. Compared with the same recipe on the answers as written (``"raw"``).

Measured: 5-fold CV grouped by document inside the tuning part, ``GroupKFold``'s assignment and
four no earlier choice read (seeds 16000-19000 of ``_faith_fit.group_folds``); and the demo's
probes (``_faith_probes.demo_probes``: copied sentences, one or two, and one plus an invented
sentence) written in every form of ``_faith_probes.FORMS``, scored by each reading's recipe
fitted on the whole tuning part.

The rule, written before the figures: ship the reading if (1) in every form, the copied probes
are flagged at most 5% of the time; (2) in no form does the share of probes with an invented
sentence that are flagged fall by more than 0.05; (3) in the tuning CV (mean of the five
assignments) no balanced accuracy (RAGTruth QA, Summary, Data2txt, overall; HaluEval) falls by
more than 0.01 nor the pooled RAGTruth AUROC by more than 0.005. Then ``--locked`` scores the
locked part once, both readings, and the reading ships unless a RAGTruth BA falls there by more
than 0.01 or HaluEval's by more than 0.02.

Outcome of that rule (2026-11-27): (1) and (3) held (every form's copied probes 0% flagged,
against 43-100% in six forms as written; tuning QA AUROC 0.781 -> 0.795, pooled 0.772 ->
0.777, HaluEval BA 0.925 -> 0.917), and (2) failed: invented sentences under a numbered list,
citations or a source note were caught 88-91% of the time, against 100% reading them raw. Term
(2) was ill-posed, the flaw ``_faith_response_signs.py``'s first rule had shown the same day:
read raw, those forms were flagged whatever they said (74-100% of the copied ones), so their
100% measured no detection. As written, the rule says do not ship.

**The corrected rule**, written after those figures and before these: what term (2) meant is
that formatting must not hide a wrong answer. On the two helper-written sets of short answers
(``_faith_probes.WRITTEN``, ``WRITTEN_2``; never read in these forms), each written in every
form: ship if, reading past the marks, (a) the copied answers are flagged at most 5% of the time
in every form; (b) in no form are the changed-fact or added-claim answers caught more than 0.05
less often than in the plain form; (c) in no form does the balanced accuracy fall more than 0.01
below the raw reading's. Then the locked part once, as above.

Outcome: (a) held; (b) and (c) failed, and not because of the marks. Refitted on answers read
past their marks, the models judge plain short answers differently: the plain form's balanced
accuracy fell 0.690 -> 0.635 (changed facts caught 0.92 -> 0.78, added claims 0.90 -> 0.59),
and a greeting plus a closing line hid changed facts in both readings (0.54 and 0.36 caught).
The refit is not shipped.

**Third candidate, ``runtime``**: the models stay as fitted on the answers as written; only the
evaluator reads past the marks. Plain answers are then scored exactly as before. The rule,
written before its figures: ship if, on the helpers' sets in every form, (a) copied answers are
flagged at most 5% of the time; (b) in every form but "greeting and closing" (which holds no
mark, so reads the same), changed-fact and added-claim answers are caught no more than 0.05
less often than in the plain form; (c) in every form the balanced accuracy is at least the raw
reading's less 0.01; and (d) in a tuning CV where the models are fitted on the training folds'
answers as written and score the held-out folds' answers read past their marks (four fold
assignments no earlier choice read, seeds 20000-23000), no balanced accuracy falls by more than
0.01 nor the pooled AUROC by more than 0.005 against the same folds read as written. Then the
locked part once: ship unless a RAGTruth BA falls by more than 0.01 or HaluEval's by more than
0.02.

Outcome: (a)-(c) held (every form's copied answers 0% flagged, no form hiding a wrong answer,
every form's BA at least the raw reading's), and (d) failed: RAGTruth QA's BA fell 0.705 ->
0.686. Its models learned list answers with their markers ("1." a number the passages lack, in
119 of 310 tuning answers), and reading the same answers without them at run time moves their
verdicts. Not shipped.

**Fourth candidate, ``runtime_no_lists``**: the same, with list markers read as written (as the
models learned them; ``blank_markup(lists=False)``), every other mark read past. The rule,
written before its figures: the third rule's terms, with both list forms exempt from (a)-(c),
and (d) on four more fold assignments no earlier choice read (seeds 24000-27000); then the
locked part once, as above.

Outcome: every term held; the locked part (read once for it): RAGTruth QA 0.779 -> 0.771, the
rest the same. Shipped, then made an option (``Faithfulness(read_past_markup=True)``, off by
default): on the throughput benchmark's warm answers it cost the online suite about 20%, past
its 10% budget (BENCHMARKS.md, "Eighth change").

**Fifth candidate, ``runtime_filler``** (after the fourth shipped): a greeting and a closing line
("Great question!", "Let me know if you have any other questions.") made changed facts in
short answers harder to catch in every reading (the helpers' sets: 54% caught, against 92%
plain), because the extra sentences move the answer's evidence and length. The candidate reads
past an opening interjection ("Sure!", "Certainly,", "Great question!") and closing offers of
help ("I hope this helps!", "Let me know if ...", "Feel free to ask ...") too
(``blank_markup(lists=False, filler=True)``); the models stay as fitted. RAGTruth's answers open
with "Sure!" 91 times in the tuning part, so labelled verdicts can move. The rule, written
before its figures: the fourth rule's terms with the greeting form no longer exempt from (b),
(d) on seeds 28000-31000 against the shipped fourth candidate; then the locked part once, ship
unless a RAGTruth BA falls by more than 0.01 against the shipped reading or HaluEval's by more
than 0.02.

Outcome: every tuning and probe term held (the helpers' greeting form: changed facts caught
0.54 -> 0.93, BA 0.617 -> 0.679; tuning within 0.003 of the shipped reading), and the locked
part refused it: Summary's BA 0.605 -> 0.583 (Data2txt 0.651 -> 0.641, QA 0.771 -> 0.776).
Not shipped; the filler patterns live in ``_answer_readings.py`` for these figures.

**Sixth candidate, ``lexical``** (after the fourth was made an option for its cost): the claims
split and embedded as written, each claim's words, numbers and names read past its marks, and
the answer's coverage and length too (``_answer_readings.CLAIM_READINGS``); the models as
fitted. Its similarity reads each sentence as the other evaluators embedded it, so it needs no
new embedding. The rule, written before its figures: the fourth rule's terms (list forms exempt
from (a)-(c), the greeting form from (b); (d) on seeds 32000-35000 against answers as written);
the whole default suite on the throughput benchmark's warm records within 10% of reading as
written (alternated in one run); then the locked part once, and the reading becomes the
default unless a RAGTruth BA falls there by more than 0.01 or HaluEval's by more than 0.02
against answers as written.

Outcome: the probe and tuning terms held (tuning QA 0.685 -> 0.675, at the limit), and so did
the cost (the warm suite, alternated in one run beside a CI run: ``faithfulness`` 1.8 ms a
record either way); the locked part refused it: RAGTruth QA 0.779 -> 0.758. Not shipped; the
option keeps the fourth candidate's reading.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from _faith_compare import MAX_BA_LOSS, figures, over_folds, setup, show, tuning_holds
from _faith_data import Data, Scored
from _faith_fit import cross_validate, fit_recipe, group_folds, score_answers
from _faith_probes import (
    FORMS,
    WRITTEN,
    WRITTEN_2,
    demo_probes,
    formatted,
    probe_data,
    written_probes,
)
from sklearn.metrics import balanced_accuracy_score
from train_support import RESULTS, SHIPPED, SHIPPED_RESPONSE, load

SEEDS = (16000, 17000, 18000, 19000)
RUNTIME_SEEDS = (20000, 21000, 22000, 23000)
NO_LISTS_SEEDS = (24000, 25000, 26000, 27000)
FILLER_SEEDS = (28000, 29000, 30000, 31000)
LEXICAL_SEEDS = (32000, 33000, 34000, 35000)
LIST_FORMS = ("numbered list", "bulleted list")
MAX_COPIED_FLAGGED = 0.05
MAX_CAUGHT_LOSS = 0.05
READINGS = ("raw", "blank_markup")
# Each variant: (the reading the models are fitted on, the reading the evaluator scores).
VARIANTS = {
    "raw": ("raw", "raw"),
    "blank_markup": ("blank_markup", "blank_markup"),
    "runtime": ("raw", "blank_markup"),
    "runtime_no_lists": ("raw", "blank_markup_no_lists"),
    "runtime_filler": ("raw", "blank_markup_filler"),
    "lexical": ("raw", "lexical_no_lists"),
}


def tuning_figures(run: Any, data: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Mean tuning CV figures per reading over ``GroupKFold`` and the ``SEEDS`` shuffles."""
    out = {}
    for reading in READINGS:
        _, per_seed = over_folds(
            data[reading], run.examples, run.tuning, {reading: SHIPPED}, SEEDS, SHIPPED_RESPONSE
        )
        grouped = figures(
            data[reading],
            run.examples,
            run.tuning,
            cross_validate(data[reading], run.tuning, SHIPPED_RESPONSE, **SHIPPED),
        )
        runs = [*per_seed[reading], grouped]
        out[reading] = {k: float(np.mean([r[k] for r in runs])) for k in grouped}
    return out


def mixed_cv(run: Any, fit_on: Data, score_on: Data, seed: int) -> dict[str, float]:
    """Tuning CV figures (``group_folds(seed)`` over the tuning answers' documents) of models
    fitted on the training folds' answers of ``fit_on`` scoring the held-out folds' answers of
    ``score_on`` (the same answers, read another way)."""
    out = Scored.empty(len(score_on.labels))
    for train, test in group_folds(score_on.groups[run.tuning], seed):
        fitted = fit_recipe(fit_on, run.tuning[train], SHIPPED_RESPONSE, **SHIPPED)
        scored = score_answers(score_on, fitted, run.tuning[test])
        out.values[run.tuning[test]] = scored.values[run.tuning[test]]
        out.thresholds[run.tuning[test]] = scored.thresholds[run.tuning[test]]
    return figures(score_on, run.examples, run.tuning, out)


def runtime_tuning(
    run: Any, data: dict[str, Any], variant: str, seeds: tuple[int, ...], base: str = "raw"
) -> dict[str, dict[str, float]]:
    """Mean ``mixed_cv`` figures over ``seeds`` of ``base`` and ``variant``."""
    out = {}
    for label in (base, variant):
        fit_on, score_on = VARIANTS[label]
        runs = [mixed_cv(run, data[fit_on], data[score_on], seed) for seed in seeds]
        out[label] = {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
    return out


def form_rates(
    run: Any, data: dict[str, Any], probes: list[Any], variants: tuple[str, ...] = READINGS
) -> dict[str, dict[str, float]]:
    """Per variant (``VARIANTS``): the share flagged of each (family, form) of the formatted
    ``probes`` (``extract1`` and ``extract2``, or ``verbatim``, count as ``copied``) and the
    balanced accuracy in each form."""
    out: dict[str, dict[str, float]] = {}
    for variant in variants:
        fit_on, score_on = VARIANTS[variant]
        probe = probe_data(probes, run.args.embedding_model, score_on)
        fitted = fit_recipe(data[fit_on], run.tuning, SHIPPED_RESPONSE, **SHIPPED)
        scored = score_answers(probe, fitted, np.arange(len(probes)))
        flagged = scored.values > scored.thresholds
        rates: dict[str, list[bool]] = {}
        by_form: dict[str, list[int]] = {}
        for k, p in enumerate(probes):
            family, form = p.id.split(":")[1].split("/")
            family = "copied" if family.startswith("extract") or family == "verbatim" else family
            rates.setdefault(f"{form}: {family}", []).append(bool(flagged[k]))
            by_form.setdefault(form, []).append(k)
        out[variant] = {key: float(np.mean(v)) for key, v in rates.items()}
        for form, rows in by_form.items():
            labels = probe.labels[rows]
            out[variant][f"{form}: BA"] = balanced_accuracy_score(labels, flagged[rows])
    return out


def decide(tuning: dict[str, dict[str, float]], forms: dict[str, dict[str, float]]) -> bool:
    """The docstring's rule, printed term by term."""
    raw, blank = forms["raw"], forms["blank_markup"]
    copied = all(blank[f"{form}: copied"] <= MAX_COPIED_FLAGGED for form in FORMS)
    caught = all(
        raw[f"{form}: added"] - blank[f"{form}: added"] <= MAX_CAUGHT_LOSS for form in FORMS
    )
    print(
        f"rule: copied at most {MAX_COPIED_FLAGGED} flagged in every form: {copied}; invented "
        f"sentences caught within {MAX_CAUGHT_LOSS}: {caught}"
    )
    return tuning_holds(tuning["raw"], tuning["blank_markup"]) and copied and caught


def confirm(
    written: dict[str, dict[str, float]],
    variant: str,
    exempt: tuple[str, ...] = (),
    forms: tuple[str, ...] = tuple(FORMS),
) -> bool:
    """The corrected rule's terms (a)-(c) for ``variant`` on the helpers' sets in ``forms``
    (those in ``exempt`` skip term (b)), printed term by term."""
    raw, new = written["raw"], written[variant]
    copied = all(new[f"{form}: copied"] <= MAX_COPIED_FLAGGED for form in forms)
    hidden = [
        f"{form}: {kind}"
        for form in forms
        if form not in exempt
        for kind in ("changed_fact", "added_claim")
        if new[f"{form}: {kind}"] < new[f"plain: {kind}"] - MAX_CAUGHT_LOSS
    ]
    held = all(new[f"{form}: BA"] >= raw[f"{form}: BA"] - MAX_BA_LOSS for form in forms)
    print(
        f"{variant}: copied at most {MAX_COPIED_FLAGGED} flagged in every form: {copied}; "
        f"formatting hides no wrong answer (within {MAX_CAUGHT_LOSS} of plain): "
        f"{not hidden} {hidden}; BA in every form within {MAX_BA_LOSS} of the raw reading's: "
        f"{held}"
    )
    return copied and not hidden and held


def locked_figures(run: Any, data: dict[str, Any], variant: str) -> dict[str, float]:
    """The locked part under ``variant``, its models fitted on the whole tuning part."""
    fit_on, score_on = VARIANTS[variant]
    fitted = fit_recipe(data[fit_on], run.tuning, SHIPPED_RESPONSE, **SHIPPED)
    scored = score_answers(data[score_on], fitted, run.locked)
    return figures(data[score_on], run.examples, run.locked, scored)


def main() -> None:
    run = setup(__doc__.split("\n")[0])
    data = {"raw": run.data}
    for reading in (
        "blank_markup",
        "blank_markup_no_lists",
        "blank_markup_filler",
        "lexical_no_lists",
    ):
        data[reading] = load(run.examples, run.args.embedding_model, reading)
    tuning = tuning_figures(run, data)
    show(f"tuning part, mean of GroupKFold and fold assignments {SEEDS}", tuning)
    forms = form_rates(run, data, formatted(demo_probes()))
    show("demo probes in each form, fitted on the whole tuning part: share flagged", forms)
    ships = decide(tuning, forms)
    print("the rule as written: " + ("ship" if ships else "do not ship"))
    helpers = formatted(written_probes(WRITTEN) + written_probes(WRITTEN_2))
    written = form_rates(run, data, helpers, tuple(VARIANTS))
    show("the helpers' sets in each form: share flagged, BA", written)
    corrected = confirm(written, "blank_markup")
    print("the corrected rule (refit): " + ("ship" if corrected else "do not ship"))
    runtime = runtime_tuning(run, data, "runtime", RUNTIME_SEEDS)
    show(f"tuning part, fitted as written, scored each way, seeds {RUNTIME_SEEDS}", runtime)
    runtime_ships = confirm(written, "runtime", exempt=("greeting and closing",)) and tuning_holds(
        runtime["raw"], runtime["runtime"]
    )
    print("the runtime rule: " + ("ship" if runtime_ships else "do not ship"))
    no_lists = runtime_tuning(run, data, "runtime_no_lists", NO_LISTS_SEEDS)
    show(f"tuning part, fitted as written, scored each way, seeds {NO_LISTS_SEEDS}", no_lists)
    unlisted = tuple(form for form in FORMS if form not in LIST_FORMS)
    shipped = confirm(
        written, "runtime_no_lists", exempt=("greeting and closing",), forms=unlisted
    ) and tuning_holds(no_lists["raw"], no_lists["runtime_no_lists"])
    print("the fourth rule: " + ("ship" if shipped else "do not ship"))
    filler = runtime_tuning(run, data, "runtime_filler", FILLER_SEEDS, base="runtime_no_lists")
    show(f"tuning part, fitted as written, scored each way, seeds {FILLER_SEEDS}", filler)
    filler_ships = confirm(written, "runtime_filler", forms=unlisted) and tuning_holds(
        filler["runtime_no_lists"], filler["runtime_filler"]
    )
    print("the fifth rule: " + ("ship" if filler_ships else "do not ship"))
    lexical = runtime_tuning(run, data, "lexical", LEXICAL_SEEDS)
    show(f"tuning part, fitted as written, scored each way, seeds {LEXICAL_SEEDS}", lexical)
    lexical_ships = confirm(
        written, "lexical", exempt=("greeting and closing",), forms=unlisted
    ) and tuning_holds(lexical["raw"], lexical["lexical"])
    print(
        "the sixth rule, before its cost and the locked part: "
        + ("holds" if lexical_ships else "fails")
    )
    result: dict[str, object] = {
        "seeds": SEEDS,
        "tuning": tuning,
        "forms": forms,
        "ships_by_the_rule_as_written": ships,
        "written_forms": written,
        "ships_by_the_corrected_rule": corrected,
        "runtime_seeds": RUNTIME_SEEDS,
        "runtime_tuning": runtime,
        "runtime_ships": runtime_ships,
        "no_lists_seeds": NO_LISTS_SEEDS,
        "no_lists_tuning": no_lists,
        "runtime_no_lists_ships": shipped,
        "filler_seeds": FILLER_SEEDS,
        "filler_tuning": filler,
        "runtime_filler_ships": filler_ships,
        "lexical_seeds": LEXICAL_SEEDS,
        "lexical_tuning": lexical,
        "lexical_holds": lexical_ships,
    }
    if run.args.locked:
        shown = ("raw", "runtime_no_lists", "runtime_filler", "lexical")
        result["locked"] = {v: locked_figures(run, data, v) for v in shown}
        show("locked part, fitted on the whole tuning part", result["locked"])  # type: ignore[arg-type]
    suffix = f"_{run.args.embedding_model}" if run.args.embedding_model else ""
    out = RESULTS / f"faith_answer_markup{suffix}.json"
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
