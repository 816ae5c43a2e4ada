"""The traffic ``phoenix_check.py`` sends to Phoenix: the demo's help-centre chain, traced by
ragtrace straight into Phoenix, with its scores posted as Phoenix span annotations.

Requests alternate between ``invoke``, ``stream`` and ``astream`` (a stream delivers its input
only at the end of the run: the case that once left ``{'input': ''}`` on the root span), with
the occasional stream abandoned after its first token; the demo's model now and then fails
(an ERROR trace). Three evaluators run on every request:
``looping`` and ``sensitive_data`` (ragtrace's own) and ``answer_grounding`` (a lexical check
defined here: the share of the answer's words found in the retrieved chunks, failing below
0.6), which the demo's model fails whenever it answers off-context, so a filter on a failed
annotation has something to find.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace.demo.app import build_chain
from ragtrace.demo.corpus import QUESTIONS
from ragtrace.evaluators import evaluator
from ragtrace.exporters.base import Evaluation
from ragtrace.exporters.otel import verdict_label
from ragtrace.integrations.langchain import RagtraceCallbackHandler
from ragtrace.model import RagRecord

PROJECT = "phoenix-check"
GROUNDING = "answer_grounding"
MODES = ("invoke", "stream", "astream", "invoke", "stream", "abandon")
_WORD = re.compile(r"[a-z0-9]+")


@evaluator(name=GROUNDING, requires={"response", "chunks"}, threshold=0.6)
def answer_grounding(record: RagRecord) -> float:
    """Share of the answer's words (3+ letters) that appear in the retrieved chunks."""
    words = [w for w in _WORD.findall((record.response or "").lower()) if len(w) > 2]
    context = set(_WORD.findall(" ".join(c.text for c in record.chunks).lower()))
    return sum(w in context for w in words) / len(words) if words else 0.0


@dataclass
class Sent:
    """One request as ragtrace recorded it, with the verdicts of its scores."""

    mode: str
    record: RagRecord
    verdicts: dict[str, tuple[str | None, float | None]] = field(default_factory=dict)


class _Keep:
    """A score sink that keeps each record's scores by trace id."""

    def __init__(self) -> None:
        self.by_trace: dict[str, dict[str, tuple[str | None, float | None]]] = {}

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        kept = self.by_trace.setdefault(record.trace_id, {})
        for evaluation in evaluations:
            for score in evaluation.scores:
                kept[score.name] = (verdict_label(score), score.value)

    def shutdown(self) -> None:
        """Nothing to release."""


def send(base_url: str, n: int, seed: int = 7, project: str = PROJECT) -> list[Sent]:
    """Ask ``n`` questions through ragtrace (its ``app``, and so the Phoenix project, is
    ``project``), exporting spans (OTLP) and annotations to Phoenix at ``base_url``; return
    what was sent once every score is posted."""
    keep = _Keep()
    rt = ragtrace.init(
        app=project,
        registry=CollectorRegistry(),
        otlp_endpoint=base_url,
        phoenix_endpoint=base_url,
        evaluators=["looping", "sensitive_data", answer_grounding],
        score_sinks=[keep],
        shutdown_timeout_s=30,
    )
    records: list[RagRecord] = []
    rt.add_record_sink(records.append)
    chain = build_chain(seed=seed)
    config: Any = {"callbacks": [RagtraceCallbackHandler(rt)]}
    modes = [MODES[i % len(MODES)] for i in range(n)]
    try:
        for i, mode in enumerate(modes):
            question = QUESTIONS[(i * 7) % len(QUESTIONS)]
            with contextlib.suppress(Exception):  # the demo's model fails now and then
                _ask(chain, config, question, mode)
        if not rt.flush(60):
            raise RuntimeError("ragtrace did not hand everything on within 60 s")
        phoenix = rt.results.phoenix
        if phoenix is not None and phoenix.dropped:
            raise RuntimeError(f"annotations were dropped: {phoenix.dropped}")
    finally:
        rt.shutdown()
    return [
        Sent(mode, record, keep.by_trace.get(record.trace_id, {}))
        for mode, record in zip(modes, records, strict=True)
    ]


def _ask(chain: Any, config: Any, question: str, mode: str) -> None:
    if mode == "invoke":
        chain.invoke(question, config=config)
    elif mode == "stream":
        "".join(chain.stream(question, config=config))
    elif mode == "astream":

        async def consume() -> None:
            async for _ in chain.astream(question, config=config):
                pass

        asyncio.run(consume())
    else:  # the user closed the tab after the first token
        stream = iter(chain.stream(question, config=config))
        next(stream, None)
        stream.close()  # type: ignore[attr-defined]
