"""Evaluators in worker processes, so they use more than one core and leave the host's GIL alone.

Python threads share one interpreter lock, and most of the local suite's time is spent where it
is held (spaCy NER, the regex suites, tokenisers, numpy glue): threads keep about one core busy
however many there are, and that core is the host application's too. A ``ProcessPool`` starts
worker processes (``spawn``: nothing half-initialised is inherited, not even a lock held mid-fork),
each with its own copy of the evaluators; models load lazily in each, on its first job.

Two kinds of job go to the least busy process:

- ``call(index, records, timeout_s)``: one evaluator's ``evaluate_batch`` (the online
  pipeline's unit), waited for: its outputs, or ``RemoteError`` ("ValueError: ...") when the call
  raised, or ``TimeoutError`` after killing the process that holds it;
- ``run(records)``: every evaluator through an engine on the process's threads, built there by
  ``engine(evaluators, on_error=..., **engine_options)`` (``ragtrace eval --processes``: the
  parent's ``ragtrace._engine.evaluation.EvaluationEngine``; ``ragtrace index --processes``:
  ``ragtrace._offline.index_workers.StoreWriter``); its future holds a ``Reply`` with what the
  engine's ``run`` returned, its error reports and its stats.

The engine (``ragtrace._engine.evaluation``) decides which kind to send and turns failures
into error Scores; this module only carries jobs to processes and back.

Whatever the job, judge usage reported in the process (``ragtrace._judges.usage``) is reported
again here, so tallies and metrics see it, and so are the process's cache-tier lookups
(``ragtrace._backends.tier_counts``). A process that dies (killed, out of memory, a crash in
native code, or killed after a timeout) fails every job it held with ``WorkerDied``, naming
the exit code; the next job starts a fresh process in its slot.

The processes of a pool share one ``ragtrace._backends.shared_cache.SharedCache`` (32 MB of shared
memory by default; ``shared_cache_mb`` or ``$RAGTRACE_SHARED_CACHE_MB``, 0 turns it off): sentence
vectors and NER results one process computes are found there by the others, so a passage that
recurs across requests is embedded and read once by the pool, not once by each process. A
passage store installed here (``ragtrace._backends.passage_store``) is opened read-only in each
process too, and so is the fleet's Redis cache (``ragtrace._backends.fleet_cache``) that
``ragtrace worker`` installs.

Evaluators must pickle (every registry evaluator does); ``check_picklable`` names one that does
not. Records and Scores keep read-only ``MappingProxyType`` mappings; the pipe carries copies.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import pickle
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from types import MappingProxyType
from typing import Any, Protocol

from ragtrace._backends import fleet_cache, passage_store, shared_cache, tier_counts
from ragtrace._engine.call_errors import LOAD_ALLOWANCE_S, RemoteError, WorkerDied
from ragtrace._judges import usage
from ragtrace._model import RagRecord
from ragtrace.evaluators._base import Evaluator

STOP_WAIT_S = 10.0
PROCESS_NAME = "ragtrace-eval-process"


def _mapping_proxy(items: dict[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(items)


def _reduce_mapping_proxy(proxy: Mapping[str, Any]) -> tuple[Any, tuple[dict[str, Any]]]:
    return _mapping_proxy, (dict(proxy),)


ForkingPickler.register(MappingProxyType, _reduce_mapping_proxy)


def dumps(value: object) -> bytes:
    """``value`` pickled as the pipe to a worker process pickles it."""
    return bytes(ForkingPickler.dumps(value))


def check_picklable(evaluators: Sequence[Evaluator]) -> None:
    """Raise ``ValueError`` naming the first evaluator that cannot go to a worker process."""
    for evaluator in evaluators:
        try:
            dumps(evaluator)
        except Exception as exc:
            raise ValueError(
                f"evaluator {evaluator.name!r} cannot be sent to a worker process "
                f"({type(exc).__name__}: {exc}); run it in-process (processes=1 offline, "
                "processes=0 in the pipeline)"
            ) from exc


@dataclass(frozen=True, slots=True)
class Reply:
    """A worker process's answer to one job.

    Attributes:
        result: ``call``: the outputs of ``evaluate_batch``; ``run``: what the engine's ``run``
            returned (the outcomes, for an ``EvaluationEngine``).
        errors: ``run`` only: ``(evaluator, index of the record in the job, message)`` for each
            record the engine gave an error Score because a call raised or timed out.
        stats: ``run`` only: the process's engine stats so far (``EvaluatorStats`` by name).
        failure: ``"Type: message"`` when the job raised instead of answering.
        cpu_s: ``call`` only: the thread time ``evaluate_batch`` took in the process.
    """

    result: Any
    errors: tuple[tuple[str, int, str], ...] = ()
    stats: Mapping[str, Any] = field(default_factory=dict)
    failure: str | None = None
    cpu_s: float = 0.0


@dataclass(slots=True)
class _Job:
    kind: str  # "call" or "run"
    index: int  # the evaluator of a call
    records: list[RagRecord]
    future: Future[Reply] = field(default_factory=Future)
    started: threading.Event = field(default_factory=threading.Event)  # or its process died


class ProcessPool:
    """``processes`` worker processes, each holding copies of ``evaluators``.

    Args:
        evaluators: What the processes run (picklable).
        processes: How many (>= 1).
        engine: What builds the engine that runs ``run`` jobs in each process (a picklable
            class or function; None: no ``run`` jobs).
        engine_options: Its keyword arguments (``on_error`` excluded).
        shared_cache_mb: Size of the cache the processes share (default
            ``$RAGTRACE_SHARED_CACHE_MB`` or 32); 0 turns it off.
    """

    def __init__(
        self,
        evaluators: Sequence[Evaluator],
        processes: int,
        engine: Callable[..., WindowEngine] | None = None,
        engine_options: Mapping[str, Any] | None = None,
        shared_cache_mb: float | None = None,
    ) -> None:
        if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
            raise ValueError(f"processes must be an integer >= 1, got {processes!r}")
        check_picklable(evaluators)
        self.evaluators = tuple(evaluators)
        self.shared_cache = shared_cache.create_for_pool(shared_cache_mb)
        cache_name = None if self.shared_cache is None else self.shared_cache.name
        store = passage_store.installed_path()
        fleet = fleet_cache.installed_spec()
        options = dict(engine_options or {})
        self._payload = dumps((self.evaluators, engine, options, cache_name, store, fleet))
        self._context = multiprocessing.get_context("spawn")
        self._lock = threading.Lock()
        self._closed = False
        self._retired: list[_Worker] = []
        self._slots = [self._start() for _ in range(processes)]

    def call(
        self,
        index: int,
        records: Sequence[RagRecord],
        timeout_s: float,
        slot: int | None = None,
        *,
        on_cpu: Callable[[float], None] | None = None,
    ) -> object:
        """``evaluators[index].evaluate_batch(records)``: its outputs. It runs on process
        ``slot`` (modulo how many there are) when given, else on the least busy one;
        ``on_cpu`` hears the thread time it took there when the answer arrives.

        ``timeout_s`` counts from when the process starts the call (not while it finishes an
        earlier one); a process's first call of an evaluator gets ``LOAD_ALLOWANCE_S`` more, for
        loading models. Raises ``TimeoutError`` (the process is killed first: a hung call cannot
        be stopped otherwise), ``RemoteError`` or ``WorkerDied``.
        """
        worker = self._pick(slot)
        job = worker.send(_Job("call", index, list(records)))
        allowance = 0.0 if index in worker.warm else LOAD_ALLOWANCE_S
        if not job.started.wait(timeout_s + allowance + LOAD_ALLOWANCE_S):
            worker.kill()  # never began: stuck starting up or in a call nobody waits for
        try:
            reply = job.future.result(timeout=timeout_s + allowance)
        except FutureTimeout:
            worker.kill()
            raise
        if on_cpu is not None:
            on_cpu(reply.cpu_s)
        if reply.failure is not None:
            raise RemoteError(reply.failure)
        return reply.result

    def run(self, records: Sequence[RagRecord]) -> Future[Reply]:
        """``records`` through the ``engine`` built on the least busy process (an
        ``EvaluationEngine`` runs every evaluator and keeps each call's timeout)."""
        return self._pick(None).send(_Job("run", -1, list(records))).future

    def slot_stats(self) -> list[Mapping[str, Any]]:
        """The latest engine stats of each process ever started (dead ones included)."""
        with self._lock:
            return [w.stats for w in self._retired + self._slots]

    def close(self) -> None:
        """Ask every process to finish its jobs and exit; kill one that does not."""
        with self._lock:
            self._closed = True
            workers = list(self._slots)
        for worker in workers:
            worker.stop()
        if self.shared_cache is not None:
            self.shared_cache.close()

    def _start(self) -> _Worker:
        return _Worker(self._context, self._payload)

    def _live(self) -> list[_Worker]:
        with self._lock:
            if self._closed:
                raise RuntimeError("worker processes are closed")
            for i, worker in enumerate(self._slots):
                if worker.dead:
                    self._retired = [*self._retired, worker]
                    self._slots[i] = self._start()
            return list(self._slots)

    def _pick(self, slot: int | None) -> _Worker:
        """Process ``slot`` (modulo how many there are), or the least busy one for None."""
        live = self._live()
        return live[slot % len(live)] if slot is not None else min(live, key=_Worker.load)


class _Worker:
    """One worker process, its pipe, the jobs it holds and a thread reading its replies."""

    def __init__(self, context: Any, payload: bytes) -> None:
        self.stats: Mapping[str, Any] = {}
        self.warm: set[int] = set()  # evaluators this process has answered a call of
        self.dead = False
        self._pending: dict[int, _Job] = {}
        self._seq = 0
        self._lock = threading.Lock()
        self._conn, child_conn = context.Pipe(duplex=True)
        self._process = context.Process(
            target=_serve, args=(child_conn, payload), name=PROCESS_NAME, daemon=True
        )
        self._process.start()
        child_conn.close()
        self._reader = threading.Thread(target=self._read, name="ragtrace-eval-reader", daemon=True)
        self._reader.start()

    def load(self) -> int:
        return len(self._pending)

    def send(self, job: _Job) -> _Job:
        blob = dumps((job.kind, job.index, job.records))  # an odd object raises here
        with self._lock:
            if not self.dead:
                self._seq += 1
                self._pending[self._seq] = job
                # A gone process: the reader sees EOF and fails every pending job.
                with contextlib.suppress(OSError, ValueError):
                    self._conn.send_bytes(dumps((self._seq, blob)))
                return job
        job.future.set_exception(WorkerDied("worker process had exited before the job was sent"))
        job.started.set()
        return job

    def kill(self) -> None:
        """Kill the process and wait until its jobs have failed and it counts as dead."""
        self._process.kill()
        self._reader.join(STOP_WAIT_S)

    def stop(self) -> None:
        with self._lock, contextlib.suppress(OSError, ValueError):
            self._conn.send(None)
        self._process.join(STOP_WAIT_S)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(STOP_WAIT_S)
        self._reader.join(STOP_WAIT_S)

    def _read(self) -> None:
        while True:
            try:
                seq, reply, calls, lookups = self._conn.recv()
            except (EOFError, OSError):
                break
            if reply is None:  # the process began the job
                with self._lock:
                    self._pending[seq].started.set()
                continue
            for call in calls:
                usage.report(call)
            if lookups:
                tier_counts.COUNTS.merge(lookups)
            with self._lock:
                if reply.stats:
                    self.stats = reply.stats
                job = self._pending.pop(seq)
                if job.kind == "call":
                    self.warm.add(job.index)
            job.future.set_result(reply)
        self._process.join(STOP_WAIT_S)
        code = self._process.exitcode
        with self._lock:
            self.dead = True
            orphans = list(self._pending.values())
            self._pending.clear()
        self._conn.close()
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"code {code}"
        for job in orphans:
            job.future.set_exception(WorkerDied(f"worker process exited ({how})"))
            job.started.set()


def _serve(conn: Connection, payload: bytes) -> None:
    """A worker process: answer each job until it is sent None or its pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    evaluators, build, options, cache_name, store, fleet = pickle.loads(payload)
    if cache_name is not None:
        shared_cache.install(shared_cache.SharedCache.attach(cache_name))
    if store is not None:
        passage_store.install_path(store)
    if fleet is not None:
        fleet_cache.install(fleet_cache.FleetCache.from_spec(fleet))
    calls: list[usage.JudgeCall] = []
    usage.add_listener(calls.append)
    engine: _JobEngine | None = None
    reported = tier_counts.COUNTS.snapshot()
    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return
            if message is None:
                return
            seq, blob = message
            kind, index, records = pickle.loads(blob)
            conn.send((seq, None, (), None))
            if kind == "call":
                reply = _call(evaluators[index], records)
            else:
                engine = engine or _JobEngine(build, evaluators, options)
                reply = engine.run(records)
            counted = tier_counts.COUNTS.snapshot()
            conn.send((seq, reply, calls[:], tier_counts.since(counted, reported)))
            calls.clear()
            reported = counted
    finally:
        if engine is not None:
            engine.close()


def _call(evaluator: Evaluator, records: list[RagRecord]) -> Reply:
    start = time.thread_time()
    try:
        result = evaluator.evaluate_batch(records)
    except Exception as exc:
        failure = f"{type(exc).__name__}: {exc}"
        return Reply(None, failure=failure, cpu_s=time.thread_time() - start)
    return Reply(result, cpu_s=time.thread_time() - start)


class WindowEngine(Protocol):
    """What runs ``run`` jobs in a worker process (an ``EvaluationEngine`` on threads)."""

    @property
    def stats(self) -> Mapping[str, Any]: ...

    def run(self, records: Sequence[RagRecord]) -> Any: ...

    def close(self) -> None: ...


class _JobEngine:
    """The engine in a worker process, its error reports naming records by index in the job."""

    def __init__(
        self,
        build: Callable[..., WindowEngine] | None,
        evaluators: Sequence[Evaluator],
        options: Mapping[str, Any],
    ) -> None:
        if build is None:
            raise RuntimeError("this worker pool was given no engine for run jobs")
        self._errors: list[tuple[str, int, str]] = []
        self._where: dict[int, int] = {}
        self._engine = build(evaluators, on_error=self._on_error, **options)

    def run(self, records: list[RagRecord]) -> Reply:
        self._where = {id(r): i for i, r in enumerate(records)}
        self._errors = []
        try:
            outcomes = self._engine.run(records)
        except Exception as exc:  # a bug in the engine itself: the parent raises it
            return Reply(None, (), self._engine.stats, f"{type(exc).__name__}: {exc}")
        return Reply(outcomes, tuple(self._errors), self._engine.stats)

    def close(self) -> None:
        self._engine.close()

    def _on_error(self, name: str, record: RagRecord, message: str) -> None:
        self._errors.append((name, self._where[id(record)], message))
