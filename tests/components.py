"""Real components for tests: find binaries, pick ports, run a Prometheus (or an Alertmanager)
on loopback.

A missing binary skips the test locally and FAILS it under ``CI=true`` (CI must install it)::

    promtool("check", "rules", "rules.yml")           # CompletedProcess; never raises on exit != 0

    with run_prometheus([server.address], rules_files=[rules]) as prom:
        prom.wait_for_targets()
        series = prom.query('sum by (outcome) (ragtrace_evaluations_total)')

Every wait is bounded and polls; a timeout says what it waited for and shows the last answer
(and, for a server that did not start, the tail of its log).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest

INSTALL_HINTS = {
    "prometheus": "apt-get install -y --no-install-recommends prometheus",
    "promtool": "apt-get install -y --no-install-recommends prometheus",
    "prometheus-alertmanager": "apt-get install -y --no-install-recommends prometheus-alertmanager",
    "amtool": "apt-get install -y --no-install-recommends prometheus-alertmanager",
    "qemu-x86_64": "apt-get install -y --no-install-recommends qemu-user",
}

Series = list[dict[str, Any]]
ServerT = TypeVar("ServerT", bound="LoopbackServer")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing_component(message: str) -> NoReturn:
    """Skip the test because a component is missing; FAIL it under ``CI=true``."""
    if in_ci():
        pytest.fail(f"CI=true and {message}", pytrace=False)
    pytest.skip(message)


def require_binary(name: str) -> str:
    """The path of executable ``name``; skip the test when missing (fail under ``CI=true``)."""
    path = shutil.which(name)
    if path is not None:
        return path
    hint = INSTALL_HINTS.get(name, f"install the package that provides {name!r}")
    missing_component(f"{name} not found on PATH; install it with: {hint}")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (bind to port 0 and ask)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def promtool(
    *args: str, stdin: str | None = None, timeout_s: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """Run ``promtool *args`` (``stdin`` fed to it); the finished process, any exit code."""
    return subprocess.run(
        [require_binary("promtool"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout_s,
        check=False,
    )


def wait_until(
    what: str,
    probe: Callable[[], Any],
    timeout_s: float,
    interval_s: float = 0.2,
    retry_on: tuple[type[Exception], ...] = (OSError,),
) -> Any:
    """Call ``probe`` until it returns something truthy; TimeoutError naming ``what`` if never.

    ``retry_on`` exceptions (default: connection errors) count as "not yet" and the last one is
    in the timeout message; any other exception escapes at once.
    """
    deadline = time.monotonic() + timeout_s
    last: object = None
    while True:
        try:
            result = probe()
        except retry_on as exc:
            result, last = None, exc
        else:
            if result:
                return result
            last = result
        if time.monotonic() >= deadline:
            raise TimeoutError(
                f"timed out after {timeout_s:.0f}s waiting for {what}; last: {last!r}"
            )
        time.sleep(interval_s)


def with_sigint_ignored(command: Sequence[str]) -> list[str]:
    """``command`` (a Python one: ``[sys.executable, ...]``) started with SIGINT ignored, as a
    script's background job (``cmd &`` without job control) inherits it; exec keeps that."""
    python, *args = command
    launcher = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
        "os.execv(sys.argv[1], sys.argv[1:])"
    )
    return [python, "-c", launcher, python, *args]


