"""Score sinks a user writes, given to ragtrace by import path (``Config.sinks``, ``--sink``).

``JsonLinesSink`` appends one JSON line per record it receives (the trace id and each
evaluator's scores by name) to the file ``TEST_OWN_SINK_FILE`` names, and ``{"shutdown": true}``
when it is shut down, so a test reads what a worker subprocess published. The others are the
mistakes a path can hold: a class that needs arguments, one without ``shutdown``, a function.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence

from ragtrace._model import Evaluation, RagRecord

SINK_FILE_ENV = "TEST_OWN_SINK_FILE"


class JsonLinesSink:
    """Every record it receives, one JSON line each, in the file ``$TEST_OWN_SINK_FILE``."""

    def __init__(self) -> None:
        self._file = open(os.environ[SINK_FILE_ENV], "a", encoding="utf-8")  # noqa: SIM115
        self._lock = threading.Lock()

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        scores = {e.evaluator: {s.name: s.value for s in e.scores} for e in evaluations}
        self._write({"trace_id": record.trace_id, "evaluators": scores})

    def shutdown(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.write(json.dumps({"shutdown": True}) + "\n")
                self._file.close()

    def _write(self, line: dict[str, object]) -> None:
        with self._lock:
            self._file.write(json.dumps(line) + "\n")
            self._file.flush()


def read_lines(path: str | os.PathLike[str]) -> list[dict[str, object]]:
    """What a ``JsonLinesSink`` wrote to ``path`` so far (nothing: [])."""
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


class NeedsAPath:
    """Cannot be built with no arguments."""

    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        """Nothing."""

    def shutdown(self) -> None:
        """Nothing."""


class ExportsOnly:
    """Has ``export`` but no ``shutdown``: not a ``ScoreSink``."""

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        """Nothing."""


def not_a_class() -> JsonLinesSink:
    return JsonLinesSink()
