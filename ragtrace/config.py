"""Settings: an explicit argument beats a ``RAGTRACE_*`` environment variable beats the default.

``Config.resolve(app="shop")`` reads the environment once; every field below can also be set
as ``RAGTRACE_<FIELD NAME IN CAPITALS>`` (booleans: 1/0/true/false/yes/no/on/off; tuples:
comma-separated). A bad value raises ``ValueError`` naming the variable and what it expects.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

Redactor = Callable[[str], str]

ENV_PREFIX = "RAGTRACE_"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
EVALUATION_RESULTS = ("logs", "spans", "both", "none")


@dataclass(frozen=True)
class Config:
    """How ragtrace captures requests.

    Attributes:
        app: Application name, on every span and record (``RAGTRACE_APP``).
        capture_content: Whether query, chunk text, prompts and answer are put on spans. Records
            still carry them for evaluators; ``redact`` applies to both.
        redact: A function applied to every captured text before it leaves the request path.
        max_chunk_chars: Longest chunk text kept; longer text is cut and the cut is marked.
        max_text_chars: Longest query, answer or prompt message kept.
        max_chunks: Most chunks kept per retriever call; the rest are counted as dropped.
        max_metadata_chars: Longest JSON of one chunk's metadata kept.
        query_keys: Keys looked up, in order, in a dict input to find the user's query.
        answer_keys: Keys looked up, in order, in a dict output to find the answer.
        chunk_id_keys: Metadata keys that may hold a chunk id when the document has none.
        chunk_score_keys: Metadata keys that may hold the retriever's score.
        dedupe_prompt_chunks: Replace chunk text repeated in LLM prompts by a reference
            (``[ragtrace.chunk:N]``). Off by default: a prompt then replays with its context
            in a trace UI's playground, at the cost of the chunk text being on the LLM span too.
        request_timeout_s: A request whose end never arrives is closed as ``incomplete`` after
            this long.
        max_open_requests: Most requests tracked at once; beyond it the oldest is closed.
        otlp_endpoint: When set and no tracer (or logger) provider is given, spans (and
            evaluation log events) are exported there with OTLP/HTTP (``http://host:4318``).
        evaluators: Names of the evaluators to run when none are passed in code or in the
            settings file (``RAGTRACE_EVALUATORS=looping,tokens_presence``; empty for none).
        config_file: A YAML or TOML settings file (evaluators with options, sampling, pipeline,
            sinks); see ``ragtrace.settings``.
        metrics_port: Serve Prometheus ``/metrics`` on this port (0 picks a free one).
        metrics_addr: Address of that endpoint (loopback unless you open it up).
        queue_url: Ship sampled records to this Redis stream for ``ragtrace worker`` processes
            instead of evaluating them here (``redis://host:6379/0``; query parameters set the
            stream, backlog cap and the rest, see ``ragtrace.pipeline.queues.redis_options``).
        shutdown_timeout_s: The longest ``shutdown()`` and the exit hook take, whatever the
            exporters, the judge or the stores do; what was not sent by then is counted.
        evaluation_results: Where evaluation results go through OpenTelemetry: ``logs`` (one
            ``gen_ai.evaluation.result`` log event per score, on the evaluated request's trace
            and span id; the default), ``spans`` (evaluation spans in their own trace, linked
            to the request's span), ``both``, or ``none``.
        evaluation_spans: When evaluation spans are written, how many: ``evaluator`` (one span
            per evaluator run), ``score`` (one span per score) or ``record`` (one span per
            record); see ``ragtrace.exporters.otel``.
        phoenix_endpoint: Also post every score as an Arize Phoenix span annotation on the
            request's root span, through Phoenix's REST API at this base URL
            (``http://phoenix:6006``); see ``ragtrace.exporters.phoenix``.
        phoenix_api_key: Sent as ``Authorization: Bearer ...`` to a Phoenix with
            authentication on (``RAGTRACE_PHOENIX_API_KEY``).
        direct_spans: Hand a request's finished spans straight to the OpenTelemetry SDK's span
            processors when none of them acts as a span starts (the SDK's batch and simple
            processors, ragtrace's own; ``ragtrace.capture.span_writers``): the same spans,
            several times cheaper than the SDK's span API. Off, or with any other processor
            registered, every span goes through ``Tracer.start_span``
            (``RAGTRACE_DIRECT_SPANS=0``).
    """

    app: str = "default"
    capture_content: bool = True
    redact: Redactor | None = None
    max_chunk_chars: int = 4000
    max_text_chars: int = 16000
    max_chunks: int = 50
    max_metadata_chars: int = 2000
    query_keys: tuple[str, ...] = ("query", "question", "input", "q", "user_input", "message")
    answer_keys: tuple[str, ...] = ("answer", "output", "result", "text", "response")
    chunk_id_keys: tuple[str, ...] = ("id", "doc_id", "document_id", "chunk_id", "node_id", "_id")
    chunk_score_keys: tuple[str, ...] = (
        "score",
        "relevance_score",
        "similarity_score",
        "similarity",
        "rerank_score",
        "_score",
    )
    dedupe_prompt_chunks: bool = False
    request_timeout_s: float = 600.0
    max_open_requests: int = 10000
    otlp_endpoint: str | None = None
    evaluators: tuple[str, ...] = ("looping",)
    config_file: str | None = None
    metrics_port: int | None = None
    metrics_addr: str = "127.0.0.1"
    queue_url: str | None = None
    shutdown_timeout_s: float = 5.0
    evaluation_results: str = "logs"
    evaluation_spans: str = "evaluator"
    phoenix_endpoint: str | None = None
    phoenix_api_key: str | None = None
    direct_spans: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.metrics_port, str):
            try:
                object.__setattr__(self, "metrics_port", int(self.metrics_port))
            except ValueError:
                raise ValueError(
                    f"ragtrace config: metrics_port must be an integer, got {self.metrics_port!r}"
                ) from None
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise ValueError(f"ragtrace config: metrics_port out of range: {self.metrics_port}")
        for name in ("max_chunk_chars", "max_text_chars", "max_chunks", "max_metadata_chars"):
            if getattr(self, name) < 1:
                raise ValueError(f"ragtrace config: {name} must be >= 1, got {getattr(self, name)}")
        if self.request_timeout_s <= 0:
            raise ValueError("ragtrace config: request_timeout_s must be > 0")
        if not self.shutdown_timeout_s >= 0:
            raise ValueError(
                f"ragtrace config: shutdown_timeout_s must be >= 0, got {self.shutdown_timeout_s}"
            )
        if self.evaluation_spans not in ("evaluator", "score", "record"):
            raise ValueError(
                "ragtrace config: evaluation_spans must be evaluator, score or record, "
                f"got {self.evaluation_spans!r}"
            )
        if self.evaluation_results not in EVALUATION_RESULTS:
            raise ValueError(
                "ragtrace config: evaluation_results must be one of "
                f"{', '.join(EVALUATION_RESULTS)}, got {self.evaluation_results!r}"
            )
        if self.phoenix_endpoint is not None and not self.phoenix_endpoint.startswith(
            ("http://", "https://")
        ):
            raise ValueError(
                "ragtrace config: phoenix_endpoint must be an http:// or https:// URL "
                f"(Phoenix's base URL, http://host:6006), got {self.phoenix_endpoint!r}"
            )
        if self.max_open_requests < 1:
            raise ValueError("ragtrace config: max_open_requests must be >= 1")
        if self.redact is not None and not callable(self.redact):
            raise TypeError("ragtrace config: redact must be a callable str -> str")
        if not self.app or not isinstance(self.app, str):
            raise ValueError("ragtrace config: app must be a non-empty string")

    @classmethod
    def resolve(cls, env: Mapping[str, str] | None = None, **explicit: Any) -> Config:
        """Build a Config from explicit arguments (None means unset), the environment, defaults.

        Raises:
            TypeError: An unknown argument name.
            ValueError: A bad value, naming the argument or environment variable.
        """
        env = os.environ if env is None else env
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(explicit) - set(known))
        if unknown:
            raise TypeError(f"ragtrace config: unknown option(s) {unknown}; known: {sorted(known)}")
        values: dict[str, Any] = {}
        for name, f in known.items():
            if explicit.get(name) is not None:
                values[name] = explicit[name]
                continue
            raw = env.get(ENV_PREFIX + name.upper())
            if raw is not None and name != "redact":
                values[name] = _parse_env(ENV_PREFIX + name.upper(), raw, f.default)
        return cls(**values)

    def replace(self, **changes: Any) -> Config:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)


def _parse_env(var: str, raw: str, default: Any) -> Any:
    text = raw.strip()
    try:
        if isinstance(default, bool):
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise ValueError("expected one of 1/0/true/false/yes/no/on/off")
        if isinstance(default, int):
            return int(text)
        if isinstance(default, float):
            return float(text)
        if isinstance(default, tuple):
            return tuple(part.strip() for part in text.split(",") if part.strip())
        return text or None
    except ValueError as exc:
        raise ValueError(f"ragtrace config: environment variable {var}={raw!r}: {exc}") from None
