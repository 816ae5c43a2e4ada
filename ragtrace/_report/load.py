"""Reading scores files (the output of ``ragtrace eval``) into flat score rows.

``load_scores(["a.jsonl", "b.jsonl"])`` gives every usable score as a ``ScoreRow`` and what
reading found (``Loaded``). One line of a scores file::

    {"id": "q-17~typos", "system": "model-b", "case": "q-17", "perturbation": "typos",
     "record": {"query": "...", "response": "...", "reference": null},
     "scores": [{"name": "faithfulness", "evaluator": "faithfulness", "value": 0.82,
                 "passed": true, "threshold": 0.75, "direction": "higher_is_better",
                 "explanation": "...", "error": null, "details": {...}, ...}],
     "skipped": [...]}

Lines written before ``system``, ``case``, ``perturbation`` and ``record`` existed still load:
the system is the line's ``model`` or ``app`` when it has one, else the file's name when several
files are read (one file per system), else ``default``; the case is the id; the perturbation
null; the texts unknown. A score's own ``model`` is the evaluator's model (an embedding model,
a judge), never the system that answered, so it is not used to tell systems apart.

Besides the scores, each line says how the system answered (``AnswerLine``): its ``error``
when it gave no answer (``ragtrace eval`` writes why; a line without the field but with an
empty response and evaluators skipped for lack of one reads the same), and the ``latency_s``
and ``usage`` (tokens, cost) it reported. A report counts an unanswered case against its system
instead of leaving it out of sight.

Nothing in a file stops the reading: a line that is not JSON, not an object, without an id or a
``scores`` list, longer than the cap, or a duplicate (system, id) is reported with its file and
line number, counted and skipped (duplicates also in ``FileCounts.duplicate_ids``: ids redacted
without a key may collide, and ``ragtrace report`` warns); a single score without a name or
with a value that is not a finite number is reported and skipped; bytes that are not UTF-8 are
replaced (U+FFFD) and the line kept (and reported). Texts are cut to ``TEXT_CHARS`` characters.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragtrace._offline.answers import amount, tokens
from ragtrace._offline.records import MAX_LINE_BYTES, LineError, decode_json, read_lines

DEFAULT_SYSTEM = "default"
TEXT_CHARS = 4000
NAME_CHARS = 200
MAX_MESSAGES = 200
DIRECTIONS = ("higher_is_better", "lower_is_better")


@dataclass(frozen=True, slots=True)
class RecordText:
    """The texts of the answered record, as the scores line carries them (None when unknown)."""

    query: str | None = None
    response: str | None = None
    reference: str | None = None


@dataclass(frozen=True, slots=True)
class ScoreRow:
    """One score of one answer: which system, test case and perturbation, and the verdict."""

    system: str
    case: str
    id: str
    perturbation: str | None
    name: str
    evaluator: str
    value: float | None
    passed: bool | None
    threshold: float | None
    direction: str
    error: str | None
    explanation: str | None
    details: Mapping[str, Any]
    record: RecordText
    source: str  # "file:line", for messages


@dataclass(frozen=True, slots=True)
class AnswerLine:
    """How one system answered one (possibly perturbed) test case.

    Attributes:
        system, case, id, perturbation: As in ``ScoreRow``.
        error: Why no answer was given (None when the system answered).
        answered: The system gave an answer (no error and a non-empty response, where the
            line says).
        latency_s: Seconds the system took, when known.
        input_tokens, output_tokens, cost_usd: What the answer cost, when known.
        skipped: ``(evaluator, missing fields)`` of the evaluators that did not run on it.
        reference: The test case's reference answer, when the line carries one.
    """

    system: str
    case: str
    id: str
    perturbation: str | None
    error: str | None
    answered: bool
    latency_s: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    skipped: tuple[tuple[str, tuple[str, ...]], ...] = ()
    reference: str | None = None


@dataclass(slots=True)
class FileCounts:
    """What reading one file found."""

    path: str
    lines: int = 0
    records: int = 0
    blank_lines: int = 0
    bad_lines: int = 0
    duplicate_ids: int = 0
    """Lines skipped because their (system, id) came before (counted in ``bad_lines`` too)."""


@dataclass(slots=True)
class Loaded:
    """Every usable score row and what reading found.

    Attributes:
        rows: The scores, in file and line order.
        answers: How each line's system answered, in file and line order.
        files: Counts per file.
        messages: The first ``MAX_MESSAGES`` problems, each naming its file and line.
        problems: How many problems there were in all (bad lines, bad scores, repaired text).
    """

    rows: list[ScoreRow] = field(default_factory=list)
    answers: list[AnswerLine] = field(default_factory=list)
    files: list[FileCounts] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    problems: int = 0

    @property
    def bad_lines(self) -> int:
        return sum(f.bad_lines for f in self.files)

    @property
    def duplicate_ids(self) -> int:
        return sum(f.duplicate_ids for f in self.files)

    def note(self, message: str) -> None:
        self.problems += 1
        if len(self.messages) < MAX_MESSAGES:
            self.messages.append(message)


class ScoresFileError(OSError):
    """A scores file that cannot be opened at all."""


def load_scores(
    paths: Sequence[str | os.PathLike[str]], max_line_bytes: int = MAX_LINE_BYTES
) -> Loaded:
    """Read scores files; bad lines and scores are reported in ``Loaded.messages`` and counted.

    Raises:
        ScoresFileError: A file cannot be opened (missing, a directory, no permission).
    """
    loaded = Loaded()
    seen: set[tuple[str, str]] = set()
    names = [os.fspath(p) for p in paths]
    for path in names:
        fallback = _file_system(path) if len(names) > 1 else DEFAULT_SYSTEM
        counts = FileCounts(path)
        loaded.files.append(counts)
        try:
            stream = open(path, "rb")  # noqa: SIM115 - closed below, after the generator
        except OSError as exc:
            raise ScoresFileError(f"cannot read {path}: {exc.strerror or exc}") from None
        with stream:
            try:
                for line in read_lines(stream, max_line_bytes):
                    counts.lines += 1
                    where = f"{path}:{line.number}"
                    if line.data is None:
                        _bad(loaded, counts, where, f"longer than {max_line_bytes:,} bytes")
                        continue
                    _read_line(loaded, counts, line.data, where, fallback, seen)
            except OSError as exc:
                raise ScoresFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    return loaded


def _file_system(path: str) -> str:
    base = os.path.basename(path)
    for suffix in (".jsonl", ".json", ".ndjson"):
        if base.endswith(suffix) and len(base) > len(suffix):
            return base[: -len(suffix)]
    return base or DEFAULT_SYSTEM


def _bad(loaded: Loaded, counts: FileCounts, where: str, why: str) -> None:
    counts.bad_lines += 1
    loaded.note(f"{where}: skipped: {why}")


def _read_line(
    loaded: Loaded,
    counts: FileCounts,
    data: bytes,
    where: str,
    fallback: str,
    seen: set[tuple[str, str]],
) -> None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        loaded.note(f"{where}: not valid UTF-8 (byte {exc.start + 1}); bad bytes replaced")
    if not text.strip():
        counts.blank_lines += 1
        return
    try:
        obj = decode_json(text)
    except LineError as exc:
        _bad(loaded, counts, where, str(exc))
        return
    if not isinstance(obj, dict):
        _bad(loaded, counts, where, f"expected a JSON object, got {type(obj).__name__}")
        return
    record_id = obj.get("id")
    if isinstance(record_id, bool) or not isinstance(record_id, str | int) or record_id == "":
        _bad(loaded, counts, where, "missing 'id' (a non-empty string or an integer)")
        return
    scores = obj.get("scores")
    if not isinstance(scores, list):
        _bad(loaded, counts, where, "missing 'scores' (a list)")
        return
    record_id = clean(str(record_id), NAME_CHARS)
    system = _name(obj.get("system")) or _name(obj.get("model")) or _name(obj.get("app"))
    system = system or fallback
    if (system, record_id) in seen:
        counts.duplicate_ids += 1
        _bad(loaded, counts, where, f"duplicate id {record_id!r} for system {system!r}")
        return
    seen.add((system, record_id))
    counts.records += 1
    case = _name(obj.get("case")) or record_id
    perturbation = _name(obj.get("perturbation"))
    record = _record_text(obj.get("record"))
    answer = _answer_line(obj, system, case, record_id, perturbation, record)
    loaded.answers.append(answer)
    for index, item in enumerate(scores):
        row = _score_row(item, answer, record, where)
        if isinstance(row, str):
            loaded.note(f"{where}: score {index + 1} skipped: {row}")
        else:
            loaded.rows.append(row)


def _score_row(item: object, answer: AnswerLine, record: RecordText, where: str) -> ScoreRow | str:
    """The row of one score of ``answer``'s line, or why the score cannot be used."""
    if not isinstance(item, dict):
        return f"expected an object, got {type(item).__name__}"
    name = _name(item.get("name"))
    if name is None:
        return "no 'name'"
    value = item.get("value")
    error = _text(item.get("error"))
    if value is not None and not _finite_number(value):
        return f"{name!r}: 'value' is not a finite number ({str(value)[:40]!r})"
    passed = item.get("passed")
    threshold = item.get("threshold")
    if not _finite_number(threshold):
        threshold = None
    direction = item.get("direction")
    details = item.get("details")
    return ScoreRow(
        system=answer.system,
        case=answer.case,
        id=answer.id,
        perturbation=answer.perturbation,
        name=name,
        evaluator=_name(item.get("evaluator")) or name.split(".")[0],
        value=None if value is None else float(value),
        passed=passed if isinstance(passed, bool) else None,
        threshold=None if threshold is None else float(threshold),
        direction=direction if direction in DIRECTIONS else DIRECTIONS[0],
        error=error if error else (None if value is not None else "no value"),
        explanation=_text(item.get("explanation")),
        details=details if isinstance(details, dict) else {},
        record=record,
        source=where,
    )


