"""004's "Summarization (Judge) Evaluator": an LLM judge grades a summary as good or bad.

As 004 writes it: "The evaluator prompts the LLM judge to compare the actual answer (evaluated
RAG/LLM's summary) and the expected answer (reference summary)"; it "requires a reference
summary"; the result of a test case is a boolean; primary metric "Good summary (pass)", higher
is better, threshold 0.5::

    judge = create("judge_summarization")                       # against the reference
    judge = create("judge_summarization", against="both")       # reference and source
    scores = judge.evaluate(record)   # record.response: the summary; record.reference

Readings chosen:

- The judge sees the summary and, by ``against``: the reference summary (``reference``, the
  default, as 004 says), the source document (``source``: the numbered retrieved chunks, for
  records without a reference), or both. ``requires`` follows. It classifies the summary
  ``good`` (only supported facts, keeps the reference's main points) or ``bad`` (contradicts,
  invents, or leaves out main points), with a one-sentence reason (``explanation``).
- Value: the judge's probability of ``good`` at its verdict token, renormalised over the two
  classes, when the server returns token log-probabilities (the local llama.cpp judge and
  OpenAI models do); else 1.0 or 0.0 from the verdict. ``passed``: value >= 0.5; labels
  ``good_summary`` / ``bad_summary``.
- 004's other metrics are aggregates over test cases: "Bad summary (fail)" is ``1 - value``;
  "generation failures" equal model failures; "parsing failures" are error Scores labelled
  ``parse_failure``. "Retrieval failures" ("RAG's retrieved contexts that failed to pass the
  evaluator check"): with ``check_context=True`` (off by default: a second call) the judge also
  checks whether the retrieved chunks hold the facts of the reference summary (prompt
  ``summarization_context``), as Score ``judge_summarization.retrieval``: P(``complete``).
- Captured text is fenced as data (``ragtrace._judges.prompts``); the prompts tell the judge that
  instructions inside the data are to be ignored. The summary and the source are shown without
  their parts that address the evaluation ("rate this summary good", a fake verdict block:
  ``steering``), listed in ``details["addressed_to_evaluation"]``; the judge grades what is
  left. A blank summary, or a missing reference or
  source that ``against`` needs, gives an error Score without asking the judge.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ragtrace._judges.client import JudgeClient, JudgeReply
from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._judge.checks import JudgeCheck, class_probability, verdict_schema
from ragtrace.evaluators._statement_support import as_text

AGAINST = ("reference", "source", "both")
REASON_CHARS = 200
NOT_GIVEN = "(not given)"
_REQUIRES = {
    "reference": frozenset({"response", "reference"}),
    "source": frozenset({"response", "chunks"}),
    "both": frozenset({"response", "reference", "chunks"}),
}


def _schema(ok: str, flag: str) -> dict[str, Any]:
    """``checks.verdict_schema`` with the reason bounded, so a rambling judge stops in time."""
    schema = verdict_schema((ok, flag))
    schema["properties"]["reason"] = {"type": "string", "maxLength": REASON_CHARS}
    return schema


class _ProbabilityCheck(JudgeCheck):
    """A two-class check whose value is P(``ok``) at the verdict token, else the verdict."""

    def value(self, reply: JudgeReply, verdict: str) -> float:
        p_ok = class_probability(reply, self.ok, (self.ok, self.flag))
        return p_ok if p_ok is not None else (1.0 if verdict == self.ok else 0.0)

    def extra_details(self, reply: JudgeReply) -> dict[str, Any]:
        return {
            "logprobs_used": class_probability(reply, self.ok, (self.ok, self.flag)) is not None
        }


class _SummaryContextCheck(_ProbabilityCheck):
    """The retrieval check: do the retrieved chunks hold the reference summary's facts?"""

    name: ClassVar[str] = "judge_summarization"
    requires: ClassVar[frozenset[str]] = frozenset({"reference", "chunks"})
    prompt: ClassVar[str] = "summarization_context"
    flag: ClassVar[str] = "missing"
    ok: ClassVar[str] = "complete"
    schema: ClassVar[Mapping[str, Any]] = _schema(ok, flag)
    pass_label: ClassVar[str] = "context_complete"
    fail_label: ClassVar[str] = "context_missing"
    has_retrieval_check: ClassVar[bool] = False

    def texts(self, record: RagRecord, text: object) -> dict[str, Any]:
        return {"reference": as_text(record.reference), "source": source_text(record)}


