"""Scoring batches of passages for ``ragtrace._offline.index``: here, or in worker processes.

``score_batch`` runs the evaluators over one batch of probe records (``probe_records``: each
passage the only chunk of a record) while a writable passage store is installed, so that what
the embedders and NER compute goes into it. ``InlineIndexer`` does that in this process;
``ProcessIndexer`` in ``processes`` worker processes of the evaluation engine's
``ragtrace._engine.processes.ProcessPool`` (``run`` jobs, each process running a
``StoreWriter`` in place of an evaluation engine), each with its own models and its own
connection to the same store (SQLite serialises their writes; each batch is one transaction),
with at most two batches a process in flight so that a large corpus is read as it is indexed,
not all at once. The processes share no cache: each computes, and writes, what it indexes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragtrace._backends import passage_store
from ragtrace._backends.passage_store import PassageStore
from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators._base import Evaluator

if TYPE_CHECKING:
    from ragtrace._engine.processes import Reply

PROBE_QUERY = "What does this passage say?"
PROBE_ANSWER = "The passage answers the question."
IN_FLIGHT_PER_PROCESS = 2
_APP = "ragtrace-index"


@dataclass
class BatchResult:
    """What scoring one batch did: values written, and passages each evaluator failed on."""

    values: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)


def probe_records(texts: Sequence[str], first: int) -> list[RagRecord]:
    """One record a passage, the passage its only chunk (record ids from ``first``)."""
    return [
        RagRecord(
            trace_id=f"{first + i + 1:032x}",
            span_id=f"{i + 1:016x}",
            query=PROBE_QUERY,
            chunks=(Chunk(text=text, id=f"passage-{first + i}"),),
            response=PROBE_ANSWER,
            app=_APP,
        )
        for i, text in enumerate(texts)
    ]


def score_batch(evaluators: Sequence[Evaluator], records: list[RagRecord]) -> BatchResult:
    """Run ``evaluators`` over probe ``records``; the installed store receives the values. An
    evaluator that raises or returns error Scores is counted, not fatal: the others still run."""
    result = BatchResult()
    for evaluator in evaluators:
        try:
            outputs = evaluator.evaluate_batch(records)
        except Exception as exc:  # an evaluator that fails must not stop the rest
            failed, message = len(records), f"{type(exc).__name__}: {exc}"
        else:
            errors = [s.error for scores in outputs for s in scores if s.error]
            failed = sum(any(s.error for s in scores) for scores in outputs)
            message = errors[-1] if errors else ""
        if failed:
            result.failed[evaluator.name] = failed
            result.messages[evaluator.name] = message[:500]
    return result


class InlineIndexer:
    """Scores each batch in this process, ``store`` installed while it runs."""

    def __init__(self, evaluators: Sequence[Evaluator], store: PassageStore) -> None:
        self._evaluators = tuple(evaluators)
        self._store = store
        self._previous = passage_store.installed()
        passage_store.install(store)
        self._done: deque[BatchResult] = deque()

    def submit(self, texts: list[str], first: int) -> None:
        records = probe_records(texts, first)
        self._done.append(_scored_into(self._store, self._evaluators, records))

    def finished(self, wait: bool = False) -> Iterator[BatchResult]:
        """Results of the batches scored since the last call."""
        while self._done:
            yield self._done.popleft()

    def close(self) -> None:
        passage_store.install(self._previous)
        self._store.flush()


class ProcessIndexer:
    """Scores batches in ``processes`` worker processes writing to the store at ``path``.

    Raises:
        ValueError: An evaluator that cannot be sent to another process.
    """

    def __init__(self, evaluators: Sequence[Evaluator], path: str, processes: int) -> None:
        from ragtrace._engine.processes import ProcessPool

        self._limit = processes * IN_FLIGHT_PER_PROCESS
        self._pending: deque[Future[Reply]] = deque()
        self._pool = ProcessPool(
            evaluators, processes, StoreWriter, {"path": path}, shared_cache_mb=0
        )

    def submit(self, texts: list[str], first: int) -> None:
        """Send a batch; waits first while ``processes`` x 2 batches are in flight."""
        if len(self._pending) >= self._limit:
            self._pending[0].result()
        self._pending.append(self._pool.run(probe_records(texts, first)))

    def finished(self, wait: bool = False) -> Iterator[BatchResult]:
        """Results of the batches done (in order; ``wait``: of all of them). A batch whose
        process died raises here (``WorkerDied``), and so does one that failed there."""
        while self._pending and (wait or self._pending[0].done()):
            reply = self._pending.popleft().result()
            if reply.failure is not None:
                raise RuntimeError(f"worker process failed: {reply.failure}")
            yield reply.result

    def close(self) -> None:
        """Let each process finish the batches it holds, then stop it."""
        self._pool.close()


class StoreWriter:
    """What a worker process of ``ProcessIndexer`` runs each batch with: the writable store at
    ``path``, installed for as long as the process lives.

    Built in the process by ``ProcessPool`` as its ``run`` jobs' engine (``on_error`` unused:
    ``BatchResult`` counts failures).
    """

    def __init__(
        self, evaluators: Sequence[Evaluator], *, on_error: object = None, path: str
    ) -> None:
        self._evaluators = tuple(evaluators)
        self._store = PassageStore(path, writable=True)
        passage_store.install(self._store)
        self.stats: Mapping[str, Any] = {}

    def run(self, records: Sequence[RagRecord]) -> BatchResult:
        return _scored_into(self._store, self._evaluators, list(records))

    def close(self) -> None:
        passage_store.install(None)
        self._store.close()


def _scored_into(
    store: PassageStore, evaluators: Sequence[Evaluator], records: list[RagRecord]
) -> BatchResult:
    """``score_batch`` with ``store`` installed, flushed after it, and the values it added."""
    before = store.stats.writes
    result = score_batch(evaluators, records)
    store.flush()
    result.values = store.stats.writes - before
    return result
