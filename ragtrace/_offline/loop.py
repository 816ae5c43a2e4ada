"""The loop behind ``ragtrace eval``: read lines, run the evaluators on windows, write lines.

``EvalLoop`` streams: it holds one window of records at a time (a few dozen, at least the largest
evaluator batch), so memory does not grow with the input, and writes each window's lines in
input order before reading on. ``run_inputs`` reads several inputs one after another, naming
each record's system (``ragtrace._offline.systems``), or, given an ``Asker``, asks callable
systems the inputs' questions (``ragtrace._offline.asking``) and scores their answers; with
perturbations it counts verdict flips (``ragtrace._offline.flips``); classifiers' labels are
tallied per system for the classification report (``ragtrace._offline.classification_summary``).
What it reports on
``messages`` (stderr):

- every refused line, as ``FILE:LINE: reason`` (and duplicate ids, naming the first line);
- every unknown field name, once;
- the first error of each evaluator, with the record's id (later ones are counted only);
- progress (``ragtrace._offline.progress``).

With a ``redaction`` policy every answer is redacted as it enters a window, and every Score and
message before it is written (``ragtrace._offline.redacting``).

``run_items`` scores answers already in memory (``EvalItem`` values: what ``ragtrace.evaluate``
builds from its test cases), with the same windows, runners and reports; the progress bar then
counts the cases scored. ``on_outcome`` hears every answer's ``Outcome`` as it is written, in
input order, whether or not a scores stream is given.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import asdict
from typing import IO, Any, TextIO

from ragtrace._engine.evaluation import EvaluationEngine
from ragtrace._engine.outcomes import Outcome
from ragtrace._model import RagRecord
from ragtrace._offline.asking import Asker
from ragtrace._offline.case_conversations import CaseParser
from ragtrace._offline.classification_summary import ClassificationTally
from ragtrace._offline.conversation_summary import ConversationSummary
from ragtrace._offline.flips import FlipCounter
from ragtrace._offline.output import dumps, record_json
from ragtrace._offline.progress import Progress
from ragtrace._offline.reading import Input, InputReader
from ragtrace._offline.records import (
    MAX_LINE_BYTES,
    LineError,
    RecordParser,
    count_lines,
    read_lines,
)
from ragtrace._offline.redacting import RedactionHook, raw_text_readers
from ragtrace._offline.session_lines import SessionLines
from ragtrace._offline.summary import Summary
from ragtrace._offline.systems import EvalItem, SystemNamer
from ragtrace._redaction import NO_REDACTION, Redaction
from ragtrace.evaluators._base import Evaluator

MIN_WINDOW = 32
_PREFIX = "ragtrace eval"

OutcomeHook = Callable[[EvalItem, Outcome], None]
"""Hears each answer and what the evaluators said about it, in input order."""


class EvalLoop:
    """Runs evaluators over a JSON Lines stream into a scores stream, keeping a ``Summary``.

    Args:
        evaluators: What to run, in the order scores are written.
        input_name: The input's path (``-`` for stdin), for messages and the progress total
            of ``run`` (``run_inputs`` names its inputs itself).
        max_line_bytes: Longer lines are refused.
        timeout_s: Per record of a call (None: each evaluator's own).
        workers: Evaluators run at the same time (threads; per process).
        processes: Worker processes (``ragtrace._engine.evaluation``: each window goes whole
            to one); with more than one, up to two windows per process are in flight and lines
            are still written in input order. 1: threads of this process.
        shared_cache_mb: Size of the cache the processes share (None: the default, 32 MB or
            ``$RAGTRACE_SHARED_CACHE_MB``; 0: off).
        progress: Report progress on ``messages``.
        progress_every_s: Seconds between progress lines when ``messages`` is not a terminal.
        messages: Where reports go (stderr).
        label: What starts every report and progress line.
        on_outcome: Called with each answer and its ``Outcome`` as its line is written.
        redaction: The policy answers, Scores and messages go through (``Config.redact``).
        raw_text_evaluators: With a policy on, these evaluators (never judges) read the
            answers as read, on threads of this process (``Config.raw_text_evaluators``).
        sessions: Score the turns of each session together too, and write a line per
            conversation after the rows (``ragtrace._offline.session_lines``), counted in
            ``conversations`` (``ragtrace._offline.conversation_summary``); None: not.
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
        label: str = _PREFIX,
        on_outcome: OutcomeHook | None = None,
        redaction: Redaction = NO_REDACTION,
        raw_text_evaluators: Collection[str] = (),
        sessions: SessionLines | None = None,
    ) -> None:
        self.evaluators = tuple(evaluators)
        self.sessions = sessions
        self._redaction = redaction
        raw = raw_text_readers(self.evaluators, raw_text_evaluators) if redaction.active else ()
        self._hook: RedactionHook | None = None
        if redaction.active:
            raw_runner = (
                EvaluationEngine(raw, timeout_s=timeout_s, workers=workers, on_error=self._on_error)
                if raw
                else None
            )
            self._hook = RedactionHook(redaction, raw_runner, [e.name for e in self.evaluators])
        main = [e for e in self.evaluators if e not in raw]
        self.input_name = input_name
        self.max_line_bytes = max_line_bytes
        self.summary = Summary([e.name for e in self.evaluators])
        self.conversations = ConversationSummary()
        self.classes = ClassificationTally()
        self.window = max([MIN_WINDOW, *(e.batch_size for e in self.evaluators)])
        self._messages = messages
        self._lock = threading.Lock()
        self._failing: set[str] = set()
        self._ids: dict[int, str] = {}
        self._pending: deque[tuple[list[EvalItem], Future[list[Outcome]]]] = deque()
        self._in_flight = 0 if processes == 1 else 2 * processes
        self._show_progress = progress
        self._progress_every_s = progress_every_s
        self._label = label
        self._on_outcome = on_outcome
        self._progress = self._new_progress(None, "lines")
        self._progress_of_written = False
        self.flips: FlipCounter | None = None
        self.asker: Asker | None = None
        if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
            raise ValueError(f"processes must be an integer >= 1, got {processes!r}")
        self.runner = EvaluationEngine(
            main,
            timeout_s=timeout_s,
            workers=workers,
            processes=processes if processes > 1 else 0,
            shared_cache_mb=shared_cache_mb,
            on_error=self._on_error,
        )
        if processes > 1:
            self.runner.start()  # the processes load side by side while the input is read

    def run(self, source: IO[bytes], sink: TextIO) -> Summary:
        """Evaluate every record of ``source``, writing scores to ``sink``; the summary."""
        return self.run_inputs([(self.input_name, source)], sink)

    def run_inputs(
        self,
        inputs: Sequence[Input],
        sink: TextIO,
        *,
        system_key: str = "auto",
        asker: Asker | None = None,
    ) -> Summary:
        """Evaluate every record of ``inputs`` (in order) into ``sink``; the summary.

        Args:
            inputs: ``(name, stream)`` pairs; the name is the path, ``-`` for stdin.
            sink: Where the scores lines go.
            system_key: How records name their system (``SystemNamer``); unused with ``asker``.
            asker: Ask these callable systems the records' questions and score their answers
                instead of the records' own responses.

        Raises:
            ValueError: Two inputs would name the same system (``--system-key file``).
        """
        counts = self.summary.input
        namer = None if asker is not None else SystemNamer(system_key, [n for n, _ in inputs])
        parser = CaseParser(  # records and cases, a case's conversation included
            require_response=asker is None
            and any("response" in e.requires for e in self.evaluators),
            warn=self._note,
            max_line_bytes=self.max_line_bytes,
        )
        self.asker = asker
        if asker is not None and asker.note is None:
            asker.note = self._note
        if asker is not None and asker.perturbations:
            self.flips = FlipCounter(asker.perturbations)
        self._start_progress([name for name, _ in inputs])
        reader = InputReader(inputs, parser, counts, self._bad, namer)
        items = (
            asker.items(reader)
            if asker is not None
            else (EvalItem(s or "", r.id, r.id, None, r.record) for s, r in reader)
        )
        self._run(items, sink)
        return self.summary

    def run_items(self, items: Sequence[EvalItem], sink: TextIO | None = None) -> Summary:
        """Evaluate answers already in memory, in order; the summary.

        Lines go to ``sink`` when one is given; ``on_outcome`` hears every answer either way.
        Progress counts the answers scored, out of ``len(items)``.
        """
        self.summary.input.lines += len(items)
        self._progress = self._new_progress(len(items), "cases")
        self._progress_of_written = True
        self._run(items, sink)
        return self.summary

    def _run(self, items: Iterable[EvalItem], sink: TextIO | None) -> None:
        counts = self.summary.input
        window: list[EvalItem] = []
        for item in items:
            window.append(item)
            if len(window) >= self.window:
                self._score(window, sink)
                window = []
            if not self._progress_of_written:
                self._progress.update(counts.lines, counts.records)
        self._score(window, sink)
        self._write(sink, keep=0)
        self._write_sessions(sink)
        done = counts.records if self._progress_of_written else counts.lines
        self._progress.close(done, counts.records)

    def _start_progress(self, names: Sequence[str]) -> None:
        total: int | None = None
        if self._show_progress and "-" not in names:
            found = [count_lines(name) for name in names]
            total = None if None in found else sum(n or 0 for n in found)
        self._progress = self._new_progress(total, "lines")
        self._progress_of_written = False

    def _new_progress(self, total: int | None, unit: str) -> Progress:
        return Progress(
            self._messages,
            total,
            every_s=self._progress_every_s,
            enabled=self._show_progress,
            label=self._label,
            unit=unit,
        )

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
        """Stop the runners' threads."""
        self.runner.close()
        if self._hook is not None and self._hook.raw_runner is not None:
            self._hook.raw_runner.close()

    def summary_json(self, duration_s: float) -> dict[str, Any]:
        """The summary with timings and the runner's per-evaluator counts."""
        records = self.summary.input.records
        extra: dict[str, Any] = {}
        if self.asker is not None:
            extra["asks"] = asdict(self.asker.counts)
        if self.flips is not None:
            extra["flips"] = self.flips.rows()
        classification = self.classes.to_json()
        if classification:
            extra["classification"] = classification
        if self.conversations:
            extra["conversations"] = self.conversations.rows()
        stats = self.runner.stats
        if self._hook is not None and self._hook.raw_runner is not None:
            stats.update(self._hook.raw_runner.stats)
        return self.summary.to_json(
            evaluators={e.name: asdict(stats[e.name]) for e in self.evaluators if e.name in stats},
            duration_s=round(duration_s, 3),
            records_per_s=round(records / duration_s, 2) if duration_s > 0 else None,
            **extra,
        )

    def _score(self, window: list[EvalItem], sink: TextIO | None) -> None:
        if not window:
            return
        raw: list[RagRecord] = []
        if self._hook is not None:
            window, raw = self._hook.window(window)
        with self._lock:
            self._ids.update((id(item.record), item.id) for item in window)
            self._ids.update(
                (id(record), item.id) for record, item in zip(raw, window, strict=False)
            )
        if self._hook is not None:
            future = self._hook.submit(self.runner, window, raw)  # runs the raw-text ones now
            with self._lock:
                for record in raw:
                    self._ids.pop(id(record), None)
        else:
            future = self.runner.submit([item.record for item in window])
        self._pending.append((window, future))
        self._write(sink, keep=self._in_flight)

    def _write(self, sink: TextIO | None, *, keep: int) -> None:
        """Write the oldest windows' lines until at most ``keep`` are in flight."""
        while len(self._pending) > keep:
            window, future = self._pending.popleft()
            outcomes = future.result()
            for item, outcome in zip(window, outcomes, strict=True):
                if sink is not None:
                    sink.write(dumps(record_json(item, outcome)) + "\n")
                self.summary.add(outcome, item.system, error=item.record.error)
                if self.sessions is not None:
                    self.sessions.add(item)
                self.classes.add(item, outcome)
                if self.flips is not None:
                    self.flips.add(item, outcome)
                if self._on_outcome is not None:
                    self._on_outcome(item, outcome)
            if sink is not None:
                sink.flush()
            with self._lock:
                for item in window:
                    self._ids.pop(id(item.record), None)
            if self._progress_of_written:
                records = self.summary.input.records
                self._progress.update(records, records)

    def _write_sessions(self, sink: TextIO | None) -> None:
        """The conversation lines, after every row's (their turns were kept as written)."""
        sessions = self.sessions
        if sessions is None or sink is None:
            return
        for line in sessions.lines(self.conversations):
            sink.write(dumps(line) + "\n")
        sink.flush()
        if sessions.dropped:
            self._note(
                f"{sessions.dropped} turns of sessions past the first {sessions.max_turns:,} "
                "were left out of their conversation scores"
            )

    def _bad(self, input_name: str, number: int, reason: str) -> None:
        self.summary.input.bad_lines += 1
        name = "<stdin>" if input_name == "-" else input_name
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
        text = self._redaction.text(text)
        with self._lock:
            if self._messages is not None:
                self._progress.note(f"{self._label}: {text}")