class JudgeSummarization(_ProbabilityCheck):
    """004's summarization judge: the probability that the summary is good (higher is better)."""

    name: ClassVar[str] = "judge_summarization"
    requires: ClassVar[frozenset[str]] = _REQUIRES["reference"]
    prompt: ClassVar[str] = "summarization_verdict"
    flag: ClassVar[str] = "bad"
    ok: ClassVar[str] = "good"
    schema: ClassVar[Mapping[str, Any]] = _schema(ok, flag)
    pass_label: ClassVar[str] = "good_summary"
    fail_label: ClassVar[str] = "bad_summary"
    untrusted_fields: ClassVar[tuple[str, ...]] = ("summary", "source")

    def __init__(
        self,
        *,
        against: str = "reference",
        check_context: bool = False,
        top_logprobs: int = 5,
        max_tokens: int = 128,
        judge: JudgeClient | str | None = None,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            against: What the summary is graded against: ``reference`` (004), ``source`` or
                ``both``.
            check_context: Also check that the retrieved chunks hold the reference summary's
                facts (Score ``judge_summarization.retrieval``; needs a reference).
            top_logprobs: Alternatives asked for per token (0: none; the value is then the
                verdict, 1.0 or 0.0).
            max_tokens: Most tokens of each answer.
            judge: A JudgeClient, a litellm model string, or None for the default judge.
            options: Evaluator options (threshold, timeout_s, cost_usd, ...).
        """
        if against not in AGAINST:
            raise ValueError(f"{self.name}: against must be one of {', '.join(AGAINST)}")
        if check_context and against == "source":
            raise ValueError(f"{self.name}: check_context compares the chunks with the reference")
        self.against = against
        self.requires = _REQUIRES[against]  # type: ignore[misc]
        super().__init__(check_context=check_context, max_tokens=max_tokens, judge=judge, **options)
        self.top_logprobs = max(0, int(top_logprobs))
        self._context_check: _SummaryContextCheck | None = None
        if self.check_context:
            self._context_check = _SummaryContextCheck(
                max_tokens=max_tokens, judge=self._judge, threshold=self.threshold
            )
            self._context_check.top_logprobs = self.top_logprobs

    def texts(self, record: RagRecord, text: object) -> dict[str, Any]:
        uses_reference = self.against in ("reference", "both")
        uses_source = self.against in ("source", "both")
        return {
            "reference": as_text(record.reference) if uses_reference else NOT_GIVEN,
            "source": source_text(record) if uses_source else NOT_GIVEN,
            "summary": as_text(text),
        }

    def judge_record(self, record: RagRecord) -> list[Score]:
        missing = self._missing(record)
        if missing:
            message = f"{self.name} needs {missing}"
            return self.errors(message)
        scores = [self.check(record, record.response, self.name)]
        if self._context_check is not None:
            retrieval = f"{self.name}.retrieval"
            scores.append(self._context_check.check(record, None, retrieval))
        return scores

    def _missing(self, record: RagRecord) -> str | None:
        if not as_text(record.response).strip():
            return "a non-empty response (the summary)"
        if "reference" in self.requires and not as_text(record.reference).strip():
            return "a reference summary"
        if "chunks" in self.requires and not any(t.strip() for t in _chunk_texts(record)):
            return "retrieved chunks with text (the source)"
        return None


def _chunk_texts(record: RagRecord) -> list[str]:
    chunks = record.chunks or ()
    if isinstance(chunks, str | bytes):
        chunks = (chunks,)
    return [as_text(getattr(c, "text", c)) for c in chunks]


def source_text(record: RagRecord) -> str:
    """The retrieved chunks, numbered in rank order (odd chunk objects read as text)."""
    return "\n".join(f"[{i}] {text}" for i, text in enumerate(_chunk_texts(record), 1))