def stop_process(proc: subprocess.Popen[Any], timeout_s: float = 30.0) -> None:
    """Stop a process a test started, by its pid: SIGTERM, then SIGKILL after ``timeout_s``."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def http_get(url: str, headers: Mapping[str, str] | None = None, timeout_s: float = 5.0) -> Any:
    """GET ``url``; the response (read it with ``.read()``, headers via ``.headers``)."""
    request = urllib.request.Request(url, headers=dict(headers or {}))
    return urllib.request.urlopen(request, timeout=timeout_s)


class PrometheusError(RuntimeError):
    """Prometheus answered a query with an error (bad PromQL, bad parameters)."""


class LoopbackServer:
    """A server a test started on loopback (``run_prometheus``, ``run_alertmanager``).

    Attributes:
        url: Base URL, e.g. ``http://127.0.0.1:41234``.
        workdir: Its config, data and log live here.
        log_path: Its stdout and stderr.
    """

    name = "server"

    def __init__(self, url: str, workdir: Path, process: subprocess.Popen[bytes]) -> None:
        self.url = url
        self.workdir = workdir
        self.log_path = workdir / f"{self.name}.log"
        self.process = process

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


class Prometheus(LoopbackServer):
    """A running Prometheus (see ``run_prometheus``)."""

    name = "prometheus"

    def api(self, path: str, **params: str) -> Any:
        """GET ``/api/v1/<path>``; the ``data`` of a successful answer.

        Raises:
            PrometheusError: Prometheus said ``error`` (the message says why).
        """
        query = urllib.parse.urlencode(params)
        url = f"{self.url}/api/v1/{path}" + (f"?{query}" if query else "")
        try:
            with http_get(url, timeout_s=10.0) as response:
                body = json.load(response)
        except urllib.error.HTTPError as exc:
            body = json.loads(exc.read() or b"{}")
        if body.get("status") != "success":
            raise PrometheusError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query_once(self, promql: str) -> Series:
        """One instant query now; the result vector (``[{"metric": {...}, "value": [t, v]}]``)."""
        data = self.api("query", query=promql)
        result: Series = data["result"] if data["resultType"] in ("vector", "matrix") else []
        return result

    def query(
        self,
        promql: str,
        until: Callable[[Series], bool] = bool,
        timeout_s: float = 30.0,
    ) -> Series:
        """Poll an instant query until ``until(result)`` holds (default: a non-empty result).

        A PromQL error raises at once (it will not fix itself); a timeout raises TimeoutError
        showing the last result.
        """
        last: list[Series] = []

        def probe() -> Series | None:
            result = self.query_once(promql)
            last[:] = [result]
            return result if until(result) else None

        try:
            return wait_until(f"query {promql!r}", probe, timeout_s)  # type: ignore[no-any-return]
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; last result: {last[0] if last else None}") from None

    def query_exemplars(self, promql: str, window_s: float = 3600.0) -> list[dict[str, Any]]:
        """Exemplars of the series ``promql`` selects over the last ``window_s`` seconds.

        Needs ``features=("exemplar-storage",)`` in ``run_prometheus``.
        """
        now = time.time()
        data: list[dict[str, Any]] = self.api(
            "query_exemplars", query=promql, start=str(now - window_s), end=str(now + 60)
        )
        return data

    def targets(self) -> list[dict[str, Any]]:
        """The active scrape targets, with ``health``, ``lastError``, ``lastScrape``."""
        active: list[dict[str, Any]] = self.api("targets")["activeTargets"]
        return active

    def wait_for_targets(self, timeout_s: float = 30.0) -> list[dict[str, Any]]:
        """Wait until every configured target has been scraped successfully at least once."""

        def all_up() -> list[dict[str, Any]] | None:
            targets = self.targets()
            return targets if targets and all(t["health"] == "up" for t in targets) else None

        try:
            return wait_until("all scrape targets up", all_up, timeout_s)  # type: ignore[no-any-return]
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; targets: {self.targets()}") from None


def prometheus_config(
    scrape_targets: Sequence[str] | Mapping[str, Sequence[str]],
    rules_files: Sequence[str | Path] = (),
    scrape_interval: str = "1s",
    alertmanagers: Sequence[str] = (),
) -> dict[str, Any]:
    """A Prometheus configuration (JSON is YAML) scraping ``/metrics`` of each target.

    ``scrape_targets`` is a list of ``host:port`` (job ``ragtrace``) or a mapping job -> list.
    """
    jobs = scrape_targets if isinstance(scrape_targets, Mapping) else {"ragtrace": scrape_targets}
    config: dict[str, Any] = {
        "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
        "rule_files": [str(Path(f).resolve()) for f in rules_files],
        "scrape_configs": [
            {
                "job_name": job,
                "metrics_path": "/metrics",
                "scrape_timeout": scrape_interval,
                "static_configs": [{"targets": list(targets)}],
            }
            for job, targets in jobs.items()
        ],
    }
    if alertmanagers:
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": alertmanagers}]}]}
    return config


@contextmanager
def run_prometheus(
    scrape_targets: Sequence[str] | Mapping[str, Sequence[str]],
    rules_files: Sequence[str | Path] = (),
    scrape_interval: str = "1s",
    *,
    alertmanagers: Sequence[str] = (),
    features: Sequence[str] = (),
    extra_args: Sequence[str] = (),
    start_timeout_s: float = 30.0,
) -> Iterator[Prometheus]:
    """Start a Prometheus on a free loopback port; stop it (and delete its data) after.

    Args:
        scrape_targets: ``host:port`` list, or job name -> ``host:port`` list.
        rules_files: Recording/alert rule files to load.
        scrape_interval: Also the rule evaluation interval.
        alertmanagers: ``host:port`` of Alertmanagers to send alerts to.
        features: ``--enable-feature`` values, e.g. ``exemplar-storage``.
        extra_args: Any other command-line flags.
        start_timeout_s: How long to wait for ``/-/ready``.
    """
    binary = require_binary("prometheus")
    workdir = Path(tempfile.mkdtemp(prefix="ragtrace-prometheus-"))
    config_path = workdir / "prometheus.yml"
    config = prometheus_config(scrape_targets, rules_files, scrape_interval, alertmanagers)
    config_path.write_text(json.dumps(config, indent=2))
    port = free_port()
    args = [
        binary,
        f"--config.file={config_path}",
        f"--storage.tsdb.path={workdir / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--rules.alert.resend-delay=1s",
        *(f"--enable-feature={feature}" for feature in features),
        *extra_args,
    ]
    with _serving(Prometheus, args, workdir, port, start_timeout_s) as prom:
        yield prom


@contextmanager
def _serving(
    kind: type[ServerT], args: Sequence[str], workdir: Path, port: int, timeout_s: float
) -> Iterator[ServerT]:
    """Run ``args`` in ``workdir`` (its output to the server's log) until its ``/-/ready``
    answers; stop it by its pid and delete ``workdir`` after."""
    with open(workdir / f"{kind.name}.log", "wb") as log:
        process = subprocess.Popen(list(args), stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    server = kind(f"http://127.0.0.1:{port}", workdir, process)
    try:
        _wait_ready(server, timeout_s)
        yield server
    finally:
        _stop(process)
        shutil.rmtree(workdir, ignore_errors=True)


def _wait_ready(server: LoopbackServer, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"{server.name} exited with {server.process.returncode} before it was ready; "
                f"log tail:\n{server.log_tail()}"
            )
        try:
            with http_get(f"{server.url}/-/ready", timeout_s=2.0) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() >= deadline:
            raise TimeoutError(
                f"{server.name} at {server.url} not ready after {timeout_s:.0f}s; "
                f"log tail:\n{server.log_tail()}"
            )
        time.sleep(0.1)


def _stop(process: subprocess.Popen[bytes], timeout_s: float = 10.0) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout_s)


class Alertmanager(LoopbackServer):
    """A running Alertmanager (see ``run_alertmanager``)."""

    name = "alertmanager"

    def post_alerts(self, alerts: Sequence[Mapping[str, Any]]) -> None:
        """``POST /api/v2/alerts`` (each alert: ``labels``, ``annotations``, ``startsAt``...)."""
        request = urllib.request.Request(
            f"{self.url}/api/v2/alerts",
            data=json.dumps(list(alerts)).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10.0) as response:
            assert response.status == 200, response.status

    def alerts(self, **params: str) -> list[dict[str, Any]]:
        """``GET /api/v2/alerts``: the alerts it holds, each with ``status`` (``state``:
        active | suppressed, ``inhibitedBy``) and ``receivers``."""
        query = urllib.parse.urlencode(params)
        with http_get(f"{self.url}/api/v2/alerts" + (f"?{query}" if query else "")) as answer:
            held: list[dict[str, Any]] = json.load(answer)
        return held


@contextmanager
def run_alertmanager(config_path: Path, start_timeout_s: float = 30.0) -> Iterator[Alertmanager]:
    """Start Debian's ``prometheus-alertmanager`` with ``config_path`` on a free loopback port,
    clustering off; stop it by its pid (and delete its data) after."""
    binary = require_binary("prometheus-alertmanager")
    workdir = Path(tempfile.mkdtemp(prefix="ragtrace-alertmanager-"))
    port = free_port()
    args = [
        binary,
        f"--config.file={config_path}",
        f"--storage.path={workdir / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",
    ]
    with _serving(Alertmanager, args, workdir, port, start_timeout_s) as manager:
        yield manager


# --- PostgreSQL and Chromium: throw-away servers and a browser for the review queue tests ------

POSTGRES_INSTALL = "apt-get install -y --no-install-recommends postgresql"
CHROMIUM_INSTALL = "apt-get install -y --no-install-recommends chromium"
CHROMIUM_PATH = "/usr/bin/chromium"
# Flags from shared/COMPONENTS.md: no sandbox as root, and no background connections (the
# machines' closed network refuses them, many at a time).
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
)


def require_module(module: str, install: str) -> Any:
    """Import ``module``; skip when missing (fail under ``CI=true``), naming ``install``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing_component(f"Python module {module} is missing ({exc}); install it with: {install}")


def require_postgres_binary(name: str) -> str:
    """``initdb`` / ``pg_ctl`` / ``postgres``: on PATH, else in Debian's
    ``/usr/lib/postgresql/<version>/bin`` (the newest version); skip/fail when missing."""
    path = shutil.which(name)
    if path is not None:
        return path

    def version(candidate: Path) -> tuple[int, ...]:
        digits = candidate.parent.parent.name
        return tuple(int(p) for p in digits.split(".") if p.isdigit())

    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), key=version)
    if found:
        return str(found[-1])
    missing_component(
        f"{name} not found on PATH or in /usr/lib/postgresql/*/bin; install it with: "
        f"{POSTGRES_INSTALL}"
    )


