"""``ragtrace ingest`` on a network: no open receiver by accident, the token checked before a gRPC
message is read (a flood of unauthenticated 32 MiB calls costs about 1 MiB), the addresses really
bound and the auth in force stated at start, and broken connections logged in one line each.

The process under test is the real command, started on loopback and stopped by its pid; the
gRPC calls come from grpcio's own client.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
from prometheus_client import CollectorRegistry

from ragtrace._ingest.receiver import ReceiverOptions
from ragtrace._ingest.service import IngestOptions, IngestService
from tests.components import free_port, stop_process, wait_until

ROOT = Path(__file__).resolve().parents[2]
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
MiB = 1024 * 1024


@pytest.mark.parametrize("where", ["http", "grpc"])
def test_a_receiver_beyond_loopback_without_a_token_refuses_to_start(where: str) -> None:
    open_one = ReceiverOptions(addr="0.0.0.0", port=0)
    options = (
        IngestOptions(receiver=open_one, evaluators=())
        if where == "http"
        else IngestOptions(grpc=open_one, evaluators=())
    )
    with pytest.raises(ValueError) as refused:
        IngestService(options, registry=CollectorRegistry())
    message = str(refused.value)
    assert "0.0.0.0" in message and "--token" in message and "--allow-unauthenticated" in message


@pytest.mark.parametrize(
    "options",
    [
        IngestOptions(receiver=ReceiverOptions(addr="0.0.0.0", port=0, token="t"), evaluators=()),
        IngestOptions(
            receiver=ReceiverOptions(addr="0.0.0.0", port=0),
            evaluators=(),
            allow_unauthenticated=True,
        ),
        IngestOptions(receiver=ReceiverOptions(addr="localhost", port=0), evaluators=()),
        IngestOptions(receiver=ReceiverOptions(addr="127.0.0.2", port=0), evaluators=()),
    ],
    ids=["token", "allowed", "localhost", "loopback-range"],
)
def test_a_token_an_explicit_flag_or_loopback_lets_it_start(options: IngestOptions) -> None:
    service = IngestService(options, registry=CollectorRegistry())
    try:
        service.start()
        (line,) = service.describe()
        assert f":{service.receiver.port} " in line
    finally:
        service.drain()


@contextmanager
def ingest_process(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """``ragtrace ingest`` started with ``args``; its stderr lines so far, until it is up."""
    log = tmp_path / "ingest.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragtrace", "ingest", "--evaluators", "looping", *args],
            stderr=out,
            stdout=subprocess.DEVNULL,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )
    try:
        wait_until(
            "ragtrace ingest to start",
            lambda: "listening on" in log.read_text() or proc.poll() is not None,
            timeout_s=60,
        )
        yield proc, log.read_text().splitlines()
    finally:
        stop_process(proc)


def test_the_command_refuses_an_open_receiver_and_names_the_way_out(tmp_path: Path) -> None:
    port = free_port()
    run = subprocess.run(
        [sys.executable, "-m", "ragtrace", "ingest", "--listen", f"0.0.0.0:{port}"],
        capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
        env={k: v for k, v in os.environ.items() if k != "RAGTRACE_INGEST_TOKEN"},
    )  # fmt: skip
    assert run.returncode == 2
    assert f"0.0.0.0:{port}" in run.stderr and "--allow-unauthenticated" in run.stderr


def test_the_start_states_the_bound_addresses_and_the_auth(tmp_path: Path) -> None:
    http_port, grpc_port = free_port(), free_port()
    with ingest_process(
        tmp_path,
        "--listen", f"0.0.0.0:{http_port}", "--grpc-listen", f"127.0.0.1:{grpc_port}",
        env={"RAGTRACE_INGEST_TOKEN": "s3cret"},
    ) as (proc, said):  # fmt: skip
        assert proc.poll() is None, said
    text = "\n".join(said)
    auth = ".*bearer token required"
    assert re.search(rf"OTLP/HTTP listening on 0\.0\.0\.0:{http_port} {auth}", text)
    assert re.search(rf"OTLP/gRPC listening on 127\.0\.0\.1:{grpc_port} {auth}", text)
    assert "s3cret" not in text


def rss_mib(pid: int, field: str = "VmHWM") -> float:
    """The process's peak (``VmHWM``) or current (``VmRSS``) resident memory, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} for {pid}")


def test_unauthenticated_grpc_calls_are_refused_before_their_message_is_read(
    tmp_path: Path,
) -> None:
    grpc_port, metrics_port = free_port(), free_port()
    with ingest_process(
        tmp_path,
        "--listen", "127.0.0.1:0", "--grpc-listen", f"127.0.0.1:{grpc_port}",
        "--token", "s3cret", "--metrics-port", str(metrics_port),
    ) as (proc, said):  # fmt: skip
        assert proc.poll() is None, said
        baseline = rss_mib(proc.pid)
        big = b"\x0a" + b"\x00" * (32 * MiB - 16)  # 32 MiB: the largest export allowed
        options = [("grpc.max_send_message_length", 64 * MiB)]
        codes = []
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}", options=options) as channel:
            export = channel.unary_unary(EXPORT)
            for _ in range(16):
                try:
                    export(big, timeout=30, metadata=(("authorization", "Bearer wrong"),))
                except grpc.RpcError as exc:
                    codes.append(exc.code())
            grown = rss_mib(proc.pid) - baseline
            # with the token, a message past the limit is refused by gRPC, and counted
            try:
                token = (("authorization", "Bearer s3cret"),)
                export(big + b"\x00" * MiB, timeout=30, metadata=token)
            except grpc.RpcError as exc:
                too_large = exc.code()

        def counted() -> str | None:  # the server thread counts after gRPC has answered
            url = f"http://127.0.0.1:{metrics_port}/metrics"
            text = urllib.request.urlopen(url, timeout=10).read().decode()
            return text if 'outcome="too_large"} 1.0' in text else None

        metrics = wait_until("the oversize call counted", counted, timeout_s=10)
    print(f"peak memory grew {grown:.1f} MiB")
    assert codes == [grpc.StatusCode.UNAUTHENTICATED] * 16
    assert too_large == grpc.StatusCode.RESOURCE_EXHAUSTED
    # 16 x 32 MiB were sent at it. Reading one costs over 64 MiB (gRPC's buffer, then the bytes
    # handed to the decoder); what the server takes in before the token check is a few KiB each
    assert grown < 16, f"peak memory grew {grown:.0f} MiB"
    assert 'ragtrace_ingest_requests_total{outcome="unauthorized"} 16.0' in metrics
    assert 'ragtrace_ingest_requests_total{outcome="too_large"} 1.0' in metrics


def test_broken_connections_log_one_line_each_not_a_traceback(tmp_path: Path) -> None:
    port = free_port()
    with ingest_process(tmp_path, "--listen", f"127.0.0.1:{port}", "--token", "t"):
        headers = (
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
            b"Content-Length: 100000\r\n\r\n"
        )
        for payload in (b"", headers + b"x" * 1000, b"GET / HTTP/1.1\r\n"):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00" * 2)  # RST
            if payload:
                sock.sendall(payload)
            time.sleep(0.1)
            sock.close()
            time.sleep(0.2)
        time.sleep(0.5)
    log = (tmp_path / "ingest.log").read_text()
    assert "Traceback" not in log
    broken = [line for line in log.splitlines() if "broken" in line]
    assert 1 <= len(broken) <= 3, log
    assert all("connection from 127.0.0.1:" in line for line in broken)
