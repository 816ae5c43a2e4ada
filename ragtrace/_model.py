"""Core records: what ragtrace captures from a request and what evaluators say about it.

Plain frozen dataclasses with no dependencies, so every part of ragtrace (integrations,
pipeline, evaluators, sinks) and every user can build and read them cheaply::

    record = RagRecord(trace_id="...", span_id="...", query="Who wrote it?",
                       chunks=(Chunk("It was written by Ada.", id="doc-1", score=0.82),),
                       response="Ada wrote it.")
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

Direction = Literal["higher_is_better", "lower_is_better"]
"""Whether a higher or a lower value of a score is the better one (``Score.direction``,
``Evaluator.direction``): ``passed`` compares the value with the threshold this way."""
EvaluatorKind = Literal["lexical", "model", "judge", "human"]
"""What an evaluator scores with (``Score.evaluator_kind``, ``Evaluator.kind``): ``lexical``
(regular expressions, counting), ``model`` (a local model), ``judge`` (an LLM) or ``human`` (a
reviewer's label)."""
RequestStatus = Literal["ok", "error", "abandoned", "incomplete"]
"""How a request ended (``RagRecord.status``): ``ok``, ``error`` (``RagRecord.error`` says
what), ``abandoned`` (a stream the consumer stopped reading) or ``incomplete`` (the framework
never reported the end; evicted after a timeout)."""
ToolStatus = Literal["ok", "error"]
"""How an agent's tool call ended (``ToolCall.status``): ``ok``, or ``error`` when the tool
raised or reported an error."""

_EMPTY: Mapping[str, Any] = MappingProxyType({})

RETRIEVALS_KEY = "ragtrace.retrievals"
"""Chunk metadata: every retrieval of the turn that returned the chunk, when more than one did
(``TurnChunks``): a list of ``{"retrieval": <its index in the turn, 0 for the first>,
"query": <what it was asked, or None>, "score": <the score it gave, or None>}`` in the order
they ran."""


def _empty() -> Mapping[str, Any]:
    return _EMPTY


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrieved chunk, as the retriever returned it (records keep them in rank order).

    Attributes:
        text: The chunk's content (possibly truncated or redacted by the capture settings).
        id: The document or node id, when the framework or the metadata carries one.
        score: The retriever's similarity or relevance score, when known.
        metadata: The chunk's metadata, made JSON-safe.
        source: Which retriever returned it (the retriever's name; inside an agent's tool,
            ``tool/retriever``).
        query: The query this chunk was retrieved for, when it is not the user's own (an
            agent's tool call, a sub-question, a rewritten follow-up or a corrective rewrite).
        step: The index of the agent's tool call that retrieved it (an index into
            ``RagRecord.tool_calls``), when a tool retrieved it.
        retrieval: Which retrieval of the turn returned it (0 for the first), when known.
        used: Whether its text reached the model call that produced the answer (True), did
            not (False: a grader dropped it, a later retrieval replaced it), or None when
            that is not known (the call's input was not seen). See ``ModelCalls``.

    A record holds each document once (``TurnChunks``): a chunk that several retrievals of the
    turn returned keeps its first place, the best score and its first retrieval's ``source``,
    ``query``, ``step`` and ``retrieval``, and ``metadata["ragtrace.retrievals"]`` lists every
    retrieval that returned it (``RETRIEVALS_KEY``).
    """

    text: str
    id: str | None = None
    score: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=_empty)
    source: str | None = None
    query: str | None = None
    step: int | None = None
    retrieval: int | None = None
    used: bool | None = None


_ChunkKey = tuple[str | None, str]
_Seen = tuple[int, str | None, float | None]  # a retrieval that returned a chunk, and its score


class TurnChunks:
    """The chunks of one turn with each document once, as its retrievals return them.

    The same document is the same id and text (the same text where there is no id; two chunks
    that share an id but not their text, parts of one source document under its id, stay
    apart). A chunk added with its retrieval's index gets it as ``Chunk.retrieval`` (unless it
    has one). A document returned again keeps its first place and its first chunk's text,
    ``source``, ``query``, ``step`` and ``retrieval``, takes the best (highest) score any
    retrieval gave it, is ``used`` when either was, and, once two or more retrievals returned
    it, lists them all in its metadata under ``RETRIEVALS_KEY``. Capture, ``ask``/``evaluate``
    and every ingest mapper merge with it::

        turn = TurnChunks()
        for index, (query, found) in enumerate(retrievals):
            for chunk in found:
                turn.add(chunk, index, query)
        record_chunks = tuple(turn.chunks)
    """

    __slots__ = ("_at", "_seen", "chunks")

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []
        self._at: dict[_ChunkKey, int] = {}
        self._seen: list[list[_Seen]] = []

    def add(
        self, chunk: Chunk, retrieval: int | None = None, query: str | None = None
    ) -> tuple[int, bool]:
        """Add ``chunk`` as returned by the turn's retrieval number ``retrieval`` (asked
        ``query``; None: not known).

        Returns:
            Its place in ``chunks``, and whether it is new there (False: it merged with the
            document already at that place).
        """
        seen = _seen_in(chunk)
        if retrieval is not None:
            _note(seen, (retrieval, query, chunk.score))
            if chunk.retrieval is None:
                chunk = replace(chunk, retrieval=retrieval)
        key = (chunk.id, chunk.text)
        at = self._at.get(key)
        if at is None:
            self._at[key] = len(self.chunks)
            self._seen.append(seen)
            self.chunks.append(_with_retrievals(chunk, chunk.score, seen))
            return len(self.chunks) - 1, True
        merged = self._seen[at]
        for item in seen:
            _note(merged, item)
        first = self.chunks[at]
        if first.used is not True and chunk.used is not None and chunk.used != first.used:
            first = replace(first, used=chunk.used)
        self.chunks[at] = _with_retrievals(first, _best(first.score, chunk.score), merged)
        return at, False


def once_each(chunks: Iterable[Chunk]) -> tuple[Chunk, ...]:
    """``chunks`` with each document once (``TurnChunks``), where the retrieval that returned
    each one is not known (a list of contexts)."""
    turn = TurnChunks()
    for chunk in chunks:
        turn.add(chunk)
    return tuple(turn.chunks)


def like_merged(chunk: Chunk, merged: Chunk) -> Chunk:
    """``chunk`` (the same document in another form: before redaction) with the score, the
    retrievals and the ``used`` mark ``merged`` has."""
    seen = merged.metadata.get(RETRIEVALS_KEY)
    metadata = {k: v for k, v in chunk.metadata.items() if k != RETRIEVALS_KEY}
    if seen is not None:
        metadata[RETRIEVALS_KEY] = seen
    return replace(chunk, score=merged.score, metadata=metadata, used=merged.used)


MIN_FED_CHARS = 20
"""Shortest model output that counts as read by a later call when its input holds it: a
grader's ``yes`` is found in any prompt, a draft answer is not."""


