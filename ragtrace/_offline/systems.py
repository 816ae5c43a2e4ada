"""Which system gave each answer in a ``ragtrace eval`` run, and the unit the run scores.

A run may compare several systems (models, apps, prompt versions, or input files): every answer
is an ``EvalItem`` naming its ``system``, the test ``case`` it answers and the ``perturbation``
of the question it was asked (None for the question as written). ``SystemNamer`` names the
system of a record read from a file, following ``--system-key``:

- ``file``: the input file's name without its extension (``runs/gpt-x.jsonl`` -> ``gpt-x``;
  ``stdin`` for ``-``); two inputs with the same name are refused;
- ``model`` / ``prompt_version``: the record's field; a record without it is refused;
- ``app``: the record's ``app`` (``default`` when absent);
- ``auto`` (the default): ``file`` when there are several inputs, else the record's ``model``
  when it has one, else its ``app``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from ragtrace._model import RagRecord
from ragtrace._offline.records import InputRecord, LineError

SYSTEM_KEYS = ("auto", "file", "model", "app", "prompt_version")
STDIN_SYSTEM = "stdin"


@dataclass(frozen=True, slots=True)
class EvalItem:
    """One answer to score.

    Attributes:
        system: Which system gave the answer.
        id: Unique within the system: the case's id, or ``f"{case}~{perturbation}"``.
        case: The test case (the input record's id) the answer is for.
        perturbation: The perturbation of the question that was asked, None for the original.
        record: What is scored.
    """

    system: str
    id: str
    case: str
    perturbation: str | None
    record: RagRecord


class SystemNamer:
    """Names the system of each input record (see the module docstring).

    Args:
        key: One of ``SYSTEM_KEYS``.
        inputs: The input paths (``-`` for stdin), in order.

    Raises:
        ValueError: An unknown key, or two inputs that would name the same system.
    """

    def __init__(self, key: str, inputs: Sequence[str]) -> None:
        if key not in SYSTEM_KEYS:
            raise ValueError(f"unknown system key {key!r}; known: {', '.join(SYSTEM_KEYS)}")
        self.key = "file" if key == "auto" and len(inputs) > 1 else key
        self._files = file_systems(inputs) if self.key == "file" else {}

    def name(self, item: InputRecord, input_name: str) -> str:
        """The system of ``item``, read from ``input_name``.

        Raises:
            LineError: The record lacks the field that names its system.
        """
        record = item.record
        if self.key == "file":
            return self._files[input_name]
        if self.key == "app":
            return record.app
        if self.key == "auto":
            return record.model or record.app
        value = record.model if self.key == "model" else item.prompt_version
        if not value:
            raise LineError(f"no '{self.key}' to name the system by (--system-key {self.key})")
        return value


def file_systems(inputs: Sequence[str]) -> dict[str, str]:
    """Input path -> system name (the file name without its last extension).

    Raises:
        ValueError: Two paths give the same name.
    """
    names: dict[str, str] = {}
    seen: dict[str, str] = {}
    for path in inputs:
        name = STDIN_SYSTEM if path == "-" else os.path.splitext(os.path.basename(path))[0]
        name = name or path
        if name in seen and seen[name] != path:
            raise ValueError(
                f"--input {seen[name]} and --input {path} would both be system {name!r}: "
                "rename one, or pick --system-key model, app or prompt_version"
            )
        seen[name] = path
        names[path] = name
    return names
