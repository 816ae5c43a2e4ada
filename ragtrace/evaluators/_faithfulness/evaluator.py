"""The ``faithfulness`` and ``hallucination`` evaluators: records in, Scores out.

The family, its detector and its options are explained in the package's docstring
(``ragtrace.evaluators._faithfulness``). Here each record's answer is cut into claims (read past
announcements, and past markup with ``read_past_markup=True``), every claim of a batch is checked
in one call to the detector (or to an NLI model), and each record gets one Score: the
response-level probability (or, with ``scoring="claims"``, the claim ratio) with the verdict of
its calibration. ``details`` holds ``hallucination_probability``, ``claim_ratio``, ``claims``
(text, support probability, verdict, closest passage sentence), ``task``, ``calibration``,
``markup_ignored`` and ``truncated``. An answer with no sentence has nothing to check:
faithfulness 1.0, hallucination 0.0, ``details["claims"] == []``. The passages are the chunks
the answer's model call saw when capture knows them (``ragtrace.evaluators._answer_context``;
the explanation then says so and ``details["judged_chunks"]`` lists them).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._answer_context import AnswerContext, answer_context
from ragtrace.evaluators._base import BatchEvaluator, positive_int
from ragtrace.evaluators._faithfulness.claims import named_splitter
from ragtrace.evaluators._faithfulness.detector import (
    DEFAULT_DETECTOR,
    SUPPORT_THRESHOLD,
    ClaimCheck,
    SupportDetector,
)
from ragtrace.evaluators._faithfulness.markup import blank_announcements, blank_markup
from ragtrace.evaluators._faithfulness.response import (
    CALIBRATIONS,
    TASKS,
    calibration,
    record_task,
    task_name,
)

DEFAULT_MAX_CLAIMS = 40
_PREVIEW_CHARS = 300
_MAX_MARKS_LISTED = 20
_DETECTOR_NAMES = {
    "features": "ragtrace-support-lr",
    "crossencoder": "ragtrace-support-crossencoder",
}
SCORING = ("response", "claims")
# Named operating points: verdict thresholds on the hallucination probability by calibration.
# "default" is the shipped per-task verdict (SupportDetector.verdict_threshold); "lenient" was
# chosen on the tuning part to fail at most 3% of the faithful answers of every data set
# (benchmarks/alarms.py; docs/evaluators-online.md gives its rates: it catches few hallucinations).
OPERATING_POINTS: dict[str, dict[str, float | None]] = {
    "default": {},
    "lenient": {"qa": 0.94, "short_qa": 0.96, "summary": 0.97, "data2txt": 0.93},
}
CONVENTIONS = ("ragtrace", "h2o")
H2O_THRESHOLD = 0.75


def verdict_thresholds(thresholds: Mapping[str, float] | None) -> dict[str, float]:
    """``thresholds=`` checked: keys among ``CALIBRATIONS``, values numbers in (0, 1)."""
    if thresholds is None:
        return {}
    if not isinstance(thresholds, Mapping):
        raise ValueError(
            f"thresholds must map a calibration to a number, got {type(thresholds).__name__}"
        )
    out: dict[str, float] = {}
    for key, value in thresholds.items():
        if key not in CALIBRATIONS:
            raise ValueError(
                f"thresholds: unknown calibration {key!r}; use {', '.join(CALIBRATIONS)}"
            )
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"thresholds[{key!r}] must be a number, got {value!r}")
        if not 0.0 < float(value) < 1.0:
            raise ValueError(f"thresholds[{key!r}] must lie strictly between 0 and 1")
        out[key] = float(value)
    return out


class _ClaimSupport(BatchEvaluator):
    """Shared machinery: split claims, check them in one batch, build per-claim details."""

    requires: ClassVar[frozenset[str]] = frozenset({"chunks", "response"})
    kind = "model"
    threshold: float | None = 0.5  # with scoring="claims", an NLI model or threshold= given
    threshold_per_record: ClassVar[bool] = True  # else the response model's, by calibration
    operating_points = OPERATING_POINTS
    batch_size = 16
    timeout_s = 60.0

    def __init__(
        self,
        *,
        support_threshold: float = SUPPORT_THRESHOLD,
        max_claims: int = DEFAULT_MAX_CLAIMS,
        weights: str | None = None,
        embedding_model: str | None = None,
        nli_model: str | None = None,
        nli_label_map: dict[str, int] | None = None,
        threads: int | None = None,
        detector: str = DEFAULT_DETECTOR,
        task: str | None = None,
        scoring: str = "response",
        read_past_markup: bool = False,
        thresholds: Mapping[str, float] | None = None,
        splitter: str | Callable[[str], list[str]] | None = None,
        select_sentences: int | None = None,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            support_threshold: A claim is supported when its probability is at least this.
            max_claims: Most answer sentences checked per record.
            weights: Another weights file for the support detector.
            embedding_model: Another embedding model for the detector's similarity features.
            nli_model: Decide support with this Hugging Face NLI model instead of the detector.
            nli_label_map: Label name -> index for ``nli_model`` when its config lacks names.
            threads: Threads of the model backends.
            detector: ``features`` (default) or ``crossencoder`` (the package's docstring).
            task: ``qa``, ``summary`` or ``data2txt`` for records without a ``ragtrace.task``
                attribute (default: inferred from each record's shape).
            scoring: ``response`` (default: the value is the response-level probability) or
                ``claims`` (the seeds' share of supported claims).
            read_past_markup: Read answers past citation markers, source notes and other
                presentation marks (``markup``: more accurate on answers that carry them,
                slower on those).
            thresholds: Verdict thresholds on the hallucination probability by calibration
                (``qa``, ``short_qa``, ``summary``, ``data2txt``), in place of the shipped ones
                for those keys: what ``ragtrace review calibrate`` fits on your labels.
            splitter: How the answer is cut into claims: ``sentences``, ``clauses``
                (``claims.split_clauses``: also at "and", "but", ";", ", which"), ``claims``
                (``claims.split_claim_parts``: clauses, also at an appositive and a last
                adjunct of place or time) or a function of the text. Default: ``sentences``
                for the response probability (what its models were fitted on), ``claims`` with
                ``scoring="claims"`` (the seeds' ratio, over claims as the seeds cut them).
            select_sentences: Embed only the passage sentences a lexical first stage keeps,
                this many per claim (``ragtrace.evaluators._sentence_selection``); None
                (default) embeds them all.
            **options: ``threshold`` (a number, or an operating point's name: ``"default"``,
                ``"lenient"``), ``batch_size``, ``timeout_s``, ...
        """
        point = options.get("threshold")
        if isinstance(point, str):
            from ragtrace.evaluators._operating_points import choose

            if thresholds is not None:
                raise ValueError("thresholds= and a named threshold= cannot be combined")
            chosen = choose(self.name, self.operating_points, point)
            thresholds = {k: v for k, v in chosen.items() if v is not None} or None
            options = {k: v for k, v in options.items() if k != "threshold"}
        super().__init__(**options)
        if isinstance(point, str):
            self.operating_point = point
        self._fixed_threshold = options.get("threshold") is not None
        if not 0.0 <= support_threshold <= 1.0:
            raise ValueError("support_threshold must be in [0, 1]")
        if max_claims < 1:
            raise ValueError("max_claims must be >= 1")
        if task is not None and task_name(task) is None:
            raise ValueError(
                f"task must be one of {', '.join(TASKS)} (or None to infer), got {task!r}"
            )
        if scoring not in SCORING:
            raise ValueError(f"scoring must be one of {', '.join(SCORING)}, got {scoring!r}")
        self._thresholds = verdict_thresholds(thresholds)
        if self._thresholds and (
            self._fixed_threshold or scoring != "response" or nli_model is not None
        ):
            raise ValueError(
                "thresholds= sets the response model's verdict by calibration: it cannot be "
                "combined with threshold=, scoring='claims' or nli_model="
            )
        self.task = task_name(task)
        self.scoring = scoring
        self.support_threshold = float(support_threshold)
        self.max_claims = int(max_claims)
        self.read_past_markup = bool(read_past_markup)
        # The response models were fitted on sentences; the seeds' ratio counts finer claims.
        default = "claims" if scoring == "claims" else "sentences"
        self.splitter_name = (
            splitter
            if isinstance(splitter, str)
            else (default if splitter is None else getattr(splitter, "__name__", "custom"))
        )
        self.splitter = named_splitter(self.name, splitter, default)
        self._nli_model = nli_model
        self._nli_label_map = nli_label_map
        self._threads = threads
        if select_sentences is not None:
            select_sentences = positive_int(self.name, "select_sentences", select_sentences)
        self.select_sentences = select_sentences
        self._detector = SupportDetector(
            weights=weights,
            embedding_model=embedding_model,
            threads=threads,
            detector=detector,
            select_sentences=select_sentences,
        )

    def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
        items = []
        truncated = []
        tasks = []
        contexts = [answer_context(record) for record in records]
        records = [c.record(record) for c, record in zip(contexts, records, strict=True)]
        answers = [self._read(record.response) for record in records]
        for record, (answer, _) in zip(records, answers, strict=True):
            claims = self.splitter(answer)
            truncated.append(len(claims) > self.max_claims)
            passages = [c.text for c in record.chunks if c.text]
            items.append((claims[: self.max_claims], passages))
            task = record_task(record.query, passages, record.attributes, self.task)
            tasks.append((task, calibration(task, answer)))
        checks = self._check(items, [key for _, key in tasks])
        return [
            [self._score(record, answer, record_checks, cut, task, context)]
            for record, answer, record_checks, cut, task, context in zip(
                records, answers, checks, truncated, tasks, contexts, strict=True
            )
        ]

    def _read(self, response: str | None) -> tuple[str, list[str]]:
        """The answer as the detector reads it, and what it read past: lines that only
        announce what follows, where the models were fitted without them (every path but the
        cross-encoder's), then with ``read_past_markup`` the presentation marks (list markers
        stay, as the models learned them)."""
        text = response if isinstance(response, str) else str(response or "")
        skipped: list[str] = []
        if self._detector.detector == "features":
            text, skipped = blank_announcements(text)
        if self.read_past_markup:
            text, marks = blank_markup(text, lists=False)
            skipped += marks
        return text, skipped

    def _check(
        self, items: list[tuple[list[str], list[str]]], tasks: list[str]
    ) -> list[list[ClaimCheck]]:
        checks = self._detector.check_batch(items, tasks)
        if self._nli_model is None:
            return checks
        from ragtrace.evaluators._faithfulness.nli import nli_checks

        return nli_checks(
            items, checks, self._nli_model, label_map=self._nli_label_map, threads=self._threads
        )

    def _hallucination_probability(
        self, record: RagRecord, answer: str, checks: list[ClaimCheck], task: str
    ) -> float:
        if not checks:
            return 0.0
        if self._nli_model is not None:  # NLI probabilities: the response model never saw them
            return max(1.0 - c.support for c in checks)
        passages = [c.text for c in record.chunks if c.text]
        coverage = self._detector.coverage(answer, passages)
        return self._detector.hallucination_probability(checks, coverage, task)

    def _score(
        self,
        record: RagRecord,
        answer: tuple[str, list[str]],
        checks: list[ClaimCheck],
        truncated: bool,
        task_and_calibration: tuple[str, str],
        context: AnswerContext | None = None,
    ) -> Score:
        task, key = task_and_calibration
        unsupported = [c for c in checks if c.support < self.support_threshold]
        total = len(checks)
        text, marks = answer
        risk = self._hallucination_probability(record, text, checks, key)
        ratio = (total - len(unsupported)) / total if total else 1.0
        details = {
            "hallucination_probability": round(risk, 4),
            "claim_ratio": round(ratio, 4),
            "claims": [
                {
                    "claim": c.claim[:_PREVIEW_CHARS],
                    "support": round(c.support, 4),
                    "supported": c.support >= self.support_threshold,
                    "closest_passage_sentence": c.best_sentence,
                }
                for c in checks
            ],
            "supported": total - len(unsupported),
            "unsupported": len(unsupported),
            "task": task,
            "calibration": key,
            "scoring": self.scoring,
            "splitter": self.splitter_name,
            "detector": self._nli_model or _DETECTOR_NAMES[self._detector.detector],
            "embedding_model": self._detector.embedding_model,
            "truncated": truncated,
            "markup_ignored": [m[:_PREVIEW_CHARS] for m in marks[:_MAX_MARKS_LISTED]],
            **(context.details() if context is not None else {}),
        }
        cut = self._verdict_threshold(key)
        faithful = 1.0 - risk if self.scoring == "response" else ratio
        passed = self._value(faithful, "", dict(details), cut).passed
        explanation = self._explain(risk, task, cut, checks, unsupported, passed)
        if context is not None:
            explanation += context.note()
        return self._value(faithful, explanation, details, cut)

    def _explain(
        self,
        risk: float,
        task: str,
        cut: float | None,
        checks: list[ClaimCheck],
        unsupported: list[ClaimCheck],
        passed: bool | None,
    ) -> str:
        """Why: the probability, then the claims, in words that never contradict the verdict
        (the response model weighs the answer as a whole, so it can flag an answer none of
        whose claims falls below the per-claim support cut on its own, or pass one that has a
        weak claim)."""
        if not checks:
            return "the answer makes no claim to check"
        flagged_above = "" if cut is None else f", flagged above {cut:.2f}"
        head = f"hallucination probability {risk:.2f} ({task}{flagged_above}); "
        total = len(checks)
        if passed is False and not unsupported:
            weakest = min(checks, key=lambda c: c.support)
            return (
                head + f"flagged as a whole: none of its {total} claim(s) falls below the "
                f"per-claim support cut ({self.support_threshold:g}) on its own; least "
                f"supported: {weakest.claim[:120]!r} ({weakest.support:.2f})"
            )
        if passed is True and unsupported:
            return (
                head + f"{len(unsupported)} of {total} claim(s) weakly supported by the "
                f"retrieved context, not enough to flag the answer; first: "
                f"{unsupported[0].claim[:120]!r}"
            )
        return (
            head
            + f"{len(unsupported)} of {total} claims unsupported by the retrieved context"
            + (f"; first: {unsupported[0].claim[:120]!r}" if unsupported else "")
        )

    def verdict_thresholds(self) -> dict[str, float | None]:
        """The hallucination probability each calibration is flagged above (None: the
        evaluator's own ``threshold`` decides)."""
        return {key: self._verdict_threshold(key) for key in CALIBRATIONS}

    def _verdict_threshold(self, calibration_key: str) -> float | None:
        """The hallucination probability above which the answer fails: the response model's
        (``SupportDetector.verdict_threshold``) or the caller's for that calibration
        (``thresholds=``), unless the caller set ``threshold=`` or the
        value is not that model's (``scoring="claims"``, an NLI model); None: the evaluator's
        own threshold applies."""
        if self._fixed_threshold or self.scoring != "response" or self._nli_model is not None:
            return None
        if calibration_key in self._thresholds:
            return self._thresholds[calibration_key]
        return self._detector.verdict_threshold(calibration_key)

    def _value(
        self, faithful: float, explanation: str, details: dict[str, Any], cut: float | None
    ) -> Score:
        raise NotImplementedError


