"""The ``/metrics`` endpoint ``init(metrics_port=...)`` opens: in one process, or for a server's
worker processes together.

One process: the instance's registry is served; if the port is taken, ``init`` still
succeeds: one WARNING line says why and what to do, ``ragtrace_internal_errors_total
{site="metrics.server"}`` counts it, and the process runs on without an endpoint.

Multiprocess mode (``PROMETHEUS_MULTIPROC_DIR`` set before the server starts; see
docs/multiprocess.md): every worker process writes its values to its own file in that
directory, and whichever worker binds the port first serves all of the files merged
(``aggregated_registry``), so each request is counted once whichever worker served it. The
other workers log one INFO line and stand by, trying the port every ``STANDBY_RETRY_S``: when
the serving worker exits, one of them takes over. Live gauges (``multiprocess_mode="live*"``)
of processes that have exited are dropped at each scrape, so no server hook is needed for
that (gunicorn's ``child_exit`` may still call prometheus_client's ``mark_process_dead``).
"""

from __future__ import annotations

import errno
import glob
import logging
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from ragtrace._metrics.endpoint import MetricsServer, start_metrics_server
from ragtrace._metrics.families import MULTIPROC_ENV, multiprocess_dir

logger = logging.getLogger("ragtrace")

STANDBY_RETRY_S = 2.0
SERVER_SITE = "metrics.server"
_warned_late = False


def multiprocess_path() -> str | None:
    """The multiprocess directory (created if missing), or None in single-process mode.

    Logs one WARNING per process when ``PROMETHEUS_MULTIPROC_DIR`` is set but came too late:
    prometheus_client was imported before it was set, so values stay per process.
    """
    global _warned_late
    path = multiprocess_dir()
    if path is None:
        if os.environ.get(MULTIPROC_ENV) and not _warned_late:
            _warned_late = True
            logger.warning(
                "ragtrace: %s is set, but prometheus_client was imported before it was, so "
                "metrics stay per process; set it in the environment the server starts with",
                MULTIPROC_ENV,
            )
        return None
    os.makedirs(path, exist_ok=True)
    return path


class _LiveProcesses:
    """prometheus_client's ``MultiProcessCollector`` that first forgets the live gauges of
    processes that have exited (uvicorn has no hook to do it)."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._merged = MultiProcessCollector(None, path)  # type: ignore[no-untyped-call]

    def collect(self) -> Iterable[Metric]:
        forget_exited_processes(self._path)
        return self._merged.collect()  # type: ignore[no-untyped-call,no-any-return]


def aggregated_registry(path: str, first: Any = None) -> CollectorRegistry:
    """A registry holding every process's values in ``path``, merged as their types say:
    counters and histograms summed, gauges by their ``multiprocess_mode``.

    ``first``, a collector, is collected before the files are read: this process's queued
    metric updates (``ragtrace._metrics.deferred``) go in ahead of a scrape it serves.
    """
    registry = CollectorRegistry()
    if first is not None:
        registry.register(first)
    registry.register(_LiveProcesses(path))
    return registry


def forget_exited_processes(path: str) -> list[int]:
    """Remove the live-gauge files of processes that are gone; the pids removed."""
    gone: set[int] = set()
    for name in glob.glob(os.path.join(path, "gauge_live*_*.db")):
        pid_text = os.path.basename(name)[: -len(".db")].rpartition("_")[2]
        if pid_text.isdigit() and not _alive(int(pid_text)):
            gone.add(int(pid_text))
    for pid in gone:
        mark_process_dead(pid, path)  # type: ignore[no-untyped-call]
    return sorted(gone)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


class MetricsEndpoint:
    """The ``/metrics`` endpoint of one ``Ragtrace``: serving, standing by, or absent.

    Build it with ``open_metrics_endpoint`` (never raises) or ``MetricsEndpoint(server)``.

    Args:
        server: The running server, or None.
    """

    def __init__(self, server: MetricsServer | None = None) -> None:
        self._server = server
        self._lock = threading.Lock()
        self._stop = threading.Event()

    @property
    def server(self) -> MetricsServer | None:
        """The running server: None while standing by, or when there is none."""
        return self._server

    def stand_by(
        self,
        port: int,
        addr: str,
        registry: CollectorRegistry,
        retry_s: float = STANDBY_RETRY_S,
        *,
        token: str | None = None,
        allow_unauthenticated: bool = False,
    ) -> None:
        """Try to bind ``addr:port`` every ``retry_s`` on a daemon thread until it works
        (``token`` and ``allow_unauthenticated``: see ``start_metrics_server``)."""

        def retry() -> None:
            while not self._stop.wait(retry_s):
                try:
                    server = start_metrics_server(
                        port,
                        addr,
                        registry,
                        token=token,
                        allow_unauthenticated=allow_unauthenticated,
                    )
                except OSError:
                    continue
                with self._lock:
                    if self._stop.is_set():
                        server.close()
                        return
                    self._server = server
                logger.info("ragtrace: this process now serves the metrics at %s", server.url)
                return

        threading.Thread(target=retry, name="ragtrace-metrics-standby", daemon=True).start()

    def close(self) -> None:
        """Stop standing by and close the server (idempotent)."""
        self._stop.set()
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.close()


def open_metrics_endpoint(
    port: int,
    addr: str,
    registry: CollectorRegistry,
    *,
    multiprocess: bool,
    count_error: Callable[[str], None],
    token: str | None = None,
    allow_unauthenticated: bool = False,
) -> MetricsEndpoint:
    """Serve ``registry`` at ``addr:port``, or stand by, or log and count why not. Never
    raises ``OSError``.

    Args:
        port: The port (0: a free one).
        addr: The address to listen on.
        registry: What to serve (``aggregated_registry`` in multiprocess mode).
        multiprocess: A taken port is then taken by a sibling worker: stand by for it.
        count_error: Counts a failure by site (``metrics.server``).
        token: Require this bearer token on every path.
        allow_unauthenticated: Listen beyond loopback without a token.

    Raises:
        ExposureRefused: ``addr`` is beyond loopback, with no token and not allowed.
    """
    try:
        return MetricsEndpoint(
            start_metrics_server(
                port, addr, registry, token=token, allow_unauthenticated=allow_unauthenticated
            )
        )
    except OSError as exc:
        endpoint = MetricsEndpoint()
        if multiprocess and exc.errno == errno.EADDRINUSE:
            logger.info(
                "ragtrace: %s:%d is taken, by another worker of this server as a rule; it "
                "serves every worker's metrics (multiprocess mode), and process %d takes over "
                "if it goes",
                addr,
                port,
                os.getpid(),
            )
            endpoint.stand_by(
                port, addr, registry, token=token, allow_unauthenticated=allow_unauthenticated
            )
            return endpoint
        count_error(SERVER_SITE)
        hint = (
            f"; with several worker processes (gunicorn, uvicorn --workers) set {MULTIPROC_ENV}"
            " so one endpoint serves them all (docs/multiprocess.md)"
            if exc.errno == errno.EADDRINUSE
            else ""
        )
        logger.warning(
            "%s; process %d runs on without /metrics%s", exc.strerror or exc, os.getpid(), hint
        )
        return endpoint
