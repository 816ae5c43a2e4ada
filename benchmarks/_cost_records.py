"""Records for ``cost_profile.py``: real-size RAGTruth records, cold and warm, and the demo's.

- ``ragtruth_pairs(folder, n, seed)``: ``n`` RAGTruth sources drawn with ``seed`` (the dev file
  holds up to six answers per source, from six generators, over the same passages). Per source,
  a *cold* record (one generator's answer; nothing in it seen before) and a *warm* one (another
  generator's answer to the same question over the same passages: the passages and the question
  were seen with the cold record, only the answer is new). The query is the row's question, or
  for summaries and data-to-text its instruction ("Summarize the following news within 116
  words:"), so that every evaluator of the suite runs. Chunks are cut as capture cuts them
  (``Config().max_chunk_chars``, 4,000 characters), as the pipeline receives them and as
  ``ragtrace index`` stores them.
- ``demo_records(n, seed)``: records the shape of ``ragtrace demo``'s (a help-centre question,
  the four articles its BM25 retriever returns, an extractive answer of one or two sentences),
  each made new: the product's name and model number are replaced by ones of the record's own
  (a text that does not name it is headed by it), so every passage is text no cache has seen,
  at the demo's length.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from ragtrace.model import Chunk, RagRecord

RAGTRUTH = "ragtruth_test_response_level.dev.jsonl"
_PRODUCT = re.compile(r"\bAurora H5\b|\bH5\b|\bAurora\b")


def _record(key: str, query: str, passages: list[str], response: str) -> RagRecord:
    """A record as capture hands it over: each chunk cut at ``Config().max_chunk_chars``."""
    from ragtrace.capture.content import TextPolicy
    from ragtrace.config import Config

    limit, policy = Config().max_chunk_chars, TextPolicy(None)
    digest = int(hashlib.blake2b(key.encode(), digest_size=8).hexdigest(), 16)
    chunks = tuple(
        Chunk(text=policy.clean(p, limit)[0], id=f"p{i}") for i, p in enumerate(passages)
    )
    return RagRecord(f"{digest:032x}", f"{digest:016x}", query, chunks=chunks, response=response)


def _passages(row: dict[str, Any]) -> list[str]:
    found = row.get("context_passages") or [row["context"]]
    if isinstance(found, str):  # stored as a list's repr in some rows
        try:
            found = json.loads(found)
        except ValueError:
            found = [row["context"]]
    return [str(p) for p in found if str(p).strip()]


def ragtruth_pairs(folder: Path, n: int, seed: int) -> list[tuple[RagRecord, RagRecord]]:
    """(cold, warm) records of ``n`` sources, drawn with ``seed``."""
    by_source: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with (folder / RAGTRUTH).open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                by_source[str(row["source_id"])].append(row)
    sources = sorted(s for s, rows in by_source.items() if len(rows) >= 2)
    chosen = random.Random(seed).sample(sources, min(n, len(sources)))
    pairs = []
    for source in chosen:
        first, second = random.Random(f"{seed}-{source}").sample(by_source[source], 2)
        query = str(first.get("question") or first.get("instruction") or "").strip()
        passages = _passages(first)
        pairs.append(
            (
                _record(first["id"], query, passages, str(first["response"])),
                _record(second["id"], query, passages, str(second["response"])),
            )
        )
    return pairs


def context_words(record: RagRecord) -> int:
    """Words in a record's chunks."""
    return sum(len((c.text or "").split()) for c in record.chunks)


def demo_records(n: int, seed: int) -> list[RagRecord]:
    """``n`` cold records of the demo's shape (see the module's docstring)."""
    from ragtrace.demo.corpus import ARTICLES, QUESTIONS
    from ragtrace.demo.generator import compose_answer
    from ragtrace.demo.retrieval import Bm25Index

    index = Bm25Index(ARTICLES)
    rng = random.Random(seed)
    out = []
    for i in range(n):
        question = QUESTIONS[i % len(QUESTIONS)]
        hits = index.search(question, k=4)
        name = f"{rng.choice(('Borealis', 'Solvik', 'Helion', 'Nordlys'))} K{1000 + i}"

        def renamed(text: str, name: str = name) -> str:
            new = _PRODUCT.sub(name, text)
            return new if new != text else f"{name}: {text}"

        passages = [renamed(article.text) for article, _ in hits]
        asked = _PRODUCT.sub(name, question)
        if asked == question:
            asked = f"{question.rstrip('?')} with the {name}?"
        answer = compose_answer(asked, "\n\n".join(passages), "grounded", random.Random(i))
        out.append(_record(f"demo-{seed}-{i}", asked, passages, answer))
    return out
