"""The evaluation pipeline's options: the ``Config`` it reads its sizes from, and its own.

``Config`` declares the options the pipeline shares with the rest of ragtrace (``queue_size``,
``workers``, ``batch_wait_s``, ``processes``, ``shared_cache_mb``, ``passage_store``: read as
``options.config.workers``); ``PipelineOptions`` declares only those no ``Config`` has. It is a
frozen value; a bad one raises a ValueError naming the option::

    PipelineOptions(Config(workers=4, processes=2), max_batch=8)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ragtrace._config import Config
from ragtrace._config.checks import at_least

logger = logging.getLogger("ragtrace")

_RANGES = {
    "max_batch": at_least(1),
    "max_call_threads": at_least(1),
    "feedback_window": at_least(0),
}


@dataclass(frozen=True)
class PipelineOptions:
    """Sizes and timings of the evaluation pipeline: ``ragtrace.init(pipeline_options=...)``.

    Public as ``ragtrace.PipelineOptions``.

    Attributes:
        config: Where its ``Config`` options are read from (default ``Config()``: their
            declared defaults). ``queue_size``: the in-process queue checks it without a lock,
            so threads submitting at the same instant may each pass it by one record.
            ``processes`` N > 0: evaluator calls run in N worker processes
            (``ragtrace._engine.processes``); worker thread i sends its batches to process
            i mod N (a record's evaluators all run in one process, whose caches hold what it
            has seen), and at least N worker threads are started. Evaluators that cannot pickle
            stay on threads (reported once as ``pipeline.not_picklable``);
            ``EvaluationPipeline.prime`` warms every process. ``passage_store`` is opened once
            when the options are built, installed here when the pipeline starts and opened
            read-only in its worker processes (None: ``$RAGTRACE_PASSAGE_STORE`` if set).
        max_batch: Most records a worker takes at once.
        max_call_threads: Cap on threads running evaluator calls (hung calls hold one each).
        feedback_window: Recent records kept so feedback attached later
            (``attach_feedback``) can still have them evaluated; 0 turns this off.
    """

    config: Config = field(default_factory=Config)
    max_batch: int = 32
    max_call_threads: int = 32
    feedback_window: int = 1000

    def __post_init__(self) -> None:
        for name, check in _RANGES.items():
            try:
                check(getattr(self, name))
            except ValueError as exc:
                raise ValueError(f"pipeline option {name} {exc}") from None
        if self.config.passage_store is not None:
            from ragtrace._backends.passage_store import PassageStore, PassageStoreError

            try:
                PassageStore(self.config.passage_store).close()
            except PassageStoreError as exc:
                raise ValueError(f"pipeline option passage_store: {exc}") from None

    @classmethod
    def from_config(cls, config: Config) -> PipelineOptions:
        """The options of ``config``, defaults for the pipeline's own.

        A passage store named by ``$RAGTRACE_PASSAGE_STORE`` that cannot be opened is logged
        and left out, as a bad environment value is; one given in code or a file raises.
        """
        try:
            return cls(config)
        except ValueError as exc:
            source = config.sources["passage_store"]
            if config.passage_store is None or not source.startswith("RAGTRACE_"):
                raise
            logger.warning("ragtrace config: %s=%r: %s; ignored", source, config.passage_store, exc)
            return cls(config.replace(passage_store=None))
