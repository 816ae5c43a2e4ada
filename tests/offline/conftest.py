"""Evaluators for the offline tests, registered by name for the duration of a test."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import pytest

from ragtrace._judges import usage
from ragtrace._model import Chunk, RagRecord, Score
from ragtrace.evaluators import _registry as registry
from ragtrace.evaluators._base import Evaluator


def rec(response: str | None, query: str | None = "q", chunks: Sequence[str] = ("c",)) -> RagRecord:
    """A record whose trace id is irrelevant here."""
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query=query,
        chunks=tuple(Chunk(c) for c in chunks),
        response=response,
    )


class Length(Evaluator):
    """len(response) / 100, capped at 1; raises on the response "poison" (alone or in a batch).

    Remembers the batches it was called with (a test reads them); ``release`` ends a ``hang``.
    """

    name: ClassVar[str] = "length"
    requires: ClassVar[frozenset[str]] = frozenset({"response"})
    threshold = 0.1
    release = threading.Event()

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.batches: list[list[str | None]] = []

    def evaluate(self, record: RagRecord) -> list[Score]:
        text = record.response or ""
        if text == "poison":
            raise ValueError("poisoned record")
        if text == "hang":
            self.release.wait(10)
        if text == "own timeout":
            raise TimeoutError("upstream took too long")
        if text == "out of range":
            return [self.score(1.5)]
        if text == "not a score":
            return ["0.5"]  # type: ignore[list-item]
        return [self.score(min(1.0, len(text) / 100), explanation=f"{len(text)} chars")]

    def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
        self.batches.append([r.response for r in records])
        if any(r.response == "short batch" for r in records):
            return []
        return [self.evaluate(r) for r in records]


class Words(Evaluator):
    """Two scores: words in the query and words in the response (each / 10, capped)."""

    name: ClassVar[str] = "words"
    requires: ClassVar[frozenset[str]] = frozenset({"query", "response"})
    threshold = 0.5

    def evaluate(self, record: RagRecord) -> list[Score]:
        q = len((record.query or "").split())
        a = len((record.response or "").split())
        return [
            self.score(min(1.0, q / 10), name="words.query"),
            self.score(min(1.0, a / 10), name="words.response"),
        ]


class Crash(Evaluator):
    """1.0 for every record; the whole process exits with code 3 on the response "crash".

    Also reports one judge call per record (as a judge evaluator would), so a test can check that
    usage reported in a worker process reaches listeners in the parent.
    """

    name: ClassVar[str] = "crash"
    requires: ClassVar[frozenset[str]] = frozenset({"response"})

    def evaluate(self, record: RagRecord) -> list[Score]:
        if record.response == "crash":
            os._exit(3)
        usage.report(usage.JudgeCall(self.name, "fake-judge", usage.OK, 0.01, input_tokens=7))
        return [self.score(1.0)]


@pytest.fixture
def registered() -> Iterator[None]:
    """``length`` and ``words`` known to ``registry.create`` during the test."""
    registry.register("length", Length, replace=True)
    registry.register("words", Words, replace=True)
    Length.release.clear()
    yield
    Length.release.set()
    registry.unregister("length")
    registry.unregister("words")
