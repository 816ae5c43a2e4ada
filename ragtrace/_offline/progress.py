"""Progress of ``ragtrace eval`` on stderr: a live bar on a terminal, plain lines otherwise.

On a TTY the bar is redrawn in place at most ten times a second::

    ragtrace eval [#########...........]  45%  4,500/10,000 lines  52.1 rec/s  eta 1:45

Elsewhere (a log, CI, a pipe) one line is written every ``every_s`` seconds and one at the end::

    ragtrace eval: 4,500/10,000 lines, 4,480 records, 52.1 rec/s

``label`` and ``unit`` name the run and what it counts (``ragtrace.evaluate`` counts the test
cases it has scored: ``ragtrace evaluate [####....]  40%  4/10 cases ...``).
"""

from __future__ import annotations

import io
import time
from typing import TextIO

BAR_WIDTH = 20
REDRAW_S = 0.1
_CLEAR_TO_END = "\x1b[K"


class Progress:
    """Reports how far a run got.

    Args:
        stream: Where to write (stderr); None: nowhere.
        total: Lines in the input, when known (a file; not stdin).
        every_s: Seconds between plain lines when ``stream`` is not a terminal.
        enabled: False writes nothing.
        label: What starts each line.
        unit: What ``update``'s first count counts (``lines`` of the input, ``cases``...).
    """

    def __init__(
        self,
        stream: TextIO | None,
        total: int | None,
        *,
        every_s: float = 10.0,
        enabled: bool = True,
        label: str = "ragtrace eval",
        unit: str = "lines",
    ) -> None:
        self.stream = stream if stream is not None else io.StringIO()
        self.total = total
        self.every_s = every_s
        self.label = label
        self.unit = unit
        self.enabled = enabled and stream is not None
        try:
            self.tty = self.stream.isatty()
        except (AttributeError, ValueError):
            self.tty = False
        self._start = time.monotonic()
        self._last = self._start
        self._lines = 0
        self._records = 0

    def update(self, lines: int, records: int) -> None:
        """Lines read (or whatever ``unit`` counts) and records evaluated so far."""
        self._lines, self._records = lines, records
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last >= (REDRAW_S if self.tty else self.every_s):
            self._last = now
            self._write(now)

    def note(self, text: str) -> None:
        """Write a message line (on a terminal: over the bar, which is redrawn below it)."""
        if self.tty and self.enabled:
            self.stream.write("\r" + _CLEAR_TO_END + text + "\n")
            self._write(time.monotonic())
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self, lines: int, records: int) -> None:
        """Report the final counts (and, on a terminal, end the bar's line)."""
        self._lines, self._records = lines, records
        if not self.enabled:
            return
        self._write(time.monotonic())
        if self.tty:
            self.stream.write("\n")
        self.stream.flush()

    def _write(self, now: float) -> None:
        elapsed = max(now - self._start, 1e-9)
        rate = self._records / elapsed
        of_total = f"/{self.total:,}" if self.total else ""
        if not self.tty:
            self.stream.write(
                f"{self.label}: {self._lines:,}{of_total} {self.unit}, {self._records:,} records, "
                f"{rate:,.1f} rec/s\n"
            )
            self.stream.flush()
            return
        counts = f"{self._lines:,}{of_total} {self.unit}  {rate:,.1f} rec/s"
        if self.total:
            share = min(1.0, self._lines / self.total)
            filled = int(share * BAR_WIDTH)
            bar = "#" * filled + "." * (BAR_WIDTH - filled)
            eta = elapsed * (1 - share) / share if share > 0 else 0.0
            text = f"{self.label} [{bar}] {100 * share:3.0f}%  {counts}  eta {_clock(eta)}"
        else:
            text = f"{self.label}  {counts}"
        self.stream.write("\r" + text + _CLEAR_TO_END)
        self.stream.flush()


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
