"""The ``ragtrace`` command line: ``ragtrace demo`` runs the embedded demo.

``ragtrace demo`` answers a stream of questions with a local LangChain RAG app, traces and
scores every request with ragtrace, serves ``/metrics`` and shows what happens live. No
server, no API key, no network. Heavy modules are imported only once a command runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from ragtrace._config.arguments import ArgumentParser, number, one_line

MAX_TIME_SCALE = 120.0  # ragtrace demo --alert-time-scale: the 5-minute `for` lasts 2.5 s


def _port(text: str) -> int:
    value = number(int, 0)(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be a port number (0-65535), got {text}")
    return int(value)


def _names(text: str) -> tuple[str, ...]:
    from ragtrace.evaluators._registry import names

    chosen = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = sorted(set(chosen) - set(names()))
    if not chosen or unknown:
        raise argparse.ArgumentTypeError(
            f"unknown evaluator(s) {unknown}; known: {', '.join(names())}"
            if unknown
            else "expected comma-separated evaluator names"
        )
    return chosen


def _parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="ragtrace", description="ragtrace: watch a live RAG assistant.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo",
        help="trace and score a local LangChain RAG app (no server, no API key, no network)",
        description="Answer a stream of questions with a local LangChain RAG app over a shipped "
        "help centre; ragtrace traces and scores every request, serves /metrics and shows it "
        "live, then prints a summary.",
    )
    demo.add_argument(
        "--duration",
        type=number(float, 0),
        default=20.0,
        metavar="SECONDS",
        help="stop after this long (default 20; 0 = until Ctrl-C)",
    )
    demo.add_argument("--requests", type=number(int, 0), metavar="N", help="stop after N requests")
    demo.add_argument(
        "--rate",
        type=number(float, 0),
        default=10.0,
        help="requests per second (default 10; 0 = as fast as possible)",
    )
    demo.add_argument(
        "--metrics-port",
        type=_port,
        default=9464,
        metavar="PORT",
        help="serve Prometheus /metrics here (default 9464; 0 = a free port)",
    )
    demo.add_argument(
        "--metrics-addr",
        default="127.0.0.1",
        metavar="ADDR",
        help="default 127.0.0.1; beyond loopback it needs RAGTRACE_METRICS_TOKEN or "
        "--metrics-allow-unauthenticated",
    )
    demo.add_argument(
        "--metrics-allow-unauthenticated",
        action="store_true",
        help="let /metrics listen beyond loopback without a token",
    )
    demo.add_argument(
        "--otlp-endpoint", metavar="URL", help="also export spans with OTLP/HTTP to this URL"
    )
    demo.add_argument("--seed", type=int, default=0, help="same seed, same run (default 0)")
    demo.add_argument("--no-live", action="store_true", help="plain lines, no live view")
    demo.add_argument(
        "--json", action="store_true", help="one JSON line per request with its scores"
    )
    demo.add_argument("--quiet", action="store_true", help="print only the summary")
    demo.add_argument(
        "--review-db",
        metavar="PATH",
        help="queue the requests that need a person in this SQLite file (or postgresql:// URL); "
        "then: ragtrace review serve --db PATH",
    )
    demo.add_argument(
        "--evaluators",
        type=_names,
        metavar="A,B,...",
        help="evaluators to run (default: the local online suite and a contact-details check)",
    )
    demo.add_argument(
        "--queue",
        metavar="URL",
        help="ship records to this Redis stream (redis://host:port/db) for `ragtrace worker` "
        "processes to evaluate; the summary shows what they did with them",
    )
    from ragtrace.demo._scenario import SCENARIOS

    demo.add_argument(
        "--scenario",
        choices=tuple(SCENARIOS),
        help="how well the demo model answers: good (92%% grounded answers), default (70%%), "
        "sloppy (45%%); default: default, or good with --degrade-after",
    )
    demo.add_argument(
        "--degrade-after",
        type=number(float, 0),
        metavar="SECONDS",
        help="switch to the sloppy scenario this long after the start (a bad release); the run "
        "starts with --scenario, good unless given",
    )
    demo.add_argument(
        "--alert-time-scale",
        type=number(float, 1, MAX_TIME_SCALE, inclusive=True),
        default=1.0,
        metavar="N",
        help="with --prometheus: run the shipped rules N times faster (windows, `for`, baselines "
        "and offsets divided by N, volume guards too), so alerts that take an hour take "
        "minutes (default 1: real time)",
    )
    demo.add_argument(
        "--prometheus",
        action="store_true",
        help="also run a local Prometheus (the prometheus binary on PATH) with ragtrace's "
        "recording and alert rules, scraping the demo; it stops with the demo",
    )
    from ragtrace._alerts import cli as alerts_cli
    from ragtrace._backends import models_cli
    from ragtrace._config import command as config_cli
    from ragtrace._ingest import cli as ingest_cli
    from ragtrace._judges import cli as judge_cli
    from ragtrace._offline import cli as eval_cli
    from ragtrace._offline import index_cli
    from ragtrace._report import cli as report_cli
    from ragtrace._worker import cli as worker_cli
    from ragtrace.review import _cli as review_cli

    eval_cli.add_parser(sub)
    index_cli.add_parser(sub)
    report_cli.add_parser(sub)
    review_cli.add_parser(sub)
    judge_cli.add_parser(sub)
    worker_cli.add_parsers(sub)
    ingest_cli.add_parser(sub)
    config_cli.add_parser(sub)
    models_cli.add_parser(sub)
    alerts_cli.add_parser(sub)
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "demo": _demo,
        "eval": eval_cli.run,
        "index": index_cli.run,
        "report": report_cli.run,
        "review": review_cli.run,
        "judge": judge_cli.run,
        "worker": worker_cli.run_worker,
        "queue": worker_cli.run_queue,
        "ingest": ingest_cli.run_ingest,
        "config": config_cli.run,
        "models": models_cli.run,
        "alerts": alerts_cli.run,
    }
    for name, handler in handlers.items():
        sub.choices[name].set_defaults(handler=handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    from ragtrace._config import ConfigError, SettingsError

    try:
        return int(args.handler(args))
    except (ConfigError, SettingsError) as exc:
        # A bad setting is the user's to fix: one line saying which, never a traceback.
        print(f"ragtrace {args.command}: {one_line(exc)}", file=sys.stderr)
        return 2


def _demo(args: argparse.Namespace) -> int:
    if args.requests == 0:
        print("ragtrace demo: --requests must be >= 1", file=sys.stderr)
        return 2
    from ragtrace._network.signals import stop_on_signals
    from ragtrace.demo._run import DemoError, DemoOptions, demo_config, run_demo

    if args.alert_time_scale != 1 and not args.prometheus:
        print("ragtrace demo: --alert-time-scale needs --prometheus", file=sys.stderr)
        return 2
    from ragtrace.demo._scenario import START_WHEN_DEGRADING

    scenario = args.scenario or (
        START_WHEN_DEGRADING if args.degrade_after is not None else "default"
    )
    config = demo_config(
        args.evaluators,
        metrics_port=args.metrics_port,
        metrics_addr=args.metrics_addr,
        metrics_allow_unauthenticated=args.metrics_allow_unauthenticated,
        otlp_endpoint=args.otlp_endpoint,
        queue_url=args.queue,
        review_db=args.review_db,
    )
    options = DemoOptions(
        config,
        duration_s=args.duration,
        requests=args.requests,
        rate=args.rate,
        seed=args.seed,
        live=False if args.no_live else None,
        as_json=args.json,
        quiet=args.quiet,
        scenario=scenario,
        degrade_after_s=args.degrade_after,
    )
    try:
        with stop_on_signals():  # SIGTERM too stops it as Ctrl-C does: summary printed
            if args.prometheus:
                from ragtrace.demo._prometheus_stack import demo_prometheus

                with demo_prometheus(
                    options, time_scale=args.alert_time_scale
                ) as options_with_port:
                    run_demo(options_with_port)
            else:
                run_demo(options)
    except DemoError as exc:
        print(f"ragtrace demo: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
