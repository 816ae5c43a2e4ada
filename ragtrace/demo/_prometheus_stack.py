"""A Prometheus beside ``ragtrace demo --prometheus``, with ragtrace's recording and alert rules.

``demo_prometheus(options)`` starts the ``prometheus`` binary on loopback, scraping the demo's
``/metrics`` with the rules shipped in ``grafana/prometheus/*.rules.yml`` and the demo app's own
floors (``DEMO_FLOORS``: set by ``ragtrace alerts floors``'s rule from the careful assistant's
answers, as a team sets them before launch, so an app that launches sloppy pages on
faithfulness), prints its URL, and
stops it (and deletes its data) when the demo ends, however it ends::

    with demo_prometheus(options, sys.stdout) as options:   # the metrics port is now fixed
        run_demo(options)

``demo_prometheus(options, time_scale=60)`` loads the rules time-lapsed
(``ragtrace.demo._time_lapse``): every window, ``for``, baseline and volume guard divided by 60,
scraped and evaluated every second, so an alert that needs an hour of history needs a minute.
``PrometheusStack`` is the same without the demo. A missing binary or missing rules raise
``DemoError`` naming the fix. Nothing is installed or downloaded.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from ragtrace._alerts.rules import RULES_DIR, RULES_GLOB, NoRuleFiles, rule_files
from ragtrace._network.http import ClosesOnExit, connect_host
from ragtrace.demo._run import DemoError, DemoOptions
from ragtrace.demo._time_lapse import (
    format_duration,
    parse_duration,
    scrape_interval_ms,
    time_lapse_duration,
    write_time_lapsed,
)

PREFERRED_PORT = 9090
DEMO_FLOORS = Path(__file__).with_name("aurora-help-floors.rules.yml")
SCRAPE_INTERVAL = "2s"
READY_TIMEOUT_S = 30.0
# The alerts as JSON: every Prometheus serves it, while the web UI's /alerts page is missing
# from builds without the UI's assets (Debian's package answers it 404).
ALERTS_PATH = "/api/v1/alerts"
STOP_TIMEOUT_S = 10.0
INSTALL_HINT = (
    "install Prometheus (Debian/Ubuntu: apt-get install prometheus; elsewhere: "
    "https://prometheus.io/download/) and put `prometheus` on PATH"
)


def find_prometheus() -> str:
    """The path of the ``prometheus`` binary on PATH.

    Raises:
        DemoError: There is none (the message says how to install it).
    """
    path = shutil.which("prometheus")
    if path is None:
        raise DemoError(
            f"--prometheus needs the prometheus binary, not found on PATH: {INSTALL_HINT}"
        )
    return path


def shipped_rules(rules_dir: Path = RULES_DIR) -> list[Path]:
    """The recording and alert rule files shipped with ragtrace (``*.rules.yml``).

    Raises:
        DemoError: None found (they come with a source checkout of ragtrace).
    """
    try:
        return rule_files(rules_dir)
    except NoRuleFiles:
        raise DemoError(
            f"--prometheus found no rule files ({RULES_GLOB}) in {rules_dir}; they are in "
            "grafana/prometheus of a ragtrace source checkout"
        ) from None


def scrape_target(addr: str, port: int) -> str:
    """``host:port`` at which a local Prometheus reaches a server listening on ``addr:port``."""
    return f"{connect_host(addr)}:{port}"


def free_port(host: str = "127.0.0.1", preferred: int = 0) -> int:
    """``preferred`` if it can be bound on ``host`` now, else a port the system picks."""
    for port in (preferred, 0) if preferred else (0,):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return int(sock.getsockname()[1])
    raise DemoError(f"no free TCP port on {host}")  # pragma: no cover - bind to 0 failed


class PrometheusStack(ClosesOnExit):
    """A Prometheus on loopback scraping ``targets`` with ``rules``; a context manager.

    Args:
        binary: The ``prometheus`` executable.
        targets: ``host:port`` of each ``/metrics`` endpoint to scrape.
        rules: Rule files to load.
        port: Where it listens (127.0.0.1); 0: 9090 when free, else any free port.
        scrape_interval: Also the rule evaluation interval.

    Attributes:
        url: ``http://127.0.0.1:PORT`` once started.
    """

    def __init__(
        self,
        binary: str,
        targets: Sequence[str],
        rules: Sequence[Path],
        port: int = 0,
        scrape_interval: str = SCRAPE_INTERVAL,
    ) -> None:
        self.binary = binary
        self.targets = list(targets)
        self.rules = [Path(r).resolve() for r in rules]
        self.port = port
        self.scrape_interval = scrape_interval
        self.url = ""
        self._workdir: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def alerts_url(self) -> str:
        """Where the alerts' state is read (JSON: pending and firing alerts, their labels)."""
        return f"{self.url}{ALERTS_PATH}"

    def config(self) -> dict[str, object]:
        """The Prometheus configuration (written as JSON, which is YAML)."""
        interval = self.scrape_interval
        return {
            "global": {"scrape_interval": interval, "evaluation_interval": interval},
            "rule_files": [str(path) for path in self.rules],
            "scrape_configs": [
                {
                    "job_name": "ragtrace-demo",
                    "scrape_timeout": interval,
                    "static_configs": [{"targets": self.targets}],
                }
            ],
        }

    def start(self) -> PrometheusStack:
        """Start Prometheus and wait until it is ready.

        Raises:
            DemoError: It exited or was not ready in time (with the end of its log).
        """
        port = self.port or free_port(preferred=PREFERRED_PORT)
        self._workdir = Path(tempfile.mkdtemp(prefix="ragtrace-demo-prometheus-"))
        config = self._workdir / "prometheus.yml"
        config.write_text(json.dumps(self.config(), indent=2))
        args = [
            self.binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={self._workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--enable-feature=exemplar-storage",
        ]
        with open(self._workdir / "prometheus.log", "wb") as log:
            self._process = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        self.url = f"http://127.0.0.1:{port}"
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        def ready() -> bool:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2.0) as response:
                return bool(response.status == 200)

        self._wait_for(ready, f"was not ready after {READY_TIMEOUT_S:.0f}s", READY_TIMEOUT_S)

    def wait_scraping(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Wait until Prometheus has tried to scrape every target once (up or not).

        A fresh Prometheus hands its targets to the scrapers only after a few seconds. Traffic
        that starts before would be counted by nothing: a counter's first scraped value is
        the base of every ``increase`` over it, so the requests before it would be lost from
        the alerts' windows, more of them passes than failures.

        Raises:
            DemoError: No scrape in time.
        """

        def scraped() -> bool:
            with urllib.request.urlopen(f"{self.url}/api/v1/targets", timeout=2.0) as answer:
                targets = json.load(answer)["data"]["activeTargets"]
            return bool(targets) and all(not t["lastScrape"].startswith("0001") for t in targets)

        self._wait_for(scraped, f"did not scrape its targets within {timeout_s:.0f}s", timeout_s)

    def _wait_for(self, done: Callable[[], bool], failure: str, timeout_s: float) -> None:
        """Poll ``done`` (an answer it cannot read counts as not yet) until it holds; DemoError
        saying ``failure`` after ``timeout_s``, or at once when Prometheus exits."""
        assert self._process is not None
        deadline = time.monotonic() + timeout_s
        while True:
            if self._process.poll() is not None:
                raise DemoError(
                    f"prometheus exited with status {self._process.returncode} before it was "
                    f"ready; its log ends:\n{self.log_tail()}"
                )
            try:
                if done():
                    return
            except (OSError, ValueError, KeyError):
                pass
            if time.monotonic() >= deadline:
                raise DemoError(
                    f"prometheus at {self.url} {failure}; its log ends:\n{self.log_tail()}"
                )
            time.sleep(0.1)

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of Prometheus's output."""
        if self._workdir is None:
            return ""
        try:
            text = (self._workdir / "prometheus.log").read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """Stop Prometheus (SIGTERM, then SIGKILL) and delete its data; idempotent."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_TIMEOUT_S)
        workdir, self._workdir = self._workdir, None
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)

    close = stop

    def __enter__(self) -> PrometheusStack:
        return self.start() if self._process is None else self


def time_lapse_note(scale: float) -> str:
    """What ``scale`` does to the quality alerts' times, for the banner."""
    if scale == 1:
        return ""
    shown = ", ".join(
        f"{what} {time_lapse_duration(real, scale)}"
        for what, real in (("15m windows last", "15m"), ("`for: 5m`", "5m"), ("7d baselines", "7d"))
    )
    return f", time-lapsed x{scale:g}: {shown}"


@contextmanager
def demo_prometheus(
    options: DemoOptions, out: TextIO | None = None, *, time_scale: float = 1.0
) -> Iterator[DemoOptions]:
    """Run a Prometheus for the demo while the ``with`` block runs; yields the demo's options.

    The metrics port is fixed first (a free one when ``options.config.metrics_port`` is 0), so
    Prometheus knows what to scrape before the demo starts.

    Args:
        options: The demo's options.
        out: Where the Prometheus URL is printed (default: the demo's human output).
        time_scale: Load the shipped rules time-lapsed by this factor (1: as shipped), scraped
            and evaluated at ``scrape_interval_ms(time_scale)``.

    Raises:
        DemoError: No ``prometheus`` binary, no rule files, or it did not start.
    """
    if time_scale < 1:
        raise DemoError(f"the alert time scale must be >= 1, got {time_scale:g}")
    out = out or (sys.stderr if options.as_json else sys.stdout)
    binary, shipped = find_prometheus(), shipped_rules()
    rules = [*shipped, DEMO_FLOORS]
    config = options.config
    port = config.metrics_port or free_port(config.metrics_addr)
    options = replace(options, config=config.replace(metrics_port=port))
    target = scrape_target(config.metrics_addr, port)
    interval = format_duration(scrape_interval_ms(time_scale, parse_duration(SCRAPE_INTERVAL)))
    lapsed = None
    if time_scale != 1:
        lapsed = Path(tempfile.mkdtemp(prefix="ragtrace-demo-rules-"))
        rules = write_time_lapsed(rules, time_scale, lapsed)
    try:
        with PrometheusStack(binary, [target], rules, scrape_interval=interval) as stack:
            stack.wait_scraping()  # so that it counts the demo's requests from the first one
            out.write(
                f"prometheus at {stack.url} (scraping {target} every {interval}; "
                f"{len(shipped)} rule files from {RULES_DIR} and the demo app's floors"
                f"{time_lapse_note(time_scale)}; "
                f"alerts at {stack.alerts_url}); it stops with the demo\n"
            )
            out.flush()
            yield options
    finally:
        if lapsed is not None:
            shutil.rmtree(lapsed, ignore_errors=True)
