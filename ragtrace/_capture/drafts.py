"""What a request's spans will carry, kept while the request runs.

A request's spans (the RAG root, its retriever and LLM steps) are not live OpenTelemetry spans
while the request runs: each is a ``SpanDraft`` that gathers its name, start and end times,
attributes, status and events, and the request's spans are written together when it ends
(``span_writers``). A draft costs a dict and a few slots; a live SDK span costs a lock, the
sampler, attribute cleaning on every ``set_attribute`` and a span processor call at each end.

Drafts follow the SDK span's rules where it matters for what is exported: a status that is OK
stays OK, setting UNSET changes nothing, ending twice keeps the first end time.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from opentelemetry.trace import Status, StatusCode

_UNSET = Status(StatusCode.UNSET)


class SpanDraft:
    """One span of a request, not yet written.

    Args:
        name: The span's name.
        start_ns: Its start, ``time.time_ns()``.
        attributes: Its attributes so far (kept, not copied: the caller hands it over).
        parent: The step's draft it runs in (a retriever inside an agent's tool); None: a
            child of the request's root (or the root itself).
    """

    __slots__ = ("attributes", "end_ns", "events", "name", "parent", "start_ns", "status")

    def __init__(
        self,
        name: str,
        start_ns: int,
        attributes: dict[str, Any],
        parent: SpanDraft | None = None,
    ) -> None:
        self.name = name
        self.parent = parent
        self.start_ns = start_ns
        self.attributes = attributes
        self.end_ns: int | None = None
        self.status: Status = _UNSET
        self.events: list[tuple[str, dict[str, Any], int]] = []

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        self.attributes.update(attributes)

    def set_status(self, status: Status) -> None:
        """Set the status as the SDK would: OK is final and UNSET changes nothing."""
        if self.status.status_code is StatusCode.OK or status.status_code is StatusCode.UNSET:
            return
        self.status = status

    def add_event(self, name: str, attributes: dict[str, Any]) -> None:
        self.events.append((name, attributes, time.time_ns()))

    def end(self, end_ns: int | None = None) -> None:
        """Mark the span ended (at ``end_ns``, or now); a second end changes nothing."""
        if self.end_ns is None:
            self.end_ns = time.time_ns() if end_ns is None else end_ns

    @property
    def ended(self) -> bool:
        return self.end_ns is not None
