"""Does Arize Phoenix render ragtrace's traces as intended? Screenshots and checks, offline.

Phoenix needs its own environment (it wants ``openai>=3``; litellm wants ``openai<3``)::

    python3 -m venv /tmp/phoenix-venv && /tmp/phoenix-venv/bin/pip install arize-phoenix
    .venv/bin/python benchmarks/phoenix_check.py --phoenix-python /tmp/phoenix-venv/bin/python

It starts Phoenix on loopback (no telemetry, no external resources), runs ``ragtrace demo``
exporting its traces to Phoenix's OTLP/HTTP endpoint, then drives Debian's Chromium with
Playwright through Phoenix's UI: the project's spans, one evaluated trace with its retriever
documents, and that trace's evaluation spans. It checks that the page shows what it should
(the RAG span, the documents' ids and text, the evaluation spans' scores) and writes the
screenshots and a JSON summary to ``benchmarks/results/phoenix/``. Stops Phoenix by its pid.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from tests.components import free_port, launch_chromium  # noqa: E402

DEFAULT_PROJECT = base64.b64encode(b"Project:1").decode()  # Phoenix's relay id of "default"


def start_phoenix(python: str, workdir: Path) -> tuple[subprocess.Popen[bytes], int]:
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
    log = open(workdir / "phoenix.log", "wb")  # noqa: SIM115 - kept open for the process
    proc = subprocess.Popen(
        [python, "-m", "phoenix.server.main", "serve"], env=env, stdout=log, stderr=log
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Phoenix exited: {(workdir / 'phoenix.log').read_text()[-2000:]}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
            return proc, port
        except OSError:
            time.sleep(1)
    proc.kill()
    raise RuntimeError("Phoenix did not start within 180 s")


def run_demo(port: int, requests: int) -> list[dict[str, Any]]:
    """``ragtrace demo`` exporting to Phoenix; the requests it printed (trace id, chunks)."""
    out = subprocess.run(
        [sys.executable, "-m", "ragtrace", "demo", "--requests", str(requests), "--rate", "0",
         "--no-live", "--json", "--metrics-port", "0",
         "--otlp-endpoint", f"http://127.0.0.1:{port}"],
        capture_output=True, text=True, timeout=600, check=True, cwd=ROOT,
    )  # fmt: skip
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return [line for line in lines if "trace_id" in line and line.get("chunks")]


def screenshots(port: int, trace_id: str, retriever: str, out: Path) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    base = f"http://127.0.0.1:{port}/projects/{DEFAULT_PROJECT}"
    seen: dict[str, Any] = {}
    with sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(f"{base}/spans", wait_until="networkidle")
        page.wait_for_timeout(2000)
        page.screenshot(path=str(out / "1-spans.png"), full_page=True)
        seen["spans_page"] = page.inner_text("body")[:4000]
        page.goto(f"{base}/traces/{trace_id}", wait_until="networkidle")
        page.wait_for_timeout(2000)
        page.screenshot(path=str(out / "2-trace.png"), full_page=True)
        seen["trace_page"] = page.inner_text("body")[:6000]
        steps = [(retriever, 0, "Info"), ("ragtrace.evaluation", 0, "Events")]
        steps += [("ragtrace.evaluation", k, "Attributes") for k in range(1, 10)]
        for n, (name, index, tab) in enumerate(steps):
            nodes = page.get_by_text(name, exact=True)
            if nodes.count() <= index:
                continue
            nodes.nth(index).click()
            page.get_by_role("tab", name=tab).first.click()
            page.wait_for_timeout(1200)
            text = page.inner_text("body")
            if tab == "Attributes" and "gen_ai.evaluation.score.value" not in text:
                continue  # an evaluator with several scores: they are on its events
            page.screenshot(path=str(out / f"{3 + n}-{name.replace('.', '-')}-{tab}.png"))
            seen[f"{name}_{tab}"] = text[:8000]
            if tab == "Attributes":
                break
        browser.close()
    return seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--phoenix-python", default=os.environ.get("PHOENIX_PYTHON", "/tmp/phoenix-venv/bin/python")
    )
    parser.add_argument("--requests", type=int, default=8)
    args = parser.parse_args(argv)
    out = HERE / "results" / "phoenix"
    out.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="phoenix-"))
    proc, port = start_phoenix(args.phoenix_python, workdir)
    try:
        requests = run_demo(port, args.requests)
        first = requests[0]
        time.sleep(3)
        seen = screenshots(port, first["trace_id"], "CorpusRetriever", out)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    trace_text = seen.get("trace_page", "")
    documents = seen.get("CorpusRetriever_Info", "")
    events = seen.get("ragtrace.evaluation_Events", "")
    attributes = seen.get("ragtrace.evaluation_Attributes", "")
    checks = {
        "request shown (query and answer)": first["query"] in trace_text,
        "retriever and LLM spans shown": "CorpusRetriever" in trace_text
        and "DemoChatModel" in trace_text,
        "documents shown with their ids": all(c["id"] in documents for c in first["chunks"]),
        "evaluation spans shown": trace_text.count("ragtrace.evaluation") >= 5,
        "scores shown as gen_ai.evaluation.result events": "gen_ai.evaluation.result" in events,
        "a single score shown on its span": "gen_ai.evaluation.score.value" in attributes,
    }
    summary = {"phoenix_port": port, "requests": len(requests), "checks": checks}
    (out / "summary.json").write_text(json.dumps(summary | {"seen": seen}, indent=2))
    for name, ok in checks.items():
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
    print(f"screenshots in {out}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
