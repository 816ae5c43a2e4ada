"""``Config``: every option of ragtrace, each declared once, and the one place they are kept.

A ``Config`` checks every value when it is built (also by ``replace``), so one that exists is
valid; ``ragtrace._config.resolve`` builds one from code, the environment and a settings file.

To add an option: add one field here, declared with ``option(default, help, check=...,
file="section.key")`` (``ragtrace._config.options``), and read it where it is used
(``config.<name>``). The environment variable, the settings key, the checks, ``init(<name>=...)``
and the table of docs/configuration.md follow. Give it ``flag=Flag(...)`` and ``ragtrace
worker`` and ``ragtrace ingest`` take a flag that sets it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ragtrace._config.checks import (
    HOST,
    IMPORT_PATHS,
    NAME,
    NAMES,
    PATH,
    PORT,
    REDIS_URL,
    above,
    at_least,
    one_of,
    url,
)
from ragtrace._config.kinds import EVALUATORS, REDACTOR, SAMPLER, EvaluatorLike, SamplerLike
from ragtrace._config.options import ConfigError, Flag, option, options
from ragtrace._config.resolve import resolve
from ragtrace._config.settings_file import DEFAULT_PROMETHEUS_PORT

Redactor = Callable[[str], str]
"""A redaction function (``Config.redact``, ``ragtrace.init(redact=...)``): takes a text, returns
it with what must not leave the process replaced. It must be idempotent (an application and a
worker may both apply it); if it raises or returns something other than a string, the text
becomes ``<redaction failed>``."""
EVALUATION_SPAN_LAYOUTS = ("evaluator", "score", "record")
EVALUATION_RESULTS = ("logs", "spans", "both", "none")


@dataclass(frozen=True)
class Config:
    """How ragtrace captures, evaluates and exports; see the options table in docs/configuration.md.

    Build one with ``Config.resolve(**explicit)`` (code > ``RAGTRACE_*`` > settings file >
    default, key by key) or directly (``Config(app="shop")``: defaults for the rest, no
    environment, no file). ``config.sources`` says where each value came from.
    """

    # --- identity and capture --------------------------------------------------------------
    app: str = option("default", "application name on spans, records and metrics", check=NAME)
    capture_content: bool = option(
        True,
        "put query, chunk text, prompts and answers on spans (ids and scores stay either way)",
        file="capture.content",
    )
    redact: str | Redactor | None = option(
        None,
        "redaction of every text before it leaves the process (spans, records, queue, review "
        "store, results, logs): `none`, `secrets` (keys, tokens, passwords), `pii` (secrets, "
        "e-mail, card, SSN, IBAN, IP, phone), or in code a `str -> str` function (if it raises, "
        "the text becomes `<redaction failed>`); docs/data-safety.md",
        kind=REDACTOR,
    )
    raw_text_evaluators: tuple[str, ...] = option(
        ("pii_leakage", "sensitive_data"),
        "evaluators given the text before redaction, in the process that captured it (leak "
        "detectors must see what the user saw); their scores are redacted like any other. "
        "Never an LLM judge: judges always get the redacted text",
        check=NAMES,
    )
    max_chunk_chars: int = option(
        4000,
        "longest chunk text kept (cuts are listed in `ragtrace.truncated`)",
        check=at_least(1),
        file="capture.max_chunk_chars",
    )
    max_text_chars: int = option(
        16000,
        "longest query, answer or prompt message kept",
        check=at_least(1),
        file="capture.max_text_chars",
    )
    max_chunks: int = option(
        50,
        "chunks kept per retriever call (the rest counted in `ragtrace.retrieval.chunks_dropped`)",
        check=at_least(1),
        file="capture.max_chunks",
    )
    max_metadata_chars: int = option(
        2000,
        "longest JSON of one chunk's metadata",
        check=at_least(1),
        file="capture.max_metadata_chars",
    )
    query_keys: tuple[str, ...] = option(
        ("query", "question", "input", "q", "user_input", "message"),
        "keys looked up, in order, in a dict input to find the user's query",
        check=NAMES,
        file="capture.query_keys",
    )
    answer_keys: tuple[str, ...] = option(
        ("answer", "generation", "output", "result", "text", "response"),
        "keys looked up, in order, in a dict output to find the answer",
        check=NAMES,
        file="capture.answer_keys",
    )
    session_id_keys: tuple[str, ...] = option(
        ("session_id", "thread_id", "conversation_id", "chat_id"),
        "request metadata keys that may hold the conversation's id, in order (LangChain's "
        "`metadata`, where LangGraph also puts `thread_id`, then its `configurable`)",
        check=NAMES,
        file="capture.session_id_keys",
    )
    user_id_keys: tuple[str, ...] = option(
        ("user_id", "user"),
        "request metadata keys that may hold the user's id, in order (LangChain's `metadata`, "
        "then its `configurable`)",
        check=NAMES,
        file="capture.user_id_keys",
    )
    max_history_turns: int = option(
        20,
        "earlier conversation turns kept in a record (the latest; 0: none)",
        check=at_least(0),
        file="capture.max_history_turns",
    )
    chunk_id_keys: tuple[str, ...] = option(
        ("id", "doc_id", "document_id", "chunk_id", "node_id", "_id"),
        "metadata keys that may hold a chunk's id when the document has none",
        check=NAMES,
        file="capture.chunk_id_keys",
    )
    chunk_score_keys: tuple[str, ...] = option(
        ("score", "relevance_score", "similarity_score", "similarity", "rerank_score", "_score"),
        "metadata keys that may hold the retriever's score",
        check=NAMES,
        file="capture.chunk_score_keys",
    )
    dedupe_prompt_chunks: bool = option(
        False,
        "replace chunk text repeated in LLM prompts by references (`[ragtrace.chunk:N]`); off: "
        "a prompt replays with its context in a trace UI's playground",
        file="capture.dedupe_prompt_chunks",
    )
    request_timeout_s: float = option(
        600.0,
        "close a request whose end never arrives as `incomplete` after this many seconds",
        check=above(0),
        file="capture.request_timeout_s",
    )
    max_open_requests: int = option(
        10000,
        "most requests tracked at once; beyond it the oldest is closed",
        check=at_least(1),
        file="capture.max_open_requests",
    )
    direct_spans: bool = option(
        True,
        "hand finished spans straight to span processors that do nothing as a span starts (the "
        "SDK's batch and simple ones, ragtrace's); `false` writes them through "
        "`Tracer.start_span`",
        file="capture.direct_spans",
    )

    # --- evaluation ------------------------------------------------------------------------
    evaluators: tuple[EvaluatorLike | str | Mapping[str, Any], ...] | None = option(
        None,
        "evaluators run on sampled requests. Unset (the default): the online suite when its "
        "local models are installed, its model-backed members within `model_cpu_share`, else "
        "its lexical checks (`looping`, `sensitive_data`, `pii_leakage`), as a line logged at "
        "start says (with how to install the rest). Else names, or in the file entries with "
        "options (`ragtrace._config.settings_file`), built by the runtime; an empty list runs "
        "none",
        kind=EVALUATORS.or_none(),
    )
    sampler: SamplerLike | Mapping[str, Any] | None = option(
        None,
        "which requests each evaluator sees (the file's `sampling` section, built by the "
        "runtime; none: every one)",
        kind=SAMPLER,
        file="sampling",
    )
    queue_size: int = option(
        10000,
        "most records waiting for evaluation; beyond it records are dropped and counted",
        check=at_least(1),
        file="pipeline.queue_size",
    )
    workers: int = option(
        2, "worker threads evaluating records", check=at_least(1), file="pipeline.workers"
    )
    batch_wait_s: float = option(
        0.05,
        "how long a worker waits for the first record of a batch",
        check=above(0),
        file="pipeline.batch_wait_s",
    )
    processes: int = option(
        0,
        "worker processes evaluator calls run in (0: threads of this process)",
        check=at_least(0),
        file="pipeline.processes",
    )
    shared_cache_mb: float = option(
        32.0,
        "size of the cache the worker processes share (0: off)",
        check=at_least(0),
        file="pipeline.shared_cache_mb",
    )
    model_cpu_share: float | None = option(
        None,
        "share of one core the model-backed evaluators may use (CPU time of their calls over "
        "the last 10 s; 0.25: a quarter of a core, 2: two cores); past it their runs are "
        'skipped, counted in `ragtrace_sampling_decisions_total{decision="dropped",'
        'reason="cpu_budget"}`, and the lexical ones still run. Unset: 0.25 for the default '
        "evaluators, no limit for evaluators you name and in `ragtrace worker` and "
        "`ragtrace ingest`; 0: no limit",
        check=at_least(0),
        file="pipeline.model_cpu_share",
    )
    passage_store: str | None = option(
        None,
        "a passage store written by `ragtrace index`, read by the model-backed evaluators",
        check=PATH,
        file="pipeline.passage_store",
    )
    session_idle_s: float = option(
        300.0,
        "score a conversation as a whole (the conversation evaluators) once its session has "
        "had no turn for this many seconds, or at `ragtrace.end_session(id)`; 0: off "
        '(docs/pipeline.md, "Conversations")',
        check=at_least(0),
        file="sessions.idle_s",
    )
    session_evaluators: tuple[str, ...] = option(
        ("knowledge_retention", "conversation_relevancy", "conversation_completeness"),
        "the conversation evaluators run on a quiet session; `conversation_relevancy` runs "
        "only beside the `answer_relevance` evaluator, whose verdicts it reuses",
        check=NAMES,
        file="sessions.evaluators",
    )
    max_open_sessions: int = option(
        10000,
        "most sessions waiting to go quiet; a turn of one more is dropped and counted "
        '(`ragtrace_dropped_records_total{reason="sessions_full"}`)',
        check=at_least(1),
        file="sessions.max_open",
    )
    max_session_turns: int = option(
        50,
        "turns kept per session for its score (the latest; an older one pushed out is counted "
        'in `ragtrace_dropped_records_total{reason="session_turns"}`)',
        check=at_least(1),
        file="sessions.max_turns",
    )
    queue_url: str | None = option(
        None,
        "ship sampled records to this Redis stream for `ragtrace worker` processes instead of "
        "evaluating them here (the file also takes `{url: ..., stream: ..., ...}`)",
        check=REDIS_URL,
        file="queue",
    )

    ingest_max_in_flight: int = option(
        8,
        "`ragtrace ingest`: OTLP exports decoded and assembled at once (HTTP and gRPC "
        "together); one more is refused at once, 429 with `Retry-After` (`RESOURCE_EXHAUSTED` "
        'over gRPC), and its sender retries it (docs/ingest.md, "Admission")',
        check=at_least(1),
        file="ingest.max_in_flight",
    )

    # --- export ----------------------------------------------------------------------------
    otlp_endpoint: str | None = option(
        None,
        "OTLP/HTTP endpoint of ragtrace's own tracer and logger providers "
        "(`http://collector:4318`)",
        check=url("http", "https"),
        file="sinks.otlp_endpoint",
        flag=Flag(
            "--otlp-endpoint",
            "URL",
            "export evaluation results here (OTLP/HTTP: gen_ai.evaluation.result log events on "
            "each request's trace; RAGTRACE_EVALUATION_RESULTS=spans for evaluation spans)",
        ),
    )
    evaluation_results: str = option(
        "logs",
        "where evaluation results go through OpenTelemetry: `logs` (a `gen_ai.evaluation.result` "
        "log event per score on the request's trace and span id), `spans` (evaluation spans in "
        "traces of their own, linked to the request), `both` or `none` (the file's `sinks.otel` "
        "also takes `true` for `logs`, `false` for `none`)",
        check=one_of(*EVALUATION_RESULTS),
        file="sinks.otel",
    )
    evaluation_spans: str = option(
        "evaluator",
        "when evaluation spans are written, how many: `evaluator` (one per evaluator run), "
        "`score` or `record`",
        check=one_of(*EVALUATION_SPAN_LAYOUTS),
        file="sinks.evaluation_spans",
    )
    phoenix_endpoint: str | None = option(
        None,
        "also post every score as an Arize Phoenix span annotation on the request's root span, "
        "through Phoenix's REST API at this base URL (`http://phoenix:6006`; the file's "
        "`sinks.phoenix` also takes `{endpoint: ...}`)",
        check=url("http", "https"),
        file="sinks.phoenix",
        flag=Flag(
            "--phoenix-endpoint",
            "URL",
            "also post every score as an Arize Phoenix span annotation on the request's root "
            "span (Phoenix's base URL, http://phoenix:6006; RAGTRACE_PHOENIX_ENDPOINT)",
        ),
    )
    phoenix_api_key: str | None = option(
        None,
        "sent as `Authorization: Bearer ...` to a Phoenix with authentication on (environment "
        "or code only: never in the file)",
        file=None,
    )
    sinks: tuple[str, ...] = option(
        (),
        "your own score sinks, as `module:Class` import paths (comma-separated in the "
        "variable; `--sink`, repeatable, on `ragtrace worker` and `ragtrace ingest`): each class "
        "is imported and built with no arguments, and must have the `ragtrace.ScoreSink` "
        'methods `export` and `shutdown` (docs/architecture.md, "Write your own sink")',
        check=IMPORT_PATHS,
        file="sinks.custom",
        flag=Flag(
            "--sink",
            "MODULE:CLASS",
            "also hand every score to your own ragtrace.ScoreSink, built with no arguments "
            "(repeatable; replaces $RAGTRACE_SINKS and the settings file's sinks.custom)",
            repeatable=True,
        ),
    )
    review_db: str | None = option(
        None,
        "queue the records that need a person in this review store (a SQLite file or "
        "`postgresql://...`; the file's `sinks.review`), with the default rules; its variable "
        "is also the store `ragtrace review` reads when given no `--db` (docs/review.md)",
        check=PATH,
        file="sinks.review",
        flag=Flag(
            "--review-db",
            "URL",
            "queue records that need a person (a SQLite file or postgresql://...; "
            "$RAGTRACE_REVIEW_DB, the settings file's sinks.review)",
        ),
    )
    metrics_port: int | None = option(
        None,
        "serve Prometheus `/metrics` on this port (0: a free one; the file's "
        f"`sinks.prometheus: true` means {DEFAULT_PROMETHEUS_PORT})",
        check=PORT,
        file="sinks.prometheus.port",
        flag=Flag("--metrics-port", "PORT", "serve /metrics and /healthz here"),
    )
    metrics_addr: str = option(
        "127.0.0.1",
        "address of that endpoint; beyond loopback it needs `metrics_token` or "
        "`metrics_allow_unauthenticated`, else it refuses to start",
        check=HOST,
        file="sinks.prometheus.addr",
        flag=Flag("--metrics-addr", "ADDR", "default 127.0.0.1"),
    )
    metrics_token: str | None = option(
        None,
        "require `Authorization: Bearer <token>` on every path of that endpoint (Prometheus: "
        "`authorization: {credentials_file: ...}`; environment or code only: never in the file)",
        check=NAME,
        file=None,
    )
    metrics_allow_unauthenticated: bool = option(
        False,
        "let that endpoint listen beyond loopback without a token (a private network)",
        file="sinks.prometheus.allow_unauthenticated",
    )
    max_app_labels: int = option(
        20,
        "distinct `app` label values the metrics keep (each adds time series to every per-app "
        'family); later apps are reported as `app="other"` and counted in '
        "`ragtrace_app_labels_folded`. Raise it for an ingest or worker fleet serving many "
        "services",
        check=at_least(1),
        file="sinks.max_app_labels",
    )
    judge_port: int | None = option(
        None,
        "port of the embedded llama.cpp judge on 127.0.0.1 (absent: a free one; 0: a free one) "
        "and the default of `ragtrace judge serve --port` (absent there: 8089)",
        check=PORT,
        file="judge.port",
    )
    shutdown_timeout_s: float = option(
        5.0,
        "the longest `shutdown()` and the exit hook take, whatever the exporters do",
        check=at_least(0),
    )
    config_file: str | None = option(
        None,
        "a YAML or TOML settings file (`ragtrace._config.settings_file`) for every option above",
        check=PATH,
        file=None,
    )

    def __post_init__(self) -> None:
        problems = []
        for opt in options(Config):
            value = getattr(self, opt.name)
            try:
                object.__setattr__(self, opt.name, opt.accept(value))
            except ValueError as exc:
                problems.append(f"{opt.name}: {exc}")
        if problems:
            raise ConfigError(problems)

    @property
    def sources(self) -> Mapping[str, str]:
        """Where each option's value came from: ``explicit``, ``env`` (the variable's name),
        ``file`` (the settings file's path) or ``default``."""
        given: Mapping[str, str] = getattr(self, "_sources", MappingProxyType({}))
        return MappingProxyType({o.name: given.get(o.name, "default") for o in options(Config)})

    @classmethod
    def resolve(cls, env: Mapping[str, str] | None = None, **explicit: Any) -> Config:
        """Build a Config, key by key: explicit argument (None means unset) > ``RAGTRACE_*``
        environment variable > the settings file (``config_file``) > default.

        A bad value from any source raises; unknown ``RAGTRACE_*`` variables are logged with
        the closest known name.

        Raises:
            ConfigError: An unknown option, or explicit values or ``RAGTRACE_*`` variables that
                are not valid, each named with its value and what it must be (a
                ``ValueError``).
            ragtrace._config.SettingsError: The settings file is unreadable or has bad values
                (all of them in one message).
        """
        return resolve(cls, env, explicit)

    def replace(self, **changes: Any) -> Config:
        """A copy with some fields changed (checked again; their source becomes ``explicit``)."""
        copy = dataclasses.replace(self, **changes)
        sources = {**self.sources, **dict.fromkeys(changes, "explicit")}
        object.__setattr__(copy, "_sources", MappingProxyType(sources))
        return copy
