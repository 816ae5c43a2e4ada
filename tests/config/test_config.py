"""Configuration: one rule for every key, explicit > RAGTRACE_* > settings file > default.

``test_precedence_matrix`` walks, for every option ``Config`` declares, every combination of the
sources that can set it; the other tests cover what each source does with a bad value.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import re
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._config import Config, ConfigError, SettingsError, options
from ragtrace._pipeline.sampling import Sampler
from ragtrace._runtime.evaluation_settings import start_config

# Two valid values per option, neither of them its default: the source that should win gets
# the first, every other source the second. Every declared option must be here.
SAMPLES: dict[str, tuple[Any, Any]] = {
    "app": ("shop", "blog"),
    "judge_port": (8090, 8091),
    "capture_content": (False, True),
    "redact": ("pii", "secrets"),
    "raw_text_evaluators": (("pii_leakage",), ("sensitive_data", "looping")),
    "max_chunk_chars": (1000, 2000),
    "max_text_chars": (100, 200),
    "max_chunks": (7, 8),
    "max_metadata_chars": (10, 20),
    "query_keys": (("ask",), ("q1", "q2")),
    "answer_keys": (("reply",), ("a1", "a2")),
    "session_id_keys": (("ticket",), ("s1", "s2")),
    "user_id_keys": (("account",), ("u1", "u2")),
    "max_history_turns": (4, 0),
    "chunk_id_keys": (("uid",), ("k1", "k2")),
    "chunk_score_keys": (("sim",), ("s1", "s2")),
    "dedupe_prompt_chunks": (False, True),
    "request_timeout_s": (2.5, 7.0),
    "max_open_requests": (11, 12),
    "direct_spans": (False, True),
    "evaluators": (("bleu",), ("looping", "rouge")),
    "sampler": (0.25, 0.5),  # a Sampler's rate (the file's `sampling: {rate: ...}`)
    "queue_size": (100, 200),
    "ingest_max_in_flight": (2, 16),
    "workers": (3, 4),
    "batch_wait_s": (0.5, 0.25),
    "processes": (1, 2),
    "shared_cache_mb": (8.0, 16.0),
    "model_cpu_share": (0.5, 0.1),
    "passage_store": ("/data/a.sqlite", "/data/b.sqlite"),
    "session_idle_s": (60.0, 0.0),
    "session_evaluators": (("knowledge_retention",), ("conversation_completeness",)),
    "max_open_sessions": (100, 200),
    "max_session_turns": (5, 6),
    "queue_url": ("redis://127.0.0.1:6390/0", "redis://127.0.0.1:6391/1"),
    "otlp_endpoint": ("http://127.0.0.1:4318", "https://collector.internal:4318"),
    "evaluation_results": ("spans", "both"),
    "evaluation_spans": ("score", "record"),
    "metrics_port": (9500, 9501),
    "metrics_addr": ("0.0.0.0", "127.0.0.2"),
    "metrics_token": ("token-a", "token-b"),
    "metrics_allow_unauthenticated": (True, False),
    "max_app_labels": (50, 100),
    "phoenix_endpoint": ("http://phoenix-a:6006", "https://phoenix-b"),
    "phoenix_api_key": ("key-a", "key-b"),
    "sinks": (("shop.sinks:Audit",), ("shop.sinks:Audit", "blog.out:Log")),
    "review_db": ("/data/review-a.db", "postgresql://review@db/b"),
    "shutdown_timeout_s": (1.5, 2.5),
    "config_file": ("first.yaml", "second.yaml"),  # under the test's tmp_path, empty
}
SOURCES = ("explicit", "env", "file")  # highest first


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def _comparable(name: str, value: Any) -> Any:
    if name == "sampler":
        return None if value is None else value.rate
    if name == "evaluators":
        return None if value is None else tuple(getattr(e, "name", e) for e in value)
    return value


def _explicit(name: str, value: Any) -> Any:
    return Sampler(value) if name == "sampler" and value is not None else value


def _file_data(path: str, name: str, value: Any) -> dict[str, Any]:
    """The settings mapping that sets only this option (at its declared key)."""
    if name == "sampler":
        value = {"rate": value}
    elif isinstance(value, tuple):
        value = list(value)
    data: dict[str, Any] = {}
    *sections, key = path.split(".")
    node = data
    for section in sections:
        node = node.setdefault(section, {})
    node[key] = value
    return data


def _sources_of(name: str) -> tuple[str, ...]:
    opt = next(o for o in options(Config) if o.name == name)
    present = ["explicit"]
    if opt.env:
        present.append("env")
    if opt.file:
        present.append("file")
    return tuple(present)


CELLS = [
    (name, chosen)
    for name in SAMPLES
    for n in range(len(_sources_of(name)) + 1)
    for chosen in combinations(_sources_of(name), n)
]


def test_every_option_is_in_the_matrix() -> None:
    assert set(SAMPLES) == {o.name for o in options(Config)}


@pytest.mark.parametrize(
    ("name", "chosen"), CELLS, ids=[f"{n}-{'+'.join(c) or 'default'}" for n, c in CELLS]
)
def test_precedence_matrix(tmp_path: Path, name: str, chosen: tuple[str, ...]) -> None:
    """The highest source present wins; every other option keeps its default."""
    opt = next(o for o in options(Config) if o.name == name)
    winner = next((s for s in SOURCES if s in chosen), None)
    first, second = SAMPLES[name]
    if name == "config_file":
        first, second = str(tmp_path / first), str(tmp_path / second)
        for made in (first, second):
            Path(made).write_text("{}\n")
    value = {s: (first if s == winner else second) for s in chosen}
    explicit: dict[str, Any] = {}
    env: dict[str, str] = {}
    if "explicit" in value:
        explicit[name] = _explicit(name, value["explicit"])
    if "env" in value:
        assert opt.env is not None
        env[opt.env] = _as_text(value["env"])
    path = tmp_path / "ragtrace.yaml"
    if "file" in value:
        assert opt.file is not None
        path.write_text(yaml.safe_dump(_file_data(opt.file, name, value["file"])))
        env["RAGTRACE_CONFIG_FILE"] = str(path)
    config = start_config(env=env, **explicit)

    expected = opt.default if winner is None else first
    assert _comparable(name, getattr(config, name)) == _comparable(name, _explicit(name, expected))
    source = {None: "default", "explicit": "explicit", "env": opt.env, "file": str(path)}[winner]
    assert config.sources[name] == source
    defaults = Config()
    for other in options(Config):
        if other.name in (name, "config_file"):
            continue
        prometheus_keys = ("metrics_addr", "metrics_allow_unauthenticated")
        if other.name == "metrics_port" and "file" in chosen and name in prometheus_keys:
            # a file's `sinks.prometheus` section turns the endpoint on, at 9464 by default
            assert (config.metrics_port, config.sources["metrics_port"]) == (9464, str(path))
            continue
        assert config.sources[other.name] == "default", other.name
        assert _comparable(other.name, getattr(config, other.name)) == _comparable(
            other.name, getattr(defaults, other.name)
        ), other.name


def test_the_settings_file_can_come_from_the_environment_or_code(tmp_path: Path) -> None:
    (tmp_path / "env.yaml").write_text("app: from-env-file\n")
    (tmp_path / "code.yaml").write_text("app: from-code-file\n")
    env = {"RAGTRACE_CONFIG_FILE": str(tmp_path / "env.yaml")}
    assert Config.resolve(env=env).app == "from-env-file"
    assert Config.resolve(env=env, config_file=str(tmp_path / "code.yaml")).app == "from-code-file"


def test_an_explicit_metrics_addr_survives_a_file_that_sets_only_the_port(tmp_path: Path) -> None:
    path = tmp_path / "ragtrace.yaml"
    path.write_text("sinks: {prometheus: {port: 0}}\n")
    config = Config.resolve(env={}, config_file=str(path), metrics_addr="0.0.0.0")
    assert (config.metrics_port, config.metrics_addr) == (0, "0.0.0.0")
    assert Config.resolve(env={}, config_file=str(path)).metrics_addr == "127.0.0.1"


def test_a_redaction_function_is_given_in_code_only(tmp_path: Path) -> None:
    def upper(text: str) -> str:
        return text.upper()

    path = tmp_path / "ragtrace.yaml"
    path.write_text("redact: pii\n")
    env = {"RAGTRACE_REDACT": "secrets", "RAGTRACE_CONFIG_FILE": str(path)}
    assert Config.resolve(env=env, redact=upper).redact is upper
    assert Config.resolve(env=env).redact == "secrets"
    assert Config.resolve(env={"RAGTRACE_CONFIG_FILE": str(path)}).redact == "pii"
    assert Config.resolve(env={"RAGTRACE_REDACT": " PII "}).redact == "pii"
    path.write_text("redact: upper\n")
    with pytest.raises(SettingsError, match="redact: expected a redaction policy"):
        Config.resolve(env={"RAGTRACE_CONFIG_FILE": str(path)})


def test_a_file_that_tunes_sampling_keeps_the_evaluators_of_the_environment(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ragtrace.yaml"
    path.write_text("sampling: {rate: 0.1, evaluator_rates: {tokens_presence: 1.0}}\n")
    env = {"RAGTRACE_EVALUATORS": "looping,tokens_presence", "RAGTRACE_CONFIG_FILE": str(path)}
    config = start_config(env=env)
    assert config.evaluators == ("looping", "tokens_presence")
    assert config.sampler is not None and config.sampler.rate == 0.1
    assert config.sampler.evaluator_rates == {"tokens_presence": 1.0}


def test_the_file_prometheus_shorthands(tmp_path: Path) -> None:
    path = tmp_path / "ragtrace.yaml"
    for text, port in (("true", 9464), ("false", None), ("{addr: 0.0.0.0}", 9464)):
        path.write_text(f"sinks: {{prometheus: {text}}}\n")
        config = Config.resolve(env={"RAGTRACE_METRICS_PORT": "9999"} if port is None else {},
                                config_file=str(path))  # fmt: skip
        assert config.metrics_port == (9999 if port is None else port)
    path.write_text("sinks: {prometheus: false}\n")
    assert Config.resolve(env={}, config_file=str(path)).metrics_port is None


# --- explicit values ---------------------------------------------------------------------

BAD_EXPLICIT: list[tuple[dict[str, Any], str]] = [
    ({"request_timeout_s": float("nan")}, "request_timeout_s: expected a finite number, got nan"),
    ({"shutdown_timeout_s": float("inf")}, "shutdown_timeout_s: expected a finite number, got inf"),
    ({"request_timeout_s": -1}, "request_timeout_s: must be > 0, got -1.0"),
    ({"max_chunks": -3}, "max_chunks: must be >= 1, got -3"),
    ({"workers": 0}, "workers: must be >= 1, got 0"),
    ({"processes": -1}, "processes: must be >= 0, got -1"),
    ({"shared_cache_mb": -0.5}, "shared_cache_mb: must be >= 0, got -0.5"),
    ({"app": ""}, "app: must be a non-empty name"),
    ({"app": "   "}, "app: must be a non-empty name"),
    ({"app": "a\nb"}, "app: must be a non-empty name"),
    ({"otlp_endpoint": "localhost:4318"}, "otlp_endpoint: must be a http:// or https:// URL"),
    ({"otlp_endpoint": "http//collector"}, "otlp_endpoint: must be a http:// or https:// URL"),
    ({"otlp_endpoint": "http://"}, "otlp_endpoint: must be a http:// or https:// URL"),
    ({"otlp_endpoint": "http://host:99999"}, "otlp_endpoint: must be a http:// or https:// URL"),
    ({"otlp_endpoint": "http://a b"}, "otlp_endpoint: must be a http:// or https:// URL"),
    ({"queue_url": "http://redis:6379"}, "queue_url: must be a redis://host:port/db URL"),
    ({"queue_url": "redis://h:1/0?batch=many"}, "queue_url: redis queue URL: batch='many'"),
    ({"metrics_port": 70000}, "metrics_port: must be a port in 0..65535, got 70000"),
    ({"metrics_port": "nine"}, "metrics_port: expected an integer, got 'nine'"),
    ({"metrics_addr": "not a host"}, "metrics_addr: must be an IP address or a host name"),
    ({"evaluation_spans": "compact"}, "evaluation_spans: must be one of evaluator, score, record"),
    (
        {"evaluators": ["loopng"]},
        "evaluators: unknown evaluator 'loopng' (did you mean 'looping'?)",
    ),
    ({"evaluators": "looping"}, ""),  # a single name is fine
    (
        {"capture_content": "perhaps"},
        "capture_content: expected one of 1/true/yes/on/0/false/no/off",
    ),
    ({"query_keys": [""]}, "query_keys: expected non-empty names"),
    ({"sampler": 0.5}, "sampler: expected a Sampler, got float 0.5"),
    (
        {"redact": "upper"},
        "redact: expected a redaction policy (none, secrets, pii), got 'upper'",
    ),
    ({"redact": 3}, "redact: expected a redaction policy (none, secrets, pii) or a function"),
]


@pytest.mark.parametrize(("given", "message"), BAD_EXPLICIT)
def test_bad_explicit_values_raise_naming_the_key_and_the_value(
    given: dict[str, Any], message: str
) -> None:
    if not message:
        assert start_config(env={}, **given).evaluators == ("looping",)
        return
    with pytest.raises(ValueError, match=re.escape(message)):
        start_config(env={}, **given)
    if "evaluators" not in given and "queue_url" not in given:  # checked by the settings part
        with pytest.raises(ValueError, match=re.escape(message)):
            Config(**given)


def test_every_bad_explicit_value_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as caught:
        ragtrace.init(app="", request_timeout_s=float("nan"), metrics_port=-1,
                      registry=CollectorRegistry())  # fmt: skip
    assert [p.split(":")[0] for p in caught.value.problems] == [
        "app",
        "request_timeout_s",
        "metrics_port",
    ]
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, TypeError)
    assert ragtrace.get_current() is None


def test_unknown_option_is_named_with_the_closest() -> None:
    with pytest.raises(
        TypeError,
        match=re.escape("unknown option 'max_chunk_char' (did you mean max_chunk_chars?)"),
    ):
        Config.resolve(env={}, max_chunk_char=10)


def test_explicit_text_is_read_like_a_variable() -> None:
    config = Config.resolve(env={}, metrics_port="9464", capture_content="off", query_keys="a, b")
    assert (config.metrics_port, config.capture_content, config.query_keys) == (
        9464,
        False,
        ("a", "b"),
    )


def test_replace_checks_again_and_marks_the_change_explicit() -> None:
    config = Config.resolve(env={"RAGTRACE_APP": "env-app"})
    changed = config.replace(max_chunks=3)
    assert changed.sources["max_chunks"] == "explicit" and changed.sources["app"] == "RAGTRACE_APP"
    with pytest.raises(ValueError, match="max_chunks: must be >= 1"):
        config.replace(max_chunks=0)


# --- environment ---------------------------------------------------------------------------


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize(
    ("variable", "text"),
    [
        ("RAGTRACE_REQUEST_TIMEOUT_S", "nan"),
        ("RAGTRACE_SHUTDOWN_TIMEOUT_S", "-inf"),
        ("RAGTRACE_SHUTDOWN_TIMEOUT_S", "-3"),
        ("RAGTRACE_QUEUE_SIZE", "nan"),
        ("RAGTRACE_MAX_CHUNKS", "many"),
        ("RAGTRACE_MAX_CHUNK_CHARS", "0"),
        ("RAGTRACE_OTLP_ENDPOINT", "collector:4318"),
        ("RAGTRACE_APP", "\x01"),
        ("RAGTRACE_EVALUATORS", "looping,nope"),
        ("RAGTRACE_METRICS_PORT", "65536"),
    ],
)
def test_a_bad_variable_stops_the_start(variable: str, text: str) -> None:
    with pytest.raises(ConfigError) as refused:
        start_config(env={variable: text})
    (problem,) = refused.value.problems
    assert problem.startswith(f"{variable}: ") and "\n" not in problem


def test_a_bad_variable_does_not_fall_through_to_the_settings_file(tmp_path: Path) -> None:
    path = tmp_path / "ragtrace.yaml"
    path.write_text("capture: {request_timeout_s: 30}\n")
    env = {"RAGTRACE_REQUEST_TIMEOUT_S": "NaN", "RAGTRACE_CONFIG_FILE": str(path)}
    with pytest.raises(ConfigError, match=r"RAGTRACE_REQUEST_TIMEOUT_S: .*\(must be > 0\)"):
        Config.resolve(env=env)


def test_a_nan_timeout_from_the_environment_stops_init(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTRACE_REQUEST_TIMEOUT_S", "nan")
    with pytest.raises(ConfigError, match="RAGTRACE_REQUEST_TIMEOUT_S"):
        ragtrace.init(registry=CollectorRegistry(), evaluators=[])
    assert ragtrace.get_current() is None


def test_unknown_variables_are_logged_with_the_closest_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "ragtrace")
    env = {
        "RAGTRACE_MAX_CHUNK": "3",
        "RAGTRACE_EVALUATOR": "looping",
        "RAGTRACE_ZZZ_UNHEARD_OF": "1",
        "RAGTRACE_JUDGE_MODEL": "openai/x",  # read by the judge client: known
        "RAGTRACE_REVIEW_TOKEN": "t" * 20,
        "OTHER_PREFIX_MAX_CHUNKS": "1",
    }
    Config.resolve(env=env)
    logged = _warnings(caplog)
    assert any("RAGTRACE_MAX_CHUNK (did you mean RAGTRACE_MAX_CHUNKS?)" in m for m in logged)
    assert any("RAGTRACE_EVALUATOR (did you mean RAGTRACE_EVALUATORS?)" in m for m in logged)
    assert any("RAGTRACE_ZZZ_UNHEARD_OF; see the options table" in m for m in logged)
    assert not any("JUDGE_MODEL" in m or "REVIEW_TOKEN" in m or "OTHER_" in m for m in logged)


def test_blank_variables_are_unset_but_an_empty_list_is_empty() -> None:
    config = Config.resolve(env={"RAGTRACE_APP": " ", "RAGTRACE_EVALUATORS": ""})
    assert config.app == "default" and config.sources["app"] == "default"
    assert config.evaluators == () and config.sources["evaluators"] == "RAGTRACE_EVALUATORS"


# --- the settings file ---------------------------------------------------------------------


def test_every_mistake_of_a_file_is_reported_at_once(tmp_path: Path) -> None:
    path = tmp_path / "ragtrace.yaml"
    path.write_text(
        "app: ''\n"
        "capture: {max_chunks: -1, request_timeout_s: .nan}\n"
        "evaluators: [looping, nope]\n"
        "sampling: {rate: 2, rules: [{action: sometimes}]}\n"
        "pipeline: {workers: 0}\n"
        "sinks: {otlp_endpoint: 'collector:4318', prometheus: {port: 70000}}\n"
        "queue: http://redis\n"
    )
    with pytest.raises(SettingsError) as caught:
        start_config(env={}, config_file=str(path))
    paths = [e.removeprefix(f"{path}: ").split(":")[0] for e in caught.value.errors]
    assert paths == [
        "app",
        "capture.max_chunks",
        "capture.request_timeout_s",
        "evaluators[1].name",
        "sampling.rate",
        "sampling.rules[0].action",
        "pipeline.workers",
        "queue",
        "sinks.otlp_endpoint",
        "sinks.prometheus.port",
    ]
    assert str(caught.value).count("\n") == len(paths) - 1


def test_unknown_keys_of_a_file_are_logged_with_the_closest_and_the_rest_applies(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "ragtrace")
    path = tmp_path / "ragtrace.yaml"
    path.write_text(
        "ap: typo\ncapture: {max_chunk: 3, max_chunks: 4}\npipeline: {wrokers: 9}\n"
        "sinks: {prometheus: {prot: 1}}\nbrand_new_section: {x: 1}\n"
    )
    config = Config.resolve(env={}, config_file=str(path))
    assert (config.app, config.max_chunks, config.workers) == ("default", 4, 2)
    assert config.metrics_port == 9464
    logged = "\n".join(_warnings(caplog))
    for expected in (
        "ap: unknown key, ignored (did you mean 'app'?)",
        "capture.max_chunk: unknown key, ignored (did you mean 'max_chunks'?)",
        "pipeline.wrokers: unknown key, ignored (did you mean 'workers'?)",
        "sinks.prometheus.prot: unknown key, ignored (did you mean 'port'?)",
        "brand_new_section: unknown key, ignored; expected one of: app, capture,",
    ):
        assert f"{path}: {expected}" in logged


def test_every_option_with_a_file_key_is_read_from_its_key(tmp_path: Path) -> None:
    """The matrix covers each key alone; here all at once, as a full file would have them."""
    data: dict[str, Any] = {}
    for opt in options(Config):
        if opt.file is None:
            continue
        part = _file_data(opt.file, opt.name, SAMPLES[opt.name][0])
        _merge(data, part)
    path = tmp_path / "all.yaml"
    path.write_text(yaml.safe_dump(data))
    config = start_config(env={}, config_file=str(path))
    for opt in options(Config):
        if opt.file is not None:
            got = _comparable(opt.name, getattr(config, opt.name))
            assert got == _comparable(opt.name, _explicit(opt.name, SAMPLES[opt.name][0]))


def _merge(into: dict[str, Any], part: dict[str, Any]) -> None:
    for key, value in part.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


# --- init ----------------------------------------------------------------------------------


def test_init_reads_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTRACE_APP", "env-app")
    rt = ragtrace.init(registry=CollectorRegistry())
    try:
        assert rt.config.app == "env-app"
        assert ragtrace.get_current() is rt
    finally:
        rt.shutdown()
    assert ragtrace.get_current() is None


def test_init_builds_the_runtime_from_the_resolved_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ragtrace.yaml"
    path.write_text(
        "evaluators: [looping]\nsampling: {rate: 0.5}\npipeline: {workers: 3, queue_size: 9}\n"
        "sinks: {prometheus: {port: 0}, otel: false}\n"
    )
    monkeypatch.setenv("RAGTRACE_CONFIG_FILE", str(path))
    monkeypatch.setenv("RAGTRACE_EVALUATORS", "bleu")
    monkeypatch.setenv("RAGTRACE_WORKERS", "4")
    rt = ragtrace.init(registry=CollectorRegistry(), metrics_addr="127.0.0.1", queue_size=5)
    try:
        assert [e.name for e in rt.pipeline.evaluators] == ["bleu"]
        assert rt.pipeline.sampler.rate == 0.5
        assert (rt.pipeline.options.config.workers, rt.pipeline.options.config.queue_size) == (4, 5)
        assert rt.metrics_server is not None and rt.metrics_server.port > 0
        assert rt.config.sources["evaluation_results"] == str(path)
        assert rt.config.evaluation_results == "none"
    finally:
        rt.shutdown()


def test_init_twice_replaces_the_previous_instance() -> None:
    registry = CollectorRegistry()
    first = ragtrace.init(app="one", registry=registry)
    second = ragtrace.init(app="two", registry=registry)  # same registry: no duplicate metrics
    try:
        assert first.is_shut_down and not second.is_shut_down
        assert ragtrace.current() is second
    finally:
        second.shutdown()


OPTION_VIEWS = (
    "ragtrace._pipeline.options.PipelineOptions",
    "ragtrace._worker.serving.ServiceOptions",
    "ragtrace._worker.service.WorkerOptions",
    "ragtrace._ingest.service.IngestOptions",
    "ragtrace.demo._run.DemoOptions",
)
"""Every class of options that takes ``Config`` options beside its own: each holds a
``Config`` (``config``) and declares only its own fields."""


@pytest.mark.parametrize("dotted", OPTION_VIEWS, ids=lambda d: d.rpartition(".")[2])
def test_every_option_is_declared_once(dotted: str) -> None:
    """The class reads the options ``Config`` declares from its ``config`` and declares only
    its own: no field of it is a ``Config`` option too."""
    module, _, name = dotted.rpartition(".")
    view = getattr(importlib.import_module(module), name)
    fields = {f.name for f in dataclasses.fields(view)}
    own = fields - {"config"}
    assert "config" in fields and own
    assert own.isdisjoint(o.name for o in options(Config)), own & {o.name for o in options(Config)}


def test_pipeline_options_hold_the_config_given() -> None:
    from ragtrace._pipeline import PipelineOptions

    config = Config.resolve(env={"RAGTRACE_WORKERS": "3"})
    assert PipelineOptions.from_config(config).config is config
    assert PipelineOptions().config == Config()


def test_service_options_resolve_flag_over_environment_over_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A service's ``Config``: its flags > ``RAGTRACE_*`` > the settings file > default, named
    after the service; a metrics endpoint open to the network without a token is refused."""
    from ragtrace._ingest.service import IngestOptions
    from ragtrace._worker.service import APP, WorkerOptions
    from ragtrace._worker.serving import service_config

    settings = tmp_path / "ragtrace.yaml"
    settings.write_text("pipeline: {workers: 4, processes: 1, queue_size: 7}\n")
    monkeypatch.setenv("RAGTRACE_CONFIG_FILE", str(settings))
    monkeypatch.setenv("RAGTRACE_WORKERS", "3")
    monkeypatch.setenv("RAGTRACE_APP", "shop")
    config = service_config(APP, ("looping",), processes=2)
    assert (config.processes, config.workers, config.queue_size) == (2, 3, 7)
    assert config.app == "ragtrace-worker" and [e.name for e in config.evaluators] == ["looping"]
    assert WorkerOptions().config.workers == 3
    assert IngestOptions().config.app == "ragtrace-ingest"
    with pytest.raises(ValueError, match="--evaluators tokens_presence"):
        service_config(APP, ("tokens_presence",))
    with pytest.raises(ValueError, match="metrics_allow_unauthenticated"):
        WorkerOptions(service_config(APP, metrics_addr="0.0.0.0", metrics_port=0))


