"""Real gunicorn and uvicorn servers on loopback for the multi-process tests.

``run_server("gunicorn", workers=4, env=...)`` starts ``tests.multiprocess_app`` under gunicorn
(``wsgi``) or uvicorn (``asgi``) on a free port, waits until it answers, yields a
``WebServer`` and stops it by pid after (SIGTERM, then SIGKILL to the process group)::

    with run_server("gunicorn", workers=4, env={"PROMETHEUS_MULTIPROC_DIR": str(d)}) as srv:
        pids = srv.ask(200)                      # 200 requests; the pids that answered
        samples = srv.scrape()                   # {(name, labels): value} of /metrics

A missing gunicorn or uvicorn skips the test, and fails it under ``CI=true``. Every wait is
bounded; a server that does not come up says so with the tail of its log.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.components import free_port, require_module, wait_until

ROOT = Path(__file__).resolve().parent.parent
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
APP = "mp-app"
INSTALL = "pip install -e '.[dev]' (gunicorn and uvicorn are pinned in the dev extra)"


class WebServer:
    """A running server: its master process, app port, metrics port and log."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, metrics_port: int, log: Path):
        self.process = process
        self.port = port
        self.metrics_port = metrics_port
        self.log = log

    def get(self, path: str, port: int | None = None, timeout_s: float = 10.0) -> str:
        url = f"http://127.0.0.1:{port or self.port}{path}"
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return str(response.read().decode())

    def ask(self, n: int, threads: int = 4) -> set[int]:
        """Send ``n`` ``/ask`` requests from ``threads`` clients; the pids that answered."""
        with ThreadPoolExecutor(threads) as pool:
            answers = list(pool.map(lambda _: self.get("/ask"), range(n)))
        return {int(a.split()[0]) for a in answers}

    def wait_for_workers(self, n: int, timeout_s: float = 60.0) -> set[int]:
        """Ask ``/pid`` until ``n`` different workers have answered (all have booted)."""
        seen: set[int] = set()

        def all_answered() -> bool:
            seen.add(int(self.get("/pid", timeout_s=5.0)))
            return len(seen) >= n

        wait_until(f"{n} workers to answer", all_answered, timeout_s, interval_s=0.01)
        return seen

    def scrape(self) -> Samples:
        """Every sample of ``/metrics`` on the metrics port; a series seen twice fails."""
        text = self.get("/metrics", port=self.metrics_port)
        samples: Samples = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                key = (sample.name, frozenset(sample.labels.items()))
                assert key not in samples, f"series exposed twice: {key}"
                samples[key] = sample.value
        return samples

    def workers(self) -> list[int]:
        """The pids of the master's child processes (its workers)."""
        children = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    stat = (entry / "stat").read_text()
                    if int(stat.rpartition(")")[2].split()[1]) == self.process.pid:
                        children.append(int(entry.name))
        return sorted(children)

    def metrics_listener(self) -> int | None:
        """The pid of the worker that holds the metrics port, if one does."""
        inodes = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with contextlib.suppress(OSError):
                for line in Path(table).read_text().splitlines()[1:]:
                    fields = line.split()
                    if (
                        int(fields[1].rpartition(":")[2], 16) == self.metrics_port
                        and fields[3] == "0A"
                    ):
                        inodes.add(f"socket:[{fields[9]}]")
        for pid in self.workers():
            with contextlib.suppress(OSError):
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    with contextlib.suppress(OSError):
                        if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                            return pid
        return None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, timeout_s: float = 30.0) -> float:
        """SIGTERM the master and wait for it (and its workers) to exit; the seconds it took."""
        started = time.monotonic()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        return time.monotonic() - started

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)


def _command(kind: str, workers: int, port: int) -> list[str]:
    if kind == "gunicorn":
        require_module("gunicorn", INSTALL)
        return [
            sys.executable, "-m", "gunicorn", "--workers", str(workers),
            "--bind", f"127.0.0.1:{port}", "--no-control-socket", "--graceful-timeout", "30",
            "--chdir", str(ROOT), "tests.multiprocess_app:wsgi",
        ]  # fmt: skip
    require_module("uvicorn", INSTALL)
    return [
        sys.executable, "-m", "uvicorn", "--workers", str(workers), "--host", "127.0.0.1",
        "--port", str(port), "--app-dir", str(ROOT), "tests.multiprocess_app:asgi",
    ]  # fmt: skip


@contextmanager
def run_server(
    kind: str, workers: int, env: Mapping[str, str] | None = None, start_timeout_s: float = 90.0
) -> Iterator[WebServer]:
    """Start ``kind`` (gunicorn or uvicorn) with ``workers`` processes; stop it after."""
    port, metrics_port = free_port(), free_port()
    workdir = Path(tempfile.mkdtemp(prefix=f"ragtrace-{kind}-"))
    log = workdir / "server.log"
    environ = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("RAGTRACE_", "PROMETHEUS_"))},
        "MP_METRICS_PORT": str(metrics_port),
        "MP_APP": APP,
        "PYTHONPATH": str(ROOT),
        **(env or {}),
    }
    with open(log, "wb") as out:
        process = subprocess.Popen(
            _command(kind, workers, port),
            stdout=out,
            stderr=subprocess.STDOUT,
            env=environ,
            cwd=ROOT,
            start_new_session=True,
        )
    server = WebServer(process, port, metrics_port, log)
    try:

        def up() -> str:
            if process.poll() is not None:
                raise RuntimeError(f"{kind} exited with {process.returncode}:\n{server.log_text()}")
            return server.get("/pid", timeout_s=2.0)

        try:
            wait_until(f"{kind} answering on 127.0.0.1:{port}", up, start_timeout_s)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; log tail:\n{server.log_text()[-3000:]}") from None
        yield server
    finally:
        server.stop()
        with contextlib.suppress(OSError):
            log.unlink()
        with contextlib.suppress(OSError):
            workdir.rmdir()


def metric(samples: Samples, name: str, **labels: str) -> float:
    """The value of one series (0 when absent)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum over the series of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


def wait_for_metrics(server: WebServer, timeout_s: float = 30.0) -> Samples:
    """Scrape until the metrics port answers (a standby worker may be taking over)."""
    samples: Samples = wait_until(
        "the metrics port to answer", server.scrape, timeout_s, interval_s=0.25
    )
    return samples


def wait_for_exit(pid: int, timeout_s: float = 15.0) -> None:
    wait_until(f"process {pid} to exit", lambda: not Path(f"/proc/{pid}").exists(), timeout_s)
