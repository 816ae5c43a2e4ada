"""The likelihood models' cost: seconds per record of the likelihood evaluators (``speed``), and
seconds to load a packaged model, converting its GGUF file or reading the kept copy (``load``).

    .venv/bin/python benchmarks/likelihood.py speed [--records 6]
    .venv/bin/python benchmarks/likelihood.py load [--models smollm2-135m,qwen2.5-coder-0.5b]

``speed``: on the CPU, 1 thread, default models. Records: RAGTruth QA rows from the labelled
data (question, answer; the first passage as the
reference, so the reference-based evaluators read a realistic pair), answers cut to 600
characters. Each evaluator is built with its defaults, warmed on one record (model load timed
apart), then timed over ``--records`` records one at a time. Prints a table and writes
benchmarks/results/likelihood_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_var, "1")
os.environ["RAGTRACE_MODEL_THREADS"] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _labelled_data import data_dir, ragtruth

from ragtrace._model import RagRecord
from ragtrace.evaluators import create

NAMES = (
    "perplexity",
    "gptscore_qa",
    "gptscore_translation",
    "gptscore_summarization_ref",
    "gptscore_summarization",
)
RESULTS = Path(__file__).resolve().parent / "results" / "likelihood_speed.json"


def records(count: int) -> list[RagRecord]:
    rows = [e for e in ragtruth(data_dir()) if e.task == "QA" and e.query][: count + 1]
    return [
        RagRecord(
            trace_id=f"{i:032x}",
            span_id="0" * 16,
            query=e.query,
            response=e.response[:600],
            reference=e.passages[0][:600],
        )
        for i, e in enumerate(rows)
    ]


def speed() -> None:
    parser = argparse.ArgumentParser(
        prog="likelihood.py speed", description="Seconds per record of the likelihood evaluators."
    )
    parser.add_argument("--records", type=int, default=6)
    args = parser.parse_args()
    data = records(args.records)
    rows = []
    for name in NAMES:
        evaluator = create(name)
        started = time.perf_counter()
        evaluator.evaluate(data[0])  # loads the model
        first = time.perf_counter() - started
        times, errors = [], 0
        for record in data[1:]:
            started = time.perf_counter()
            scores = evaluator.evaluate(record)
            times.append(time.perf_counter() - started)
            errors += sum(s.error is not None for s in scores)
        rows.append(
            {
                "evaluator": name,
                "model": str(getattr(evaluator, "model", "")),
                "scores": len(scores),
                "first_call_s": round(first, 2),
                "mean_s": round(statistics.mean(times), 3),
                "median_s": round(statistics.median(times), 3),
                "max_s": round(max(times), 3),
                "errors": errors,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    print(f"\n{'evaluator':<28} {'model':<20} {'scores':>6} {'load+1st s':>10} {'s/record':>9}")
    for row in rows:
        print(
            f"{row['evaluator']:<28} {row['model']:<20} {row['scores']:>6} "
            f"{row['first_call_s']:>10.1f} {row['mean_s']:>9.2f}"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps({"records": len(data) - 1, "threads": 1, "rows": rows}, indent=1),
        encoding="utf-8",
    )


# Seconds to load a packaged likelihood model in a fresh process: converting its GGUF file, and
# reading the converted copy the first load kept on disk (``ragtrace._backends.likelihood_cache``).
#
#     .venv/bin/python benchmarks/likelihood.py load [--models smollm2-135m,qwen2.5-coder-0.5b]
#
# Each model is loaded twice in a new process, with a new empty cache folder: the first process
# converts the GGUF file and keeps the copy, the second reads it. Each process then scores one
# sentence, and the two log-probabilities must agree. Prints a table and writes
# benchmarks/results/likelihood_load.json.
import os
import subprocess
import sys
import tempfile
from pathlib import Path

LOAD_RESULTS = Path(__file__).resolve().parent / "results" / "likelihood_load.json"
ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys, time
started = time.perf_counter()
from ragtrace.evaluators._perplexity import causal_lm
lm = causal_lm(sys.argv[1], threads=1, context_tokens=256)
loaded = time.perf_counter() - started
[found] = lm.score([("", "The cat sat on the mat by the door.")])
print(json.dumps({"seconds": loaded, "source": lm.source, "logprobs": found.logprobs}))
"""


def load_once(model: str, cache: Path) -> dict[str, object]:
    env = {
        **os.environ,
        "RAGTRACE_LIKELIHOOD_CACHE": str(cache),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-c", CHILD, model],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def load() -> None:
    parser = argparse.ArgumentParser(
        prog="likelihood.py load",
        description="Seconds to load a packaged likelihood model: converted, and from the copy.",
    )
    parser.add_argument("--models", default="smollm2-135m,qwen2.5-coder-0.5b")
    args = parser.parse_args()
    rows = {}
    for model in args.models.split(","):
        with tempfile.TemporaryDirectory(prefix="likelihood-cache-") as folder:
            first = load_once(model, Path(folder))
            second = load_once(model, Path(folder))
            size = sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())
        same = max(
            abs(a - b)
            for a, b in zip(first["logprobs"], second["logprobs"], strict=True)  # type: ignore[arg-type]
        )
        rows[model] = {
            "convert_s": round(float(first["seconds"]), 1),  # type: ignore[arg-type]
            "from_disk_s": round(float(second["seconds"]), 1),  # type: ignore[arg-type]
            "sources": [first["source"], second["source"]],
            "disk_mb": round(size / 1e6),
            "max_logprob_difference": same,
        }
        print(f"{model}: {rows[model]}", flush=True)
    print("| model | convert (s) | from disk (s) | copy on disk (MB) | same log-probs |")
    print("|---|---|---|---|---|")
    for model, r in rows.items():
        print(
            f"| {model} | {r['convert_s']} | {r['from_disk_s']} | {r['disk_mb']} | "
            f"{r['max_logprob_difference'] == 0.0} |"
        )
    LOAD_RESULTS.parent.mkdir(parents=True, exist_ok=True)
    LOAD_RESULTS.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    COMMANDS = {"speed": speed, "load": load}
    if sys.argv[1:2] and sys.argv[1] in COMMANDS:
        COMMANDS[sys.argv.pop(1)]()
    else:
        sys.exit(f"usage: {sys.argv[0]} {{speed,load}} [options]")
