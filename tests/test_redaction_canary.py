"""A PII canary: one request carrying an e-mail address, an SSN and an API key in its query, its
chunk's text, its chunk's nested metadata and its answer goes through every path ragtrace has,
with ``redact: pii``; then every byte that left is searched and the canary is nowhere.

Paths: capture of a LangChain app (the framework's own fake chat model) with the in-process
pipeline; the Redis fleet (a real redis-server, a real ``ragtrace worker``), dead letters
included; ``ragtrace ingest`` fed by OpenInference's real instrumentation; the review store on
SQLite and on PostgreSQL; ``ragtrace eval`` and ``ragtrace report``. What is searched: exported
spans and log events (in-memory exporters), records handed on, Redis keys and dead letters,
database rows (and the SQLite file's bytes), files written, captured logs and process output,
``/metrics`` text.

The leak detectors (``pii_leakage``, ``sensitive_data``) read the raw text inside the process:
each test also checks that they found the leak, so a clean output is not a blind one.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry, generate_latest

import ragtrace
from ragtrace._ingest.assembly import AssemblyLimits
from ragtrace._ingest.receiver import ReceiverOptions
from ragtrace._ingest.service import APP, IngestOptions, IngestService
from ragtrace._model import RagRecord, Score
from ragtrace._worker.serving import service_config
from ragtrace.evaluators._base import evaluator
from ragtrace.integrations.langchain import RagtraceCallbackHandler
from ragtrace.review._rules import ReviewRules
from ragtrace.review._sink import ReviewSink
from tests.components import (
    Postgres,
    free_port,
    missing_component,
    run_postgres,
    stop_process,
    wait_until,
)
from tests.integrations.lc_app import ListRetriever, fake_llm, rag_chain
from tests.redis_server import RedisServer, run_redis

ROOT = Path(__file__).resolve().parents[1]
MAIL, SSN, KEY = "canary.owner@corp.example", "536-22-8741", "sk-canaryABCDEF1234567890abcdef"
CANARIES = (MAIL, SSN, KEY, "canary.owner", "536228741", "ABCDEF1234567890abcdef")
LEAKY = f"write to {MAIL}, SSN {SSN}, key {KEY}"
QUERY = f"I am {MAIL} (SSN {SSN}); is my key {KEY} still valid?"
ANSWER = f"Yes {MAIL}: the key {KEY} on file for SSN {SSN} is valid."
CHUNK = f"Account owner {MAIL}, SSN {SSN}, API key {KEY}."
METADATA: dict[str, Any] = {
    "source": "accounts.md",
    "owner": {"contact": {"mail": MAIL, "ids": [SSN, {"key": KEY}]}},
}
EVALUATORS = ["pii_leakage", "sensitive_data", "looping"]
ENV = {
    **os.environ,
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "PYTHONPATH": str(ROOT),
}


def assert_clean(where: str, data: Any) -> None:
    """No canary in ``data``: bytes, text, or any structure of them (every string and bytes
    in it, keys included, and its ``repr``)."""
    for text in [repr(data), *_leaves(data)]:
        for canary in CANARIES:
            assert canary not in text, (
                f"{canary!r} leaked into {where}: ...{_around(text, canary)}..."
            )


def _leaves(data: Any) -> Iterator[str]:
    if isinstance(data, bytes | bytearray | memoryview):
        yield bytes(data).decode("utf-8", "replace")
    elif isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(key)
            yield from _leaves(value)
    elif isinstance(data, list | tuple | set | frozenset):
        for value in data:
            yield from _leaves(value)


def _around(text: str, canary: str) -> str:
    at = text.index(canary)
    return text[max(0, at - 120) : at + len(canary) + 40]


def assert_leak_found(scores: Any) -> None:
    """The leak detectors read the raw text: they failed the answer."""
    text = " ".join(_leaves(scores)) + repr(scores)
    assert "pii_leakage.answer" in text and "sensitive_data.answer" in text, text[:2000]


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with run_postgres() as server:
        yield server


def sqlite_rows(path: Path) -> list[Any]:
    """Every row of every table, and the file's bytes (WAL included)."""
    with sqlite3.connect(path) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = [list(conn.execute(f'SELECT * FROM "{t}"')) for t in tables]
    raw = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))
    assert_clean(f"the SQLite file {path.name}", raw)
    return rows


def postgres_rows(url: str) -> list[Any]:
    """Every row of every table of the schema ``url`` names."""
    import psycopg

    with psycopg.connect(url) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
        ]
        assert tables, "the review store made no tables"
        return [list(conn.execute(f'SELECT * FROM "{t}"')) for t in tables]


