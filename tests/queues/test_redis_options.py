"""One URL configures the Redis queue; every mistake says what to fix."""

from __future__ import annotations

import pytest

from ragtrace.pipeline.queues.redis_options import RedisQueueOptions


def test_defaults_and_url_parameters() -> None:
    o = RedisQueueOptions.from_url(
        "redis://:s3cret@cache:6380/2?stream=a:w&max_backlog=5&ssl_cert_reqs=none"
    )
    assert (o.stream, o.group, o.max_backlog, o.max_deliveries) == ("a:w", "ragtrace", 5, 3)
    assert (o.dead_stream, o.stats_key) == ("a:w:dead", "a:w:stats")
    assert o.connection_url == "redis://:s3cret@cache:6380/2?ssl_cert_reqs=none"
    assert "s3cret" not in o.safe_url and "***" in o.safe_url
    assert o.consumer  # host-pid by default


def test_overrides_beat_the_url() -> None:
    o = RedisQueueOptions.from_url("redis://h/0?batch=9", batch=3, consumer="w1")
    assert (o.batch, o.consumer) == (3, "w1")


@pytest.mark.parametrize(
    ("url", "overrides", "message"),
    [
        ("http://h/0", {}, "expected a redis://"),
        (None, {}, "expected a redis://"),
        ("redis://h/0?batch=0", {}, "batch must be a whole number >= 1"),
        ("redis://h/0?timeout_s=-1", {}, "timeout_s must be a number > 0"),
        ("redis://h/0?reclaim_idle_s=soon", {}, "is not a number"),
        ("redis://h/0", {"stream": ""}, "stream must not be empty"),
        ("redis://h/0", {"nope": 1}, "unknown option 'nope'"),
    ],
)
def test_mistakes_are_named(url: object, overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RedisQueueOptions.from_url(url, **overrides)  # type: ignore[arg-type]
