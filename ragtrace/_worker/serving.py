"""What the two evaluation services, ``ragtrace worker`` and ``ragtrace ingest``, share: the
``Config`` they run with, the options of their own they take alike, and how their flags resolve
(their ``/metrics`` endpoint with the health probes:
``ragtrace._metrics.endpoint.serve_configured_metrics``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace._config import Config
from ragtrace._metrics.endpoint import check_configured_metrics
from ragtrace._runtime.evaluation_settings import start_config
from ragtrace._worker.evaluator_names import named_evaluators


def service_config(app: str, evaluators: Sequence[str] | None = None, **explicit: Any) -> Config:
    """The ``Config`` a service runs with, named ``app`` on its own telemetry (records keep
    their application's name): each of ``explicit`` (a flag; None: not given) > ``RAGTRACE_*`` >
    the settings file (``config_file``) > default. ``evaluators`` are names (``--evaluators``),
    built here so that one that needs options says how to give them.

    Raises:
        ValueError: A bad option, evaluator name or settings file.
    """
    built = named_evaluators(evaluators) if evaluators is not None else None
    return start_config(app=app, evaluators=built, **explicit)


def evaluating_share(config: Config) -> float:
    """The model-backed evaluators' share of a core in a service: ``model_cpu_share`` when it
    is set, else no limit (0): a service's process exists to evaluate, unlike an application's,
    where the default evaluators get a quarter of a core."""
    return 0.0 if config.model_cpu_share is None else config.model_cpu_share


@dataclass(frozen=True)
class ServiceOptions:
    """How a service runs: its ``Config`` and what both services alone take.

    Attributes:
        config: The options it shares with the rest of ragtrace (each service's default:
            ``service_config``'s, from ``RAGTRACE_*`` and the settings file they name). Both
            read ``config_file``, ``evaluators``, ``queue_url``, ``redact`` (the policy
            every record, dead letter and result goes through before anything is written or
            sent), ``metrics_port`` (``/metrics`` and the health probes; none by default),
            ``metrics_addr``, ``metrics_token``, ``metrics_allow_unauthenticated``,
            ``otlp_endpoint`` (evaluation results as ``gen_ai.evaluation.result`` log events on
            each request's own trace and span), ``phoenix_endpoint`` and ``max_app_labels``. A
            metrics endpoint beyond loopback with neither a token nor
            ``metrics_allow_unauthenticated`` is refused when the options are built.
        drain_timeout_s: On stop, how long to wait for the records being evaluated.

    Raises:
        ValueError: The metrics endpoint is refused.
    """

    config: Config
    drain_timeout_s: float = 20.0

    def __post_init__(self) -> None:
        check_configured_metrics(self.config)
