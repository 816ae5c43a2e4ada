"""Runs one interleaved group for ``overhead.py``: every configuration of one scenario, at once.

Each configuration gets its own fresh worker process (``_overhead_worker.py``: instrumentors
patch globals, so configurations cannot share one). All start together and warm up; then they
take turns on short chunks of requests in a rotating order, so that the host's speed, which
drifts over seconds on a shared VM, weighs on every configuration alike. A worker reads its own
``time.process_time()``, so one that waits costs nothing and counts nothing.
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from _overhead_worker import ASYNC_BATCH, CHUNK_MARK, READY_MARK, RESULT_MARK

WORKER = Path(__file__).resolve().parent / "_overhead_worker.py"
BUSY_CORES = 0.15  # background load above which a group is flagged as noisy
# Requests per turn: about 50 ms of baseline work (an async turn is one batch of 50).
CHUNK = {"lc-invoke": 20, "lc-stream": 5, "lc-async": ASYNC_BATCH, "li-query": 20}
_MARKS = (READY_MARK, CHUNK_MARK, RESULT_MARK)


def machine_busy_s() -> float | None:
    """CPU seconds all processes of this machine have used since boot (/proc/stat), or None."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(x) for x in stat.readline().split()[1:8]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq = fields
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    """CPU seconds used by this process and its waited-for children."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def wait_idle(max_wait_s: float) -> float:
    """Sleep until other processes used under BUSY_CORES for a whole second (at most max_wait_s).

    Returns the seconds waited. Helps on a shared machine whose load comes and goes.
    """
    start = time.monotonic()
    while time.monotonic() - start < max_wait_s:
        busy0, own0 = machine_busy_s(), own_cpu_s()
        if busy0 is None:
            break
        time.sleep(1.0)
        busy1 = machine_busy_s()
        if busy1 is None or (busy1 - busy0) - (own_cpu_s() - own0) < BUSY_CORES:
            break
    return time.monotonic() - start


class Worker:
    """One worker process and its line protocol (READY, ``run N`` -> CHUNK, ``finish K``)."""

    def __init__(
        self, python: str, config: str, scenario: str, warmup: int, env: dict[str, str]
    ) -> None:
        self.config = config
        self.scenario = scenario
        # stderr goes to a file: a chatty peer (a warning per request) must never block on a pipe.
        self._stderr: IO[str] = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed in close)
        self.proc = subprocess.Popen(
            [
                python,
                str(WORKER),
                f"--config={config}",
                f"--scenario={scenario}",
                f"--warmup={warmup}",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            text=True,
            bufsize=1,
        )

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def read(self, timeout: float) -> tuple[str, dict[str, Any]]:
        """The next protocol message as (mark, payload); ("timeout" | "eof", {}) otherwise."""
        assert self.proc.stdout is not None
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            self.proc.kill()

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            for line in self.proc.stdout:
                for mark in _MARKS:
                    if line.startswith(mark):
                        payload: dict[str, Any] = json.loads(line[len(mark) :])
                        return mark, payload
        finally:
            timer.cancel()
        return ("timeout" if timed_out.is_set() else "eof"), {}

    def failure(self, mark: str, timeout: float) -> dict[str, Any]:
        """A result for a worker that did not answer as it should, with its stderr's tail."""
        self._stop()
        self._stderr.seek(0)
        tail = self._stderr.read()[-1500:].strip()
        self._stderr.close()
        status = "timeout" if mark == "timeout" else "error"
        detail = f"worker ran over {timeout:.0f} s" if mark == "timeout" else tail
        code = self.proc.returncode
        return {
            "config": self.config,
            "scenario": self.scenario,
            "status": status,
            "detail": detail or f"worker exited with {code} and said nothing",
        }

    def close(self) -> None:
        self._stop()
        self._stderr.close()

    def _stop(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def run_group(
    python: str,
    configs: Sequence[str],
    scenario: str,
    requests: int,
    warmup: int,
    bytes_pass: int,
    env: dict[str, str],
    timeout: float,
    order_seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Measure ``configs`` on ``scenario`` together; returns each one's worker result.

    ``bytes_pass`` > 0 adds the span/attribute count pass (K requests) after the timed part.
    Every ok result gets ``background_cores``: CPU that other processes of the machine used,
    on average, while the group ran.
    """
    busy0, own0, wall0 = machine_busy_s(), own_cpu_s(), time.monotonic()
    workers = {c: Worker(python, c, scenario, warmup, env) for c in configs}
    results: dict[str, dict[str, Any]] = {}
    live: dict[str, Worker] = {}
    for config, worker in workers.items():
        mark, payload = worker.read(timeout)
        if mark == READY_MARK:
            live[config] = worker
        elif mark == RESULT_MARK:  # not installed, unsupported, or failed during set-up
            worker.close()
            results[config] = payload
        else:
            results[config] = worker.failure(mark, timeout)

    chunk = CHUNK.get(scenario, 20)
    for k in range(math.ceil(requests / chunk)):
        count = min(chunk, requests - k * chunk)
        names = list(live)
        if not names:
            break
        shift = (order_seed + k) % len(names)
        for config in names[shift:] + names[:shift]:
            worker = live[config]
            worker.send(f"run {count}")
            mark, _payload = worker.read(timeout)
            if mark != CHUNK_MARK:
                results[config] = worker.failure(mark, timeout)
                del live[config]

    for config, worker in live.items():
        worker.send(f"finish {bytes_pass}")
        mark, payload = worker.read(timeout)
        if mark == RESULT_MARK:
            worker.close()
            results[config] = payload
        else:
            results[config] = worker.failure(mark, timeout)

    busy1, own1, wall1 = machine_busy_s(), own_cpu_s(), time.monotonic()
    if busy0 is not None and busy1 is not None:
        other = max(0.0, ((busy1 - busy0) - (own1 - own0)) / max(wall1 - wall0, 1e-3))
        for result in results.values():
            if result.get("status") == "ok":
                result["background_cores"] = other
    return results
