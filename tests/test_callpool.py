"""The daemon call pool: results, errors, growth only when calls really hang."""

from __future__ import annotations

import threading

import pytest

from ragtrace._engine.callpool import CallPool


def test_results_and_errors_come_back_through_futures() -> None:
    pool = CallPool(base_threads=2, max_threads=4)
    try:
        assert pool.submit(lambda: 41 + 1).result(timeout=5) == 42
        with pytest.raises(ZeroDivisionError):
            pool.submit(lambda: 1 / 0).result(timeout=5)
    finally:
        pool.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(lambda: 1)


def test_back_to_back_calls_do_not_grow_the_pool() -> None:
    grew: list[int] = []
    pool = CallPool(base_threads=2, max_threads=8, on_grow=lambda: grew.append(1))
    stop = threading.Event()

    def spin() -> None:  # keeps the GIL switching between threads
        while not stop.is_set():
            sum(range(200))

    def caller() -> None:
        for _ in range(1500):
            pool.submit(lambda: sum(range(300))).result(timeout=5)

    spinner = threading.Thread(target=spin)
    callers = [threading.Thread(target=caller) for _ in range(2)]
    spinner.start()
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    stop.set()
    spinner.join()
    pool.shutdown()
    assert pool.threads() == 2 and grew == []


def test_a_hung_call_makes_the_pool_grow_and_others_still_run() -> None:
    grew: list[int] = []
    release = threading.Event()
    pool = CallPool(base_threads=1, max_threads=3, on_grow=lambda: grew.append(1))
    try:
        hung = pool.submit(lambda: release.wait(10))
        assert pool.submit(lambda: "ok").result(timeout=5) == "ok"
        assert pool.threads() == 2 and grew == [1]
    finally:
        release.set()
    assert hung.result(timeout=5) is True
    pool.shutdown()
