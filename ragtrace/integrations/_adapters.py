"""The adapters of the framework integrations: how offline tools call an app of a framework.

A ``FrameworkAdapter`` (one per framework, in ``ragtrace/integrations/<framework>/_adapter.py``,
listed in ``ragtrace.integrations.ADAPTERS``) knows its framework's objects by their shape,
never by importing the framework:

- ``matches(app)``: ``app`` is an app of the framework (``app_kind`` says what that is: a
  LangChain runnable, a LlamaIndex query engine);
- ``caller(name, app)``: an ``AppCaller`` that asks the app a question (after the earlier
  turns of a conversation, the framework's way) and returns a ``Called``: what the app
  returned, and the record of the turn when the adapter captured it with ragtrace's own
  capture;
- ``reply(value)``: a response object of the framework (a LlamaIndex ``Response``, a LangChain
  message) as the plain mapping an app may return (``{"response": ..., "contexts": ...}``);
- ``context(item)``: a retrieved item of the framework (a ``Document``, a node) as a plain
  context mapping (``text``, ``id``, ``score``, ``metadata``);
- ``passage_text(item)``: the text capture records for such an item.

Each returns None for what is not its framework's. ``adapters()`` loads the list once, on
first use, so importing ragtrace imports no framework; ``adapter_for(app)`` is the first
adapter that matches.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ragtrace._model import Conversation, RagRecord
from ragtrace.integrations import ADAPTERS


@dataclass(frozen=True, slots=True)
class Called:
    """One question asked of an app.

    Attributes:
        result: What the app returned.
        record: What ragtrace's capture saw of the turn (None: the adapter does not capture,
            or nothing was captured).
    """

    result: object
    record: RagRecord | None = None


class AppCaller(Protocol):
    """An app of a framework, ready to be asked questions."""

    def call(self, query: str, conversation: Conversation | None = None) -> Called:
        """Ask ``query`` after the earlier turns of ``conversation`` (it may raise)."""
        ...

    def close(self) -> None:
        """Release what the caller holds."""
        ...


class FrameworkAdapter(Protocol):
    """What offline tools need of one framework (see the module docstring)."""

    name: str
    app_kind: str  # what ``matches`` accepts, for an error: "a LangChain runnable (.invoke)"

    def matches(self, app: object) -> bool: ...

    def caller(self, name: str, app: Any) -> AppCaller: ...

    def reply(self, value: object) -> Mapping[str, object] | None: ...

    def context(self, item: object) -> Mapping[str, object] | None: ...

    def passage_text(self, item: object) -> object | None: ...


@functools.cache
def adapters() -> tuple[FrameworkAdapter, ...]:
    """The adapters of ``ADAPTERS``, loaded once, in order."""
    found = []
    for spec in ADAPTERS:
        module, _, attribute = spec.partition(":")
        found.append(getattr(importlib.import_module(module), attribute))
    return tuple(found)


def adapter_for(app: object) -> FrameworkAdapter | None:
    """The first adapter whose framework ``app`` belongs to, or None."""
    return next((adapter for adapter in adapters() if adapter.matches(app)), None)