def require_chromium() -> str:
    """The path of Debian's Chromium; skip when missing (fail under ``CI=true``)."""
    path = shutil.which("chromium") or (CHROMIUM_PATH if os.path.exists(CHROMIUM_PATH) else None)
    if path is None:
        missing_component(f"chromium not found; install it with: {CHROMIUM_INSTALL}")
    return path


def launch_chromium(playwright: Any, **options: Any) -> Any:
    """A headless Debian Chromium driven by Playwright (never ``playwright install``)."""
    return playwright.chromium.launch(
        executable_path=require_chromium(), args=list(CHROMIUM_ARGS), headless=True, **options
    )


class Postgres:
    """A running throw-away PostgreSQL cluster (see ``run_postgres``).

    Attributes:
        port: Its TCP port on 127.0.0.1.
        user: The superuser (no password: trust on loopback).
        workdir: Data directory, socket and log live here.
    """

    def __init__(self, port: int, user: str, workdir: Path) -> None:
        self.port = port
        self.user = user
        self.workdir = workdir
        self.log_path = workdir / "postgres.log"
        self._databases = 0

    def dsn(self, dbname: str = "postgres") -> str:
        """A connection URL for ``dbname``."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, name: str | None = None) -> str:
        """Create a fresh database (a new name each call by default); its connection URL."""
        psycopg = require_module("psycopg", "pip install 'psycopg[binary]'")
        self._databases += 1
        name = name or f"test_{os.getpid()}_{self._databases}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def create_schema(self, name: str | None = None) -> str:
        """Create a fresh schema in ``postgres`` (milliseconds, where a database takes about a
        second); a connection URL whose ``search_path`` is that schema."""
        psycopg = require_module("psycopg", "pip install 'psycopg[binary]'")
        self._databases += 1
        name = name or f"test_{os.getpid()}_{self._databases}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
        return f"{self.dsn()}?options=-csearch_path%3D{name}"

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


def _as_postgres_user(workdir: Path) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run it as the ``postgres`` user (Debian's
    package creates it) through ``runuser``, owning ``workdir``."""
    if os.geteuid() != 0:
        return []
    import pwd

    try:
        entry = pwd.getpwnam("postgres")
    except KeyError:
        missing_component(f"running as root and no 'postgres' user; install: {POSTGRES_INSTALL}")
    os.chown(workdir, entry.pw_uid, entry.pw_gid)
    runuser = shutil.which("runuser") or "runuser"
    return [runuser, "-u", "postgres", "--"]


