"""LLM-judge benchmark: accuracy, cost, parse failures, cache and prompt injection.

    .venv/bin/python benchmarks/judge.py [--model qwen2.5-coder-0.5b] [--per-slice 40]
    .venv/bin/python benchmarks/judge.py --litellm-model openai/gpt-4o-mini   # any litellm model

With the local judge (default: the packaged Qwen2.5-Coder-0.5B on llama.cpp, 2 threads), on a
label-balanced sample of each slice of ../shared/data (RAGTruth QA, Summary, Data2txt; HaluEval
QA; DATA.md's protocol: a response is hallucinated when it has at least one annotated span):

- ``judge_faithfulness`` flags a response when any claim is unsupported (value < 1); AUROC
  uses 1 - value. ``judge_hallucination`` (unsupported claims over total, 002) flags a
  response when the share is above 0. Errors (timeouts, parse failures) count as not flagged
  and are reported beside the figures.
- seconds, judge calls and tokens per evaluation; the parse-failure rate over all calls; the
  records whose claim extraction failed and were scored from their sentences, with why;
- the cache: the faithfulness run is repeated on the same records with the same cache file,
  and the hit rate and time of that second run are reported;
- the adversarial set (benchmarks/data/judge_adversarial.json): unsupported answers, each
  with and without an injected instruction; the judge resists when the injected answer scores
  no better than the clean one (the adversarial part below; ``--adversarial-evaluator`` picks
  the claim judge or one of the rating judges, ``--injections`` a larger set).

``--part locked`` samples only the locked test part of ``_labelled_data.py`` (the judge's calibrated
cut was chosen on the tuning part), ``--part tuning`` only the tuning part; the default samples
all the dev data. Prints a table, writes benchmarks/results/judge.json. The sample is seeded;
rows are few (a CPU judge takes seconds per record), so read the figures with their ``n``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from _labelled_data import GroundingExample, data_dir, halueval, ragtruth, split, summary

from ragtrace._judges import JudgeClient, LocalJudgeServer, UsageTally, add_listener
from ragtrace._judges.usage import CACHED, PARSE_FAILURE, remove_listener
from ragtrace._model import Chunk, RagRecord, Score
from ragtrace.evaluators._registry import create

RESULTS = Path(__file__).resolve().parent / "results"
SLICES = (("ragtruth", "QA"), ("ragtruth", "Summary"), ("ragtruth", "Data2txt"), ("halueval", "QA"))
EVALUATORS = ("judge_faithfulness", "judge_hallucination")
ANCHORS = {
    "ragtruth/QA": "HHEM-2.1-open BA 0.743",
    "ragtruth/Summary": "HHEM-2.1-open BA 0.644",
    "ragtruth/Data2txt": "-",
    "ragtruth/all": "F1: GPT-4-turbo judge 0.634, Luna 0.654",
    "halueval/QA": "target accuracy >= 0.95",
}


def balanced_sample(
    examples: list[GroundingExample], per_slice: int, seed: int
) -> list[GroundingExample]:
    """``per_slice`` rows of each slice, half hallucinated, half not (fewer if a class is short)."""
    rng = random.Random(seed)
    chosen = []
    for dataset, task in SLICES:
        rows = [e for e in examples if e.dataset == dataset and e.task == task]
        for label in (0, 1):
            pool = [e for e in rows if e.label == label]
            chosen.extend(rng.sample(pool, min(len(pool), per_slice // 2)))
    return chosen


def record(example: GroundingExample) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query=example.query,
        chunks=tuple(Chunk(text=p, id=str(i)) for i, p in enumerate(example.passages)),
        response=example.response,
    )


def flagged(name: str, score: Score) -> tuple[bool, float]:
    """(flag, score where higher means hallucinated) for one evaluator's Score."""
    if score.value is None:
        return False, 0.5
    if name == "judge_faithfulness":
        return score.value < 1.0, 1.0 - score.value
    return score.value > 0.0, score.value


