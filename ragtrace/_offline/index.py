"""Indexing a corpus for evaluation: what the evaluators compute from passages, done ahead.

``index_passages`` runs the model-backed evaluators over each passage of a corpus, as the only
chunk of a record with a fixed probe question and answer, with a writable passage store
installed (``ragtrace._backends.passage_store``): every sentence vector and entity list the
embedders and NER compute for the passage goes into the store. An evaluation process that
opens the store then meets those passages warm on their first retrieval.

The passage must be the text the evaluators will see: the chunk as the retriever returns it
(``page_content``, a LlamaIndex node's content), cut at the capture's ``max_chunk_chars`` as
capture cuts it. A chunk that capture redacts, or that an app rewrites after retrieval, is
computed at evaluation time as usual: the store never answers for text it does not hold.

Only ``kind == "model"`` evaluators run: lexical ones compute nothing worth keeping, and LLM
judges score the question and answer, which are new on every request.

    from ragtrace._backends.passage_store import PassageStore
    from ragtrace._offline.index import index_passages

    store = PassageStore("passages.sqlite", writable=True)
    report = index_passages(splitter.split_documents(docs), store)  # or LlamaIndex nodes, texts
    store.close()
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from ragtrace._backends.passage_store import PassageStore
from ragtrace._capture.content import TextPolicy
from ragtrace._config import Config
from ragtrace._offline.index_workers import BatchResult, InlineIndexer, ProcessIndexer
from ragtrace.evaluators._base import Evaluator
from ragtrace.integrations._adapters import adapters

DEFAULT_BATCH = 16


@dataclass
class IndexReport:
    """What an indexing run did.

    Attributes:
        passages: Distinct passages indexed.
        duplicates: Passages seen before in the run (indexed once).
        empty: Empty or whitespace-only passages, skipped.
        cut: Passages longer than ``max_chunk_chars``, indexed as capture cuts them.
        values: Values added to the store (vectors, entity lists, sentence splits); those it
            held already are read, not computed or written again.
        errors: Passages each evaluator failed on (error Scores, or the batch raised): those
            are only partly indexed.
        error_messages: The last error message of each evaluator that failed.
        seconds: Wall time.
        evaluators: The evaluators that ran.
    """

    passages: int = 0
    duplicates: int = 0
    empty: int = 0
    cut: int = 0
    values: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    error_messages: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    evaluators: tuple[str, ...] = ()


def index_passages(
    passages: Iterable[object],
    store: PassageStore,
    evaluators: Sequence[Evaluator] | None = None,
    *,
    batch_size: int = DEFAULT_BATCH,
    max_chunk_chars: int | None = None,
    progress: Callable[[IndexReport], None] | None = None,
    processes: int = 1,
) -> IndexReport:
    """Run ``evaluators`` (default: the online suite) over each passage, keeping what they
    compute in ``store``, which must be writable; it is flushed at the end.

    Args:
        passages: The corpus's chunks: texts, LangChain ``Document``s, LlamaIndex nodes (their
            text taken as capture takes it: ``passage_text``).
        store: Where the values go.
        evaluators: Those whose model work to keep; only ``kind == "model"`` ones run.
        batch_size: Passages scored together (each evaluator's batch form).
        max_chunk_chars: The capture's cut (default ``Config().max_chunk_chars``).
        progress: Called with the report after each batch.
        processes: Worker processes scoring batches side by side (each loads its own models
            and writes to the store itself); 1: this process.

    Raises:
        ValueError: A read-only store, a batch size, process count or cut below 1, no
            model-backed evaluator, or (with processes) an evaluator that cannot be sent to a
            process.
    """
    if not store.writable:
        raise ValueError(
            f"index_passages needs a writable store, not {str(store.path)!r} read-only"
        )
    if min(batch_size, processes, 1 if max_chunk_chars is None else max_chunk_chars) < 1:
        raise ValueError(
            "batch_size, processes and max_chunk_chars must be >= 1, got "
            f"{batch_size}, {processes}, {max_chunk_chars}"
        )
    if evaluators is None:
        from ragtrace.evaluators._suites import online_suite

        evaluators = online_suite()
    chosen = [e for e in evaluators if e.kind == "model"]
    if not chosen:
        names = ", ".join(e.name for e in evaluators) or "none"
        raise ValueError(f"no model-backed evaluator to index for (given: {names})")
    limit = Config().max_chunk_chars if max_chunk_chars is None else max_chunk_chars
    report = IndexReport(evaluators=tuple(e.name for e in chosen))
    started = time.perf_counter()
    indexer: InlineIndexer | ProcessIndexer = (
        InlineIndexer(chosen, store)
        if processes == 1
        else ProcessIndexer(chosen, str(store.path), processes)
    )
    try:
        first = 0
        for batch in _batches(_distinct(passages, limit, report), batch_size):
            indexer.submit(batch, first)
            first += len(batch)
            _collect(indexer.finished(), report, started, progress)
        _collect(indexer.finished(wait=True), report, started, progress)
    finally:
        indexer.close()
    report.seconds = time.perf_counter() - started
    return report


def _collect(
    results: Iterable[BatchResult],
    report: IndexReport,
    started: float,
    progress: Callable[[IndexReport], None] | None,
) -> None:
    for result in results:
        report.values += result.values
        for name, failed in result.failed.items():
            report.errors[name] = report.errors.get(name, 0) + failed
            report.error_messages[name] = result.messages[name]
        report.seconds = time.perf_counter() - started
        if progress is not None:
            progress(report)


def passage_text(item: object) -> object:
    """The text capture records for ``item``: for a framework's document or node, what its
    adapter says (a LangChain ``Document``'s ``page_content``, a LlamaIndex node's or
    ``NodeWithScore``'s ``get_content()``); anything else as it is."""
    if isinstance(item, str):
        return item
    for adapter in adapters():
        text = adapter.passage_text(item)
        if text is not None:
            return text
    return item


def _distinct(passages: Iterable[object], limit: int, report: IndexReport) -> Iterator[str]:
    """Each passage once, cut as capture cuts it."""
    policy = TextPolicy()
    seen: set[bytes] = set()
    for passage in passages:
        text, truncated = policy.clean(passage_text(passage), limit)
        if not text or not text.strip():
            report.empty += 1
            continue
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        if key in seen:
            report.duplicates += 1
            continue
        seen.add(key)
        report.cut += truncated
        report.passages += 1
        yield text


def _batches(texts: Iterator[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for text in texts:
        batch.append(text)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
