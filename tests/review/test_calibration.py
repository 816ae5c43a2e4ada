"""``ragtrace review calibrate``: the faithfulness verdict fitted to the queue's labels.

The end-to-end test runs the real ``Faithfulness`` evaluator, queues its scores through the real
``ReviewSink`` into SQLite, labels them as a reviewer would who accepts paraphrases the shipped
cut flags, and checks that the proposed thresholds, given back to the evaluator, reproduce the
reviewer's verdicts. The others pin the reader (on SQLite and PostgreSQL) and the fit.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest
import yaml

from ragtrace._cli import main as ragtrace_main
from ragtrace._model import Chunk, Evaluation, RagRecord, Score
from ragtrace._runtime.evaluation_settings import settings_from_mapping
from ragtrace.evaluators._faithfulness import Faithfulness, Hallucination
from ragtrace.review._calibration import (
    FitOptions,
    LabelledScore,
    auroc,
    best_cut,
    fit_thresholds,
    gain_and_error,
    labelled_scores,
    proposed_thresholds,
    quality,
)
from ragtrace.review._calibration_report import settings_snippet
from ragtrace.review._items import Label
from ragtrace.review._rules import ReviewRules
from ragtrace.review._sink import ReviewSink
from ragtrace.review._store import SqlReviewStore, open_store
from tests.review.conftest import T0, make_item, score
from tests.review.test_cli import cli

FACTS = [
    "The Contoso R7 router supports Wi-Fi 6 on the 2.4 GHz and 5 GHz bands.",
    "Its firmware updates install automatically every Sunday at 3 in the morning.",
    "A factory reset takes about four minutes and erases every saved network.",
    "The guest network is switched off by default and can be enabled in the app.",
    "The warranty lasts two years from the date of purchase.",
    "Parental controls can pause internet access for each device on a schedule.",
    "The router has four gigabit Ethernet ports and one USB 3.0 port.",
    "Support is available by chat from 8 in the morning to 8 at night on weekdays.",
]
PARAPHRASES = [
    "It handles Wi-Fi 6 across both the 2.4 and 5 GHz bands.",
    "Every Sunday at 3 in the morning, new firmware is installed on its own.",
    "Resetting to factory settings needs roughly four minutes and wipes all stored networks.",
    "Out of the box the guest network is off; you can turn it on from the app.",
    "You are covered for two years after you buy it.",
    "You can schedule pauses of internet access per device with parental controls.",
    "There are four gigabit Ethernet sockets and a single USB 3.0 port.",
    "Chat support runs weekdays between 8 in the morning and 8 at night.",
]
INVENTED = [
    "The Contoso R7 router supports Wi-Fi 7 on the 6 GHz band.",
    "Its firmware updates install automatically every Monday at 5 in the morning.",
    "A factory reset takes about ten minutes and keeps your saved networks.",
    "The warranty lasts five years from the date of purchase.",
    "Parental controls can block individual websites and apps for each device.",
    "The router has eight gigabit Ethernet ports and two USB-C ports.",
    "Support is available by phone around the clock, including weekends.",
]
PASSAGE = " ".join(FACTS)


def records() -> list[RagRecord]:
    answers = FACTS + PARAPHRASES + INVENTED
    return [
        RagRecord(
            trace_id=f"{i + 1:032x}",
            span_id=f"{i + 1:016x}",
            query="What should I know about the router?",
            response=answer,
            chunks=[Chunk(PASSAGE, id="r7-manual")],
        )
        for i, answer in enumerate(answers)
    ]


def row(item_id: int, p: float, hallucinated: bool, cut: float = 0.25) -> LabelledScore:
    return LabelledScore(item_id, "short_qa", p, cut, hallucinated)


def test_a_reviewers_labels_become_thresholds_that_reproduce_their_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "review.db"
    evaluator = Faithfulness()
    batch = records()
    scores = [s[0] for s in evaluator.evaluate_batch(batch)]
    probability = [s.details["hallucination_probability"] for s in scores]
    assert {s.details["calibration"] for s in scores} == {"short_qa"}
    cut = 1.0 - scores[0].threshold
    flagged = sorted(p for p in probability if p > cut)
    assert len(flagged) >= 10, "the shipped cut flags the paraphrases this scenario is about"
    boundary = flagged[len(flagged) // 2 - 1]  # the reviewer accepts the lower half of them
    with open_store(str(db)) as store:
        sink = ReviewSink(store, ReviewRules(sample_rate=1.0))
        now = time.time_ns()
        for record, s in zip(batch, scores, strict=True):
            sink.export(record, [Evaluation("faithfulness", (s,), now, now)])
        assert store.count() == len(batch)
        for item in store.page(limit=len(batch)).items:
            stored = item.score_named("faithfulness")
            assert stored is not None
            p = stored.score.details["hallucination_probability"]
            label = Label("good") if p <= boundary else Label("bad", "hallucination")
            store.add_label(item.id, label)

    code, out, err = cli(db, "calibrate", "--min-labels", "5")
    assert (code, err) == (0, "")
    assert f"{len(batch)} labelled answers with a faithfulness score" in out
    assert "held-out gain +" in out and "thresholds: {short_qa: " in out

    code, out, _ = cli(db, "calibrate", "--min-labels", "5", "--json")
    report = json.loads(out)
    (fit,) = report["fits"]
    proposed = report["thresholds"]["short_qa"]
    assert fit["hallucinated"] + fit["faithful"] == len(batch)
    assert fit["ranking"] == 1.0  # the reviewer's boundary is a cut on the same probability
    now, held_out = fit["now"], fit["held_out"]
    assert now["caught"] == 1.0 and now["false_alarms"] > 0.2  # the paraphrases
    assert held_out["balanced_accuracy"] >= now["balanced_accuracy"] + 0.02
    assert held_out["false_alarms"] < now["false_alarms"]
    assert boundary < proposed < min(p for p in probability if p > boundary)

    refitted = Faithfulness(thresholds=report["thresholds"])
    verdicts = [s[0].passed for s in refitted.evaluate_batch(batch)]
    assert verdicts == [p <= boundary for p in probability]
    again = Hallucination(thresholds=report["thresholds"]).evaluate(batch[-1])[0]
    assert again.threshold == pytest.approx(proposed)

    # A team that wants no false alarm at all on these labels, and sees what it then misses.
    code, out, _ = cli(db, "calibrate", "--min-labels", "5", "--max-false-alarms", "0", "--json")
    strict = json.loads(out)
    assert strict["options"]["max_false_alarms"] == 0.0
    cut = strict["thresholds"]["short_qa"]
    assert cut > boundary and strict["fits"][0]["note"].endswith("at most 0% of faithful answers")
    flagged = [
        not s[0].passed for s in Faithfulness(thresholds={"short_qa": cut}).evaluate_batch(batch)
    ]
    assert not any(f for f, p in zip(flagged, probability, strict=True) if p <= boundary)
    with pytest.raises(SystemExit) as stopped:  # refused as the flag is read: one line, exit 2
        ragtrace_main(["review", "calibrate", "--db", str(db), "--max-false-alarms", "1.5"])
    said = capsys.readouterr().err
    assert stopped.value.code == 2 and len(said.strip().splitlines()) == 1, said
    assert "--max-false-alarms: must be >= 0 and < 1, got 1.5" in said


def test_a_long_answers_score_keeps_what_calibration_reads(tmp_path: Path) -> None:
    # 40 claims with their closest sentences: details far past the sink's 8,000 characters.
    note = "which the manual repeats with notes on safety, warranty terms, cabling and placement"
    answer = " ".join(f"{fact[:-1]}, {note}, section {i}." for i, fact in enumerate(FACTS * 5))
    record = RagRecord(
        trace_id="f" * 32,
        span_id="f" * 16,
        query="Tell me everything about the router.",
        response=answer,
        chunks=[Chunk(PASSAGE * 3, id="r7-manual")],
    )
    (result,) = Faithfulness().evaluate(record)
    assert len(json.dumps(result.details)) > 8000
    with open_store(str(tmp_path / "review.db")) as store:
        ReviewSink(store, ReviewRules(sample_rate=1.0)).export(
            record, [Evaluation("faithfulness", (result,), 0, 0)]
        )
        (item,) = store.page().items
        store.add_label(item.id, Label("bad", "hallucination"))
        (read,) = labelled_scores(store).rows
    probability = result.details["hallucination_probability"]
    assert (read.calibration, read.probability) == (result.details["calibration"], probability)
    assert read.cut == pytest.approx(1.0 - result.threshold) and read.hallucinated


def test_the_reader_counts_every_label_it_cannot_use(store: SqlReviewStore) -> None:
    def faithfulness(p: float, scoring: str = "response", key: str = "qa") -> Score:
        details = {"hallucination_probability": p, "calibration": key, "scoring": scoring}
        return score("faithfulness", 1 - p, p <= 0.4, kind="model", threshold=0.6, details=details)

    cases = [
        (faithfulness(0.9), ("random_sample",), Label("bad", "hallucination")),
        (faithfulness(0.2), ("random_sample",), Label("good")),
        (faithfulness(0.7), ("random_sample",), Label("bad", "irrelevant_retrieval")),
        (faithfulness(0.7), ("random_sample",), Label("bad")),
        (faithfulness(0.5), ("random_sample",), Label("unsure")),
        (faithfulness(0.8, scoring="claims"), ("random_sample",), Label("good")),
        (faithfulness(0.8, key="poetry"), ("random_sample",), Label("good")),
        (score("looping", 0.1, True), ("random_sample",), Label("good")),
        (faithfulness(0.95), ("score_failed",), Label("bad", "hallucination")),
    ]
    for n, (s, reasons, label) in enumerate(cases, 1):
        item_id = store.enqueue(make_item(n, reasons=reasons, scores=((s.name, s),)))
        store.add_label(item_id, label)
    store.enqueue(make_item(99, reasons=("random_sample",)))  # never labelled

    read = labelled_scores(store)
    assert sorted((r.probability, r.hallucinated, r.cut) for r in read.rows) == [
        (0.2, False, pytest.approx(0.4)),
        (0.9, True, pytest.approx(0.4)),
    ]
    assert read.skipped == {
        "bad: irrelevant_retrieval": 1,
        "bad: no failure type": 1,
        "unsure": 1,
        "no response-level probability": 1,
        "no calibration in the score's details": 1,
        "no faithfulness score": 1,
    }
    later = labelled_scores(store, since_ns=T0 + 2 * 10**9)  # items 2 on: 1 ended before
    assert [r.probability for r in later.rows] == [0.2]
    assert labelled_scores(store, app="bank").rows == []
    every = labelled_scores(store, reason=None)
    assert sorted(r.probability for r in every.rows) == [0.2, 0.9, 0.95]
    other = labelled_scores(store, "hallucination")  # the label is read first
    assert other.rows == [] and other.skipped["no hallucination score"] == 5
    with pytest.raises(ValueError, match="evaluator must be one of faithfulness, hallucination"):
        labelled_scores(store, "groundedness")


def test_the_cut_moves_only_where_held_out_labels_gain() -> None:
    # Labels split at 0.6 while the verdicts cut at 0.25: a better cut, clearly.
    grid = [i / 80 for i in range(1, 80)]
    shifted = [row(i, p, p > 0.6) for i, p in enumerate(grid)]
    (fit,) = fit_thresholds(shifted)
    assert fit.proposed_cut is not None and 0.6 <= fit.proposed_cut < 0.6125
    assert fit.current_cut == 0.25
    truth = [r.hallucinated for r in shifted]
    assert fit.now == quality(truth, [r.probability > 0.25 for r in shifted])
    assert fit.now.caught == 1.0 and fit.now.false_alarms == pytest.approx(28 / 48)
    assert fit.held_out is not None and fit.held_out.balanced_accuracy > 0.95
    assert fit.note.startswith("held-out gain +0.2")
    assert proposed_thresholds([fit]) == {"short_qa": fit.proposed_cut}

    # Labels that agree with the current cut: nothing to change.
    agreeing = [row(i, p, p > 0.25) for i, p in enumerate(grid)]
    (kept,) = fit_thresholds(agreeing)
    assert kept.proposed_cut is None and kept.note.startswith("keeps the current cut")
    assert proposed_thresholds([kept]) == {}

    # Probabilities that say nothing of the labels, 20 of each kind: the re-chosen cut gains
    # 0.125 on held-out labels here by chance, under twice its standard error (0.073).
    rng = random.Random(6)
    noisy = [row(i, rng.random(), i % 2 == 0, cut=0.5) for i in range(40)]
    (unsure,) = fit_thresholds(noisy)
    assert unsure.proposed_cut is None
    assert "gain +0.125 (standard error 0.073)" in unsure.note
    # No gain at all is never a reason to move, whatever min_gain says.
    flat = [row(i, 0.3 if i % 2 else 0.7, i % 2 == 0, cut=0.5) for i in range(40)]
    (same,) = fit_thresholds(flat, FitOptions(min_gain=0.0))
    assert same.proposed_cut is None and "gain +0.000" in same.note


def test_the_ranking_is_the_share_of_pairs_in_order() -> None:
    rows = [row(1, 0.4, True), row(2, 0.8, True), row(3, 0.2, False), row(4, 0.6, False)]
    assert auroc(rows) == pytest.approx(3 / 4)  # 0.4 < 0.6 is the one pair out of order
    assert auroc([row(1, 0.9, True), row(2, 0.1, False)]) == 1.0
    assert auroc([row(1, 0.1, True), row(2, 0.9, False)]) == 0.0
    assert auroc([row(1, 0.5, True), row(2, 0.5, False), row(3, 0.5, True)]) == 0.5
    (fit,) = fit_thresholds(rows * 10)
    assert fit.ranking == pytest.approx(3 / 4)


def test_the_gain_and_its_error_come_from_each_labels_change() -> None:
    truth = [True, True, False, False]
    assert gain_and_error(truth, [False, False, True, True], truth) == (1.0, 0.0)
    gain, error = gain_and_error(truth, [True, False, False, False], [True, True, False, True])
    # Hallucinated: +0.5 on average (changes 0, 1); faithful: -0.5 (0, -1); each variance 0.5.
    assert gain == pytest.approx(0.0) and error == pytest.approx((0.25 + 0.25) ** 0.5 / 2)


def test_a_false_alarm_budget_picks_the_lowest_cut_within_it() -> None:
    faithful = [row(i, i / 10, False) for i in range(1, 10)]  # 0.1 .. 0.9
    hallucinated = [row(20 + i, 0.5 + i / 20, True) for i in range(1, 10)]  # 0.55 .. 0.95
    rows = faithful + hallucinated
    # 20% of 9 faithful answers: one may be flagged (0.9); the next value above 0.8 is 0.85.
    assert best_cut(rows, 0.25, max_false_alarms=0.2) == pytest.approx(0.825)
    assert best_cut(rows, 0.25, max_false_alarms=0.0) == pytest.approx(0.925)
    assert best_cut(faithful, 0.25, max_false_alarms=0.0) == 0.25  # one kind: unchanged
    many = [row(i, (i % 50) / 50, i >= 50) for i in range(100)]
    (fit,) = fit_thresholds(many, FitOptions(max_false_alarms=0.1))
    assert fit.proposed_cut is not None and fit.note.endswith("at most 10% of faithful answers")
    assert fit.held_out is not None
    with pytest.raises(ValueError, match="max_false_alarms must be in"):
        FitOptions(max_false_alarms=1.0)


def test_too_few_labels_say_how_many_more_are_needed() -> None:
    rows = [row(i, 0.9, True) for i in range(25)] + [row(100 + i, 0.1, False) for i in range(7)]
    rows += [LabelledScore(200, "summary", 0.5, 0.4, True)]
    short, summary = sorted(fit_thresholds(rows), key=lambda f: f.calibration != "short_qa")
    assert short.proposed_cut is None and short.note == "too few labels: needs 13 more faithful"
    assert short.held_out is None and short.now is not None and short.now.caught == 1.0
    assert summary.note == "too few labels: needs 19 more hallucinated and 20 more faithful"
    assert summary.now is None
    with pytest.raises(ValueError, match="min_each >= folds"):
        FitOptions(min_each=3)


def test_the_best_cut_is_midway_nearest_the_current_one_and_order_free() -> None:
    rows = [row(1, 0.2, False), row(2, 0.4, False), row(3, 0.6, True), row(4, 0.8, True)]
    assert best_cut(rows, 0.25) == pytest.approx(0.5)
    assert best_cut(list(reversed(rows)), 0.25) == pytest.approx(0.5)
    # Two equally good cuts: the one nearer the current cut wins.
    tied = [row(1, 0.2, False), row(2, 0.4, True), row(3, 0.6, False), row(4, 0.8, True)]
    assert best_cut(tied, 0.25) == pytest.approx(0.3)
    assert best_cut(tied, 0.75) == pytest.approx(0.7)
    assert best_cut([row(1, 0.5, False), row(2, 0.5, True)], 0.25) == 0.25
    assert best_cut([row(1, 0.5, True)], 0.4) == 0.4


def test_the_thresholds_option_is_checked_and_reaches_settings_files() -> None:
    for bad, message in [
        ({"poetry": 0.5}, "unknown calibration 'poetry'"),
        ({"qa": True}, "must be a number"),
        ({"qa": "0.5"}, "must be a number"),
        ({"qa": 1.0}, "strictly between 0 and 1"),
        ({"qa": float("nan")}, "strictly between 0 and 1"),
        (["qa"], "must map a calibration to a number"),
    ]:
        with pytest.raises(ValueError, match=message):
            Faithfulness(thresholds=bad)
    for clash in ({"threshold": 0.5}, {"scoring": "claims"}):
        with pytest.raises(ValueError, match="cannot be combined"):
            Faithfulness(thresholds={"qa": 0.4}, **clash)

    snippet = settings_snippet("faithfulness", {"summary": 0.3, "short_qa": 0.41})
    assert snippet == (
        "evaluators:\n  - name: faithfulness\n    thresholds: {short_qa: 0.41, summary: 0.3}\n"
    )
    (built,) = settings_from_mapping(yaml.safe_load(snippet)).evaluators
    (result,) = built.evaluate(records()[0])  # a short answer: the short_qa cut
    assert result.threshold == pytest.approx(1.0 - 0.41)
    assert "flagged above 0.41" in (result.explanation or "")


def test_calibrate_without_usable_labels_fails_with_what_it_skipped(tmp_path: Path) -> None:
    db = tmp_path / "review.db"
    with open_store(str(db)) as store:
        item_id = store.enqueue(make_item(1, reasons=("random_sample",)))
        store.add_label(item_id, Label("unsure"))
    code, out, err = cli(db, "calibrate")
    assert (code, out) == (1, "")
    assert (
        "no labelled answer to calibrate on (items queued as random_sample; skipped: 1 unsure)"
        in err
    )
    code, _, err = cli(db, "calibrate", "--min-labels", "1")
    assert code == 2 and "min_each >= folds" in err
    code, _, err = cli(db, "calibrate", "--since", "last tuesday")
    assert code == 2 and "since: not a time" in err
    code, _, err = cli(db, "calibrate", "--since", "2028-01-01")  # the item ended in 2027
    assert code == 1 and "requests since 2028-01-01T00:00:00; skipped: none" in err
