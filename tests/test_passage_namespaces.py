"""A passage store's catalogue: values counted per namespace, what readers do with it, stores
written before it existed, and ``ragtrace index --describe``. Real SQLite files."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from ragtrace._backends import passage_namespaces
from ragtrace._backends.passage_store import FORMAT, FORMAT_1, PassageStore
from ragtrace._backends.shared_cache import key_digest
from ragtrace._backends.tier_counts import ERROR, HIT, MISS
from ragtrace._offline import index_cli
from tests.test_passage_store import written


def test_each_value_is_counted_once_in_its_namespace(tmp_path: Path) -> None:
    store = PassageStore(tmp_path / "s.sqlite", writable=True)
    for key in ("a", "b", "c"):
        store.put("embedding:m", key, b"v")
    store.put("embedding:m", "a", b"v")  # again: written once
    store.flush()
    store.put("ner:x", "a", b"[]")
    store.close()
    again = PassageStore(store.path, writable=True)  # another run adds one and repeats two
    for namespace, key in (("embedding:m", "a"), ("ner:x", "a"), ("ner:x", "b")):
        again.put(namespace, key, b"w")
    again.close()
    reader = PassageStore(store.path)
    assert reader.namespaces() == {"embedding:m": 3, "ner:x": 2}
    summary = reader.describe()
    assert (summary.format, summary.values, summary.namespaces) == (FORMAT, 5, reader.namespaces())
    assert summary.size_bytes == store.path.stat().st_size > 0


def test_a_reader_skips_namespaces_the_store_lacks_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = written(tmp_path / "s.sqlite", {("embedding:wordllama", "a"): b"v"})
    store = PassageStore(path)
    assert store.lookup("embedding:wordllama", "a") == (b"v", HIT)
    with caplog.at_level(logging.WARNING, logger="ragtrace._backends.passage_store"):
        for _ in range(3):
            assert store.lookup("embedding:all-MiniLM-L6-v2", "a") == (None, MISS)
    warnings = [r.getMessage() for r in caplog.records if "holds no values" in r.getMessage()]
    assert len(warnings) == 1
    assert "embedding:all-MiniLM-L6-v2" in warnings[0] and "embedding:wordllama (1)" in warnings[0]
    # Skipped without asking SQLite: with the file ruined, only lookups that reach it fail.
    path.write_bytes(b"\x00garbage" * 512)
    assert store.lookup("ner:other", "a") == (None, MISS)
    assert store.lookup("embedding:wordllama", "b") == (None, ERROR)
    assert (store.stats.misses, store.stats.errors) == (5, 1)


def test_a_catalogue_read_later_sees_namespaces_an_indexer_added(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = written(tmp_path / "s.sqlite", {("a", "k"): b"v"})
    store = PassageStore(path)
    assert store.lookup("b", "k") == (None, MISS)  # not there yet
    written(path, {("b", "k"): b"w"})  # an indexer adds a namespace while the store is served
    assert store.lookup("b", "k") == (None, MISS)  # the catalogue read is still trusted
    monkeypatch.setattr(passage_namespaces, "REFRESH_S", 0.0)
    assert store.lookup("b", "k") == (b"w", HIT)


def format_1_store(path: Path, items: dict[tuple[str, str], bytes]) -> Path:
    """A store as the first format wrote it: no catalogue."""
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        connection.execute(
            "CREATE TABLE entries (key BLOB PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID"
        )
        connection.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT_1,))
        connection.executemany(
            "INSERT INTO entries VALUES (?, ?)",
            [(key_digest(ns, key), value) for (ns, key), value in items.items()],
        )
    connection.close()
    return path


def test_a_store_of_the_first_format_is_read_and_upgraded_without_trusting_its_catalogue(
    tmp_path: Path,
) -> None:
    path = format_1_store(tmp_path / "old.sqlite", {("embedding:m", "a"): b"v"})
    old = PassageStore(path)
    assert old.namespaces() is None and old.describe().format == FORMAT_1
    assert old.lookup("embedding:m", "a") == (b"v", HIT)  # nothing skipped: unknown catalogue
    old.close()
    writer = PassageStore(path, writable=True)  # a new indexer adds to it
    writer.put("ner:x", "a", b"[]")
    writer.close()
    upgraded = PassageStore(path)
    assert upgraded.describe().format == FORMAT
    assert upgraded.namespaces() is None  # it counted its own values only: partial
    assert upgraded.lookup("embedding:m", "a") == (b"v", HIT)
    assert upgraded.lookup("ner:x", "a") == (b"[]", HIT)


def test_describe_prints_the_catalogue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = written(tmp_path / "s.sqlite", {("embedding:m", "a"): b"v", ("ner:x", "a"): b"[]"})
    assert index_cli.main(["--store", str(path), "--describe"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{path}: {FORMAT}, 2 values, ")
    assert [line.split() for line in out[1:]] == [["embedding:m", "1"], ["ner:x", "1"]]
    old = format_1_store(tmp_path / "old.sqlite", {("embedding:m", "a"): b"v"})
    assert index_cli.main(["--store", str(old), "--describe"]) == 0
    assert "not counted" in capsys.readouterr().out
    assert index_cli.main(["--store", str(path), "--describe", "chunks.jsonl"]) == 2
    assert "give no input files" in capsys.readouterr().err
    assert index_cli.main(["--store", str(path)]) == 2
    assert "or --describe" in capsys.readouterr().err
    assert index_cli.main(["--store", str(tmp_path / "missing.sqlite"), "--describe"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "missing.sqlite").exists()
