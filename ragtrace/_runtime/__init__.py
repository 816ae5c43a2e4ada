"""The running ragtrace: ``init`` wires capture, metrics, pipeline and sinks together.

``instance`` holds the ``Ragtrace`` object, ``current`` the process-wide current one, ``tracing``
the tracer provider ragtrace writes to when the application set none (``span_export``: its
span processor, which keeps the shutdown budget and counts what it could not send), and
``metrics_endpoint`` the ``/metrics`` endpoint ``init`` opens, for one process or for all the
worker processes of a web server (docs/multiprocess.md).
"""

from __future__ import annotations

from ragtrace._runtime.current import (
    current,
    end_session,
    get_current,
    init,
    start_metrics_server_for_current,
)
from ragtrace._runtime.instance import Ragtrace
from ragtrace._runtime.tracing import TRACER_NAME

__all__ = [
    "TRACER_NAME",
    "Ragtrace",
    "current",
    "end_session",
    "get_current",
    "init",
    "start_metrics_server_for_current",
]
