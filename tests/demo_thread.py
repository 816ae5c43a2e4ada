"""The demo app running in a background thread, for tests that scrape or query it live."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ragtrace.demo._run import DemoOptions, Progress, demo_config, run_demo

LEXICAL = ("looping", "tokens_presence")  # no model to load


@contextmanager
def demo_in_thread(port: int, *, duration_s: float, rate: float = 20) -> Iterator[None]:
    """Run the demo (lexical evaluators, /metrics on ``port``) until the block ends.

    The demo stops as on Ctrl-C; an exception it raised fails the test when the block ends.
    """
    stop = threading.Event()
    errors: list[BaseException] = []

    def until_stopped(_: Progress) -> None:
        if stop.is_set():
            raise KeyboardInterrupt  # what Ctrl-C does: the demo stops cleanly

    def demo() -> None:
        config = demo_config(LEXICAL, metrics_port=port)
        options = DemoOptions(config, duration_s=duration_s, rate=rate, live=False, quiet=True)
        try:
            run_demo(options, io.StringIO(), io.StringIO(), on_progress=until_stopped)
        except BaseException as exc:  # surfaced when the block ends
            errors.append(exc)

    runner = threading.Thread(target=demo, name="ragtrace-demo", daemon=True)
    runner.start()
    try:
        yield
    finally:
        stop.set()
        runner.join(30)
    assert errors == []
