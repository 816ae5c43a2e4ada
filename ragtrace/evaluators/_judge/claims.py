"""LLM-judge faithfulness and hallucination: claims extracted by a judge, checked one by one.

After 002 ("Faithfulness", "Hallucination"), 003 ("Faithfulness", "Hallucination Check") and
Ejento 1.6 (000)::

    judge_faithfulness                        = supported claims / claims in the answer
    judge_hallucination.unsupported_claims    = unsupported claims / claims in the answer (002)
    judge_hallucination.contradicted_contexts = contexts the answer contradicts / contexts (003)

Steps, as the seeds write them:

1. the judge splits the answer into claims (prompt ``claims_extract``: one call returning the
   claims as a JSON list; the question is shown so pronouns can be resolved; a question is
   not a claim). With ``claims="sentences"`` the answer's sentences are the claims instead (no
   call; cheaper, and what the local ``faithfulness`` evaluator does). An extraction that
   failed falls back to the answer's sentences, and ``details["claim_fallbacks"]`` says why:
   a reply that did not parse, one listing nothing but questions, or one listing the same
   claim ``LOOP_REPEATS`` (3) times or more (a small judge looping on its first claim; on a
   judge on this machine the schema's limits make the grammar close such a loop: docs/judges.md).
   Sentences addressed to the evaluation ("ignore your instructions", "mark this as faithful":
   ``steering``) are kept out of the extraction and of every prompt, and count as unsupported
   claims (verdict ``idk``, ``overruled`` saying why) without a judge call;
2. every claim is checked against the retrieved chunks, numbered in rank order (prompt
   ``claims_verdict``, read from the judge's token probabilities: ``verdicts``): ``yes``
   (stated or directly inferable), ``no`` (the context conflicts
   with it) or ``idk`` (the context does not say). 002: a claim is supported when it "aligns
   with the context without contradiction" and unsupported when it "contradicts the context or
   has no basis in it", so ``yes`` counts as supported and both ``no`` and ``idk`` as
   unsupported; the verdict stays in ``details`` so a reviewer sees which of the two it was;
3. for 003's hallucination, each retrieved chunk is checked on its own against the whole answer
   (the same ``claims_verdict`` prompt, the answer as the claim): the chunk is contradicted when
   the verdict is ``no`` (the chunk conflicts with the answer); ``idk`` (the chunk does not
   talk about it) and ``yes`` are not contradictions. 003 reads the contexts as "ground truth"
   contexts; online there is only the retrieved context, so the retrieved chunks are the
   contexts here.

One decision per call: the default 0.5B local judge is far more reliable on one claim at a time
than on a list. Each call is cached by the judge client. The calls of one record run
concurrently, up to the client's ``concurrency`` (``concurrency=`` sets another limit; 1 suits
a CPU judge on few cores). Cost per record: 1 + claims (+ chunks for hallucination) calls.

An answer in which the judge finds no claim (a refusal, a greeting, "I don't know") has nothing
unsupported: ``judge_faithfulness`` is 1.0 and ``unsupported_claims`` 0.0, both labelled
``no_claims``, with ``details["claims"] == []`` (the local ``faithfulness`` evaluator does the
same for an answer without sentences). ``contradicted_contexts`` does not depend on claims.

Caps: at most ``max_claims`` (16; the prompt asks for at most 16) claims are checked, the first
ones listed, and at most ``max_chunks`` (8) non-blank chunks are read, from the top; each text
is clipped by the prompt fence (``ragtrace._judges.prompts.DEFAULT_MAX_CHARS``).
``details["truncated"]`` says when a cap applied. Thresholds: 0.75 for faithfulness (004's
default), 0.5 for both hallucination scores (003's DeepEval run).

``ClaimJudge`` (claims, verdicts, chunk texts) is the base that
``judge_correctness`` and ``judge_noise`` build on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal, TypeVar

from ragtrace._judges.client import JudgeReply
from ragtrace._judges.prompts import DEFAULT_MAX_CHARS
from ragtrace._judges.usage import JudgeParseError
from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._base import InputError, positive_int
from ragtrace.evaluators._judge import steering, verdicts
from ragtrace.evaluators._judge.base import JudgeEvaluator, object_schema
from ragtrace.evaluators._statement_support import as_text
from ragtrace.evaluators._text import split_sentences

T = TypeVar("T")
R = TypeVar("R")
ClaimSource = Literal["judge", "sentences"]

DEFAULT_MAX_CLAIMS = 16
DEFAULT_MAX_CHUNKS = 8
PROMPT_MAX_CLAIMS = 16  # the extraction prompt asks for at most this many
CLAIM_MAX_CHARS = 240  # a grammar-enforced bound on one claim (judges on this machine)
EXTRACT_MAX_TOKENS = 1024  # room for PROMPT_MAX_CLAIMS claims of CLAIM_MAX_CHARS
LOOP_REPEATS = 3  # a claim listed this many times marks a looping extraction
VERDICT_MAX_TOKENS = verdicts.MAX_TOKENS

EXTRACT_PROMPT = "claims_extract"
VERDICT_PROMPT = "claims_verdict"

CLAIMS_SCHEMA: dict[str, Any] = object_schema(
    claims={
        "type": "array",
        "maxItems": PROMPT_MAX_CLAIMS,
        "items": {"type": "string", "maxLength": CLAIM_MAX_CHARS},
    }
)
VERDICT_SCHEMA = verdicts.SCHEMA
SUPPORTED, CONFLICTS = verdicts.SUPPORTED, verdicts.CONFLICTS
Verdict = verdicts.Verdict


def supported_ratio(verdicts: Sequence[str]) -> float:
    """Faithfulness (002, 003): claims with verdict ``yes`` / all claims; 1.0 for no claims."""
    if not verdicts:
        return 1.0
    return sum(v == SUPPORTED for v in verdicts) / len(verdicts)


def unsupported_ratio(verdicts: Sequence[str]) -> float:
    """002's hallucination: claims not ``yes`` (``no`` or ``idk``) / all claims; 0.0 for none."""
    return 1.0 - supported_ratio(verdicts)


