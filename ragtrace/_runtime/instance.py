"""The ``Ragtrace`` object that ``ragtrace.init`` returns.

It wires the parts together: configuration, a tracer, the capture layer the integrations
feed, the Prometheus families, the evaluation pipeline (sampler, evaluators, workers) and its
sinks (Prometheus metrics, OpenTelemetry evaluation log events or spans, Phoenix span
annotations, the review store, your own: all from ``score_sinks``, on the tracer and the
evaluation logger provider, ``logs.EvaluationLogs``, it owns).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any, cast

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import REGISTRY, CollectorRegistry

from ragtrace import evaluators as registry_of_evaluators
from ragtrace._capture import Capture
from ragtrace._capture.span_writers import span_writer
from ragtrace._config import Config
from ragtrace._diagnostics import Diagnostics
from ragtrace._exporters.base import ScoreSink, SinkContext
from ragtrace._exporters.otel import inline_attributes
from ragtrace._judges import usage as judge_usage
from ragtrace._metrics.collection import Metrics
from ragtrace._metrics.endpoint import MetricsServer, check_metrics_exposure, start_metrics_server
from ragtrace._metrics.multiprocess import (
    MetricsEndpoint,
    aggregated_registry,
    multiprocess_path,
    open_metrics_endpoint,
)
from ragtrace._model import RagRecord
from ragtrace._pipeline import EvaluationPipeline, PipelineOptions, RecordSink
from ragtrace._pipeline.cpu_budget import CpuBudget
from ragtrace._pipeline.lifecycle import Deadline, register_exit_hook, run_bounded
from ragtrace._pipeline.queues import WorkConsumer, WorkQueue
from ragtrace._pipeline.sampling import Sampler
from ragtrace._pipeline.session_store import SessionStore
from ragtrace._redaction import redaction, unmarked
from ragtrace._runtime.bounded_export import ProviderFlush, flush_provider
from ragtrace._runtime.evaluation_settings import evaluation_config
from ragtrace._runtime.logs import EvaluationLogs
from ragtrace._runtime.score_sinks import build_score_sinks, results_mode
from ragtrace._runtime.span_export import BoundedSpanProcessor
from ragtrace._runtime.tracing import TRACER_NAME, default_provider
from ragtrace._text import jsonable
from ragtrace.evaluators._base import Evaluator
from ragtrace.evaluators._default_suite import DEFAULT_CPU_SHARE, default_evaluators

logger = logging.getLogger("ragtrace")

RECORDS_SHARE = 0.6
"""Share of the shutdown budget the records may use; the spans and log records get the rest."""
SPANS_SHARE = 0.6
"""Share of what is left after the records that the spans may use; log records get the rest."""


class Ragtrace:
    """A running ragtrace: capture, metrics and pipeline for one application.

    Create it with ``ragtrace.init``. Attributes ``config``, ``capture``, ``metrics``,
    ``diagnostics``, ``pipeline``, ``score_sinks`` (every sink it publishes to, in the order a
    record reaches them) and ``redaction`` (the policy every text goes through before it leaves
    the process, ``Config.redact``) are public for integrations and tests.
    """

    def __init__(
        self,
        config: Config,
        tracer_provider: trace.TracerProvider | None = None,
        registry: CollectorRegistry | None = None,
        *,
        evaluators: Sequence[Evaluator | str] | None = None,
        sampler: Sampler | None = None,
        pipeline_options: PipelineOptions | None = None,
        score_sinks: Sequence[ScoreSink] = (),
        export_evaluation_spans: bool | None = None,
        logger_provider: object | None = None,
    ) -> None:
        config = evaluation_config(config)  # a file's evaluators and sampling, built
        self.config = config
        self.redaction = redaction(config.redact)
        self._shut_down = False
        self._state_lock = threading.Lock()
        self._on_shutdown: list[Callable[[Ragtrace], None]] = []
        self._endpoint: MetricsEndpoint | None = None
        self._multiprocess = multiprocess_path()
        # Whatever fails below undoes what was done before it: a failed init leaves no
        # metrics registered, no threads and no open port behind, so the next init works.
        with ExitStack() as undo:
            self.metrics = Metrics(
                registry if registry is not None else REGISTRY, config.app, config.max_app_labels
            )
            undo.callback(self.metrics.unregister)
            self.diagnostics = Diagnostics(
                on_error=self.metrics.count_internal_error,
                redact=self.redaction.text if self.redaction.active else None,
            )
            self._own_provider = tracer_provider is None and not isinstance(
                trace.get_tracer_provider(), TracerProvider
            )
            self._span_processor: BoundedSpanProcessor | None = None
            if tracer_provider is None:
                tracer_provider, self._span_processor = default_provider(
                    config, self.metrics.count_dropped_spans
                )
            self.tracer_provider = tracer_provider
            if self._own_provider:
                undo.callback(self._stop_tracing, Deadline(0.0))
            mode = results_mode(config, export_evaluation_spans)
            self.logs = EvaluationLogs(
                config,
                logger_provider,
                self.metrics.count_dropped_log_records,
                wanted=mode in ("logs", "both"),
            )
            undo.callback(self.logs.close, Deadline(0.0))
            context = SinkContext(
                metrics=self.metrics,
                redaction=self.redaction,
                results_mode=mode,
                tracer_provider=tracer_provider,
                tracer=tracer_provider.get_tracer(TRACER_NAME),
                span_delivery=self._span_processor or ProviderFlush(tracer_provider, "flush-spans"),
                logger=self.logs.logger,
                log_delivery=self.logs.delivery,
            )
            self._build(undo, context, evaluators, sampler, pipeline_options, score_sinks)
            if config.metrics_port is not None:
                self._endpoint = open_metrics_endpoint(
                    config.metrics_port,
                    config.metrics_addr,
                    self._served_registry(),
                    multiprocess=self._multiprocess is not None,
                    count_error=self.metrics.count_internal_error,
                    token=config.metrics_token,
                    allow_unauthenticated=config.metrics_allow_unauthenticated,
                )
            undo.pop_all()
        self._judge_listener = judge_usage.add_listener(self._on_judge_call)
        register_exit_hook(self)

    def _backends(self) -> tuple[WorkQueue | None, WorkConsumer | None, SessionStore | None]:
        """The work queue's ends and the session store the pipeline is given: none for an
        application's runtime, whose pipeline makes its own from the configuration
        (``FleetRuntime`` hands those of a fleet process)."""
        return None, None, None

    def _build(
        self,
        undo: ExitStack,
        context: SinkContext,
        evaluators: Sequence[Evaluator | str] | None,
        sampler: Sampler | None,
        pipeline_options: PipelineOptions | None,
        score_sinks: Sequence[ScoreSink],
    ) -> None:
        """The pipeline with its sinks (shut down by ``undo`` if init fails later), and the
        capture layer that feeds it. Arguments that are None come from the config."""
        config = self.config
        queue, consumer, session_store = self._backends()
        tracer = self.tracer_provider.get_tracer(TRACER_NAME)
        share = config.model_cpu_share
        if evaluators is None and config.evaluators is None:
            evaluators, share = self._default_evaluators()
        elif evaluators is None:  # built by ``evaluation_config``: ``Evaluator``s and names
            evaluators = cast("Sequence[Evaluator | str]", config.evaluators)
        if sampler is None:
            sampler = cast("Sampler | None", config.sampler)
        if pipeline_options is None:
            pipeline_options = PipelineOptions.from_config(config)
        sinks = build_score_sinks(config, context, score_sinks)
        self.score_sinks = sinks.all
        self._held_sinks = sinks.held
        # Until the pipeline owns them, the sinks built here are shut down if init fails.
        unowned = undo.enter_context(ExitStack())
        for sink in sinks.built:
            unowned.callback(_shut_down_quietly, sink)
        shipper = None
        if queue is None and consumer is None and config.queue_url:
            from ragtrace._runtime.queues import shipping_queue  # only apps that ship load it

            shipper = shipping_queue(config.queue_url, self.metrics, self.diagnostics)
        evaluator_objects = [_as_evaluator(e) for e in evaluators]
        self.pipeline = EvaluationPipeline(
            self.diagnostics,
            self.metrics,
            evaluators=evaluator_objects,
            sampler=sampler,
            sinks=sinks.all,
            options=pipeline_options,
            queue=queue,
            shipper=shipper,
            consumer=consumer,
            redaction=self.redaction,
            raw_text_evaluators=config.raw_text_evaluators,
            cpu_budget=CpuBudget(share) if share else None,
            session_store=session_store,
        )
        unowned.pop_all()  # the pipeline's shutdown closes them now
        undo.callback(self.pipeline.shutdown, 0.0)
        self._has_inline = any(e.inline for e in self.pipeline.evaluators)
        # The raw text is kept past the record boundary only for evaluators that read it.
        self._keeps_raw = self.redaction.active and bool(
            set(config.raw_text_evaluators) & {e.name for e in self.pipeline.evaluators}
        )
        self.capture = Capture(
            tracer,
            config,
            self._emit,
            self.diagnostics,
            inline=self._run_inline if self._has_inline else None,
            writer=span_writer(
                tracer, direct=config.direct_spans, quiet_processors=(BoundedSpanProcessor,)
            ),
            emit_with_raw=self._emit if self._keeps_raw else None,
            redaction=self.redaction,
        )

    def _default_evaluators(self) -> tuple[tuple[str, ...], float | None]:
        """No evaluators configured: the online suite when its models are installed (its
        model-backed members held to ``model_cpu_share``, by default ``DEFAULT_CPU_SHARE``),
        else its lexical checks; one line logged says which, and why."""
        choice = default_evaluators()
        share = self.config.model_cpu_share
        if share is None:
            share = DEFAULT_CPU_SHARE
        logger.info(choice.describe(share, shipped=self.config.queue_url is not None))
        return choice.names, share

    def _on_judge_call(self, call: judge_usage.JudgeCall) -> None:
        """Judge calls made in this process: metrics, and real spend against the budget."""
        self.metrics.record_judge_call(call)
        self.pipeline.sampler.charge(call.cost_usd)

    def _run_inline(self, record: RagRecord, raw: RagRecord | None = None) -> dict[str, Any]:
        return inline_attributes(self.pipeline.run_inline(record, raw))

    @property
    def metrics_server(self) -> MetricsServer | None:
        """This instance's running ``/metrics`` server, if it has one (None while it stands
        by for another worker's in multiprocess mode)."""
        return self._endpoint.server if self._endpoint is not None else None

    def start_metrics_server(
        self,
        port: int = 9464,
        addr: str = "127.0.0.1",
        *,
        token: str | None = None,
        allow_unauthenticated: bool | None = None,
    ) -> MetricsServer:
        """Serve this instance's metrics at ``http://addr:port/metrics`` (closed at shutdown);
        in multiprocess mode, those of every process of the server.

        Args:
            port: The port (0: a free one).
            addr: The address; beyond loopback it needs a token or ``allow_unauthenticated``.
            token: Require this bearer token (default: ``Config.metrics_token``).
            allow_unauthenticated: Listen beyond loopback without a token (default:
                ``Config.metrics_allow_unauthenticated``).

        Raises:
            ExposureRefused: ``addr`` is beyond loopback, with no token and not allowed.
            OSError: The address cannot be bound (in use, not local), naming ``addr:port``.
        """
        allowed = (
            self.config.metrics_allow_unauthenticated
            if allow_unauthenticated is None
            else allow_unauthenticated
        )
        token = token if token is not None else self.config.metrics_token
        check_metrics_exposure(addr, port, token=token, allow_unauthenticated=allowed)
        if self._endpoint is not None:
            self._endpoint.close()
        server = start_metrics_server(
            port, addr, self._served_registry(), token=token, allow_unauthenticated=allowed
        )
        self._endpoint = MetricsEndpoint(server)
        return server

    def _served_registry(self) -> CollectorRegistry:
        if self._multiprocess is not None:
            return aggregated_registry(self._multiprocess, first=self.metrics.deferred)
        return self.metrics.registry

    def _emit(self, record: RagRecord, raw: RagRecord | None = None) -> bool:
        try:
            self.metrics.observe_record(record)
        except Exception as exc:
            self.diagnostics.error("metrics.observe_record", exc)
        return self.pipeline.submit(record, raw)  # the pipeline counts its own drops

    def submit_record(self, record: RagRecord) -> bool:
        """Hand on a record built outside this process's capture (rebuilt from ingested spans,
        say) exactly as a captured one: redacted by this instance's policy (its record
        boundary; a record that already went through the policy is not redacted again),
        request metrics, inline evaluators (published with the background ones, since the
        request's span has long ended), sampling, the queue. Raw-text evaluators read the
        record as it was given.

        Never raises; False if the record was dropped.
        """
        try:
            redacted = self.redaction.record(record)
        except Exception as exc:  # nothing unredacted goes on
            self.diagnostics.error("redact.record", exc)
            self.metrics.count_drop("redaction_error")
            return False
        raw = unmarked(record) if self._keeps_raw and redacted is not record else None
        if self._has_inline:
            self.pipeline.run_inline(redacted, raw)
        return self._emit(redacted, raw)

    def add_record_sink(self, sink: RecordSink) -> RecordSink:
        """Call ``sink(record)`` for every finished request (usable as a decorator).

        The sink runs on the thread that finished the request: keep it quick.
        """
        self.pipeline.add_record_sink(sink)
        return sink

    def remove_record_sink(self, sink: RecordSink) -> None:
        self.pipeline.remove_record_sink(sink)

    def attach_feedback(self, trace_id: str, feedback: object) -> bool:
        """Attach user feedback (a thumbs-down, a rating, a comment) to a recent request.

        The record is looked at again by the sampler with ``attributes["feedback"]`` set, so a
        ``feedback`` rule can send it to evaluators that skipped it; see
        ``EvaluationPipeline.attach_feedback``. With a redaction policy on, the feedback (a
        comment may quote anything) is made JSON-safe and redacted first. Never raises.
        """
        if self.redaction.active:
            try:
                feedback = self.redaction.value(jsonable(feedback))
            except Exception as exc:
                self.diagnostics.error("redact.feedback", exc)
                return False
        return self.pipeline.attach_feedback(trace_id, feedback)

    def end_session(self, session_id: str) -> bool:
        """Score conversation ``session_id`` now, as a whole, rather than when it goes quiet
        (``Config.session_idle_s``); ``EvaluationPipeline.end_session``."""
        return self.pipeline.end_session(session_id)

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Hand on everything buffered (records, spans, evaluation log records, Phoenix
        annotations). True if all went within the timeout, which is kept whatever the
        exporters do."""
        deadline = Deadline(timeout_s)
        ok = self.pipeline.flush(timeout_s)
        self.metrics.flush()
        ok = self._flush_spans(deadline.share(0.5)) and ok
        rest = Deadline(deadline.remaining())
        for sink in self._held_sinks:  # Phoenix's annotations: half of what is left
            ok = sink.flush(rest.share(0.5 / len(self._held_sinks))) and ok
        return self.logs.flush(rest.remaining()) and ok

    @property
    def shutdown_budget_s(self) -> float:
        """How long ``shutdown()`` and the exit hook may take (``Config.shutdown_timeout_s``)."""
        return self.config.shutdown_timeout_s

    def shutdown(self, timeout_s: float | None = None) -> bool:
        """Close open requests, publish what is queued, send the spans, stop. Idempotent.

        Returns within ``timeout_s`` (default ``Config.shutdown_timeout_s``) whatever the
        exporters, the judge or the stores are doing: records still queued then are counted in
        ``ragtrace_dropped_records_total{reason="shutdown"}``, spans not sent in
        ``ragtrace_dropped_spans_total{reason="shutdown"}`` (ragtrace's own exporter), and
        nothing is waited for. A shut-down instance drops records. Also run at exit.

        Returns:
            True if everything was handed on within the budget.
        """
        with self._state_lock:
            if self._shut_down:
                return True
            self._shut_down = True
        budget = self.shutdown_budget_s if timeout_s is None else max(0.0, timeout_s)
        deadline = Deadline(budget)
        with self.diagnostics.guard("shutdown.capture"):
            self.capture.close_all()
        # Records first (evaluating them makes spans), with time left for the spans after.
        sent = self.pipeline.shutdown(deadline.share(RECORDS_SHARE))
        sent = self._stop_tracing(Deadline(deadline.remaining() * SPANS_SHARE)) and sent
        sent = self.logs.close(deadline) and sent
        judge_usage.remove_listener(self._judge_listener)
        if self._endpoint is not None:
            self._endpoint.close()
        self.metrics.unregister()
        if not sent:
            logger.warning(
                "ragtrace: shutdown stopped waiting after its %.1f s budget "
                "(shutdown_timeout_s); what was not sent is counted in "
                "ragtrace_dropped_records_total, ragtrace_dropped_spans_total, "
                "ragtrace_dropped_log_records_total and ragtrace_dropped_annotations_total",
                budget,
            )
        for callback in self._on_shutdown:
            callback(self)
        return sent

    def _flush_spans(self, timeout_s: float) -> bool:
        """Ask the tracer provider to send its spans; never wait past ``timeout_s`` (the SDK's
        batch processor ignores the timeout it is given)."""
        return flush_provider(
            self.tracer_provider,
            timeout_s,
            name="flush-spans",
            on_error=lambda exc: self.diagnostics.error("tracing.flush", exc),
        )

    def _stop_tracing(self, deadline: Deadline) -> bool:
        """Flush the application's provider, or shut ragtrace's own down, by ``deadline``."""
        if not self._own_provider or not isinstance(self.tracer_provider, TracerProvider):
            return self._flush_spans(deadline.remaining())
        sent = True
        if self._span_processor is not None:
            sent = self._span_processor.close(deadline.remaining())
        run_bounded(self.tracer_provider.shutdown, deadline.remaining(), name="tracing-shutdown")
        return sent

    def on_shutdown(self, callback: Callable[[Ragtrace], None]) -> None:
        """Call ``callback(self)`` once this instance has shut down."""
        self._on_shutdown.append(callback)

    @property
    def is_shut_down(self) -> bool:
        return self._shut_down


def _shut_down_quietly(sink: ScoreSink) -> None:
    """Shut a sink down while init unwinds: what it raises is logged, never hides init's error."""
    try:
        sink.shutdown()
    except Exception:
        logger.warning("ragtrace: %s did not shut down cleanly", type(sink).__name__, exc_info=True)


def _as_evaluator(item: Evaluator | str) -> Evaluator:
    if isinstance(item, Evaluator):
        return item
    if isinstance(item, str):
        return registry_of_evaluators.create(item)
    raise TypeError(f"evaluators: expected an Evaluator or a name, got {type(item).__name__}")


class FleetRuntime(Ragtrace):
    """The runtime of a fleet process, over work queue ends and a session store it made.

    ``ragtrace worker`` hands its Redis consumer (and the fleet's session store),
    ``ragtrace ingest`` its bounded local queue; the pipeline takes records from them instead
    of making its own. Internal: an application starts with ``ragtrace.init``.

    Args:
        config: As ``Ragtrace``'s.
        registry: As ``Ragtrace``'s.
        queue: A queue with both ends in this process (the pipeline puts and takes).
        consumer: The end workers take from, when records are put elsewhere.
        session_store: Where conversations wait until they go quiet.
        pipeline_options: As ``Ragtrace``'s.
        score_sinks: As ``Ragtrace``'s.
    """

    def __init__(
        self,
        config: Config,
        registry: CollectorRegistry | None = None,
        *,
        queue: WorkQueue | None = None,
        consumer: WorkConsumer | None = None,
        session_store: SessionStore | None = None,
        pipeline_options: PipelineOptions | None = None,
        score_sinks: Sequence[ScoreSink] = (),
    ) -> None:
        self._given = (queue, consumer, session_store)
        super().__init__(
            config, registry=registry, pipeline_options=pipeline_options, score_sinks=score_sinks
        )

    def _backends(self) -> tuple[WorkQueue | None, WorkConsumer | None, SessionStore | None]:
        return self._given
