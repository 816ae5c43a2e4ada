"""The ``ragtrace`` command line: ``ragtrace demo`` runs the embedded demo."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragtrace", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="trace a local LangChain RAG app (no server, no API key)")
    demo.add_argument("--requests", type=int, default=28, help="questions to ask (default 28)")
    demo.add_argument("--otlp-endpoint", help="also export spans with OTLP/HTTP to this URL")
    demo.add_argument("--json", action="store_true", help="print one JSON record per line")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "demo":
        if args.requests < 1:
            print("ragtrace demo: --requests must be >= 1", file=sys.stderr)
            return 2
        from ragtrace.demo.run import DemoOptions, run_demo

        run_demo(
            DemoOptions(
                requests=args.requests, otlp_endpoint=args.otlp_endpoint, as_json=args.json
            ),
            sys.stdout,
        )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
