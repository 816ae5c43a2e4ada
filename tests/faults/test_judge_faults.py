"""The judge server dies, or hangs, under a running application; then it comes back.

The judge is the real local llama.cpp server in its own process (``servers.start_judge``), killed
with SIGKILL and started again on the same port; "hanging" is a server that accepts and never
answers (``silent_server``), later replaced by the real judge on that port. For each: requests
stay fast, every verdict that could not be had is counted (an error evaluation and a judge call
by outcome, or a counted drop when the bounded queue is full), and new requests are judged
again once the judge is back.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrace._config import Config
from ragtrace._judges import JudgeClient
from ragtrace._pipeline import PipelineOptions
from ragtrace.evaluators._judge.byop import Byop
from tests.components import free_port
from tests.faults.harness import REQUEST_BUDGET_S, FaultApp, stop_process
from tests.faults.servers import judge_client, start_judge, start_silent

PROMPT = "Is the answer supported by the context? Answer: {answer} Context: {context}"
EVALS, CALLS = "ragtrace_evaluations_total", "ragtrace_judge_calls_total"
JUDGED = {"evaluator": "judge_byop"}
DEAD_JUDGE_S = 5.0
"""Most seconds the pipeline may spend on a batch of records while the judge is dead: the
client fails fast on a refused connection, and its breaker then stops calling at all."""
HANG_TIMEOUT_S = 3.0
"""The judge client's timeout in the hanging case: what one hung verdict costs a worker (the
real judge answers these prompts well within it; a late answer is one more counted timeout)."""
RECOVERY_S = 60.0
"""Most seconds from the judge's restart to the first judged request: its start, plus the
breaker's pause (two seconds per unreachable failure, at most 30 s)."""


@pytest.fixture
def port() -> int:
    return free_port()


def judged(app: FaultApp, client: JudgeClient) -> float:
    """Answered judge calls so far (ok or cached) for ``client``'s model."""
    model = client.model_name
    return sum(app.value(CALLS, outcome=o, model=model) for o in ("ok", "cached"))


def accounted(app: FaultApp) -> float:
    """Judge evaluations published, whatever their outcome."""
    return app.value(EVALS, **JUDGED)


def wait_until_judged_again(app: FaultApp, client: JudgeClient, first: int) -> int:
    """Send a request every half second until one is judged, then let the others in flight
    finish; the next request number."""
    before, n = judged(app, client), first
    deadline = time.monotonic() + RECOVERY_S
    while judged(app, client) <= before:
        assert time.monotonic() < deadline, f"no request judged {RECOVERY_S:g} s after restart"
        app.request(n)
        n += 1
        time.sleep(0.5)
    app.wait_for(EVALS, app.accepted, timeout_s=60, **JUDGED)
    return n


def assert_judges_again(app: FaultApp, client: JudgeClient, first: int) -> None:
    """The next three requests are all judged: no error, three more answers."""
    answered, errors = judged(app, client), app.value(EVALS, outcome="error", **JUDGED)
    app.requests(range(first, first + 3))
    app.wait_for(EVALS, app.accepted, timeout_s=60, **JUDGED)
    assert judged(app, client) == answered + 3
    assert app.value(EVALS, outcome="error", **JUDGED) == errors


@pytest.fixture
def servers() -> Iterator[list[subprocess.Popen[bytes]]]:
    """The server processes a test started (stopped after, by id)."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        stop_process(process, kill=True)


def test_judge_killed_mid_run_is_counted_and_recovers(
    port: int, tmp_path: Path, servers: list[subprocess.Popen[bytes]]
) -> None:
    servers.append(start_judge(port, tmp_path))
    client = judge_client(port, timeout_s=30.0)
    with FaultApp([Byop(PROMPT, judge=client)]) as app:
        app.requests(range(2))
        app.wait_for(EVALS, 2, timeout_s=60, **JUDGED)
        assert judged(app, client) == 2  # the judge answers before the fault

        stop_process(servers.pop(), kill=True)
        killed = time.monotonic()
        assert app.requests(range(2, 8)) < REQUEST_BUDGET_S
        app.wait_for(EVALS, 6, timeout_s=DEAD_JUDGE_S, outcome="error", **JUDGED)
        assert time.monotonic() - killed < DEAD_JUDGE_S
        # Each lost verdict is counted twice over: an error evaluation and an unavailable call.
        assert app.value(CALLS, outcome="unavailable") == 6
        assert app.value(EVALS, outcome="error", **JUDGED) == 6

        servers.append(start_judge(port, tmp_path))
        assert_judges_again(app, client, wait_until_judged_again(app, client, 8))
        assert accounted(app) == app.accepted  # every request ended as a counted evaluation
        assert app.slowest_s < REQUEST_BUDGET_S


def test_hanging_judge_costs_its_timeout_drops_are_counted_then_recovers(
    port: int, tmp_path: Path, servers: list[subprocess.Popen[bytes]]
) -> None:
    servers.append(start_silent(port))
    client = judge_client(port, timeout_s=HANG_TIMEOUT_S, max_retries=0)
    options = PipelineOptions(Config(queue_size=3, workers=1), max_batch=1)
    with FaultApp([Byop(PROMPT, judge=client)], pipeline_options=options) as app:
        sent = 10
        hung = time.monotonic()
        assert app.requests(range(sent)) < REQUEST_BUDGET_S
        dropped = app.value("ragtrace_dropped_records_total", reason="queue_full")
        assert dropped >= 1 and app.accepted + dropped == sent  # the bounded queue overflowed
        # Each accepted request costs the worker one timeout, then is counted as an error.
        bound_s = app.accepted * HANG_TIMEOUT_S + 10
        app.wait_for(EVALS, app.accepted, timeout_s=bound_s, **JUDGED)
        assert app.value(EVALS, outcome="error", **JUDGED) == app.accepted
        assert app.value(CALLS, outcome="timeout") == app.accepted
        assert time.monotonic() - hung < bound_s

        stop_process(servers.pop())
        servers.append(start_judge(port, tmp_path))
        assert_judges_again(app, client, wait_until_judged_again(app, client, sent))
        assert accounted(app) == app.accepted
        assert app.slowest_s < REQUEST_BUDGET_S


def test_a_request_dropped_while_the_judge_hangs_is_counted_once(
    port: int, servers: list[subprocess.Popen[bytes]]
) -> None:
    servers.append(start_silent(port))
    client = judge_client(port, timeout_s=HANG_TIMEOUT_S, max_retries=0)
    options = PipelineOptions(Config(queue_size=1, workers=1), max_batch=1)
    with FaultApp([Byop(PROMPT, judge=client)], pipeline_options=options) as app:
        app.requests(range(6))
        dropped = 6 - app.accepted
        assert dropped >= 1
        assert app.value("ragtrace_dropped_records_total") == dropped