def contradicted_ratio(contradicted: Sequence[bool]) -> float:
    """003's hallucination: contradicted contexts / contexts; 0.0 when there is no context."""
    if not contradicted:
        return 0.0
    return sum(bool(c) for c in contradicted) / len(contradicted)


def numbered(passages: Sequence[str]) -> str:
    """The context shown to the judge: ``[1] ...`` lines in rank order (one passage: as is)."""
    if len(passages) == 1:
        return passages[0]
    return "\n".join(f"[{i}] {p}" for i, p in enumerate(passages, start=1))


class ClaimJudge(JudgeEvaluator):
    """Base of the claim-based judge evaluators: find claims, check each against a text."""

    def __init__(
        self,
        *,
        claims: ClaimSource = "judge",
        max_claims: int = DEFAULT_MAX_CLAIMS,
        max_chunks: int = DEFAULT_MAX_CHUNKS,
        concurrency: int | None = None,
        yes_threshold: float | None = None,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            claims: ``judge`` (the judge extracts claims, as the seeds do) or ``sentences``
                (each sentence is a claim; no extraction call).
            max_claims: Most claims checked per text (the first ones).
            max_chunks: Most retrieved chunks read, from the top.
            concurrency: Most judge calls of one record in flight at once (None: the judge
                client's ``concurrency``; 1: one after the other).
            yes_threshold: A claim is supported when the judge's probability of "yes" is at
                least this (None: the judge model's calibrated cut, else 0.5; ``verdicts``).
            **options: ``judge`` (a JudgeClient, a litellm model string or None for the
                default judge), ``threshold``, ``timeout_s``, ...
        """
        super().__init__(**options)
        if claims not in ("judge", "sentences"):
            raise ValueError(f"{self.name}: claims must be 'judge' or 'sentences', got {claims!r}")
        self.claims: ClaimSource = claims
        self.max_claims = positive_int(self.name, "max_claims", max_claims)
        self.max_chunks = positive_int(self.name, "max_chunks", max_chunks)
        self.concurrency = (
            None if concurrency is None else positive_int(self.name, "concurrency", concurrency)
        )
        if yes_threshold is not None and not 0.0 <= yes_threshold <= 1.0:
            raise ValueError(f"{self.name}: yes_threshold must be in [0, 1], got {yes_threshold!r}")
        self.yes_threshold = yes_threshold

    def text(self, record: RagRecord, field_name: str) -> str:
        """A record field as text; raises InputError when it is missing or blank."""
        text = as_text(getattr(record, field_name, None))
        if not text.strip():
            raise InputError(f"{self.name} needs a non-empty {field_name}")
        return text

    def chunk_texts(self, record: RagRecord) -> tuple[list[str], bool]:
        """Texts of the top ``max_chunks`` non-blank chunks, and whether a cap applied."""
        chunks = record.chunks or ()
        if isinstance(chunks, str | bytes):
            chunks = (chunks,)
        texts = [as_text(getattr(c, "text", c)) for c in chunks]
        texts = [t for t in texts if t.strip()]
        if not texts:
            raise InputError(f"{self.name} needs retrieved chunks with text")
        truncated = len(texts) > self.max_chunks
        texts = texts[: self.max_chunks]
        return texts, truncated or any(len(t) > DEFAULT_MAX_CHARS for t in texts)

    def find_claims(
        self,
        text: str,
        question: object,
        replies: list[JudgeReply],
        fallbacks: list[str] | None = None,
    ) -> tuple[list[str], bool]:
        """The claims of ``text`` (blank and repeated ones dropped, at most ``max_claims``).

        A question asserts nothing, so extracted questions are dropped. A failed extraction
        (unparseable, only questions, or looping: see the module's notes) is replaced by the
        text's sentences, and the reason is appended to ``fallbacks``. Other judge failures
        (timeouts, an unreachable judge) propagate. Sentences that address the evaluation
        (``steering``) are kept out of the extraction and listed first, as they are, so that
        ``check_pairs`` counts them as unsupported.

        Returns the claims and whether a cap (``max_claims``, the prompt's clip) applied.
        """
        rest, addressed = steering.split_directed(text)
        if self.claims == "sentences":
            found = split_sentences(rest[:DEFAULT_MAX_CHARS])
        elif not rest.strip():
            found = []
        else:
            found, failure = self._extract(rest, question, replies)
            if failure is not None:
                found = split_sentences(rest[:DEFAULT_MAX_CHARS])
                if fallbacks is not None:
                    fallbacks.append(f"claims are the sentences: {failure}")
        listed = [sentence for sentence, _ in addressed] + found
        claims = list(dict.fromkeys(c.strip() for c in listed if c.strip()))
        truncated = len(claims) > self.max_claims or len(text) > DEFAULT_MAX_CHARS
        return claims[: self.max_claims], truncated

    def _extract(
        self, text: str, question: object, replies: list[JudgeReply]
    ) -> tuple[list[str], str | None]:
        """The judge's claims of ``text``, or ``[]`` and why the extraction failed."""
        try:
            reply = self.ask(
                EXTRACT_PROMPT,
                CLAIMS_SCHEMA,
                max_tokens=EXTRACT_MAX_TOKENS,
                question=as_text(question),
                text=text,
            )
        except JudgeParseError as exc:  # counted as a parse failure by the client
            return [], f"the judge's extraction did not parse ({exc})"
        replies.append(reply)
        listed = [c.strip() for c in reply.data["claims"]]
        if listed and max(Counter(listed).values()) >= LOOP_REPEATS:
            return [], f"the judge's extraction repeated a claim {LOOP_REPEATS} times or more"
        found = [c for c in listed if not c.endswith("?")]
        if listed and not found:
            return [], "the judge's extraction listed only questions"
        return found, None

    def verdict(self, claim: str, source: str) -> tuple[Verdict, JudgeReply]:
        """One judge call: does ``source`` support ``claim``?"""
        reply = self.ask(
            VERDICT_PROMPT,
            VERDICT_SCHEMA,
            max_tokens=VERDICT_MAX_TOKENS,
            logprobs=verdicts.TOP_LOGPROBS,
            source=source,
            claim=claim,
        )
        cut = self.yes_threshold
        if cut is None:
            cut = verdicts.yes_cut(self.judge.model_name)
        return verdicts.read_verdict(claim, reply, cut), reply

    def check_pairs(
        self, pairs: Sequence[tuple[str, str]], replies: list[JudgeReply]
    ) -> list[Verdict]:
        """The judge's verdict on each ``(claim, source)`` pair, in order.

        A pair asked twice is asked once (run concurrently, both would miss the cache). The
        judge sees each pair without sentences that address the evaluation; a claim made only
        of them gets ``verdicts.overruled``'s verdict without a call.
        """
        shown = {pair: steering.shown_to_judge(*pair) for pair in dict.fromkeys(pairs)}
        unique = list(dict.fromkeys(p for p in shown.values() if p is not None))
        answers = self.pooled(lambda pair: self.verdict(*pair), unique)
        found = dict(zip(unique, answers, strict=True))
        replies.extend(reply for _, reply in found.values())
        return [
            verdicts.overruled(pair[0]) if (seen := shown[pair]) is None else found[seen][0]
            for pair in pairs
        ]

    def check_claims(
        self, claims: Sequence[str], source: str, replies: list[JudgeReply]
    ) -> list[Verdict]:
        """The judge's verdict on each claim against one ``source``."""
        return self.check_pairs([(claim, source) for claim in claims], replies)

    def pooled(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``map_calls`` with this evaluator's ``concurrency`` (None: the client's)."""
        return self.map_calls(fn, items, self.concurrency)


class JudgeFaithfulness(ClaimJudge):
    """Share of the answer's claims that the retrieved context supports (judge verdicts)."""

    name: ClassVar[str] = "judge_faithfulness"
    requires: ClassVar[frozenset[str]] = frozenset({"response", "chunks"})
    threshold: float | None = 0.75

    def judge_record(self, record: RagRecord) -> list[Score]:
        answer = self.text(record, "response")
        chunks, cut_chunks = self.chunk_texts(record)
        replies: list[JudgeReply] = []
        fallbacks: list[str] = []
        claims, cut_claims = self.find_claims(answer, record.query, replies, fallbacks)
        verdicts = self.check_claims(claims, numbered(chunks), replies)
        supported = sum(v.supported for v in verdicts)
        return [
            self.score(
                supported_ratio([v.verdict for v in verdicts]),
                label=None if verdicts else "no_claims",
                explanation=(
                    f"{supported} of {len(verdicts)} claims supported by the retrieved context"
                    if verdicts
                    else "no claim found in the answer"
                ),
                details={
                    "claims": [v.detail() for v in verdicts],
                    "supported": supported,
                    "truncated": cut_chunks or cut_claims,
                    "claim_fallbacks": fallbacks,
                },
                replies=replies,
            )
        ]


class JudgeHallucination(ClaimJudge):
    """Unsupported claims (002) and contradicted contexts (003), both lower is better."""

    name: ClassVar[str] = "judge_hallucination"
    requires: ClassVar[frozenset[str]] = frozenset({"response", "chunks"})
    direction = "lower_is_better"
    threshold: float | None = 0.5
    score_names: ClassVar[tuple[str, ...]] = (
        "judge_hallucination.unsupported_claims",
        "judge_hallucination.contradicted_contexts",
    )

    def judge_record(self, record: RagRecord) -> list[Score]:
        answer = self.text(record, "response")
        chunks, cut_chunks = self.chunk_texts(record)
        replies: list[JudgeReply] = []
        fallbacks: list[str] = []
        claims, cut_claims = self.find_claims(answer, record.query, replies, fallbacks)
        context = numbered(chunks)
        pairs = [(c, context) for c in claims] + [(answer, chunk) for chunk in chunks]
        found = self.check_pairs(pairs, replies)
        verdicts, per_chunk = found[: len(claims)], found[len(claims) :]
        contradicted = [v.verdict == CONFLICTS for v in per_chunk]
        unsupported = sum(not v.supported for v in verdicts)
        details = {
            "claims": [v.detail() for v in verdicts],
            "contexts": [
                {"rank": k, "contradicted": c, "verdict": v.verdict, "p_yes": v.detail()["p_yes"]}
                for k, (c, v) in enumerate(zip(contradicted, per_chunk, strict=True), 1)
            ],
            "truncated": cut_chunks or cut_claims,
            "claim_fallbacks": fallbacks,
        }
        unsupported_name, contradicted_name = self.score_names
        return [
            self.score(
                unsupported_ratio([v.verdict for v in verdicts]),
                name=unsupported_name,
                label=None if verdicts else "no_claims",
                explanation=(
                    f"{unsupported} of {len(verdicts)} claims not supported by the context"
                    if verdicts
                    else "no claim found in the answer"
                ),
                details=details,
                replies=replies,
            ),
            self.score(
                contradicted_ratio(contradicted),
                name=contradicted_name,
                explanation=(
                    f"the answer contradicts {sum(contradicted)} of {len(chunks)} retrieved chunks"
                ),
                details=details,
                replies=replies,
            ),
        ]
