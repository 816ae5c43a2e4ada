"""Walking a settings mapping, section by section, into ``EvaluationSettings``.

``SECTIONS`` holds the top-level keys in the order they are read. Each ``Section`` says what a
missing key stands for and which reader turns its value into ``EvaluationSettings`` fields; a
reader sees the fields read before it (``sampling`` checks its names against ``evaluators``).
A new top-level key is a field of ``EvaluationSettings``, a reader and one entry here (as
``queue`` is: ``read_queue(checks, value, earlier) -> {"queue_url": ...}``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ragtrace.settings.checks import Checks
from ragtrace.settings.queue import read_queue
from ragtrace.settings.sampling import read_sampling
from ragtrace.settings.schema import EvaluationSettings, Fields
from ragtrace.settings.sections import read_evaluators, read_pipeline, read_sinks

SectionReader = Callable[[Checks, object, Mapping[str, Any]], Fields]
"""``(checks, value, fields read so far) -> the fields this section fills``."""


@dataclass(frozen=True)
class Section:
    """One top-level key of the settings.

    Attributes:
        absent: The value read when the key is missing (never modified: readers copy).
        read: Turns the key's value into ``EvaluationSettings`` fields.
    """

    absent: object
    read: SectionReader


SECTIONS: Mapping[str, Section] = MappingProxyType(
    {
        "evaluators": Section((), read_evaluators),
        "sampling": Section(MappingProxyType({}), read_sampling),
        "pipeline": Section(MappingProxyType({}), read_pipeline),
        "sinks": Section(MappingProxyType({}), read_sinks),
        "queue": Section(None, read_queue),
    }
)


def read_settings(data: object, source: str) -> EvaluationSettings:
    """Check ``data`` (shaped like the file) and build the settings.

    Raises:
        SettingsError: A key or value is invalid: ``<source>: <path>: <message>``.
    """
    checks = Checks(source)
    if not isinstance(data, Mapping):
        checks.fail("", f"expected a mapping at the top level, got {type(data).__name__}")
    top = checks.mapping(data, "", tuple(SECTIONS))
    fields: Fields = {}
    for key, section in SECTIONS.items():
        fields.update(section.read(checks, top.get(key, section.absent), fields))
    return EvaluationSettings(**fields)
