"""Labelled review items as a JSONL data set in the format ``ragtrace eval`` reads.

``export_jsonl(store, out)`` writes one JSON object per labelled item (its latest label), with
the fields of ``ragtrace._offline.records`` (``id``, ``query``, ``contexts``, ``response``,
``reference``, ``app``, ``model``, ``metadata``)::

    {"id": "review-12", "query": "...", "response": "...", "reference": "...",
     "contexts": [{"text": "...", "id": "doc-1", "score": 0.82, "metadata": {}, "source": null}],
     "app": "support-bot", "model": "gpt-x",
     "metadata": {"review": {"item": 12, "verdict": "bad", "failure_type": "hallucination",
                             "notes": "...", "reviewer": "ana",
                             "labelled_at": "2026-11-23T11:02:40",
                             "reference_source": "corrected", "reasons": ["score_failed"],
                             "scores": {"groundedness": 0.31}},
                  "trace_id": "...", "span_id": "...", "time": "2026-11-23T10:00:05"}}

``reference`` is the person's corrected answer when they gave one (``reference_source``
``corrected``); else, for a ``good`` verdict, the answer they approved (``approved``); else the
reference the record carried (``record``), or null. ``ragtrace eval --input FILE`` scores the
file like any data set (the ``metadata`` lands in each record's ``attributes``). Texts are as
stored: redacted and cut by the sink's limits.
"""

from __future__ import annotations

import json
import math
from typing import IO, Any

from ragtrace.review._filters import format_time
from ragtrace.review._items import (
    QueueFilter,
    ReviewItem,
    StoredLabel,
    chunk_to_json,
)
from ragtrace.review._sql_store import SqlReviewStore


def item_to_json(item: ReviewItem, stored: StoredLabel) -> dict[str, Any]:
    """One data set row (see the module docstring)."""
    label = stored.label
    if label.corrected_answer is not None:
        reference, source = label.corrected_answer, "corrected"
    elif label.verdict == "good" and item.response:
        reference, source = item.response, "approved"
    elif item.reference is not None:
        reference, source = item.reference, "record"
    else:
        reference, source = None, None
    scores = {
        s.score.name: s.score.value
        for s in item.scores
        if s.score.value is not None and math.isfinite(s.score.value)
    }
    return {
        "id": f"review-{item.id}",
        "query": item.query,
        "contexts": [chunk_to_json(c) for c in item.chunks],
        "response": item.response,
        "reference": reference,
        "app": item.app,
        "model": item.model,
        "metadata": {
            "review": {
                "item": item.id,
                "verdict": label.verdict,
                "failure_type": label.failure_type,
                "notes": label.notes,
                "reviewer": label.reviewer,
                "labelled_at": format_time(stored.created_ns),
                "reference_source": source,
                "reasons": sorted({r.name for r in item.reasons}),
                "scores": scores,
            },
            "trace_id": item.trace_id or None,
            "span_id": item.span_id or None,
            "time": format_time(item.request_ns),
        },
    }


def export_jsonl(
    store: SqlReviewStore,
    out: IO[str],
    filters: QueueFilter | None = None,
    *,
    only_with_reference: bool = False,
) -> int:
    """Write labelled items that ``filters`` selects as JSON lines; returns how many."""
    n = 0
    for item, stored in store.labelled(filters):
        row = item_to_json(item, stored)
        if only_with_reference and row["reference"] is None:
            continue
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        n += 1
    return n