def _answer_line(
    obj: Mapping[str, Any],
    system: str,
    case: str,
    record_id: str,
    perturbation: str | None,
    record: RecordText,
) -> AnswerLine:
    skipped = obj.get("skipped")
    skips = [s for s in skipped if isinstance(s, dict)] if isinstance(skipped, list) else []
    error = _text(obj.get("error"))
    raw = obj.get("record")
    has_response = isinstance(raw, dict) and "response" in raw
    empty = has_response and not (record.response or "").strip()
    no_response = any("response" in (s.get("missing") or []) for s in skips)
    found = obj.get("usage")
    usage: Mapping[str, Any] = found if isinstance(found, dict) else {}
    return AnswerLine(
        system=system,
        case=case,
        id=record_id,
        perturbation=perturbation,
        error=error or ("no response" if empty and no_response else None),
        answered=error is None and not (empty and no_response),
        latency_s=amount(obj.get("latency_s")),
        input_tokens=tokens(usage.get("input_tokens")),
        output_tokens=tokens(usage.get("output_tokens")),
        cost_usd=amount(usage.get("cost_usd")),
        skipped=tuple(
            (name, tuple(str(m) for m in missing if isinstance(m, str)))
            for s in skips
            if (name := _name(s.get("evaluator"))) is not None
            and isinstance(missing := s.get("missing") or [], list)
        ),
        reference=record.reference,
    )


def _finite_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _record_text(value: object) -> RecordText:
    if not isinstance(value, dict):
        return RecordText()
    return RecordText(
        query=_text(value.get("query")),
        response=_text(value.get("response")),
        reference=_text(value.get("reference")),
    )


def _name(value: object) -> str | None:
    """A non-empty name (ids, systems, cases), cleaned and capped; None otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        return None
    return clean(value, NAME_CHARS)


def _text(value: object) -> str | None:
    return clean(value, TEXT_CHARS) if isinstance(value, str) else None


def clean(text: str, limit: int) -> str:
    """``text`` that UTF-8 can hold (lone surrogates replaced), cut to ``limit`` chars + "…"."""
    if len(text) > limit:
        text = text[:limit] + "…"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", errors="replace").decode("utf-8")
    return text


def systems_of(rows: Iterable[ScoreRow | AnswerLine]) -> list[str]:
    """The systems in first-seen order."""
    return list(dict.fromkeys(r.system for r in rows))
