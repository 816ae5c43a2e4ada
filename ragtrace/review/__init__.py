"""The review queue: the requests that need a person, a web page to label them, labels back.

Fill the queue from the evaluation pipeline with a score sink::

    import ragtrace
    from ragtrace.review import ReviewRules, ReviewSink

    rt = ragtrace.init(app="support-bot", score_sinks=[ReviewSink("review.db", ReviewRules())])

then work through it with ``ragtrace review serve`` (a web app on 127.0.0.1) or
``ragtrace review list | show | label | export``. Labels become ``human`` Scores on the
OpenTelemetry and Prometheus sinks, agreement metrics (``ragtrace_review_agreement``) and a JSONL
data set for ``ragtrace eval``; ``ragtrace review calibrate`` (``ragtrace.review._calibration``)
fits the faithfulness verdict's thresholds to the labels. See docs/review.md.
"""

from __future__ import annotations

from ragtrace._lazy_exports import lazy_exports
from ragtrace._metrics.review import ReviewMetrics, ReviewStatsSource
from ragtrace.review._items import (
    FAILURE_TYPES,
    VERDICTS,
    Label,
    LabelledState,
    QueueFilter,
    Reason,
    ReviewItem,
    StoredLabel,
    StoredScore,
)
from ragtrace.review._labels import LabelService, human_score
from ragtrace.review._rules import Decision, ReviewRules
from ragtrace.review._sink import ContentLimits, ReviewSink
from ragtrace.review._store import Retention, ReviewStore, SqlReviewStore, open_store

__all__ = [
    "FAILURE_TYPES",
    "VERDICTS",
    "AgreementRow",
    "CalibrationFit",
    "Claim",
    "ContentLimits",
    "Decision",
    "Facets",
    "FitOptions",
    "Label",
    "LabelService",
    "LabelledScore",
    "LabelledSet",
    "LabelledState",
    "Page",
    "Quality",
    "QueueFilter",
    "Reason",
    "Request",
    "Response",
    "Retention",
    "ReviewApp",
    "ReviewItem",
    "ReviewMetrics",
    "ReviewRules",
    "ReviewServer",
    "ReviewSink",
    "ReviewStats",
    "ReviewStatsSource",
    "ReviewStore",
    "SessionTurn",
    "SqlReviewStore",
    "StoredLabel",
    "StoredScore",
    "TraceLinks",
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
    "Claim": "ragtrace.review._claims",
    "Facets": "ragtrace.review._sql",
    "Page": "ragtrace.review._sql",
    "Request": "ragtrace.review._server",
    "Response": "ragtrace.review._server",
    "ReviewStats": "ragtrace._metrics.review",
    "AgreementRow": "ragtrace._metrics.review",
    "SessionTurn": "ragtrace.review._conversations",
    "Quality": "ragtrace.review._calibration",
    "CalibrationFit": "ragtrace.review._calibration",
    "LabelledScore": "ragtrace.review._calibration",
    "LabelledSet": "ragtrace.review._calibration",
    "ReviewApp": "ragtrace.review._server",
    "ReviewServer": "ragtrace.review._httpd",
    "TraceLinks": "ragtrace.review._pages",
    "FitOptions": "ragtrace.review._calibration",
    "fit_thresholds": "ragtrace.review._calibration",
    "labelled_scores": "ragtrace.review._calibration",
    "proposed_thresholds": "ragtrace.review._calibration",
    "app_for_runtime": "ragtrace.review._wiring",
    "build_app": "ragtrace.review._wiring",
    "serve_review": "ragtrace.review._httpd",
}
__getattr__ = lazy_exports(__name__, _LAZY)
