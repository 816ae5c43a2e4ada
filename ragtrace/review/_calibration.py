"""Fit the faithfulness verdict to your own traffic, from the review queue's labels.

The shipped verdict thresholds were chosen on public labelled sets (BENCHMARKS.md). On traffic
unlike them (short paraphrased answers, another domain's wording) the detector may still rank
answers well while its cut sits in the wrong place: too many alerts, or too few. People who
label the queue's items already say which answers hold a hallucination; this module turns
those labels into per-calibration verdict thresholds (``Faithfulness(thresholds=...)``), and
says how much they would help on labels they were not chosen on.

``labelled_scores(store)`` reads the latest label of each labelled item that has a
``faithfulness`` (or ``hallucination``) score from the response-level detector: ``bad`` with
failure type ``hallucination`` is a hallucinated answer, ``good`` a faithful one; every other
label (another failure type, ``bad`` without a type, ``unsure``) and every item without a
usable score is skipped and counted by reason. By default only items the review rules queued
as a ``random_sample`` are read: items queued because a score failed over-represent the
answers near and past the current cut, which pulls a threshold fitted on them.

``fit_thresholds(rows)`` then works per calibration (``details["calibration"]``: ``qa``,
``short_qa``, ``summary``, ``data2txt``) with at least ``min_each`` labels of each kind
(``FitOptions``). The candidate cut on the hallucination probability is the one with the best
balanced accuracy on all the labels; ``folds``-fold cross-validation (the cut chosen on the
other folds, each label scored once by a cut chosen without it) estimates how it does on labels
it was not chosen on, beside the current verdicts on the same labels: balanced accuracy, the
share of faithful answers flagged (false alarms) and of hallucinated ones caught. A cut is
proposed only where the held-out gain in balanced accuracy is at least ``min_gain`` and at least
twice its standard error; elsewhere the current threshold stays. With ``max_false_alarms``
the candidate is instead the lowest cut that flags at most that share of the faithful answers
(a team drowning in alerts trades caught hallucinations for fewer of them): always proposed,
its held-out false alarms and catches shown, so the trade is visible before it is made.

A threshold moves the verdict, not the ranking: where the detector cannot tell the two kinds of
answer apart (docs/decisions/faithfulness-detector-experiments.md: short paraphrases against
changed facts), no cut fixes it, and the report says so by proposing none.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from ragtrace.review._items import QueueFilter, ReviewItem, StoredLabel
from ragtrace.review._sql_store import SqlReviewStore

EVALUATORS = ("faithfulness", "hallucination")
DEFAULT_REASON = "random_sample"
MIN_EACH = 20
FOLDS = 5
MIN_GAIN = 0.02
_SEED = 0x5EED


@dataclass(frozen=True, slots=True)
class LabelledScore:
    """One labelled answer: its calibration, the detector's hallucination probability, the
    cut its verdict used (on that probability) and whether the person found a hallucination."""

    item_id: int
    calibration: str
    probability: float
    cut: float
    hallucinated: bool


@dataclass(frozen=True, slots=True)
class Quality:
    """How a set of verdicts fares on labels: balanced accuracy, the share of faithful answers
    flagged (false alarms) and the share of hallucinated ones flagged (caught)."""

    balanced_accuracy: float
    false_alarms: float
    caught: float


@dataclass(frozen=True, slots=True)
class CalibrationFit:
    """What ``fit_thresholds`` found for one calibration.

    Attributes:
        calibration: The calibration's name.
        hallucinated: Labels of hallucinated answers.
        faithful: Labels of faithful answers.
        current_cut: The cut the verdicts used (the most common among the labels).
        now: The verdicts as given, on all the labels (None without both kinds).
        ranking: The AUROC of the hallucination probability on the labels (None without both
            kinds): how well the detector orders your answers, whatever the cut. Near 0.5 no
            cut can help; a cut can only move along this ranking.
        held_out: The re-chosen cut's verdicts, each label scored by a cut chosen without its
            fold (None without enough labels): compare it with ``now``.
        proposed_cut: The cut to use, or None where too few labels or too little gain.
        note: Why nothing is proposed, or what is.
    """

    calibration: str
    hallucinated: int
    faithful: int
    current_cut: float | None
    now: Quality | None
    ranking: float | None = None
    held_out: Quality | None = None
    proposed_cut: float | None = None
    note: str = ""


@dataclass
class LabelledSet:
    """The usable labelled answers and how many labels were skipped, by reason."""

    rows: list[LabelledScore] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)

    def skipped_text(self) -> str:
        """The skipped labels as "3 unsure, 1 bad: pii", most common first ("none")."""
        return ", ".join(f"{n} {why}" for why, n in self.skipped.most_common()) or "none"


def _usable_score(item: ReviewItem, evaluator: str) -> tuple[str, float, float] | str:
    """(calibration, hallucination probability, cut) of ``item``'s score, or why not."""
    stored = item.score_named(evaluator)
    if stored is None:
        return f"no {evaluator} score"
    score = stored.score
    details = score.details or {}
    probability = details.get("hallucination_probability")
    key = details.get("calibration")
    if (
        details.get("scoring", "response") != "response"
        or isinstance(probability, bool)
        or not isinstance(probability, int | float)
        or not math.isfinite(probability)
    ):
        return "no response-level probability"
    # Imported here: the evaluators package costs every ``ragtrace review`` command ~18 ms,
    # and the CLI reads this module's defaults at start.
    from ragtrace.evaluators._faithfulness.response import CALIBRATIONS

    if key not in CALIBRATIONS:
        return "no calibration in the score's details"
    threshold = score.threshold
    if threshold is None or not math.isfinite(threshold):
        return "no verdict threshold on the score"
    cut = 1.0 - threshold if evaluator == "faithfulness" else threshold
    return str(key), float(probability), cut


