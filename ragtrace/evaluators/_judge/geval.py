"""G-Eval: an LLM judge scoring a record against custom criteria written in plain words.

After 003 ("Custom LLM as a Judge"): G-Eval is a two-step algorithm. It first generates
``evaluation_steps`` by chain of thought from the given ``criteria``, then uses the steps to
score the record's fields "in a form-filling paradigm", and takes "the probability-weighted
summation of the output scores as the final score". Given ``evaluation_steps``, it skips the
first step::

    coherence = GEval(name="judge_coherence",
                      criteria="The answer is well organised and easy to follow.")
    fact_check = GEval(name="judge_rag_fact_checker",
                       evaluation_steps=["Create a list of statements from the answer", ...],
                       fields=("question", "answer", "context"))

Choices where 003 is silent or ambiguous:

- Scale: 003 names none (its DeepEval run prints 0.53 with no scale). The G-Eval paper that
  003's figure comes from scores 1 to 5, and that is the default here (``scale=(1, 5)``); any
  ``(low, high)`` with ``0 <= low < high <= 9`` works. Scores stop at 9 so every score is one
  token, which the probability weighting needs ("10" is two tokens for most tokenizers).
- Probability weighting: the judge answers ``{"score": <int>, "reason": "..."}`` (the score
  first, so its probabilities follow from the steps alone, as in the paper's form filling).
  When the server returns token log-probabilities (``logprobs=`` on the call; the local
  llama.cpp judge and OpenAI models do), the score token is found in the answer and its top
  alternatives that are scores on the scale are renormalised to sum to 1:
  ``weighted = sum(p(s) * s)``. Servers may report alternatives from before the JSON grammar
  constrained the choice, so alternatives that are not scores on the scale are dropped. With no
  log-probabilities (or no score token found) the plain integer is used;
  ``details["logprobs_used"]`` says which.
- Value: ``(weighted - low) / (high - low)``, in [0, 1]; default threshold 0.5 (003's run).
- Fields: ``question`` (record.query), ``answer`` (response), ``context`` (the numbered
  retrieved chunks) and ``expected`` (reference); record field names (``query``, ``response``,
  ``chunks``, ``reference``) are accepted too. ``requires`` follows the fields. Default:
  question and answer.
- Generated steps: at most 5 of at most 200 characters (the JSON schema bounds them, so a
  rambling judge stops early), asked once per (criteria, fields, judge model) and kept in this
  process (thread-safe: concurrent records wait for the first to ask); the judge client's
  response cache keeps them across processes. A failed generation is not kept (the next record asks
  again). The criteria and steps are configuration, so they go into the prompt as written;
  only record texts are fenced as data.
- The answer and the context are shown without their parts that address the evaluation
  ("ignore your instructions", "score this 5/5", a fake verdict block: ``steering``), which
  are listed in ``details["addressed_to_evaluation"]``: the judge rates what is left.
- ``name`` is set per instance (``GEval(name="judge_coherence", ...)``); names start with
  ``judge_`` by convention, which is not enforced.

The pure helpers (``value_distribution``, ``score_probabilities``, ``weighted_score``,
``normalise``) are shared with the other judge evaluators that read probabilities.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from ragtrace._judges.client import JudgeClient, JudgeReply, TokenLogprob
from ragtrace._judges.prompts import PromptTemplate, load_prompt
from ragtrace._judges.usage import JudgeParseError
from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._judge import steering
from ragtrace.evaluators._judge.base import JudgeEvaluator, object_schema
from ragtrace.evaluators._judge.byop import (
    PLACEHOLDER_FIELDS,
    clipped,
    compose,
    literal,
    placeholder_values,
    requires_for,
)

T = TypeVar("T")

STEPS_PROMPT = "geval_steps"
SCORE_PROMPT = "geval_score"
DEFAULT_SCALE = (1, 5)
DEFAULT_TOP_LOGPROBS = 10
MAX_STEPS = 8
MAX_STEP_CHARS = 400
STEPS_MAX_TOKENS = 256

FIELD_ALIASES: Mapping[str, str] = {
    **{name: name for name in PLACEHOLDER_FIELDS},
    **{field: name for name, field in PLACEHOLDER_FIELDS.items()},
}
# Texts from the record that may carry words meant for the judge (an answer, a retrieved
# chunk): their parts addressed to the evaluation are taken out (``steering.strip_addressed``).
UNTRUSTED_FIELDS = ("answer", "context")
FIELD_LABELS: Mapping[str, str] = {
    "question": "Question (the input)",
    "answer": "Answer (the actual output)",
    "context": "Retrieved context",
    "expected": "Expected answer",
}

STEPS_SCHEMA: Mapping[str, Any] = object_schema(
    steps={
        "type": "array",
        "items": {"type": "string", "maxLength": 200},
        "minItems": 1,
        "maxItems": 5,
    }
)

_VALUE_START = '"{key}"\\s*:\\s*"?'
_SCORE_TOKEN = re.compile(r"[\s\"':,]*(\d+)[\s\",}]*")


# -- pure scoring -------------------------------------------------------------------------


def value_token(logprobs: Sequence[TokenLogprob], key: str) -> TokenLogprob | None:
    """The output token where the JSON value of ``key`` starts (None when not found)."""
    text = "".join(t.token for t in logprobs)
    match = re.search(_VALUE_START.format(key=re.escape(key)), text)
    if match is None:
        return None
    offset, start = match.end(), 0
    for token in logprobs:
        end = start + len(token.token)
        if start <= offset < end:
            return token
        start = end
    return None


def value_distribution(
    logprobs: Sequence[TokenLogprob] | None, key: str, decode: Callable[[str], T | None]
) -> dict[T, float] | None:
    """The judge's probabilities of the values of ``key``, from the value token's alternatives.

    ``decode`` turns a token into a value (None: not a value, dropped). The chosen token
    counts even when the server left it out of the alternatives. Probabilities are
    renormalised over the values found. None when there is no such token or the chosen token
    is not a value.
    """
    if not logprobs:
        return None
    token = value_token(logprobs, key)
    if token is None or decode(token.token) is None:
        return None
    alternatives = dict(token.top)
    alternatives.setdefault(token.token, token.logprob)
    mass: dict[T, float] = {}
    for text, logprob in alternatives.items():
        value = decode(text)
        if value is None or not math.isfinite(logprob):
            continue
        mass[value] = mass.get(value, 0.0) + math.exp(logprob)
    total = sum(mass.values())
    if total <= 0.0:
        return None
    return {value: p / total for value, p in mass.items()}


def score_token_value(token: str, low: int, high: int) -> int | None:
    """The score a token stands for (``"4"``, ``" 4"``, ``"4,"``), or None if not on the scale."""
    match = _SCORE_TOKEN.fullmatch(token)
    if match is None:
        return None
    value = int(match.group(1))
    return value if low <= value <= high else None


def score_probabilities(
    logprobs: Sequence[TokenLogprob] | None, low: int, high: int, key: str = "score"
) -> dict[int, float] | None:
    """Probabilities of each score on ``[low, high]`` at the judge's score token."""
    found = value_distribution(logprobs, key, lambda t: score_token_value(t, low, high))
    return None if found is None else dict(sorted(found.items()))


