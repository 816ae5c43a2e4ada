"""Settings as a file (YAML, TOML) or a mapping: what they build, and every error they report."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

import ragtrace._config.settings_file as settings_file
from ragtrace import evaluators
from ragtrace._config import Config, SettingsError
from ragtrace._model import EvaluatorKind, RagRecord, Score
from ragtrace._pipeline.sampling import Sampler, SamplingDecision
from ragtrace._runtime.evaluation_settings import (
    EvaluationSettings,
    evaluation_config,
    load_settings,
    settings_from_mapping,
)
from ragtrace.evaluators import FunctionEvaluator
from ragtrace.evaluators._base import Evaluator


class Tiny(Evaluator):
    name: ClassVar[str] = "tiny"

    def __init__(self, *, words: int = 3, **base: Any) -> None:
        if words < 1:
            raise ValueError("words must be >= 1")
        self.words = words
        super().__init__(**base)

    def evaluate(self, record: RagRecord) -> list[Score]:
        return []


class TinyJudge(Tiny):
    name: ClassVar[str] = "tiny_judge"
    kind: ClassVar[EvaluatorKind] = "judge"
    cost_usd = 0.25


def permissive(name: str, kind: EvaluatorKind = "lexical") -> Any:
    def factory(**options: Any) -> Evaluator:
        base = {k: options.pop(k) for k in ("threshold", "cost_usd") if k in options}
        return FunctionEvaluator(lambda r: None, name=name, kind=kind, **base)

    return factory


@pytest.fixture(autouse=True)
def tiny_evaluators() -> Iterator[None]:
    evaluators.register("tiny", Tiny)
    evaluators.register("tiny_judge", TinyJudge)
    yield
    evaluators.unregister("tiny")
    evaluators.unregister("tiny_judge")


YAML = """\
evaluators:
  - name: tiny
    threshold: 0.6
  - name: tiny_judge
    options: {words: 7, cost_usd: 0.5}
sampling:
  rate: 0.0
  evaluator_rates: {tiny_judge: 1.0}
  rules:
    - {action: always, status: [error]}
    - {action: never, route: healthcheck, name: health}
    - {action: always, metadata: {tier: 1}, evaluators: tiny}
  rate_limits: {tiny_judge: 0.001}
  burst: {tiny_judge: 2}
  hourly_budget_usd: 5
  cascades: [{evaluator: tiny_judge, after: tiny, low: 0.3, high: 0.7}]
pipeline: {queue_size: 50, workers: 3, batch_wait_s: 0.5, processes: 2, shared_cache_mb: 8}
sinks: {prometheus: {port: 9500, addr: 0.0.0.0}, otel: false}
"""

TOML = """\
[[evaluators]]
name = "tiny"
threshold = 0.6

[[evaluators]]
name = "tiny_judge"
options = { words = 7, cost_usd = 0.5 }

[sampling]
rate = 0.0
evaluator_rates = { tiny_judge = 1.0 }
rate_limits = { tiny_judge = 0.001 }
burst = { tiny_judge = 2 }
hourly_budget_usd = 5

[[sampling.rules]]
action = "always"
status = ["error"]

[[sampling.rules]]
action = "never"
route = "healthcheck"
name = "health"

[[sampling.rules]]
action = "always"
metadata = { tier = 1 }
evaluators = "tiny"

[[sampling.cascades]]
evaluator = "tiny_judge"
after = "tiny"
low = 0.3
high = 0.7

[pipeline]
queue_size = 50
workers = 3
batch_wait_s = 0.5
processes = 2
shared_cache_mb = 8

[sinks]
otel = false

