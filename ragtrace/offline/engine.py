"""The loop behind ``ragtrace eval``: read lines, run the evaluators on windows, write lines.

``Engine`` streams: it holds one window of records at a time (a few dozen, at least the largest
evaluator batch), so memory does not grow with the input, and writes each window's lines in
input order before reading on. What it reports on ``messages`` (stderr):

- every refused line, as ``FILE:LINE: reason`` (and duplicate ids, naming the first line);
- every unknown field name, once;
- the first error of each evaluator, with the record's id (later ones are counted only);
- progress (``ragtrace.offline.progress``).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import asdict
from typing import IO, Any, TextIO

from ragtrace.evaluators.base import Evaluator
from ragtrace.model import RagRecord
from ragtrace.offline.output import dumps, record_json
from ragtrace.offline.processes import ProcessRunner
from ragtrace.offline.progress import Progress
from ragtrace.offline.records import (
    MAX_LINE_BYTES,
    InputRecord,
    LineError,
    RecordParser,
    count_lines,
    read_lines,
)
from ragtrace.offline.summary import Summary
from ragtrace.pipeline.runner import Outcome, Runner

MIN_WINDOW = 32
_PREFIX = "ragtrace eval"


class Engine:
    """Runs evaluators over a JSON Lines stream into a scores stream, keeping a ``Summary``.

    Args:
        evaluators: What to run, in the order scores are written.
        input_name: The input's path (``-`` for stdin), for messages and the progress total.
        max_line_bytes: Longer lines are refused.
        timeout_s: Per record of a call (None: each evaluator's own).
        workers: Evaluators run at the same time (threads; per process).
        processes: Worker processes (``ragtrace.offline.processes``); with more than one, up to
            two windows per process are in flight and lines are still written in input order.
        shared_cache_mb: Size of the cache the processes share (None: the default, 32 MB or
            ``$RAGTRACE_SHARED_CACHE_MB``; 0: off).
        progress: Report progress on ``messages``.
        progress_every_s: Seconds between progress lines when ``messages`` is not a terminal.
        messages: Where reports go (stderr).
    """

    def __init__(
        self,
        evaluators: Sequence[Evaluator],
        *,
        input_name: str = "-",
        max_line_bytes: int = MAX_LINE_BYTES,
        timeout_s: float | None = None,
        workers: int = 1,
        processes: int = 1,
        shared_cache_mb: float | None = None,
        progress: bool = True,
        progress_every_s: float = 10.0,
        messages: TextIO | None = None,
    ) -> None:
        self.evaluators = tuple(evaluators)
        self.input_name = input_name
        self.max_line_bytes = max_line_bytes
        self.summary = Summary([e.name for e in self.evaluators])
        self.window = max([MIN_WINDOW, *(e.batch_size for e in self.evaluators)])
        self._messages = messages
        self._lock = threading.Lock()
        self._failing: set[str] = set()
        self._ids: dict[int, str] = {}
        self._pending: deque[tuple[list[InputRecord], Future[list[Outcome]]]] = deque()
        self._in_flight = 0 if processes == 1 else 2 * processes
        total = None if input_name == "-" or not progress else count_lines(input_name)
        self._progress = Progress(messages, total, every_s=progress_every_s, enabled=progress)
        self.runner: Runner | ProcessRunner
        if processes == 1:
            self.runner = Runner(
                self.evaluators, timeout_s=timeout_s, workers=workers, on_error=self._on_error
            )
        else:
            self.runner = ProcessRunner(
                self.evaluators,
                processes=processes,
                timeout_s=timeout_s,
                workers=workers,
                shared_cache_mb=shared_cache_mb,
                on_error=self._on_error,
            )

    def run(self, source: IO[bytes], sink: TextIO) -> Summary:
        """Evaluate every record of ``source``, writing scores to ``sink``; the summary."""
        counts = self.summary.input
        parser = RecordParser(
            require_response=any("response" in e.requires for e in self.evaluators),
            warn=self._note,
            max_line_bytes=self.max_line_bytes,
        )
        first_line: dict[str, int] = {}
        window: list[InputRecord] = []
        for line in read_lines(source, self.max_line_bytes):
            counts.lines = line.number
            try:
                item = parser.parse(line)
            except LineError as exc:
                self._bad(line.number, str(exc))
                continue
            if item is None:
                counts.blank_lines += 1
                continue
            first = first_line.setdefault(item.id, line.number)
            if first != line.number:
                counts.duplicate_ids += 1
                self._bad(line.number, f"duplicate id {item.id!r} (first on line {first})")
                continue
            window.append(item)
            if len(window) >= self.window:
                self._score(window, sink)
                window = []
            self._progress.update(counts.lines, counts.records)
        self._score(window, sink)
        self._write(sink, keep=0)
        self._progress.close(counts.lines, counts.records)
        return self.summary

    def prime(self, source: IO[bytes]) -> int:
        """Score ``source``'s records on every process and write nothing; the records primed.

        It fills the model caches (e.g. with a knowledge base's chunks) before a timed or live
        run. The summary is untouched; a bad line raises ``ValueError`` naming its number.
        """
        parser = RecordParser(
            require_response=False, warn=lambda _: None, max_line_bytes=self.max_line_bytes
        )
        window: list[RagRecord] = []
        primed = 0
        for line in read_lines(source, self.max_line_bytes):
            try:
                item = parser.parse(line)
            except LineError as exc:
                raise ValueError(f"priming line {line.number}: {exc}") from None
            if item is not None:
                window.append(item.record)
            if len(window) >= self.window:
                self.runner.prime(window)
                primed, window = primed + len(window), []
        if window:
            self.runner.prime(window)
        return primed + len(window)

    def close(self) -> None:
        """Stop the runner's threads."""
        self.runner.close()

    def summary_json(self, duration_s: float) -> dict[str, Any]:
        """The summary with timings and the runner's per-evaluator counts."""
        records = self.summary.input.records
        return self.summary.to_json(
            evaluators={name: asdict(stats) for name, stats in self.runner.stats.items()},
            duration_s=round(duration_s, 3),
            records_per_s=round(records / duration_s, 2) if duration_s > 0 else None,
        )

    def _score(self, window: list[InputRecord], sink: TextIO) -> None:
        if not window:
            return
        with self._lock:
            self._ids.update((id(item.record), item.id) for item in window)
        self._pending.append((window, self.runner.submit([item.record for item in window])))
        self._write(sink, keep=self._in_flight)

    def _write(self, sink: TextIO, *, keep: int) -> None:
        """Write the oldest windows' lines until at most ``keep`` are in flight."""
        while len(self._pending) > keep:
            window, future = self._pending.popleft()
            outcomes = future.result()
            for item, outcome in zip(window, outcomes, strict=True):
                sink.write(dumps(record_json(item.id, outcome)) + "\n")
                self.summary.add(outcome)
            sink.flush()
            with self._lock:
                for item in window:
                    self._ids.pop(id(item.record), None)

    def _bad(self, number: int, reason: str) -> None:
        self.summary.input.bad_lines += 1
        name = "<stdin>" if self.input_name == "-" else self.input_name
        self._note(f"{name}:{number}: {reason}; line skipped")

    def _on_error(self, evaluator: str, record: RagRecord, message: str) -> None:
        with self._lock:
            if evaluator in self._failing:
                return
            self._failing.add(evaluator)
        record_id = self._ids.get(id(record), "?")
        self._note(
            f"{evaluator} failed on id {record_id!r}: {message} "
            f"(further failures of {evaluator} are counted in the summary, not shown)"
        )

    def _note(self, text: str) -> None:
        with self._lock:
            if self._messages is not None:
                self._progress.note(f"{_PREFIX}: {text}")
