"""Does Arize Phoenix show ragtrace's requests and scores as it should? Checks and screenshots.

Phoenix needs its own environment (it wants ``openai>=3``; litellm wants ``openai<3``)::

    python3 -m venv ../phoenix-venv && ../phoenix-venv/bin/pip install 'arize-phoenix==20.26.1'
    .venv/bin/python benchmarks/phoenix_check.py --phoenix-python ../phoenix-venv/bin/python

It starts Phoenix on loopback (no telemetry, no external resources, a fresh working directory),
sends the demo's chain through ragtrace (``_phoenix``: invoked, streamed, ``astream``
and abandoned requests; traces over OTLP, scores as span annotations), then checks:

- through Phoenix's GraphQL API (``_phoenix``), for every request: the trace's latency is
  the root span's duration within 10 ms and the trace holds the request's spans only; the root
  shows the query, streamed requests included; every score is an annotation with its label and
  score; the filters docs/phoenix.md lists keep exactly the requests they should; the LLM span's
  input holds the retrieved text;
- in Phoenix's UI, driven with Debian's Chromium (``_phoenix``): the annotation columns show
  each evaluator's score; the latency column and the project's P50 match the requests'; a filter
  on a failed annotation shows exactly the failed requests; a streamed request's trace shows its
  query and each annotation's label; the retriever's documents; the Playground replay of an LLM
  span holds the chunk text.

Screenshots and ``summary.json`` go to ``benchmarks/results/phoenix/`` (``--screenshots DIR``
copies the screenshots there too: ``docs/phoenix`` refreshes the docs'). Exit 1 if a check
fails. Phoenix is stopped by its pid. ``tests/test_phoenix_live.py`` runs this under pytest, on
a Phoenix it shares with its Sessions test (``serving(python)``, then ``run(..., base_url=)``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for path in (str(HERE), str(ROOT)):
    if path not in sys.path:
        sys.path.insert(0, path)

from _phoenix import (
    PROJECT,
    PhoenixApi,
    Sent,
    api_checks,
    send,
    ui_checks,
)

from tests.components import free_port

PHOENIX_PYTHON_ENV = "RAGTRACE_PHOENIX_PYTHON"
SCREENSHOTS = (
    "requests.png",
    "filter.png",
    "trace.png",
    "annotations.png",
    "documents.png",
    "playground.png",
)


def phoenix_python() -> str | None:
    """The interpreter of a Phoenix environment: ``RAGTRACE_PHOENIX_PYTHON``, else
    ``.venv-phoenix`` in the repository, else ``../phoenix-venv`` beside it."""
    candidates = [
        os.environ.get(PHOENIX_PYTHON_ENV),
        str(ROOT / ".venv-phoenix" / "bin" / "python"),
        str(ROOT.parent / "phoenix-venv" / "bin" / "python"),
    ]
    return next((c for c in candidates if c and Path(c).exists()), None)


def start_phoenix(python: str, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Phoenix on loopback with a fresh working directory; its process and base URL."""
    port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_TELEMETRY_ENABLED": "False",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "False",
    }
    with open(workdir / "phoenix.log", "wb") as log:  # the child keeps its own copy
        proc = subprocess.Popen(
            [python, "-m", "phoenix.server.main", "serve"], env=env, stdout=log, stderr=log
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Phoenix exited: {(workdir / 'phoenix.log').read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=2):
                return proc, base
        except OSError:
            time.sleep(1)
    stop(proc)
    raise RuntimeError("Phoenix did not start within 300 s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@contextmanager
def serving(python: str) -> Iterator[str]:
    """A fresh Phoenix on loopback for the block; its base URL. Stopped by its pid after."""
    workdir = Path(tempfile.mkdtemp(prefix="ragtrace-phoenix-"))
    try:
        proc, base = start_phoenix(python, workdir)
        try:
            yield base
        finally:
            stop(proc)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run(
    python: str, requests: int, out: Path, *, ui: bool = True, base_url: str | None = None
) -> dict[str, Any]:
    """Send the traffic and run every check; the summary (``checks``, ``ok``). Phoenix is the
    one at ``base_url`` (the tests share one), else a fresh one started and stopped here."""
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    with contextlib.ExitStack() as stack:
        if base_url is None:
            started = time.monotonic()
            base_url = stack.enter_context(serving(python))
            timings["phoenix_start_s"] = time.monotonic() - started
        sent, checks = _send_and_check(base_url, requests, out, ui, timings)
    failed = {k: v for k, v in checks.items() if v is not True}
    return {
        "project": PROJECT,
        "requests": len(sent),
        "modes": {m: sum(s.mode == m for s in sent) for m in {s.mode for s in sent}},
        "checks": {k: v is True for k, v in checks.items()},
        "failures": {k: repr(v)[:2000] for k, v in failed.items()},
        "timings_s": {k: round(v, 1) for k, v in timings.items()},
        "ok": not failed,
    }


def _send_and_check(
    base_url: str, requests: int, out: Path, ui: bool, timings: dict[str, float]
) -> tuple[list[Sent], dict[str, Any]]:
    t = time.monotonic()
    sent = send(base_url, requests)
    api = PhoenixApi(base_url)
    project = api.wait_for(sent)
    timings["traffic_s"] = time.monotonic() - t
    t = time.monotonic()
    checks = {f"api: {k}": v for k, v in api_checks(api, project, sent).items()}
    timings["api_checks_s"] = time.monotonic() - t
    if ui:
        t = time.monotonic()
        checks.update(
            {f"ui: {k}": v for k, v in ui_checks(base_url, project, sent, out, api).items()}
        )
        timings["ui_checks_s"] = time.monotonic() - t
    return sent, checks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--phoenix-python",
        default=phoenix_python(),
        help=f"Phoenix's interpreter (default: ${PHOENIX_PYTHON_ENV}, .venv-phoenix, "
        "../phoenix-venv)",
    )
    parser.add_argument("--requests", type=int, default=36, help="requests to send (36)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "phoenix")
    parser.add_argument("--screenshots", type=Path, help="also copy the screenshots here")
    parser.add_argument("--no-ui", action="store_true", help="the API checks only")
    args = parser.parse_args(argv)
    if not args.phoenix_python:
        parser.error(
            f"no Phoenix environment found: pass --phoenix-python or ${PHOENIX_PYTHON_ENV}"
        )
    summary = run(args.phoenix_python, args.requests, args.out, ui=not args.no_ui)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    for name, ok in summary["checks"].items():
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
        if not ok:
            print(f"     {summary['failures'][name]}")
    print(f"{summary['requests']} requests {summary['modes']}; timings {summary['timings_s']}")
    if args.screenshots is not None and not args.no_ui:
        args.screenshots.mkdir(parents=True, exist_ok=True)
        for name in SCREENSHOTS:
            if (args.out / name).exists():
                shutil.copy(args.out / name, args.screenshots / name)
    print(f"screenshots and summary.json in {args.out}")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
