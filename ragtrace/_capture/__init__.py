"""Capture: from framework runs to spans and one ``RagRecord`` per request.

The integrations (``ragtrace.integrations``) translate their framework's callbacks into calls on
``Capture`` (``tracker``), which drafts the spans (``drafts``). ``requests`` tracks which run
belongs to which open request and evicts stale ones; ``attributes`` builds the chunk, message
and error attributes of the steps' spans; ``records`` ends a request, has its spans written
(``span_writers``: straight to the SDK's span processors, or through the ``Tracer`` API) and
builds its record. ``tool_calls`` makes an agent's TOOL spans and ``ToolCall`` entries,
``conversation`` the session a request belongs to (``ragtrace.session``) and its earlier
turns. ``content`` cleans captured text and objects; every span attribute and event is named
in ``ragtrace._semconv``.
"""

from __future__ import annotations

from ragtrace._capture.attributes import Message, RawChunk
from ragtrace._capture.requests import Request
from ragtrace._capture.tracker import Capture

__all__ = ["Capture", "Message", "RawChunk", "Request"]
