"""Accuracy of the two cold-record options against the defaults they would replace.

Issue 24 asks that nothing get less accurate to get faster without saying so. This script gives
the figures quoted in docs/evaluators.md for the two opt-in options:

- ``ares``: ``context_relevance`` with the packaged MiniLM (default) and with
  ``model="wordllama"`` (the static embedder) on ARES's context-relevance rows (dev): AUROC,
  balanced accuracy at the default threshold (0.4) and at the best cut, seconds.
- ``pii``: ``pii_leakage`` NER over whole texts (default) and with ``ner_candidates_only=True``,
  for the default entities (NER: PERSON, LOCATION) and with ORGANIZATION too (the types the
  option accepts): on the presidio-research PII rows (dev), the
  RAGTruth and HaluEval contexts and the throughput benchmark's cold chunks, the NER findings the
  gated pass loses and gains, the share of characters it still reads and the seconds of both
  passes (the analyzer's cache emptied before each); on the PII rows, the overlap
  precision/recall of PERSON and LOCATION against the gold spans.

Run (about 5-10 minutes on a shared 2-core box, most of it ARES's MiniLM pass)::

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 RAGTRACE_MODEL_THREADS=1 \\
        .venv/bin/python benchmarks/cold_options_accuracy.py [--only ares,pii] [--data-dir DIR]

It prints one table per section and writes ``benchmarks/results/cold_options_accuracy.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _accuracy_ares import FILE as ARES_FILE  # noqa: E402
from _accuracy_ares import _balanced, _best_cut, _record, _rows, auroc  # noqa: E402
from _accuracy_pii import FILE as PII_FILE  # noqa: E402
from _accuracy_pii import TYPE_MAP, _count, _scores  # noqa: E402
from _datasets import data_dir, halueval, ragtruth  # noqa: E402
from _throughput_records import records  # noqa: E402

from ragtrace.backends.ner import get_ner  # noqa: E402
from ragtrace.evaluators.context_relevance import RECALL, ContextRelevance  # noqa: E402
from ragtrace.evaluators.pii import CANDIDATE_ENTITIES, PiiLeakage  # noqa: E402
from ragtrace.evaluators.pii_candidates import candidate_spans  # noqa: E402
from ragtrace.evaluators.pii_patterns import STRUCTURED_ENTITIES  # noqa: E402

RESULTS = HERE / "results" / "cold_options_accuracy.json"
BATCH = 64
THROUGHPUT_CHUNK_RECORDS = 200

Key = tuple[str, int, int]  # entity type, start, end


def ares(folder: Path) -> dict[str, Any]:
    """``context_relevance.recall`` on ARES with MiniLM and with the static embedder."""
    rows = _rows(folder / ARES_FILE)
    labels = [int(r["context_relevance"]) for r in rows]
    out: dict[str, Any] = {"rows": len(rows), "positives": sum(labels), "models": {}}
    for model in (None, "wordllama"):
        evaluator = ContextRelevance(model=model)
        started = time.perf_counter()
        values: list[float] = []
        model_id = ""
        for start in range(0, len(rows), BATCH):
            batch = [_record(r) for r in rows[start : start + BATCH]]
            for scores in evaluator.evaluate_batch(batch):
                recall = next(s for s in scores if s.name == RECALL)
                if recall.error is not None or recall.value is None:
                    raise RuntimeError(f"context_relevance failed: {recall.error}")
                values.append(recall.value)
                model_id = recall.model or model_id
        threshold = evaluator.thresholds[RECALL]
        out["models"][model or "default"] = {
            "model": model_id,
            "auroc": round(auroc(labels, values), 4),
            "threshold": threshold,
            "balanced_accuracy_at_threshold": round(_balanced(labels, values, threshold or 0), 4),
            **_best_cut(labels, values),
            "seconds": round(time.perf_counter() - started, 1),
        }
    return out


def ares_table(result: dict[str, Any]) -> str:
    lines = [
        f"context_relevance.recall on ARES dev ({result['rows']} rows, "
        f"{result['positives']} relevant)",
        f"{'model':<28}{'AUROC':>7}{'bal.acc@thr':>13}{'best':>12}{'s':>8}",
    ]
    for m in result["models"].values():
        best = f"{m['best_balanced_accuracy']}@{m['best_cut']}"
        lines.append(
            f"{m['model']:<28}{m['auroc']:>7}{m['balanced_accuracy_at_threshold']:>9}"
            f"@{m['threshold']:<3}{best:>12}{m['seconds']:>8}"
        )
    return "\n".join(lines)


def pii(folder: Path) -> dict[str, Any]:
    """Findings lost and gained by ``ner_candidates_only`` on four kinds of text."""
    rows = [json.loads(line) for line in (folder / PII_FILE).open(encoding="utf-8")]
    sets: dict[str, list[str]] = {
        PII_ROWS: [r["text"] for r in rows],
        "ragtruth contexts": _unique(p for e in ragtruth(folder) for p in e.passages),
        "halueval knowledge": _unique(p for e in halueval(folder) for p in e.passages),
        "throughput cold chunks": [
            c["text"] for r in records("cold", THROUGHPUT_CHUNK_RECORDS) for c in r["contexts"]
        ],
    }
    out: dict[str, Any] = {}
    for kind, entities in ENTITY_SETS.items():
        out[kind] = {}
        for name, texts in sets.items():
            entry, found = _compare(entities, texts)
            if name == PII_ROWS:
                entry["gold_overlap"] = {label: _gold_scores(rows, f) for label, f in found.items()}
            out[kind][name] = entry
    return out


PII_ROWS = "pii dev rows"
ENTITY_SETS: dict[str, tuple[str, ...] | None] = {
    "default entities": None,
    "with ORGANIZATION": (*STRUCTURED_ENTITIES, *sorted(CANDIDATE_ENTITIES)),
}


def _compare(
    entities: tuple[str, ...] | None, texts: list[str]
) -> tuple[dict[str, Any], dict[str, list[list[Any]]]]:
    """Both passes over ``texts``: the comparison, and each pass's findings."""
    full = PiiLeakage(entities=entities)
    gated = PiiLeakage(entities=entities, ner_candidates_only=True)
    analyzer = get_ner(full.spacy_model)
    full.detect(["Maria Lopez lives in Lyon."])  # load the model outside the timing
    found: dict[str, list[list[Any]]] = {}
    seconds = {}
    for label, evaluator in (("full", full), ("gated", gated)):
        analyzer._cache.clear()  # time NER itself, not its cache
        started = time.perf_counter()
        found[label] = evaluator.detect(texts)
        seconds[label] = round(time.perf_counter() - started, 2)
    full_keys = [_ner_keys(fs) for fs in found["full"]]
    gated_keys = [_ner_keys(fs) for fs in found["gated"]]
    pairs = list(zip(full_keys, gated_keys, strict=True))
    read = sum(b - a for t in texts for a, b in candidate_spans(t))
    entry: dict[str, Any] = {
        "texts": len(texts),
        "ner_findings_full": sum(map(len, full_keys)),
        "lost": sum(len(f - g) for f, g in pairs),
        "gained": sum(len(g - f) for f, g in pairs),
        "texts_changed": sum(f != g for f, g in pairs),
        "lost_by_type": dict(Counter(k[0] for f, g in pairs for k in f - g)),
        "share_of_chars_read": round(read / max(1, sum(map(len, texts))), 3),
        "seconds": seconds,
    }
    return entry, found