def assert_review_stores_clean(sqlite: Path, postgresql: str) -> None:
    """Both review stores hold the leak detectors' findings, and no canary."""
    for where, rows in (
        ("the SQLite review store", sqlite_rows(sqlite)),
        ("the PostgreSQL review store", postgres_rows(postgresql)),
    ):
        assert_clean(where, rows)
        assert_leak_found(rows)


def canary_documents() -> list[Document]:
    return [Document(id="doc-1", page_content=CHUNK, metadata=METADATA)]


def spans_and_events(exporter: InMemorySpanExporter) -> list[Any]:
    out: list[Any] = []
    for span in exporter.get_finished_spans():
        out.append((span.name, dict(span.attributes or {})))
        out.extend((e.name, dict(e.attributes or {})) for e in span.events)
        out.append(span.status.description)
    assert out
    return out


def log_events(logs: InMemoryLogRecordExporter) -> list[Any]:
    found = logs.get_finished_logs()
    assert found, "no evaluation result was written as a log event"
    return [(d.log_record.body, dict(d.log_record.attributes or {})) for d in found]


# -- capture, the in-process pipeline, the review store, /metrics, logs -----------------------


@evaluator(name="quotes_the_text", requires={"response"})
def quotes_the_text(record: RagRecord) -> Score:
    """Reads the raw text (named in ``raw_text_evaluators``) and quotes all of it."""
    chunk = record.chunks[0] if record.chunks else None
    return Score(
        name="quotes_the_text",
        value=0.0,
        passed=False,
        threshold=0.5,
        label=record.response,
        explanation=f"{record.query} -> {record.response}",
        details={"chunk": chunk.text if chunk else None, "meta": chunk.metadata if chunk else {}},
    )


@evaluator(name="fails_on_the_text", requires={"response"})
def fails_on_the_text(record: RagRecord) -> float:
    """Reads the raw text and raises with it in the message."""
    raise ValueError(f"cannot score {record.response!r} for {record.query!r}")


RAW_READERS = ("pii_leakage", "sensitive_data", "quotes_the_text", "fails_on_the_text")