# --- the docs and the command ----------------------------------------------------------------


def test_the_docs_table_is_made_from_the_declarations() -> None:
    from ragtrace._config.table import options_table, readme_section

    page = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text(
        encoding="utf-8"
    )
    assert readme_section(page) == options_table(), (
        "run: ragtrace config table --write docs/configuration.md"
    )
    for opt in options(Config):
        assert f"| `{opt.name}` |" in page


def test_every_ragtrace_variable_read_in_the_package_is_known() -> None:
    """A module that reads a new ``RAGTRACE_*`` variable declares it (or it would be reported
    as unknown): every such name in ``ragtrace/`` is an option's or in ``VARIABLES``."""
    from ragtrace import _semconv as semconv
    from ragtrace._config.resolve import known_variables

    package = Path(ragtrace.__file__).resolve().parent
    named = set()
    for path in package.rglob("*.py"):
        found = re.findall(r"RAGTRACE_[A-Z0-9_]+", path.read_text(encoding="utf-8"))
        named |= {n for n in found if not n.endswith("_")}  # not a prefix (RAGTRACE_JUDGE_*)
    attribute_names = {n for n in dir(semconv) if n.startswith("RAGTRACE_")}
    assert named - attribute_names - known_variables(options(Config)) == set()


def test_config_show_and_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ragtrace._cli import main

    path = tmp_path / "ragtrace.yaml"
    path.write_text("app: shown\npipeline: {wrokers: 2}\n")
    assert main(["config", "show", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert re.search(rf"^app +shown +\({re.escape(str(path))}\)$", out, re.M)
    assert re.search(r"^workers +2 +\(default\)$", out, re.M)
    assert main(["config", "check", str(path)]) == 0
    assert main(["config", "check", str(path), "--strict"]) == 1
    path.write_text("pipeline: {workers: 0}\nsinks: {otel: maybe}\n")
    assert main(["config", "check", str(path)]) == 1
    err = capsys.readouterr().err
    assert (
        "pipeline.workers: must be >= 1, got 0" in err and "sinks.otel: must be one of logs" in err
    )