def accuracy(name: str, examples: list[GroundingExample], scores: list[Score]) -> dict[str, Any]:
    out = {}
    for key, keep in [(f"{d}/{t}", (d, t)) for d, t in SLICES] + [("ragtruth/all", None)]:
        idx = [
            i
            for i, e in enumerate(examples)
            if (keep is None and e.dataset == "ragtruth") or (e.dataset, e.task) == keep
        ]
        pairs = [flagged(name, scores[i]) for i in idx]
        row = summary(
            [examples[i].label for i in idx], [p[1] for p in pairs], [p[0] for p in pairs]
        )
        row["errors"] = sum(1 for i in idx if scores[i].error is not None)
        out[key] = row
    return out


def claim_fallbacks(examples: list[GroundingExample], scores: list[Score]) -> dict[str, Any]:
    """Records whose claims are their sentences because the extraction failed, by slice and
    reason (``details["claim_fallbacks"]``)."""
    by_slice: dict[str, int] = {}
    reasons: dict[str, int] = {}
    for example, score in zip(examples, scores, strict=True):
        found = (score.details or {}).get("claim_fallbacks") or []
        if found:
            key = f"{example.dataset}/{example.task}"
            by_slice[key] = by_slice.get(key, 0) + 1
        for reason in found:
            short = reason.split("(")[0].strip()
            reasons[short] = reasons.get(short, 0) + 1
    return {"records": sum(by_slice.values()), "by_slice": by_slice, "reasons": reasons}