def pii_table(result: dict[str, Any]) -> str:
    lines = ["pii_leakage NER: whole texts (full) vs ner_candidates_only (gated)"]
    for kind, sets in result.items():
        lines.append(
            f"{kind:<24}{'n':>6}{'NER found':>10}{'lost':>6}{'gained':>7}{'changed':>8}"
            f"{'read':>6}{'s full':>8}{'s gated':>8}"
        )
        for name, e in sets.items():
            lines.append(
                f"  {name:<22}{e['texts']:>6}{e['ner_findings_full']:>10}{e['lost']:>6}"
                f"{e['gained']:>7}{e['texts_changed']:>8}{e['share_of_chars_read']:>6}"
                f"{e['seconds']['full']:>8}{e['seconds']['gated']:>8}  {e['lost_by_type'] or ''}"
            )
        for label, by_type in sets.get(PII_ROWS, {}).get("gold_overlap", {}).items():
            cells = ", ".join(
                f"{t} P {s['overlap']['p']:.3f} R {s['overlap']['r']:.3f}"
                for t, s in by_type.items()
            )
            lines.append(f"  gold overlap ({label}): {cells}")
    lines.append("read: share of characters inside the candidate runs (what gated NER reads)")
    return "\n".join(lines)


def _ner_keys(findings: Sequence[Any]) -> set[Key]:
    return {(f.entity_type, f.start, f.end) for f in findings if f.detector != "regex"}


def _gold_scores(rows: list[dict[str, Any]], predicted: list[list[Any]]) -> dict[str, Any]:
    """Overlap precision/recall of the NER types against the gold spans, and micro over them."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row, found in zip(rows, predicted, strict=True):
        pred: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for f in found:
            pred[f.entity_type].append((f.start, f.end))
        gold: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for span in row["spans"]:
            mapped = TYPE_MAP.get(span["entity_type"])
            if mapped is not None:
                gold[mapped].append((span["start"], span["end"]))
        for etype in ("PERSON", "LOCATION"):
            _count(counts[etype], gold[etype], pred[etype])
    total: dict[str, int] = defaultdict(int)
    for c in counts.values():
        for k, v in c.items():
            total[k] += v
    return {**{t: _scores(c) for t, c in counts.items()}, "PERSON+LOCATION": _scores(total)}


def _unique(texts: Any) -> list[str]:
    return list(dict.fromkeys(t for t in texts if t))


SECTIONS = {"ares": (ares, ares_table), "pii": (pii, pii_table)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", help="default: ../shared/data beside the repository")
    parser.add_argument("--only", default=",".join(SECTIONS), help="ares,pii (default both)")
    parser.add_argument("--json", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(var, "1")
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    if not chosen or set(chosen) - set(SECTIONS):
        parser.error(f"--only takes {','.join(SECTIONS)}")
    folder = data_dir(args.data_dir)
    results: dict[str, Any] = {}
    for name in chosen:
        run, table = SECTIONS[name]
        results[name] = run(folder)
        print(table(results[name]) + "\n", flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
