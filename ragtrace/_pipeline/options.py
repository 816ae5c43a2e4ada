"""Sizes and timings of the evaluation pipeline, checked when built.

``PipelineOptions`` is a frozen value; a bad one raises a ValueError naming the option::

    EvaluationPipeline(diagnostics, metrics, options=PipelineOptions(workers=4, processes=2))
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ragtrace._backends.shared_cache import configured_mb
from ragtrace._config import Config, options
from ragtrace._config.checks import at_least

logger = logging.getLogger("ragtrace")

_CONFIG_RANGES = ("queue_size", "workers", "batch_wait_s", "processes")
FROM_CONFIG = (*_CONFIG_RANGES, "shared_cache_mb", "passage_store")
"""The options that are also ``Config`` options (``Config`` declares their defaults, and the
ranges of ``_CONFIG_RANGES``; the other two are checked by using them)."""
_RANGES = {
    **{o.name: o.check for o in options(Config) if o.name in _CONFIG_RANGES and o.check},
    "max_batch": at_least(1),
    "max_call_threads": at_least(1),
    "feedback_window": at_least(0),
}


@dataclass(frozen=True)
class PipelineOptions:
    """Sizes and timings of the evaluation pipeline.

    Attributes:
        queue_size: Most records waiting; beyond it new ones are dropped (counted). The
            in-process queue checks it without a lock, so threads submitting at the same
            instant may each pass it by one record.
        workers: Worker threads taking batches off the queue.
        max_batch: Most records a worker takes at once.
        batch_wait_s: How long a worker waits for the first record of a batch.
        max_call_threads: Cap on threads running evaluator calls (hung calls hold one each).
        processes: 0 (default): evaluator calls run on threads of this process. N > 0: they run
            in N worker processes (``ragtrace._engine.processes``), so evaluation uses N cores and
            leaves this process's interpreter lock to the application; each process loads its
            own models. Worker thread i sends its batches to process i mod N (a record's
            evaluators all run in one process, whose caches hold what it has seen), and at
            least N worker threads are started. A hung call's process is killed and replaced.
            Evaluators that cannot pickle stay on threads here (reported once as
            ``pipeline.not_picklable``). ``EvaluationPipeline.prime`` warms every process.
        shared_cache_mb: Size of the cache the worker processes share
            (``ragtrace._backends.shared_cache``); None: ``$RAGTRACE_SHARED_CACHE_MB``, else 32;
            0 turns it off.
        feedback_window: Recent records kept so feedback attached later
            (``attach_feedback``) can still have them evaluated; 0 turns this off.
        passage_store: A passage store filled by ``ragtrace index``
            (``ragtrace._backends.passage_store``): installed in this process when the pipeline
            starts, opened read-only in its worker processes. None: ``$RAGTRACE_PASSAGE_STORE``
            if set. Checked when the options are built.
    """

    queue_size: int = Config.queue_size
    workers: int = Config.workers
    max_batch: int = 32
    batch_wait_s: float = Config.batch_wait_s
    max_call_threads: int = 32
    feedback_window: int = 1000
    processes: int = Config.processes
    shared_cache_mb: float | None = None
    passage_store: str | None = None

    def __post_init__(self) -> None:
        for name, check in _RANGES.items():
            try:
                check(getattr(self, name))
            except ValueError as exc:
                raise ValueError(f"pipeline option {name} {exc}") from None
        if self.shared_cache_mb is not None:
            configured_mb(self.shared_cache_mb)  # raises on a negative or non-finite size
        if self.passage_store is not None:
            from ragtrace._backends.passage_store import PassageStore, PassageStoreError

            try:
                PassageStore(self.passage_store).close()
            except PassageStoreError as exc:
                raise ValueError(f"pipeline option passage_store: {exc}") from None

    @classmethod
    def from_config(cls, config: Config) -> PipelineOptions:
        """The options a ``Config`` sets (``FROM_CONFIG``), defaults for the others.

        A passage store named by ``$RAGTRACE_PASSAGE_STORE`` that cannot be opened is logged
        and left out, as a bad environment value is; one given in code or a file raises.
        """

        given = {name: getattr(config, name) for name in FROM_CONFIG}
        try:
            return cls(**given)
        except ValueError as exc:
            source = config.sources["passage_store"]
            if config.passage_store is None or not source.startswith("RAGTRACE_"):
                raise
            logger.warning("ragtrace config: %s=%r: %s; ignored", source, config.passage_store, exc)
            return cls(**{**given, "passage_store": None})
