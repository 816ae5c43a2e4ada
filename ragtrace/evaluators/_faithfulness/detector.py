"""The support detector: claims and passages in, support probabilities out.

``claim_support(claims, passages)`` gives each claim's probability of being supported;
``SupportDetector.check_batch`` does the same for many records with one embedding call (each
item's calibration picks its pair of models), and ``SupportDetector.hallucination_probability``
turns one answer's checks and its coverage into the probability that it holds at least one
unsupported claim. ``verdict_threshold`` gives a calibration's shipped verdict threshold.

Given no calibration, the shared pair is used (``support_model.json``,
``support_response_model.json``). Another weights file (``weights=``, which turns the task
models off unless ``task_weights=`` is given too) or embedding model (``embedding_model=``) can
be given; the static embedder (``embedding_model="wordllama"``) has its own three files, fitted on
its similarities (``ShippedWeights``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ragtrace._backends._loading import shared
from ragtrace._backends.embeddings import STATIC_MODEL, Backend, float32_backend, get_embedder
from ragtrace.evaluators._faithfulness.features import FEATURES, claim_features, index_passages
from ragtrace.evaluators._faithfulness.models import (
    SHARED_CLAIM_WEIGHTS,
    SupportModel,
    load_task_models,
    with_confident_claim,
)
from ragtrace.evaluators._faithfulness.response import (
    RESPONSE_FEATURES,
    pick_pair,
    response_coverage,
    response_features,
    select,
)
from ragtrace.evaluators._sentence_selection import select_sentences as pick_sentences
from ragtrace.evaluators._text import split_sentences

DATA = Path(__file__).parent.parent / "data"
WEIGHTS = SHARED_CLAIM_WEIGHTS  # the shared claim model (every task together)
RESPONSE_WEIGHTS = DATA / "support_response_model.json"
STACKED_WEIGHTS = DATA / "support_model_ce.json"
CROSSENCODER_RESPONSE_WEIGHTS = DATA / "support_response_model_ce.json"
CROSSENCODER_WEIGHTS = DATA / "support_crossencoder.safetensors"
TASK_WEIGHTS = DATA / "support_tasks.json"
CROSSENCODER_TASK_WEIGHTS = DATA / "support_tasks_ce.json"
CROSSENCODER_FEATURE = "crossencoder_logit"
STACKED_FEATURES = (*FEATURES, CROSSENCODER_FEATURE)  # the cross-encoder path's claim models
# Embedders with weights fitted on their own similarity features (else MiniLM's are used).
FITTED_EMBEDDERS = (STATIC_MODEL,)
SUPPORT_THRESHOLD = 0.5
MAX_PASSAGE_SENTENCES = 400
TOP_SENTENCES = 3
DETECTORS = ("features", "crossencoder")
DEFAULT_DETECTOR = "features"


@dataclass(frozen=True)
class ClaimCheck:
    """The verdict on one claim: its support probability and the passage sentence closest to it."""

    claim: str
    support: float
    best_sentence: int | None
    features: tuple[float, ...]
    crossencoder: bool = False


@dataclass(frozen=True, slots=True)
class ShippedWeights:
    """The weights files of the feature path fitted with one embedding model."""

    claim: Path
    response: Path
    tasks: Path

    @classmethod
    def for_embedder(cls, embedding_model: str | None) -> ShippedWeights:
        """The files fitted on ``embedding_model``'s similarities: the packaged MiniLM's for
        None, the static embedder's for ``"wordllama"``; any other model gets MiniLM's (its
        cosines then meet weights fitted on another scale: measure before relying on it)."""
        files = (WEIGHTS, RESPONSE_WEIGHTS, TASK_WEIGHTS)
        if embedding_model not in FITTED_EMBEDDERS:
            return cls(*files)
        return cls(*(path.with_name(f"{path.stem}_{embedding_model}.json") for path in files))


class SupportDetector:
    """Scores claims against passages; one instance is shared by every evaluator and thread.

    ``detector`` picks the path: ``features`` (the logistic models alone) or ``crossencoder``
    (claim models over the features plus the MiniLM cross-encoder's logit, for every claim).

    A response model turns an answer's claim checks into its hallucination probability. Each
    path has a pair of models per task (``task_weights``; the cross-encoder path's in
    ``support_tasks_ce.json``, fitted on out-of-fold logits) and a pooled pair for records
    without one (``weights`` and ``response_weights``; ``stacked_weights`` for the
    cross-encoder path's claim model). Giving a pooled file turns that path's task pairs off.
    """

    def __init__(
        self,
        *,
        weights: str | Path | None = None,
        embedding_model: str | None = None,
        threads: int | None = None,
        detector: str = DEFAULT_DETECTOR,
        crossencoder_weights: str | Path | None = None,
        stacked_weights: str | Path | None = None,
        response_weights: str | Path | None = None,
        task_weights: str | Path | None = None,
        select_sentences: int | None = None,
    ) -> None:
        if detector not in DETECTORS:
            raise ValueError(f"detector must be one of {', '.join(DETECTORS)}, got {detector!r}")
        if detector != "features" and embedding_model in FITTED_EMBEDDERS:
            raise ValueError(
                f"detector={detector!r} is fitted on the packaged MiniLM's features; "
                f"embedding_model={embedding_model!r} works with detector='features' only"
            )
        shipped = ShippedWeights.for_embedder(embedding_model)
        self.model = SupportModel.load(weights or shipped.claim)
        self.detector = detector
        self._embedding_model = embedding_model
        self._threads = threads
        self._select = select_sentences
        # The cross-encoder path's models were fitted on the float32 MiniLM's similarities (and
        # its evidence ranked by them): it keeps reading those where the default is int8.
        self._backend: Backend | None = float32_backend() if detector != "features" else None
        self._ce_weights = Path(crossencoder_weights or CROSSENCODER_WEIGHTS)
        self.stacked: SupportModel | None = None
        default_response = (
            shipped.response if detector == "features" else CROSSENCODER_RESPONSE_WEIGHTS
        )
        self.response_model: SupportModel = SupportModel.load(
            response_weights or default_response, RESPONSE_FEATURES, subset=True
        )
        self.task_models: dict[str, tuple[SupportModel, SupportModel]] = {}
        if task_weights or not (weights or response_weights):
            self.task_models = load_task_models(task_weights or shipped.tasks)
        # The cross-encoder path's pairs: claim models over the features and the logit.
        self.crossencoder_task_models: dict[str, tuple[SupportModel, SupportModel]] = {}
        if detector != "features":
            self.stacked = SupportModel.load(stacked_weights or STACKED_WEIGHTS, STACKED_FEATURES)
            if not (stacked_weights or response_weights):
                self.crossencoder_task_models = load_task_models(
                    CROSSENCODER_TASK_WEIGHTS, STACKED_FEATURES
                )

    @property
    def embedding_model(self) -> str:
        """The embedder of the similarity features: ``"minilm"`` (the packaged MiniLM) or the
        model given."""
        return self._embedding_model or "minilm"

    def check_batch(
        self,
        items: Sequence[tuple[Sequence[str], Sequence[str]]],
        tasks: Sequence[str] | None = None,
    ) -> list[list[ClaimCheck]]:
        """For each (claims, passages) item, one ClaimCheck per non-empty claim, in order.

        ``tasks`` (one per item, keys of ``response.CALIBRATIONS``) picks each item's
        claim model where the detector has one for it; otherwise the shared claim model."""
        featurised = featurise(
            items,
            embedding_model=self._embedding_model,
            threads=self._threads,
            select_sentences=self._select,
            backend=self._backend,
        )
        models = [self._models(tasks[i] if tasks else None)[0] for i in range(len(items))]
        checks = [
            [
                ClaimCheck(
                    claim,
                    1.0 - model.unsupported_probability(row),
                    ranked[0] if ranked else None,
                    tuple(row),
                )
                for claim, ranked, row in rows
            ]
            for rows, model in zip(featurised, models, strict=True)
        ]
        if self.stacked is None:
            return checks
        return self._cross_check(items, featurised, checks, tasks)

    def _models(self, task: str | None) -> tuple[SupportModel, SupportModel]:
        """(claim model, response model) for ``task`` (a key of ``response.CALIBRATIONS``):
        its own where there are task models, else its task's, else shared."""
        return pick_pair(self.task_models, task, (self.model, self.response_model))

    def _crossencoder_models(self, task: str | None) -> tuple[SupportModel, SupportModel]:
        """(claim model over the features and the logit, response model) of the cross-encoder
        path for ``task``; the pooled pair where there is no task pair."""
        assert self.stacked is not None
        default = (self.stacked, self.response_model)
        return pick_pair(self.crossencoder_task_models, task, default)

    def _response_model(self, task: str | None) -> SupportModel:
        if self.stacked is None:
            return self._models(task)[1]
        return self._crossencoder_models(task)[1]

    def hallucination_probability(
        self, checks: Sequence[ClaimCheck], coverage: Sequence[float], task: str | None = None
    ) -> float:
        """Probability that the answer whose claims ``checks`` holds holds at least one
        unsupported claim, given its ``response.response_coverage`` and task (the
        task's response model where there is one): the response model's, raised to the largest
        claim probability when that is ``CONFIDENT_UNSUPPORTED`` or more. 0.0 for an answer
        with no claim (nothing to check)."""
        if not checks:
            return 0.0
        unsupported = [1.0 - c.support for c in checks]
        row = response_features(unsupported, [c.features for c in checks], coverage)
        model = self._response_model(task)
        p = model.unsupported_probability(select(row, model.features))
        return with_confident_claim(p, row[0])

    def verdict_threshold(self, task: str | None = None) -> float:
        """The hallucination probability above which ``task``'s response model (as in
        ``hallucination_probability``) flags an answer."""
        return self._response_model(task).verdict_threshold

    @staticmethod
    def coverage(response: str, passages: Sequence[str]) -> list[float]:
        """``response.response_coverage`` of ``response`` against ``passages``."""
        return response_coverage(response, index_passages(_sentences(passages)))

    def _cross_check(
        self,
        items: Sequence[tuple[Sequence[str], Sequence[str]]],
        featurised: list[list[tuple[str, tuple[int, ...], list[float]]]],
        checks: list[list[ClaimCheck]],
        tasks: Sequence[str] | None,
    ) -> list[list[ClaimCheck]]:
        """Re-score every claim with the cross-encoder path's claim model (its task's, else the
        pooled one)."""
        from dataclasses import replace

        from ragtrace._backends.support_crossencoder import evidence_text, get_crossencoder

        todo: list[tuple[int, int]] = []
        pairs: list[tuple[str, str]] = []
        for i, ((_, passages), rows) in enumerate(zip(items, featurised, strict=True)):
            sentences = _sentences(passages) if rows else []
            for j, (claim, ranked, _) in enumerate(rows):
                todo.append((i, j))
                pairs.append((claim, evidence_text(sentences, ranked)))
        if not pairs:
            return checks
        logits = get_crossencoder(self._ce_weights, self._threads).logits(pairs)
        for (i, j), logit in zip(todo, logits, strict=True):
            row = [*featurised[i][j][2], logit]
            model = self._crossencoder_models(tasks[i] if tasks else None)[0]
            support = 1.0 - model.unsupported_probability(row)
            checks[i][j] = replace(checks[i][j], support=support, crossencoder=True)
        return checks


def _sentences(passages: Sequence[str]) -> list[str]:
    """The passage sentences the detector compares claims with (capped)."""
    return [s for p in passages for s in split_sentences(p)][:MAX_PASSAGE_SENTENCES]


def featurise(
    items: Sequence[tuple[Sequence[str], Sequence[str]]],
    *,
    embedding_model: str | None = None,
    threads: int | None = None,
    lexical: Sequence[Sequence[str]] | None = None,
    select_sentences: int | None = None,
    backend: Backend | None = None,
) -> list[list[tuple[str, tuple[int, ...], list[float]]]]:
    """Feature rows for every non-empty claim of every (claims, passages) item.

    Each row comes with its claim and the indices of the ``TOP_SENTENCES`` most similar passage
    sentences, most similar first (empty without passages). All distinct sentences of all items
    go through the embedder in one call. ``lexical`` (one text per claim of each item) gives the
    text the word, number and name features read, where it differs from what is embedded (a
    claim read past its presentation marks); a claim whose lexical text is empty is left out.
    Only the benchmarks use it (``training/_answer_readings.py``: measured, not shipped).
    ``select_sentences`` embeds only the passage sentences a lexical first stage keeps, that
    many per claim (``ragtrace.evaluators._sentence_selection``); the others are left out of the
    similarity features. ``backend`` is the packaged MiniLM's (``get_embedder``; default: the
    configured one)."""
    prepared = []
    texts: dict[str, None] = {}
    for n, (claims, passages) in enumerate(items):
        sentences = _sentences(passages)
        read = claims if lexical is None else lexical[n]
        kept = [(c, w) for c, w in zip(claims, read, strict=True) if c and c.strip() and w.strip()]
        chosen = list(range(len(sentences)))
        if select_sentences is not None:
            chosen = pick_sentences([c for c, _ in kept], sentences, select_sentences)
        prepared.append((kept, sentences, chosen))
        texts.update(dict.fromkeys(c for c, _ in kept))
        texts.update(dict.fromkeys(sentences[i] for i in chosen))
    if not texts:
        return [[] for _ in items]
    order = list(texts)
    vectors = get_embedder(embedding_model, backend=backend, threads=threads).encode(order)
    row_of = {t: i for i, t in enumerate(order)}
    results = []
    for pairs, sentences, chosen in prepared:
        index = index_passages(sentences)
        sentence_vectors = vectors[[row_of[sentences[i]] for i in chosen]] if chosen else None
        rows = []
        for claim, words_text in pairs:
            sims: list[float] = []
            if sentence_vectors is not None:
                sims = (sentence_vectors @ vectors[row_of[claim]]).tolist()
            best = sorted(range(len(sims)), key=sims.__getitem__, reverse=True)[:TOP_SENTENCES]
            ranked = [chosen[i] for i in best]
            rows.append((claim, tuple(ranked), claim_features(words_text, index, sims)))
        results.append(rows)
    return results


def default_detector() -> SupportDetector:
    """The process-wide detector with the shipped weights and the packaged MiniLM."""
    return shared(("support-detector",), SupportDetector)


def claim_support(claims: Sequence[str], passages: Sequence[str]) -> list[float]:
    """Probability in [0, 1] that each claim is supported by the passages taken together.

    An empty claim asserts nothing and counts as supported (1.0).
    """
    if not claims:
        return []
    (checks,) = default_detector().check_batch([(claims, passages)])
    by_claim = {c.claim: c.support for c in checks}
    return [by_claim.get(c, 1.0) for c in claims]
