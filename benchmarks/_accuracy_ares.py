"""ARES relevance (dev): AUROC of the embedding evaluators against ARES's three labels.

Reads ``ares_relevance.dev.jsonl`` (see ../shared/data/DATA.md): ``query``, ``document``,
``answer`` and labels ``context_relevance``, ``answer_faithfulness``, ``answer_relevance``
(1 / 0 / null). Each row becomes a one-chunk record (query, the document as the only chunk, the
answer as the response) and is scored by:

- ``context_relevance.recall`` / ``.precision`` against ``context_relevance`` (every row; with
  one chunk both are the same number, the chunk's relevancy);
- ``answer_relevance`` (Ejento mean) and ``answer_relevance_similarity`` (H2O max) against
  ``answer_relevance`` (rows with an answer and a label);
- ``groundedness`` against ``answer_faithfulness`` (the faithfulness proxy; same rows).

Beside each, a bag-of-words baseline: for the answer labels, DATA.md's share of the answer's
content words (``ragtrace.evaluators.text.content_words``) found in the document; for context
relevance (whose negative rows have no answer) the share of the query's content words found in the
document. ARES negatives were built so that word overlap separates them (AUROC near 1.0): this
checks plumbing and the direction of each score, not accuracy to quote. Also reported: the mean
score of each class, and balanced accuracy at each evaluator's default threshold.

``run(data_dir)`` returns the numbers, ``table(result)`` formats them. Standalone::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/_accuracy_ares.py [--data-dir ../shared/data]
        [--model wordllama]

takes about 4 CPU-minutes (4-10 minutes on a shared 2-core box): it embeds ~15,000 sentences,
most of them long Wikipedia sentences.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragtrace.evaluators.answer_relevance import (
    AnswerRelevance,
    AnswerRelevanceSentenceSimilarity,
)
from ragtrace.evaluators.base import Evaluator
from ragtrace.evaluators.context_relevance import ContextRelevance
from ragtrace.evaluators.groundedness import Groundedness
from ragtrace.evaluators.text import content_words
from ragtrace.model import Chunk, RagRecord

FILE = "ares_relevance.dev.jsonl"
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"
BATCH = 64

# (score name, label field, baseline name)
CHECKS: tuple[tuple[str, str, str], ...] = (
    ("context_relevance.recall", "context_relevance", "query_in_document"),
    ("context_relevance.precision", "context_relevance", "query_in_document"),
    ("answer_relevance", "answer_relevance", "answer_in_document"),
    ("answer_relevance_similarity", "answer_relevance", "answer_in_document"),
    ("groundedness", "answer_faithfulness", "answer_in_document"),
)


def run(data_dir: Path, model: str | None = None) -> dict[str, Any]:
    """Score every row with the four evaluators (embedding with ``model``; None: the packaged
    MiniLM); AUROC per (score, label) beside the baseline."""
    rows = _rows(Path(data_dir) / FILE)
    answered = [r for r in rows if r["answer"]]
    evaluators: list[tuple[Evaluator, bool]] = [
        (ContextRelevance(model=model), False),
        (AnswerRelevance(model=model), True),
        (AnswerRelevanceSentenceSimilarity(model=model), True),
        (Groundedness(model=model), True),
    ]
    scores: dict[str, dict[str, float]] = {}
    thresholds: dict[str, float | None] = {}
    models: set[str] = set()
    started = time.perf_counter()
    # Batch by batch, every evaluator in turn (as the pipeline runs them): a document's
    # sentences are embedded once and found in the embedder's cache by the next evaluator.
    for start in range(0, len(rows), BATCH):
        batch = rows[start : start + BATCH]
        for evaluator, needs_answer in evaluators:
            subset = [r for r in batch if r["answer"] or not needs_answer]
            if subset:
                _score(evaluator, subset, scores, thresholds, models)
    elapsed = time.perf_counter() - started
    baselines: dict[str, Callable[[dict[str, Any]], float]] = {
        "query_in_document": lambda r: _share(r["query"], r["document"]),
        "answer_in_document": lambda r: _share(r["answer"], r["document"]),
    }
    metrics = []
    for name, label, baseline in CHECKS:
        labelled = [r for r in rows if r[label] is not None and r["id"] in scores[name]]
        y = [int(r[label]) for r in labelled]
        ours = [scores[name][r["id"]] for r in labelled]
        base = [baselines[baseline](r) for r in labelled]
        threshold = thresholds[name]
        metrics.append(
            {
                "score": name,
                "label": label,
                "rows": len(y),
                "positives": sum(y),
                "auroc": _round(auroc(y, ours)),
                "baseline": baseline,
                "baseline_auroc": _round(auroc(y, base)),
                "mean_positive": _round(_mean([s for s, t in zip(ours, y, strict=True) if t])),
                "mean_negative": _round(_mean([s for s, t in zip(ours, y, strict=True) if not t])),
                "threshold": threshold,
                "balanced_accuracy_at_threshold": (
                    None if threshold is None else _round(_balanced(y, ours, threshold))
                ),
                "balanced_accuracy_at_0.5": _round(_balanced(y, ours, 0.5)),
                **_best_cut(y, ours),
            }
        )
    return {
        "data": FILE,
        "rows": len(rows),
        "rows_with_answer": len(answered),
        "model": ", ".join(sorted(models)),
        "seconds": round(elapsed, 1),
        "metrics": metrics,
    }


def table(result: dict[str, Any]) -> str:
    """The result as a text table, one line per (score, label)."""
    lines = [
        f"ARES relevance dev ({result['rows']} rows, {result['rows_with_answer']} with an answer; "
        f"embedder {result['model']}; {result['seconds']} s). Plumbing and direction only: "
        "word overlap separates ARES negatives.",
        f"{'score':<30} {'label':<20} {'rows':>5} {'AUROC':>6} {'BoW':>6} "
        f"{'mean+':>6} {'mean-':>6} {'thr':>5} {'bal.acc':>7} {'@0.5':>6} {'best':>11}",
    ]
    for m in result["metrics"]:
        bal = (
            "-"
            if m["balanced_accuracy_at_threshold"] is None
            else m["balanced_accuracy_at_threshold"]
        )
        lines.append(
            f"{m['score']:<30} {m['label']:<20} {m['rows']:>5} {m['auroc']:>6} "
            f"{m['baseline_auroc']:>6} {m['mean_positive']:>6} {m['mean_negative']:>6} "
            f"{m['threshold']!s:>5} {bal!s:>7} {m['balanced_accuracy_at_0.5']!s:>6} "
            f"{m['best_balanced_accuracy']!s:>5}@{m['best_cut']:<5}"
        )
    lines.append(
        "thr / bal.acc: the evaluator's default threshold and balanced accuracy there; @0.5: at "
        "0.5; best: the best balanced accuracy over cuts 0.05, 0.10, ... 0.95 and its cut."
    )
    lines.append(
        "BoW: share of the answer's content words found in the document (context relevance: "
        "the query's, since its negatives have no answer)."
    )
    return "\n".join(lines)


def auroc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """Area under the ROC curve (Mann-Whitney U, ties counted half)."""
    pairs = sorted(zip(scores, labels, strict=True))
    positives = sum(labels)
    negatives = len(labels) - positives
    if not positives or not negatives:
        return float("nan")
    rank_sum = 0.0
    i = 0
    while i < len(pairs):
        j = i
        while j < len(pairs) and pairs[j][0] == pairs[i][0]:
            j += 1
        mid_rank = (i + j + 1) / 2  # ranks i+1 .. j, averaged
        rank_sum += mid_rank * sum(label for _, label in pairs[i:j])
        i = j
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def _score(
    evaluator: Evaluator,
    rows: Sequence[dict[str, Any]],
    scores: dict[str, dict[str, float]],
    thresholds: dict[str, float | None],
    models: set[str],
) -> None:
    """Score ``rows`` in one batch; record each value by score name and row id."""
    outputs = evaluator.evaluate_batch([_record(r) for r in rows])
    for row, row_scores in zip(rows, outputs, strict=True):
        for score in row_scores:
            if score.error is not None or score.value is None:
                raise RuntimeError(f"{score.name} failed on {row['id']}: {score.error}")
            scores.setdefault(score.name, {})[row["id"]] = score.value
            thresholds[score.name] = score.threshold
            if score.model:
                models.add(score.model)


def _record(row: dict[str, Any]) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query=row["query"],
        chunks=(Chunk(row["document"], id=row["id"]),),
        response=row["answer"],
    )


def _rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (see ../shared/data/DATA.md)")
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _share(text: str | None, context: str) -> float:
    words = content_words(text)
    if not words:
        return 0.0
    vocabulary = set(content_words(context))
    return sum(w in vocabulary for w in words) / len(words)


def _balanced(labels: Sequence[int], scores: Sequence[float], threshold: float) -> float:
    positives = [s >= threshold for s, y in zip(scores, labels, strict=True) if y]
    negatives = [s < threshold for s, y in zip(scores, labels, strict=True) if not y]
    return (_mean(positives) + _mean(negatives)) / 2


def _best_cut(labels: Sequence[int], scores: Sequence[float]) -> dict[str, float]:
    """The cut in 0.05 steps with the best balanced accuracy (the lowest cut on ties)."""
    cuts = [round(0.05 * k, 2) for k in range(1, 20)]
    best = max(cuts, key=lambda cut: (_balanced(labels, scores, cut), -cut))
    return {"best_cut": best, "best_balanced_accuracy": _round(_balanced(labels, scores, best))}


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _round(value: float) -> float:
    return round(value, 3)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument(
        "--model", help='embedding model (default: the packaged MiniLM; "wordllama")'
    )
    args = parser.parse_args()
    outcome = run(args.data_dir, args.model)
    print(table(outcome))
    if args.json:
        args.json.write_text(json.dumps(outcome, indent=2) + "\n", encoding="utf-8")
