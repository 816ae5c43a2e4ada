"""``ragtrace ingest`` shipping to a worker fleet whose stream is full: 429s upstream, no loss.

Ingest ships each rebuilt record to a Redis stream capped at 40 entries (``max_backlog``) while
no worker reads it: the stream fills, the shipper holds what the stream refuses instead of
dropping it, its buffer fills, and ingest answers 429 to the senders (which retry). Then two
workers start and drain the stream. The books balance exactly: every span is acknowledged
once; every record ingest rebuilt is added to the stream once and published once; ``ragtrace
queue stats`` reconciles; no drop is counted anywhere.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from prometheus_client import CollectorRegistry

from ragtrace._ingest.assembly import AssemblyLimits
from ragtrace._ingest.receiver import ReceiverOptions
from ragtrace._ingest.service import IngestOptions, IngestService
from tests.components import wait_until
from tests.ingest.load import Tally, send_traces
from tests.queues.fleet import Workers, queue_stats, settled

pytestmark = pytest.mark.integration
TRACES = 300


def test_a_full_stream_turns_into_429s_and_nothing_is_lost(fleet: Workers) -> None:
    url = fleet.url + "&max_backlog=40&buffer=60&batch=8"
    service = IngestService(
        IngestOptions(
            receiver=ReceiverOptions(port=0, retry_after_s=1),
            limits=AssemblyLimits(quiet_s=0.2, max_age_s=60.0),
            evaluators=("takes_time_app", "flags_bad_app"),
            queue_url=url,
            tick_s=0.02,
        ),
        registry=CollectorRegistry(),
    )
    service.start()
    tallies: list[Tally] = []
    sender = threading.Thread(
        target=lambda: tallies.append(
            send_traces(service.receiver.port, TRACES, per_export=5, senders=2, retry_s=0.1)
        )
    )
    try:
        sender.start()
        wait_until("the stream full", lambda: queue_stats(url)["backlog"] >= 40, timeout_s=60)
        time.sleep(1.0)  # full for a while: exports are refused, nothing is dropped
        held = service.health()[1]
        assert held["queue_room"] < 60
        for name in ("a", "b"):
            fleet.start(name, url=url)
        sender.join(timeout=180)
        assert not sender.is_alive()
        wait_until("every record shipped", lambda: service.runtime.flush(1), timeout_s=60)  # type: ignore[union-attr]
        final = wait_until("all published", lambda: settled(url, TRACES), timeout_s=120)
        seen = {
            (s.name, tuple(s.labels.values())): s.value
            for m in service.registry.collect()
            for s in m.samples
            if s.name.endswith("_total")
        }
    finally:
        service.drain()
    (tally,) = tallies
    assert tally.other == [] and tally.undelivered == 0
    assert tally.acknowledged == tally.sent == TRACES * 4
    assert tally.refused > 0  # the full stream reached the senders as 429s
    assert seen[("ragtrace_ingest_spans_refused_total", ())] == tally.refused
    assert seen[("ragtrace_ingest_records_total", ("openinference",))] == TRACES
    assert seen[("ragtrace_records_shipped_total", ())] == TRACES
    dropped = {
        k: v for k, v in seen.items() if "dropped_records" in k[0] or "records_dropped" in k[0]
    }
    assert sum(dropped.values()) == 0, dropped
    assert final["submitted"] == final["published"] == TRACES
    assert final["unaccounted"] == 0 and final["duplicates"] == 0
    counts = Counter(fleet.published())
    assert len(counts) == TRACES and max(counts.values()) == 1
