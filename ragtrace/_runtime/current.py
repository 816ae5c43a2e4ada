"""The process-wide current ``Ragtrace``: ``init`` makes one, ``current`` finds or creates it.

Integrations created without an explicit instance use ``current()``, which initialises one from
the environment on first use. An instance that shuts down stops being current.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from prometheus_client import CollectorRegistry

from ragtrace._config import Config, Redactor
from ragtrace._exporters.base import ScoreSink
from ragtrace._metrics.endpoint import MetricsServer
from ragtrace._pipeline import PipelineOptions
from ragtrace._pipeline.sampling import Sampler
from ragtrace._redaction.current import set_current_policy
from ragtrace._runtime.evaluation_settings import start_config
from ragtrace._runtime.instance import Ragtrace
from ragtrace.evaluators._base import Evaluator

_lock = threading.Lock()
_current: Ragtrace | None = None


def _make_current(instance: Ragtrace) -> Ragtrace:
    global _current
    with _lock:
        _current = instance
        set_current_policy(instance.redaction)  # for sinks given no policy of their own
    instance.on_shutdown(_forget)
    return instance


def _forget(instance: Ragtrace) -> None:
    global _current
    with _lock:
        if _current is instance:
            _current = None
            set_current_policy(None)


def init(
    app: str | None = None,
    *,
    tracer_provider: trace.TracerProvider | None = None,
    logger_provider: object | None = None,
    registry: CollectorRegistry | None = None,
    capture_content: bool | None = None,
    redact: str | Redactor | None = None,
    evaluators: Sequence[Evaluator | str] | None = None,
    sampler: Sampler | None = None,
    pipeline_options: PipelineOptions | None = None,
    score_sinks: Sequence[ScoreSink] = (),
    export_evaluation_spans: bool | None = None,
    **options: Any,
) -> Ragtrace:
    """Start ragtrace for an application and make it the current instance.

    Args:
        app: Application name on every span, record and metric (``RAGTRACE_APP``).
        tracer_provider: Where spans go; default: the global SDK provider if one is set, else
            a private provider (exporting OTLP/HTTP when ``otlp_endpoint`` is configured).
        logger_provider: Where evaluation results go as ``gen_ai.evaluation.result`` log
            events (an OpenTelemetry SDK ``LoggerProvider``); default: the global SDK logger
            provider if one is set, else a private one (exporting OTLP/HTTP logs when
            ``otlp_endpoint`` is configured).
        registry: Prometheus registry for ragtrace's metrics (default: the global one).
        capture_content: Put query, chunk text, prompts and answers on spans (default True).
        redact: The redaction policy every text goes through before it leaves the process
            (``RAGTRACE_REDACT``, the file's ``redact``): ``"none"``, ``"secrets"``,
            ``"pii"``, or a function ``str -> str`` (docs/data-safety.md).
        evaluators: Evaluators (objects or registered names) run on sampled requests
            (``Config.evaluators``). Default: the online suite when its local models are
            installed, its model-backed members within a quarter of one core
            (``model_cpu_share``), else its lexical checks; a line logged at start (INFO, logger
            ``ragtrace``) says which, and how to install the rest.
        sampler: Which requests each evaluator sees (default: every one, no limits).
        pipeline_options: Queue size, workers, batching, all at once (or give ``workers``,
            ``queue_size``, ... one by one as options).
        score_sinks: More places for evaluation results, beside Prometheus, OpenTelemetry and
            Phoenix (sink objects; ``sinks=["module:Class"]``, a ``Config`` option, names
            classes to build instead).
        export_evaluation_spans: False: no OpenTelemetry evaluation results at all; True:
            evaluation spans (traces of their own, linked to the request's span) beside what
            ``evaluation_results`` says; default: ``evaluation_results`` (log events).
        **options: Any other ``Config`` field (``max_chunk_chars``, ``config_file``,
            ``metrics_port``, ``shutdown_timeout_s``, ``evaluation_results``,
            ``phoenix_endpoint``, ...).

    One rule for every option, key by key: an explicit argument (not None) beats its
    ``RAGTRACE_*`` environment variable, which beats the settings file (``config_file``), which
    beats the default (``Config.resolve``). Calling ``init`` again shuts the previous instance
    down first.

    A ``metrics_port`` that cannot be bound never fails ``init``: it is logged and counted, or,
    in multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``), another worker serves every worker's
    metrics there (docs/multiprocess.md). An ``init`` that raises leaves nothing behind, so the
    next one works.

    Raises:
        ConfigError: Unknown options or bad values, each named with its value (a ValueError,
            and a TypeError for callers that caught one).
        SettingsError: The settings file cannot be read or has bad values (all of them).
    """
    config = start_config(
        app=app,
        capture_content=capture_content,
        redact=redact,
        evaluators=evaluators,
        sampler=sampler,
        **options,
    )
    with _lock:
        previous = _current
    if previous is not None:
        previous.shutdown()
    instance = Ragtrace(
        config,
        tracer_provider=tracer_provider,
        logger_provider=logger_provider,
        registry=registry,
        pipeline_options=pipeline_options,
        score_sinks=score_sinks,
        export_evaluation_spans=export_evaluation_spans,
    )
    return _make_current(instance)


def current() -> Ragtrace:
    """The current instance, initialised from the environment if ``init`` was not called."""
    global _current
    instance = _current
    if instance is not None:
        return instance
    with _lock:
        if _current is not None:
            return _current
        instance = _current = Ragtrace(Config.resolve())
        set_current_policy(instance.redaction)
    instance.on_shutdown(_forget)
    return instance


def get_current() -> Ragtrace | None:
    """The current instance, or None when ``init`` has not been called."""
    return _current


def start_metrics_server_for_current(port: int = 9464, addr: str = "127.0.0.1") -> MetricsServer:
    """Serve the current instance's metrics at ``http://addr:port/metrics``."""
    return current().start_metrics_server(port, addr)


def end_session(session_id: str) -> bool:
    """Score conversation ``session_id`` of the current instance now, as a whole, rather than
    when it goes quiet (``Config.session_idle_s``). With records shipped to ``ragtrace worker``
    processes (``queue_url``) this writes an end mark in the queue's Redis (within the queue's
    ``timeout_s``) and the workers score the session about 2 s later, once its last turns have
    arrived. False when ``init`` was not called, when sessions are off, when none of that id is
    open in this process, or when the end mark could not be written (counted in
    ``ragtrace_dropped_records_total{reason="session_end_failed"}``). Never raises."""
    instance = _current
    return instance is not None and instance.end_session(session_id)
