"""``ragtrace worker`` (evaluate a Redis queue) and ``ragtrace queue`` (inspect one).

    ragtrace worker --queue redis://127.0.0.1:6379/0 --config ragtrace.yaml --metrics-port 9465
    ragtrace queue stats --queue redis://127.0.0.1:6379/0
    ragtrace queue dead-letters --queue redis://127.0.0.1:6379/0 [--requeue | --purge] [ID ...]

The queue URL may also come from ``RAGTRACE_QUEUE_URL``, or, for ``worker``, from the settings
file's ``queue`` key (``Config.queue_url``).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, TextIO

from ragtrace._config.arguments import (
    declared_flags,
    given_options,
    number,
    one_line,
    option_value,
    positive,
)

QUEUE_ENV = "RAGTRACE_QUEUE_URL"
QUEUE_OVERRIDES = ("consumer", "stream", "group", "reclaim_idle_s", "max_deliveries")
"""``worker`` flags that are ``RedisQueueOptions`` fields of the same name."""


def add_parsers(subparsers: Any) -> None:
    """Add ``worker`` and ``queue`` to the ``ragtrace`` command line."""
    worker = subparsers.add_parser(
        "worker",
        help="evaluate the records applications ship to a Redis stream",
        description="Join the stream's consumer group, evaluate each record with the settings "
        "file's evaluators, publish to Prometheus and OTLP, acknowledge after publishing. "
        "SIGTERM: finish the batches in hand, acknowledge, exit.",
    )
    _queue_argument(worker)
    worker.add_argument(
        "--config",
        type=option_value("config_file"),
        metavar="FILE",
        help="settings file (evaluators, sampling)",
    )
    worker.add_argument(
        "--evaluators",
        type=evaluator_names,
        metavar="A,B,...",
        help="evaluators to run instead of the settings file's (run the ones the apps sample)",
    )
    worker.add_argument("--workers", type=positive(int), metavar="N", help="reading threads")
    worker.add_argument(
        "--processes", type=positive(int), metavar="N", help="processes for evaluator calls"
    )
    add_service_arguments(worker)
    worker.add_argument("--consumer", help="name in the consumer group (default: host-pid)")
    worker.add_argument("--stream", help="stream name (default: ragtrace:work)")
    worker.add_argument("--group", help="consumer group (default: ragtrace)")
    worker.add_argument(
        "--reclaim-idle-s", type=positive(float), metavar="S", help="take over after (60)"
    )
    worker.add_argument(
        "--max-deliveries", type=positive(int), metavar="N", help="dead-letter after (3)"
    )
    worker.add_argument("--health-stale-s", type=positive(float), default=120.0, metavar="S")
    worker.add_argument(
        "--max-apps",
        type=option_value("max_app_labels"),
        metavar="N",
        help='distinct app label values kept; later ones read app="other" '
        "(default: $RAGTRACE_MAX_APP_LABELS, else 20)",
    )
    worker.add_argument("--drain-timeout-s", type=positive(float), default=20.0, metavar="S")
    worker.add_argument(
        "--fleet-cache-mb",
        type=number(float, 0),
        metavar="MB",
        help="cache of sentence vectors the fleet's workers share in the queue's Redis "
        "(default: $RAGTRACE_FLEET_CACHE_MB, else 256; 0: none)",
    )

    queue = subparsers.add_parser("queue", help="inspect a Redis queue and its dead letters")
    actions = queue.add_subparsers(dest="queue_command", required=True)
    stats = actions.add_parser("stats", help="submitted, published, backlog, dead letters, resets")
    _queue_argument(stats)
    dead = actions.add_parser("dead-letters", help="list, requeue or purge dead letters")
    _queue_argument(dead)
    dead.add_argument("ids", nargs="*", metavar="ID", help="dead-letter ids (default: all)")
    dead.add_argument("--limit", type=positive(int), default=20, help="list at most N")
    what = dead.add_mutually_exclusive_group()
    what.add_argument("--requeue", action="store_true", help="put them back on the stream")
    what.add_argument("--purge", action="store_true", help="delete them")


def run_worker(args: argparse.Namespace, err: TextIO | None = None) -> int:
    """``ragtrace worker``: run until SIGTERM or SIGINT."""
    err = err or sys.stderr
    from ragtrace._worker.service import APP, Worker, WorkerOptions
    from ragtrace._worker.serving import service_config

    if passage_store_refused("ragtrace worker", err):
        return 2
    given = {k: getattr(args, k) for k in QUEUE_OVERRIDES}
    overrides = {k: v for k, v in given.items() if v is not None}
    try:
        config = service_config(
            APP, workers=args.workers, processes=args.processes, **service_flags(args)
        )
        options = WorkerOptions(
            config,
            drain_timeout_s=args.drain_timeout_s,
            health_stale_s=args.health_stale_s,
            queue_overrides=overrides,
            fleet_cache_mb=args.fleet_cache_mb,
        )
        worker = Worker(options)
    except (ValueError, ImportError, OSError) as exc:
        print(f"ragtrace worker: {one_line(exc)}", file=err)
        return 2
    queue = worker.queue_options
    return serve_until_stopped(
        "ragtrace worker",
        worker,
        lambda: [
            f"ragtrace worker: redaction policy {worker.redaction.name}",
            f"ragtrace worker {queue.consumer}: reading {queue.safe_url} stream {queue.stream}",
        ],
        err,
    )


def passage_store_refused(command: str, err: TextIO) -> bool:
    """Print what is wrong with the configured passage store, if anything; True then."""
    from ragtrace._backends.passage_store import configured_problem

    problem = configured_problem()
    if problem:
        print(f"{command}: error: {problem}", file=err)
    return bool(problem)


def serve_until_stopped(
    command: str, service: Any, started: Callable[[], list[str]], err: TextIO
) -> int:
    """Run a built ``Worker`` or ``IngestService`` until SIGTERM or SIGINT, then drain it.

    Once it started, prints its metrics and probes line, then the ``started()`` lines.
    """
    from ragtrace._metrics.endpoint import probes_line

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: service.stop())
    service.start()
    if service.server is not None:
        line = probes_line(service.server, service.config.metrics_token)
        print(f"{command}: {line}", file=err)
    for line in started():
        print(line, file=err)
    err.flush()
    service.wait()
    finished = service.drain()
    print(f"{command}: stopped" + ("" if finished else " (drain timed out)"), file=err)
    return 0


def run_queue(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """``ragtrace queue stats`` and ``ragtrace queue dead-letters``."""
    out, err = out or sys.stdout, err or sys.stderr
    from ragtrace._config.redis_queue import RedisQueueOptions
    from ragtrace._pipeline.queues.redis_streams import StreamCommands, connect
    from ragtrace._worker import inspect

    url = _queue_url(args, err)
    if url is None:
        return 2
    try:
        options = RedisQueueOptions.from_url(url)
        commands = StreamCommands(connect(options), options)
        if args.queue_command == "stats":
            print(json.dumps(inspect.queue_state(commands), indent=2), file=out)
        elif args.requeue:
            print(f"requeued {inspect.requeue(commands, args.ids)}", file=out)
        elif args.purge:
            print(f"purged {inspect.purge(commands, args.ids)}", file=out)
        else:
            for letter in inspect.dead_letters(commands, args.limit):
                print(json.dumps(asdict(letter)), file=out)
    except (ValueError, ImportError) as exc:
        print(f"ragtrace queue: {one_line(exc)}", file=err)
        return 2
    except Exception as exc:  # Redis unreachable, wrong password, ...
        print(f"ragtrace queue: {type(exc).__name__}: {exc}", file=err)
        return 1
    return 0


def add_service_arguments(parser: argparse.ArgumentParser) -> None:
    """What ``worker`` and ``ingest`` share: their ``/metrics`` endpoint, the redaction
    policy, and where scores go besides Prometheus (OTLP, Phoenix, your own sinks, the review
    store: each a ``Config`` option declared with its flag, ``declared_flags``)."""
    from ragtrace._config.kinds import REDACTION_POLICIES

    parser.add_argument(
        "--redact",
        choices=REDACTION_POLICIES,
        help="redaction of every text before it is written or sent (review store, results, "
        "dead letters, logs): none, secrets or pii (default: $RAGTRACE_REDACT, else the "
        "settings file's `redact`, else none); docs/data-safety.md",
    )
    parser.add_argument(
        "--metrics-allow-unauthenticated",
        action="store_true",
        default=None,
        help="let /metrics and the health probes listen beyond loopback without "
        "RAGTRACE_METRICS_TOKEN (refused otherwise)",
    )
    declared_flags(parser)  # the endpoints and sinks: their options' ``flag=Flag(...)``


def service_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The ``Config`` options the flags both services take give (None: not given), for
    ``ragtrace._worker.serving.service_config``."""
    return {
        "config_file": args.config,
        "evaluators": args.evaluators,
        "queue_url": args.queue,
        "redact": args.redact,
        "metrics_allow_unauthenticated": args.metrics_allow_unauthenticated,
        "max_app_labels": args.max_apps,
        **given_options(args),  # the endpoints and sinks: ``declared_flags``
    }


def _queue_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--queue",
        type=option_value("queue_url"),
        metavar="URL",
        help=f"redis://host:port/db (default: ${QUEUE_ENV})",
    )


def _queue_url(args: argparse.Namespace, err: TextIO) -> str | None:
    from ragtrace._config import Config

    url = Config.resolve(queue_url=args.queue).queue_url
    if not url:
        print(f"ragtrace: give --queue redis://host:port/db or set {QUEUE_ENV}", file=err)
    return url


def evaluator_names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())
