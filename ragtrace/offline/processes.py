"""``ragtrace eval --processes N``: windows of records scored on N worker processes.

``ProcessRunner`` has ``Runner``'s face (``run``, ``submit``, ``prime``, ``stats``, ``close``)
over a ``ragtrace.pipeline.processes.ProcessPool``: each window goes to the least busy process,
where a ``Runner`` scores it, and comes back as it was sent. Error reports reach ``on_error``
here, with this process's record objects; stats are summed over the processes.

What to know (see ``ragtrace.pipeline.processes`` for the mechanics):

- **Models and caches are per process.** Each process loads its own models on its first window
  (side by side, so the wall time is about one load; memory is ``processes`` times one
  process's) and keeps its own embedding cache. ``prime`` sends records to *every* process,
  e.g. a knowledge base's chunks before a timed run.
- **Threads per process.** A model backend takes ``$RAGTRACE_MODEL_THREADS`` (default 1)
  intra-op threads in each process: on 2 cores, 2 processes x 1 thread.
- **Nothing is lost.** A process that dies gives every record of the windows it held an error
  Score from each evaluator that would have run (naming the exit code), the hook hears of each,
  and a fresh process takes its slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import fields

from ragtrace.evaluators.base import Evaluator
from ragtrace.evaluators.outputs import clip_error
from ragtrace.model import RagRecord, Score
from ragtrace.pipeline.call_errors import WorkerDied
from ragtrace.pipeline.processes import ProcessPool, Reply
from ragtrace.pipeline.runner import (
    DEFAULT_LOAD_ALLOWANCE_S,
    ErrorHook,
    EvaluatorStats,
    Outcome,
    Skip,
    check_runner_options,
)


class ProcessRunner:
    """Runs a fixed list of evaluators over windows of records on ``processes`` processes.

    Args:
        evaluators: Evaluators with distinct names (picklable), in the order their scores are
            reported.
        processes: Worker processes (>= 1).
        timeout_s, workers, load_allowance_s: Each process's ``Runner`` options.
        shared_cache_mb: Size of the cache the processes share (None: the default; 0: off).
        on_error: Called in this process with ``(evaluator name, record, message)`` for each
            record given an error Score because a call raised or timed out, or its process died.
    """

    def __init__(
        self,
        evaluators: Sequence[Evaluator],
        *,
        processes: int,
        timeout_s: float | None = None,
        workers: int = 1,
        load_allowance_s: float = DEFAULT_LOAD_ALLOWANCE_S,
        shared_cache_mb: float | None = None,
        on_error: ErrorHook | None = None,
    ) -> None:
        check_runner_options(evaluators, timeout_s, workers, load_allowance_s)
        self.evaluators = tuple(evaluators)
        self._on_error = on_error
        options = {"timeout_s": timeout_s, "workers": workers, "load_allowance_s": load_allowance_s}
        self._pool = ProcessPool(self.evaluators, processes, options, shared_cache_mb)

    @property
    def stats(self) -> dict[str, EvaluatorStats]:
        """Per-evaluator stats summed over every process, past ones included."""
        snapshots = self._pool.slot_stats()
        return {
            e.name: _summed([s[e.name] for s in snapshots if e.name in s]) for e in self.evaluators
        }

    def submit(self, records: Sequence[RagRecord]) -> Future[list[Outcome]]:
        """Send ``records`` to the least busy process; the future holds one Outcome per record."""
        records = list(records)
        outcomes: Future[list[Outcome]] = Future()
        self._pool.run(records).add_done_callback(
            lambda reply: self._finish(records, reply, outcomes)
        )
        return outcomes

    def run(self, records: Sequence[RagRecord]) -> list[Outcome]:
        """Score ``records`` with every evaluator; one Outcome per record, in order."""
        return self.submit(records).result()

    def prime(self, records: Sequence[RagRecord]) -> None:
        """Score ``records`` on every process and drop the outcomes (fills each one's caches)."""
        for future in self._pool.run_everywhere(list(records)):
            reply = future.result()
            if reply.failure is not None:
                raise RuntimeError(f"worker process failed: {reply.failure}")

    def close(self) -> None:
        """Ask every process to finish its windows and exit; stop one that does not."""
        self._pool.close()

    def __enter__(self) -> ProcessRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _finish(
        self, records: list[RagRecord], done: Future[Reply], outcomes: Future[list[Outcome]]
    ) -> None:
        """Turn a process's reply (or its death) into Outcomes; error reports to the hook."""
        try:
            reply = done.result()
            if self._on_error is not None:
                for name, index, message in reply.errors:
                    self._on_error(name, records[index], message)
            if reply.failure is not None:
                raise RuntimeError(f"worker process failed: {reply.failure}")
            outcomes.set_result(reply.result)
        except WorkerDied as exc:
            outcomes.set_result(self._lost(records, f"{exc} while scoring this record"))
        except Exception as exc:  # the runner failed, or the hook raised: the caller sees it
            outcomes.set_exception(exc)

    def _lost(self, records: list[RagRecord], message: str) -> list[Outcome]:
        """Error Scores for records whose process died (skips where fields are missing)."""
        message = clip_error(message)
        lost = []
        for record in records:
            scores: list[tuple[str, Score]] = []
            skipped: list[Skip] = []
            for evaluator in self.evaluators:
                missing = evaluator.missing_fields(record)
                if missing:
                    skipped.append(Skip(evaluator.name, missing))
                    continue
                scores.append((evaluator.name, evaluator.error_score(message)))
                if self._on_error is not None:
                    self._on_error(evaluator.name, record, message)
            lost.append(Outcome(tuple(scores), tuple(skipped)))
        return lost


def _summed(parts: list[EvaluatorStats]) -> EvaluatorStats:
    """Counts and seconds added up; ``first_call_s`` the longest first call."""
    total = EvaluatorStats()
    for part in parts:
        for f in fields(EvaluatorStats):
            if f.name != "first_call_s":
                setattr(total, f.name, getattr(total, f.name) + getattr(part, f.name))
        if part.first_call_s is not None:
            total.first_call_s = max(total.first_call_s or 0.0, part.first_call_s)
    return total
