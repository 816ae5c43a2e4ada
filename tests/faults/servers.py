"""Judge servers for the fault tests, each its own process on a loopback port we choose.

``start_judge(port)`` runs the real local llama.cpp judge (``ragtrace judge serve`` with the
packaged SmolLM2-135M: fast, real, and its answers are grammar-constrained JSON);
``start_silent(port)`` a server that accepts and never answers (``silent_server``). Both are
stopped with ``harness.stop_process``, by process id, so the same port can be handed from one
to the other, or the judge killed and started again.
"""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

from ragtrace._backends._loading import MissingExtraError
from ragtrace._judges import JudgeClient
from ragtrace._judges.local import model_alias, resolve_model_path
from tests.components import missing_component, require_module, wait_until
from tests.faults.harness import stop_process

JUDGE_MODEL = "smollm2-135m"
ROOT = Path(__file__).resolve().parents[2]


def judge_client(port: int, **options: object) -> JudgeClient:
    """A client for the judge on ``port``: no cache, one retry, a short backoff (override any)."""
    settings: dict[str, object] = {"cache": False, "max_retries": 1, "backoff_s": 0.05}
    settings.update(options)
    return JudgeClient(
        f"openai/{model_alias(JUDGE_MODEL)}",
        api_base=f"http://127.0.0.1:{port}/v1",
        **settings,  # type: ignore[arg-type]
    )


def start_judge(port: int, log_dir: Path, start_timeout_s: float = 90.0) -> subprocess.Popen[bytes]:
    """The real local judge serving on ``port`` (its output in ``log_dir``), once it answers
    ``/v1/models``.

    A missing xllamacpp or model package skips the test (fails it under ``CI=true``).
    """
    require_module("xllamacpp", "pip install 'ragtrace[judge]'")
    try:
        resolve_model_path(JUDGE_MODEL)
    except MissingExtraError as exc:
        missing_component(f"the local judge needs {exc}")
    args = [sys.executable, "-m", "ragtrace", "judge", "serve", "--model", JUDGE_MODEL,
            "--port", str(port), "--threads", "1", "--context", "2048"]  # fmt: skip
    log_path = log_dir / f"judge-{port}.log"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(args, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)

    def answers() -> bool:
        if process.poll() is not None:
            output = log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"judge server exited with {process.returncode}: {output}")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as reply:
            return bool(reply.status == 200)

    try:
        wait_until(f"the judge on port {port}", answers, start_timeout_s)
    except BaseException:
        stop_process(process, kill=True)
        raise
    return process


def start_silent(port: int, start_timeout_s: float = 30.0) -> subprocess.Popen[bytes]:
    """A server on ``port`` that accepts connections and never answers."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.faults.silent_server", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # bounded: the server prints it or exits at once
    if line.strip() != b"listening":
        stop_process(process, kill=True)
        raise RuntimeError(f"silent server on port {port} did not start: {line!r}")
    return process
