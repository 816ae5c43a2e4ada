"""BLEU and ROUGE: n-gram overlap of the answer with the reference answer.

Lexical metrics after Ejento 1.4/1.5 and H2O Eval Studio's "BLEU" and "ROUGE" evaluators. Both
need ``response`` and ``reference``; every value lies in [0, 1] (higher is better) with the
catalogue's default threshold 0.75 (a strict bar for BLEU-3/4: paraphrases score far lower).

``bleu`` returns ``bleu.1`` .. ``bleu.4`` (the catalogue reports all four; BLEU-1 is its primary
metric; ``orders=(1, 4)`` picks some). BLEU-n is ``BP * exp(sum_{k<=n} (1/n) log p_k)``: uniform
weights over the 1..n-gram precisions and the brevity penalty, computed by sacrebleu
(``sentence_score``, value / 100) with:

- tokenisation ``13a`` (the WMT standard; ``tokenize="intl"``, ``"zh"``, ``"char"``, ... are
  sacrebleu's others), case-sensitive unless ``lowercase=True``;
- ``effective_order=True``: an answer shorter than n words is scored on the orders it has;
- smoothing ``exp`` (sacrebleu's sentence-level default, Chen & Cherry's method 3: the k-th
  n-gram order with no match counts 1/2^k matches), so one missing 4-gram does not zero the
  score; ``smooth_method="floor"``, ``"add-k"`` (with ``smooth_value``) or ``"none"`` instead.

``rouge`` returns ``rouge.1``, ``rouge.2`` and ``rouge.l`` (the primary): the F-measure of
unigram, bigram and longest-common-subsequence overlap, by Google's ``rouge-score`` package with
its tokenizer (lower-cased ASCII letters and digits) and the Porter stemmer (``stemmer=False``
turns it off). That tokenizer drops every non-ASCII character, so text in other scripts scores
0; ``tokenizer="unicode"`` keeps Unicode letters and digits (``ragtrace.evaluators._text.words``),
stemming only ASCII words.

Cap: ROUGE-L's longest common subsequence costs O(n * m) in pure Python (about 0.7 s for two
1,500-word texts), so each text is cut to ``max_chars`` (10,000) characters;
``details["truncated"]`` says when.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ragtrace._backends._loading import import_extra
from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._base import Evaluator, positive_int
from ragtrace.evaluators._statement_support import as_text
from ragtrace.evaluators._text import words

EXTRA = "models"
DEFAULT_THRESHOLD = 0.75
DEFAULT_MAX_CHARS = 10_000
SMOOTH_METHODS = ("exp", "floor", "add-k", "none")
ROUGE_TYPES = {"rouge1": "rouge.1", "rouge2": "rouge.2", "rougeL": "rouge.l"}


class _Overlap(Evaluator):
    """Shared input handling of BLEU and ROUGE."""

    requires: ClassVar[frozenset[str]] = frozenset({"response", "reference"})
    kind = "lexical"
    direction = "higher_is_better"
    threshold: float | None = DEFAULT_THRESHOLD
    names: tuple[str, ...] = ()

    def __init__(self, *, max_chars: int = DEFAULT_MAX_CHARS, **options: Any) -> None:
        super().__init__(**options)
        self.max_chars = positive_int(self.name, "max_chars", max_chars)

    def evaluate(self, record: RagRecord) -> list[Score]:
        answer = as_text(record.response)
        reference = as_text(record.reference)
        for what, text in (("response", answer), ("reference", reference)):
            if not text.strip():
                return [
                    self.error_score(f"{self.name} needs a non-empty {what}", name=n)
                    for n in self.names
                ]
        truncated = len(answer) > self.max_chars or len(reference) > self.max_chars
        values = self._values(answer[: self.max_chars], reference[: self.max_chars])
        return [
            self.score(value, name=name, details={**extra, "truncated": truncated})
            for name, (value, extra) in values.items()
        ]

    def _values(self, answer: str, reference: str) -> dict[str, tuple[float, dict[str, Any]]]:
        """``{score name: (value, details)}`` for one capped pair."""
        raise NotImplementedError


class Bleu(_Overlap):
    """Sentence-level BLEU-1..4 of the answer against the reference (sacrebleu)."""

    name: ClassVar[str] = "bleu"

    def __init__(
        self,
        *,
        orders: Sequence[int] = (1, 2, 3, 4),
        smooth_method: str = "exp",
        smooth_value: float | None = None,
        tokenize: str = "13a",
        lowercase: bool = False,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            orders: Which BLEU-n to report (each 1..4).
            smooth_method: ``exp`` (default), ``floor``, ``add-k`` or ``none``.
            smooth_value: The constant of ``floor`` (0.1) and ``add-k`` (1).
            tokenize: A sacrebleu tokenizer name (``13a``, ``intl``, ``zh``, ``char``, ...).
            lowercase: Compare case-insensitively.
            **options: ``threshold`` (0.75), ``max_chars`` (10,000), ``timeout_s``, ...
        """
        super().__init__(**options)
        orders = tuple(orders) if isinstance(orders, Sequence) else ()
        if not orders or any(
            isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 4 for n in orders
        ):
            raise ValueError(f"bleu: orders must be a non-empty list of 1..4, got {orders!r}")
        if smooth_method not in SMOOTH_METHODS:
            raise ValueError(f"bleu: smooth_method must be one of {SMOOTH_METHODS}")
        metrics = import_extra("sacrebleu.metrics", EXTRA)
        tokenizers = getattr(metrics.bleu, "_TOKENIZERS", {})
        if tokenizers and tokenize not in tokenizers:
            raise ValueError(
                f"bleu: tokenize must be one of {sorted(tokenizers)}, got {tokenize!r}"
            )
        self.orders = tuple(sorted(set(orders)))
        self.names = tuple(f"bleu.{n}" for n in self.orders)
        self._scorers = {
            n: metrics.BLEU(
                max_ngram_order=n,
                effective_order=True,
                smooth_method=smooth_method,
                smooth_value=smooth_value,
                tokenize=tokenize,
                lowercase=lowercase,
            )
            for n in self.orders
        }

    def _values(self, answer: str, reference: str) -> dict[str, tuple[float, dict[str, Any]]]:
        values = {}
        for n, scorer in self._scorers.items():
            result = scorer.sentence_score(answer, [reference])
            values[f"bleu.{n}"] = (
                min(1.0, max(0.0, result.score / 100.0)),
                {
                    # effective order: only the orders the answer has n-grams of
                    "precisions": [
                        round(p / 100.0, 6) for p in result.precisions[: min(n, result.sys_len)]
                    ],
                    "brevity_penalty": result.bp,
                    "answer_tokens": result.sys_len,
                    "reference_tokens": result.ref_len,
                },
            )
        return values


