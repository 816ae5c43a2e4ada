"""Who can reach the ``/metrics`` endpoint: loopback by default; beyond loopback only with a
bearer token or when the user says an open endpoint is meant; the start says where it listens
and whether it asks for a token (never the token itself).

Real servers: ``ragtrace.init``'s endpoint in this process, ``ragtrace worker`` and ``ragtrace
ingest`` as commands. What listens is read from the kernel's socket table (``/proc/net``).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._network import ExposureRefused
from tests.components import free_port

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "metrics-s3cret-token"
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp


def listening_addresses(port: int) -> set[str]:
    """The local addresses with a TCP socket listening on ``port`` (IPv4 dotted, IPv6 hex)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        with open(table) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                address, port_hex = fields[1].rsplit(":", 1)
                if fields[3] != _LISTEN or int(port_hex, 16) != port:
                    continue
                if len(address) == 8:  # IPv4, little-endian
                    found.add(".".join(str(int(address[i : i + 2], 16)) for i in (6, 4, 2, 0)))
                else:
                    found.add(address)
    return found


def get(url: str, token: str | None = None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def init(**options: object) -> ragtrace.Ragtrace:
    return ragtrace.init(
        app="exposed",
        tracer_provider=TracerProvider(),
        registry=CollectorRegistry(),
        evaluators=(),
        **options,  # type: ignore[arg-type]
    )


def test_by_default_the_endpoint_listens_on_loopback_only(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    rt = init(metrics_port=0)
    try:
        server = rt.metrics_server
        assert server is not None
        assert listening_addresses(server.port) == {"127.0.0.1"}
        assert get(server.url) == 200
    finally:
        rt.shutdown()
    assert f"listening on http://127.0.0.1:{server.port}/metrics; no token (loopback only)" in (
        caplog.text
    )


def test_beyond_loopback_without_a_token_it_refuses_to_start() -> None:
    port = free_port()
    with pytest.raises(ExposureRefused) as refused:
        init(metrics_port=port, metrics_addr="0.0.0.0")
    message = str(refused.value)
    assert f"0.0.0.0:{port}" in message
    assert "RAGTRACE_METRICS_TOKEN" in message and "metrics_allow_unauthenticated" in message
    assert listening_addresses(port) == set()


def test_beyond_loopback_a_token_guards_every_path(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    rt = init(metrics_port=0, metrics_addr="0.0.0.0", metrics_token=TOKEN)
    try:
        server = rt.metrics_server
        assert server is not None
        assert listening_addresses(server.port) == {"0.0.0.0"}
        url = f"http://127.0.0.1:{server.port}/metrics"
        assert get(url) == 401
        assert get(url, "wrong-token") == 401
        assert get(url, TOKEN) == 200
        assert get(f"http://127.0.0.1:{server.port}/anything", None) == 401
    finally:
        rt.shutdown()
    assert "(every interface); bearer token required" in caplog.text
    assert TOKEN not in caplog.text


def test_an_open_endpoint_beyond_loopback_when_the_user_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    rt = init(metrics_port=0, metrics_addr="0.0.0.0", metrics_allow_unauthenticated=True)
    try:
        server = rt.metrics_server
        assert server is not None
        assert get(f"http://127.0.0.1:{server.port}/metrics") == 200
    finally:
        rt.shutdown()
    assert "(every interface); NO authentication (allowed by the user)" in caplog.text


@pytest.mark.parametrize("command", ["worker", "ingest"])
def test_the_commands_refuse_an_open_metrics_endpoint(command: str) -> None:
    port = free_port()
    args = [sys.executable, "-m", "ragtrace", command, "--metrics-port", str(port)]
    args += ["--metrics-addr", "0.0.0.0", "--evaluators", "looping"]
    if command == "worker":  # refused before Redis is looked for: nobody listens there
        args += ["--queue", f"redis://127.0.0.1:{free_port()}/0"]
    else:
        args += ["--listen", f"127.0.0.1:{free_port()}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGTRACE_")}
    run = subprocess.run(
        args, capture_output=True, text=True, timeout=120, cwd=ROOT, env=env, check=False
    )
    assert run.returncode == 2, run.stderr[-2000:]
    assert f"0.0.0.0:{port}" in run.stderr and "--metrics-allow-unauthenticated" in run.stderr
    assert "Traceback" not in run.stderr
