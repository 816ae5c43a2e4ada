"""How an evaluator call handed to a worker process can fail, apart from the evaluator itself.

Kept apart from ``processes`` (which imports ``multiprocessing``) so that the pipeline can catch
these without importing it: only an application that runs evaluators in processes pays for it.
"""

from __future__ import annotations

LOAD_ALLOWANCE_S = 300.0  # extra seconds for a process's first call of an evaluator (models)


class RemoteError(Exception):
    """An evaluator call raised in a worker process; the message starts with its type name."""


class WorkerDied(Exception):
    """The worker process holding a job exited before answering it."""
