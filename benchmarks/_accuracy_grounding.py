"""RAGTruth and HaluEval: does a detector flag the responses that contain hallucinations?

Runs on one part of the locked split (``_labelled_data``): the tuning part by default, the
locked part with ``accuracy.py --locked`` (once per shipped change; never to choose
anything). Detectors, side by side on the same rows (DATA.md's protocol):

- ``bag-of-words`` baseline: share of the answer's content words found in the passages,
  flagged below 0.85 (score for AUROC: 1 - share).
- ``groundedness`` (H2O's embedding formula, 004): flagged when the evaluator fails.
- ``faithfulness verdict``: what users see, the shipped evaluator's ``passed`` (flagged when
  it fails; score: ``details["hallucination_probability"]``). Records carry no task: the
  evaluator infers it from their shape (Summary and Data2txt rows have no question).
- ``faithfulness claim ratio < 0.5``: the verdict users saw before (the seeds' share of
  supported claims, now ``details["claim_ratio"]``), same evaluator run.
- on the tuning part only, ``faithfulness (CV)``: the shipped weights were fitted on the tuning
  part, so there the honest figure is the 5-fold CV grouped by source document inside it (both
  models refitted per fold and per task, ``train_support.py``); the shipped evaluator's rows
  are in-sample there, for plumbing only.

Each is reported at its fixed threshold and, labelled "tuned", with a threshold chosen by
cross-validation grouped by source within the same part. Records are scored in batches of one
source document at a time (the files keep them together), so both model evaluators share the
embedder's cache.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from _labelled_data import (
    GroundingExample,
    fingerprint,
    halueval,
    ragtruth,
    split,
    summary,
    tuned_flags,
)

from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators._registry import create
from ragtrace.evaluators._text import content_words

TRAINING = Path(__file__).resolve().parents[1] / "training"
BOW_THRESHOLD = 0.85
BATCH = 24
SLICES = (
    ("ragtruth", "QA"),
    ("ragtruth", "Summary"),
    ("ragtruth", "Data2txt"),
    ("ragtruth", "all"),
    ("halueval", "QA"),
)


def bag_of_words_share(example: GroundingExample) -> float:
    """Share of the answer's content words that occur in the passages."""
    answer = content_words(example.response)
    if not answer:
        return 1.0
    known = set(content_words(" ".join(example.passages)))
    return sum(w in known for w in answer) / len(answer)


def _record(example: GroundingExample) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query=example.query,
        chunks=tuple(Chunk(text=p, id=str(i)) for i, p in enumerate(example.passages)),
        response=example.response,
    )


def score_examples(
    examples: list[GroundingExample],
    progress: bool = True,
    detector: str = "features",
    profile: str = "default",
) -> dict[str, list]:
    """Per example: bag-of-words share, groundedness value/passed, faithfulness probability
    (with ``detector``), verdict and claim ratio; both evaluators with the options of the
    online suite's ``profile`` (``ragtrace.evaluators._suites``)."""
    from ragtrace.evaluators._suites import suite_options

    options = suite_options(profile)
    faithfulness = create("faithfulness", **{**options["faithfulness"], "detector": detector})
    groundedness = create("groundedness", **options["groundedness"])
    out: dict[str, list[Any]] = {
        "bow": [],
        "grounded": [],
        "grounded_fail": [],
        "faith": [],
        "faith_fail": [],
        "claim_ratio": [],
    }
    for start in range(0, len(examples), BATCH):
        batch = examples[start : start + BATCH]
        records = [_record(e) for e in batch]
        for (score,) in faithfulness.evaluate_batch(records):
            out["faith"].append(score.details["hallucination_probability"])
            out["faith_fail"].append(score.passed is False)
            out["claim_ratio"].append(score.details["claim_ratio"])
        for scores in groundedness.evaluate_batch(records):
            out["grounded"].append(scores[0].value)
            out["grounded_fail"].append(scores[0].passed is False)
        out["bow"].extend(bag_of_words_share(e) for e in batch)
        if progress:
            print(f"  scored {start + len(batch)}/{len(examples)}", flush=True)
    return out


def verdict_name(detector: str) -> str:
    """The table's name for the faithfulness evaluator's verdict with ``detector``."""
    if detector == "features":
        return "faithfulness verdict (shipped)"
    return f"faithfulness verdict (detector={detector})"


