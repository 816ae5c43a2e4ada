"""Reading the inputs of ``ragtrace eval``: one or several JSON Lines files, one after another.

``InputReader`` parses every line (``ragtrace._offline.records``), names each record's system
(``ragtrace._offline.systems``) and refuses a record whose id came earlier *for the same system*
(the same id in two systems is the normal case of a comparison). Refused lines go to ``bad``
with the file and line, and are counted in ``InputCounts``; lines are counted across files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import IO

from ragtrace._offline.records import (
    DEFAULT_APP,
    InputRecord,
    Line,
    LineError,
    RecordParser,
    read_lines,
)
from ragtrace._offline.summary import InputCounts
from ragtrace._offline.systems import SystemNamer

Input = tuple[str, IO[bytes]]
"""An input's name (its path, ``-`` for stdin) and its bytes."""


class InputReader:
    """Yields ``(system, record)`` for every usable line of ``inputs``, in order.

    Args:
        inputs: What to read, in order.
        parser: Turns lines into records.
        counts: Updated as lines are read.
        bad: Called with ``(input name, line number, reason)`` for each refused line.
        namer: Names each record's system; None: no system (ids must be unique over all
            inputs, as when ``ragtrace eval`` asks the questions of callable systems itself).
    """

    def __init__(
        self,
        inputs: Sequence[Input],
        parser: RecordParser,
        counts: InputCounts,
        bad: Callable[[str, int, str], None],
        namer: SystemNamer | None,
    ) -> None:
        self.inputs = tuple(inputs)
        self.parser = parser
        self.counts = counts
        self._bad = bad
        self._namer = namer
        self._first: dict[tuple[str | None, str], tuple[str, int]] = {}

    def __iter__(self) -> Iterator[tuple[str | None, InputRecord]]:
        lines_before = 0
        for name, source in self.inputs:
            for line in read_lines(source, self.parser.max_line_bytes):
                self.counts.lines = lines_before + line.number
                found = self._read(name, line)
                if found is not None:
                    yield found
            lines_before = self.counts.lines

    def _read(self, name: str, line: Line) -> tuple[str | None, InputRecord] | None:
        number = line.number
        try:
            item = self.parser.parse(line)
            if item is None:
                self.counts.blank_lines += 1
                return None
            system = None if self._namer is None else self._namer.name(item, name)
        except LineError as exc:
            self._bad(name, number, str(exc))
            return None
        first = self._first.setdefault((system, item.id), (name, number))
        if first != (name, number):
            self.counts.duplicate_ids += 1
            where = f"line {first[1]}" if first[0] == name else f"{_shown(first[0])}:{first[1]}"
            of = "" if system in (None, DEFAULT_APP) else f" in system {system!r}"
            self._bad(name, number, f"duplicate id {item.id!r}{of} (first on {where})")
            return None
        return system, item


def _shown(name: str) -> str:
    return "<stdin>" if name == "-" else name
