"""Several threads and several processes write to one store at once: nothing is lost, nothing
is duplicated, nobody sees "database is locked". On SQLite (one file, WAL) and PostgreSQL."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest

from ragtrace.review._items import Label, QueueFilter
from ragtrace.review._store import SqlReviewStore, open_store
from tests.components import Postgres
from tests.review.conftest import make_item

THREADS = 4
PROCESSES = 2
PER_WRITER = 25


def write_items(url: str, writer: int, count: int) -> list[int]:
    """Enqueue ``count`` distinct items, label every other one, and enqueue one shared request
    (the same trace and span for every writer, each with its own reason)."""
    store = open_store(url)
    try:
        ids = []
        for k in range(count):
            item_id = store.enqueue(make_item(10_000 * (writer + 1) + k))
            if k % 2 == 0:
                store.add_label(item_id, Label("bad", notes=f"writer {writer}"))
            ids.append(item_id)
        shared = make_item(1, reasons=(f"writer-{writer}",), priority=writer)
        ids.append(store.enqueue(shared))
        return ids
    finally:
        store.close()


def _process_main(url: str, writer: int, count: int, results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    try:
        results.put((writer, write_items(url, writer, count)))
    except Exception as exc:  # reported to the parent
        results.put((writer, repr(exc)))


def hammer(url: str) -> dict[int, list[int]]:
    """THREADS threads in this process and PROCESSES spawned processes, all at once."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    procs = [
        context.Process(target=_process_main, args=(url, THREADS + p, PER_WRITER, results))
        for p in range(PROCESSES)
    ]
    for proc in procs:
        proc.start()
    found: dict[int, list[int]] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def thread_main(writer: int) -> None:
        barrier.wait()
        try:
            found[writer] = write_items(url, writer, PER_WRITER)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=thread_main, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for _ in procs:
        writer, ids = results.get(timeout=120)
        if isinstance(ids, str):
            errors.append(RuntimeError(f"process writer {writer}: {ids}"))
        else:
            found[writer] = ids
    for thread in threads:
        thread.join(120)
    for proc in procs:
        proc.join(30)
    assert errors == []
    return found


def check(store: SqlReviewStore, found: dict[int, list[int]]) -> None:
    writers = THREADS + PROCESSES
    assert sorted(found) == list(range(writers))
    shared_ids = {ids[-1] for ids in found.values()}
    assert len(shared_ids) == 1  # every writer's copy of the shared request merged into one
    own = [i for ids in found.values() for i in ids[:-1]]
    assert len(own) == len(set(own)) == writers * PER_WRITER
    assert store.count(QueueFilter(labelled="all")) == writers * PER_WRITER + 1
    labelled = writers * ((PER_WRITER + 1) // 2)
    assert store.count(QueueFilter(labelled="yes")) == labelled
    assert sum(n for _, _, _, n in store.stats().labels) == labelled
    shared = store.get(shared_ids.pop())
    assert shared is not None
    assert sorted(r.name for r in shared.reasons) == [f"writer-{w}" for w in range(writers)]
    assert shared.priority == writers - 1


@pytest.mark.integration
def test_sqlite_store_with_concurrent_threads_and_processes(tmp_path: Path) -> None:
    url = f"{tmp_path}/shared.db"
    found = hammer(url)  # the writers also race to create the file and its tables
    with open_store(url) as store:
        check(store, found)
        with store._read() as cur:
            assert cur.one("PRAGMA journal_mode")[0] == "wal"


@pytest.mark.integration
def test_postgres_store_with_concurrent_threads_and_processes(postgres: Postgres) -> None:
    url = postgres.create_database()
    found = hammer(url)  # the writers also race to create the tables
    with open_store(url) as store:
        check(store, found)
