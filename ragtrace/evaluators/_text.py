"""Text helpers shared by evaluators: sentence splitting and word tokens.

``split_sentences`` uses pysbd (a rule-based splitter that knows abbreviations, decimals, URLs
and initials: "Dr. Smith paid $3.50 in the U.S." stays one sentence) and remembers recent
results, because retrieved chunks recur across requests and evaluators (and asks the cache
tiers behind them: a process pool's shared cache, a passage store filled by ``ragtrace index``).
Text is cut into paragraphs (blank lines) first; a paragraph longer than ``PYSBD_MAX_CHARS`` is
split with a fast regular expression instead (pysbd's cost grows faster than the length: 0.8 s
at 10k characters on a busy 2-core box; a multi-megabyte answer must not stall a worker).
Without pysbd installed the regular expression is used throughout.

``words`` and ``content_words`` give lower-cased word tokens (Unicode letters and digits), the
latter without English stop words: the vocabulary that overlap-based metrics compare.

``clean_text`` turns whatever a record holds into text a scanner can read, cut at a length: None
becomes empty text, bytes are decoded as UTF-8 with replacement, other objects go through
``str()``, lone surrogates become ``?`` (offsets unchanged).
"""

from __future__ import annotations

import functools
import json
import re
import threading
from typing import Any

from ragtrace._backends import cache_tiers

PYSBD_MAX_CHARS = 5_000
MAX_CACHED_CHARS = 100_000
SPLIT_VERSION = 1  # raised when the splitting rules here change (stored splits then miss)
_CACHE_SIZE = 8192

_REGEX_SENTENCE_END = re.compile(
    "(?<=[.!?\u2026])\\s+(?=[\"'(\\[]?[A-Z0-9])|\n\\s*\n|(?<=[\u3002\uff01\uff1f])"
)
_WORD = re.compile("[^\\W_]+(?:[.,'\u2019][^\\W_]+)*", re.UNICODE)
_SURROGATE = re.compile("[\ud800-\udfff]")
_local = threading.local()

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further had hadn't has hasn't have haven't
    having he her here hers herself him himself his how i if in into is isn't it it's its itself
    just let's me more most mustn't my myself no nor not of off on once only or other ought our
    ours ourselves out over own same shan't she should shouldn't so some such than that that's
    the their theirs them themselves then there there's these they this those through to too
    under until up very was wasn't we were weren't what what's when where which while who whom
    why will with won't would wouldn't you your yours yourself yourselves also may might must
    shall s t""".split()
)


def split_sentences(text: str | None) -> list[str]:
    """The sentences of ``text``, stripped, empty ones dropped, in order."""
    if not text:
        return []
    if not isinstance(text, str):
        text = str(text)
    if len(text) > MAX_CACHED_CHARS:
        return list(_split(text))
    sentences = _cached_split(text)
    if cache_tiers.writing():  # ``ragtrace index``: keep splits found in the cache above too
        cache_tiers.keep(_namespace(), text, _encoded(sentences))
    return list(sentences)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _cached_split(text: str) -> tuple[str, ...]:
    """The split, also asked of the cache tiers (a pool's shared cache, a passage store filled
    by ``ragtrace index``: ``ragtrace._backends.cache_tiers``) and kept in them."""
    if not cache_tiers.active():
        return _split(text)
    namespace = _namespace()
    raw = cache_tiers.lookup(namespace, text)
    if raw is not None:
        try:
            found = json.loads(raw)
        except ValueError:
            found = None
        if isinstance(found, list) and all(isinstance(s, str) for s in found):
            return tuple(found)
    sentences = _split(text)
    cache_tiers.keep(namespace, text, _encoded(sentences))
    return sentences


@functools.cache
def _namespace() -> str:
    """Names the splitter: a store keeps the splits of the pysbd version that made them."""
    if _segmenter() is None:
        return f"sentences:regex:{SPLIT_VERSION}"
    from importlib.metadata import version

    return f"sentences:pysbd-{version('pysbd')}:{SPLIT_VERSION}"


def _encoded(sentences: tuple[str, ...]) -> bytes:
    return json.dumps(sentences).encode("ascii")


def _split(text: str) -> tuple[str, ...]:
    segmenter = _segmenter()
    if segmenter is None:
        return tuple(_regex_split(text))
    sentences: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        if len(block) > PYSBD_MAX_CHARS:  # pysbd's cost grows faster than the length
            pieces = _regex_split(block)
        else:
            try:
                pieces = segmenter.segment(block)
            except Exception:  # pysbd raises on some odd inputs; the regex never does
                pieces = _regex_split(block)
        sentences.extend(p.strip() for p in pieces if p and p.strip())
    return tuple(sentences)


def _segmenter() -> Any:
    segmenter = getattr(_local, "segmenter", False)
    if segmenter is False:
        try:
            import pysbd  # type: ignore[import-untyped]
        except ImportError:
            segmenter = None
        else:
            segmenter = _span_finding_segmenter(pysbd)(language="en", clean=False)
        _local.segmenter = segmenter
    return segmenter


def _span_finding_segmenter(pysbd: Any) -> Any:
    """pysbd's ``Segmenter`` with its sentence spans found by ``str.find``.

    With ``clean=False`` pysbd locates every sentence it produced in the original text to return
    the original characters; it does so with ``re.finditer`` on a pattern compiled for each
    sentence (the escaped sentence plus trailing white space), which costs more than the
    segmentation itself for new text. The search below gives the same spans: the first
    occurrence, searching on from the end of each earlier one, whose end (white space after it
    included) lies past the previous sentence's end.
    """
    from pysbd.utils import TextSpan  # type: ignore[import-untyped]

    class SpanFindingSegmenter(pysbd.Segmenter):  # type: ignore[misc]
        def sentences_with_char_spans(self, sentences: list[str]) -> list[Any]:
            text: str = self.original_text
            spans: list[Any] = []
            prior_end = 0
            for sentence in sentences:
                if not sentence:  # an empty pattern matches everywhere: pysbd's own way
                    return super().sentences_with_char_spans(sentences)  # type: ignore[no-any-return]
                at = 0
                while (start := text.find(sentence, at)) >= 0:
                    end = start + len(sentence)
                    while end < len(text) and text[end].isspace():
                        end += 1
                    if end > prior_end:
                        spans.append(TextSpan(text[start:end], start, end))
                        prior_end = end
                        break
                    at = end
            return spans

    return SpanFindingSegmenter


def _regex_split(text: str) -> list[str]:
    return [s.strip() for s in _REGEX_SENTENCE_END.split(text) if s and s.strip()]


def words(text: str | None) -> list[str]:
    """Lower-cased word tokens: runs of letters/digits, keeping inner '.', ',' and apostrophes."""
    return _WORD.findall(text.lower()) if text else []


def content_words(text: str | None) -> list[str]:
    """``words`` without English stop words."""
    return [w for w in words(text) if w not in STOP_WORDS]


def clean_text(value: object, max_chars: int) -> tuple[str, bool]:
    """``value`` as scannable text (see the module doc) and whether it was cut at ``max_chars``."""
    if value is None:
        text = ""
    elif isinstance(value, str):
        text = value
    elif isinstance(value, bytes | bytearray):
        text = bytes(value).decode("utf-8", "replace")
    else:
        text = str(value)
    truncated = len(text) > max_chars
    if truncated:
        text = text[:max_chars]
    if not text.isascii():
        text = _SURROGATE.sub("?", text)  # lone surrogates: not encodable, same length
    return text, truncated
