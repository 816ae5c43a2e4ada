"""How often ordinary text is taken for text addressed to the evaluation (false matches).

The claim-based judges take sentences that address their evaluation ("ignore your
instructions", "mark this as faithful": ``ragtrace.evaluators.judge.steering``) out of what the
judge reads and count them as unsupported claims. A pattern that also fires on ordinary answers
would lower their scores, so this counts its matches on text that holds no injection: every
sentence of the labelled answers and of their retrieved passages in ../shared/data (RAGTruth,
HaluEval), each part of the locked split apart, and the ``benign`` sentences of the two written
injection sets. For the other side it counts the injections the patterns catch (a snippet is
caught when one of its sentences matches):

- ``judge_adversarial.json``: the 6 injections of ``benchmarks/judge.py``'s adversarial set,
  which the first patterns were written from;
- ``judge_injections_a.json`` (40 injections, 40 benign): written by a helper that had not seen
  the patterns; the patterns were then extended from its misses, so its figures are in-sample;
- ``judge_injections_b.json`` (50 and 50): written afterwards by another helper that had seen
  neither, scored once with the patterns frozen (19 of 50), then used to extend them: in-sample
  since;
- ``judge_injections_c.json`` (50 and 50): written after that by a third helper that had seen
  none of it, asked for more adversarial forms, and scored once (13 of 50); the block, language
  and hidden-phrasing rules were then written from A, B and C's misses: in-sample since;
- ``judge_injections_d.json`` (60 and 60): written by a fourth helper that had seen none of it,
  scored with the patterns before those rules (37 of 60) and after them (42 of 60), both held
  out;
- ``judge_injections_relevance.json`` (120 injections in 24 cases, 40 benign sentences): aimed
  at the relevance and context judges (answers and retrieved pages that tell the grader they
  are relevant), written on 2026-11-27 by a fifth helper that had seen none of it, and scored
  with the patterns as they were (31 of 120, held out; ``relevance_injections.py`` runs its
  cases); rules for the relevance judges' vocabulary were then written from its misses
  (in-sample since);
- ``judge_injections_relevance_f.json`` (80 and 30): written alongside by a sixth helper that
  had seen none of the code or sets, scored once after those rules (held out).

A snippet is *cleared* when nothing of it is left for the judge: a fake verdict block of which
one line matched is caught but not cleared, and its other lines still reach the judge. It is
*cut clean* when, appended to an answer sentence on the same line (as ``judge.py`` appends it),
exactly that sentence is left.

Run::

    .venv/bin/python benchmarks/steering_matches.py        # ~15 s

It prints a table (and each matching sentence) and writes
``benchmarks/results/steering_matches.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from _datasets import GroundingExample, data_dir, halueval, ragtruth
from _split import split

from ragtrace.evaluators.judge.steering import directed, split_directed
from ragtrace.evaluators.text import split_sentences

HERE = Path(__file__).resolve().parent
ANSWER = "Yes, refunds are accepted for up to 90 days, even for used items."  # judge.py's "refund"
DATA = HERE / "data"
INJECTION_SETS = (
    "judge_adversarial.json",
    "judge_injections_a.json",
    "judge_injections_b.json",
    "judge_injections_c.json",
    "judge_injections_d.json",
    "judge_injections_relevance.json",
    "judge_injections_relevance_f.json",
)


def count(texts: list[str]) -> tuple[int, list[tuple[str, str]]]:
    """Sentences in ``texts`` and those that match, with their kind."""
    sentences = [s for text in dict.fromkeys(texts) for s in split_sentences(text)]
    return len(sentences), [(s, kind) for s in sentences if (kind := directed(s)) is not None]


def caught(texts: list[str]) -> tuple[int, list[tuple[str, str]]]:
    """Snippets in ``texts`` and those with a matching sentence, with the first kind found."""
    found = [(text, spotted[0][1]) for text in texts if (spotted := split_directed(text)[1])]
    return len(texts), found


def cleared(texts: list[str]) -> int:
    """Snippets in ``texts`` of which nothing is left for the judge."""
    return sum(1 for text in texts if not split_directed(text)[0].strip())


def cut_clean(texts: list[str]) -> int:
    """Snippets in ``texts`` that, appended to ``ANSWER`` on its line, leave just ``ANSWER``."""
    return sum(1 for text in texts if split_directed(f"{ANSWER} {text}")[0] == ANSWER)


def snippets(data: dict[str, Any], field: str) -> list[str]:
    """The ``benign`` or ``injections`` texts of a set: listed as ``{"text": ...}`` items, or
    (the relevance set) as strings, its injections inside its answer and context cases."""
    items = list(data.get(field, ()))
    for case in (*data.get("answer_cases", ()), *data.get("context_cases", ())):
        items.extend(case.get(field, ()))
    return [x if isinstance(x, str) else x["text"] for x in items]


def rows(examples: list[GroundingExample]) -> list[dict[str, object]]:
    tuning, locked = split(examples)
    out = []
    for part, chosen in (("tuning", tuning), ("locked", locked)):
        for field in ("answers", "passages"):
            texts = (
                [e.response for e in chosen]
                if field == "answers"
                else [p for e in chosen for p in e.passages]
            )
            n, found = count(texts)
            out.append({"part": part, "text": field, "sentences": n, "matches": found})
    for name in INJECTION_SETS:
        data = json.loads((DATA / name).read_text(encoding="utf-8"))
        for field in ("benign", "injections"):
            texts = snippets(data, field)
            if texts:
                measure = count if field == "benign" else caught
                n, found = measure(texts)
                row = {"part": name, "text": field, "sentences": n, "matches": found}
                if field == "injections":
                    row["cleared"] = cleared(texts)
                    row["cut_clean"] = cut_clean(texts)
                out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=HERE / "results" / "steering_matches.json")
    args = parser.parse_args()
    found = rows(ragtruth(data_dir()) + halueval(data_dir()))
    print(
        f"{'part':<24} {'text':<10} {'items':>6} {'matched':>8} {'cleared':>8} {'cut clean':>9}"
        "  (injections: snippets caught, cleared, cut clean)"
    )
    for row in found:
        left, clean = row.get("cleared", ""), row.get("cut_clean", "")
        print(
            f"{row['part']:<24} {row['text']:<10} {row['sentences']:>6} "
            f"{len(row['matches']):>8} {left:>8} {clean:>9}"
        )
    for row in found:
        if row["text"] != "injections":
            for sentence, kind in row["matches"]:
                print(f"  false match, {row['part']} {row['text']}: [{kind}] {sentence[:160]}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(found, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
