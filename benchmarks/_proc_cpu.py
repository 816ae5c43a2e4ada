"""CPU seconds of other processes, read from Linux ``/proc`` (user + system)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def processes_cpu_s(pids: Iterable[int | str]) -> float:
    """User and system CPU seconds of ``pids`` so far; a process that is gone counts 0."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def children_pids() -> list[str]:
    """The pids of this process's children alive now."""
    pids: list[str] = []
    for listing in Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        try:
            pids += listing.read_text().split()
        except OSError:  # a thread that ended since the listing
            continue
    return pids
