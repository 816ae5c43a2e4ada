"""The evaluation pipeline: submit -> sample -> queue -> workers -> sinks.

``EvaluationPipeline`` takes finished records from the application's thread; ``sampling``
decides which evaluators see each one, ``queues`` holds the work between ``submit`` and the
workers, ``runner``, ``callpool`` and ``processes`` run evaluator calls with timeouts on threads
or in worker processes.
"""

from __future__ import annotations

from ragtrace.pipeline.core import (
    EvaluationPipeline,
    PipelineMetrics,
    PipelineOptions,
    RecordSink,
)

__all__ = ["EvaluationPipeline", "PipelineMetrics", "PipelineOptions", "RecordSink"]
