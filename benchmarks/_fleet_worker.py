"""A ``ragtrace worker`` for ``fleet.py`` with a no-op evaluator registered as ``noop``.

python benchmarks/_fleet_worker.py --queue redis://... --evaluators noop --metrics-port 0
"""

from __future__ import annotations

import sys

from ragtrace.cli import main
from ragtrace.evaluators import evaluator, register
from ragtrace.model import RagRecord


@evaluator(name="noop", threshold=0.5)
def noop(record: RagRecord) -> float:
    return 1.0


if __name__ == "__main__":
    register("noop", lambda **_: noop, replace=True)
    sys.exit(main(["worker", *sys.argv[1:]]))
