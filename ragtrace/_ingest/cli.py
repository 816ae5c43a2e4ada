"""``ragtrace ingest``: an OTLP/HTTP receiver that evaluates the RAG requests in the traces.

    RAGTRACE_INGEST_TOKEN=... ragtrace ingest --listen 0.0.0.0:4318 --config ragtrace.yaml \\
        --metrics-port 9464 --otlp-endpoint http://collector:4318/v1/traces
    ragtrace ingest --queue redis://127.0.0.1:6379/0      # ship records to `ragtrace worker`s

The bearer token may come from ``RAGTRACE_INGEST_TOKEN`` instead of ``--token`` (keeps it out
of the process list). A receiver bound beyond loopback without a token refuses to start unless
``--allow-unauthenticated`` says that is meant; so does the metrics endpoint, whose token is
``RAGTRACE_METRICS_TOKEN`` and whose flag is ``--metrics-allow-unauthenticated``. The start prints
the addresses really bound, whether a token is asked for and where it came from
(``bearer token required (from $RAGTRACE_INGEST_TOKEN)``; never the token), and the redaction
policy (``--redact``) every rebuilt record goes through before anything is written or sent.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, TextIO

from ragtrace._config.arguments import one_line, option_value, positive
from ragtrace._worker.cli import (
    QUEUE_ENV,
    add_service_arguments,
    evaluator_names,
    passage_store_refused,
    serve_until_stopped,
    service_flags,
)

TOKEN_ENV = "RAGTRACE_INGEST_TOKEN"


def add_parser(subparsers: Any) -> None:
    """Add ``ingest`` to the ``ragtrace`` command line."""
    p = subparsers.add_parser(
        "ingest",
        help="receive OTLP traces (OpenInference, OpenLLMetry, GenAI) and evaluate them",
        description="Receive OTLP/HTTP trace exports, assemble each trace, rebuild one record per "
        "RAG request from OpenInference, OpenLLMetry, OTel GenAI or ragtrace spans, and evaluate "
        "it like a captured one: Prometheus metrics (app = service.name) and evaluation spans in "
        "the original trace. SIGTERM: stop receiving, finish open traces, exit.",
    )
    p.add_argument(
        "--listen",
        type=_address,
        default=("127.0.0.1", 4318),
        metavar="ADDR:PORT",
        help="receiver address (default 127.0.0.1:4318; 0.0.0.0:4318 for other machines)",
    )
    p.add_argument(
        "--grpc-listen",
        type=_address,
        metavar="ADDR:PORT",
        help="also serve OTLP/gRPC here (4317; the Collector's loadbalancing exporter speaks it)",
    )
    p.add_argument("--token", help=f"require this bearer token (or set ${TOKEN_ENV})")
    p.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="listen beyond loopback without a token (refused otherwise)",
    )
    p.add_argument(
        "--max-request-bytes",
        type=positive(int),
        default=32 * 1024 * 1024,
        metavar="N",
        help="largest export accepted, compressed or inflated (default 32 MiB)",
    )
    p.add_argument(
        "--config",
        type=option_value("config_file"),
        metavar="FILE",
        help="settings file (evaluators, sampling)",
    )
    p.add_argument("--evaluators", type=evaluator_names, metavar="A,B,...")
    p.add_argument(
        "--queue",
        type=option_value("queue_url"),
        metavar="URL",
        help=f"ship records to this Redis stream for `ragtrace worker` (or ${QUEUE_ENV})",
    )
    add_service_arguments(p)
    p.add_argument(
        "--quiet-s", type=positive(float), default=5.0, metavar="S",
        help="a trace is complete once its root arrived and no span came for S (default 5)",
    )  # fmt: skip
    p.add_argument(
        "--max-age-s", type=positive(float), default=60.0, metavar="S",
        help="complete a trace S after its first span whatever arrived (default 60)",
    )  # fmt: skip
    p.add_argument("--max-open-traces", type=positive(int), default=10_000, metavar="N")
    p.add_argument("--max-spans-per-trace", type=positive(int), default=1_000, metavar="N")
    p.add_argument("--max-buffer-bytes", type=positive(int), default=256 * 1024 * 1024, metavar="N")
    p.add_argument(
        "--max-in-flight",
        type=option_value("ingest_max_in_flight"),
        metavar="N",
        help="exports decoded and assembled at once; one more is answered 429 with Retry-After "
        "(RESOURCE_EXHAUSTED over gRPC) at once (default: $RAGTRACE_INGEST_MAX_IN_FLIGHT, else 8)",
    )
    p.add_argument("--drain-timeout-s", type=positive(float), default=20.0, metavar="S")
    p.add_argument(
        "--max-apps",
        type=option_value("max_app_labels"),
        metavar="N",
        help='distinct app (service.name) label values kept; later ones read app="other" '
        "(default: $RAGTRACE_MAX_APP_LABELS, else 20)",
    )


def run_ingest(args: argparse.Namespace, err: TextIO | None = None) -> int:
    """``ragtrace ingest``: run until SIGTERM or SIGINT."""
    err = err or sys.stderr
    from ragtrace._ingest.assembly import AssemblyLimits
    from ragtrace._ingest.receiver import ReceiverOptions
    from ragtrace._ingest.service import APP, IngestOptions, IngestService, check_receivers
    from ragtrace._worker.serving import service_config

    if passage_store_refused("ragtrace ingest", err):
        return 2
    token = args.token or os.environ.get(TOKEN_ENV) or None
    source = "--token" if args.token else f"${TOKEN_ENV}"
    try:
        http, grpc = (
            None
            if where is None
            else ReceiverOptions(
                addr=where[0], port=where[1], token=token, max_request_bytes=args.max_request_bytes
            )
            for where in (args.listen, args.grpc_listen)
        )
        assert http is not None
        check_receivers(http, grpc, args.allow_unauthenticated)  # before the settings are read
        options = IngestOptions(
            service_config(APP, **service_flags(args), ingest_max_in_flight=args.max_in_flight),
            drain_timeout_s=args.drain_timeout_s,
            receiver=http,
            grpc=grpc,
            limits=AssemblyLimits(
                quiet_s=args.quiet_s,
                max_age_s=args.max_age_s,
                max_open_traces=args.max_open_traces,
                max_spans_per_trace=args.max_spans_per_trace,
                max_buffer_bytes=args.max_buffer_bytes,
            ),
            allow_unauthenticated=args.allow_unauthenticated,
        )
        service = IngestService(options)
    except (ValueError, ImportError, OSError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else one_line(exc)
        print(f"ragtrace ingest: {reason}", file=err)
        return 2
    runtime = service.runtime
    assert runtime is not None
    return serve_until_stopped(
        "ragtrace ingest",
        service,
        lambda: [
            *(f"ragtrace ingest: {line}" for line in service.describe(source)),
            f"ragtrace ingest: redaction policy {runtime.redaction.name}",
        ],
        err,
    )


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected ADDR:PORT, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)
