"""A real redis-server on loopback for tests: start, kill, restart with the same data.

Missing ``redis-server`` skips the test locally and fails it under ``CI=true``::

    with run_redis(tmp_path) as server:
        client = server.client()
        server.kill()            # SIGKILL, like a crash
        server.start()           # same port, same AOF: pending entries survive
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.components import INSTALL_HINTS, free_port, require_binary, require_module

INSTALL_HINTS.setdefault("redis-server", "apt-get install -y --no-install-recommends redis-server")


class RedisServer:
    """One redis-server process (AOF on unless ``aof=False``, no RDB snapshots, ``noeviction``).

    ``pause()``/``resume()`` stop and continue it (``SIGSTOP``/``SIGCONT``): a stalled server
    whose clients time out while their commands wait in its socket buffers.
    """

    def __init__(self, workdir: Path, port: int | None = None, aof: bool = True) -> None:
        self.binary = require_binary("redis-server")
        self.redis = require_module("redis", "pip install redis")
        self.workdir = workdir
        self.port = port or free_port()
        self.aof = aof
        self.process: subprocess.Popen[bytes] | None = None
        self.log = workdir / "redis.log"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 15.0) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        args = [
            self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "yes" if self.aof else "no", "--appendfsync", "always",
            "--dir", str(self.workdir),
            "--maxmemory-policy", "noeviction", "--daemonize", "no", "--logfile", str(self.log),
        ]  # fmt: skip
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited: {self._log_tail()}")
            try:
                with self.client(timeout_s=0.5) as probe:  # closed: no connection left behind
                    if probe.ping():
                        return
            except Exception:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not answer in {timeout_s}s: {self._log_tail()}")

    def client(self, timeout_s: float = 2.0) -> Any:
        return self.redis.Redis(
            host="127.0.0.1", port=self.port, socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
        )  # fmt: skip

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def pause(self) -> None:
        """``SIGSTOP``: the server stops answering; connections and buffered commands stay."""
        assert self.process is not None and self.process.poll() is None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """``SIGCONT`` after ``pause``."""
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)  # a paused server cannot stop
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def _log_tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"


@contextmanager
def run_redis(workdir: Path) -> Iterator[RedisServer]:
    server = RedisServer(workdir)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def connection_ids(client: Any) -> set[int]:
    """The ids of the connections the Redis server ``client`` talks to has open."""
    return {int(c["id"]) for c in client.client_list()}