def _slice(examples: list[GroundingExample], dataset: str, task: str) -> list[int]:
    return [
        i
        for i, e in enumerate(examples)
        if e.dataset == dataset and (task == "all" or e.task == task)
    ]


def run(
    data_dir: Path, locked: bool = False, detector: str = "features", profile: str = "default"
) -> dict[str, Any]:
    """Every detector on every slice of one part, fixed and tuned thresholds (the faithfulness
    evaluator with ``detector``; both evaluators with the suite ``profile``'s options)."""
    import numpy as np

    sys.path.insert(1, str(TRAINING))  # the fitted detectors are the training recipes'
    import train_support
    from _faith_fit import cross_validate

    everything = ragtruth(data_dir) + halueval(data_dir)  # a document's rows stay together
    tuning, held_out = split(everything)
    examples = held_out if locked else tuning
    scored = score_examples(examples, detector=detector, profile=profile)
    ratio = scored["claim_ratio"]
    detectors = {
        "bag-of-words baseline": (
            [1 - s for s in scored["bow"]],
            [s < BOW_THRESHOLD for s in scored["bow"]],
        ),
        "groundedness (004)": ([1 - v for v in scored["grounded"]], scored["grounded_fail"]),
        "faithfulness claim ratio < 0.5 (before)": (
            [1 - r for r in ratio],
            [r < 0.5 for r in ratio],
        ),
        verdict_name(detector): (scored["faith"], scored["faith_fail"]),
    }
    if not locked and detector == "features":
        data = train_support.load(everything)
        position = {id(e): i for i, e in enumerate(everything)}
        at = np.asarray([position[id(e)] for e in examples])
        oof = cross_validate(
            data, at, train_support.SHIPPED_RESPONSE, by_task=train_support.BY_TASK
        )
        values = np.nan_to_num(oof.values, nan=0.0)[at].tolist()
        cuts = np.nan_to_num(oof.thresholds, nan=0.5)[at].tolist()
        detectors["faithfulness (CV in the tuning part)"] = (
            values,
            [p > cut for p, cut in zip(values, cuts, strict=True)],
        )
        detectors["faithfulness verdict (in-sample)"] = detectors.pop(
            "faithfulness verdict (shipped)"
        )
    result: dict[str, Any] = {
        "part": "locked" if locked else "tuning",
        "split": fingerprint(everything),
    }
    for dataset, task in SLICES:
        idx = _slice(examples, dataset, task)
        labels = [examples[i].label for i in idx]
        groups = [examples[i].group for i in idx]
        rows = {}
        for name, (scores, flags) in detectors.items():
            s = [scores[i] for i in idx]
            rows[name] = {
                "fixed": summary(labels, s, [flags[i] for i in idx]),
                "tuned": summary(labels, s, tuned_flags(labels, s, groups)),
            }
        result[f"{dataset}/{task}"] = rows
    return result


ANCHORS = {
    "ragtruth/QA": "HHEM-2.1-open BA 0.743",
    "ragtruth/Summary": "HHEM-2.1-open BA 0.644",
    "ragtruth/all": "F1: RAGAS 0.520, TruLens 0.604, GPT-4-turbo 0.634, Luna 0.654",
    "halueval/QA": "target accuracy >= 0.93",
}


def table(result: dict[str, Any]) -> str:
    """Plain-text table: one line per slice and detector."""
    head = (
        f"{'slice':<18}{'detector':<42}{'BA':>6}{'F1':>7}{'AUROC':>7}"
        f"{'BA tuned':>10}{'F1 tuned':>10}"
    )
    lines = [f"part: {result.get('part')} of the locked split {result.get('split')}", head]
    lines.append("-" * len(head))
    for key, rows in result.items():
        if not isinstance(rows, dict) or "/" not in key:
            continue
        for name, r in rows.items():
            fixed, tuned = r["fixed"], r["tuned"]
            metric = "accuracy" if key.startswith("halueval") else "balanced_accuracy"
            lines.append(
                f"{key:<18}{name:<42}{fixed[metric]:>6.3f}{fixed['f1']:>7.3f}"
                f"{fixed['auroc'] or 0:>7.3f}{tuned[metric]:>10.3f}{tuned['f1']:>10.3f}"
            )
        if key in ANCHORS:
            lines.append(f"{'':<18}anchor: {ANCHORS[key]}")
    return "\n".join(lines)
