"""PII accuracy on the presidio-research synthetic data (dev half): entity level, per type.

``run(data_dir)`` reads ``pii_presidio_synth.dev.jsonl``, runs the detectors of ragtrace's
``PiiLeakage`` (the regex suite plus Presidio NER over the packaged spaCy model) on every row's
``text`` and compares the findings with the gold ``spans``, per entity type:

- exact: a finding counts when a gold span of the same (mapped) type has the same offsets;
- overlap: a finding counts when it overlaps a gold span of the same type, and a gold span is
  recalled when some finding of its type overlaps it.

Precision = matched findings / findings, recall = recalled gold spans / gold spans. Gold types
map to ragtrace's (``TYPE_MAP``) as presidio-research's own evaluation does: GPE, ADDRESS and
STREET_ADDRESS are LOCATION (an address is a place; expect low exact scores there, since
spaCy marks parts of an address, not the whole). Types ragtrace does not detect (TITLE, AGE,
DOMAIN_NAME, ZIP_CODE, US_DRIVER_LICENSE, PREFIX) are listed with their counts and left out of
the averages. Micro averages are given over the structured (regex) types and over all.

It also reports the record-level verdict that ``pii_leakage`` returns (flagged = any finding)
against ``has_pii``, for the default configuration (regex types + PERSON + LOCATION) and for
the regex-only one, and the time per row.

    cd benchmarks && python -c "from pathlib import Path; import _accuracy_pii as m; \
print(m.table(m.run(Path('../shared/data'))))"
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from ragtrace.evaluators.pii import PiiLeakage
from ragtrace.evaluators.pii_patterns import STRUCTURED_ENTITIES

FILE = "pii_presidio_synth.dev.jsonl"
NER_TYPES = ("PERSON", "LOCATION", "ORGANIZATION", "DATE_TIME", "NRP")
TYPE_MAP = {
    **{t: t for t in STRUCTURED_ENTITIES},
    "PERSON": "PERSON",
    "LOCATION": "LOCATION",
    "GPE": "LOCATION",
    "ADDRESS": "LOCATION",
    "STREET_ADDRESS": "LOCATION",
    "ORGANIZATION": "ORGANIZATION",
    "DATE_TIME": "DATE_TIME",
    "NRP": "NRP",
}
DEFAULT_TYPES = (*STRUCTURED_ENTITIES, "PERSON", "LOCATION")


def run(data_dir: Path) -> dict[str, Any]:
    """Entity-level precision/recall/F1 per type (exact and overlap) and record-level scores."""
    rows = [json.loads(line) for line in (Path(data_dir) / FILE).open(encoding="utf-8")]
    evaluator = PiiLeakage(entities=(*STRUCTURED_ENTITIES, *NER_TYPES))
    texts = [row["text"] for row in rows]
    evaluator.detect(texts[:2])  # load the model outside the timing
    started = time.perf_counter()
    predicted = evaluator.detect(texts)
    seconds = time.perf_counter() - started
    regex_only = PiiLeakage(ner=False)
    started = time.perf_counter()
    regex_predicted = regex_only.detect(texts)
    regex_seconds = time.perf_counter() - started

    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    uncovered: dict[str, int] = defaultdict(int)
    by_gold: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # gold type -> [recalled, all]
    for row, found in zip(rows, predicted, strict=True):
        pred: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for f in found:
            pred[f.entity_type].append((f.start, f.end))
        gold: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for span in row["spans"]:
            mapped = TYPE_MAP.get(span["entity_type"])
            if mapped is None:
                uncovered[span["entity_type"]] += 1
                continue
            where = (span["start"], span["end"])
            gold[mapped].append(where)
            by_gold[span["entity_type"]][1] += 1
            by_gold[span["entity_type"]][0] += any(_overlaps(p, where) for p in pred[mapped])
        for etype in set(gold) | set(pred):
            _count(counts[etype], gold[etype], pred[etype])

    per_type = {t: _scores(c) for t, c in sorted(counts.items())}
    structured = _scores(_sum(counts, STRUCTURED_ENTITIES))
    overall = _scores(_sum(counts, counts.keys()))
    default_types = set(DEFAULT_TYPES)
    flags_default = [any(f.entity_type in default_types for f in fs) for fs in predicted]
    flags_regex = [bool(fs) for fs in regex_predicted]
    labels = [bool(row["has_pii"]) for row in rows]
    return {
        "rows": len(rows),
        "per_type": per_type,
        "micro_structured": structured,
        "micro_all": overall,
        "not_detected": dict(sorted(uncovered.items())),
        "overlap_recall_by_gold_type": {
            t: {"recalled": r, "gold": n, "recall": r / n} for t, (r, n) in sorted(by_gold.items())
        },
        "record_level": {
            "default (regex + PERSON + LOCATION)": _binary(labels, flags_default),
            "regex only": _binary(labels, flags_regex),
        },
        "ms_per_row": {
            "regex + NER": 1000 * seconds / len(rows),
            "regex only": 1000 * regex_seconds / len(rows),
        },
        "type_map": TYPE_MAP,
    }


def table(result: dict[str, Any]) -> str:
    """The result as a plain-text table."""
    head = f"{'type':<16}{'gold':>6}{'pred':>6}   {'exact P/R/F1':<20}{'overlap P/R/F1':<20}"
    lines = [f"PII entity level, {result['rows']} rows (presidio synth, dev)", head]

    def row(name: str, s: dict[str, Any]) -> str:
        ex, ov = s["exact"], s["overlap"]
        return (
            f"{name:<16}{s['gold']:>6}{s['pred']:>6}   "
            f"{ex['p']:.2f}/{ex['r']:.2f}/{ex['f1']:.2f}".ljust(48)
            + f"{ov['p']:.2f}/{ov['r']:.2f}/{ov['f1']:.2f}"
        )

    for name, scores in result["per_type"].items():
        lines.append(row(name, scores))
    lines.append(row("micro structured", result["micro_structured"]))
    lines.append(row("micro all", result["micro_all"]))
    recall = ", ".join(
        f"{t} {v['recall']:.2f}" for t, v in result["overlap_recall_by_gold_type"].items()
    )
    lines.append(f"overlap recall by gold type: {recall}")
    missing = ", ".join(f"{t} {n}" for t, n in result["not_detected"].items())
    lines.append(f"not detected by ragtrace (gold spans): {missing}")
    lines.append("record level (flagged vs has_pii):")
    for name, s in result["record_level"].items():
        lines.append(
            f"  {name:<38} P {s['p']:.2f}  R {s['r']:.2f}  F1 {s['f1']:.2f}  acc {s['acc']:.2f}"
        )
    speed = ", ".join(f"{k} {v:.2f} ms" for k, v in result["ms_per_row"].items())
    lines.append(f"time per row: {speed}")
    return "\n".join(lines)


def _count(c: dict[str, int], gold: list[tuple[int, int]], pred: list[tuple[int, int]]) -> None:
    c["gold"] += len(gold)
    c["pred"] += len(pred)
    gold_set = set(gold)
    c["exact_tp"] += sum(1 for p in pred if p in gold_set)
    c["overlap_pred_tp"] += sum(1 for p in pred if any(_overlaps(p, g) for g in gold))
    c["overlap_gold_tp"] += sum(1 for g in gold if any(_overlaps(p, g) for p in pred))


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _sum(counts: dict[str, dict[str, int]], types: Any) -> dict[str, int]:
    total: dict[str, int] = defaultdict(int)
    for t in types:
        for k, v in counts.get(t, {}).items():
            total[k] += v
    return total


def _scores(c: dict[str, int]) -> dict[str, Any]:
    gold, pred = c.get("gold", 0), c.get("pred", 0)
    exact = _prf(c.get("exact_tp", 0), pred, c.get("exact_tp", 0), gold)
    overlap = _prf(c.get("overlap_pred_tp", 0), pred, c.get("overlap_gold_tp", 0), gold)
    return {"gold": gold, "pred": pred, "exact": exact, "overlap": overlap}


def _prf(tp_pred: int, pred: int, tp_gold: int, gold: int) -> dict[str, float]:
    p = tp_pred / pred if pred else 0.0
    r = tp_gold / gold if gold else 0.0
    return {"p": p, "r": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def _binary(labels: list[bool], flags: list[bool]) -> dict[str, float]:
    tp = sum(1 for y, f in zip(labels, flags, strict=True) if y and f)
    fp = sum(1 for y, f in zip(labels, flags, strict=True) if not y and f)
    fn = sum(1 for y, f in zip(labels, flags, strict=True) if y and not f)
    correct = sum(1 for y, f in zip(labels, flags, strict=True) if y == f)
    scores = _prf(tp, tp + fp, tp, tp + fn)
    return {**scores, "acc": correct / len(labels) if labels else 0.0}
