"""Commands that serve until stopped stop on Ctrl-C or SIGTERM, whatever SIGINT they inherited."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from ragtrace._network.signals import stop_on_signals, wait_until_stopped


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_either_signal_interrupts_the_block_even_if_sigint_was_ignored(sig: int) -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a script's background job inherits it
    try:
        with pytest.raises(KeyboardInterrupt, match=signal.Signals(sig).name), stop_on_signals():
            os.kill(os.getpid(), sig)
            threading.Event().wait(10)  # the handler runs before this returns
        # what was there before comes back: still ignored, SIGTERM as it was
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) == before[signal.SIGTERM]
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def test_off_the_main_thread_the_block_runs_with_the_handlers_untouched() -> None:
    seen: list[object] = []

    def body() -> None:
        with stop_on_signals():
            seen.append(signal.getsignal(signal.SIGTERM))

    thread = threading.Thread(target=body)
    thread.start()
    thread.join(10)
    assert seen == [signal.getsignal(signal.SIGTERM)]


def test_wait_until_stopped_returns_when_a_stop_signal_arrives() -> None:
    before = signal.getsignal(signal.SIGTERM)
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        wait_until_stopped()  # returns instead of raising: the caller's cleanup runs next
    finally:
        timer.cancel()
    assert signal.getsignal(signal.SIGTERM) == before