def _outcome(stored: StoredLabel) -> bool | str:
    """True: hallucinated; False: faithful; a string: why the label is skipped."""
    label = stored.label
    if label.verdict == "good":
        return False
    if label.verdict == "bad" and label.failure_type == "hallucination":
        return True
    if label.verdict == "bad":
        return f"bad: {label.failure_type or 'no failure type'}"
    return label.verdict


def labelled_scores(
    store: SqlReviewStore,
    evaluator: str = "faithfulness",
    reason: str | None = DEFAULT_REASON,
    app: str | None = None,
    since_ns: int | None = None,
) -> LabelledSet:
    """The labelled items' answers usable for calibration (module docstring); ``reason=None``
    reads every labelled item, whatever queued it; ``app`` and ``since_ns`` (requests that
    ended then or later, UTC ns) narrow them."""
    if evaluator not in EVALUATORS:
        raise ValueError(f"evaluator must be one of {', '.join(EVALUATORS)}, got {evaluator!r}")
    out = LabelledSet()
    filters = QueueFilter(labelled="yes", reason=reason, app=app, since_ns=since_ns)
    for item, stored in store.labelled(filters):
        outcome = _outcome(stored)
        if isinstance(outcome, str):
            out.skipped[outcome] += 1
            continue
        usable = _usable_score(item, evaluator)
        if isinstance(usable, str):
            out.skipped[usable] += 1
            continue
        key, probability, cut = usable
        out.rows.append(LabelledScore(item.id, key, probability, cut, outcome))
    return out


def quality(truth: Sequence[bool], flagged: Sequence[bool]) -> Quality:
    """``Quality`` of verdicts ``flagged`` against ``truth`` (both kinds present)."""
    positives = [f for t, f in zip(truth, flagged, strict=True) if t]
    negatives = [f for t, f in zip(truth, flagged, strict=True) if not t]
    caught = sum(positives) / len(positives)
    false_alarms = sum(negatives) / len(negatives)
    return Quality((caught + 1.0 - false_alarms) / 2.0, false_alarms, caught)


