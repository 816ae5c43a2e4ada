"""JudgeClient against a misbehaving OpenAI-compatible server: every failure is bounded,
classified and counted; answers are parsed, repaired, cached and accounted."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from ragtrace._judges import (
    JudgeCache,
    JudgeClient,
    JudgeParseError,
    JudgeRateLimited,
    JudgeServerError,
    JudgeTimeout,
    JudgeUnavailable,
    add_listener,
    remove_listener,
)
from ragtrace._metrics.collection import Metrics
from tests.judges.misbehaving_server import VERDICT, MisbehavingJudge

SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["yes", "no"]},
        "reason": {"type": "string"},
    },
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}
MESSAGES = [{"role": "user", "content": "Is it supported? Reply with JSON."}]


def client(
    server: MisbehavingJudge, behaviour: str, tmp_path: Path, **options: object
) -> JudgeClient:
    return server.client(behaviour, tmp_path, **options)


def ask(judge: JudgeClient, content: str = "Is it supported? Reply with JSON.") -> object:
    return judge.complete(
        [{"role": "user", "content": content}], schema=SCHEMA, evaluator="t", prompt_id="p@v1"
    )


def test_a_valid_answer_is_parsed_and_accounted(server, tmp_path, tally):
    reply = ask(client(server, "ok", tmp_path), "valid answer")
    assert reply.data == VERDICT
    assert (reply.input_tokens, reply.output_tokens, reply.cached) == (40, 12, False)
    assert reply.model == "openai/ok" and reply.prompt_id == "p@v1"
    assert tally.outcomes == {"ok": 1}
    assert (tally.input_tokens, tally.output_tokens) == (40, 12)


def test_json_in_a_markdown_fence_with_prose_around_it_is_accepted(server, tmp_path):
    assert ask(client(server, "fenced", tmp_path)).data == VERDICT


@pytest.mark.parametrize("behaviour", ["garbage", "wrong-schema"])
def test_an_unparseable_answer_is_a_parse_failure_after_one_repair_round(
    server, tmp_path, tally, behaviour
):
    before = server.count(behaviour)
    with pytest.raises(JudgeParseError) as info:
        ask(client(server, behaviour, tmp_path), f"parse {behaviour}")
    assert info.value.outcome == "parse_failure"
    assert server.count(behaviour) - before == 2  # the question, then the repair round
    assert tally.outcomes == {"parse_failure": 1}


def test_the_repair_round_shows_the_judge_its_answer_and_the_error(server, tmp_path, tally):
    reply = ask(client(server, "repairable", tmp_path), "repair me")
    assert reply.data == VERDICT
    repair = server.requests[-1]["messages"]
    assert repair[1] == {"role": "assistant", "content": "not json"}
    assert "not valid" in repair[2]["content"]
    assert tally.outcomes == {"ok": 1}


def test_parse_retries_zero_fails_on_the_first_bad_answer(server, tmp_path):
    before = server.count("garbage")
    with pytest.raises(JudgeParseError):
        ask(client(server, "garbage", tmp_path, parse_retries=0), "no repair")
    assert server.count("garbage") - before == 1


def test_http_429_is_retried_after_retry_after(server, tmp_path, tally):
    before = server.count("ratelimit-once")
    reply = ask(client(server, "ratelimit-once", tmp_path), "rate limited once")
    assert reply.data == VERDICT
    assert server.count("ratelimit-once") - before == 2
    assert tally.outcomes == {"ok": 1}


@pytest.mark.parametrize(
    ("behaviour", "error", "outcome"),
    [
        ("ratelimit", JudgeRateLimited, "rate_limited"),
        ("error500", JudgeServerError, "server_error"),
    ],
)
def test_persistent_transient_errors_give_up_after_max_retries(
    server, tmp_path, tally, behaviour, error, outcome
):
    before = server.count(behaviour)
    with pytest.raises(error):
        ask(client(server, behaviour, tmp_path, max_retries=2), f"persistent {behaviour}")
    assert server.count(behaviour) - before == 3
    assert tally.outcomes == {outcome: 1}


def test_a_hanging_server_times_out_within_the_per_call_timeout(server, tmp_path, tally):
    judge = client(server, "hang", tmp_path, timeout_s=0.5, max_retries=0)
    started = time.perf_counter()
    with pytest.raises(JudgeTimeout):
        ask(judge, "hang")
    assert time.perf_counter() - started < 3.0  # the server would answer after 5 s
    assert tally.outcomes == {"timeout": 1}


def test_a_dropped_connection_counts_as_unavailable(server, tmp_path, tally):
    with pytest.raises(JudgeUnavailable):
        ask(client(server, "drop", tmp_path, max_retries=0), "dropped")
    assert tally.outcomes == {"unavailable": 1}


def test_an_unreachable_judge_opens_the_circuit_breaker(tmp_path, tally):
    judge = JudgeClient("openai/ok", api_base="http://127.0.0.1:9/v1", cache=False, max_retries=0)
    for _ in range(3):
        with pytest.raises(JudgeUnavailable):
            ask(judge, "nobody listens")
    started = time.perf_counter()
    with pytest.raises(JudgeUnavailable, match="unreachable recently"):
        ask(judge, "nobody listens")
    assert time.perf_counter() - started < 0.05  # no connection attempt while open
    assert tally.outcomes == {"unavailable": 4}


def test_a_cached_answer_is_served_without_calling_the_judge(server, tmp_path, tally):
    judge = client(server, "ok", tmp_path)
    before = server.count("ok")
    first, second = ask(judge, "cache me"), ask(judge, "cache me")
    assert server.count("ok") - before == 1
    assert (first.cached, second.cached) == (False, True)
    assert second.data == first.data and second.cost_usd == 0.0
    assert tally.outcomes == {"ok": 1, "cached": 1}
    # the cache is a file: another client on it hits too
    other = client(server, "ok", tmp_path)
    assert ask(other, "cache me").cached
    assert other.cache is not None and other.cache.hit_rate() == 1.0


def test_the_cache_key_covers_model_parameters_and_schema(server, tmp_path):
    judge = client(server, "ok", tmp_path)
    ask(judge, "key test")
    hotter = judge.complete(
        [{"role": "user", "content": "key test"}],
        schema=SCHEMA,
        temperature=0.7,
        seed=1,
    )
    assert not hotter.cached
    loose = judge.complete([{"role": "user", "content": "key test"}], schema=None)
    assert not loose.cached
    assert not ask(client(server, "fenced", tmp_path), "key test").cached


def test_failed_answers_are_not_cached(server, tmp_path):
    judge = client(server, "garbage", tmp_path, parse_retries=0)
    for _ in range(2):
        with pytest.raises(JudgeParseError):
            ask(judge, "never cached")
    assert judge.cache is not None and len(judge.cache) == 0


def test_no_cache_calls_every_time(server, tmp_path):
    judge = client(server, "ok", tmp_path, cache=False)
    before = server.count("ok")
    ask(judge, "uncached"), ask(judge, "uncached")
    assert server.count("ok") - before == 2


def test_the_concurrency_limit_bounds_calls_in_flight(server, tmp_path):
    judge = client(server, "slow", tmp_path, concurrency=2, cache=False, timeout_s=10)
    threads = [threading.Thread(target=ask, args=(judge, f"q{i}")) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert server.count("slow") == 6
    assert server.max_in_flight["slow"] == 2


def test_judge_calls_become_prometheus_metrics(server, tmp_path):
    metrics = Metrics(CollectorRegistry(), "app")
    listener = add_listener(metrics.record_judge_call)
    try:
        ask(client(server, "ok", tmp_path), "metrics ok")
        with pytest.raises(JudgeParseError):
            ask(client(server, "garbage", tmp_path, parse_retries=0), "metrics garbage")
    finally:
        remove_listener(listener)
    registry = metrics.registry

    def value(name: str, **labels: str) -> float:
        return registry.get_sample_value(name, {"evaluator": "t", **labels}) or 0.0

    assert value("ragtrace_judge_calls_total", model="openai/ok", outcome="ok") == 1
    assert value("ragtrace_judge_calls_total", model="openai/garbage", outcome="parse_failure") == 1
    assert value("ragtrace_judge_parse_failures_total", model="openai/garbage") == 1
    assert value("ragtrace_judge_tokens_total", model="openai/ok", direction="input") == 40
    assert value("ragtrace_judge_duration_seconds_count", model="openai/ok") == 1


def test_judge_calls_are_not_logged_by_the_users_litellm_callbacks(server, tmp_path):
    import litellm
    from litellm.integrations.custom_logger import CustomLogger

    class Spy(CustomLogger):
        calls = 0

        def log_success_event(self, *args: object, **kwargs: object) -> None:
            Spy.calls += 1

    spy = Spy()
    litellm.callbacks.append(spy)
    try:
        ask(client(server, "ok", tmp_path, cache=False), "callbacks")
        litellm.completion(  # the same call made by the app is logged: the spy works
            model="openai/ok", api_base=server.api_base, api_key="x", messages=MESSAGES
        )
        time.sleep(0.2)
    finally:
        litellm.callbacks.remove(spy)
    assert Spy.calls == 1


def test_judge_calls_run_outside_the_callers_trace(server, tmp_path):
    from opentelemetry import context, trace
    from opentelemetry.sdk.trace import TracerProvider

    from ragtrace._judges.transport import untraced

    tracer = TracerProvider().get_tracer("app")
    with tracer.start_as_current_span("user request"):
        assert trace.get_current_span().get_span_context().is_valid
        with untraced():
            assert not trace.get_current_span().get_span_context().is_valid
            assert context.get_value(context._SUPPRESS_INSTRUMENTATION_KEY) is True
        assert trace.get_current_span().get_span_context().is_valid


def test_bad_settings_are_refused(tmp_path):
    for bad in ({"timeout_s": 0}, {"max_retries": -1}, {"concurrency": 0}, {"max_tokens": 0}):
        with pytest.raises(ValueError):
            JudgeClient("openai/x", cache=False, **bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cache"):
        JudgeClient("openai/x", cache=3)  # type: ignore[arg-type]


def test_the_cache_file_is_shared_by_threads(tmp_path):
    from ragtrace._judges.cache import CachedResponse

    cache = JudgeCache(tmp_path / "c.sqlite")

    def put(i: int) -> None:
        cache.put(f"k{i}", model="m", prompt_id="p", response=CachedResponse("{}", 1, 1, None))

    threads = [threading.Thread(target=put, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 8 and cache.get("k3") is not None and cache.get("nope") is None
    assert cache.hit_rate() == 0.5
