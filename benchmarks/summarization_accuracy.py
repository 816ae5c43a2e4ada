"""Summarization faithfulness on the RAGTruth Summary rows of ../shared/data, and its speed.

    .venv/bin/python benchmarks/summarization_accuracy.py [--data-dir ../shared/data]
        [--part tuning|locked|both|none] [--speed-rows N] [--judge-rows N] [--judge-reference N]

Rows: RAGTruth Summary (a news article and a model's summary of it; label 1 = at least one
annotated hallucination span), from one part of the locked split (``_labelled_data.py``; ``--part
locked`` is the honest figure: the support detector and the SummaC-Conv weights were fitted on
the tuning part). Detectors, side by side on the same rows (DATA.md's protocol):

- ``summarization_faithfulness`` (SummaC-Conv, shipped): flagged below its threshold 0.75.
- ``SummaC-ZS max/mean``, ``SummaC-ZS max/min``: the same matrices reduced zero-shot
  (``details``), flagged below 0.75.
- on the tuning part only, ``SummaC-Conv (CV in the tuning part)``: the shipped setting refitted
  per fold, 5 folds grouped by source document (``train_summac_conv.cross_validate``); the
  shipped Conv is in-sample there.
- ``faithfulness`` (the existing detector's verdict): flagged when it fails.
- ``bag-of-words baseline``: share of the summary's content words found in the article,
  flagged below 0.85.

Each at its fixed threshold and, labelled "tuned", with a cut chosen by cross-validation grouped
by source document within the same rows. Speed, on the threads ``$RAGTRACE_MODEL_THREADS`` gives
(run with 1), after a warm-up record (models loaded): ``batched`` is each evaluator's
``evaluate_batch`` over the part in batches of its ``batch_size``, run one after the other, so
the embedding cache fills as the run goes (each article has several summaries, and later
evaluators meet sentences the earlier ones embedded); ``--speed-rows N`` adds ``cold``: N rows
one record at a time, the embedding and sentence caches emptied before each record (a new
article every time). ``--part none`` measures only that. ``--judge-rows N`` also runs
``judge_summarization`` (``against="source"``: the rows have no reference summary) with the
local judge (Qwen2.5-Coder-0.5B, ``$RAGTRACE_JUDGE_THREADS``, default here 1; no cache) on a
label-balanced sample of N rows of the part, for its seconds per record and an indication of
its accuracy on that small sample; ``--judge-reference N`` times it as 004 runs it, against a
one-sentence reference summary, on N hand-made records.
Writes benchmarks/results/summarization_accuracy.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from _accuracy_grounding import _record, bag_of_words_share
from _labelled_data import (
    GroundingExample,
    data_dir,
    fingerprint,
    halueval,
    ragtruth,
    split,
    summary,
    tuned_flags,
)

from ragtrace.evaluators._registry import create

FIXED = 0.75
BOW_THRESHOLD = 0.85
RESULTS = Path(__file__).resolve().parent / "results"


def summary_rows(folder: Path, part: str) -> tuple[list[GroundingExample], dict[str, Any]]:
    """The RAGTruth Summary rows of one part of the locked split, and the split's fingerprint."""
    everything = ragtruth(folder) + halueval(folder)
    tuning, locked = split(everything)
    rows = locked if part == "locked" else tuning
    return [e for e in rows if e.dataset == "ragtruth" and e.task == "Summary"], fingerprint(
        everything
    )


def timed(name: str, examples: list[GroundingExample], **options: Any) -> tuple[list, float]:
    """Each example's first Score from evaluator ``name``, and warm seconds per record."""
    evaluator = create(name, **options)
    evaluator.evaluate(WARM_UP)  # load the models
    records = [_record(e) for e in examples]
    size = evaluator.batch_size
    scores = []
    started = time.perf_counter()
    for start in range(0, len(records), size):
        scores.extend(s[0] for s in evaluator.evaluate_batch(records[start : start + size]))
        print(f"  {name}: {len(scores)}/{len(records)}", flush=True)
    seconds = (time.perf_counter() - started) / len(records)
    errors = [s.error for s in scores if s.error]
    if errors:
        raise SystemExit(f"{name}: {len(errors)} error Scores, first: {errors[0]}")
    return scores, seconds


WARM_UP = _record(
    GroundingExample(
        id="warm-up",
        dataset="none",
        task="Summary",
        group="warm-up",
        query=None,
        passages=("A warm-up article. It loads the models before the clock starts.",),
        response="The article loads the models.",
        label=0,
    )
)


def _empty_caches() -> None:
    """Forget every embedded sentence and split text (the shared embedder's LRU cache)."""
    from ragtrace._backends.embeddings import get_embedder
    from ragtrace.evaluators import _text as text

    get_embedder()._cache.clear()
    text._cached_split.cache_clear()


