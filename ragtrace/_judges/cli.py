"""``ragtrace judge``: run the embedded llama.cpp judge for other processes, list local models.

::

    ragtrace judge serve --model qwen2.5-coder-0.5b --port 8089
    RAGTRACE_JUDGE_MODEL=openai/qwen2.5-coder-0.5b \\
    RAGTRACE_JUDGE_API_BASE=http://127.0.0.1:8089/v1  python my_app.py

    ragtrace judge models

``serve`` listens on port ``--port``, else the ``judge_port`` option (``RAGTRACE_JUDGE_PORT``,
the settings file's ``judge.port``), else 8089; on 127.0.0.1 unless ``--host`` says otherwise,
which then needs a key (``--api-key``, or ``RAGTRACE_JUDGE_API_KEY`` to keep it out of the
process list): an open judge is refused. It prints the address really bound, whether a key is
asked for and where it came from (``--api-key`` or ``$RAGTRACE_JUDGE_API_KEY``; never the key)
and the litellm model string, then serves until interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib import metadata
from typing import Any

from ragtrace._config.arguments import one_line, positive

COMMAND = "judge"
DEFAULT_SERVE_PORT = 8089
API_KEY_ENV = "RAGTRACE_JUDGE_API_KEY"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``judge`` (with ``serve`` and ``models``) to ``subparsers``; returns it."""
    from ragtrace._judges.local import DEFAULT_LOCAL_MODEL, DEFAULT_THREADS

    parser: argparse.ArgumentParser = subparsers.add_parser(
        COMMAND,
        help="the local LLM judge: serve it, list its models",
        description="The embedded LLM judge (llama.cpp with a packaged GGUF model).",
    )
    sub = parser.add_subparsers(dest="judge_command", required=True)
    serve = sub.add_parser(
        "serve",
        help="serve a local OpenAI-compatible judge on loopback",
        description="Serve a packaged GGUF model (or any GGUF file) with llama.cpp, "
        "OpenAI-compatible, for ragtrace judges in other processes.",
    )
    serve.add_argument(
        "--model",
        default=DEFAULT_LOCAL_MODEL,
        help=f"a packaged model name or a GGUF path (default: {DEFAULT_LOCAL_MODEL})",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address (default: 127.0.0.1)")
    serve.add_argument(
        "--port",
        type=_port,
        default=None,
        help=f"port (default: $RAGTRACE_JUDGE_PORT or the settings file's judge.port, else "
        f"{DEFAULT_SERVE_PORT}; 0: any)",
    )
    serve.add_argument(
        "--threads",
        type=positive(int),
        default=None,
        help=f"llama.cpp threads (default: {DEFAULT_THREADS})",
    )
    serve.add_argument(
        "--parallel", type=positive(int), default=1, help="requests at once (default: 1)"
    )
    serve.add_argument(
        "--context",
        type=positive(int),
        default=8192,
        help="context tokens per request (default: 8192)",
    )
    serve.add_argument(
        "--api-key",
        default=None,
        help=f"require this key (needed off loopback; or set ${API_KEY_ENV})",
    )
    sub.add_parser("models", help="list the packaged judge models and whether they are installed")
    return parser


def _port(text: str) -> int:
    """``--port``'s value: an integer in 0..65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port in 0..65535, got {port}")
    return port


def run(args: argparse.Namespace) -> int:
    if args.judge_command == "models":
        return _models()
    return _serve(args)


def _models() -> int:
    from ragtrace._judges.local import DEFAULT_LOCAL_MODEL, PACKAGED_MODELS

    for name, packaged in PACKAGED_MODELS.items():
        installed = all(_installed(dist) for dist, _ in packaged.parts)
        default = " (default)" if name == DEFAULT_LOCAL_MODEL else ""
        state = "installed" if installed else f"missing: {packaged.install_command}"
        print(f"{name}{default}: {state}")
    return 0


def _installed(dist: str) -> bool:
    try:
        metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


def _serve(args: argparse.Namespace) -> int:
    from ragtrace._judges.local import LocalJudgeServer, local_port
    from ragtrace._network import listening_line
    from ragtrace._network.signals import wait_until_stopped

    api_key = args.api_key or os.environ.get(API_KEY_ENV) or None
    try:
        configured = local_port(DEFAULT_SERVE_PORT)  # every setting is checked, --port or not
    except ValueError as exc:
        print(f"ragtrace judge serve: {one_line(exc)}", file=sys.stderr)
        return 2
    try:
        port = args.port if args.port is not None else configured
        server = LocalJudgeServer(
            args.model,
            host=args.host,
            port=port,
            threads=args.threads,
            parallel=args.parallel,
            context_tokens=args.context,
            api_key=api_key,
        ).start()
    except (ValueError, OSError, ImportError, RuntimeError) as exc:
        print(f"ragtrace judge serve: {exc}", file=sys.stderr)
        return 2
    source = "--api-key" if args.api_key else f"${API_KEY_ENV}"
    line = listening_line(
        f"ragtrace judge: {args.model}", server.api_base, args.host, api_key, source
    )
    print(f"{line}; litellm model: {server.model_name}; Ctrl-C stops", flush=True)
    try:
        wait_until_stopped()
    finally:
        server.stop()
    return 0
