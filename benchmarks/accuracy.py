"""Evaluator accuracy on ../shared/data, with DATA.md's protocol and the published anchors.

    .venv/bin/python benchmarks/accuracy.py [--data-dir ../shared/data] [--only grounding,...]
        [--locked] [--detector crossencoder] [--profile select] [--model wordllama]

Sections (each a ``run(data_dir) -> dict`` and a ``table(dict)``; grounding's in
``_accuracy_grounding.py``, which other benchmarks share, the others below):

- ``grounding``: RAGTruth by task and HaluEval QA: the faithfulness verdict, groundedness and
  the bag-of-words baseline, fixed and tuned thresholds, on the tuning part of the locked split
  (``_labelled_data.py``), or with ``--locked`` on the locked part (once per shipped change);
  ``--detector`` picks the faithfulness evaluator's detector, ``--profile`` the online suite's
  profile whose options both evaluators take (``select``: the lexical first stage).
- ``toxicity``: AUROC and F1 per source, beside a word-list baseline.
- ``pii``: entity-level precision/recall/F1 per type, exact and overlap matches.
- ``ares``: AUROC of the relevance and faithfulness scores (plumbing and direction only);
  ``--model wordllama`` scores them with the static embedder.

Prints one table per section and writes everything to benchmarks/results/accuracy.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import _accuracy_grounding
from _labelled_data import data_dir, ragtruth, summary

from ragtrace._model import Chunk, RagRecord
from ragtrace._redaction.pii_patterns import STRUCTURED_ENTITIES
from ragtrace.evaluators._answer_relevance import (
    AnswerRelevance,
    AnswerRelevanceSentenceSimilarity,
)
from ragtrace.evaluators._base import Evaluator
from ragtrace.evaluators._context_relevance import ContextRelevance
from ragtrace.evaluators._groundedness import Groundedness
from ragtrace.evaluators._leakage.pii import PiiLeakage
from ragtrace.evaluators._text import content_words, split_sentences
from ragtrace.evaluators._toxicity import Toxicity

# ARES relevance (dev): AUROC of the embedding evaluators against ARES's three labels.
#
# Reads ``ares_relevance.dev.jsonl`` (see ../shared/data/DATA.md): ``query``, ``document``,
# ``answer`` and labels ``context_relevance``, ``answer_faithfulness``, ``answer_relevance``
# (1 / 0 / null). Each row becomes a one-chunk record (query, the document as the only chunk, the
# answer as the response) and is scored by:
#
# - ``context_relevance.recall`` / ``.precision`` against ``context_relevance`` (every row; with
#   one chunk both are the same number, the chunk's relevancy);
# - ``answer_relevance`` (Ejento mean) and ``answer_relevance_similarity`` (H2O max) against
#   ``answer_relevance`` (rows with an answer and a label);
# - ``groundedness`` against ``answer_faithfulness`` (the faithfulness proxy; same rows).
#
# Beside each, a bag-of-words baseline: for the answer labels, DATA.md's share of the answer's
# content words (``ragtrace.evaluators._text.content_words``) found in the document; for context
# relevance (whose negative rows have no answer) the share of the query's content words found in the
# document. ARES negatives were built so that word overlap separates them (AUROC near 1.0): this
# checks plumbing and the direction of each score, not accuracy to quote. Also reported: the mean
# score of each class, and balanced accuracy at each evaluator's default threshold.
#
# ``run_ares(data_dir)`` returns the numbers, ``table_ares(result)`` formats them. Alone::
#
#     HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/accuracy.py --only ares [--model wordllama]
#
# takes about 4 CPU-minutes (4-10 minutes on a shared 2-core box): it embeds ~15,000 sentences,
# most of them long Wikipedia sentences.

ARES_FILE = "ares_relevance.dev.jsonl"
BATCH = 64

# (score name, label field, baseline name)
CHECKS: tuple[tuple[str, str, str], ...] = (
    ("context_relevance.recall", "context_relevance", "query_in_document"),
    ("context_relevance.precision", "context_relevance", "query_in_document"),
    ("answer_relevance", "answer_relevance", "answer_in_document"),
    ("answer_relevance_similarity", "answer_relevance", "answer_in_document"),
    ("groundedness", "answer_faithfulness", "answer_in_document"),
)


def run_ares(data_dir: Path, model: str | None = None) -> dict[str, Any]:
    """Score every row with the four evaluators (embedding with ``model``; None: the packaged
    MiniLM); AUROC per (score, label) beside the baseline."""
    rows = _rows(Path(data_dir) / ARES_FILE)
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
        "data": ARES_FILE,
        "rows": len(rows),
        "rows_with_answer": len(answered),
        "model": ", ".join(sorted(models)),
        "seconds": round(elapsed, 1),
        "metrics": metrics,
    }


def table_ares(result: dict[str, Any]) -> str:
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


TOXICITY_FILE = "toxicity_mixed.dev.jsonl"
# Prefixes: "idiot" also matches "idiots", "idiotic".
WORD_LIST = (
    "fuck shit bitch bastard asshole arsehole dick cunt pussy whore slut crap damn piss "
    "idiot stupid moron dumb imbecile retard loser scum trash pathetic worthless ugly "
    "disgusting hate kill die nigger nigga faggot fag dyke tranny chink spic kike wetback "
    "raghead towelhead beaner gook savage vermin animals parasite"
).split()
_WORDS = re.compile(r"(?i)\b(?:" + "|".join(map(re.escape, WORD_LIST)) + r")\w*")
FIXED_THRESHOLDS = (0.75, 0.5)


def word_list_score(text: str) -> float:
    """The baseline: ``1 - 0.4 ** (number of listed words)``."""
    return 1.0 - 0.4 ** len(_WORDS.findall(text))


def run_toxicity(data_dir: Path) -> dict[str, Any]:
    """AUROC and F1 (at 0.75 and 0.5) of every detector, overall and per source."""
    import train_toxicity

    rows = [json.loads(line) for line in (Path(data_dir) / TOXICITY_FILE).open(encoding="utf-8")]
    records = [
        RagRecord(trace_id=f"{i:032x}", span_id=f"{i:016x}", query="", response=row["text"])
        for i, row in enumerate(rows)
    ]
    head, lexical = Toxicity(), Toxicity(model="profanity")
    warm_up = RagRecord(trace_id="f" * 32, span_id="f" * 16, query="", response="Load. Models.")
    head.evaluate(warm_up)  # load the models outside the timing
    lexical.evaluate(warm_up)
    shipped, cold = _toxicity_scores(head, records)  # first: every sentence is new to the embedder
    _, warm = _toxicity_scores(head, records)  # again: every sentence vector is cached
    words, lexical_time = _toxicity_scores(lexical, records)
    trained = train_toxicity.evaluate(Path(data_dir))
    baseline = [word_list_score(row["text"]) for row in rows]
    labels = [int(row["label"]) for row in rows]
    sources = [str(row["source"]) for row in rows]
    detectors = {
        f"toxicity head, cross-validated (C={trained['C']})": trained["oof"].tolist(),
        "toxicity head, leave one source out": trained["loso"].tolist(),
        f"toxicity head, shipped ({head.classifier().model_id}), in-sample": shipped,
        f"lexical model alone ({lexical.classifier().model_id})": words,
        "word-list baseline": baseline,
    }
    result: dict[str, Any] = {"rows": len(rows), "detectors": {}}
    for name, values in detectors.items():
        per: dict[str, Any] = {"all": _metrics(labels, values)}
        groups: dict[str, list[int]] = defaultdict(list)
        for i, source in enumerate(sources):
            groups[source].append(i)
        for source, idx in sorted(groups.items()):
            per[source] = _metrics([labels[i] for i in idx], [values[i] for i in idx])
        result["detectors"][name] = per
    result["inside_answers"] = inside_answers(
        data_dir, [row["text"] for row in rows if int(row["label"]) == 1]
    )
    result["ms_per_row"] = {
        "head, sentences new": 1000 * cold / len(rows),
        "head, sentences cached": 1000 * warm / len(rows),
        "lexical model alone": 1000 * lexical_time / len(rows),
    }
    return result


def inside_answers(data_dir: Path, toxic: list[str]) -> dict[str, Any]:
    """False alarms on clean RAGTruth answers and detections of one toxic text put inside one,
    at 0.75, with ``per_sentence`` on and off."""
    rng = random.Random(0)
    clean = [
        " ".join(split_sentences(e.response)[:3])
        for e in ragtruth(Path(data_dir))
        if e.response.strip()
    ]
    mixed = []
    for text in (t.strip() for t in toxic if len(t) < 300):
        answer = split_sentences(rng.choice(clean))
        at = rng.randrange(len(answer) + 1)
        mixed.append(" ".join([*answer[:at], text, *answer[at:]]))
    records = [
        RagRecord(trace_id=f"{i:032x}", span_id=f"{i:016x}", query="", response=text)
        for i, text in enumerate(clean + mixed)
    ]
    labels = [0] * len(clean) + [1] * len(mixed)
    out: dict[str, Any] = {"clean": len(clean), "mixed": len(mixed)}
    for per_sentence in (True, False):
        scores, _ = _toxicity_scores(Toxicity(per_sentence=per_sentence), records)
        at = summary(labels, scores, [s > 0.75 for s in scores])
        out[f"per_sentence={per_sentence}"] = {
            "false_alarms": round(sum(s > 0.75 for s in scores[: len(clean)]) / len(clean), 4),
            "detected": round(at["recall"], 4),
            "auroc": at["auroc"],
        }
    return out


def _toxicity_scores(evaluator: Toxicity, records: list[RagRecord]) -> tuple[list[float], float]:
    """Every record's toxicity, in batches, and the seconds it took."""
    started = time.perf_counter()
    scores: list[float] = []
    for start in range(0, len(records), evaluator.batch_size):
        for result in evaluator.evaluate_batch(records[start : start + evaluator.batch_size]):
            scores.append(float(result[0].value or 0.0))
    return scores, time.perf_counter() - started