@contextmanager
def run_postgres(start_timeout_s: float = 60.0) -> Iterator[Postgres]:
    """Start a throw-away PostgreSQL (initdb + pg_ctl) on a free loopback port; stop and delete
    it after. Durability is off (fsync, synchronous_commit): it is for tests only."""
    initdb = require_postgres_binary("initdb")
    pg_ctl = require_postgres_binary("pg_ctl")
    require_module("psycopg", "pip install 'psycopg[binary]'")
    workdir = Path(tempfile.mkdtemp(prefix="ragtrace-postgres-"))
    prefix = _as_postgres_user(workdir)
    data = workdir / "data"
    server = Postgres(free_port(), "ragtrace", workdir)
    options = (
        f"-p {server.port} -k {workdir} -c listen_addresses=127.0.0.1 -c fsync=off "
        "-c synchronous_commit=off -c full_page_writes=off"
    )

    def run(args: list[str], what: str) -> None:
        done = subprocess.run(
            [*prefix, *args], capture_output=True, text=True, timeout=start_timeout_s, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{what} failed ({done.returncode}): {done.stderr.strip()}\n{server.log_tail()}"
            )

    try:
        run(
            [initdb, "-D", str(data), "-U", server.user, "--auth=trust", "-E", "UTF8",
             "--no-locale", "--no-sync"],
            "initdb",
        )  # fmt: skip
        run(
            [pg_ctl, "-D", str(data), "-l", str(server.log_path), "-w",
             "-t", str(int(start_timeout_s)), "-o", options, "start"],
            "pg_ctl start",
        )  # fmt: skip
        yield server
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                [*prefix, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"],
                capture_output=True,
                timeout=60,
                check=False,
            )
        shutil.rmtree(workdir, ignore_errors=True)
