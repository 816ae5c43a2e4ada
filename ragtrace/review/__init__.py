"""The review queue: the requests that need a person, a web page to label them, labels back.

Fill the queue from the evaluation pipeline with a score sink::

    import ragtrace
    from ragtrace.review import ReviewRules, ReviewSink

    rt = ragtrace.init(app="support-bot", score_sinks=[ReviewSink("review.db", ReviewRules())])

then work through it with ``ragtrace review serve`` (a web app on 127.0.0.1) or
``ragtrace review list | show | label | export``. Labels become ``human`` Scores on the
OpenTelemetry and Prometheus sinks, agreement metrics (``ragtrace_review_agreement``) and a JSONL
data set for ``ragtrace eval``; ``ragtrace review calibrate`` (``ragtrace.review.calibration``)
fits the faithfulness verdict's thresholds to the labels. See docs/review.md.
"""

from __future__ import annotations

from ragtrace._metrics.review import ReviewMetrics
from ragtrace.integrations.lazy_exports import lazy_exports
from ragtrace.review.items import (
    FAILURE_TYPES,
    VERDICTS,
    Label,
    QueueFilter,
    Reason,
    ReviewItem,
    StoredLabel,
    StoredScore,
)
from ragtrace.review.labels import LabelService, human_score
from ragtrace.review.rules import Decision, ReviewRules
from ragtrace.review.sink import ContentLimits, ReviewSink
from ragtrace.review.store import Retention, ReviewStore, SqlReviewStore, open_store

__all__ = [
    "FAILURE_TYPES",
    "VERDICTS",
    "ContentLimits",
    "Decision",
    "FitOptions",
    "Label",
    "LabelService",
    "QueueFilter",
    "Reason",
    "Retention",
    "ReviewItem",
    "ReviewMetrics",
    "ReviewRules",
    "ReviewSink",
    "ReviewStore",
    "SqlReviewStore",
    "StoredLabel",
    "StoredScore",
    "app_for_runtime",
    "build_app",
    "fit_thresholds",
    "human_score",
    "labelled_scores",
    "open_store",
    "proposed_thresholds",
    "serve_review",
]

# Served on first use: the calibration loads numpy's fitting code, the server and its wiring the
# HTTP stack and the runtime.
_LAZY = {
    "FitOptions": "ragtrace.review.calibration",
    "fit_thresholds": "ragtrace.review.calibration",
    "labelled_scores": "ragtrace.review.calibration",
    "proposed_thresholds": "ragtrace.review.calibration",
    "app_for_runtime": "ragtrace.review.wiring",
    "build_app": "ragtrace.review.wiring",
    "serve_review": "ragtrace.review.httpd",
}
__getattr__ = lazy_exports(__name__, _LAZY)
