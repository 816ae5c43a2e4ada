"""Seconds to load a packaged likelihood model in a fresh process: converting its GGUF file, and
reading the converted copy the first load kept on disk (``ragtrace.backends.likelihood_cache``).

    .venv/bin/python benchmarks/likelihood_load.py [--models smollm2-135m,qwen2.5-coder-0.5b]

Each model is loaded twice in a new process, with a new empty cache folder: the first process
converts the GGUF file and keeps the copy, the second reads it. Each process then scores one
sentence, and the two log-probabilities must agree. Prints a table and writes
benchmarks/results/likelihood_load.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "likelihood_load.json"
ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys, time
started = time.perf_counter()
from ragtrace.evaluators.perplexity import causal_lm
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
