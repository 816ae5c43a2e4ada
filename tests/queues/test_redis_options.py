"""One URL configures the Redis queue; every mistake says what to fix."""

from __future__ import annotations

import pytest

from ragtrace._config.redis_queue import RedisQueueOptions


def test_defaults_and_url_parameters() -> None:
    o = RedisQueueOptions.from_url(
        "rediss://:s3cret@cache:6380/2?stream=a:w&max_backlog=5&ssl_cert_reqs=none"
    )
    assert (o.stream, o.group, o.max_backlog, o.max_deliveries) == ("a:w", "ragtrace", 5, 3)
    assert (o.dead_stream, o.stats_key) == ("a:w:dead", "a:w:stats")
    assert o.connection_url == "rediss://:s3cret@cache:6380/2?ssl_cert_reqs=none"
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
        ("redis://h/0?timeout_s=-1", {}, "timeout_s must be a finite number > 0"),
        ("redis://h/0?reclaim_idle_s=nan", {}, "reclaim_idle_s must be a finite number > 0"),
        ("redis://h/0?max_hold_s=inf", {}, "max_hold_s must be a finite number > 0"),
        ("redis://h/0?reclaim_idle_s=soon", {}, "is not a number"),
        ("redis://h/0", {"stream": ""}, "stream must not be empty"),
        ("redis://h/0", {"nope": 1}, "unknown option 'nope'"),
        ("redis://h/0?dedupe_s=0", {}, "dedupe_s must be a finite number > 0"),
        ("redis://h/0?max_backlog=", {}, "max_backlog= has no value"),
        ("redis://h/0?socket_timeout=soon", {}, "socket_timeout='soon' is not a valid value"),
        ("redis://h/0?socket_timeout=nan", {}, "socket_timeout='nan' must be a finite number"),
        ("redis://h/0?socket_connect_timeout=inf", {}, "must be a finite number"),
        # TLS settings on a plain connection would fail at the first send, not here
        ("redis://h/0?ssl_cert_reqs=none", {}, "unknown option 'ssl_cert_reqs'"),
    ],
)
def test_mistakes_are_named(url: object, overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RedisQueueOptions.from_url(url, **overrides)  # type: ignore[arg-type]


def test_a_misspelled_option_is_named_with_the_valid_ones() -> None:
    with pytest.raises(ValueError) as raised:
        RedisQueueOptions.from_url("redis://h/0?max_backlg=50000")
    message = str(raised.value)
    assert "unknown option 'max_backlg' (did you mean 'max_backlog'?)" in message
    for valid in ("max_backlog", "reclaim_idle_s", "dedupe_s", "socket_timeout", "db"):
        assert valid in message


def test_the_redis_clients_own_options_pass_through() -> None:
    o = RedisQueueOptions.from_url(
        "redis://h/0?socket_keepalive=true&client_name=w1&health_check_interval=5&batch=4"
    )
    assert o.batch == 4
    assert o.connection_url == (
        "redis://h/0?socket_keepalive=true&client_name=w1&health_check_interval=5"
    )


@pytest.mark.parametrize("start", ["init", "worker", "ingest"])
def test_a_misspelled_option_stops_every_start(start: str) -> None:
    from prometheus_client import CollectorRegistry

    url = "redis://127.0.0.1:1/0?max_backlg=50000"
    with pytest.raises(ValueError, match="unknown option 'max_backlg'"):
        if start == "init":
            import ragtrace

            ragtrace.init(app="a", queue_url=url, registry=CollectorRegistry(), evaluators=())
        elif start == "worker":
            from ragtrace._worker.service import APP, Worker, WorkerOptions
            from ragtrace._worker.serving import service_config

            Worker(
                WorkerOptions(service_config(APP, (), queue_url=url)), registry=CollectorRegistry()
            )
        else:
            from ragtrace._ingest.receiver import ReceiverOptions
            from ragtrace._ingest.service import APP, IngestOptions, IngestService
            from ragtrace._worker.serving import service_config

            IngestService(
                IngestOptions(
                    service_config(APP, (), queue_url=url), receiver=ReceiverOptions(port=0)
                ),
                registry=CollectorRegistry(),
            )