def auroc(rows: Sequence[LabelledScore]) -> float:
    """The chance that a hallucinated answer has a higher probability than a faithful one
    (ties count half), by ranks: the Mann-Whitney statistic over both counts."""
    ordered = sorted(rows, key=lambda r: r.probability)
    rank_sum, k = 0.0, 0
    while k < len(ordered):
        end = k
        while end + 1 < len(ordered) and ordered[end + 1].probability == ordered[k].probability:
            end += 1
        middle = (k + end) / 2.0 + 1.0  # the tied rows' mean rank, from 1
        rank_sum += middle * sum(r.hallucinated for r in ordered[k : end + 1])
        k = end + 1
    positives = sum(r.hallucinated for r in rows)
    negatives = len(rows) - positives
    return (rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives)


def gain_and_error(
    truth: Sequence[bool], before: Sequence[bool], after: Sequence[bool]
) -> tuple[float, float]:
    """(balanced accuracy of ``after`` minus that of ``before``, its standard error): each
    label's change in being right, averaged per kind; the error from their spread."""
    halves = []
    for kind in (True, False):
        change = [
            float(a == t) - float(b == t)
            for t, b, a in zip(truth, before, after, strict=True)
            if t is kind
        ]
        mean = sum(change) / len(change)
        spread = sum((c - mean) ** 2 for c in change) / max(len(change) - 1, 1)
        halves.append((mean, spread / len(change)))
    gain = (halves[0][0] + halves[1][0]) / 2.0
    return gain, math.sqrt(halves[0][1] + halves[1][1]) / 2.0


def _sweep(rows: Sequence[LabelledScore]) -> list[tuple[float, float, float]]:
    """(cut, false alarms, caught) for every cut midway between neighbouring distinct
    probabilities of ``rows``, ascending (flagged above the cut)."""
    positives = sum(r.hallucinated for r in rows)
    negatives = len(rows) - positives
    ordered = sorted(rows, key=lambda r: r.probability)
    out = []
    passed_faithful = missed = 0  # at or below the cut
    for k, row in enumerate(ordered[:-1]):
        missed += row.hallucinated
        passed_faithful += not row.hallucinated
        following = ordered[k + 1].probability
        if following != row.probability:
            cut = min(max((row.probability + following) / 2.0, 0.001), 0.999)
            out.append((cut, 1.0 - passed_faithful / negatives, (positives - missed) / positives))
    return out


def best_cut(
    rows: Sequence[LabelledScore], prefer: float, max_false_alarms: float | None = None
) -> float:
    """The cut on the probability (flagged above it), midway between neighbouring distinct
    probabilities of ``rows``: the one with the best balanced accuracy (among equals, the one
    nearest ``prefer``) or, with ``max_false_alarms``, the lowest that flags at most that share
    of the faithful answers. ``prefer`` where ``rows`` lack a kind or a cut."""
    if all(r.hallucinated for r in rows) or not any(r.hallucinated for r in rows):
        return prefer
    cuts = _sweep(rows)
    if max_false_alarms is not None:
        within = [cut for cut, alarms, _ in cuts if alarms <= max_false_alarms]
        return within[0] if within else min(max(r.probability for r in rows), 0.999)
    best = (-1.0, 0.0, prefer)
    for cut, alarms, caught in cuts:
        best = max(best, (round((caught + 1.0 - alarms) / 2.0, 12), -abs(cut - prefer), cut))
    return best[2]


def _folds(rows: Sequence[LabelledScore], folds: int) -> list[list[int]]:
    """Indices of ``rows`` dealt into ``folds`` folds, each kind spread evenly, in an order
    fixed by the item ids (the same labels give the same folds)."""
    out: list[list[int]] = [[] for _ in range(folds)]
    for kind in (True, False):
        members = sorted(
            (i for i, r in enumerate(rows) if r.hallucinated is kind),
            key=lambda i: (rows[i].item_id * 2654435761 + _SEED) % 2**32,
        )
        for n, i in enumerate(members):
            out[n % folds].append(i)
    return out


