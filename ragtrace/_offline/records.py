"""Reading an evaluation data set: JSON Lines in, ``RagRecord`` values (or reasons) out.

One JSON object per line::

    {"id": "q-17", "query": "How long is the refund window?",
     "contexts": ["Refunds are accepted within 30 days.",
                  {"text": "...", "id": "kb-2", "score": 0.8}],
     "response": "You have 30 days.", "reference": "30 days", "app": "help", "model": "gpt-x",
     "prompt_version": "v2"}

Field mapping to ``RagRecord``: ``query``, ``response``, ``reference``, ``model`` and ``error``
(strings or null) keep their names; ``contexts`` (a list of strings, or of objects with ``text``
and optional ``id``, ``score``, ``metadata``, ``source``, and ``used``: whether the answer's
model call saw it, as capture marks it) become ``chunks`` in the given order;
``app`` (a string, default ``default``); ``metadata`` (an object) becomes ``attributes``, with
the record's ``id`` under ``attributes["id"]``. ``trace_id`` and ``span_id`` are derived from the
id (sha256), so the same id always maps to the same trace. ``prompt_version`` (a string or null)
stays on the ``InputRecord`` (``ragtrace eval --system-key prompt_version`` names systems by it).

A line is refused (``LineError`` naming the line and the field) when it is not UTF-8, not JSON,
not an object, has no usable ``id`` (a non-empty string or an integer), lacks the ``response``
key while an evaluator that needs a response was asked for, or has a field of the wrong type.
A ``response`` that is present but null or empty is not an input error: evaluators that need
it skip the record (and it is counted as skipped). Lines longer than the cap (``MAX_LINE_BYTES``,
10 MiB by default) are refused without being held in memory. Blank lines are ignored. Keys the
format does not know are reported once per key (with a did-you-mean) and otherwise ignored.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Any

from ragtrace._config.suggestions import suggest
from ragtrace._model import Chunk, RagRecord

MAX_LINE_BYTES = 10 * 1024 * 1024
DEFAULT_APP = "default"
FIELDS = (
    "id", "query", "contexts", "response", "reference", "app", "model", "error", "metadata",
    "prompt_version",
)  # fmt: skip
CHUNK_FIELDS = ("text", "id", "score", "metadata", "source", "used")
_OPTIONAL_TEXT = ("query", "response", "reference", "model", "error")
_BOM = b"\xef\xbb\xbf"
_READ_BLOCK = 1 << 20


class LineError(ValueError):
    """A line of the input that cannot become a record; the message says why."""


@dataclass(frozen=True, slots=True)
class Line:
    """One physical line of the input: its 1-based number and bytes (None when too long)."""

    number: int
    data: bytes | None


@dataclass(frozen=True, slots=True)
class InputRecord:
    """A record read from the input, with the line it came from, its id and prompt version."""

    line: int
    id: str
    record: RagRecord
    prompt_version: str | None = None


def read_lines(stream: IO[bytes], max_bytes: int = MAX_LINE_BYTES) -> Iterator[Line]:
    """Split a binary stream into lines without ever holding more than ``max_bytes`` of one.

    A line longer than ``max_bytes`` (its newline not counted) is read to its end and dropped:
    it comes out as ``Line(number, None)``. A UTF-8 byte order mark at the start is removed.
    """
    number = 0
    while True:
        data = stream.readline(max_bytes + 1)
        if not data:
            return
        number += 1
        if number == 1 and data.startswith(_BOM):
            data = data[len(_BOM) :]
        if len(data) > max_bytes and not _ends_line(data, max_bytes):
            _skip_rest_of_line(stream)
            yield Line(number, None)
            continue
        yield Line(number, data)


def _ends_line(data: bytes, max_bytes: int) -> bool:
    """Whether ``data`` (max_bytes + 1 long) is a line of exactly max_bytes plus its newline."""
    return len(data) == max_bytes + 1 and data.endswith(b"\n")


def _skip_rest_of_line(stream: IO[bytes]) -> None:
    while True:
        block = stream.readline(_READ_BLOCK)
        if not block or block.endswith(b"\n"):
            return


def decode_json(text: str) -> Any:
    """The JSON value of one line.

    Raises:
        LineError: The text is not JSON, or nested too deeply to decode (the message says which).
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise LineError(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise LineError("invalid JSON: nested too deeply") from None


def count_lines(path: str) -> int | None:
    """The number of lines of a regular file (for a progress bar), None when unknown.

    Anything else (a pipe, a terminal, ``/dev/fd/N``) is not read: it could be read only once.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as f:
            total, last = 0, b"\n"
            while block := f.read(_READ_BLOCK):
                total += block.count(b"\n")
                last = block[-1:]
            return total + (last != b"\n")
    except OSError:
        return None


class RecordParser:
    """Turns lines into ``InputRecord`` values; reports unknown keys once each through ``warn``.

    Args:
        require_response: Refuse lines without a ``response`` key.
        warn: Called with a message for each unknown top-level or chunk key, first time seen.
        max_line_bytes: The cap ``read_lines`` applied (named in the error for a long line).
    """

    def __init__(
        self,
        *,
        require_response: bool,
        warn: Callable[[str], None] | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
    ) -> None:
        self.require_response = require_response
        self.max_line_bytes = max_line_bytes
        self._warn = warn
        self._unknown: set[str] = set()

    def parse(self, line: Line) -> InputRecord | None:
        """The record on ``line``; None for a blank line.

        Raises:
            LineError: The line cannot be used (the message says why, without the line number).
        """
        if line.data is None:
            raise LineError(f"line longer than the limit of {self.max_line_bytes:,} bytes")
        try:
            text = line.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LineError(
                f"not valid UTF-8 (byte {exc.start + 1} of the line: {exc.reason})"
            ) from None
        if not text.strip():
            return None
        data = decode_json(text)
        if not isinstance(data, dict):
            raise LineError(f"expected a JSON object, got {_json_type(data)}")
        return self.parse_object(data, line.number)

    def parse_object(self, data: Mapping[str, Any], number: int) -> InputRecord:
        """The record of one decoded object (a line's JSON, or a mapping built in code);
        ``number`` says where it came from (its line, or its position).

        Raises:
            LineError: The object cannot be used (the message says why).
        """
        self._note_unknown(data, FIELDS, "")
        record_id = _record_id(data)
        if self.require_response and "response" not in data:
            raise LineError("missing 'response' (an evaluator that needs it was asked for)")
        text = {key: _optional_text(data, key) for key in _OPTIONAL_TEXT}
        app = data.get("app", DEFAULT_APP)
        if not isinstance(app, str) or not app:
            raise LineError(f"'app' must be a non-empty string, got {_json_type(app)}")
        metadata = data.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise LineError(f"'metadata' must be an object, got {_json_type(metadata)}")
        digest = hashlib.sha256(record_id.encode("utf-8", "surrogatepass")).hexdigest()
        record = RagRecord(
            trace_id=digest[:32],
            span_id=digest[32:48],
            query=text["query"],
            chunks=self._chunks(data.get("contexts")),
            response=text["response"],
            reference=text["reference"],
            app=app,
            model=text["model"],
            error=text["error"],
            attributes={**(metadata or {}), "id": record_id},
        )
        return InputRecord(number, record_id, record, _optional_text(data, "prompt_version"))

    def _chunks(self, contexts: object) -> tuple[Chunk, ...]:
        if contexts is None:
            return ()
        if not isinstance(contexts, list):
            raise LineError(f"'contexts' must be a list, got {_json_type(contexts)}")
        return tuple(self._chunk(item, f"contexts[{i}]") for i, item in enumerate(contexts))

    def _chunk(self, item: object, where: str) -> Chunk:
        if isinstance(item, str):
            return Chunk(item)
        if not isinstance(item, dict):
            raise LineError(f"'{where}' must be a string or an object, got {_json_type(item)}")
        self._note_unknown(item, CHUNK_FIELDS, "contexts[].")
        text = item.get("text")
        if not isinstance(text, str):
            raise LineError(f"'{where}.text' must be a string, got {_json_type(text)}")
        chunk_id = item.get("id")
        if chunk_id is not None and (
            isinstance(chunk_id, bool) or not isinstance(chunk_id, str | int)
        ):
            raise LineError(f"'{where}.id' must be a string or integer, got {_json_type(chunk_id)}")
        score = item.get("score")
        if score is not None and (
            isinstance(score, bool)
            or not isinstance(score, int | float)
            or not math.isfinite(score)
        ):
            raise LineError(f"'{where}.score' must be a finite number, got {_json_type(score)}")
        metadata = item.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise LineError(f"'{where}.metadata' must be an object, got {_json_type(metadata)}")
        source = item.get("source")
        if source is not None and not isinstance(source, str):
            raise LineError(f"'{where}.source' must be a string, got {_json_type(source)}")
        used = item.get("used")
        if used is not None and not isinstance(used, bool):
            raise LineError(f"'{where}.used' must be true, false or null, got {_json_type(used)}")
        return Chunk(
            text,
            id=None if chunk_id is None else str(chunk_id),
            score=None if score is None else float(score),
            metadata=metadata or {},
            source=source,
            used=used,
        )

    def _note_unknown(self, data: Mapping[str, Any], known: tuple[str, ...], prefix: str) -> None:
        if self._warn is None:
            return
        for key in data:
            name = prefix + key
            if key in known or name in self._unknown:
                continue
            self._unknown.add(name)
            hint = suggest(key, known, show=lambda close: f"'{prefix}{close}'")
            self._warn(f"unknown field '{name}' ignored{hint}; known: {', '.join(known)}")


def _record_id(data: Mapping[str, Any]) -> str:
    if "id" not in data:
        raise LineError("missing 'id'")
    value = data["id"]
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise LineError(f"'id' must be a string or integer, got {_json_type(value)}")
    if isinstance(value, str) and not value.strip():
        raise LineError("'id' is empty")
    return str(value)


def _optional_text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise LineError(f"'{key}' must be a string or null, got {_json_type(value)}")
    return value


def _json_type(value: object) -> str:
    """How a JSON value reads in an error message: its JSON type, and the value when short."""
    kind = {
        dict: "an object", list: "an array", str: "a string", bool: "a boolean",
        int: "a number", float: "a number", type(None): "null",
    }.get(type(value), type(value).__name__)  # fmt: skip
    if isinstance(value, bool | int | float) or (isinstance(value, str) and len(value) <= 40):
        return f"{kind} ({json.dumps(value)})"
    return kind