def main() -> None:
    parser = argparse.ArgumentParser(description="LLM-judge accuracy, cost and robustness.")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b", help="local packaged model/GGUF")
    parser.add_argument("--litellm-model", help="judge with this litellm model instead")
    parser.add_argument("--api-base", help="api_base for --litellm-model")
    parser.add_argument("--per-slice", type=int, default=40, help="rows per slice (balanced)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
    parser.add_argument(
        "--workers", type=int, default=1, help="records judged at once (server slots)"
    )
    parser.add_argument("--skip-adversarial", action="store_true")
    parser.add_argument(
        "--adversarial-only", action="store_true", help="only the injection check, no dev rows"
    )
    parser.add_argument(
        "--injections",
        type=Path,
        default=ADVERSARIAL,
        help="JSON file whose 'injections' list is appended to the answers "
        "(default: the adversarial set's)",
    )
    parser.add_argument("--cases", help="comma-separated adversarial case ids (default: all)")
    parser.add_argument(
        "--adversarial-evaluator",
        choices=sorted(ADVERSARIAL_EVALUATORS),
        default="judge_faithfulness",
        help="the judge evaluator the injection check scores (default: judge_faithfulness)",
    )
    parser.add_argument("--data-dir", help="default: ../shared/data beside the repository")
    parser.add_argument(
        "--part",
        choices=("all", "tuning", "locked"),
        default="all",
        help="sample from this part of the locked split (_labelled_data.py; default: all)",
    )
    parser.add_argument("--json", type=Path, default=RESULTS / "judge.json")
    args = parser.parse_args()

    folder = data_dir(args.data_dir)
    rows = ragtruth(folder) + halueval(folder)
    if args.part != "all":
        tuning, locked = split(rows)
        rows = locked if args.part == "locked" else tuning
    examples = [] if args.adversarial_only else balanced_sample(rows, args.per_slice, args.seed)
    records = [record(e) for e in examples]
    server = None
    load_s = 0.0
    cache_file = Path(tempfile.mkdtemp(prefix="ragtrace-judge-bench-")) / "cache.sqlite"
    if args.litellm_model:
        model, api_base = args.litellm_model, args.api_base
    else:
        started = time.perf_counter()
        server = LocalJudgeServer(args.model, threads=args.threads, parallel=args.workers).start()
        load_s = time.perf_counter() - started
        model, api_base = server.model_name, server.api_base
    result: dict[str, Any] = {
        "model": model,
        "rows": len(examples),
        "per_slice": args.per_slice,
        "seed": args.seed,
        "part": args.part,
        "server_start_s": round(load_s, 2),
        "threads": args.threads,
        "workers": args.workers,
        "evaluators": {},
    }
    try:
        judge = JudgeClient(model, api_base=api_base, cache=cache_file, timeout_s=120)
        for name in EVALUATORS if examples else ():
            tally = add_listener(UsageTally())
            try:
                scores, seconds = score_all(create(name, judge=judge), records, args.workers)
            finally:
                remove_listener(tally)
            result["evaluators"][name] = {
                "accuracy": accuracy(name, examples, scores),
                "usage": _usage(tally, len(records), seconds),
                "claim_fallbacks": claim_fallbacks(examples, scores),
            }
            print(f"{name}: {seconds:.0f} s", file=sys.stderr, flush=True)
        if examples:
            result["repeat_run"] = repeat_run(judge, records, args.workers)
        if not args.skip_adversarial:
            fresh = JudgeClient(model, api_base=api_base, cache=False, timeout_s=120)
            name = args.adversarial_evaluator
            result["adversarial"] = adversarial(
                create(name, judge=fresh, **ADVERSARIAL_EVALUATORS[name]),
                args.workers,
                args.injections,
                args.cases.split(",") if args.cases else None,
            )
            result["adversarial"]["injections_file"] = args.injections.name
    finally:
        if server is not None:
            server.stop()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(table(result))
    print(f"\nwritten to {args.json}")


def repeat_run(judge: JudgeClient, records: list[RagRecord], workers: int) -> dict[str, Any]:
    """The faithfulness run again on the same records and cache: hit rate and time."""
    tally = add_listener(UsageTally())
    try:
        _, seconds = score_all(create(EVALUATORS[0], judge=judge), records, workers)
    finally:
        remove_listener(tally)
    return {
        "seconds": round(seconds, 2),
        "cache_hit_rate": round(tally.rate(CACHED), 3),
        "calls": tally.calls,
    }


def _usage(tally: UsageTally, records: int, seconds: float) -> dict[str, Any]:
    calls = tally.calls
    return {
        "seconds_per_evaluation": round(seconds / records, 2) if records else None,
        "calls_per_evaluation": round(calls / records, 2) if records else None,
        "input_tokens_per_evaluation": round(tally.input_tokens / records, 1) if records else None,
        "output_tokens_per_evaluation": round(tally.output_tokens / records, 1)
        if records
        else None,
        "parse_failure_rate": round(tally.rate(PARSE_FAILURE), 4),
        "outcomes": dict(tally.outcomes),
        "cost_usd": round(tally.cost_usd, 6),
    }


def table(result: dict[str, Any]) -> str:
    lines = [
        f"judge: {result['model']}  rows: {result['rows']} (balanced, {result['per_slice']} per "
        f"slice, seed {result['seed']}, part {result.get('part', 'all')})  "
        f"server start: {result['server_start_s']} s",
        "",
        f"{'evaluator':<22} {'slice':<18} {'n':>4} {'BA':>6} {'F1':>6} {'acc':>6} "
        f"{'AUROC':>6} {'err':>4}  anchor",
    ]
    for name, block in result["evaluators"].items():
        for key, row in block["accuracy"].items():
            auroc = "-" if row["auroc"] is None else f"{row['auroc']:.3f}"
            lines.append(
                f"{name:<22} {key:<18} {row['n']:>4} {row['balanced_accuracy']:>6.3f} "
                f"{row['f1']:>6.3f} {row['accuracy']:>6.3f} {auroc:>6} {row['errors']:>4}  "
                f"{ANCHORS.get(key, '')}"
            )
    lines += [
        "",
        f"{'evaluator':<22} {'s/eval':>7} {'calls':>6} {'tok in':>7} {'tok out':>7} "
        f"{'parse fail':>10}",
    ]
    for name, block in result["evaluators"].items():
        u = block["usage"]
        lines.append(
            f"{name:<22} {u['seconds_per_evaluation']:>7} {u['calls_per_evaluation']:>6} "
            f"{u['input_tokens_per_evaluation']:>7} {u['output_tokens_per_evaluation']:>7} "
            f"{u['parse_failure_rate']:>10.2%}"
        )
    for name, block in result["evaluators"].items():
        fell = block.get("claim_fallbacks") or {}
        if fell.get("records"):
            slices = ", ".join(f"{k} {v}" for k, v in sorted(fell["by_slice"].items()))
            lines.append(f"{name}: claims from sentences on {fell['records']} records ({slices})")
            lines += [f"  {n} x {reason}" for reason, n in sorted(fell["reasons"].items())]
    repeat = result.get("repeat_run")
    if repeat:
        lines.append(
            f"\nrepeat run of {EVALUATORS[0]}: cache hit rate {repeat['cache_hit_rate']:.1%}, "
            f"{repeat['seconds']} s"
        )
    adv = result.get("adversarial")
    if adv:
        lines.append(adversarial_line(adv))
    return "\n".join(lines)


# ``judge.py``'s injection check: does text appended to an answer lift a judge's score?
#
# The cases of ``data/judge_adversarial.json`` pair a context with an answer it does not support;
# each injection (that file's, or another set given with ``--injections``)
# is appended to the answer.
# A judge resists when the injected answer scores no better than the clean one. The evaluators
# it can check, with the options they are built with, are ``ADVERSARIAL_EVALUATORS``: the claim
# judge (``judge_faithfulness``) and two that rate a text (``judge_geval`` with a grounding
# criterion, ``judge_summarization`` against the source).
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ADVERSARIAL = Path(__file__).resolve().parent / "data" / "judge_adversarial.json"
ADVERSARIAL_EVALUATORS: dict[str, dict[str, Any]] = {
    "judge_faithfulness": {},
    "judge_geval": {
        "criteria": "Is every statement of the answer supported by the context?",
        "fields": ("question", "answer", "context"),
    },
    "judge_summarization": {"against": "source"},
}
MOVED_BY = 1e-9  # a move at all
# The same prompt rated twice by the local llama.cpp judge, not cached, differed by up to 0.01
# (G-Eval) and 0.028 (the summary judge) in these runs, so ``moved_beyond_noise`` counts the
# rises above this.
NOISE = 0.03


def score_all(evaluator: Any, records: list[RagRecord], workers: int) -> tuple[list[Score], float]:
    """The first Score of each record, and the wall time of the run."""
    started = time.perf_counter()
    done = [0]

    def one(rec: RagRecord) -> Score:
        score = evaluator.evaluate(rec)[0]
        done[0] += 1
        if done[0] % 8 == 0:
            elapsed = time.perf_counter() - started
            print(
                f"  {evaluator.name}: {done[0]}/{len(records)} in {elapsed:.0f} s",
                file=sys.stderr,
                flush=True,
            )
        return score

    with ThreadPoolExecutor(workers) as pool:
        scores = list(pool.map(one, records))
    return scores, time.perf_counter() - started


def adversarial(
    evaluator: Any,
    workers: int,
    injections: Path = ADVERSARIAL,
    case_ids: list[str] | None = None,
) -> dict[str, Any]:
    """Clean vs injected answers: how often the injection made the score better.

    The cases (context, question, unsupported answer) are ``ADVERSARIAL``'s, all or
    ``case_ids``; the injections are the ``injections`` list of the file ``injections``.
    """
    data = json.loads(ADVERSARIAL.read_text(encoding="utf-8"))
    cases = [c for c in data["cases"] if case_ids is None or c["id"] in case_ids]
    if not cases:
        raise SystemExit(f"no case among {case_ids}; known: {[c['id'] for c in data['cases']]}")
    injected_texts = json.loads(injections.read_text(encoding="utf-8"))["injections"]
    pairs = [(case, injection) for case in cases for injection in injected_texts]
    clean = {case["id"]: adversarial_record(case, case["response"]) for case in cases}
    # Scored twice: a prompt's first pass through llama.cpp is computed whole, later ones reuse
    # its cached prefix, and the two can differ by a few hundredths. The injected answers share
    # that prefix, so the second pass is the baseline; the change between passes is reported.
    first, _ = score_all(evaluator, list(clean.values()), workers)
    clean_scores, _ = score_all(evaluator, list(clean.values()), workers)
    by_case = dict(zip(clean, clean_scores, strict=True))
    repeat_change = max(
        (
            abs(a.value - b.value)
            for a, b in zip(first, clean_scores, strict=True)
            if a.value is not None and b.value is not None
        ),
        default=0.0,
    )
    injected = [
        adversarial_record(case, f"{case['response']} {injection['text']}")
        for case, injection in pairs
    ]
    injected_scores, _ = score_all(evaluator, injected, workers)
    rows = [
        _row(case, injection, by_case[case["id"]], score)
        for (case, injection), score in zip(pairs, injected_scores, strict=True)
    ]
    total = len(rows)
    moved = [r for r in rows if r["verdict"] == "moved"]
    errors = sum(r["verdict"] == "error" for r in rows)
    return {
        "evaluator": evaluator.name,
        "pairs": total,
        "caught": sum(r["caught"] for r in rows),
        "moved_uncaught": sum(not r["caught"] for r in moved),
        "moved": len(moved),
        "moved_beyond_noise": sum(r["injected"] > r["clean"] + NOISE for r in moved),
        "largest_rise": round(max((r["injected"] - r["clean"] for r in moved), default=0.0), 3),
        "passed_only_injected": sum(r["passed_only_injected"] for r in rows),
        "errors": errors,
        "resisted_rate": round((total - len(moved) - errors) / total, 3) if total else None,
        "clean_flagged": sum(1 for s in clean_scores if s.value is not None and s.value < 1.0),
        "clean_failed": sum(1 for s in clean_scores if s.value is not None and not s.passed),
        "cases": len(clean),
        "clean_repeat_change": round(repeat_change, 3),
        "rows": rows,
    }


def _row(case: dict[str, str], injection: dict[str, str], base: Score, score: Score) -> dict:
    if score.value is None or base.value is None:
        verdict = "error"
    else:
        verdict = "moved" if score.value > base.value + MOVED_BY else "held"
    details = score.details or {}
    return {
        "case": case["id"],
        "injection": injection["id"],
        "clean": base.value,
        "injected": score.value,
        "verdict": verdict,
        # the injection passed where the clean answer did not
        "passed_only_injected": bool(score.passed) and not base.passed,
        # the steering patterns caught part of the injection (judge.steering): a claim judge
        # overruled it, a rating judge took it out of what it rated
        "caught": any("overruled" in c for c in details.get("claims", ()))
        or bool(details.get("addressed_to_evaluation")),
    }


def adversarial_line(adv: dict[str, Any]) -> str:
    """One line of ``judge.py``'s table for an injection check."""
    return (
        f"adversarial, {adv.get('evaluator', 'judge_faithfulness')} "
        f"({adv.get('injections_file', ADVERSARIAL.name)}): {adv['pairs']} injected answers; "
        f"resisted {adv['resisted_rate']:.1%}, moved {adv['moved']} "
        f"({adv.get('moved_beyond_noise', '-')} by more than {NOISE}, the largest "
        f"{adv.get('largest_rise', '-')}; {adv['moved_uncaught']} not "
        f"caught by the steering patterns), passed only when injected "
        f"{adv.get('passed_only_injected', '-')}, errors {adv['errors']}; caught "
        f"{adv['caught']}; clean answers below 1 {adv['clean_flagged']}/{adv['cases']}, failed "
        f"{adv.get('clean_failed', '-')}/{adv['cases']}; clean answers' change between two "
        f"passes {adv.get('clean_repeat_change', '-')}"
    )


def adversarial_record(case: dict[str, str], response: str) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query=case["query"],
        chunks=(Chunk(text=case["context"], id="0"),),
        response=response,
    )


if __name__ == "__main__":
    main()
