"""Open requests and the framework runs that belong to them.

A ``Request`` holds what one in-flight request (one user turn) has gathered so far; a ``Step``
is one of its open retriever, LLM or tool spans. ``RequestTable`` maps run ids to both and keeps
those maps and each request's own lists of run ids in step: opening and closing steps, releasing
a request that ends, and picking out the stale requests to close as ``incomplete``. Its
``scope`` map gives the innermost open step a run sits in (a retriever inside an agent's tool,
an inner retriever inside an ensemble), so steps nest in the trace as they did in the app. It
makes no spans; that is ``Capture``'s job.
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry.context import Context

from ragtrace import _semconv as sc
from ragtrace._capture.drafts import SpanDraft
from ragtrace._model import Chunk, ModelCall, ModelCalls, ToolCall, Turn, TurnChunks


class Step:
    """An open retriever, LLM or tool step inside a request, with its span's draft.

    ``parent`` is the open step it runs in (None: directly under the request's root);
    ``chunks_added`` counts the chunks it (or a retriever inside it) gave the request;
    ``call`` is an LLM step's entry in ``Request.calls``.
    """

    __slots__ = (
        "arguments",
        "call",
        "chunks_added",
        "index",
        "kind",
        "name",
        "parent",
        "request",
        "span",
        "tokens",
    )

    def __init__(
        self,
        name: str,
        request: Request,
        span: SpanDraft,
        kind: str = "step",
        parent: Step | None = None,
    ) -> None:
        self.name = name
        self.request = request
        self.span = span
        self.kind = kind
        self.parent = parent
        self.chunks_added = 0
        self.tokens: list[str] = []
        self.arguments: str | None = None  # a tool call's arguments as text
        self.index = 0  # a tool call's place among the request's, in start order
        self.call: ModelCall | None = None  # an LLM call's input and output, as far as seen

    def within(self, kind: str) -> Step | None:
        """The innermost step of ``kind`` this one runs in (itself included), if any."""
        step: Step | None = self
        while step is not None:
            if step.kind == kind:
                return step
            step = step.parent
        return None


class Request:
    """State of one in-flight request; owned by ``Capture``.

    ``span`` is the RAG root's draft and ``parent`` the context it was opened in (the app's
    current span, if any, becomes its parent); ``steps_done`` are the drafts of the steps that
    ended (``end_step``), written with the root when the request ends.
    """

    __slots__ = (
        "agent",
        "attributes",
        "calls",
        "chunk_probes",
        "context",
        "error",
        "finished",
        "history",
        "ids_sought",
        "implicit",
        "input_tokens",
        "key",
        "llm_calls",
        "model",
        "open_links",
        "open_steps",
        "output_tokens",
        "parent",
        "query",
        "raw_chunk_texts",
        "raw_chunks",
        "raw_query",
        "retrievals",
        "run_keys",
        "session_id",
        "shows_query",
        "span",
        "standalone_query",
        "start_mono",
        "start_ns",
        "steps_done",
        "tool_calls",
        "tools_started",
        "truncated",
        "turn",
        "user_id",
    )

    def __init__(
        self, key: object, span: SpanDraft, parent: Context, query: str | None, start_ns: int
    ) -> None:
        self.key = key
        self.span = span
        self.parent = parent
        self.steps_done: list[SpanDraft] = []
        self.query = query
        self.shows_query = query is not None  # the root's input.value is the query
        self.start_ns = start_ns
        self.start_mono = time.monotonic()
        # The turn's chunks, each document once; ``retrievals`` counts the retrievals that
        # gave it any (the index of the next one).
        self.context = TurnChunks()
        self.retrievals = 0
        # Each chunk's whole text (None where it was cut), for the prompt dedupe's references.
        self.raw_chunk_texts: list[str | None] = []
        # What each chunk's text is found by in a prompt (``ragtrace._model.probe``: before
        # redaction, a cut one's kept beginning), and the model calls' inputs as far as they
        # held those and earlier outputs: which chunks reached the answer (``Chunk.used``).
        self.chunk_probes: list[str | None] = []
        self.calls = ModelCalls()
        # The texts before redaction, kept only for raw-text evaluators (``Capture``'s
        # ``keep_raw``): never written anywhere.
        self.raw_chunks: list[Chunk] | None = None
        self.raw_query: str | None = None
        self.model: str | None = None
        self.error: str | None = None
        self.finished = False
        self.implicit = False
        self.ids_sought = False  # ``Capture.set_ids`` ran (ids looked for inside the request)
        self.run_keys: list[object] = []
        self.open_steps: dict[object, Step] = {}
        self.open_links: set[object] = set()
        self.truncated: list[str] = []
        self.attributes: dict[str, Any] = {}
        self.input_tokens = 0
        self.output_tokens = 0
        # Agents and conversations: filled only when the app has them.
        self.agent = False
        self.llm_calls = 0
        self.tools_started = 0
        self.tool_calls: list[tuple[int, ToolCall]] = []  # (start order, call)
        self.session_id: str | None = None
        self.user_id: str | None = None
        self.turn: int | None = None
        self.history: tuple[Turn, ...] = ()
        self.standalone_query: str | None = None

    def mark_agent(self) -> None:
        """The request is an agent's turn: its root becomes an AGENT span (``invoke_agent``)."""
        if not self.agent:
            self.agent = True
            self.span.attributes[sc.OI_SPAN_KIND] = sc.OI_KIND_AGENT
            self.span.attributes[sc.GEN_AI_OPERATION_NAME] = sc.GEN_AI_OP_INVOKE_AGENT

    def end_step(self, step: Step) -> None:
        """End ``step``'s span draft now and keep it to be written with the request."""
        step.span.end()
        self.steps_done.append(step.span)