class ModelCall:
    """One model call as ``ModelCalls`` saw it (a handle: ``saw`` gives it, ``answered``
    takes it back)."""

    __slots__ = ("fed", "output", "seen")

    def __init__(self, seen: frozenset[int] | None, fed: tuple[ModelCall, ...]) -> None:
        self.seen = seen  # the chunks its input held; None: its input was not seen
        self.fed = fed  # the earlier calls whose output its input held
        self.output: str | None = None


class ModelCalls:
    """A turn's model calls as far as their inputs were seen, and which chunks reached the
    answer (``Chunk.used``).

    A chunk reached the answer when its text (stripped; a cut chunk's kept beginning) is in
    the input of the model call that produced the answer (the last call whose output is the
    answer, else the last whose output holds it or is held in it, ``MIN_FED_CHARS`` or more
    of it), or in the input of an earlier call whose output that call read, and so on back
    (LlamaIndex's refine and tree-summarize modes answer over several calls; a grader's short
    verdict, under ``MIN_FED_CHARS``, never counts). Nothing is known (None) when no call was
    seen, none gave the answer (it was made outside the calls seen) or the answering call's
    input was not seen. Capture notes a call's input as it starts and its output as it ends
    (calls of one turn may run at once, on threads: each is its own handle); ingest does the
    same over a trace's LLM spans::

        calls = ModelCalls()
        probes = [probe(c.text) for c in chunks]
        call = calls.saw(prompt, probes)
        calls.answered(call, output)
        flags = calls.used(probes, answer)  # one per chunk, or None
        chunks = with_used(chunks, flags)
    """

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        self._calls: list[ModelCall] = []

    def __len__(self) -> int:
        return len(self._calls)

    def saw(self, prompt: str | None, probes: Sequence[str | None]) -> ModelCall:
        """Note a call whose input is ``prompt`` (None or empty: not seen), with the turn's
        chunks so far as ``probe`` gives them."""
        seen: frozenset[int] | None = None
        fed: tuple[ModelCall, ...] = ()
        if prompt:
            seen = frozenset(i for i, text in enumerate(probes) if text and text in prompt)
            fed = tuple(
                call
                for call in tuple(self._calls)
                if call.output is not None
                and len(call.output) >= MIN_FED_CHARS
                and call.output in prompt
            )
        call = ModelCall(seen, fed)
        self._calls.append(call)
        return call

    @staticmethod
    def answered(call: ModelCall | None, output: str | None) -> None:
        """Note the output of ``call`` (from ``saw``)."""
        if call is not None and isinstance(output, str):
            call.output = output.strip() or None

    def used(
        self, probes: Sequence[str | None], answer: str | None
    ) -> tuple[bool | None, ...] | None:
        """Per chunk (``probes``), whether it reached the call that produced ``answer``
        (None for a chunk without text); None when that is not known."""
        final = self._final(answer) if probes else None
        if final is None or final.seen is None:
            return None
        seen: set[int] = set()
        reached: set[int] = set()
        todo = [final]
        while todo:
            call = todo.pop()
            if id(call) not in reached:
                reached.add(id(call))
                seen.update(call.seen or ())
                todo.extend(call.fed)
        return tuple(None if not text else i in seen for i, text in enumerate(probes))

    def _final(self, answer: str | None) -> ModelCall | None:
        """The call that produced ``answer`` (None: no call seen gave it)."""
        want = answer.strip() if isinstance(answer, str) else ""
        if not want:
            return None
        calls = self._calls[::-1]
        for call in calls:
            if call.output == want:
                return call
        for call in calls:
            if call.output is not None and _holds(call.output, want):
                return call
        return None


