"""Crash and restart a throw-away PostgreSQL (``tests.components.run_postgres``) mid-test.

``kill_postgres`` sends SIGKILL to the postmaster, by the id in its ``postmaster.pid``, and to
every process it started, as when its machine or container dies (a backend whose postmaster
alone died would go on serving the connections it has); ``restart_postgres`` starts it again
with the options of its first start (``pg_ctl restart`` reads them from ``postmaster.opts``),
after crash recovery, on the same port. ``paused_postgres`` stops the postmaster and every
process it started (SIGSTOP) and continues them (SIGCONT) on leaving, as a machine that freezes
would: connections stay open, nothing answers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tests.components import (
    Postgres,
    _as_postgres_user,
    require_module,
    require_postgres_binary,
    wait_until,
)


def _data(server: Postgres) -> Path:
    return server.workdir / "data"


def _accepts(server: Postgres) -> bool:
    psycopg = require_module("psycopg", "pip install 'psycopg[binary]'")
    try:
        with psycopg.connect(server.dsn(), connect_timeout=1):
            return True
    except psycopg.OperationalError:
        return False


def _children(pid: int) -> list[int]:
    tasks = Path(f"/proc/{pid}/task")
    found: list[int] = []
    for task in tasks.iterdir():
        found.extend(int(c) for c in (task / "children").read_text().split())
    return found


def _postmaster(server: Postgres) -> int:
    return int((_data(server) / "postmaster.pid").read_text().split()[0])


@contextlib.contextmanager
def paused_postgres(server: Postgres) -> Iterator[list[int]]:
    """SIGSTOP the postmaster (first: it starts no new backend then) and its processes; SIGCONT
    them all on leaving, whatever happened. Yields the process ids it stopped."""
    pid = _postmaster(server)
    stopped: list[int] = []
    try:
        for each in (pid, *_children(pid)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(each, signal.SIGSTOP)
                stopped.append(each)
        yield stopped
    finally:
        for each in reversed(stopped):
            with contextlib.suppress(ProcessLookupError):
                os.kill(each, signal.SIGCONT)


def kill_postgres(server: Postgres, timeout_s: float = 30.0) -> int:
    """SIGKILL the postmaster and its processes; wait until nothing answers on its port. The
    postmaster's process id.

    A checkpoint first: the test server runs with ``synchronous_commit=off``, which may lose the
    last commits in a crash; what was stored before the kill must survive it.
    """
    psycopg = require_module("psycopg", "pip install 'psycopg[binary]'")
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute("CHECKPOINT")
    pid = _postmaster(server)
    children = _children(pid)
    os.kill(pid, signal.SIGKILL)  # first, so that it starts no new backend
    for child in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
    wait_until("the killed postmaster's backends to exit", lambda: not _accepts(server), timeout_s)
    return pid


def restart_postgres(server: Postgres, timeout_s: float = 60.0) -> None:
    """Start the killed server again, with the options it had, once it accepts connections.

    Retried: the killed postmaster's last backends may still hold its shared memory a moment.
    """
    pg_ctl = require_postgres_binary("pg_ctl")
    command = [*_as_postgres_user(server.workdir), pg_ctl, "-D", str(_data(server)),
               "-l", str(server.log_path), "-w", "-t", "30", "restart"]  # fmt: skip

    def started() -> bool:
        done = subprocess.run(command, capture_output=True, timeout=60, check=False)
        return done.returncode == 0 and _accepts(server)

    try:
        wait_until("PostgreSQL to restart", started, timeout_s, interval_s=0.5)
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}; log tail:\n{server.log_tail()}") from None
