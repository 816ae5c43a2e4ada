"""Configuration: explicit argument > RAGTRACE_* environment variable > default."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace.config import Config


def test_defaults() -> None:
    cfg = Config.resolve(env={})
    assert cfg.app == "default"
    assert cfg.capture_content is True
    assert cfg.max_chunks == 50
    assert "answer" in cfg.answer_keys


def test_environment_beats_default_and_argument_beats_environment() -> None:
    env = {
        "RAGTRACE_APP": "from-env",
        "RAGTRACE_CAPTURE_CONTENT": "off",
        "RAGTRACE_MAX_CHUNKS": "7",
        "RAGTRACE_ANSWER_KEYS": "final, reply",
        "RAGTRACE_REQUEST_TIMEOUT_S": "2.5",
    }
    cfg = Config.resolve(env=env)
    assert (cfg.app, cfg.capture_content, cfg.max_chunks) == ("from-env", False, 7)
    assert cfg.answer_keys == ("final", "reply")
    assert cfg.request_timeout_s == 2.5
    cfg = Config.resolve(env=env, app="explicit", capture_content=True, max_chunks=3)
    assert (cfg.app, cfg.capture_content, cfg.max_chunks) == ("explicit", True, 3)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RAGTRACE_MAX_CHUNKS": "many"}, "RAGTRACE_MAX_CHUNKS='many'"),
        ({"RAGTRACE_CAPTURE_CONTENT": "maybe"}, "RAGTRACE_CAPTURE_CONTENT"),
        ({"RAGTRACE_MAX_CHUNK_CHARS": "0"}, "max_chunk_chars must be >= 1"),
    ],
)
def test_bad_environment_values_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Config.resolve(env=env)


def test_unknown_option_is_named() -> None:
    with pytest.raises(TypeError, match="max_chunk_char"):
        Config.resolve(env={}, max_chunk_char=10)


def test_redact_must_be_callable() -> None:
    with pytest.raises(TypeError, match="redact"):
        Config(redact="not callable")  # type: ignore[arg-type]


def test_init_reads_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTRACE_APP", "env-app")
    rt = ragtrace.init(registry=CollectorRegistry())
    try:
        assert rt.config.app == "env-app"
        assert ragtrace.get_current() is rt
    finally:
        rt.shutdown()
    assert ragtrace.get_current() is None


def test_init_twice_replaces_the_previous_instance() -> None:
    registry = CollectorRegistry()
    first = ragtrace.init(app="one", registry=registry)
    second = ragtrace.init(app="two", registry=registry)  # same registry: no duplicate metrics
    try:
        assert first.is_shut_down and not second.is_shut_down
        assert ragtrace.current() is second
    finally:
        second.shutdown()