class RequestTable:
    """The open requests, keyed by their root run id, and every run id that belongs to one.

    ``Capture`` reads the three maps directly and links runs that get no span itself (those
    are single dict operations on the hot path); everything that has to change several maps
    at once goes through the methods here.

    Args:
        max_open: Most requests open at once; beyond it the oldest is stale.
        timeout_s: Age after which an open request is stale.

    Attributes:
        requests: Open requests by root run id, oldest first (an implicit request, made for a
            retriever or LLM run with no enclosing request, is not in it).
        runs: The open request of every run id that is part of one, root ids included.
        steps: Open retriever, LLM and tool steps by run id.
        scope: The innermost open step of each run linked inside one (a chain inside a tool).
        late_ignored: Ends that arrived for runs no longer (or never) open.
    """

    __slots__ = ("_max_open", "_timeout_s", "late_ignored", "requests", "runs", "scope", "steps")

    def __init__(self, max_open: int, timeout_s: float) -> None:
        self._max_open = max_open
        self._timeout_s = timeout_s
        self.requests: dict[object, Request] = {}
        self.runs: dict[object, Request] = {}
        self.steps: dict[object, Step] = {}
        self.scope: dict[object, Step] = {}
        self.late_ignored = 0

    def enclosing(self, parent_key: object) -> Step | None:
        """The innermost open step that run ``parent_key`` is, or runs in."""
        if parent_key is None:
            return None
        step = self.steps.get(parent_key)
        return step if step is not None else self.scope.get(parent_key)

    def add(self, request: Request) -> None:
        """Open ``request`` under its root run id."""
        self.requests[request.key] = request
        self.runs[request.key] = request

    def add_step(self, key: object, step: Step) -> None:
        """Open ``step`` for run ``key`` inside its request."""
        request = step.request
        self.steps[key] = step
        request.open_steps[key] = step
        self.runs[key] = request
        request.run_keys.append(key)

    def close_step(self, key: object) -> Step | None:
        """Take the open step of run ``key`` out of the table (None, counted, if not open)."""
        step = self.steps.pop(key, None)
        if step is None:
            self.late_ignored += 1
            return None
        step.request.open_steps.pop(key, None)
        self.runs.pop(key, None)
        return step

    def release(self, request: Request) -> None:
        """Mark ``request`` finished and forget its runs (its ``open_steps`` are left to end)."""
        request.finished = True
        runs = self.runs
        for key in request.run_keys:
            runs.pop(key, None)
        runs.pop(request.key, None)
        self.requests.pop(request.key, None)
        for key in request.open_steps:
            self.steps.pop(key, None)
        if self.scope:
            scope = self.scope
            for key in request.run_keys:
                scope.pop(key, None)

    def pop_stale(self, now: float) -> Request | None:
        """Take out the oldest request if too many are open or it is older than the timeout.

        Args:
            now: ``time.monotonic()`` when the caller started looking.

        Returns:
            The request, its ``error`` saying why it is incomplete, or None when none is stale.
        """
        requests = self.requests
        deadline = now - self._timeout_s
        while requests:
            try:
                oldest = next(iter(requests.values()))
            except (StopIteration, RuntimeError):
                return None
            too_many = len(requests) >= self._max_open
            if not too_many and oldest.start_mono > deadline:
                return None
            if requests.pop(oldest.key, None) is None:
                continue
            oldest.error = (
                "incomplete: too many open requests"
                if too_many
                else f"incomplete: no end event within {self._timeout_s:g} s"
            )
            return oldest
        return None
