"""Capture: from framework runs to spans and one ``RagRecord`` per request.

The integrations (``ragtrace.integrations``) translate their framework's callbacks into calls on
``Capture``; ``content`` cleans captured text and objects, ``semconv`` names every span
attribute, event and metric.
"""

from __future__ import annotations

from ragtrace.capture.core import Capture, Message, RawChunk, Request

__all__ = ["Capture", "Message", "RawChunk", "Request"]