class Faithfulness(_ClaimSupport):
    """Probability that the answer holds no unsupported claim (higher is better); with
    ``scoring="claims"``, the share of its claims the retrieved context supports."""

    name: ClassVar[str] = "faithfulness"
    direction = "higher_is_better"

    def _value(
        self, faithful: float, explanation: str, details: dict[str, Any], cut: float | None
    ) -> Score:
        threshold = None if cut is None else round(1.0 - cut, 4)
        return self.score(faithful, explanation=explanation, details=details, threshold=threshold)


class Hallucination(_ClaimSupport):
    """Probability that the answer holds an unsupported claim (lower is better); with
    ``scoring="claims"``, the share of its claims the retrieved context does not support.

    ``convention="h2o"`` gives H2O Eval Studio's "Hallucination" metric instead (004): the same
    name, but a consistency score where *higher is better* (H2O reads it from Vectara's HHEM
    cross-encoder, which no registry package ships; here it is ``1 -`` the probability above,
    the detector's probability that the answer holds no unsupported claim) with H2O's default
    threshold, 0.75. A threshold ``t`` ported from H2O means the same there (pass at or above
    ``t``); on the default convention it is ``1 - t`` (pass at or below).
    """

    name: ClassVar[str] = "hallucination"
    direction = "lower_is_better"

    def __init__(self, *, convention: str = "ragtrace", **options: Any) -> None:
        """Build the evaluator.

        Args:
            convention: ``ragtrace`` (default: the probability of a hallucination, lower is
                better, the task's threshold) or ``h2o`` (H2O's consistency score, higher is
                better, threshold 0.75 unless ``threshold=`` is given).
            **options: Those of ``Faithfulness``.

        Raises:
            ValueError: An unknown convention, or ``thresholds=`` with ``h2o`` (its verdict is
                one threshold on the consistency score).
        """
        if convention not in CONVENTIONS:
            raise ValueError(
                f"hallucination: convention must be one of {', '.join(CONVENTIONS)}, "
                f"got {convention!r}"
            )
        self.convention = convention
        if convention == "h2o":
            if options.get("thresholds"):
                raise ValueError(
                    "hallucination: thresholds= sets the task verdicts of the default "
                    "convention; with convention='h2o' give one threshold= on the consistency "
                    "score"
                )
            self.direction = "higher_is_better"  # type: ignore[misc,assignment]
            if options.get("threshold") is None:
                options["threshold"] = H2O_THRESHOLD
        super().__init__(**options)

    def _value(
        self, faithful: float, explanation: str, details: dict[str, Any], cut: float | None
    ) -> Score:
        details["convention"] = self.convention
        if self.convention == "h2o":
            return self.score(
                faithful,
                explanation=f"consistency {faithful:.2f} (H2O's hallucination score, higher is "
                f"better); {explanation}",
                details=details,
            )
        threshold = None if cut is None else round(cut, 4)
        return self.score(
            1.0 - faithful, explanation=explanation, details=details, threshold=threshold
        )
