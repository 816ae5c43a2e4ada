"""Every score sink a ``Ragtrace`` publishes to, built from its ``Config`` in one place.

``ragtrace.init``, ``ragtrace worker`` and ``ragtrace ingest`` all build a ``Ragtrace``, and
its sinks come from ``build_score_sinks`` alone, in this order:

- Prometheus, always (``PrometheusSink`` over the instance's metrics);
- OpenTelemetry log events or evaluation spans (``Config.evaluation_results``) and Phoenix span
  annotations (``Config.phoenix_endpoint``), as ``ResultChannels`` chose them;
- the sinks given in code (``init(score_sinks=[...])``; the services' review store);
- your own sinks, ``Config.sinks``: ``module:Class`` import paths, each class imported and
  built with no arguments (``load_sink``), last, so each sees a record once every other sink
  took it.

A command-line flag of the services only sets a ``Config`` option (``--phoenix-endpoint``,
``--sink``, ...: one ``ragtrace._config.arguments.option_flag`` line each), so a built-in sink
is its module, one declared option, the line here (or in ``ResultChannels``) that builds it
when the option is set, and its flag.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from ragtrace._config import Config, ConfigError
from ragtrace._exporters.base import ScoreSink
from ragtrace._exporters.prometheus import PrometheusSink
from ragtrace._metrics.collection import Metrics
from ragtrace._runtime.result_channels import ResultChannels

SINK_METHODS = ("export", "shutdown")
"""What an object needs to be a ``ScoreSink`` (the protocol's methods)."""


def build_score_sinks(
    config: Config, metrics: Metrics, results: ResultChannels, given: Sequence[ScoreSink] = ()
) -> list[ScoreSink]:
    """The sinks a ``Ragtrace`` publishes every evaluated record to (see the module docstring).

    Raises:
        ConfigError: A path of ``Config.sinks`` that does not import, names no class, whose
            class cannot be built with no arguments or builds no ``ScoreSink`` (one line,
            naming the path); the sinks built before it are shut down.
    """
    own: list[ScoreSink] = []
    try:
        for path in config.sinks:
            own.append(load_sink(path))
    except ConfigError:
        for sink in own:
            sink.shutdown()
        raise
    return [PrometheusSink(metrics), *results.sinks, *given, *own]


def load_sink(path: str) -> ScoreSink:
    """Import ``module:Class`` and build it with no arguments.

    Raises:
        ConfigError: It does not import, names no class, cannot be built with no arguments, or
            what it builds lacks ``export`` or ``shutdown``.
    """
    module_name, _, attribute = path.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # an ImportError, or whatever the module raised at import
        raise _refused(path, f"does not import ({type(exc).__name__}: {exc})") from None
    for name in attribute.split("."):
        if not hasattr(target, name):
            raise _refused(path, f"names nothing (module {module_name!r} has no {name!r})")
        target = getattr(target, name)
    if not isinstance(target, type):
        raise _refused(path, f"is a {type(target).__name__}, not a class")
    try:
        sink = target()
    except Exception as exc:
        raise _refused(
            path, f"cannot be built with no arguments ({type(exc).__name__}: {exc})"
        ) from None
    missing = [m for m in SINK_METHODS if not callable(getattr(sink, m, None))]
    if missing:
        methods = " and ".join(f"{m}()" for m in missing)
        raise _refused(path, f"is not a ragtrace.ScoreSink: it has no {methods} method")
    return sink  # type: ignore[no-any-return]


def _refused(path: str, why: str) -> ConfigError:
    return ConfigError([f"sinks: {path} {why}"])