def cold_speed(examples: list[GroundingExample], rows: int) -> dict[str, Any]:
    """Seconds per record of each evaluator, one record at a time, caches emptied before each."""
    sample = examples[:rows]
    out: dict[str, Any] = {"rows": len(sample)}
    for name in ("summarization_faithfulness", "summarization_completeness", "faithfulness"):
        evaluator = create(name)
        evaluator.evaluate(WARM_UP)
        total = 0.0
        for example in sample:
            record = _record(example)
            _empty_caches()
            started = time.perf_counter()
            [score] = evaluator.evaluate(record)
            total += time.perf_counter() - started
            if score.error:
                raise SystemExit(f"{name}: {score.error}")
        out[name] = round(total / len(sample), 3)
        print(f"  cold {name}: {out[name]} s/record", flush=True)
    return out


def conv_cv(examples: list[GroundingExample]) -> list[float]:
    """Out-of-fold SummaC-Conv P(faithful) of the shipped setting inside these rows."""
    import numpy as np
    from train_summac_conv import cross_validate, matrices

    from ragtrace.evaluators._summac import ConvAggregator

    shipped = ConvAggregator.load()
    setting = (
        shipped.histogram,
        shipped.bins,
        float(shipped.info["l2"]),
        shipped.summary_reduction,
    )
    y = 1.0 - np.asarray([e.label for e in examples], dtype=float)
    oof = cross_validate(matrices(examples), y, [e.group for e in examples], setting)
    return [float(v) for v in oof]


def judged(examples: list[GroundingExample], rows: int) -> dict[str, Any]:
    """``judge_summarization`` against the article on a label-balanced sample of ``rows``."""
    from ragtrace._judges import JudgeClient, LocalJudgeServer

    def rank(e: GroundingExample) -> str:
        return hashlib.sha256(e.id.encode()).hexdigest()

    sample = []
    for label in (0, 1):
        sample += sorted((e for e in examples if e.label == label), key=rank)[: rows // 2]
    server = LocalJudgeServer().start()
    try:
        client = JudgeClient(server.model_name, api_base=server.api_base, cache=False)
        judge = create("judge_summarization", against="source", judge=client)
        judge.evaluate(_record(sample[0]))  # warm the server
        started = time.perf_counter()
        scores = [judge.evaluate(_record(e))[0] for e in sample]
        seconds = (time.perf_counter() - started) / len(sample)
    finally:
        server.stop()
    ok = [(e, s) for e, s in zip(sample, scores, strict=True) if s.error is None]
    labels = [e.label for e, _ in ok]
    risk = [1.0 - s.value for _, s in ok]
    return {
        "model": server.model_name,
        "threads": server.threads,
        "rows": len(sample),
        "errors": len(sample) - len(ok),
        "seconds_per_record": round(seconds, 2),
        "sample": summary(labels, risk, [s.passed is False for _, s in ok]) if ok else None,
    }


ARTICLE = (
    "The city council approved a new park on Monday. The park will cost 2 million dollars. "
    "Construction starts in May."
)
REFERENCE = "The council approved a 2 million dollar park on Monday; building starts in May."
SUMMARIES = (
    "On Monday the city council approved a new park costing 2 million dollars, with "
    "construction starting in May.",
    "The council rejected the park on Friday because it would cost 50 million dollars.",
)


def judge_reference_speed(rows: int) -> dict[str, Any]:
    """Seconds per record of ``judge_summarization`` as 004 runs it (against a one-sentence
    reference summary): ``rows`` hand-made records, a good and a bad summary in turn."""
    from ragtrace._judges import JudgeClient, LocalJudgeServer
    from ragtrace._model import Chunk, RagRecord

    records = [
        RagRecord(
            trace_id="0" * 32,
            span_id="0" * 16,
            query=None,
            chunks=(Chunk(text=ARTICLE),),
            response=SUMMARIES[i % 2],
            reference=REFERENCE,
        )
        for i in range(rows)
    ]
    server = LocalJudgeServer().start()
    try:
        client = JudgeClient(server.model_name, api_base=server.api_base, cache=False)
        judge = create("judge_summarization", judge=client)
        judge.evaluate(records[0])  # warm the server
        started = time.perf_counter()
        scores = [judge.evaluate(r)[0] for r in records]
        seconds = (time.perf_counter() - started) / len(records)
    finally:
        server.stop()
    return {
        "model": server.model_name,
        "threads": server.threads,
        "rows": len(records),
        "seconds_per_record": round(seconds, 2),
        "labels": [s.label for s in scores[:2]],
    }


def run(folder: Path, part: str, judge_rows: int = 0) -> dict[str, Any]:
    """Every detector on one part's Summary rows, fixed and tuned cuts, and the speeds."""
    examples, split_info = summary_rows(folder, part)
    labels = [e.label for e in examples]
    groups = [e.group for e in examples]
    faith_s, faith_speed = timed("summarization_faithfulness", examples)
    complete_s, complete_speed = timed("summarization_completeness", examples)
    detector_s, detector_speed = timed("faithfulness", examples)
    conv = [s.value for s in faith_s]
    zs_mean = [s.details["summac_zs"] for s in faith_s]
    zs_min = [min(x["support"] for x in s.details["sentences"]) for s in faith_s]
    bow = [bag_of_words_share(e) for e in examples]
    # Each detector: (risk score for AUROC, flags at its fixed cut).
    detectors: dict[str, tuple[list[float], list[bool]]] = {
        "summarization_faithfulness (SummaC-Conv)": (
            [1 - v for v in conv],
            [s.passed is False for s in faith_s],
        ),
        "SummaC-ZS max/mean": ([1 - v for v in zs_mean], [v < FIXED for v in zs_mean]),
        "SummaC-ZS max/min": ([1 - v for v in zs_min], [v < FIXED for v in zs_min]),
        "faithfulness verdict (existing)": (
            [s.details["hallucination_probability"] for s in detector_s],
            [s.passed is False for s in detector_s],
        ),
        "bag-of-words baseline": ([1 - v for v in bow], [v < BOW_THRESHOLD for v in bow]),
    }
    if part == "tuning":
        detectors["summarization_faithfulness (in-sample)"] = detectors.pop(
            "summarization_faithfulness (SummaC-Conv)"
        )
        oof = conv_cv(examples)
        detectors["SummaC-Conv (CV in the tuning part)"] = (
            [1 - v for v in oof],
            [v < FIXED for v in oof],
        )
    rows = {
        name: {
            "fixed": summary(labels, risk, flags),
            "tuned": summary(labels, risk, tuned_flags(labels, risk, groups)),
        }
        for name, (risk, flags) in detectors.items()
    }
    complete = [s.value for s in complete_s]
    result: dict[str, Any] = {
        "part": part,
        "split": split_info,
        "rows": len(examples),
        "hallucinated": sum(labels),
        "detectors": rows,
        "completeness_mean": {
            "faithful rows": round(
                _mean([c for c, y in zip(complete, labels, strict=True) if not y]), 3
            ),
            "hallucinated rows": round(
                _mean([c for c, y in zip(complete, labels, strict=True) if y]), 3
            ),
        },
        "seconds_per_record": {  # batched, caches filling as the run goes
            "summarization_faithfulness": round(faith_speed, 3),
            "summarization_completeness": round(complete_speed, 3),
            "faithfulness": round(detector_speed, 3),
        },
        "threads": os.environ.get("RAGTRACE_MODEL_THREADS", "1 (default)"),
    }
    if judge_rows:
        result["judge_summarization"] = judged(examples, judge_rows)
    return result


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 3) if values else float("nan")