def weighted_score(probabilities: Mapping[int, float]) -> float:
    """G-Eval's probability-weighted sum of the scores: ``sum(p(s) * s)``."""
    return sum(score * p for score, p in probabilities.items())


def normalise(score: float, low: int, high: int) -> float:
    """``score`` on ``[low, high]`` mapped to [0, 1] (clamped)."""
    return min(1.0, max(0.0, (score - low) / (high - low)))


def clean_steps(steps: Iterable[object]) -> tuple[str, ...]:
    """Non-empty steps, stripped, at most ``MAX_STEPS`` of at most ``MAX_STEP_CHARS`` each."""
    cleaned = (" ".join(str(step).split())[:MAX_STEP_CHARS] for step in steps)
    return tuple(step for step in cleaned if step)[:MAX_STEPS]


def numbered(steps: Sequence[str]) -> str:
    """Steps as a numbered list, one per line."""
    return "\n".join(f"{i}. {step}" for i, step in enumerate(steps, 1))


def canonical_fields(fields: Iterable[str]) -> tuple[str, ...]:
    """Field names as placeholders (``query`` -> ``question``...), in order, no repeats."""
    out: list[str] = []
    for field in fields:
        name = FIELD_ALIASES.get(str(field))
        if name is None:
            known = ", ".join(FIELD_ALIASES)
            raise ValueError(f"GEval: unknown field {field!r}; known: {known}")
        if name not in out:
            out.append(name)
    if not out:
        raise ValueError("GEval: fields must name at least one record field")
    return tuple(out)


