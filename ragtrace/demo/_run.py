"""``ragtrace demo``: a stream of questions through the demo app, traced and scored by ragtrace.

``run_demo(DemoOptions(duration_s=20), sys.stdout)`` asks questions at ``rate`` per second
through the LangChain app in ``ragtrace.demo._app``, with ragtrace capturing each request,
evaluating it on background workers (``ragtrace.demo._evaluators``), serving ``/metrics`` and
optionally exporting spans with OTLP. It shows a live view on a terminal (plain or JSON lines
elsewhere) and stops after ``duration_s``, ``requests`` or Ctrl-C, then prints a summary.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from prometheus_client import CollectorRegistry

from ragtrace._config import Config, EvaluatorLike
from ragtrace._runtime import init
from ragtrace._runtime.evaluation_settings import evaluators_of
from ragtrace.demo._board import Entry, ScoreBoard, read_counts
from ragtrace.demo._catches import CatchTally
from ragtrace.demo._corpus import ARTICLES, QUESTIONS
from ragtrace.demo._evaluators import DEMO_EVALUATORS, demo_evaluators, warm_up
from ragtrace.demo._fleet import FleetCounter, FleetTally, QueueUnreachable
from ragtrace.demo._scenario import SCENARIOS, ScenarioPlan
from ragtrace.demo._summary import DemoSummary, format_summary
from ragtrace.demo._tracing import DemoTracing, MissingExtra
from ragtrace.demo._view import LiveView, Snapshot, json_line, plain_line

APP = "aurora-help"
REDRAW_S = 0.25
MAX_KEPT_ENTRIES = 10_000


class DemoError(Exception):
    """A problem the user can fix (busy port, missing extra); the message is one line."""


FLUSH_TIMEOUT_S = 60.0  # the model evaluators may still be busy when traffic stops


def demo_config(
    evaluators: Sequence[EvaluatorLike | str] | None = None,
    *,
    app: str = APP,
    metrics_port: int | None = 9464,
    **options: Any,
) -> Config:
    """The ``Config`` of a demo run: ``options`` (``otlp_endpoint``, ``queue_url``,
    ``metrics_addr``, ...) over the demo's own defaults, built as given: no ``RAGTRACE_*``
    variable or settings file is read here.

    Args:
        evaluators: Names of the evaluators to run (None: ``DEMO_EVALUATORS``, the full local
            online suite); a name the demo configures gets its options there.
        app: The application's name on its spans, records and metrics.
        metrics_port: Port of the demo's ``/metrics`` (0 or None: a free one).
        **options: Other ``Config`` options.

    Raises:
        ConfigError: A bad option, named with its value.
    """
    chosen = tuple(DEMO_EVALUATORS) if evaluators is None else tuple(evaluators)
    return Config(app=app, evaluators=chosen, metrics_port=metrics_port, **options)


@dataclass(frozen=True)
class DemoOptions:
    """How the demo runs (the ``ragtrace demo`` options).

    Attributes:
        config: The options it shares with the rest of ragtrace (default: ``demo_config()``).
            The demo reads ``app``; ``evaluators``; ``metrics_port``, ``metrics_addr`` and
            ``metrics_allow_unauthenticated`` for its ``/metrics`` (beyond loopback it needs
            ``RAGTRACE_METRICS_TOKEN`` or ``metrics_allow_unauthenticated``); ``otlp_endpoint``
            (also export spans with OTLP/HTTP there, ``http://host:4318``) and ``queue_url``
            (ship sampled records to this Redis stream; ``ragtrace worker`` processes evaluate
            them, see ``ragtrace.demo._fleet``). The rest come, as for any ``init``, from
            ``RAGTRACE_*`` and the settings file.
        duration_s: Stop after this many seconds; 0 runs until Ctrl-C (or ``requests``).
        requests: Stop after this many requests (None: no cap).
        rate: Requests per second; 0 asks as fast as the app answers.
        seed: Seeds the questions, the way they are read and the model's behaviour.
        live: Live view; None: when the output is a terminal.
        as_json: One JSON line per request on the output (human text goes to ``err``).
        quiet: Nothing per request; only the summary.
        stream_share: Share of requests read as a stream.
        abandon_share: Share of requests whose stream the user abandons after one token.
        queue_wait_s: At the end, how long to wait for the workers to finish this run's records.
        scenario: How well the model answers: ``good``, ``default`` or ``sloppy``
            (``ragtrace.demo._scenario``).
        degrade_after_s: Switch to the ``sloppy`` scenario this many seconds after the start
            (None: never).
    """

    config: Config = field(default_factory=demo_config)
    duration_s: float = 20.0
    requests: int | None = None
    rate: float = 10.0
    seed: int = 0
    live: bool | None = None
    as_json: bool = False
    quiet: bool = False
    stream_share: float = 0.15
    abandon_share: float = 0.04
    queue_wait_s: float = 60.0
    scenario: str = "default"
    degrade_after_s: float | None = None


@dataclass(frozen=True)
class Progress:
    """Handed to ``on_progress`` after every request (on the demo's thread)."""

    requests: int
    elapsed_s: float
    metrics_url: str


@dataclass
class DemoResult:
    """The summary and the requests with their scores (the first ``MAX_KEPT_ENTRIES``)."""

    summary: DemoSummary
    entries: list[Entry] = field(default_factory=list)


class _Driver:
    """Asks the questions and keeps the output up to date."""

    def __init__(self, options: DemoOptions, out: TextIO, err: TextIO) -> None:
        self.options = options
        self.out = out
        self.info = err if options.as_json else out
        live = options.live if options.live is not None else _is_terminal(out)
        self.live = live and not options.as_json and not options.quiet
        self.board = ScoreBoard(recent=40)
        self.registry = CollectorRegistry()
        self.entries: list[Entry] = []
        self.view = LiveView(out) if self.live else None
        self.traffic = random.Random(f"ragtrace-demo-traffic:{options.seed}")
        self.started = time.monotonic()
        self.next_draw = 0.0
        self.metrics_url = ""
        self.model: Any = None  # the demo chat model, whose behaviours the summary counts
        self.catches = CatchTally()
        self.plan = ScenarioPlan(options.scenario, options.degrade_after_s)
        self.scenario = self.plan.start
        self.switched = ""  # when the run degraded, once it did
        self.board.set_scenario(self.scenario)

    def degrade_when_due(self) -> None:
        """Switch the model to the plan's next scenario once its time has come."""
        elapsed = time.monotonic() - self.started
        wanted = self.plan.current(elapsed)
        if wanted == self.scenario:
            return
        self.board.set_scenario(wanted)
        if self.model is not None:
            self.model.use_weights(SCENARIOS[wanted])
        self.switched = (
            f"switched {self.scenario} -> {wanted} at {elapsed:.1f} s "
            f"(from request {self.board.count + 1})"
        )
        self.scenario = wanted
        if self.view is None and not self.options.quiet:
            self.info.write(f"ragtrace demo: {self.switched}\n")
            self.info.flush()

    def scenario_text(self) -> str:
        """The plan, and when it switched (or that the run ended before it would)."""
        if self.plan.degrade_after_s is None:
            return self.plan.start
        if self.switched:
            return f"{self.plan.describe()}: {self.switched}"
        return f"{self.plan.describe()}: ended before it degraded"

    def ask(self, chain: Any) -> None:
        """One request: invoked, streamed, or streamed and abandoned after the first token."""
        question = self.traffic.choice(QUESTIONS)
        mode = self.traffic.random()
        try:
            if mode < self.options.abandon_share:
                stream = iter(chain.stream(question))
                next(stream, None)
                close = getattr(stream, "close", None)
                if callable(close):
                    close()  # the user closed the tab mid-answer
            elif mode < self.options.abandon_share + self.options.stream_share:
                "".join(chain.stream(question))
            else:
                chain.invoke(question)
        except Exception:
            pass  # ragtrace recorded the failed request (status error)

    def tick(self, *, final: bool = False) -> None:
        """Print finished requests, or redraw the live view when due."""
        finished = self.board.take_finished(final=final)
        if self.model is not None:
            for entry in finished:
                if entry.scores is not None:
                    self.catches.add(self.model.behaviour_of(entry.record.response), entry.scores)
        room = MAX_KEPT_ENTRIES - len(self.entries)
        self.entries.extend(finished[: max(0, room)])
        if self.view is not None:
            now = time.monotonic()
            if final or now >= self.next_draw:
                self.next_draw = now + REDRAW_S
                self.view.draw(self.snapshot())
        elif not self.options.quiet and finished:
            line = json_line if self.options.as_json else plain_line
            self.out.write("".join(line(entry) + "\n" for entry in finished))
            self.out.flush()

    def snapshot(self) -> Snapshot:
        return Snapshot(
            app=self.options.config.app,
            seed=self.options.seed,
            elapsed_s=time.monotonic() - self.started,
            duration_s=self.options.duration_s or None,
            metrics_url=self.metrics_url,
            otlp_endpoint=self.options.config.otlp_endpoint,
            counts=read_counts(self.registry),
            recent=self.board.recent(),
            scenario=self.scenario,
            switch=self.switched
            or (
                f"degrades at {self.plan.degrade_after_s:g} s"
                if self.plan.degrade_after_s is not None
                else ""
            ),
        )

    def wait_until(self, due: float) -> None:
        while (left := due - time.monotonic()) > 0:
            self.tick()
            time.sleep(min(left, 0.05))

    def run(self, chain: Any, on_progress: Callable[[Progress], None] | None) -> bool:
        """Ask until the duration, the request cap or Ctrl-C; True if Ctrl-C stopped it."""
        o = self.options
        deadline = self.started + o.duration_s if o.duration_s > 0 else None
        interval = 1.0 / o.rate if o.rate > 0 else 0.0
        n = 0
        try:
            while o.requests is None or n < o.requests:
                due = self.started + n * interval
                if deadline is not None and due >= deadline:
                    break
                self.wait_until(due)
                self.degrade_when_due()
                self.ask(chain)
                n += 1
                self.tick()
                if on_progress is not None:
                    on_progress(Progress(n, time.monotonic() - self.started, self.metrics_url))
        except KeyboardInterrupt:
            return True
        return False


def _load_evaluators(options: DemoOptions, info: TextIO) -> list[Any]:
    """Build the evaluators and load their models before traffic starts (saying so)."""
    evaluators = demo_evaluators(evaluators_of(options.config))
    if not options.quiet and any(e.kind == "model" for e in evaluators):
        info.write("ragtrace demo: loading the evaluators' local models...\n")
        info.flush()
    warm_up(evaluators)
    return evaluators


def _review_sinks(options: DemoOptions) -> list[Any]:
    """A review-queue sink, a twentieth of the requests sampled besides the rules' picks, when
    ``options.config.review_db`` names a store (SQLite path or PostgreSQL URL)."""
    if not options.config.review_db:
        return []
    from ragtrace.review import ReviewRules, ReviewSink

    return [ReviewSink(options.config.review_db, ReviewRules(sample_rate=0.05))]


def _banner(driver: _Driver, options: DemoOptions, metrics_url: str) -> None:
    config = options.config
    shipping = f"; shipping to {config.queue_url}" if config.queue_url else ""
    chosen = DEMO_EVALUATORS if config.evaluators is None else config.evaluators
    names = [
        e
        if isinstance(e, str)
        else str(e.get("name", "suite"))
        if isinstance(e, Mapping)
        else e.name
        for e in chosen
    ]
    driver.info.write(
        f"ragtrace demo: {config.app}, a LangChain RAG app over {len(ARTICLES)} help-centre "
        f"articles; evaluators {', '.join(names)}; "
        f"seed {options.seed}; scenario {driver.plan.describe()}{shipping}\n"
        f"metrics at {metrics_url}" + (" (Ctrl-C stops)\n" if driver.live else "\n")
    )
    driver.info.flush()


def _fleet_counter(config: Config) -> FleetCounter | None:
    if not config.queue_url:
        return None
    try:
        return FleetCounter(config.queue_url)
    except (ValueError, ImportError, QueueUnreachable) as exc:
        raise DemoError(f"--queue: {exc}") from None


def _settle(fleet: FleetCounter | None, wait_s: float, err: TextIO) -> FleetTally | None:
    """The queue's tally at the end; None without a queue, or (said on ``err``) when its
    Redis cannot be read any more: the summary still prints, without the queue's line."""
    if fleet is None:
        return None
    try:
        return fleet.settle(wait_s)
    except QueueUnreachable as exc:
        err.write(f"ragtrace demo: --queue: {exc}\n")
        return None


def _metrics_server(rt: Any, tracing: DemoTracing, config: Config) -> Any:
    """The demo's ``/metrics`` server; DemoError (after stopping ``rt`` and ``tracing``) when
    the port is busy or the address would expose it without a token nobody allowed."""
    port = config.metrics_port or 0
    try:
        return rt.start_metrics_server(
            port,
            config.metrics_addr,
            allow_unauthenticated=config.metrics_allow_unauthenticated or None,
        )
    except (ValueError, OSError) as exc:
        rt.shutdown()
        tracing.shutdown()
        if isinstance(exc, ValueError):  # an open endpoint nobody asked for
            raise DemoError(str(exc)) from None
        cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else exc
        where = f"{config.metrics_addr}:{port}"
        raise DemoError(
            f"cannot serve /metrics on {where} ({(cause.strerror or str(cause)).lower()}); "
            "pick another port with --metrics-port N (0 = any free port)"
        ) from None


def run_demo(
    options: DemoOptions,
    out: TextIO | None = None,
    err: TextIO | None = None,
    *,
    on_progress: Callable[[Progress], None] | None = None,
) -> DemoResult:
    """Run the demo; print per-request output and the summary; return what happened.

    Args:
        options: See ``DemoOptions``.
        out: Live view, plain or JSON lines, summary (default stdout).
        err: Banner and summary when ``as_json`` (default stderr).
        on_progress: Called after every request, e.g. to scrape ``/metrics`` while it runs.

    Raises:
        DemoError: The metrics port is busy, an extra (LangChain, OTLP) is missing, or the
            scenario is unknown.
    """
    try:
        ScenarioPlan(options.scenario, options.degrade_after_s)
    except ValueError as exc:
        raise DemoError(str(exc)) from None
    config = options.config
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        from ragtrace.demo._app import DemoChatModel, build_chain
        from ragtrace.integrations.langchain import instrument, uninstrument
    except ImportError as exc:
        raise DemoError(
            f"ragtrace demo needs LangChain: pip install 'ragtrace[langchain]' ({exc})"
        ) from None
    try:
        tracing = DemoTracing(config.app, config.otlp_endpoint)
    except MissingExtra as exc:
        raise DemoError(str(exc)) from None
    driver = _Driver(options, out, err)
    evaluators = _load_evaluators(options, driver.info)
    fleet = _fleet_counter(config)
    rt = init(
        app=config.app,
        tracer_provider=tracing.provider,
        registry=driver.registry,
        evaluators=evaluators,
        score_sinks=[driver.board, *_review_sinks(options)],
        queue_url=config.queue_url,
        otlp_endpoint=config.otlp_endpoint,  # evaluation results, as OTLP log events
    )
    server = _metrics_server(rt, tracing, config)
    driver.metrics_url = server.url
    rt.add_record_sink(driver.board.add_record)
    if not options.quiet:
        _banner(driver, options, server.url)
    instrument(rt)
    interrupted = False
    try:
        driver.model = DemoChatModel(seed=options.seed, weights=SCENARIOS[driver.scenario])
        interrupted = driver.run(build_chain(seed=options.seed, model=driver.model), on_progress)
    finally:
        uninstrument()
        elapsed = time.monotonic() - driver.started
        try:
            rt.flush(FLUSH_TIMEOUT_S)
        except KeyboardInterrupt:
            interrupted = True
        driver.tick(final=True)
        if driver.view is not None:
            driver.view.close()
        counts = read_counts(driver.registry)
        rt.shutdown()
        tracing.shutdown()
    tally = _settle(fleet, options.queue_wait_s, err or sys.stderr)
    summary = DemoSummary(
        counts=counts,
        elapsed_s=elapsed,
        spans=tracing.spans,
        metrics_url=server.url,
        otlp_endpoint=config.otlp_endpoint,
        otlp_exported=tracing.exported or 0,
        otlp_failed=tracing.failed or 0,
        interrupted=interrupted,
        fleet=tally,
        catches=tuple(driver.catches.lines()),
        scenario=driver.scenario_text(),
    )
    driver.info.write(format_summary(summary))
    driver.info.flush()
    return DemoResult(summary, driver.entries)


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):
        return False