def _fit_one(
    key: str,
    rows: list[LabelledScore],
    options: FitOptions,
) -> CalibrationFit:
    truth = [r.hallucinated for r in rows]
    hallucinated, faithful = sum(truth), len(truth) - sum(truth)
    current = Counter(round(r.cut, 4) for r in rows).most_common(1)[0][0]
    given = [r.probability > r.cut for r in rows]
    both = hallucinated and faithful
    now = quality(truth, given) if both else None
    fit = CalibrationFit(key, hallucinated, faithful, current, now, auroc(rows) if both else None)
    if min(hallucinated, faithful) < options.min_each:
        need = [
            f"{options.min_each - n} more {kind}"
            for n, kind in ((hallucinated, "hallucinated"), (faithful, "faithful"))
            if n < options.min_each
        ]
        return replace(fit, note=f"too few labels: needs {' and '.join(need)}")
    budget = options.max_false_alarms
    predicted = [False] * len(rows)
    for held in _folds(rows, options.folds):
        kept = set(held)
        cut = best_cut([r for i, r in enumerate(rows) if i not in kept], current, budget)
        for i in held:
            predicted[i] = rows[i].probability > cut
    held_out = quality(truth, predicted)
    fit = replace(fit, held_out=held_out)
    chosen = round(best_cut(rows, current, budget), 3)
    if budget is not None:
        note = f"the lowest cut flagging at most {budget:.0%} of faithful answers"
        return replace(fit, proposed_cut=chosen, note=note)
    gain, error = gain_and_error(truth, given, predicted)
    if gain < options.min_gain or gain <= 2.0 * error:
        note = (
            f"keeps the current cut: held-out gain {gain:+.3f} (standard error {error:.3f}) "
            f"is not both {options.min_gain} or more and twice its error"
        )
        return replace(fit, note=note)
    note = f"held-out gain {gain:+.3f} (standard error {error:.3f})"
    return replace(fit, proposed_cut=chosen, note=note)


@dataclass(frozen=True, slots=True)
class FitOptions:
    """How ``fit_thresholds`` works (module docstring).

    Attributes:
        min_each: Labels of each kind a calibration needs.
        folds: Cross-validation folds of the held-out estimate.
        min_gain: Held-out balanced accuracy a new cut must add (and twice its standard error).
        max_false_alarms: Instead of the best balanced accuracy, the lowest cut that flags at
            most this share of the faithful answers (always proposed, with what it catches).
    """

    min_each: int = MIN_EACH
    folds: int = FOLDS
    min_gain: float = MIN_GAIN
    max_false_alarms: float | None = None

    def __post_init__(self) -> None:
        if self.folds < 2 or self.min_each < self.folds:
            raise ValueError(
                f"need folds >= 2 and min_each >= folds ({self.folds}); got {self.min_each}"
            )
        budget = self.max_false_alarms
        if budget is not None and not 0.0 <= budget < 1.0:
            raise ValueError(f"max_false_alarms must be in [0, 1), got {budget}")


def fit_thresholds(
    rows: Iterable[LabelledScore], options: FitOptions | None = None
) -> list[CalibrationFit]:
    """One ``CalibrationFit`` per calibration among ``rows`` (module docstring)."""
    options = options or FitOptions()
    by_key: dict[str, list[LabelledScore]] = {}
    for row in rows:
        by_key.setdefault(row.calibration, []).append(row)
    return [_fit_one(k, by_key[k], options) for k in sorted(by_key)]


def proposed_thresholds(fits: Iterable[CalibrationFit]) -> dict[str, float]:
    """The ``thresholds=`` option the fits propose (empty: keep the shipped verdict)."""
    return {f.calibration: f.proposed_cut for f in fits if f.proposed_cut is not None}
