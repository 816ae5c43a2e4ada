"""GPTScore: how likely a language model finds the answer, given an instruction about a quality.

After H2O Eval Studio's GPTScore family (seed 004), itself after Fu et al., "GPTScore: Evaluate
as You Desire" (2023). A model that follows instructions gives a good text a higher probability
after an instruction asking for that quality. Each aspect's value is the average negative
log-likelihood per token of the scored text (``-mean log p``, natural log) given the rest of the
prompt: lower is better, range [0, inf), default threshold ``inf`` (informational, as in the
catalogue: every value passes; set ``threshold=`` to flag). The first aspect is the primary.

- ``gptscore_qa`` ("Question Answering"): eight aspects (interest, engagement, ...); the
  prompt asks a yes/no question about a conversation, ``{history}`` = ``Human: <question>\\nAI:
  <answer>``, after the conversation's earlier turns when the record has them
  (``record.conversation.history``, the most recent that fit in ``max_chars``; without them a
  follow-up's standalone question is the question), and the prompt's last line is
  ``Answer: Yes`` (the catalogue: "calculated from the tokens Answer: Yes"). The value reads
  the verdict token " Yes" against " No" by default (``target``; the catalogue's literal
  reading of every token of "Answer: Yes" preferred off-topic answers to fluent ones under the
  packaged model).
- ``gptscore_translation`` ("Machine Translation"): accuracy, fluency, multidimensional
  quality; "Rewrite the following text ...: {ref_hypo} In other words, {hypo_ref}", scoring the
  text after "In other words,". Scored both ways (reference -> answer and answer -> reference)
  and averaged, as the catalogue says.
- ``gptscore_summarization_ref`` ("Summarization with reference"): six aspects, the same
  rewrite prompts both ways.
- ``gptscore_summarization`` ("Summarization without reference"): seven aspects, "Generate a
  ... summary for the following text: {src}\\nTl;dr\\n{target}" with the question as ``{src}``
  (the catalogue's choice) and the answer as the scored text.

The templates are in ``gptscore_prompts``. The model is the packaged Qwen2.5-Coder-0.5B (the
embedded judge's model, read by transformers from its GGUF file: ``backends.likelihood``) or any
model that backend takes; hosted litellm models cannot be used (no prompt log-probabilities).
``aspects=`` picks a subset (each aspect costs one forward pass, two for the two-way ones).
Every text put into a prompt is cut to ``max_chars`` characters; ``details["truncated"]`` says
so, and a prompt longer than ``context_tokens`` is read in sliding windows (``details``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._base import BatchEvaluator, positive_int
from ragtrace.evaluators._gptscore_prompts import (
    QA_ASPECTS,
    SUMMARIZATION_ASPECTS,
    SUMMARIZATION_REF_ASPECTS,
    TRANSLATION_ASPECTS,
    Aspect,
    split_prompt,
)
from ragtrace.evaluators._perplexity import causal_lm
from ragtrace.evaluators._question import as_asked
from ragtrace.evaluators._statement_support import as_text

DEFAULT_MODEL = "qwen2.5-coder-0.5b"
DEFAULT_CONTEXT_TOKENS = 1024
DEFAULT_MAX_CHARS = 2000
QA_TARGETS = ("answer_yes", "yes", "yes_vs_no")
DEFAULT_QA_TARGET = "yes_vs_no"
VERDICT = " Yes"
# Speakers of the dialogue prompt's history, by the role of a conversation's turn.
DIALOGUE_ROLES = {"user": "Human", "human": "Human", "assistant": "AI", "ai": "AI"}

# (direction name, fields) of one record's prompts, or an error message.
Filling = list[tuple[str, dict[str, str]]]


class GptScore(BatchEvaluator):
    """Base of the GPTScore evaluators: per aspect, average NLL of a target given a prompt."""

    name: ClassVar[str] = "gptscore"
    kind = "judge"
    direction = "lower_is_better"
    bounded: ClassVar[bool] = False
    threshold: float | None = math.inf
    batch_size = 1
    timeout_s = 180.0
    all_aspects: ClassVar[tuple[Aspect, ...]] = ()

    def __init__(
        self,
        *,
        aspects: Sequence[str] | None = None,
        model: str | Path = DEFAULT_MODEL,
        threads: int | None = None,
        context_tokens: int = DEFAULT_CONTEXT_TOKENS,
        max_chars: int = DEFAULT_MAX_CHARS,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            aspects: Aspect names to score (default: all, in the catalogue's order).
            model: A packaged model (``qwen2.5-coder-0.5b``, ``smollm2-135m``), a ``.gguf``
                file, a model folder or a Hugging Face id in the local cache.
            threads: torch threads (default ``$RAGTRACE_MODEL_THREADS`` or 1).
            context_tokens: Tokens per forward pass; longer prompts slide.
            max_chars: Each text put into a prompt is cut to this many characters.
            **options: ``threshold`` (inf), ``timeout_s`` (180), ``batch_size``, ...
        """
        super().__init__(**options)
        known = {a.key: a for a in self.all_aspects}
        if aspects is None:
            self.aspects = self.all_aspects
        else:
            if isinstance(aspects, str) or not aspects:
                raise ValueError(f"{self.name}: aspects must be a non-empty list of names")
            unknown = [a for a in aspects if a not in known]
            if unknown:
                raise ValueError(
                    f"{self.name}: unknown aspect(s) {unknown}; known: {', '.join(known)}"
                )
            self.aspects = tuple(known[a] for a in dict.fromkeys(aspects))
        self.model = model
        self.threads = threads
        self.context_tokens = positive_int(self.name, "context_tokens", context_tokens)
        self.max_chars = positive_int(self.name, "max_chars", max_chars)

    def fill(self, record: RagRecord) -> tuple[Filling, bool] | str:
        """``([(direction, fields)], truncated)`` for the prompts, or an error message."""
        raise NotImplementedError

    def prompts(self, record: RagRecord) -> list[tuple[str, str, str, str]] | str:
        """``(aspect, direction, prefix, target)`` of every prompt, or an error message."""
        planned = self._plan(record)
        return planned if isinstance(planned, str) else planned[0]

    def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
        planned = [self._plan(r) for r in records]
        pairs = [(p[2], p[3]) for plan in planned if not isinstance(plan, str) for p in plan[0]]
        found = iter(self._score(pairs))
        results = []
        for plan in planned:
            if isinstance(plan, str):
                results.append([self.error_score(plan, name=self._name(a)) for a in self.aspects])
                continue
            prompts, truncated = plan
            scored = [next(found) for _ in prompts]
            results.append(self._scores(prompts, scored, truncated))
        return results

    def _plan(self, record: RagRecord) -> tuple[list[tuple[str, str, str, str]], bool] | str:
        filled = self.fill(record)
        if isinstance(filled, str):
            return filled
        fillings, truncated = filled
        prompts = [
            (aspect.key, direction, *split_prompt(aspect.template, fields))
            for aspect in self.aspects
            for direction, fields in fillings
        ]
        return prompts, truncated

    def _score(self, pairs: list[tuple[str, str]]) -> list[Any]:
        if not pairs:
            return []
        lm = causal_lm(self.model, threads=self.threads, context_tokens=self.context_tokens)
        return lm.score(pairs)

    def _aspect_value(self, scored: Any) -> tuple[float, dict[str, Any]]:
        """One prompt's value (the average NLL of its scored text) and what to keep of it."""
        value = -scored.mean_logprob
        return value, {"avg_nll": value, "tokens": scored.tokens}

    def _scores(
        self, prompts: list[tuple[str, str, str, str]], scored: list[Any], truncated: bool
    ) -> list[Score]:
        scores = []
        for aspect in self.aspects:
            mine = [(p, s) for p, s in zip(prompts, scored, strict=True) if p[0] == aspect.key]
            if any(s.tokens == 0 for _, s in mine):
                scores.append(self.error_score("no token to score", name=self._name(aspect)))
                continue
            by_direction = {}
            for p, s in mine:
                found, kept = self._aspect_value(s)
                by_direction[p[1] or "forward"] = {"value": found, **kept, "windows": s.windows}
            value = math.fsum(d["value"] for d in by_direction.values()) / len(by_direction)
            model = mine[0][1].model
            scores.append(
                self.score(
                    value,
                    name=self._name(aspect),
                    explanation=self._explain(value, model),
                    model=model,
                    details={
                        "aspect": aspect.key,
                        "primary": aspect == self.all_aspects[0],
                        "directions": by_direction,
                        "truncated": truncated or any(s.truncated for _, s in mine),
                        "context_tokens": self.context_tokens,
                    },
                )
            )
        return scores

    def _explain(self, value: float, model: str) -> str:
        return (
            f"average negative log-likelihood {value:.3f} per token of the scored text under "
            f"{model} (lower is better)"
        )

    def _name(self, aspect: Aspect) -> str:
        return f"{self.name}.{aspect.key}"

    def _texts(self, record: RagRecord, *fields: str) -> tuple[list[str], bool] | str:
        """The record's ``fields`` as text cut to ``max_chars``, or an error message."""
        texts, truncated = [], False
        for field in fields:
            text = as_text(getattr(record, field))
            if not text.strip():
                return f"{self.name} needs a non-empty {field}"
            truncated = truncated or len(text) > self.max_chars
            texts.append(text[: self.max_chars])
        return texts, truncated


