"""One rule for every bad setting: whatever the option and its source, it stops the start.

Every declared option gets a bad value for each source it has (code, its ``RAGTRACE_*``
variable, the settings file, the command-line flag that reads text as the variable does),
checked in this process through the functions the commands call (``Config.resolve`` on the
environment, the settings file, ``option_value`` for flags). Then every command that reads
settings runs as a real process with a few representative bad values per source: each must exit
2 with exactly one line on stderr, before it starts any server.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._config import Config, ConfigError, SettingsError, options
from ragtrace._config.arguments import one_line, option_value
from ragtrace._runtime.evaluation_settings import start_config

NAN, INF = math.nan, math.inf
NONE: Any = object()
"""No bad value of this kind exists for this source (an API key may be any text)."""


# option -> (bad variable text, bad settings-file value, bad value in code)
BAD: dict[str, tuple[str, Any, Any]] = {
    "app": ("\x01", 5, ""),
    "capture_content": ("maybe", "maybe", "maybe"),
    "redact": ("pi", "pi", "pi"),
    "raw_text_evaluators": ("pii_leakage,\x01", [""], ["pii_leakage", ""]),
    "max_chunk_chars": ("0", 0, 0),
    "max_text_chars": ("nan", -1, 0.5),
    "max_chunks": ("inf", NAN, "many"),
    "max_metadata_chars": ("-3", "2000", -3),
    "query_keys": ("q,\x01", "q", [""]),
    "answer_keys": ("\x7f", [3], [""]),
    "session_id_keys": ("a,\x02", [""], 5),
    "user_id_keys": ("\x03", [None], [""]),
    "max_history_turns": ("-1", -1, NAN),
    "chunk_id_keys": ("\x04", [""], [""]),
    "chunk_score_keys": ("\x05", [""], [""]),
    "dedupe_prompt_chunks": ("2", 2, "perhaps"),
    "request_timeout_s": ("nan", 0, INF),
    "max_open_requests": ("0", 0, -1),
    "direct_spans": ("nope", "nope", "nope"),
    "evaluators": ("looping,nope", ["nope"], ["nope"]),
    "sampler": (NONE, {"rate": NAN}, "every other one"),
    "queue_size": ("nan", NAN, 0),
    "workers": ("0", 0, "nan"),
    "batch_wait_s": ("0", -1.0, NAN),
    "processes": ("-1", -1, INF),
    "shared_cache_mb": ("inf", -1, NAN),
    "model_cpu_share": ("-0.25", NAN, "a quarter"),
    "passage_store": ("\x06", "", ""),
    "session_idle_s": ("-1", NAN, "soon"),
    "session_evaluators": ("knowledge_retention,\x01", [""], [""]),
    "max_open_sessions": ("0", -5, 0.5),
    "max_session_turns": ("inf", 0, "many"),
    "queue_url": (
        "redis://127.0.0.1:1/0?reclaim_idle_s=nan",
        "redis://127.0.0.1:1/0?stremm=x",
        "http://127.0.0.1:1/0",
    ),
    "ingest_max_in_flight": ("0", 0, NAN),
    "otlp_endpoint": ("collector:4318", "ftp://collector", "http://"),
    "evaluation_results": ("bogus", "bogus", "bogus"),
    "evaluation_spans": ("bogus", "bogus", "bogus"),
    "phoenix_endpoint": ("phoenix:6006", "ftp://phoenix", "http://"),
    "phoenix_api_key": (NONE, NONE, 5),
    "sinks": ("shop.sinks", ["shop.sinks:Audit", "a b:C"], ["shop.sinks:"]),
    "review_db": ("\x0e", "", "\x0f"),
    "metrics_port": ("65536", -1, "nan"),
    "metrics_addr": ("bad host!", "", "a b"),
    "metrics_token": ("\x07", NONE, ""),
    "metrics_allow_unauthenticated": ("maybe", "maybe", "maybe"),
    "max_app_labels": ("0", 0, NAN),
    "judge_port": ("70000", 70000, -1),
    "shutdown_timeout_s": ("nan", -3, INF),
    "config_file": ("\x08", NONE, ""),
}


def test_every_declared_option_has_bad_values_here() -> None:
    """A new option gets its bad values here, so the tests below cover it."""
    assert list(BAD) == [o.name for o in options(Config)]
    for opt in options(Config):
        text, in_file, _ = BAD[opt.name]
        assert (text is NONE) == (opt.env is None) or opt.name == "phoenix_api_key", opt.name
        assert opt.file is not None or in_file is NONE, opt.name


def _file_with(key: str, value: Any) -> dict[str, Any]:
    *sections, last = key.split(".")
    data: dict[str, Any] = {last: value}
    for section in reversed(sections):
        data = {section: data}
    return data


@pytest.mark.parametrize("opt", options(Config), ids=lambda o: o.name)
def test_a_bad_value_stops_the_start_from_every_source(opt: Any, tmp_path: Path) -> None:
    text, in_file, in_code = BAD[opt.name]
    with pytest.raises(ConfigError) as from_code:
        start_config(env={}, **{opt.name: in_code})
    (problem,) = from_code.value.problems
    assert problem.startswith(f"{opt.name}: "), problem
    if opt.env is not None and text is not NONE:
        with pytest.raises(ConfigError) as from_env:
            start_config(env={opt.env: text})
        (problem,) = from_env.value.problems
        assert problem.startswith(f"{opt.env}: "), problem
        assert "\n" not in one_line(from_env.value)
        # A good explicit value does not hide a bad variable: each source is checked whole.
        if opt.default is not None:
            with pytest.raises(ConfigError, match=opt.env):
                start_config(env={opt.env: text}, **{opt.name: opt.default})
        # The command-line flag of this option reads its text as the variable is read. An
        # evaluator name is known to be wrong only when the runtime builds it (above).
        if opt.name != "evaluators":
            with pytest.raises(argparse.ArgumentTypeError):
                option_value(opt.name)(text)
    if opt.file is not None and in_file is not NONE:
        path = tmp_path / "ragtrace.yaml"
        path.write_text(yaml.safe_dump(_file_with(opt.file, in_file)))
        with pytest.raises(SettingsError) as from_file:
            start_config(env={}, config_file=str(path))
        (error,) = from_file.value.errors
        assert error.startswith(f"{path}: {opt.file}"), error


def test_init_raises_for_a_bad_variable_and_leaves_nothing_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAGTRACE_SHUTDOWN_TIMEOUT_S", "nan")
    with pytest.raises(ConfigError, match=r"RAGTRACE_SHUTDOWN_TIMEOUT_S: .*\(must be >= 0\)"):
        ragtrace.init(registry=CollectorRegistry(), evaluators=[])
    assert ragtrace.get_current() is None
    monkeypatch.delenv("RAGTRACE_SHUTDOWN_TIMEOUT_S")
    with pytest.raises(ConfigError, match="shutdown_timeout_s: "):
        ragtrace.init(registry=CollectorRegistry(), evaluators=[], shutdown_timeout_s=-3)


# --- the commands, as real processes ---------------------------------------------------------

QUEUE = "redis://127.0.0.1:1/0"  # nothing listens there: a command that got past its
# settings would fail in other words, or hang until the timeout


def _commands(tmp: Path) -> dict[str, tuple[list[str], bool, list[tuple[list[str], str]]]]:
    """Command -> (its arguments, whether it takes --config, bad flags with what names them)."""
    data = tmp / "in.jsonl"
    data.write_text('{"query": "q", "response": "r", "contexts": ["c"]}\n')
    eval_args = ["eval", "-i", str(data), "-o", str(tmp / "out.jsonl"), "-e", "looping"]
    return {
        "worker": (
            ["worker", "--queue", QUEUE],
            True,
            [
                (["--reclaim-idle-s", "nan"], "--reclaim-idle-s"),
                (["--max-apps", "0"], "--max-apps"),
                (["--sink", "shop.sinks"], "--sink"),
                (["--sink", "no_such_module:Sink"], "sinks: no_such_module:Sink does not import"),
            ],
        ),
        "ingest": (
            ["ingest", "--listen", "127.0.0.1:0"],
            True,
            [
                (["--quiet-s", "-1"], "--quiet-s"),
                (["--metrics-port", "70000"], "--metrics-port"),
                (["--sink", "no_such_module:Sink"], "sinks: no_such_module:Sink does not import"),
            ],
        ),
        "eval": (eval_args, True, [(["--workers", "0"], "--workers")]),
        "queue": (
            ["queue", "stats"],
            False,
            [(["--queue", f"{QUEUE}?max_deliveries=0"], "--queue")],
        ),
        "review": (
            ["review", "serve", "--db", str(tmp / "review.db"), "--port", "0"],
            False,
            [(["--port", "70000"], "--port")],
        ),
        "judge": (
            ["judge", "serve", "--port", "0"],
            False,
            [(["--parallel", "inf"], "--parallel")],
        ),
        "config": (["config", "show"], True, [(["--config", ""], "--config")]),
    }


ENVIRONMENTS = [
    ("RAGTRACE_SHUTDOWN_TIMEOUT_S", "nan"),
    ("RAGTRACE_QUEUE_SIZE", "nan"),
    ("RAGTRACE_SHUTDOWN_TIMEOUT_S", "-3"),
    ("RAGTRACE_REQUEST_TIMEOUT_S", "inf"),
    ("RAGTRACE_EVALUATION_RESULTS", "bogus"),
    ("RAGTRACE_QUEUE_URL", f"{QUEUE}?reclaim_idle_s=nan"),  # a parameter of the URL
]


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, list[str]]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAGTRACE_")}
    done = subprocess.run(
        [sys.executable, "-m", "ragtrace", *argv],
        capture_output=True,
        text=True,
        timeout=60,  # a command that started serving instead of stopping fails here
        env={**clean, **env},
        cwd=cwd,
        check=False,
    )
    return done.returncode, done.stderr.splitlines()


@pytest.mark.parametrize(
    "command", ["worker", "ingest", "eval", "queue", "review", "judge", "config"]
)
def test_every_command_that_reads_settings_stops_on_a_bad_one_in_one_line(
    command: str, tmp_path: Path
) -> None:
    argv, takes_config, bad_flags = _commands(tmp_path)[command]
    queue = [] if "--queue" in argv or command != "queue" else ["--queue", QUEUE]
    index = ["worker", "ingest", "eval", "queue", "review", "judge", "config"].index(command)
    # Three of the bad variables, a different three for each command (all are covered).
    chosen = [ENVIRONMENTS[(index + i) % len(ENVIRONMENTS)] for i in range(3)]
    if ENVIRONMENTS[-1] not in chosen:
        chosen.append(ENVIRONMENTS[-1])
    cases: list[tuple[list[str], dict[str, str], str]] = [
        ([*argv, *queue], {variable: value}, variable) for variable, value in chosen
    ]
    settings = tmp_path / "ragtrace.yaml"
    settings.write_text("pipeline: {queue_size: .nan}\nshutdown_timeout_s: -3\n")
    one_key = tmp_path / "one.toml"
    one_key.write_text("[sinks]\notel = 'bogus'\n")
    for path in (settings, one_key):
        if takes_config:
            cases.append(([*argv, *queue, "--config", str(path)], {}, str(path)))
        else:
            cases.append(([*argv, *queue], {"RAGTRACE_CONFIG_FILE": str(path)}, str(path)))
    cases += [([*argv, *queue, *flag], {}, names) for flag, names in bad_flags]
    for args, env, names in cases:
        code, lines = _run(args, env, tmp_path)
        assert code == 2, (args, env, lines)
        assert len(lines) == 1, (args, env, lines)
        (line,) = lines
        assert line.startswith(f"ragtrace {command}") and names in line, (args, env, line)
        assert "usage:" not in line and "ignored" not in line, line


def test_index_stops_on_a_bad_settings_file_or_flag_in_one_line(tmp_path: Path) -> None:
    """``ragtrace index`` reads no variables, only the evaluators of its ``--config`` file."""
    data = tmp_path / "passages.jsonl"
    data.write_text('{"id": "1", "text": "hello"}\n')
    settings = tmp_path / "ragtrace.yaml"
    settings.write_text("evaluators: [nope]\n")
    argv = ["index", "--store", str(tmp_path / "store.db"), str(data)]
    for extra, names in [
        (["--config", str(settings)], str(settings)),
        (["--max-chunk-chars", "0"], "--max-chunk-chars"),
        (["--batch-size", "nan"], "--batch-size"),
    ]:
        code, lines = _run([*argv, *extra], {}, tmp_path)
        assert code == 2 and len(lines) == 1 and names in lines[0], (extra, lines)
