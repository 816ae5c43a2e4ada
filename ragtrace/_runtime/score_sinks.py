"""Every score sink a ``Ragtrace`` publishes to, built from its ``Config`` in one place.

``ragtrace.init``, ``ragtrace worker`` and ``ragtrace ingest`` all build a ``Ragtrace``, and
its sinks come from ``build_score_sinks`` alone, in this order:

- the built-in sinks of the catalogue ``BUILT_IN``: each sink module's ``from_config(config,
  context)``, which builds its sink when its option asks for one (None otherwise): Prometheus
  (always), OpenTelemetry log events or evaluation spans (``Config.evaluation_results``),
  Phoenix span annotations (``Config.phoenix_endpoint``), the review store
  (``Config.review_db``). A line that names its option is loaded only when that option is set,
  so a process without Phoenix or a review store never imports them;
- the sinks given in code (``init(score_sinks=[...])``);
- your own sinks, ``Config.sinks``: ``module:Class`` import paths, each class imported and
  built with no arguments (``load_sink``), last, so each sees a record once every other sink
  took it.

A built-in sink is therefore its module (with ``from_config``), one declared option (with its
``flag=Flag(...)`` for the services' command line) and its ``BuiltInSink`` line in
``BUILT_IN``: nothing here branches on a sink. ``SinkContext`` (``ragtrace._exporters.base``)
carries what the runtime owns and a sink may need: metrics, redaction, tracer, logger, delivery
confirmation.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from ragtrace._config import Config, ConfigError
from ragtrace._exporters.base import Flushes, ScoreSink, SinkContext, SinkFactory


@dataclass(frozen=True)
class BuiltInSink:
    """One line of the catalogue of built-in sinks.

    Attributes:
        option: The ``Config`` option that asks for the sink: while it is unset (None, empty)
            the factory is not even imported. None: always asked (the factory decides alone).
        factory: The import path of its ``from_config(config, context) -> ScoreSink | None``.
    """

    option: str | None
    factory: str

    def build(self, config: Config, context: SinkContext) -> ScoreSink | None:
        """The sink, or None when its option is not set."""
        if self.option is not None and not getattr(config, self.option):
            return None
        module, _, name = self.factory.partition(":")
        factory = cast("SinkFactory", getattr(importlib.import_module(module), name))
        return factory(config, context)


BUILT_IN: tuple[BuiltInSink, ...] = (
    BuiltInSink(None, "ragtrace._exporters.prometheus:from_config"),
    BuiltInSink(None, "ragtrace._exporters.otel_logs:from_config"),  # by the results mode
    BuiltInSink(None, "ragtrace._exporters.otel:from_config"),  # by the results mode
    BuiltInSink("phoenix_endpoint", "ragtrace._exporters.phoenix:from_config"),
    BuiltInSink("review_db", "ragtrace.review._sink:from_config"),
)
"""The built-in sinks, in the order a record reaches them."""

SINK_METHODS = ("export", "shutdown")
"""What an object needs to be a ``ScoreSink`` (the protocol's methods)."""


def results_mode(config: Config, export_evaluation_spans: bool | None) -> str:
    """``logs``, ``spans``, ``both`` or ``none``: code's ``export_evaluation_spans`` (False:
    none; True: spans too) beats ``Config.evaluation_results``."""
    mode = config.evaluation_results
    if export_evaluation_spans is False:
        return "none"
    if export_evaluation_spans is True:
        return "both" if mode in ("logs", "both") else "spans"
    return mode


@dataclass(frozen=True)
class BuiltSinks:
    """The sinks of one ``Ragtrace``.

    Attributes:
        all: Every sink, in the order a record reaches them.
        held: The built-in ones that hold what they were given until they send it
            (``Flushes``: Phoenix), flushed by ``Ragtrace.flush``.
        built: Those made here (built-in and ``Config.sinks``), not the ones given in code.
    """

    all: tuple[ScoreSink, ...]
    held: tuple[Flushes, ...]
    built: tuple[ScoreSink, ...]


def build_score_sinks(
    config: Config, context: SinkContext, given: Sequence[ScoreSink] = ()
) -> BuiltSinks:
    """The sinks a ``Ragtrace`` publishes every evaluated record to (see the module docstring).

    Raises:
        ConfigError: A path of ``Config.sinks`` that does not import, names no class, whose
            class cannot be built with no arguments or builds no ``ScoreSink`` (one line,
            naming the path); a review store that cannot be opened (naming it).
        ImportError: A built-in sink's package is missing (PostgreSQL's psycopg).

    Whatever is raised, the sinks built before are shut down.
    """
    built_in: list[ScoreSink] = []
    own: list[ScoreSink] = []
    try:
        for line in BUILT_IN:
            sink = line.build(config, context)
            if sink is not None:
                built_in.append(sink)
        for path in config.sinks:
            own.append(load_sink(path))
    except Exception:
        for sink in (*built_in, *own):
            sink.shutdown()
        raise
    return BuiltSinks(
        all=(*built_in, *given, *own),
        held=tuple(s for s in built_in if isinstance(s, Flushes)),
        built=(*built_in, *own),
    )


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