class GptScoreQa(GptScore):
    """GPTScore of the answer as a dialogue turn: eight yes/no quality questions.

    Under the packaged 0.5B model it tells word salad from a fluent answer (7 of 8 questions)
    but not an off-topic or a wrong answer from the right one (3-5 of 8, a coin), and its eight
    aspects barely differ: read it as a weak fluency signal, not as the qualities it names
    (BENCHMARKS.md, "GPTScore probes").

    ``target`` says which tokens of the prompt's last line, ``Answer: Yes``, make the value:
    ``yes_vs_no`` (the default: ``-ln P(Yes | Yes or No)``, the verdict token against its
    alternative), ``answer_yes`` (the catalogue's literal reading: the average NLL of the tokens
    of "Answer: Yes", which mixes in how likely the model finds the word "Answer" after the
    conversation: it ranked off-topic answers above fluent ones on all eight aspects) or ``yes``
    (the NLL of " Yes" alone, which ranked word salad first). All three come from the same
    forward pass and are kept in ``details["directions"]``.
    """

    name: ClassVar[str] = "gptscore_qa"
    requires: ClassVar[frozenset[str]] = frozenset({"query", "response"})
    all_aspects = QA_ASPECTS

    def __init__(self, *, target: str = DEFAULT_QA_TARGET, **options: Any) -> None:
        """Build the evaluator.

        Args:
            target: ``answer_yes``, ``yes`` or ``yes_vs_no`` (see the class docstring).
            **options: Those of ``GptScore``.
        """
        if target not in QA_TARGETS:
            raise ValueError(
                f"gptscore_qa: target must be one of {', '.join(QA_TARGETS)}, got {target!r}"
            )
        self.target = target
        super().__init__(**options)

    def _score(self, pairs: list[tuple[str, str]]) -> list[Any]:
        if not pairs:
            return []
        lm = causal_lm(self.model, threads=self.threads, context_tokens=self.context_tokens)
        heads = [(prefix, target.removesuffix(VERDICT)) for prefix, target in pairs]
        return lm.score(heads, next_tokens=(VERDICT, " No"))

    def _aspect_value(self, scored: Any) -> tuple[float, dict[str, Any]]:
        yes, no = scored.next_logprobs
        answer_yes = -(math.fsum(scored.logprobs) + yes) / (scored.tokens + 1)
        both = max(yes, no) + math.log1p(math.exp(-abs(yes - no)))
        found = {"answer_yes": answer_yes, "yes": -yes, "yes_vs_no": both - yes}
        return found[self.target], {
            "target": self.target,
            "avg_nll": round(answer_yes, 6),
            **{k: round(v, 6) for k, v in found.items()},
            "p_yes_vs_no": round(math.exp(yes - both), 6),
            "tokens": scored.tokens + 1,
        }

    def _explain(self, value: float, model: str) -> str:
        what = {
            "answer_yes": 'average negative log-likelihood per token of "Answer: Yes"',
            "yes": 'negative log-likelihood of the answer " Yes"',
            "yes_vs_no": '-ln P(" Yes") against " No"',
        }[self.target]
        return f"{what} {value:.3f} under {model} (lower is better)"

    def fill(self, record: RagRecord) -> tuple[Filling, bool] | str:
        earlier, cut_earlier = self._earlier_turns(record)
        # With the earlier turns in the prompt the follow-up reads as the user wrote it;
        # without them, a follow-up's standalone question stands in for it.
        found = self._texts(record if earlier else as_asked(record), "query", "response")
        if isinstance(found, str):
            return found
        (query, answer), truncated = found
        history = "\n".join([*earlier, f"Human: {query}", f"AI: {answer}"])
        return [("", {"history": history, "target": "Answer: Yes"})], truncated or cut_earlier

    def _earlier_turns(self, record: RagRecord) -> tuple[list[str], bool]:
        """``Human: ...`` / ``AI: ...`` lines of the turns before this one (oldest first): the
        most recent whole turns that fit in ``max_chars`` together (the last turn cut to it when
        it alone is longer), and whether any turn was left out or cut."""
        conversation = record.conversation
        turns = conversation.history if conversation is not None else ()
        lines: list[str] = []
        used, cut = 0, False
        for turn in reversed(tuple(turns or ())):
            speaker = DIALOGUE_ROLES.get(str(getattr(turn, "role", "")).lower())
            text = as_text(getattr(turn, "content", None)).strip()
            if speaker is None or not text:
                continue
            if len(text) > self.max_chars - used:
                cut = True
                if lines:
                    break
                text = text[: self.max_chars]
            lines.append(f"{speaker}: {text}")
            used += len(text)
        return lines[::-1], cut


