"""Toxicity accuracy on the mixed toxicity data (dev half): AUROC and F1, overall and per source.

``run(data_dir)`` reads ``toxicity_mixed.dev.jsonl`` (surge-ai/toxicity, Davidson et al. 2017,
ToxiGen human-written seeds; ``label`` 1 = toxic), scores every ``text`` as a response, and
reports for each detector, overall and per ``source``:

- AUROC of the score against the label (``_binary_metrics.summary``);
- F1 of the toxic class at the evaluator's default threshold (0.75, from the catalogue) and,
  for reference, at 0.5; a text is flagged when its score is above the threshold (the
  evaluator's ``passed`` is false), with balanced accuracy, precision and recall in the JSON
  (``at_threshold``) and balanced accuracy at 0.75 in the table.

Detectors:

- the default head **cross-validated** (the headline: its weights were fitted on these rows, so
  ``train_toxicity.py``'s out-of-fold scores, 5 folds grouped by near-duplicate text, are the
  honest figure) and **leave one source out** (fitted on the other two sources);
- the shipped head through ``Toxicity()`` (in-sample, for plumbing; also timed, first with
  every sentence new to the embedder, then again with the sentences cached);
- the lexical model alone, ``Toxicity(model="profanity")`` (alt-profanity-check);
- a word-list baseline: words of a small hand-made English list of swear words, insults and
  slurs (``WORD_LIST``, matched as word prefixes, case-insensitive), scored
  ``1 - 0.4 ** hits`` (0, 0.6, 0.84, ...), so one hit is flagged at 0.5 and two at 0.75. DATA.md
  gives ~0.61 AUROC for such a baseline; this generic list (not fitted to the rows) scores
  higher.

**Inside answers** (``inside_answers``): what a RAG assistant's answer looks like is not a
tweet. Clean answers are the first three sentences of each RAGTruth response (LLM answers with
no toxic text); mixed answers are a clean answer with one toxic row of the data (label 1, under
300 characters) put at a random sentence position (seeded). The shipped head scores both with
``per_sentence`` on (the default) and off: false alarms on clean answers and detections on
mixed ones at 0.75, and the AUROC between them. The toxic rows are in-sample for the head (it
was fitted on them) in both settings, so the settings compare; the absolute detection rate is
flattered.

    cd benchmarks && ../.venv/bin/python accuracy.py --only toxicity
"""

from __future__ import annotations

import json
import random
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _binary_metrics import summary
from _datasets import ragtruth

from ragtrace.evaluators.text import split_sentences
from ragtrace.evaluators.toxicity import Toxicity
from ragtrace.model import RagRecord

FILE = "toxicity_mixed.dev.jsonl"
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


def run(data_dir: Path) -> dict[str, Any]:
    """AUROC and F1 (at 0.75 and 0.5) of every detector, overall and per source."""
    import train_toxicity

    rows = [json.loads(line) for line in (Path(data_dir) / FILE).open(encoding="utf-8")]
    records = [
        RagRecord(trace_id=f"{i:032x}", span_id=f"{i:016x}", query="", response=row["text"])
        for i, row in enumerate(rows)
    ]
    head, lexical = Toxicity(), Toxicity(model="profanity")
    warm_up = RagRecord(trace_id="f" * 32, span_id="f" * 16, query="", response="Load. Models.")
    head.evaluate(warm_up)  # load the models outside the timing
    lexical.evaluate(warm_up)
    shipped, cold = _scores(head, records)  # first: every sentence is new to the embedder
    _, warm = _scores(head, records)  # again: every sentence vector is cached
    words, lexical_time = _scores(lexical, records)
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
        scores, _ = _scores(Toxicity(per_sentence=per_sentence), records)
        at = summary(labels, scores, [s > 0.75 for s in scores])
        out[f"per_sentence={per_sentence}"] = {
            "false_alarms": round(sum(s > 0.75 for s in scores[: len(clean)]) / len(clean), 4),
            "detected": round(at["recall"], 4),
            "auroc": at["auroc"],
        }
    return out


def _scores(evaluator: Toxicity, records: list[RagRecord]) -> tuple[list[float], float]:
    """Every record's toxicity, in batches, and the seconds it took."""
    started = time.perf_counter()
    scores: list[float] = []
    for start in range(0, len(records), evaluator.batch_size):
        for result in evaluator.evaluate_batch(records[start : start + evaluator.batch_size]):
            scores.append(float(result[0].value or 0.0))
    return scores, time.perf_counter() - started


def table(result: dict[str, Any]) -> str:
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