def _holds(one: str, other: str) -> bool:
    """Whether either text holds the other, the one held ``MIN_FED_CHARS`` or longer (an
    answer with citations appended, an answer read out of a model's JSON)."""
    if len(one) < len(other):
        one, other = other, one
    return len(other) >= MIN_FED_CHARS and other in one


def probe(text: object) -> str | None:
    """What ``ModelCalls`` looks for of a chunk's text in a prompt: the text stripped (None
    when there is none)."""
    return (text.strip() or None) if isinstance(text, str) else None


def with_used(chunks: Sequence[Chunk], flags: Sequence[bool | None] | None) -> tuple[Chunk, ...]:
    """``chunks`` with ``Chunk.used`` set from ``flags`` (``ModelCalls.used``; None, or a
    None flag, leaves a chunk as it is)."""
    if flags is None:
        return tuple(chunks)
    return tuple(
        chunk if flag is None or chunk.used is flag else replace(chunk, used=flag)
        for chunk, flag in zip(chunks, flags, strict=False)
    ) + tuple(chunks[len(flags) :])


def _best(first: float | None, other: float | None) -> float | None:
    if first is None:
        return other
    return first if other is None else max(first, other)


def _note(seen: list[_Seen], item: _Seen) -> None:
    """Add a retrieval to ``seen``: once each, with the best score it gave."""
    for i, (retrieval, query, score) in enumerate(seen):
        if (retrieval, query) == item[:2]:
            seen[i] = (retrieval, query, _best(score, item[2]))
            return
    seen.append(item)


def _seen_in(chunk: Chunk) -> list[_Seen]:
    """The retrievals a chunk's metadata already lists (a record's chunk merged before)."""
    listed = chunk.metadata.get(RETRIEVALS_KEY)
    seen: list[_Seen] = []
    if not isinstance(listed, list | tuple):
        return seen
    for item in listed:
        if not isinstance(item, Mapping) or not isinstance(item.get("retrieval"), int):
            continue
        query, score = item.get("query"), item.get("score")
        _note(
            seen,
            (
                item["retrieval"],
                query if isinstance(query, str) else None,
                float(score) if isinstance(score, int | float) else None,
            ),
        )
    return seen


def _with_retrievals(chunk: Chunk, score: float | None, seen: list[_Seen]) -> Chunk:
    """``chunk`` with ``score`` and, when two or more retrievals returned it, their list."""
    listed = chunk.metadata.get(RETRIEVALS_KEY)
    if score == chunk.score and len(seen) < 2 and listed is None:
        return chunk
    metadata = {k: v for k, v in chunk.metadata.items() if k != RETRIEVALS_KEY}
    if len(seen) >= 2:
        metadata[RETRIEVALS_KEY] = [{"retrieval": r, "query": q, "score": s} for r, q, s in seen]
    return replace(chunk, score=score, metadata=metadata)


@dataclass(frozen=True, slots=True)
class Turn:
    """One earlier message of a conversation, as the record keeps it.

    Attributes:
        role: ``user`` or ``assistant``.
        content: The message's text (cut and redacted like the query).
    """

    role: str
    content: str


def chat_messages(turns: Sequence[Turn]) -> list[dict[str, str]]:
    """``turns`` as chat messages: ``[{"role": ..., "content": ...}, ...]``."""
    return [{"role": turn.role, "content": turn.content} for turn in turns]


