"""The running ragtrace: ``init`` wires capture, metrics, pipeline and sinks together."""

from __future__ import annotations

from ragtrace.runtime.instance import (
    TRACER_NAME,
    Ragtrace,
    current,
    get_current,
    init,
    start_metrics_server_for_current,
)

__all__ = [
    "TRACER_NAME",
    "Ragtrace",
    "current",
    "get_current",
    "init",
    "start_metrics_server_for_current",
]