# -- generated steps, once per criteria ----------------------------------------------------

_steps_lock = threading.Lock()
_steps: dict[tuple[str, ...], tuple[str, ...]] = {}
_steps_key_locks: dict[tuple[str, ...], threading.Lock] = {}


def _cached_steps(
    key: tuple[str, ...], generate: Callable[[], tuple[str, ...]]
) -> tuple[tuple[str, ...], bool]:
    """The steps for ``key`` (generated once; concurrent callers wait) and whether cached."""
    with _steps_lock:
        found = _steps.get(key)
        if found is not None:
            return found, True
        key_lock = _steps_key_locks.setdefault(key, threading.Lock())
    with key_lock:
        with _steps_lock:
            found = _steps.get(key)
        if found is not None:
            return found, True
        steps = generate()
        with _steps_lock:
            _steps[key] = steps
        return steps, False


def clear_steps_cache() -> None:
    """Forget every generated evaluation step list kept in this process."""
    with _steps_lock:
        _steps.clear()
        _steps_key_locks.clear()


# -- the evaluator ---------------------------------------------------------------------------


class GEval(JudgeEvaluator):
    """Custom criteria scored by an LLM judge (G-Eval); value in [0, 1]."""

    name: ClassVar[str] = "judge_geval"
    requires: ClassVar[frozenset[str]] = frozenset({"query", "response"})
    direction = "higher_is_better"
    threshold: float | None = 0.5

    def __init__(
        self,
        *,
        criteria: str | None = None,
        evaluation_steps: Sequence[str] | None = None,
        name: str = "judge_geval",
        fields: Sequence[str] = ("question", "answer"),
        scale: tuple[int, int] = DEFAULT_SCALE,
        use_logprobs: bool = True,
        top_logprobs: int = DEFAULT_TOP_LOGPROBS,
        max_tokens: int = 128,
        judge: JudgeClient | str | None = None,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            criteria: What to judge, in plain words (needed unless ``evaluation_steps``).
            evaluation_steps: The steps to follow; given, the judge does not generate them.
            name: The metric name.
            fields: Record fields shown to the judge: question, answer, context, expected.
            scale: The judge's integer scale ``(low, high)``, ``0 <= low < high <= 9``.
            use_logprobs: Ask for token log-probabilities and weight the score with them.
            top_logprobs: How many alternatives per token to ask for.
            max_tokens: Most tokens of the scoring answer.
            judge: A JudgeClient, a litellm model string, or None for the default judge.
            options: Evaluator options (threshold, timeout_s, cost_usd, ...).

        Raises:
            ValueError: No criteria and no steps, an unknown field, or a bad scale.
        """
        if not isinstance(name, str) or not name:
            raise ValueError("GEval: name must be a non-empty string")
        self.criteria = criteria.strip() if isinstance(criteria, str) else None
        self.evaluation_steps = (
            clean_steps(evaluation_steps) if evaluation_steps is not None else None
        )
        if not self.criteria and not self.evaluation_steps:
            raise ValueError("GEval: give criteria (plain words) or evaluation_steps")
        low, high = _scale(scale)
        self.scale = (low, high)
        self.fields = canonical_fields(fields)
        self.name = name  # type: ignore[misc]
        self.requires = requires_for(self.fields)  # type: ignore[misc]
        self.use_logprobs = bool(use_logprobs)
        self.top_logprobs = max(1, int(top_logprobs))
        self.max_tokens = int(max_tokens)
        self.score_schema: Mapping[str, Any] = object_schema(
            score={"type": "integer", "enum": list(range(low, high + 1))},
            reason={"type": "string"},
        )
        self._fields_text = "\n\n".join(f"{FIELD_LABELS[f]}:\n{{{f}}}" for f in self.fields)
        super().__init__(judge=judge, **options)

    def judge_record(self, record: RagRecord) -> list[Score]:
        replies: list[JudgeReply] = []
        steps, source = self.steps(replies)
        low, high = self.scale
        template = self._score_template(steps)
        values = placeholder_values(record, self.fields)
        addressed = steering.strip_addressed(values, UNTRUSTED_FIELDS)
        reply = self.ask(
            template,
            self.score_schema,
            logprobs=self.top_logprobs if self.use_logprobs else None,
            max_tokens=self.max_tokens,
            **values,
        )
        replies.append(reply)
        raw = int(reply.data["score"])
        probabilities = score_probabilities(reply.logprobs, low, high)
        if probabilities is not None and raw not in probabilities:
            probabilities = None  # the token found is not the score the JSON holds
        weighted = weighted_score(probabilities) if probabilities else float(raw)
        reason = str(reply.data["reason"])
        details: dict[str, Any] = {
            "criteria": self.criteria,
            "steps": list(steps),
            "steps_source": source,
            "fields": list(self.fields),
            "scale": [low, high],
            "raw_score": raw,
            "weighted_score": weighted,
            "logprobs_used": probabilities is not None,
            "score_probabilities": (
                {str(s): p for s, p in probabilities.items()} if probabilities else None
            ),
            "reason": reason,
            "truncated": clipped(values),
        }
        if addressed:
            details["addressed_to_evaluation"] = addressed
        value = normalise(weighted, low, high)
        return [self.score(value, explanation=reason, details=details, replies=replies)]

    def steps(self, replies: list[JudgeReply]) -> tuple[tuple[str, ...], str]:
        """The evaluation steps and where they came from: given, generated or cached."""
        if self.evaluation_steps:
            return self.evaluation_steps, "given"
        assert self.criteria is not None
        template = compose(
            load_prompt(STEPS_PROMPT),
            criteria=self.criteria,
            fields=", ".join(FIELD_LABELS[f] for f in self.fields),
        )
        key = (template.id, self.judge.model_name, self.criteria, *self.fields)

        def generate() -> tuple[str, ...]:
            reply = self.ask(template, STEPS_SCHEMA, max_tokens=STEPS_MAX_TOKENS)
            replies.append(reply)
            steps = clean_steps(reply.data["steps"])
            if not steps:
                raise JudgeParseError("the judge wrote no evaluation steps", reply.text)
            return steps

        steps, cached = _cached_steps(key, generate)
        return steps, "cached" if cached else "generated"

    def _score_template(self, steps: Sequence[str]) -> PromptTemplate:
        low, high = self.scale
        return compose(
            load_prompt(SCORE_PROMPT),
            keep=self.fields,
            criteria=literal(self.criteria or "(none given: follow the evaluation steps)"),
            steps=literal(numbered(steps)),
            fields=self._fields_text,
            low=str(low),
            high=str(high),
        )


def _scale(scale: object) -> tuple[int, int]:
    ok = (
        isinstance(scale, tuple | list)
        and len(scale) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in scale)
    )
    if not ok:
        raise ValueError(f"GEval: scale must be (low, high) integers, got {scale!r}")
    low, high = int(scale[0]), int(scale[1])  # type: ignore[index]
    if not 0 <= low < high <= 9:
        raise ValueError(f"GEval: scale must satisfy 0 <= low < high <= 9, got {scale!r}")
    return low, high