@dataclass(frozen=True, slots=True)
class Conversation:
    """The conversation a request (one user turn) belongs to.

    Attributes:
        session_id: The conversation's id (LangGraph's ``thread_id``, a chat history's
            session, ``ragtrace.session(...)``), when the app has one.
        user_id: The user's id, when the app gives one.
        turn: How many user turns came before this one in the conversation, when known.
        history: The earlier turns the app had when it answered (oldest first, at most
            ``Config.max_history_turns`` of them).
        standalone_query: The question as the app rewrote it to stand on its own (a
            follow-up such as "and the other one?" made explicit), when it did.
    """

    session_id: str | None = None
    user_id: str | None = None
    turn: int | None = None
    history: tuple[Turn, ...] = ()
    standalone_query: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool an agent called while answering.

    Attributes:
        name: The tool's name.
        arguments: Its arguments as the model gave them (JSON or text, cut and redacted).
        status: ``ok``, or ``error`` when the tool raised or reported an error.
        error: What went wrong (type and message), for a failed call.
        duration_s: Wall time of the call in seconds.
        call_id: The model's id for the call, when it gave one.
    """

    name: str
    arguments: str | None = None
    status: ToolStatus = "ok"
    error: str | None = None
    duration_s: float = 0.0
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class RagRecord:
    """One finished request of a RAG application.

    Attributes:
        trace_id: 32 lowercase hex digits of the OpenTelemetry trace.
        span_id: 16 lowercase hex digits of the RAG root span.
        query: The user's question.
        chunks: Every document retrieved in the turn, once (``TurnChunks``), in rank order
            (several retrievals: in the order they ran, each document where it first came).
        response: The final answer (joined from the chunks of a streamed answer).
        reference: A ground-truth answer; only offline or when a label exists.
        app: The application name given to `ragtrace.init`.
        model: The model that produced the answer, when known.
        start_ns: Start time, UTC nanoseconds since the epoch.
        end_ns: End time, UTC nanoseconds since the epoch.
        error: The error that ended the request (type and message), if any.
        status: ``ok``, ``error``, ``abandoned`` (a stream the consumer stopped reading) or
            ``incomplete`` (the framework never reported the end; evicted after a timeout).
        attributes: Anything else worth keeping (route, tenant, token usage, truncation marks).
        conversation: The conversation this turn belongs to, when the app has one.
        tool_calls: The tools an agent called while answering, in the order they started.
        llm_calls: How many LLM calls the request made (an agent's steps).
    """

    trace_id: str
    span_id: str
    query: str | None
    chunks: tuple[Chunk, ...] = ()
    response: str | None = None
    reference: str | None = None
    app: str = "default"
    model: str | None = None
    start_ns: int = 0
    end_ns: int = 0
    error: str | None = None
    status: RequestStatus = "ok"
    attributes: Mapping[str, Any] = field(default_factory=_empty)
    conversation: Conversation | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    llm_calls: int = 0

    @property
    def duration_s(self) -> float:
        """Wall time of the request in seconds (0 when the times are unknown)."""
        return max(0, self.end_ns - self.start_ns) / 1e9


@dataclass(frozen=True, slots=True)
class Score:
    """One evaluator result about one record.

    Attributes:
        name: The metric, e.g. ``groundedness``.
        value: Normalised to [0, 1] where the metric allows; None when the evaluation failed.
        label: A short verdict (``pass``, ``fail``, ``toxic``, ...).
        explanation: Why, in words a reviewer can read.
        direction: Whether a higher value is better.
        threshold: The pass/fail boundary the value was compared with.
        passed: The outcome of that comparison, when there was a threshold.
        error: Set when the evaluator failed (raised, timed out, returned a bad value).
        evaluator_kind: lexical, model, judge or human.
        model: The model that produced the score, if any.
        details: Per-item verdicts and anything else (JSON-safe).
    """

    name: str
    value: float | None
    label: str | None = None
    explanation: str | None = None
    direction: Direction = "higher_is_better"
    threshold: float | None = None
    passed: bool | None = None
    error: str | None = None
    evaluator_kind: EvaluatorKind = "lexical"
    model: str | None = None
    details: Mapping[str, Any] = field(default_factory=_empty)

    def __post_init__(self) -> None:
        if self.value is not None and (
            not isinstance(self.value, int | float) or math.isnan(self.value)
        ):
            raise ValueError(f"Score {self.name!r}: value must be a real number or None")


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One evaluator's run over one record.

    Attributes:
        evaluator: The evaluator's name.
        scores: What it said (one error Score when it raised, hung or returned a bad value).
        start_ns: When the call started, UTC nanoseconds.
        end_ns: When it returned (or was given up on), UTC nanoseconds.
    """

    evaluator: str
    scores: tuple[Score, ...]
    start_ns: int
    end_ns: int

    @property
    def duration_s(self) -> float:
        return max(0, self.end_ns - self.start_ns) / 1e9