def table_toxicity(result: dict[str, Any]) -> str:
    """The result as a plain-text table."""
    lines = [
        f"Toxicity, {result['rows']} rows (toxicity_mixed, dev)",
        f"{'detector / source':<58}{'n':>5}{'pos':>5}{'AUROC':>7}{'F1@.75':>8}{'BA@.75':>8}"
        f"{'F1@.5':>7}",
    ]
    for name, per in result["detectors"].items():
        lines.append(name)
        for source, m in per.items():
            lines.append(
                f"  {source:<56}{m['n']:>5}{m['positives']:>5}{m['auroc']:>7.3f}"
                f"{m['f1']['0.75']:>8.3f}"
                f"{m['at_threshold']['0.75']['balanced_accuracy']:>8.3f}{m['f1']['0.5']:>7.3f}"
            )
    inside = result["inside_answers"]
    lines.append(
        f"One toxic row inside a clean 3-sentence answer ({inside['mixed']} mixed, "
        f"{inside['clean']} clean RAGTruth answers), at 0.75:"
    )
    for setting in ("per_sentence=True", "per_sentence=False"):
        m = inside[setting]
        lines.append(
            f"  {setting:<20} detected {m['detected']:.3f}  false alarms "
            f"{m['false_alarms']:.4f}  AUROC {m['auroc']:.3f}"
        )
    for what, ms in result["ms_per_row"].items():
        lines.append(f"Toxicity evaluator time per row, {what}: {ms:.2f} ms")
    return "\n".join(lines)