def table(result: dict[str, Any]) -> str:
    """Plain-text table: one line per detector, then the speeds."""
    head = f"{'detector':<44}{'BA':>6}{'F1':>7}{'AUROC':>7}{'BA tuned':>10}{'F1 tuned':>10}"
    lines = [
        f"RAGTruth Summary, {result['part']} part of the locked split: {result['rows']} rows, "
        f"{result['hallucinated']} hallucinated",
        head,
        "-" * len(head),
    ]
    for name, r in result["detectors"].items():
        fixed, tuned = r["fixed"], r["tuned"]
        lines.append(
            f"{name:<44}{fixed['balanced_accuracy']:>6.3f}{fixed['f1']:>7.3f}"
            f"{fixed['auroc']:>7.3f}{tuned['balanced_accuracy']:>10.3f}{tuned['f1']:>10.3f}"
        )
    lines.append("anchor: HHEM-2.1-open BA 0.644 (published, RAGTruth Summary)")
    lines.append(f"summarization_completeness mean value: {result['completeness_mean']}")
    lines.append(
        f"seconds per record (threads {result['threads']}): {result['seconds_per_record']}"
    )
    if "judge_summarization" in result:
        lines.append(f"judge_summarization (against='source'): {result['judge_summarization']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--part", choices=("tuning", "locked", "both", "none"), default="locked")
    parser.add_argument("--speed-rows", type=int, default=0, help="cold speed on N locked rows")
    parser.add_argument("--judge-rows", type=int, default=0, help="judge a balanced sample")
    parser.add_argument("--judge-reference", type=int, default=0, help="judge N hand-made rows")
    args = parser.parse_args()
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(var, "1")
    os.environ.setdefault("RAGTRACE_JUDGE_THREADS", "1")
    folder = data_dir(args.data_dir)
    parts = {"both": ("tuning", "locked"), "none": ()}.get(args.part, (args.part,))
    out = RESULTS / "summarization_accuracy.json"
    results = json.loads(out.read_text()) if out.exists() else {}
    for part in parts:
        found = run(folder, part, args.judge_rows)
        if "judge_summarization" in results.get(part, {}) and not args.judge_rows:
            found["judge_summarization"] = results[part]["judge_summarization"]  # kept
        results[part] = found
        print(table(results[part]), flush=True)
    if args.speed_rows:
        results["cold_speed"] = cold_speed(summary_rows(folder, "locked")[0], args.speed_rows)
        results["cold_speed"]["threads"] = os.environ.get("RAGTRACE_MODEL_THREADS", "1 (default)")
        print(f"cold seconds per record: {results['cold_speed']}")
    if args.judge_reference:
        results["judge_reference"] = judge_reference_speed(args.judge_reference)
        print(f"judge_summarization against a reference: {results['judge_reference']}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
