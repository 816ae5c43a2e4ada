"""How the demo prints: a live ANSI screen on a terminal, plain or JSON lines elsewhere.

``render(snapshot, width, height)`` draws one frame of the live view (recent requests with
their top chunk and scores, pass rates per evaluator, requests/s, queue, drops, internal
errors); ``LiveView`` redraws it in place. ``plain_line`` and ``json_line`` format one request
for ``--no-live`` and ``--json``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

from ragtrace._model import Score
from ragtrace.demo._board import Counts, Entry

SHORT_NAMES = {
    "looping.unique_sentences": "uniq",
    "looping.longest_repeated_substring": "repeat",
    "looping.compression_ratio": "zlib",
    "tokens_presence.answer": "contact",
}
_GREEN, _RED, _DIM, _BOLD, _RESET = "\x1b[32m", "\x1b[31m", "\x1b[2m", "\x1b[1m", "\x1b[0m"
_HOME, _CLEAR_LINE, _CLEAR_DOWN = "\x1b[H", "\x1b[K", "\x1b[J"
_HIDE_CURSOR, _SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"


@dataclass
class Snapshot:
    """Everything one frame shows."""

    app: str
    seed: int
    elapsed_s: float
    duration_s: float | None
    metrics_url: str
    otlp_endpoint: str | None
    counts: Counts
    recent: Sequence[Entry] = field(default_factory=list)
    scenario: str = ""
    switch: str = ""


def short_name(score_name: str) -> str:
    """A short column label for a score name."""
    return SHORT_NAMES.get(score_name, score_name.rsplit(".", 1)[-1][:8])


def _paint(text: str, code: str, color: bool) -> str:
    return f"{code}{text}{_RESET}" if color else text


def format_scores(scores: Sequence[Score] | None, *, color: bool = False) -> str:
    """``uniq 1.00  repeat 0.12 FAIL ...``; ``-`` when there are none (yet)."""
    if not scores:
        return "-"
    parts = []
    for s in scores:
        value = "err" if s.value is None else f"{s.value:.2f}"
        text = f"{short_name(s.name)} {value}"
        if s.error is not None or s.passed is False:
            parts.append(_paint(text + " FAIL", _RED, color))
        else:
            parts.append(_paint(text, _GREEN, color))
    return "  ".join(parts)


def _top(entry: Entry) -> str:
    chunks = entry.record.chunks
    if not chunks:
        return "-"
    top = chunks[0]
    return f"{top.id} {top.score:.2f}" if top.score is not None else str(top.id)


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(0, width - 3)] + "..."


def plain_line(entry: Entry, query_chars: int = 48, *, color: bool = False) -> str:
    """One request as a line: number, status, top chunk, question, scores."""
    record = entry.record
    status = record.status if record.status == "ok" else _paint(record.status, _RED, color)
    pad = " " * max(0, 9 - len(record.status))
    return (
        f"{entry.n:>5} {status}{pad} {_top(entry):<17} "
        f"{_cut(record.query or '', query_chars):<{query_chars}}  "
        f"{format_scores(entry.scores, color=color)}"
    )


def json_line(entry: Entry) -> str:
    """One request as a JSON object with its chunks and scores."""
    record = entry.record
    return json.dumps(
        {
            "n": entry.n,
            **({"scenario": entry.scenario} if entry.scenario else {}),
            "trace_id": record.trace_id,
            "status": record.status,
            "query": record.query,
            "response": record.response,
            "model": record.model,
            "duration_s": round(record.duration_s, 6),
            "chunks": [{"id": c.id, "score": c.score} for c in record.chunks],
            "scores": [
                {
                    "name": s.name,
                    "value": s.value,
                    "passed": s.passed,
                    "threshold": s.threshold,
                    "error": s.error,
                    "explanation": s.explanation,
                }
                for s in entry.scores or ()
            ],
        }
    )


def _bar(rate: float, width: int = 20) -> str:
    full = round(rate * width)
    return "#" * full + "." * (width - full)


def render(snap: Snapshot, width: int = 100, height: int = 30, *, color: bool = True) -> str:
    """One frame of the live view, at most ``height`` lines of at most ``width`` columns."""
    c = snap.counts
    rate = c.total_requests / snap.elapsed_s if snap.elapsed_s > 0 else 0.0
    until = f"of {snap.duration_s:g} s" if snap.duration_s else "(until Ctrl-C)"
    statuses = "  ".join(f"{k} {int(v)}" for k, v in sorted(c.requests.items()))
    head = [
        _paint(f"ragtrace demo  app {snap.app}  seed {snap.seed}", _BOLD, color)
        + f"   {snap.elapsed_s:5.1f} s {until}   Ctrl-C stops",
        f"requests {c.total_requests} ({rate:.1f}/s)  {statuses}   queue {c.queue_depth:g}   "
        f"drops {c.total_drops}   internal errors {c.total_internal_errors}",
        f"metrics {snap.metrics_url}   otlp {snap.otlp_endpoint or 'off'}",
        *(
            [f"scenario {snap.scenario}" + (f"   {snap.switch}" if snap.switch else "")]
            if snap.scenario
            else []
        ),
        "",
    ]
    names = sorted(c.evaluations)
    rates = [_paint(f"{'evaluator':<36} {'pass rate':<27} {'mean':>5} {'fail':>5}", _DIM, color)]
    for name in names:
        pass_rate, mean = c.pass_rate(name), c.mean_score(name)
        fails = int(c.evaluations[name].get("fail", 0) + c.evaluations[name].get("error", 0))
        shown = f"{_bar(pass_rate)} {pass_rate:6.1%}" if pass_rate is not None else "-"
        mean_text = f"{mean:5.2f}" if mean is not None else "    -"
        rates.append(f"{name:<36} {shown:<27} {mean_text} {fails:>5}")
    room = max(1, height - len(head) - len(rates) - 3)
    rows = [
        _paint(f"{'#':>5} {'status':<9} {'top chunk':<17} {'question':<40}  scores", _DIM, color)
    ]
    rows += [plain_line(entry, 40, color=color) for entry in list(snap.recent)[-room:]]
    lines = [*head, *rows, "", *rates]
    return "\n".join(_fit(line, width) for line in lines[:height])


def _fit(line: str, width: int) -> str:
    """Cut a line to ``width`` visible columns (ANSI codes do not count)."""
    out, visible, i = [], 0, 0
    while i < len(line):
        if line[i] == "\x1b":
            end = line.find("m", i)
            end = len(line) - 1 if end < 0 else end
            out.append(line[i : end + 1])
            i = end + 1
            continue
        if visible >= width:
            break
        out.append(line[i])
        visible += 1
        i += 1
    return "".join(out) + (_RESET if "\x1b" in line else "")


class LiveView:
    """Redraws frames in place on a terminal (cursor hidden while it runs)."""

    def __init__(self, stream: TextIO, *, color: bool = True) -> None:
        self.stream = stream
        self.color = color
        self._started = False

    def draw(self, snap: Snapshot) -> None:
        """Draw one frame over the previous one."""
        import shutil

        size = shutil.get_terminal_size((100, 30))
        frame = render(snap, size.columns - 1, size.lines - 1, color=self.color)
        prefix = "" if self._started else _HIDE_CURSOR + "\x1b[2J"
        self._started = True
        body = "".join(line + _CLEAR_LINE + "\n" for line in frame.split("\n"))
        self.stream.write(prefix + _HOME + body + _CLEAR_DOWN)
        self.stream.flush()

    def close(self) -> None:
        """Show the cursor again; the last frame stays on screen."""
        if self._started:
            self.stream.write(_SHOW_CURSOR)
            self.stream.flush()