class Rouge(_Overlap):
    """ROUGE-1, ROUGE-2 and ROUGE-L F-measure of the answer against the reference."""

    name: ClassVar[str] = "rouge"
    names = tuple(ROUGE_TYPES.values())

    def __init__(self, *, stemmer: bool = True, tokenizer: str = "default", **options: Any):
        """Build the evaluator.

        Args:
            stemmer: Porter-stem words before matching (rouge-score's ``use_stemmer``).
            tokenizer: ``default`` (rouge-score's ASCII tokenizer) or ``unicode``.
            **options: ``threshold`` (0.75), ``max_chars`` (10,000), ``timeout_s``, ...
        """
        super().__init__(**options)
        if tokenizer not in ("default", "unicode"):
            raise ValueError(f"rouge: tokenizer must be 'default' or 'unicode', got {tokenizer!r}")
        scorer_module = import_extra("rouge_score.rouge_scorer", EXTRA)
        custom = _UnicodeTokenizer(stemmer) if tokenizer == "unicode" else None
        self._scorer = scorer_module.RougeScorer(
            list(ROUGE_TYPES), use_stemmer=bool(stemmer), tokenizer=custom
        )

    def _values(self, answer: str, reference: str) -> dict[str, tuple[float, dict[str, Any]]]:
        found = self._scorer.score(reference, answer)  # (target, prediction)
        return {
            name: (
                min(1.0, max(0.0, found[kind].fmeasure)),
                {"precision": found[kind].precision, "recall": found[kind].recall},
            )
            for kind, name in ROUGE_TYPES.items()
        }


class _UnicodeTokenizer:
    """rouge-score tokenizer keeping Unicode letters and digits; stems ASCII words."""

    def __init__(self, stem: bool) -> None:
        self._stemmer = None
        if stem:
            porter = import_extra("nltk.stem.porter", EXTRA)
            self._stemmer = porter.PorterStemmer()

    def tokenize(self, text: str) -> list[str]:
        tokens = words(text)
        if self._stemmer is None:
            return tokens
        # rouge-score stems only tokens longer than 3 characters; do the same.
        return [
            self._stemmer.stem(t) if len(t) > 3 and t.isascii() and t.isalpha() else t
            for t in tokens
        ]
