"""A real Prometheus scrapes ``/metrics`` while the application shuts down, and starts again.

Prometheus scrapes every 200 ms and a scraper thread of the test scrapes back to back, so
scrapes are in flight when ``shutdown()`` runs. The app must not notice (shutdown returns
within its budget, raising nothing), each scrape gets either a whole exposition or a refused
or reset connection (never an error page or a cut-off body; a scrape still in flight when the
metrics are unregistered gets an empty 200, a known bug shown by the last test), Prometheus
keeps every request
counted before the shutdown, and when the app starts again on the same port the target comes
back up with the new requests.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.error
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ragtrace.evaluators import create
from tests.components import Prometheus, free_port, http_get, run_prometheus, wait_until
from tests.faults.harness import APP, REQUEST_BUDGET_S, FaultApp

SHUTDOWN_BUDGET_S = 5.0
"""``shutdown(timeout_s=...)`` given here; it must return within it while being scraped."""
SERIES = f'ragtrace_requests_total{{app="{APP}"}}'
REQUESTS = f"sum({SERIES})"


class Scraper:
    """Scrapes ``url`` back to back on a thread; keeps what each scrape got."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.whole = 0  # 200 with an exposition that parses and holds ragtrace's families
        self.refused = 0  # the connection was refused or reset: the endpoint is gone
        self.closing = 0  # 503: the endpoint is closing (a failed scrape, never an empty one)
        self.empty = 0  # 200 without ragtrace's families: must never happen
        self.bad: list[str] = []  # anything else: an error page, a cut-off or garbled body
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="test-scraper", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with http_get(self.url, timeout_s=2.0) as reply:
                    body = reply.read().decode()
                names = {f.name for f in text_string_to_metric_families(body)}
                if reply.status == 200 and "ragtrace_requests" in names:
                    self.whole += 1
                elif reply.status == 200 and not names:
                    self.empty += 1
                else:
                    self.bad.append(f"{reply.status}: {sorted(names)[:5]}")
            except urllib.error.HTTPError as exc:
                if exc.code == 503:
                    self.closing += 1
                else:
                    self.bad.append(f"HTTP {exc.code}")
            except (ConnectionError, urllib.error.URLError, http.client.RemoteDisconnected):
                self.refused += 1
                time.sleep(0.01)
            except Exception as exc:  # a truncated body, a parse error...
                self.bad.append(repr(exc))

    def __enter__(self) -> Scraper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def prometheus(port: int) -> Iterator[Prometheus]:
    with run_prometheus([f"127.0.0.1:{port}"], scrape_interval="200ms") as prom:
        yield prom


def target_health(prom: Prometheus) -> str:
    return str(prom.targets()[0]["health"])


def serve_and_count(port: int, prom: Prometheus, requests: range) -> FaultApp:
    """Start the app on ``port``, send ``requests``, wait until Prometheus has them all."""
    app = FaultApp([create("looping")], metrics_port=port)
    app.requests(requests)
    assert app.rt.metrics_server is not None, "the app did not open /metrics"
    prom.query(REQUESTS, until=lambda r: bool(r) and float(r[0]["value"][1]) == len(requests))
    return app


def test_scraped_while_shutting_down_then_restarted(port: int, prometheus: Prometheus) -> None:
    app = serve_and_count(port, prometheus, range(20))
    assert app.rt.metrics_server is not None
    with Scraper(app.rt.metrics_server.url) as scraper:
        wait_until("a few scrapes", lambda: scraper.whole >= 5, 10)
        started = time.monotonic()
        app.rt.shutdown(timeout_s=SHUTDOWN_BUDGET_S)  # raises nothing into the app
        took = time.monotonic() - started
        wait_until("scrapes refused after shutdown", lambda: scraper.refused >= 3, 10)
    assert took < SHUTDOWN_BUDGET_S
    assert scraper.bad == []
    assert scraper.empty == 0  # never a 200 without the metrics (503 while closing is fine)
    assert app.slowest_s < REQUEST_BUDGET_S
    wait_until("Prometheus to see the target down", lambda: target_health(prometheus) == "down", 10)
    # Every request counted before the shutdown stays in Prometheus.
    assert prometheus.query(f"sum(max_over_time({SERIES}[1m]))")[0]["value"][1] == "20"

    restarted = serve_and_count(port, prometheus, range(100, 105))
    try:
        assert target_health(prometheus) == "up"
        # The new process's counter starts again from zero: Prometheus sees a reset (which
        # rate() and increase() handle), and the new requests on top.
        resets = prometheus.query_once(f"sum(resets({SERIES}[1m]))")
        assert float(resets[0]["value"][1]) >= 1
    finally:
        restarted.close()


def test_a_scrape_in_flight_at_shutdown_gets_the_metrics_or_an_error(port: int) -> None:
    app = FaultApp([create("looping")], metrics_port=port)
    app.requests(range(3))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n")  # headers not ended
        time.sleep(0.5)  # the endpoint has accepted it: a handler thread waits for the rest
        app.close()
        try:
            conn.sendall(b"\r\n")
            reply = conn.makefile("rb").read()
        except ConnectionError:
            return  # refused mid-way: Prometheus records a failed scrape, as it should
    status, _, body = reply.partition(b"\r\n\r\n")
    if not status.startswith(b"HTTP/1.0 200"):
        assert status.startswith(b"HTTP/1.0 503"), status  # a failed scrape, not an empty one
        return
    families = {f.name for f in text_string_to_metric_families(body.decode())}
    assert "ragtrace_requests" in families, status
