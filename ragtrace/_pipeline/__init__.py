"""The evaluation pipeline: submit -> sample -> queue -> workers -> sinks.

``EvaluationPipeline`` (``pipeline``) takes finished records from the application's thread;
``sampling`` decides which evaluators see each one, ``queues`` holds the work between ``submit``
and the ``workers``, which run evaluator calls with timeouts through the evaluation engine
(``ragtrace._engine``) and publish to the score ``sinks``. ``options`` sizes it, ``feedback``
keeps recent records for ``attach_feedback``, ``lifecycle`` flushes at exit and resets after
fork.
"""

from __future__ import annotations

from ragtrace._pipeline.metrics import PipelineMetrics
from ragtrace._pipeline.options import PipelineOptions
from ragtrace._pipeline.pipeline import EvaluationPipeline
from ragtrace._pipeline.sinks import RecordSink

__all__ = ["EvaluationPipeline", "PipelineMetrics", "PipelineOptions", "RecordSink"]
