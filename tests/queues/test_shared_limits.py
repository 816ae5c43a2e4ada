"""Rate limits and the judge budget shared by a fleet through a real redis-server: two workers'
limits draw on one allowance, not one each."""

from __future__ import annotations

import time

import pytest

from ragtrace._pipeline.sampling import Sampler
from ragtrace._pipeline.sampling.shared_limits import RedisLimits
from ragtrace.evaluators import evaluator
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration


@evaluator(name="judge_x", kind="judge", cost_usd=1.0)
def judge_x(record: object) -> float:
    return 1.0


@evaluator(name="cheap")
def cheap(record: object) -> float:
    return 1.0


def fleet_of(redis_server: RedisServer, n: int, **sampler: object) -> list[Sampler]:
    samplers = [Sampler(**sampler) for _ in range(n)]  # type: ignore[arg-type]
    for s in samplers:
        s.share_limits(lambda settings: RedisLimits(redis_server.client(), settings, "t:work"))
    return samplers


def test_two_workers_share_one_token_bucket(redis_server: RedisServer) -> None:
    a, b = fleet_of(redis_server, 2, rate_limits={"judge_x": 0.001}, burst={"judge_x": 4})
    verdicts = [s.admit(judge_x)[0] for _ in range(4) for s in (a, b)]
    assert verdicts.count(True) == 4  # one bucket of 4 between them, not 4 each
    assert a.admit(judge_x) == (False, "rate_limited")
    assert a.stats()["dropped:rate_limited"] >= 1


def test_the_bucket_refills_at_its_rate(redis_server: RedisServer) -> None:
    [a] = fleet_of(redis_server, 1, rate_limits={"judge_x": 20.0}, burst={"judge_x": 1})
    assert a.admit(judge_x)[0]
    assert not a.admit(judge_x)[0]
    time.sleep(0.15)  # 20/s: a token back after 50 ms
    assert a.admit(judge_x)[0]


def test_the_hourly_budget_is_the_fleets(redis_server: RedisServer) -> None:
    a, b = fleet_of(redis_server, 2, hourly_budget_usd=3.0)
    verdicts = [s.admit(judge_x)[0] for s in (a, b, a, b, a)]
    assert verdicts == [True, True, True, False, False]
    assert a.admit(judge_x)[1] == "budget_exhausted"
    assert b.budget_left_usd() == 0.0
    assert a.admit(cheap) == (True, "admitted")  # not a judge: never charged


def test_reported_spend_counts_for_every_worker(redis_server: RedisServer) -> None:
    a, b = fleet_of(redis_server, 2, hourly_budget_usd=1.0)
    a.charge(0.75)
    assert b.budget_left_usd() == pytest.approx(0.25)
    a.charge(None)
    a.charge(float("inf"))
    assert b.budget_left_usd() == pytest.approx(0.25)


def test_without_limits_redis_is_never_asked(redis_server: RedisServer) -> None:
    [a] = fleet_of(redis_server, 1)
    redis_server.kill()
    assert a.admit(cheap) == (True, "admitted")
    assert a.admit(judge_x) == (True, "admitted")


def test_redis_down_fails_closed_and_counts(redis_server: RedisServer) -> None:
    [a] = fleet_of(redis_server, 1, hourly_budget_usd=5.0)
    redis_server.kill()
    assert a.admit(judge_x) == (False, "sampler_error")
