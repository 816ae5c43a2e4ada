"""Scoring on several processes, so the evaluators use more than one core: ``--processes N``.

Python threads share one interpreter lock. Most of the local suite's time is spent where that lock
is held (spaCy NER, the regex suites, tokenisers, numpy glue), so ``--workers`` threads keep
about one core busy however many there are. ``ProcessRunner`` starts ``processes`` worker
processes instead (``spawn``: nothing half-initialised is inherited), each with its own copy of
the evaluators and a ``Runner``; it has the same ``run``/``submit``/``prime``/``stats`` face.
A window of records goes to the least busy process and its outcomes come back as they were sent.

What to know:

- **Models and caches are per process.** Each process loads its own models on its first window
  (they load side by side, so the wall time is about one load; memory is ``processes`` times
  one process's) and keeps its own embedding cache. ``prime`` sends records to *every* process,
  e.g. a knowledge base's chunks before a timed or live run.
- **Threads per process.** A model backend takes ``$RAGTRACE_MODEL_THREADS`` (default 1) intra-op
  threads in each process: on 2 cores, 2 processes x 1 thread.
- **Evaluators must pickle.** Every registry evaluator does; one that cannot (a lambda in a
  ``FunctionEvaluator``) is refused up front, by name.
- **Nothing is lost.** Error hooks, judge usage (``ragtrace.judges.usage``) and per-evaluator
  stats come back with each window. A process that dies (killed, out of memory, a crash in native
  code) gives every record of the windows it held an error Score from each evaluator that would
  have run, naming the exit code, and the hook hears of each; a fresh process takes its slot.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import pickle
import signal
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, fields
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from types import MappingProxyType
from typing import Any

from ragtrace.evaluators.base import Evaluator
from ragtrace.judges import usage
from ragtrace.model import RagRecord, Score
from ragtrace.offline.runner import (
    DEFAULT_LOAD_ALLOWANCE_S,
    ErrorHook,
    EvaluatorStats,
    Outcome,
    Runner,
    Skip,
    check_runner_options,
)
from ragtrace.pipeline import clip_error

_STOP_WAIT_S = 10.0


def _mapping_proxy(items: dict[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(items)


def _reduce_mapping_proxy(proxy: Mapping[str, Any]) -> tuple[Any, tuple[dict[str, Any]]]:
    return _mapping_proxy, (dict(proxy),)


# Records and Scores keep their mappings read-only; the pipe to a worker process carries copies.
ForkingPickler.register(MappingProxyType, _reduce_mapping_proxy)


@dataclass(slots=True)
class _Job:
    records: list[RagRecord]
    future: Future[list[Outcome]] = field(default_factory=Future)


class ProcessRunner:
    """Runs a fixed list of evaluators over windows of records on ``processes`` processes.

    Args:
        evaluators: Evaluators with distinct names (picklable), in the order their scores are
            reported.
        processes: Worker processes (>= 1).
        timeout_s, workers, load_allowance_s: Each process's ``Runner`` options.
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
        on_error: ErrorHook | None = None,
    ) -> None:
        check_runner_options(evaluators, timeout_s, workers, load_allowance_s)
        if not isinstance(processes, int) or processes < 1:
            raise ValueError(f"processes must be an integer >= 1, got {processes!r}")
        self.evaluators = tuple(evaluators)
        self._on_error = on_error
        options = {"timeout_s": timeout_s, "workers": workers, "load_allowance_s": load_allowance_s}
        self._payload = _pickled(self.evaluators, options)
        self._context = multiprocessing.get_context("spawn")
        self._lock = threading.Lock()
        self._retired = {e.name: EvaluatorStats() for e in self.evaluators}
        self._closed = False
        self._slots = [self._start() for _ in range(processes)]

    @property
    def stats(self) -> dict[str, EvaluatorStats]:
        """Per-evaluator stats summed over every process, past ones included."""
        with self._lock:
            snapshots = [self._retired, *(w.stats for w in self._slots)]
        return {
            e.name: _summed([s[e.name] for s in snapshots if e.name in s]) for e in self.evaluators
        }

    def submit(self, records: Sequence[RagRecord]) -> Future[list[Outcome]]:
        """Send ``records`` to the least busy process; the future holds one Outcome per record."""
        with self._lock:
            if self._closed:
                raise RuntimeError("ProcessRunner is closed")
            worker = min(self._live_slots(), key=lambda w: len(w.pending))
        return worker.send(_Job(list(records)))

    def run(self, records: Sequence[RagRecord]) -> list[Outcome]:
        """Score ``records`` with every evaluator; one Outcome per record, in order."""
        return self.submit(records).result()

    def prime(self, records: Sequence[RagRecord]) -> None:
        """Score ``records`` on every process and drop the outcomes (fills each one's caches)."""
        with self._lock:
            workers = self._live_slots()
        for future in [w.send(_Job(list(records))) for w in workers]:
            future.result()

    def close(self) -> None:
        """Ask every process to finish its windows and exit; stop one that does not."""
        with self._lock:
            self._closed = True
            workers = list(self._slots)
        for worker in workers:
            worker.stop()

    def __enter__(self) -> ProcessRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> _Worker:
        return _Worker(self._context, self._payload, on_reply=self._handle, on_death=self._lost)

    def _live_slots(self) -> list[_Worker]:
        """The slots, a dead process replaced by a fresh one (its stats kept); under the lock."""
        for i, worker in enumerate(self._slots):
            if worker.dead:
                self._retired = {
                    name: _summed([total, *([worker.stats[name]] if name in worker.stats else [])])
                    for name, total in self._retired.items()
                }
                self._slots[i] = self._start()
        return self._slots

    def _handle(self, job: _Job, reply: _Reply) -> None:
        for call in reply.judge_calls:
            usage.report(call)
        if self._on_error is not None:
            for name, index, message in reply.errors:
                self._on_error(name, job.records[index], message)
        if reply.failure is not None:
            job.future.set_exception(RuntimeError(f"worker process failed: {reply.failure}"))
        else:
            job.future.set_result(reply.outcomes)

    def _lost(self, job: _Job, message: str) -> None:
        """Error Scores for a job whose process died (skips where fields are missing)."""
        message = clip_error(message)
        outcomes = []
        for record in job.records:
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
            outcomes.append(Outcome(tuple(scores), tuple(skipped)))
        job.future.set_result(outcomes)