def _metrics(labels: list[int], scores: list[float]) -> dict[str, Any]:
    """AUROC, and the binary metrics at each fixed threshold (flag = score above it)."""
    at = {str(t): summary(labels, scores, [s > t for s in scores]) for t in FIXED_THRESHOLDS}
    return {
        "n": len(labels),
        "positives": sum(labels),
        "auroc": at["0.75"]["auroc"],
        "f1": {t: m["f1"] for t, m in at.items()},
        "at_threshold": at,
    }


PII_FILE = "pii_presidio_synth.dev.jsonl"
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


def run_pii(data_dir: Path) -> dict[str, Any]:
    """Entity-level precision/recall/F1 per type (exact and overlap) and record-level scores."""
    rows = [json.loads(line) for line in (Path(data_dir) / PII_FILE).open(encoding="utf-8")]
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

    per_type = {t: _pii_scores(c) for t, c in sorted(counts.items())}
    structured = _pii_scores(_sum(counts, STRUCTURED_ENTITIES))
    overall = _pii_scores(_sum(counts, counts.keys()))
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


def table_pii(result: dict[str, Any]) -> str:
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


def _pii_scores(c: dict[str, int]) -> dict[str, Any]:
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


SECTIONS: dict[str, tuple[Callable[..., dict[str, Any]], Callable[[dict[str, Any]], str]]] = {
    "grounding": (_accuracy_grounding.run, _accuracy_grounding.table),
    "toxicity": (run_toxicity, table_toxicity),
    "pii": (run_pii, table_pii),
    "ares": (run_ares, table_ares),
}
RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description="Evaluator accuracy on the labelled dev sets.")
    parser.add_argument("--data-dir", help="default: $RAGTRACE_DATA_DIR, else ../shared/data")
    parser.add_argument("--only", help=f"comma-separated subset of {','.join(SECTIONS)}")
    parser.add_argument("--json", type=Path, default=RESULTS / "accuracy.json")
    parser.add_argument(
        "--locked", action="store_true", help="grounding: score the locked part of the split"
    )
    parser.add_argument(
        "--detector",
        choices=("features", "crossencoder"),
        default="features",
        help="grounding: the faithfulness evaluator's detector (default: features)",
    )
    parser.add_argument(
        "--profile",
        default="default",
        help="grounding: the online suite's profile for faithfulness and groundedness",
    )
    parser.add_argument(
        "--model", help='ares: the embedding model (default: the packaged MiniLM; "wordllama")'
    )
    args = parser.parse_args()
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(var, "1")
    folder = data_dir(args.data_dir)
    chosen = args.only.split(",") if args.only else list(SECTIONS)
    unknown = set(chosen) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s) {sorted(unknown)}; choose from {list(SECTIONS)}")
    results = {}
    for name in chosen:
        run, table = SECTIONS[name]
        started = time.perf_counter()
        extra: dict[str, object] = {}
        key = name
        if name == "grounding":
            extra = {"locked": args.locked, "detector": args.detector, "profile": args.profile}
            key += "_locked" if args.locked else ""
            key += "" if args.detector == "features" else f"_{args.detector}"
            key += "" if args.profile == "default" else f"_{args.profile}"
        if name == "ares" and args.model:
            extra = {"model": args.model}
            key += f"_{args.model}"
        results[key] = run(folder, **extra)
        print(f"\n== {name} ({time.perf_counter() - started:.0f} s) ==")
        print(table(results[key]))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(args.json.read_text()) if args.json.exists() else {}
    args.json.write_text(json.dumps(previous | results, indent=1) + "\n")
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