class _TwoWay(GptScore):
    """Rewrite prompts scored both ways between the reference and the answer, averaged."""

    requires: ClassVar[frozenset[str]] = frozenset({"response", "reference"})
    # Two passes per aspect: a record at the default caps took 171 s on one busy CPU thread.
    timeout_s = 360.0

    def fill(self, record: RagRecord) -> tuple[Filling, bool] | str:
        found = self._texts(record, "reference", "response")
        if isinstance(found, str):
            return found
        (reference, answer), truncated = found
        return [
            ("reference_to_answer", {"source": reference, "target": answer}),
            ("answer_to_reference", {"source": answer, "target": reference}),
        ], truncated


class GptScoreTranslation(_TwoWay):
    """GPTScore of a translation against the expected one: accuracy, fluency, MQM."""

    name: ClassVar[str] = "gptscore_translation"
    all_aspects = TRANSLATION_ASPECTS


class GptScoreSummarizationRef(_TwoWay):
    """GPTScore of a summary against a reference summary: six aspects."""

    name: ClassVar[str] = "gptscore_summarization_ref"
    all_aspects = SUMMARIZATION_REF_ASPECTS


class GptScoreSummarization(GptScore):
    """GPTScore of the answer as a summary of the question's text (no reference)."""

    name: ClassVar[str] = "gptscore_summarization"
    requires: ClassVar[frozenset[str]] = frozenset({"query", "response"})
    all_aspects = SUMMARIZATION_ASPECTS

    def fill(self, record: RagRecord) -> tuple[Filling, bool] | str:
        found = self._texts(record, "query", "response")
        if isinstance(found, str):
            return found
        (source, answer), truncated = found
        return [("", {"source": source, "target": answer})], truncated
