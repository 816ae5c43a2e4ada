"""An agent traced by the peers' REAL instrumentations, rebuilt by ``ragtrace ingest``.

``peer_agent_app.py`` runs a LangChain ``create_agent`` agent (a retriever tool, a tool that
fails, a scripted tool-calling model) for two turns of one LangGraph thread, in the peers'
environment (``.venv-bench``: ``make bench-env``), with ragtrace's own capture watching the same
turns. Each turn must come out of ingest as ONE record equal to what capture recorded: query,
answer, chunks (ids, texts, scores, the tool call that retrieved them), tool calls, LLM calls
and the conversation (session, user, turn, earlier turns).

What a peer does not export is asserted as a gap, exactly (docs/ingest.md, "Agents and
conversations"): OpenLLMetry writes no document ids for a retriever inside a tool, so those
chunks have none.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from ragtrace._ingest.assembly import AssemblyLimits
from ragtrace._ingest.receiver import ReceiverOptions
from ragtrace._ingest.service import IngestOptions, IngestService
from ragtrace._model import RagRecord
from tests.ingest.peer_agent_app import QUESTIONS, THREAD_ID, TOOL_NAMES, USER_ID
from tests.ingest.test_peers_end_to_end import peers_python

ROOT = Path(__file__).resolve().parents[2]
AGENT_APP = Path(__file__).with_name("peer_agent_app.py")
TURNS = len(QUESTIONS)


def ingest(instrumentation: str) -> tuple[list[RagRecord], list[dict[str, Any]], dict[str, Any]]:
    """Run the agent app under ``instrumentation`` against a live ingest service: the records
    rebuilt, capture's records (JSON) and the ingest counters."""
    service = IngestService(
        IngestOptions(
            receiver=ReceiverOptions(port=0),
            limits=AssemblyLimits(quiet_s=0.3, max_age_s=30.0),
            evaluators=(),
            tick_s=0.05,
        ),
        registry=CollectorRegistry(),
    )
    rebuilt: list[RagRecord] = []
    assert service.runtime is not None
    service.runtime.add_record_sink(rebuilt.append)
    service.start()
    try:
        run = subprocess.run(
            [
                peers_python(),
                str(AGENT_APP),
                "--instrumentation",
                instrumentation,
                "--endpoint",
                service.endpoint,
                "--service",
                "billing-agent",
            ],
            capture_output=True,
            check=False,
            text=True,
            timeout=180,
            cwd=ROOT,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        deadline = time.monotonic() + 20
        while len(rebuilt) < TURNS and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # a second record per turn would come now
        counts: dict[str, dict[tuple[str, ...], float]] = {}
        for family in service.registry.collect():
            for sample in family.samples:
                if sample.name.startswith("ragtrace_ingest") and sample.name.endswith("_total"):
                    counts.setdefault(sample.name, {})[tuple(sample.labels.values())] = sample.value
    finally:
        service.drain()
    expected = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    return rebuilt, expected, counts


@pytest.mark.parametrize("instrumentation", ["openinference", "openllmetry", "ragtrace"])
def test_each_turn_is_one_record_equal_to_capture(instrumentation: str) -> None:
    rebuilt, expected, counts = ingest(instrumentation)
    assert [e["query"] for e in expected] == list(QUESTIONS)
    assert len(rebuilt) == TURNS, counts
    by_query = {r.query: r for r in rebuilt}
    assert sorted(by_query) == sorted(QUESTIONS)  # one record per turn, none per step
    for turn, want in enumerate(expected):
        got = by_query[want["query"]]
        assert got.response == want["response"]
        assert got.status == "ok" and got.error is None
        assert got.app == ("peer-app" if instrumentation == "ragtrace" else "billing-agent")
        # chunks: the retriever inside the tool, once, tagged with the tool call
        want_chunks = [
            (c["text"], c["score"], c["source"], c["query"], c["step"]) for c in want["chunks"]
        ]
        assert [(c.text, c.score, c.source, c.query, c.step) for c in got.chunks] == want_chunks
        want_ids = [c["id"] for c in want["chunks"]]
        assert all(want_ids)
        if instrumentation == "openllmetry":  # gap: no document ids on its retriever spans
            assert [c.id for c in got.chunks] == [None] * len(want_ids)
        else:
            assert [c.id for c in got.chunks] == want_ids
        # tool calls, in start order, with the failing one marked
        assert tuple(t.name for t in got.tool_calls) == TOOL_NAMES[turn]
        assert [
            {
                "name": t.name,
                "arguments": t.arguments,
                "status": t.status,
                "error": t.error,
                "call_id": t.call_id,
            }
            for t in got.tool_calls
        ] == want["tool_calls"]
        assert all(t.duration_s > 0 for t in got.tool_calls)
        assert got.llm_calls == want["llm_calls"] == (3, 2)[turn]
        # the conversation: the thread, the user, the turn and the earlier turns
        assert got.conversation is not None
        conversation = {
            "session_id": got.conversation.session_id,
            "user_id": got.conversation.user_id,
            "turn": got.conversation.turn,
            "history": [[t.role, t.content] for t in got.conversation.history],
        }
        assert conversation == want["conversation"]
        assert (conversation["session_id"], conversation["user_id"]) == (THREAD_ID, USER_ID)
        assert conversation["turn"] == turn and len(conversation["history"]) == 2 * turn
        if instrumentation == "ragtrace":
            assert (got.trace_id, got.span_id, got.model) == (
                want["trace_id"],
                want["span_id"],
                want["model"],
            )
    assert "ragtrace_ingest_dropped_spans_total" not in counts
    if instrumentation == "openllmetry":
        # OpenLLMetry traces create_agent() itself, once, in a trace of its own: no request
        assert counts["ragtrace_ingest_traces_unmapped_total"] == {("no_request",): 1}
        assert counts["ragtrace_ingest_traces_total"] == {("complete",): TURNS + 1}
    else:
        assert "ragtrace_ingest_traces_unmapped_total" not in counts
        assert counts["ragtrace_ingest_traces_total"] == {("complete",): TURNS}