@dataclass(frozen=True, slots=True)
class _Reply:
    seq: int
    outcomes: list[Outcome]
    errors: list[tuple[str, int, str]]
    judge_calls: list[usage.JudgeCall]
    stats: dict[str, EvaluatorStats]
    failure: str | None = None


class _Worker:
    """One worker process, its pipe, the jobs it holds and a thread reading its replies."""

    def __init__(self, context: Any, payload: bytes, *, on_reply: Any, on_death: Any) -> None:
        self.pending: dict[int, _Job] = {}
        self.stats: dict[str, EvaluatorStats] = {}
        self.dead = False
        self._on_reply = on_reply
        self._on_death = on_death
        self._seq = 0
        self._send_lock = threading.Lock()
        self._conn, child_conn = context.Pipe(duplex=True)
        self._process = context.Process(
            target=_serve, args=(child_conn, payload), name="ragtrace-eval-process", daemon=True
        )
        self._process.start()
        child_conn.close()
        self._reader = threading.Thread(target=self._read, name="ragtrace-eval-reader", daemon=True)
        self._reader.start()

    def send(self, job: _Job) -> Future[list[Outcome]]:
        with self._send_lock:
            if not self.dead:
                self._seq += 1
                message = _dumps((self._seq, job.records))  # an odd object raises here
                self.pending[self._seq] = job
                # A gone process: the reader sees EOF and fails every pending job.
                with contextlib.suppress(OSError, ValueError):
                    self._conn.send_bytes(message)
                return job.future
        self._on_death(job, "worker process had exited before this record was sent")
        return job.future

    def stop(self) -> None:
        with self._send_lock, contextlib.suppress(OSError, ValueError):
            self._conn.send(None)
        self._process.join(_STOP_WAIT_S)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(_STOP_WAIT_S)
        self._reader.join(_STOP_WAIT_S)

    def _read(self) -> None:
        while True:
            try:
                reply: _Reply = self._conn.recv()
            except (EOFError, OSError):
                break
            with self._send_lock:
                self.stats = reply.stats
                job = self.pending.pop(reply.seq)
            try:
                self._on_reply(job, reply)
            except Exception as exc:  # e.g. the error hook raised: the caller sees it
                if not job.future.done():
                    job.future.set_exception(exc)
        self._process.join(_STOP_WAIT_S)
        code = self._process.exitcode
        with self._send_lock:
            self.dead = True
            orphans = list(self.pending.values())
            self.pending.clear()
        self._conn.close()
        if orphans:
            how = f"killed by signal {-code}" if code is not None and code < 0 else f"code {code}"
            for job in orphans:
                self._on_death(job, f"worker process exited ({how}) while scoring this record")


def _serve(conn: Connection, payload: bytes) -> None:
    """A worker process: score each window it is sent until it is sent None or its pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    evaluators, options = pickle.loads(payload)
    errors: list[tuple[str, int, str]] = []
    where: dict[int, int] = {}
    calls: list[usage.JudgeCall] = []
    usage.add_listener(calls.append)

    def on_error(name: str, record: RagRecord, message: str) -> None:
        errors.append((name, where[id(record)], message))

    with Runner(evaluators, on_error=on_error, **options) as runner:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return
            if message is None:
                return
            seq, records = message
            where.clear()
            where.update((id(r), i) for i, r in enumerate(records))
            try:
                reply = _Reply(seq, runner.run(records), errors[:], calls[:], runner.stats)
            except Exception as exc:  # a bug in the runner itself: the parent raises it
                reply = _Reply(seq, [], [], calls[:], runner.stats, f"{type(exc).__name__}: {exc}")
            errors.clear()
            calls.clear()
            conn.send(reply)


def _dumps(value: object) -> bytes:
    return bytes(ForkingPickler.dumps(value))


def _pickled(evaluators: tuple[Evaluator, ...], options: dict[str, Any]) -> bytes:
    """The evaluators and runner options as bytes; names the evaluator that cannot pickle."""
    for evaluator in evaluators:
        try:
            _dumps(evaluator)
        except Exception as exc:
            raise ValueError(
                f"evaluator {evaluator.name!r} cannot be sent to a worker process "
                f"({type(exc).__name__}: {exc}); use processes=1 for it"
            ) from exc
    return _dumps((evaluators, options))


def _summed(parts: list[EvaluatorStats]) -> EvaluatorStats:
    """Counts and seconds added up; ``first_call_s`` the longest first call."""
    total = EvaluatorStats()
    for part in parts:
        for f in fields(EvaluatorStats):
            if f.name == "first_call_s":
                continue
            setattr(total, f.name, getattr(total, f.name) + getattr(part, f.name))
        if part.first_call_s is not None:
            total.first_call_s = max(total.first_call_s or 0.0, part.first_call_s)
    return total