def test_capture_and_the_in_process_pipeline_write_no_canary(
    tmp_path: Path, postgres: Postgres, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    logs = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    pg_url = postgres.create_schema()
    review = [
        ReviewSink(str(tmp_path / "review.db"), ReviewRules(sample_rate=1.0)),
        ReviewSink(pg_url, ReviewRules(sample_rate=1.0)),
    ]
    rt = ragtrace.init(
        app="canary-app",
        tracer_provider=provider,
        logger_provider=logger_provider,
        registry=CollectorRegistry(),
        evaluators=[*EVALUATORS, quotes_the_text, fails_on_the_text],
        raw_text_evaluators=RAW_READERS,
        redact="pii",
        metrics_port=0,
        score_sinks=review,
    )
    records: list[RagRecord] = []
    rt.add_record_sink(records.append)
    server = rt.metrics_server
    assert server is not None
    try:
        chain = rag_chain(ListRetriever(docs=canary_documents(), k=1), fake_llm(ANSWER))
        answer = chain.invoke(QUERY, config={"callbacks": [RagtraceCallbackHandler(rt)]})
        assert answer == ANSWER  # the app itself is untouched
        assert rt.flush(30)
        with urllib.request.urlopen(server.url, timeout=5) as response:
            metrics = response.read()
    finally:
        rt.shutdown()
        logger_provider.shutdown()
    assert records and records[0].chunks and records[0].chunks[0].metadata
    assert_clean("the records handed on", [repr(r) for r in records])
    assert_clean("the exported spans", spans_and_events(exporter))
    events = log_events(logs)
    assert_clean("the evaluation log events", events)
    assert_leak_found(events)
    said = " ".join(_leaves(events))
    assert "<EMAIL_ADDRESS>" in said and "cannot score" in said  # the raw readers' words, redacted
    assert_clean("/metrics", metrics)
    assert_review_stores_clean(tmp_path / "review.db", pg_url)
    assert_clean("ragtrace's logs", caplog.text)


# -- the Redis fleet ------------------------------------------------------------------------


def redis_contents(server: RedisServer, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every key's value, read by type (streams entry by entry)."""
    client = server.client()
    out: dict[str, Any] = {}
    for raw_key in client.scan_iter(count=1000):
        key = raw_key.decode() if isinstance(raw_key, bytes) else raw_key
        if key in skip:
            continue
        kind = client.type(raw_key)
        kind = kind.decode() if isinstance(kind, bytes) else kind
        if kind == "stream":
            out[key] = client.xrange(raw_key)
        elif kind == "hash":
            out[key] = client.hgetall(raw_key)
        elif kind == "string":
            out[key] = client.get(raw_key)
        elif kind == "list":
            out[key] = client.lrange(raw_key, 0, -1)
        elif kind == "set":
            out[key] = client.smembers(raw_key)
        elif kind == "zset":
            out[key] = client.zrange(raw_key, 0, -1, withscores=True)
        else:
            out[key] = ("unread type", kind)
    return out


def assert_redis_clean(where: str, contents: dict[str, Any]) -> None:
    for key, value in contents.items():
        assert_clean(f"{where}: key {key}", [key, value])


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with run_redis(tmp_path / "redis") as server:
        yield server


def start_worker(
    tmp_path: Path, url: str, review_db: str, metrics_port: int
) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp_path / "worker.log"
    args = [sys.executable, "-m", "ragtrace", "worker", "--queue", url, "--redact", "pii"]
    args += ["--evaluators", ",".join(EVALUATORS), "--review-db", review_db]
    args += ["--metrics-port", str(metrics_port), "--max-deliveries", "1", "--consumer", "w1"]
    env = {k: v for k, v in ENV.items() if not k.startswith("RAGTRACE_")}
    with log.open("wb") as out:
        proc = subprocess.Popen(args, env=env, cwd=ROOT, stdout=out, stderr=out)
    return proc, log


def scrape(port: int) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return response.read()  # type: ignore[no-any-return]


def published(port: int, evaluator: str) -> bool:
    try:
        text = scrape(port).decode()
    except OSError:
        return False
    return any(
        line.startswith("ragtrace_evaluations_total{") and f'evaluator="{evaluator}' in line
        for line in text.splitlines()
    )


def ship_the_canary(url: str, redact: str, evaluators: list[str]) -> InMemorySpanExporter:
    """The canary request through an application that ships to ``url``; its spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rt = ragtrace.init(
        app=f"shipper-{redact}",
        tracer_provider=provider,
        registry=CollectorRegistry(),
        evaluators=evaluators,
        redact=redact,
        queue_url=url,
    )
    try:
        chain = rag_chain(ListRetriever(docs=canary_documents(), k=1), fake_llm(ANSWER))
        chain.invoke(QUERY, config={"callbacks": [RagtraceCallbackHandler(rt)]})
        assert rt.flush(30)
    finally:
        rt.shutdown()
    return exporter


def test_the_redis_fleet_and_its_dead_letters_hold_no_canary(
    tmp_path: Path, redis_server: RedisServer, postgres: Postgres
) -> None:
    url = redis_server.url
    exporter = ship_the_canary(url, "pii", EVALUATORS)
    assert_clean("the shipping app's spans", spans_and_events(exporter))
    shipped = redis_contents(redis_server)
    assert "ragtrace:work" in shipped, list(shipped)
    assert_redis_clean("Redis after shipping", shipped)
    # Before the worker reads it, something that is no work item lands on the stream: a dead
    # letter; the worker must redact it too.
    redis_server.client().xadd("ragtrace:work", {"item": f"not json {LEAKY}".encode()})

    review_db = postgres.create_schema()
    port = free_port()
    proc, log = start_worker(tmp_path, url, review_db, port)
    try:
        wait_until("the worker published", lambda: published(port, "looping"), timeout_s=120)
        wait_until(
            "the dead letter",
            lambda: redis_server.client().xlen("ragtrace:work:dead") > 0,
            timeout_s=60,
        )
        metrics = scrape(port)
    finally:
        stop_process(proc)
    output = log.read_text(errors="replace")
    contents = redis_contents(redis_server)
    # the stream's own entries are what the test put there (the unparseable one holds the
    # canary by design): the worker's outputs are everything else
    work = contents.pop("ragtrace:work")
    assert_redis_clean("Redis after the worker", contents)
    assert_clean("the shipped work item", [e for e in work if b"not json" not in repr(e).encode()])
    assert_redis_clean("the dead-letter stream", {"dead": contents["ragtrace:work:dead"]})
    assert_clean("the worker's /metrics", metrics)
    assert_clean("the worker's output", output)
    rows = postgres_rows(review_db)
    assert_clean("the worker's review store", rows)
    assert_leak_found(rows)


def test_a_worker_redacts_what_an_application_shipped_unredacted(
    tmp_path: Path, redis_server: RedisServer, postgres: Postgres
) -> None:
    url = redis_server.url
    ship_the_canary(url, "none", ["looping"])
    work = redis_contents(redis_server)["ragtrace:work"]
    assert MAIL in repr(work)  # shipped as written: the worker is the last line
    review_db = postgres.create_schema()
    port = free_port()
    proc, log = start_worker(tmp_path, url, review_db, port)
    try:
        wait_until("the worker published", lambda: published(port, "looping"), timeout_s=120)
        metrics = scrape(port)
    finally:
        stop_process(proc)
    contents = redis_contents(redis_server, skip=("ragtrace:work",))
    assert_redis_clean("Redis after the worker", contents)
    assert_clean("the worker's /metrics", metrics)
    assert_clean("the worker's output", log.read_text(errors="replace"))
    rows = postgres_rows(review_db)
    assert rows and any(rows), "nothing reached the review store"
    assert_clean("the worker's review store", rows)


# -- ingest, fed by OpenInference's real instrumentation --------------------------------------


def peers_python() -> str:
    path = os.environ.get("RAGTRACE_PEERS_PYTHON") or str(ROOT / ".venv-bench/bin/python")
    if not Path(path).exists():
        missing_component(f"the peers' environment is missing ({path}): run `make bench-env`")
    return path


def test_ingest_of_openinference_traces_writes_no_canary(
    tmp_path: Path, postgres: Postgres, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    pg_url = postgres.create_schema()
    registry = CollectorRegistry()
    service = IngestService(
        IngestOptions(
            service_config(APP, tuple(EVALUATORS), redact="pii"),
            receiver=ReceiverOptions(port=0),
            limits=AssemblyLimits(quiet_s=0.3, max_age_s=30.0),
            tick_s=0.05,
        ),
        registry=registry,
        score_sinks=[
            ReviewSink(str(tmp_path / "review.db"), ReviewRules(sample_rate=1.0)),
            ReviewSink(pg_url, ReviewRules(sample_rate=1.0)),
        ],
    )
    rebuilt: list[RagRecord] = []
    assert service.runtime is not None
    service.runtime.add_record_sink(rebuilt.append)
    service.start()
    try:
        canary = {"query": QUERY, "answer": ANSWER, "chunk": CHUNK, "metadata": METADATA}
        run = subprocess.run(
            [peers_python(), str(ROOT / "tests/ingest/canary_peer_app.py"),
             "--endpoint", service.endpoint, "--canary", json.dumps(canary)],
            capture_output=True, check=False, text=True, timeout=180, cwd=ROOT,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        wait_until("the trace rebuilt", lambda: rebuilt, timeout_s=30)
        assert service.runtime.flush(30)
        wait_until(
            "the review item",
            lambda: sqlite_rows(tmp_path / "review.db") and postgres_rows(pg_url),
            timeout_s=30,
        )
    finally:
        service.drain()
    (record,) = rebuilt
    assert record.chunks and record.chunks[0].metadata, record  # the metadata came through
    assert_clean("the rebuilt record", repr(record))
    assert_clean("ingest's metrics", generate_latest(registry))
    assert_review_stores_clean(tmp_path / "review.db", pg_url)
    assert_clean("ragtrace's logs", caplog.text)


# -- ragtrace eval and ragtrace report ------------------------------------------------------


def test_eval_and_report_write_no_canary(tmp_path: Path) -> None:
    records = tmp_path / "in" / "records.jsonl"
    records.parent.mkdir()
    row = {
        "id": "case-1",
        "query": QUERY,
        "response": ANSWER,
        "contexts": [{"text": CHUNK, "id": "doc-1", "metadata": METADATA}],
    }
    records.write_text(json.dumps(row) + "\n" + json.dumps({**row, "id": MAIL}) + "\n")
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in ENV.items() if not k.startswith("RAGTRACE_")}
    evaluated = subprocess.run(
        [sys.executable, "-m", "ragtrace", "eval", "-i", str(records), "--no-progress",
         "-o", str(out / "scores.jsonl"), "--summary-json", str(out / "summary.json"),
         "-e", ",".join(EVALUATORS), "--redact", "pii"],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env=env, check=False,
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stderr
    reported = subprocess.run(
        [sys.executable, "-m", "ragtrace", "report", str(out / "scores.jsonl"),
         "--html", str(out / "report.html"), "--json", str(out / "report.json")],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env=env, check=False,
    )  # fmt: skip
    assert reported.returncode == 0, reported.stderr
    written = sorted(out.iterdir())
    assert {p.name for p in written} == {
        "scores.jsonl",
        "summary.json",
        "report.html",
        "report.json",
    }
    for path in written:
        assert_clean(f"{path.name}", path.read_bytes())
    for proc in (evaluated, reported):
        assert_clean("the command's output", proc.stdout + proc.stderr)
    assert_leak_found(out.joinpath("scores.jsonl").read_text())
    assert "&lt;EMAIL_ADDRESS&gt;" in out.joinpath("report.html").read_text()  # examples shown


def test_the_canary_would_be_found() -> None:
    """The search itself: unredacted output is caught, in every form it is searched in."""
    for data in (LEAKY, LEAKY.encode(), {"a": [LEAKY]}, ("x", {b"k": LEAKY.encode()})):
        with pytest.raises(AssertionError, match="leaked into"):
            assert_clean("a test", data)
