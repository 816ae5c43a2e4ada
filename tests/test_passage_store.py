"""``ragtrace._backends.passage_store``: the SQLite file of passage values filled at indexing time.

Real SQLite files in a temporary folder; the pool test runs the packaged MiniLM in real
``spawn`` processes (the evaluator lives at module level so they can import it).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from ragtrace._backends import cache_tiers, passage_store, shared_cache
from ragtrace._backends.embeddings import get_embedder
from ragtrace._backends.passage_store import FORMAT, PassageStore, PassageStoreError
from ragtrace._engine.processes import ProcessPool
from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators import evaluator

SENTENCES = ("Ada Lovelace wrote the first published algorithm.", "Grace Hopper built compilers.")


def written(path: Path, items: dict[tuple[str, str], bytes]) -> Path:
    store = PassageStore(path, writable=True)
    for (namespace, key), value in items.items():
        store.put(namespace, key, value)
    store.close()
    return path


def test_values_round_trip_by_namespace_and_key(tmp_path: Path) -> None:
    path = written(
        tmp_path / "s.sqlite", {("embedding:m", "hello"): b"\x01\x02", ("ner:x", "a"): b""}
    )
    store = PassageStore(path)
    assert not store.writable
    assert store.get("embedding:m", "hello") == b"\x01\x02"
    assert store.get("ner:x", "a") == b""  # an empty value is a value
    assert store.get("embedding:other", "hello") is None
    assert store.get("embedding:m", "hello!") is None
    assert (store.stats.hits, store.stats.misses, store.stats.errors) == (2, 2, 0)
    assert len(store) == 2


def test_odd_keys_are_keys(tmp_path: Path) -> None:
    keys = ("", "\ud800 lone surrogate", "x" * 3_000_000, "caf\u00e9\x00null", "\U0001f600")
    path = written(
        tmp_path / "s.sqlite", {("ns", k): k[:8].encode("utf-8", "surrogatepass") for k in keys}
    )
    store = PassageStore(path)
    for key in keys:
        assert store.get("ns", key) == key[:8].encode("utf-8", "surrogatepass")


def test_writes_are_buffered_until_flush_and_each_key_is_written_once(tmp_path: Path) -> None:
    store = PassageStore(tmp_path / "s.sqlite", writable=True)
    store.put("ns", "a", b"first")
    assert len(store) == 0  # buffered
    store.flush()
    store.put("ns", "a", b"second")  # already written by this object: kept as it was
    store.flush()
    assert store.get("ns", "a") == b"first"
    assert store.stats.writes == 1
    for i in range(passage_store.FLUSH_EVERY):
        store.put("ns", f"k{i}", b"v")
    assert len(store) == 1 + passage_store.FLUSH_EVERY  # a full buffer flushes by itself
    store.close()


def test_a_read_only_store_refuses_writes(tmp_path: Path) -> None:
    store = PassageStore(written(tmp_path / "s.sqlite", {}))
    with pytest.raises(PassageStoreError, match="read-only"):
        store.put("ns", "a", b"v")


def test_paths_that_are_not_stores_are_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(PassageStoreError, match="does not exist"):
        PassageStore(tmp_path / "missing.sqlite")
    for writable in (False, True):
        with pytest.raises(PassageStoreError, match="is not a file"):
            PassageStore(tmp_path, writable=writable)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"\x00\xffnot a database" * 100)
    for writable in (False, True):
        with pytest.raises(PassageStoreError, match="cannot be opened as a passage store"):
            PassageStore(junk, writable=writable)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE accounts (id INTEGER)")
    connection.close()
    for writable in (False, True):
        with pytest.raises(PassageStoreError, match="is not a passage store"):
            PassageStore(other, writable=writable)
    with sqlite3.connect(other) as connection:  # the writer added nothing to the foreign file
        tables = {r[0] for r in connection.execute("SELECT name FROM sqlite_master")}
    connection.close()
    assert tables == {"accounts"}
    newer = written(tmp_path / "newer.sqlite", {})
    with sqlite3.connect(newer) as connection:
        connection.execute("UPDATE meta SET value = 'ragtrace-passage-store/99'")
    connection.close()
    with pytest.raises(PassageStoreError, match=f"ragtrace-passage-store/99.*reads '{FORMAT}'"):
        PassageStore(newer)


def test_a_store_damaged_under_a_reader_is_a_counted_miss(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = written(tmp_path / "s.sqlite", {("ns", "a"): b"v"})
    store = PassageStore(path)
    assert store.get("ns", "a") == b"v"
    path.write_bytes(b"\x00garbage" * 512)
    found: list[bytes | None] = []
    with caplog.at_level(logging.ERROR, logger="ragtrace._backends.passage_store"):
        reader = threading.Thread(
            target=lambda: found.extend(store.get("ns", "a") for _ in range(3))
        )
        reader.start()
        reader.join()
    assert found == [None, None, None]
    assert store.stats.errors == 3
    assert len([r for r in caplog.records if "read failed" in r.getMessage()]) == 1  # logged once


def test_threads_read_at_once(tmp_path: Path) -> None:
    path = written(tmp_path / "s.sqlite", {("ns", str(i)): str(i).encode() for i in range(200)})
    store = PassageStore(path)
    wrong: list[int] = []

    def read() -> None:
        for i in range(200):
            if store.get("ns", str(i)) != str(i).encode():
                wrong.append(i)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
    assert store.stats.hits == 1600


def test_the_variable_names_the_store_and_a_bad_one_means_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    assert passage_store.current() is None
    path = written(tmp_path / "s.sqlite", {("ns", "a"): b"v"})
    monkeypatch.setenv(passage_store.ENV, str(path))
    first = passage_store.current()
    assert first is not None and not first.writable and first.path == path
    assert passage_store.current() is first  # opened once
    assert cache_tiers.lookup("ns", "a") == b"v"
    installed = PassageStore(written(tmp_path / "t.sqlite", {("ns", "a"): b"w"}))
    passage_store.install(installed)  # an installed store comes first
    assert cache_tiers.lookup("ns", "a") == b"w"
    passage_store.install(None)
    monkeypatch.setenv(passage_store.ENV, str(tmp_path / "missing.sqlite"))
    with caplog.at_level(logging.ERROR, logger="ragtrace._backends.passage_store"):
        assert passage_store.current() is None
    assert "does not exist" in caplog.text
    with pytest.raises(PassageStoreError, match="does not exist"):
        passage_store.open_configured()  # what commands call as they start


def test_values_found_in_the_store_go_to_the_shared_cache(tmp_path: Path) -> None:
    passage_store.install(PassageStore(written(tmp_path / "s.sqlite", {("ns", "a"): b"v"})))
    cache = shared_cache.SharedCache.create(1)
    shared_cache.install(cache)
    try:
        assert cache.get("ns", "a") is None
        assert cache_tiers.lookup("ns", "a") == b"v"
        assert cache.get("ns", "a") == b"v"  # the pool's other processes find it in memory
        cache_tiers.keep("ns", "b", b"computed")  # a read-only store takes nothing
        assert passage_store.current().get("ns", "b") is None  # type: ignore[union-attr]
    finally:
        shared_cache.install(None)
        cache.close()


@evaluator(name="store_misses")
def store_misses(record: RagRecord) -> float:
    """In a worker process: embed the record's chunks and return how many the embedder had to
    compute (the store's vectors are not computed again)."""
    embedder = get_embedder()
    before = embedder.misses
    embedder.encode([c.text for c in record.chunks])
    return float(embedder.misses - before)


def sentence_store(path: Path) -> Path:
    """A store holding the packaged MiniLM's vectors of ``SENTENCES``."""
    store = PassageStore(path, writable=True)
    passage_store.install(store)
    get_embedder().encode(list(SENTENCES))
    store.close()
    passage_store.install(None)
    return path


def sentence_records(n: int) -> list[RagRecord]:
    """``n`` records whose chunks are ``SENTENCES``."""
    chunks = tuple(Chunk(text=s) for s in SENTENCES)
    return [
        RagRecord(trace_id=f"{i + 1:032x}", span_id="b" * 16, query="q", chunks=chunks)
        for i in range(n)
    ]


def test_pool_processes_open_the_installed_store(tmp_path: Path) -> None:
    store = PassageStore(tmp_path / "s.sqlite", writable=True)
    passage_store.install(store)
    expected = get_embedder().encode(list(SENTENCES))
    # Vectors the embedder already held were kept too: a writable store takes cache hits.
    get_embedder().encode(list(SENTENCES))
    store.close()
    assert len(PassageStore(store.path)) == len(SENTENCES)
    passage_store.install(PassageStore(store.path))
    record = RagRecord(
        trace_id="a" * 32,
        span_id="b" * 16,
        query="q",
        chunks=tuple(Chunk(text=s) for s in SENTENCES),
    )
    pool = ProcessPool([store_misses], 1, shared_cache_mb=0)
    try:
        scores = pool.call(0, [record], timeout_s=120)
    finally:
        pool.close()
    assert [s.value for s in scores[0]] == [0.0]  # type: ignore[index]
    assert expected.shape == (2, 384)


@pytest.mark.parametrize(
    "command",
    [
        ["eval", "--input", "{data}", "-e", "looping", "--output", "{out}"],
        ["worker", "--queue", "redis://127.0.0.1:9/0"],
        ["ingest", "--listen", "127.0.0.1:0"],
    ],
)
def test_commands_that_evaluate_refuse_a_bad_store_as_they_start(
    tmp_path: Path, command: list[str]
) -> None:
    import os
    import subprocess
    import sys

    data = tmp_path / "in.jsonl"
    data.write_text('{"query": "q", "response": "a"}\n', encoding="utf-8")
    args = [a.format(data=data, out=tmp_path / "out.jsonl") for a in command]
    env = {**os.environ, passage_store.ENV: str(tmp_path / "missing.sqlite")}
    done = subprocess.run(
        [sys.executable, "-m", "ragtrace", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert f"${passage_store.ENV}: passage store" in done.stderr
    assert "does not exist" in done.stderr


def test_the_pipeline_opens_its_store_in_every_worker_process(tmp_path: Path) -> None:
    from ragtrace._config import Config
    from ragtrace._pipeline import PipelineOptions

    from .test_pipeline import Harness

    with pytest.raises(ValueError, match=r"pipeline option passage_store: .* does not exist"):
        PipelineOptions(Config(passage_store=str(tmp_path / "missing.sqlite")))
    path = sentence_store(tmp_path / "s.sqlite")
    config = Config(
        batch_wait_s=0.01, processes=2, workers=2, shared_cache_mb=0, passage_store=str(path)
    )
    opts = PipelineOptions(config)
    h = Harness([store_misses], options=opts)
    try:
        for record in sentence_records(4):
            h.pipeline.submit(record)
        assert h.pipeline.flush(120)
        assert [s.value for s in h.sink.scores()["store_misses"]] == [0.0] * 4
        assert passage_store.installed_path() == str(path)  # and in this process
    finally:
        h.pipeline.shutdown(timeout_s=5)


def test_settings_files_name_a_store(tmp_path: Path) -> None:
    from ragtrace._config import SettingsError
    from ragtrace._runtime.evaluation_settings import settings_from_mapping

    def settings(value: object) -> Any:
        return settings_from_mapping(
            {"evaluators": ["looping"], "pipeline": {"passage_store": value}}
        )

    path = written(tmp_path / "s.sqlite", {})
    assert settings(str(path)).pipeline_options().config.passage_store == str(path)
    assert (
        settings_from_mapping({"evaluators": ["looping"]}).pipeline_options().config.passage_store
        is None
    )
    with pytest.raises(SettingsError, match=r"pipeline\.passage_store: expected a string, got int"):
        settings(3)
    # A store not written yet: the file reads (``ragtrace index --config`` is about to write
    # it), the pipeline refuses it.
    missing = settings(str(tmp_path / "none.sqlite"))
    assert [e.name for e in missing.evaluators] == ["looping"]
    with pytest.raises(ValueError, match=r"pipeline option passage_store: .* does not exist"):
        missing.pipeline_options()


def test_a_closed_store_is_one_file_readers_open_without_wal_files(tmp_path: Path) -> None:
    path = written(tmp_path / "s.sqlite", {("ns", "a"): b"v"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite"]
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    connection.close()
    appended = PassageStore(path, writable=True)  # appending reopens it in WAL mode
    appended.put("ns", "b", b"w")
    appended.flush()
    reader = PassageStore(path)  # readers see what is committed while the writer is open
    assert (reader.get("ns", "a"), reader.get("ns", "b")) == (b"v", b"w")
    reader.close()
    appended.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite"]
