"""``ragtrace worker`` with test evaluators registered, run as a subprocess by the tests.

- ``dies_on_poison``: exits the whole process (``os._exit``) on a record whose query contains
  POISON, like a native crash would; otherwise scores 1.
- ``flags_bad``: fails (0.0 under a 0.5 threshold) a record whose query contains BAD.
- ``takes_time``: sleeps ``RAGTRACE_TEST_EVAL_S`` seconds (default 0.01) per record, so a batch
  is still in hand when the test kills or stops the worker.

With ``RAGTRACE_TEST_PUBLISHED=path`` every record whose scores the worker publishes is appended
to that file (its trace id, one line, one ``write`` each), so a test can tell whether any
record was published twice across the fleet: the worker builds that sink from its import path
(``--sink tests.queues.worker_app:PublishedLog``), as it would a user's own. A conversation's
scores (published on its last turn) go instead to ``path.sessions``, as ``<worker> <session id>
<evaluator>,... <last turn's trace id>``, and each turn's publication is also written there
as ``<worker> turn <trace id>``.

    python -m tests.queues.worker_app --queue redis://... --config settings.yaml
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence

from ragtrace._cli import main
from ragtrace._model import Evaluation, RagRecord
from ragtrace.evaluators import evaluator, register
from ragtrace.evaluators._conversation import CONVERSATION_EVALUATORS


@evaluator(name="dies_on_poison", requires={"query"}, threshold=0.5)
def dies_on_poison(record: RagRecord) -> float:
    if "POISON" in (record.query or ""):
        os._exit(3)
    return 1.0


@evaluator(name="flags_bad", requires={"query"}, threshold=0.5)
def flags_bad(record: RagRecord) -> float:
    return 0.0 if "BAD" in (record.query or "") else 1.0


@evaluator(name="takes_time", requires={"response"}, threshold=0.5)
def takes_time(record: RagRecord) -> float:
    time.sleep(float(os.environ.get("RAGTRACE_TEST_EVAL_S", "0.01")))
    return 1.0


class PublishedLog:
    """A score sink that appends each published record's trace id to the file
    ``RAGTRACE_TEST_PUBLISHED`` names; the worker builds it from its import path (``--sink``)."""

    def __init__(self) -> None:
        path = os.environ["RAGTRACE_TEST_PUBLISHED"]
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        self._fd = os.open(path, flags, 0o644)
        self._sessions = os.open(f"{path}.sessions", flags, 0o644)
        self._name = sys.argv[sys.argv.index("--consumer") + 1] if "--consumer" in sys.argv else ""

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        names = [e.evaluator for e in evaluations]
        if all(name in CONVERSATION_EVALUATORS for name in names):
            session = record.conversation.session_id if record.conversation else None
            line = f"{self._name} {session} {','.join(names)} {record.trace_id}\n"
            os.write(self._sessions, line.encode())
            return
        os.write(self._fd, f"{record.trace_id}\n".encode())
        os.write(self._sessions, f"{self._name} turn {record.trace_id}\n".encode())

    def shutdown(self) -> None:
        os.close(self._fd)
        os.close(self._sessions)


if __name__ == "__main__":
    register("dies_on_poison", lambda **_: dies_on_poison, replace=True)
    register("takes_time", lambda **_: takes_time, replace=True)
    register("flags_bad", lambda **_: flags_bad, replace=True)
    logged = bool(os.environ.get("RAGTRACE_TEST_PUBLISHED"))
    published = ["--sink", "tests.queues.worker_app:PublishedLog"] if logged else []
    sys.exit(main(["worker", *sys.argv[1:], *published]))
