"""Numbers on the command line follow the options' rules; a bad setting is one line, exit 2."""

from __future__ import annotations

import argparse

import pytest

from ragtrace._cli import main
from ragtrace._config.arguments import (
    ArgumentParser,
    given_options,
    number,
    option_flag,
    positive,
)


@pytest.mark.parametrize("text", ["nan", "NaN", "inf", "-inf", "Infinity", "1e999"])
def test_no_number_option_takes_nan_or_infinity(text: str) -> None:
    for parse in (positive(float), number(float, 0), number(float, 0, 1, inclusive=True)):
        with pytest.raises(argparse.ArgumentTypeError, match="finite"):
            parse(text)


def test_ranges_are_checked_and_said() -> None:
    assert positive(float)("0.5") == 0.5
    assert positive(int)("3") == 3
    assert number(float, 0, 1, inclusive=True)("1") == 1.0
    with pytest.raises(argparse.ArgumentTypeError, match="must be > 0, got 0"):
        positive(float)("0")
    with pytest.raises(argparse.ArgumentTypeError, match=r"must be >= 0 and <= 1, got 1\.5"):
        number(float, 0, 1, inclusive=True)("1.5")
    with pytest.raises(argparse.ArgumentTypeError, match="must be >= 0 and < 1, got 1"):
        number(float, 0, 1)("1")
    with pytest.raises(argparse.ArgumentTypeError, match=r"expected an integer, got .2\.5."):
        number(int, 0, what="an integer")("2.5")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["worker", "--queue", "redis://127.0.0.1:1/0", "--reclaim-idle-s", "nan"], "finite"),
        (["worker", "--queue", "redis://127.0.0.1:1/0", "--drain-timeout-s", "inf"], "finite"),
        (["ingest", "--drain-timeout-s", "inf"], "finite"),
        (["ingest", "--quiet-s", "nan"], "finite"),
        (["review", "prune", "--max-age-days", "nan"], "finite"),
        (["demo", "--rate", "inf"], "finite"),
    ],
)
def test_a_bad_number_stops_the_command_before_it_starts(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and "usage:" not in err


@pytest.mark.parametrize(
    ("variable", "value", "argv"),
    [
        ("RAGTRACE_QUEUE_URL", "redis://127.0.0.1:1/0?stremm=x", ["queue", "stats"]),
        ("RAGTRACE_QUEUE_URL", "redis://127.0.0.1:1/0?stremm=x", ["ingest"]),
        ("RAGTRACE_REDACT", "pi", ["ingest"]),
        ("RAGTRACE_REDACT", "pi", ["worker", "--queue", "redis://127.0.0.1:1/0"]),
    ],
)
def test_a_bad_setting_is_one_line_and_exit_2(
    variable: str,
    value: str,
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(variable, value)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert variable in err and err.startswith(f"ragtrace {argv[0]}: ")


def test_option_flags_give_the_options_they_set_and_none_when_not_given() -> None:
    parser = ArgumentParser(prog="ragtrace")
    option_flag(parser, "--phoenix-endpoint", "phoenix_endpoint")
    option_flag(parser, "--sink", "sinks", repeatable=True)
    parser.add_argument("--other")
    given = parser.parse_args(["--sink", "a.b:C,d:E", "--sink", "f:G", "--other", "x"])
    assert given_options(given) == {"phoenix_endpoint": None, "sinks": ("a.b:C", "d:E", "f:G")}
    url = "http://phoenix:6006"
    assert given_options(parser.parse_args(["--phoenix-endpoint", url])) == {
        "phoenix_endpoint": url,
        "sinks": None,
    }


FLAG_SAMPLES = {
    "otlp_endpoint": ("http://collector:4318", "http://collector:4318"),
    "phoenix_endpoint": ("http://phoenix:6006", "http://phoenix:6006"),
    "sinks": ("shop.sinks:Audit", ("shop.sinks:Audit",)),
    "review_db": ("/data/review.db", "/data/review.db"),
    "metrics_port": ("9466", 9466),
    "metrics_addr": ("0.0.0.0", "0.0.0.0"),
}
"""Each option declared with a flag: a text for its flag and the value it sets."""


@pytest.mark.parametrize("command", [["worker", "--queue", "redis://q:6379/0"], ["ingest"]])
def test_every_option_declared_with_a_flag_is_a_flag_of_both_services(
    command: list[str],
) -> None:
    """A flag comes from its option's declaration alone (``declared_flags``): given on either
    service, it sets that option, and only it, for ``service_config``."""
    from ragtrace._cli import _parser
    from ragtrace._config import Config, options
    from ragtrace._worker.cli import service_flags

    flagged = {o.name: o.flag for o in options(Config) if o.flag is not None}
    assert set(flagged) == set(FLAG_SAMPLES)
    parser = _parser()
    unset = service_flags(parser.parse_args(command))
    for name, flag in flagged.items():
        assert flag is not None
        text, value = FLAG_SAMPLES[name]
        given = service_flags(parser.parse_args([*command, flag.name, text]))
        assert given == {**unset, name: value}, name
