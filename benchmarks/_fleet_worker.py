"""A ``ragtrace worker`` (or, with ``ingest`` first, a ``ragtrace ingest``) for ``fleet.py`` and
``ingest_fleet.py``, with a no-op evaluator registered as ``noop``.

python benchmarks/_fleet_worker.py --queue redis://... --evaluators noop --metrics-port 0
python benchmarks/_fleet_worker.py ingest --queue redis://... --evaluators noop
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
    args = sys.argv[1:]
    sys.exit(main(args if args[:1] == ["ingest"] else ["worker", *args]))