[sinks.prometheus]
port = 9500
addr = "0.0.0.0"
"""


def rec(**fields: Any) -> RagRecord:
    return RagRecord(trace_id="f" * 32, span_id="0" * 16, query="q", **fields)


def check_full(settings: EvaluationSettings) -> None:
    tiny, judge = settings.evaluators
    assert isinstance(tiny, Tiny) and tiny.threshold == 0.6 and tiny.words == 3
    assert isinstance(judge, TinyJudge) and judge.words == 7 and judge.cost_usd == 0.5
    config = settings.config
    assert (config.queue_size, config.workers, config.batch_wait_s) == (50, 3, 0.5)
    assert (config.processes, config.shared_cache_mb) == (2, 8)
    assert (config.metrics_port, config.metrics_addr) == (9500, "0.0.0.0")
    assert config.evaluation_results == "none"  # `sinks.otel: false`
    sampler = settings.sampler
    assert sampler.rate == 0.0 and sampler.evaluator_rates == {"tiny_judge": 1.0}
    assert [r.reason for r in sampler.rules] == [
        "rule:always_status_error",
        "rule:health",
        "rule:always_metadata",
    ]
    pair = [tiny, judge]
    assert sampler.select(rec(), pair) == [
        SamplingDecision("tiny", False, "ratio_out"),
        SamplingDecision("tiny_judge", True, "ratio"),
    ]
    errors = sampler.select(rec(status="error"), pair)
    assert [d.reason for d in errors] == ["rule:always_status_error"] * 2
    health = rec(status="error", attributes={"metadata": {"route": "healthcheck", "tier": "1"}})
    assert [d.reason for d in sampler.select(health, pair)] == ["rule:always_status_error"] * 2
    gold = rec(attributes={"metadata": {"route": "healthcheck", "tier": "1"}})
    assert [d.sampled for d in sampler.select(gold, pair)] == [False, False]
    tier = rec(attributes={"metadata": {"tier": 1}})
    assert sampler.select(tier, pair)[0] == SamplingDecision("tiny", True, "rule:always_metadata")
    assert [sampler.admit(judge) for _ in range(3)] == [(True, "admitted")] * 2 + [
        (False, "rate_limited")
    ]
    assert sampler.budget_left_usd() == pytest.approx(4.0)
    assert sampler.cascade_ready("tiny_judge", {"tiny": Score("tiny", 0.9)}) == (
        False,
        "cascade_out_of_band",
    )
    assert sampler.cascade_ready("tiny_judge", {"tiny": Score("tiny", 0.5)})[0] is True
    assert [e.name for e in sampler.cascade_order([judge, tiny])] == ["tiny", "tiny_judge"]


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".YAML"])
def test_yaml_file(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"ragtrace{suffix}"
    path.write_text(YAML)
    check_full(load_settings(path))
    check_full(load_settings(str(path)))


def test_toml_file(tmp_path: Path) -> None:
    path = tmp_path / "ragtrace.toml"
    path.write_text(TOML)
    check_full(load_settings(path))


def test_defaults(tmp_path: Path) -> None:
    for name, text in (("empty.yaml", ""), ("empty.toml", ""), ("comment.yml", "# nothing\n")):
        (tmp_path / name).write_text(text)
        settings = load_settings(tmp_path / name)
        assert settings.evaluators == ()
        config = settings.config
        assert (config.queue_size, config.workers, config.batch_wait_s) == (10000, 2, 0.05)
        assert (config.processes, config.shared_cache_mb) == (0, Config.shared_cache_mb)
        assert (config.metrics_port, config.metrics_addr) == (None, "127.0.0.1")
        assert config.evaluation_results == "logs"
        assert config.sources["workers"] == "default"  # the environment is not read
        assert settings.sampler.rate == 1.0 and settings.sampler.rules == ()


def test_mapping_accepts_bare_names_instances_and_prometheus_flags() -> None:
    mine = FunctionEvaluator(lambda r: 1.0, name="mine")
    settings = settings_from_mapping(
        {"evaluators": ["tiny", mine], "sinks": {"prometheus": True}, "sampling": {"rate": 1}}
    )
    assert [e.name for e in settings.evaluators] == ["tiny", "mine"]
    assert settings.evaluators[1] is mine
    assert (settings.config.metrics_port, settings.config.metrics_addr) == (9464, "127.0.0.1")
    assert settings_from_mapping({"sinks": {"prometheus": False}}).config.metrics_port is None
    sinks = settings_from_mapping({"sinks": {"otel": "spans", "phoenix": "http://px:6006"}})
    assert (sinks.config.evaluation_results, sinks.config.phoenix_endpoint) == (
        "spans",
        "http://px:6006",
    )
    none = settings_from_mapping({"sinks": {"otel": "none", "phoenix": {"endpoint": "https://p"}}})
    assert (none.config.evaluation_results, none.config.phoenix_endpoint) == ("none", "https://p")
    assert settings_from_mapping({"sinks": {"prometheus": {}}}).config.metrics_port == 9464


def test_sampling_by_session_and_the_failed_sessions_memory_are_read() -> None:
    settings = settings_from_mapping(
        {
            "evaluators": ["tiny"],
            "sampling": {
                "rate": 0.1,
                "by": "session",
                "rules": [{"action": "always", "after_failure": True, "evaluators": ["tiny"]}],
                "failed_sessions": {"max_sessions": 50, "ttl_s": 60, "evaluators": ["tiny"]},
            },
        }
    )
    sampler = settings.sampler
    assert (sampler.rate, sampler.by) == (0.1, "session")
    assert sampler.rules[0].after_failure is True
    memory = sampler.failed_sessions
    assert memory is not None
    assert (memory.max_sessions, memory.ttl_s, memory.max_turns) == (50, 60.0, 20)


def test_the_docstring_example_loads(tmp_path: Path) -> None:
    doc = settings_file.__doc__ or ""
    block = doc.split("A full YAML file")[1].split("::\n\n", 1)[1].split("\n\nThe same in TOML")[0]
    text = "\n".join(line[4:] for line in block.splitlines())
    names: dict[str, EvaluatorKind] = {"looping": "lexical", "tokens_presence": "lexical"}
    names.update(groundedness="model", judge_faithfulness="judge")
    for name, kind in names.items():
        evaluators.register(name, permissive(name, kind), replace=True)
    try:
        (tmp_path / "doc.yaml").write_text(text)
        settings = load_settings(tmp_path / "doc.yaml")
    finally:
        for name in names:
            evaluators.unregister(name)
    assert [e.name for e in settings.evaluators] == [
        "looping",
        "tokens_presence",
        "groundedness",
        "judge_faithfulness",
    ]
    assert settings.config.metrics_port == 9464 and len(settings.sampler.rules) == 4
    assert settings.sampler.by == "trace" and settings.sampler.failed_sessions is not None
    assert settings.sampler.failed_sessions.max_turns == 20


ERRORS: list[tuple[dict[str, Any], str]] = [
    (
        {"sampling": {"rules": [{"action": "always"}, {"acton": "never"}]}},
        "ragtrace.yaml: sampling.rules[1].acton: unknown key (did you mean 'action'?)",
    ),
    ({1: 2}, "ragtrace.yaml: 1: keys must be strings, got int 1"),  # type: ignore[dict-item]
    ({"evaluators": "tiny"}, "ragtrace.yaml: evaluators: expected a list, got str 'tiny'"),
    ({"evaluators": [5]}, "ragtrace.yaml: evaluators[0]: expected a mapping, got int 5"),
    ({"evaluators": [{"threshold": 1}]}, "ragtrace.yaml: evaluators[0]: missing key 'name'"),
    ({"evaluators": [{"name": 5}]}, "evaluators[0].name: expected a non-empty string, got int 5"),
    (
        {"evaluators": [{"name": "tinny"}]},
        "ragtrace.yaml: evaluators[0].name: unknown evaluator 'tinny' (did you mean 'tiny'?); "
        "known: ",
    ),
    (
        {"evaluators": ["tiny", {"name": "tiny", "words": 0}]},
        "ragtrace.yaml: evaluators[1]: evaluator 'tiny': words must be >= 1",
    ),
    (
        {"evaluators": [{"name": "tiny", "threshold": "high"}]},
        "ragtrace.yaml: evaluators[0]: evaluator 'tiny': threshold must be a real number",
    ),
    (
        {"evaluators": [{"name": "tiny", "treshold": 0.5}]},
        "ragtrace.yaml: evaluators[0].treshold: unknown option for evaluator 'tiny' "
        "(did you mean 'threshold'?)",
    ),
    (
        {"evaluators": [{"name": "tiny", "options": {"wrds": 2}}]},
        "ragtrace.yaml: evaluators[0].options.wrds: unknown option for evaluator 'tiny'",
    ),
    (
        {"evaluators": [{"name": "tiny", "options": []}]},
        "ragtrace.yaml: evaluators[0].options: expected a mapping, got list []",
    ),
    (
        {"evaluators": [{"name": "tiny", "words": 2, "options": {"words": 3}}]},
        "ragtrace.yaml: evaluators[0].options.words: also given as evaluators[0].words",
    ),
    (
        {"evaluators": ["tiny", {"name": "tiny"}]},
        "ragtrace.yaml: evaluators[1]: duplicate evaluator 'tiny' (also evaluators[0])",
    ),
    ({"sampling": []}, "ragtrace.yaml: sampling: expected a mapping, got list []"),
    ({"sampling": {"rate": 2}}, "ragtrace.yaml: sampling.rate: must be in [0, 1], got 2"),
    ({"sampling": {"rate": "0.5"}}, "sampling.rate: expected a number, got str '0.5'"),
    ({"sampling": {"rate": True}}, "sampling.rate: expected a number, got bool True"),
    (
        {"sampling": {"evaluator_rates": {"tiny_jdge": 1}}},
        "ragtrace.yaml: sampling.evaluator_rates.tiny_jdge: unknown evaluator 'tiny_jdge' "
        "(did you mean 'tiny_judge'?); configured: tiny, tiny_judge",
    ),
    (
        {"evaluators": [], "sampling": {"evaluator_rates": {"tiny": 1}}},
        "sampling.evaluator_rates.tiny: unknown evaluator 'tiny'; configured: (none)",
    ),
    (
        {"sampling": {"rate_limits": {"tiny": -1}}},
        "sampling.rate_limits.tiny: must be >= 0, got -1",
    ),
    ({"sampling": {"rate_limits": []}}, "sampling.rate_limits: expected a mapping, got list []"),
    (
        {"sampling": {"burst": {"tiny": 3}}},
        "sampling.burst.tiny: no rate limit for this evaluator in sampling.rate_limits",
    ),
    (
        {"sampling": {"rate_limits": {"tiny": 1}, "burst": {"tiny": 0.5}}},
        "sampling.burst.tiny: must be >= 1, got 0.5",
    ),
    (
        {"sampling": {"hourly_budget_usd": "5$"}},
        "sampling.hourly_budget_usd: expected a number, got str '5$'",
    ),
    ({"sampling": {"rules": {"action": "always"}}}, "sampling.rules: expected a list, got dict"),
    ({"sampling": {"rules": [{}]}}, "sampling.rules[0]: missing key 'action' (always or never)"),
    (
        {"sampling": {"rules": [{"action": "sometimes"}]}},
        "sampling.rules[0].action: expected 'always' or 'never', got str 'sometimes'",
    ),
    (
        {"sampling": {"rules": [{"action": "always", "status": ["eror"]}]}},
        "sampling.rules[0].status: unknown status 'eror' (did you mean 'error'?)",
    ),
    (
        {"sampling": {"rules": [{"action": "always", "status": "bad"}]}},
        "sampling.rules[0].status: unknown status 'bad'; expected one of: ok, error, abandoned,",
    ),
    (
        {"sampling": {"rules": [{"action": "always", "status": [5]}]}},
        "sampling.rules[0].status[0]: expected a non-empty string, got int 5",
    ),
    (
        {"sampling": {"rules": [{"action": "never", "route": True}]}},
        "sampling.rules[0].route: expected a non-empty string, got bool True (quote it: YAML",
    ),
    (
        {"sampling": {"rules": [{"action": "never", "empty_retrieval": "yes"}]}},
        "sampling.rules[0].empty_retrieval: expected true or false, got str 'yes'",
    ),
    (
        {"sampling": {"rules": [{"action": "never", "top_score_below": None}]}},
        "sampling.rules[0].top_score_below: expected a number, got NoneType None",
    ),
    (
        {"sampling": {"rules": [{"action": "never", "metadata": {"k": [1]}}]}},
        "sampling.rules[0].metadata.k: expected a string or number, got list [1]",
    ),
    (
        {"sampling": {"rules": [{"action": "never", "name": "bad name"}]}},
        "ragtrace.yaml: sampling.rules[0]: name must be a short identifier",
    ),
    (
        {"sampling": {"rules": [{"action": "never", "evaluators": ["nope"]}]}},
        "sampling.rules[0].evaluators: unknown evaluator 'nope'; configured: tiny, tiny_judge",
    ),
    (
        {"sampling": {"cascades": [{"evaluator": "tiny_judge"}]}},
        "sampling.cascades[0]: missing key 'after'",
    ),
    (
        {"sampling": {"cascades": [{"evaluator": "tiny_judge", "after": "tiny", "hgh": 1}]}},
        "sampling.cascades[0].hgh: unknown key (did you mean 'high'?)",
    ),
    (
        {"sampling": {"cascades": [{"evaluator": "judge", "after": "tiny"}]}},
        "sampling.cascades[0].evaluator: unknown evaluator 'judge'",
    ),
    (
        {
            "sampling": {
                "cascades": [{"evaluator": "tiny_judge", "after": "tiny", "low": 0.8, "high": 0.2}]
            }
        },
        "ragtrace.yaml: sampling.cascades[0]: low (0.8) must not exceed high (0.2)",
    ),
    (
        {"sampling": {"cascades": [{"evaluator": "tiny", "after": "tiny"}]}},
        "sampling.cascades[0]: 'tiny' cannot follow itself",
    ),
    (
        {
            "sampling": {
                "cascades": [
                    {"evaluator": "tiny", "after": "tiny_judge"},
                    {"evaluator": "tiny_judge", "after": "tiny"},
                ]
            }
        },
        "ragtrace.yaml: sampling.cascades: cascades form a cycle: tiny -> tiny_judge -> tiny",
    ),
    ({"pipeline": {"workers": 0}}, "ragtrace.yaml: pipeline.workers: must be >= 1, got 0"),
    ({"pipeline": {"queue_size": 1.5}}, "pipeline.queue_size: expected an integer, got float 1.5"),
    ({"pipeline": {"batch_wait_s": -1}}, "pipeline.batch_wait_s: must be > 0, got -1.0"),
    ({"pipeline": {"batch_wait_s": float("nan")}}, "pipeline.batch_wait_s: expected a finite"),
    ({"pipeline": {"processes": -1}}, "pipeline.processes: must be >= 0, got -1"),
    ({"pipeline": {"shared_cache_mb": -2}}, "pipeline.shared_cache_mb: must be >= 0, got -2.0"),
    (
        {"pipeline": {"shared_cache_mb": "lots"}},
        "pipeline.shared_cache_mb: expected a number, got str",
    ),
    (
        {"sinks": {"prometheus": {"port": 70000}}},
        "sinks.prometheus.port: must be a port in 0..65535, got 70000",
    ),
    ({"sinks": {"prometheus": "on"}}, "sinks.prometheus: expected true, false or a mapping"),
    ({"sinks": {"prometheus": {"addr": ""}}}, "sinks.prometheus.addr: must be an IP address"),
    ({"sinks": {"otlp_endpoint": "ftp://x"}}, "sinks.otlp_endpoint: must be a http:// or https://"),
    ({"capture": {"max_chunks": 0}}, "ragtrace.yaml: capture.max_chunks: must be >= 1, got 0"),
    ({"app": ""}, "ragtrace.yaml: app: must be a non-empty name"),
    ({"sampling": {"by": "user"}}, "sampling.by: expected 'trace' or 'session', got 'user'"),
    (
        {"sampling": {"failed_sessions": {"max_turns": 0}}},
        "sampling.failed_sessions.max_turns: must be >= 1, got 0",
    ),
    (
        {"sampling": {"failed_sessions": {"ttl_s": "long"}}},
        "sampling.failed_sessions.ttl_s: expected a number",
    ),
    (
        {"sampling": {"rules": [{"action": "always", "after_failure": "yes"}]}},
        "sampling.rules[0].after_failure:",
    ),
    (
        {"sinks": {"otel": "yes"}},
        "ragtrace.yaml: sinks.otel: must be one of logs, spans, both, none, got 'yes'",
    ),
    ({"sinks": {"otel": 1}}, "sinks.otel: expected a string, got int 1"),
    (
        {"sinks": {"phoenix": "phoenix:6006"}},
        "sinks.phoenix: must be a http:// or https:// URL with a host",
    ),
    (
        {"sinks": {"phoenix": {"url": "http://x"}}},
        "sinks.phoenix: expected a URL or {endpoint: URL}",
    ),
    ({"sinks": {"phoenix": {}}}, "sinks.phoenix: expected a URL or {endpoint: URL}"),
    ({"sinks": {"phoenix": 3}}, "sinks.phoenix: expected a string, got int 3"),
]


@pytest.mark.parametrize(("data", "message"), ERRORS)
def test_errors_name_the_path(data: dict[str, Any], message: str) -> None:
    data = {"evaluators": ["tiny", "tiny_judge"], **data}
    with pytest.raises(SettingsError, match=re.escape(message)):
        settings_from_mapping(data, source="ragtrace.yaml")


WARNINGS: list[tuple[dict[str, Any], str]] = [
    ({"samplng": {}}, "ragtrace.yaml: samplng: unknown key, ignored (did you mean 'sampling'?)"),
    ({"zzz": 1}, "ragtrace.yaml: zzz: unknown key, ignored; expected one of: app, capture,"),
    (
        {"pipeline": {"wrokers": 1}},
        "pipeline.wrokers: unknown key, ignored (did you mean 'workers'",
    ),
    ({"sinks": {"prometheus": {"prot": 1}}}, "sinks.prometheus.prot: unknown key, ignored (did"),
]


@pytest.mark.parametrize(("data", "message"), WARNINGS)
def test_unknown_keys_are_warnings_naming_the_closest(
    data: dict[str, Any], message: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "ragtrace")
    settings = settings_from_mapping({"evaluators": ["tiny"], **data}, source="ragtrace.yaml")
    assert [e.name for e in settings.evaluators] == ["tiny"]
    assert any(message in r.getMessage() for r in caplog.records)


def test_every_error_is_reported_at_once() -> None:
    data = {
        "evaluators": ["tiny", {"name": "tinny"}, {"name": "tiny_judge", "wrds": 1}],
        "sampling": {"rate": 3, "rules": [{"action": "x"}, {"action": "never", "acton": 1}]},
        "pipeline": {"workers": 0, "queue_size": "many"},
        "sinks": {"otel": "yes"},
    }
    with pytest.raises(SettingsError) as caught:
        settings_from_mapping(data, source="f.yaml")
    assert [e.split(": ")[1] for e in caught.value.errors] == [
        "evaluators[1].name",
        "evaluators[2].wrds",
        "sampling.rate",
        "sampling.rules[0].action",
        "sampling.rules[1].acton",
        "pipeline.queue_size",
        "pipeline.workers",
        "sinks.otel",
    ]


def test_unknown_evaluator_lists_the_known_ones() -> None:
    with pytest.raises(SettingsError) as caught:
        settings_from_mapping({"evaluators": [{"name": "nope"}]})
    message = str(caught.value)
    assert message.startswith("<dict>: evaluators[0].name: unknown evaluator 'nope'; known: ")
    assert "tiny, tiny_judge" in message
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("ragtrace.json", "{}", "unsupported file type '.json'; use .yaml, .yml or .toml"),
        ("bad.yaml", "sampling: [1,\n", "invalid YAML: "),
        ("bad.toml", "sampling = [1,\n", "invalid TOML: "),
        ("list.yaml", "- tiny\n", "expected a mapping at the top level, got list"),
        ("dupe.yaml", "sampling: {}\npipeline: {}\nsampling: {}\n", "line 3: duplicate key"),
        ("dupe_deep.yaml", "sampling:\n  rate: 1\n  rate: 0.5\n", "line 3: duplicate key 'rate'"),
        (
            "exp.yaml",
            "sampling: {rate: 1e-3}\n",
            "sampling.rate: expected a number, got str '1e-3' (YAML reads 1e-3 as a string",
        ),
        (
            "no.yaml",
            "evaluators: [tiny]\nsampling:\n  rules: [{action: never, route: no}]\n",
            "sampling.rules[0].route: expected a non-empty string, got bool False (quote it",
        ),
        (
            "typo.yaml",
            "evaluators: [tiny]\nsampling:\n  rules:\n  - {action: always}\n  - {acton: never}\n",
            "sampling.rules[1].acton: unknown key (did you mean 'action'?)",
        ),
    ],
)
def test_file_errors(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SettingsError, match=re.escape(message)) as caught:
        load_settings(path)
    assert str(caught.value).startswith(f"{path}: ")


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=re.escape("missing.yaml: cannot read the file")):
        load_settings(tmp_path / "missing.yaml")
    (tmp_path / "latin.toml").write_bytes(b"name = '\xe9'\n")
    with pytest.raises(SettingsError, match=re.escape("latin.toml: cannot read the file")):
        load_settings(tmp_path / "latin.toml")


def test_evaluation_settings_checks_its_fields() -> None:
    sampler, config = Sampler(), Config()
    assert EvaluationSettings(config, (), sampler).pipeline_options().config.workers == 2
    with pytest.raises(SettingsError, match="sampler must be a Sampler"):
        EvaluationSettings(config, (), None)  # type: ignore[arg-type]
    with pytest.raises(SettingsError, match="evaluators must be Evaluator instances"):
        EvaluationSettings(config, ("tiny",), sampler)  # type: ignore[arg-type]
    # the ranges are the options' own, whatever the source
    with pytest.raises(SettingsError, match=re.escape("pipeline.workers: must be >= 1, got 0")):
        settings_from_mapping({"pipeline": {"workers": 0}})


def test_sampling_module_does_not_import_yaml() -> None:
    import subprocess
    import sys

    code = (
        "import sys, ragtrace._pipeline.sampling, ragtrace._runtime.evaluation_settings; "
        "print('yaml' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_queue_key_takes_a_url_or_a_mapping() -> None:
    assert settings_from_mapping({}).config.queue_url is None
    url = "redis://127.0.0.1:6379/0"
    assert settings_from_mapping({"queue": url}).config.queue_url == url
    mapped = settings_from_mapping({"queue": {"url": url, "stream": "s:w", "max_backlog": 7}})
    assert mapped.config.queue_url == f"{url}?stream=s%3Aw&max_backlog=7"


@pytest.mark.parametrize(
    ("queue", "message"),
    [
        ("http://x", "expected a redis://host:port/db URL"),
        ({"stream": "s"}, "missing 'url'"),
        ({"url": "redis://h:1/0", "max_backlog": 0}, "max_backlog must be a whole number >= 1"),
        ({"url": "redis://h:1/0", "strem": "s"}, "did you mean 'stream'"),
        ("redis://h:1/0?batch=many", "batch='many' is not a whole number"),
    ],
)
def test_a_bad_queue_says_why(queue: object, message: str) -> None:
    with pytest.raises(SettingsError, match="queue") as caught:
        settings_from_mapping({"queue": queue})
    assert message in str(caught.value)


def test_the_configuration_reads_a_file_without_the_runtime(tmp_path: Path) -> None:
    """``Config.resolve`` keeps a file's evaluator entries and sampling section as checked
    values, loading neither the evaluators nor the pipeline nor the runtime; the runtime builds
    them, and building a built config again changes nothing."""
    import subprocess
    import sys

    path = tmp_path / "ragtrace.yaml"
    path.write_text(
        "evaluators: [looping, {name: tokens_presence, options: {constraints: [cite]}}]\n"
        "sampling: {rate: 0.5, evaluator_rates: {looping: 1.0}}\n"
    )
    code = (
        "import sys; from ragtrace._config import Config; "
        f"c = Config.resolve(env={{}}, config_file={str(path)!r}); "
        "print(c.evaluators, c.sampler); "
        "print(sorted(m for m in sys.modules if m.startswith(("
        "'ragtrace.evaluators', 'ragtrace._pipeline', 'ragtrace._runtime'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    read, loaded = out.stdout.strip().splitlines()
    assert read == (
        "('looping', {'name': 'tokens_presence', 'options': {'constraints': ['cite']}}) "
        "{'rate': 0.5, 'evaluator_rates': {'looping': 1.0}}"
    )
    assert loaded == "[]"
    config = Config.resolve(env={}, config_file=str(path))
    built = evaluation_config(config)
    assert [e.name for e in built.evaluators or ()] == ["looping", "tokens_presence"]
    assert isinstance(built.sampler, Sampler) and built.sampler.rate == 0.5
    assert built.sources == config.sources
    again = evaluation_config(built)
    assert again.evaluators == built.evaluators and again.sampler is built.sampler


def test_the_runtime_checks_names_from_code_and_the_environment() -> None:
    from ragtrace._config import ConfigError

    with pytest.raises(
        ConfigError,
        match=r"^ragtrace config: evaluators: unknown evaluator 'lopin'",
    ):
        evaluation_config(Config.resolve(env={}, evaluators=["lopin"]))
    with pytest.raises(ConfigError, match="RAGTRACE_EVALUATORS: unknown evaluator 'lopin'"):
        evaluation_config(Config.resolve(env={"RAGTRACE_EVALUATORS": "looping,lopin"}))
    assert evaluation_config(Config.resolve(env={}, evaluators=["looping"])).evaluators == (
        "looping",
    )
