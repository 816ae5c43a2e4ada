"""Prometheus's own rule engine, through ``promtool test rules``: which alerts change state when.

``alert_changes(sampled, rule_files)`` writes a promtool unit test whose input series are
``sampled``'s, evaluated every ``sampled.step`` seconds, with one ``promql_expr_test`` per
evaluation asking for the ``ALERTS`` series that appeared or went away at that evaluation and
expecting none::

    (ALERTS unless ALERTS offset 60s) or -(ALERTS offset 60s unless ALERTS)

So promtool reports only the evaluations at which an alert changed state: each such test fails,
and its ``got:`` line lists the series that appeared (value 1, the ``ALERTS`` name kept) and
those that went away (value -1). ``parse_report`` reads them back, with label values unquoted
as Go quotes them; every line of promtool's report it does not know (a rule file that does not
parse, a rule that fails to evaluate, a query error) becomes a ``RulesError`` or
``PromtoolError`` that quotes it. promtool's report is written to a file and read line by line,
so its size never matters. Before that, ``promtool check rules`` checks the files
(``check_rules``), and a replay in which a rule's range would hold more samples of a series than
promtool's rule tests allow in one query (``MAX_SAMPLES``: a 7-day range read every minute) is
refused with the step that would do (``check_sample_limit``).

At each evaluation the groups of recording rules run first, then the others, each kind in the
order of the files (sorted) and of the groups in them (``group_order``): so an alert reads what
the recording rules recorded at the same evaluation. (Unless told an order, promtool picks a
new one each run, and an alert's times move by a step between runs.)

promtool runs from time 0: evaluation ``k`` is at ``k * step`` seconds, the unix time
``sampled.start + k * step``. Rules that read the clock (``time()``, ``hour()``) see the former.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtrace._alerts.rules import Range, duration_ms, group_order, ranges
from ragtrace._alerts.series import Sampled

INSTALL_HINT = (
    "install Prometheus's promtool (Debian/Ubuntu: apt-get install prometheus; elsewhere: "
    "https://prometheus.io/download/) and put it on PATH, or pass --promtool PATH"
)
SHOWN_LINES = 5
MAX_SAMPLES = 10_000
"""The most samples one query may load in ``promtool test rules`` (fixed in promtool's test
engine, not a flag; Prometheus's own default is 50,000,000). A range of one series counts its
samples; a subquery counts those of every series it selects."""
_TOO_MANY = "query processing would load too many samples"
_EXPR = re.compile(r'^    expr: (".*"), time: ([0-9a-z]+),$')
_GOT = re.compile(r"^        got: (.*)$")
_HEADINGS = ("SUCCESS", "FAILED:")
_NOT_YAML = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")
_GLOB_SPECIAL = re.compile(r"([*?\[\\])")


class PromtoolError(RuntimeError):
    """promtool is missing, failed, or said something this module does not understand."""


class RulesError(ValueError):
    """The rule files do not load, or a rule fails to evaluate (promtool's words quoted)."""


class SampleLimit(RulesError):
    """A rule reads more samples in one query than promtool's rule tests allow (``MAX_SAMPLES``);
    the message says which rule and which ``step`` would do."""


@dataclass(frozen=True, slots=True)
class Change:
    """An ``ALERTS`` series that appeared (``appeared``) or went away at an evaluation.

    Attributes:
        at: Seconds since the first evaluation.
        labels: The series' labels (``alertname``, ``alertstate`` and the alert's own).
        appeared: True when it appeared, False when it went away.
    """

    at: int
    labels: dict[str, str]
    appeared: bool


def find_promtool(path: str | None = None) -> str:
    """``path`` when it is an executable, else ``promtool`` on PATH.

    Raises:
        PromtoolError: Neither (the message says how to install it).
    """
    found = shutil.which(path or "promtool")
    if found is None:
        where = f"{path} is not an executable" if path else "promtool not found on PATH"
        raise PromtoolError(f"{where}: {INSTALL_HINT}")
    return found


def changes_expr(step: int) -> str:
    """The query whose answer at an evaluation is the alerts that changed state there."""
    offset = f"offset {step}s"
    return f"(ALERTS unless ALERTS {offset}) or -(ALERTS {offset} unless ALERTS)"


def check_sample_limit(rule_files: Sequence[Path], sampled: Sampled) -> None:
    """Refuse, before promtool runs, a replay in which a rule's range would hold more samples of
    a series than promtool allows (``MAX_SAMPLES``).

    Raises:
        SampleLimit: Which rule, how many samples, and the shortest step that would do.
    """
    step_ms = sampled.step * 1000
    span_ms = (sampled.samples - 1) * step_ms
    worst: tuple[int, Range] | None = None
    for found in ranges(rule_files):
        if found.resolution_ms is None:  # stored samples: one per step, at most the replay's
            samples = min(found.range_ms, span_ms) // step_ms + 1
        else:
            samples = found.range_ms // (found.resolution_ms or step_ms) + 1
        if samples >= MAX_SAMPLES and (worst is None or samples > worst[0]):
            worst = (samples, found)
    if worst is None:
        return
    samples, found = worst
    what = f"{found.text} of {found.rule} ({found.file})"
    if found.resolution_ms is not None:
        raise SampleLimit(
            f"{what} reads {samples:,} samples of each series, more than promtool test rules "
            f"allows in one query ({MAX_SAMPLES:,}): promtool cannot evaluate this subquery"
        )
    shortest = found.range_ms // ((MAX_SAMPLES - 1) * 1000) + 1
    longest_h = (MAX_SAMPLES - 1) * sampled.step / 3600
    raise SampleLimit(
        f"{what} would read {samples:,} samples of a series at --step {sampled.step}, more than "
        f"promtool test rules allows in one query ({MAX_SAMPLES:,}): use --step {shortest} or "
        f"more, or replay less than {longest_h:.0f} hours"
    )


def unit_test(sampled: Sampled, rule_files: Sequence[Path]) -> dict[str, object]:
    """The promtool unit test (a mapping to write as JSON, which is YAML) of ``sampled``."""
    step = f"{sampled.step}s"
    expr = changes_expr(sampled.step)
    return {
        "rule_files": [_glob_escape(str(Path(f).resolve())) for f in rule_files],
        "evaluation_interval": step,
        "group_eval_order": group_order(rule_files),
        "tests": [
            {
                "name": "backtest",
                "interval": step,
                "input_series": [{"series": s.text, "values": s.values} for s in sampled.series],
                "promql_expr_test": [
                    {"expr": expr, "eval_time": f"{k * sampled.step}s", "exp_samples": []}
                    for k in range(sampled.samples)
                ],
            }
        ],
    }


def as_yaml(document: object) -> str:
    """``document`` as JSON that YAML reads back the same: JSON is YAML but for characters YAML
    refuses raw (DEL, C1 controls) or reads as line breaks (NEL, U+2028, U+2029), escaped."""
    return _NOT_YAML.sub(lambda m: f"\\u{ord(m[0]):04x}", json.dumps(document, ensure_ascii=False))


def _glob_escape(path: str) -> str:
    """promtool reads ``rule_files`` as glob patterns: the file's path, matching only itself."""
    return _GLOB_SPECIAL.sub(r"\\\1", path)


def alert_changes(
    sampled: Sampled,
    rule_files: Sequence[Path],
    promtool: str | None = None,
    timeout_s: float | None = None,
) -> list[Change]:
    """Every change of state of every alert while ``sampled`` is replayed through the rules,
    in time order.

    Raises:
        RulesError: A rule file does not load, or a rule fails to evaluate.
        PromtoolError: promtool is missing, timed out, or answered what this module does not
            understand.
    """
    binary = find_promtool(promtool)
    check_rules(binary, rule_files, timeout_s)
    check_sample_limit(rule_files, sampled)
    with tempfile.TemporaryDirectory(prefix="ragtrace-backtest-") as tmp:
        test = Path(tmp) / "backtest.test.yml"
        test.write_text(as_yaml(unit_test(sampled, rule_files)), encoding="utf-8")
        report = Path(tmp) / "report.txt"
        with open(report, "wb") as out:
            done = _run(
                [binary, "test", "rules", str(test)],
                timeout_s,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=tmp,
            )
        with open(report, encoding="utf-8", errors="replace") as lines:
            changes = list(parse_report(lines, changes_expr(sampled.step), str(test)))
        if done.returncode not in (0, 1) or (done.returncode == 1 and not changes):
            shown = _head(report, str(test))
            raise PromtoolError(f"promtool exited with {done.returncode}: {shown}")
    return changes


def check_rules(binary: str, rule_files: Sequence[Path], timeout_s: float | None = None) -> None:
    """``promtool check rules``: every file parses, every expression and template too.

    Raises:
        RulesError: One does not (promtool's messages, on one line).
        PromtoolError: promtool could not run or timed out.
    """
    done = _run(
        [binary, "check", "rules", *map(str, rule_files)],
        timeout_s,
        capture_output=True,
        text=True,
        errors="replace",
    )
    if done.returncode == 0:
        return
    said = [line.strip() for line in (done.stderr + done.stdout).splitlines()]
    problems = [ln for ln in said if ln and not ln.startswith(("Checking ", "SUCCESS", "FAILED"))]
    unique = list(dict.fromkeys(problems))
    raise RulesError("; ".join(unique) or f"promtool check rules exited with {done.returncode}")


def _run(args: list[str], timeout_s: float | None, **how: Any) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run(args, **how)``; a timeout or a binary that cannot start is a
    PromtoolError naming the command (``promtool test rules``)."""
    what = " ".join(["promtool", *args[1:3]])
    try:
        return subprocess.run(args, timeout=timeout_s, check=False, **how)
    except subprocess.TimeoutExpired:
        raise PromtoolError(f"{what} took more than {timeout_s:g} s") from None
    except OSError as exc:
        raise PromtoolError(f"cannot run {args[0]}: {exc}") from None


def parse_report(lines: Iterator[str] | Sequence[str], expr: str, test: str) -> Iterator[Change]:
    """The changes a promtool report lists, in its order.

    Raises:
        RulesError: promtool could not load or evaluate the rules.
        PromtoolError: A line that is none of the report's known lines.
    """
    quoted = json.dumps(expr)  # Go's %q of this ASCII text, without backslashes in it
    at: int | None = None
    for raw in lines:
        line = raw.rstrip("\n")
        if not line.strip() or line.startswith("Unit Testing:") or line.strip() in _HEADINGS:
            continue
        if match := _EXPR.match(line):
            if match[1] != quoted:
                raise PromtoolError(f"promtool reported an unknown query: {line.strip()}")
            at = duration_s(match[2])
            continue
        if line.startswith("        exp: ") and at is not None:
            continue
        if (match := _GOT.match(line)) and at is not None:
            for labels, value in parse_samples(match[1]):
                if value not in (1.0, -1.0):
                    raise PromtoolError(f"unexpected sample value {value} in: {line.strip()}")
                labels.pop("__name__", None)
                yield Change(at, labels, value > 0)
            at = None
            continue
        message = line.strip().replace(test, "<backtest>")
        if _TOO_MANY in line:
            raise SampleLimit(
                f"{message} (promtool test rules loads at most {MAX_SAMPLES:,} samples in one "
                "query: a longer --step, or a shorter replay)"
            )
        if line.startswith("    rule: "):  # a rule that failed to evaluate: its name, time, error
            raise RulesError(message)
        raise PromtoolError(f"promtool said: {message}")


def duration_s(text: str) -> int:
    """Seconds of a Prometheus duration as promtool prints it (``1w2d3h4m5s``)."""
    ms = duration_ms(text)
    if ms is None or ms % 1000:
        raise PromtoolError(f"promtool printed a time that is not whole seconds: {text!r}")
    return ms // 1000


def parse_samples(text: str) -> Iterator[tuple[dict[str, str], float]]:
    """``{a="x", b="y"} 1E+00, {...} -1E+00`` (promtool's samples; ``nil``: none)."""
    if text == "nil":
        return
    scanner = _Scanner(text)
    while True:
        labels = scanner.labels()
        value = scanner.value()
        yield labels, value
        if scanner.done():
            return
        scanner.expect(", ")


class _Scanner:
    """Reads promtool's printed samples: Go's ``labels.Labels.String()`` and a float."""

    _NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
    _QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
    _VALUE = re.compile(r"[^,\s]+")

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def fail(self, what: str) -> PromtoolError:
        return PromtoolError(f"cannot read promtool's samples ({what} at {self.at}): {self.text}")

    def expect(self, token: str) -> None:
        if not self.text.startswith(token, self.at):
            raise self.fail(f"expected {token!r}")
        self.at += len(token)

    def match(self, pattern: re.Pattern[str], what: str) -> str:
        found = pattern.match(self.text, self.at)
        if found is None:
            raise self.fail(f"expected {what}")
        self.at = found.end()
        return found[0]

    def labels(self) -> dict[str, str]:
        self.expect("{")
        labels: dict[str, str] = {}
        while not self.text.startswith("}", self.at):
            if labels:
                self.expect(", ")
            name = self.match(self._NAME, "a label name")
            self.expect("=")
            labels[name] = go_unquote(self.match(self._QUOTED, "a quoted value"))
        self.expect("}")
        return labels

    def value(self) -> float:
        self.expect(" ")
        text = self.match(self._VALUE, "a number")
        try:
            return float(text)
        except ValueError:
            raise self.fail("a number") from None

    def done(self) -> bool:
        return self.at == len(self.text)


_SIMPLE_ESCAPES = {"a": b"\a", "b": b"\b", "f": b"\f", "n": b"\n", "r": b"\r", "t": b"\t",
                   "v": b"\v", "\\": b"\\", '"': b'"', "'": b"'"}  # fmt: skip
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}|.)", re.S)


def go_unquote(quoted: str) -> str:
    """The text of a Go double-quoted string (``strconv.Quote``'s escapes)."""
    body = quoted[1:-1]
    out = bytearray()
    at = 0
    for match in _ESCAPE.finditer(body):
        out += body[at : match.start()].encode("utf-8")
        code = match[1]
        if code[0] == "x":
            out.append(int(code[1:], 16))
        elif code[0] in "uU" and len(code) > 1 and int(code[1:], 16) <= 0x10FFFF:
            out += chr(int(code[1:], 16)).encode("utf-8", "surrogatepass")
        elif code[0] in "01234567" and len(code) == 3:
            out.append(int(code, 8) & 0xFF)
        elif code in _SIMPLE_ESCAPES:
            out += _SIMPLE_ESCAPES[code]
        else:
            raise PromtoolError(f"unknown escape \\{code} in {quoted}")
        at = match.end()
    out += body[at:].encode("utf-8")
    return out.decode("utf-8", "replace")


def _head(report: Path, test: str) -> str:
    """The first lines of promtool's report, on one line."""
    with open(report, encoding="utf-8", errors="replace") as f:
        lines = [line.strip() for _, line in zip(range(50), f, strict=False) if line.strip()]
    shown = [ln.replace(test, "<backtest>") for ln in lines if not ln.startswith("Unit Testing")]
    return "; ".join(shown[:SHOWN_LINES]) or "(no output)"
