"""RAGTruth and HaluEval: does a detector flag the responses that contain hallucinations?

Detectors, side by side on the same rows (DATA.md's protocol):

- ``bag-of-words`` baseline: share of the answer's content words found in the passages,
  flagged below 0.85 (score for AUROC: 1 - share).
- ``groundedness`` (H2O's embedding formula, 004): flagged when the evaluator fails.
- ``faithfulness``: the local support detector, flagged when its response-level hallucination
  probability (``details["hallucination_probability"]``, the response model over the claims'
  probabilities) is at least 0.5. Its weights were fitted on these very rows, so the headline
  figure is the **cross-validated** one (5 folds grouped by source document, both models refitted
  in each, from ``train_support.py``'s out-of-fold predictions); the older rule "any claim below
  0.5", cross-validated the same way, and the shipped model's in-sample figure are printed
  beside it for reference only.

Each is reported at its fixed threshold and, labelled "tuned", with a threshold chosen by
cross-validation grouped by source. Records are scored in batches of one source document at a
time (the files keep them together), so both model evaluators share the embedder's cache.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _binary_metrics import summary, tuned_flags
from _datasets import GroundingExample, halueval, ragtruth

from ragtrace.evaluators.registry import create
from ragtrace.evaluators.text import content_words
from ragtrace.model import Chunk, RagRecord

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


def score_examples(examples: list[GroundingExample], progress: bool = True) -> dict[str, list]:
    """Per example: bag-of-words share, groundedness value/passed, faithfulness probability."""
    faithfulness = create("faithfulness")
    groundedness = create("groundedness")
    out: dict[str, list[Any]] = {"bow": [], "grounded": [], "grounded_fail": [], "faith": []}
    for start in range(0, len(examples), BATCH):
        batch = examples[start : start + BATCH]
        records = [_record(e) for e in batch]
        for scores in faithfulness.evaluate_batch(records):
            out["faith"].append(scores[0].details["hallucination_probability"])
        for scores in groundedness.evaluate_batch(records):
            out["grounded"].append(scores[0].value)
            out["grounded_fail"].append(scores[0].passed is False)
        out["bow"].extend(bag_of_words_share(e) for e in batch)
        if progress:
            print(f"  scored {start + len(batch)}/{len(examples)}", flush=True)
    return out


def _slice(examples: list[GroundingExample], dataset: str, task: str) -> list[int]:
    return [
        i
        for i, e in enumerate(examples)
        if e.dataset == dataset and (task == "all" or e.task == task)
    ]


def run(data_dir: Path) -> dict[str, Any]:
    """Every detector on every slice, fixed and tuned thresholds."""
    import train_support

    examples = ragtruth(data_dir) + halueval(data_dir)  # the files keep a document's rows together
    scored = score_examples(examples)
    features = train_support.build(examples, train_support.FEATURE_CACHE)
    oof = train_support.cross_validate(examples, features).tolist()
    any_claim = train_support.cross_validate(examples, features, any_claim=True).tolist()
    detectors = {
        "bag-of-words baseline": (
            [1 - s for s in scored["bow"]],
            [s < BOW_THRESHOLD for s in scored["bow"]],
        ),
        "groundedness (004)": ([1 - v for v in scored["grounded"]], scored["grounded_fail"]),
        "faithfulness (cross-validated)": (oof, [p >= 0.5 for p in oof]),
        "faithfulness, any claim (CV)": (any_claim, [p >= 0.5 for p in any_claim]),
        "faithfulness (shipped, in-sample)": (scored["faith"], [p >= 0.5 for p in scored["faith"]]),
    }
    result: dict[str, Any] = {}
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
    "halueval/QA": "target accuracy >= 0.95",
}


def table(result: dict[str, Any]) -> str:
    """Plain-text table: one line per slice and detector."""
    head = (
        f"{'slice':<18}{'detector':<36}{'BA':>6}{'F1':>7}{'AUROC':>7}"
        f"{'BA tuned':>10}{'F1 tuned':>10}"
    )
    lines = [head, "-" * len(head)]
    for key, rows in result.items():
        for name, r in rows.items():
            fixed, tuned = r["fixed"], r["tuned"]
            metric = "accuracy" if key.startswith("halueval") else "balanced_accuracy"
            lines.append(
                f"{key:<18}{name:<36}{fixed[metric]:>6.3f}{fixed['f1']:>7.3f}"
                f"{fixed['auroc'] or 0:>7.3f}{tuned[metric]:>10.3f}{tuned['f1']:>10.3f}"
            )
        if key in ANCHORS:
            lines.append(f"{'':<18}anchor: {ANCHORS[key]}")
    return "\n".join(lines)
