"""Import and start-up time: ``import ragtrace``, ``ragtrace.init``, and the peers' imports.

Each measurement runs in a fresh interpreter (nothing cached in ``sys.modules``), in rounds
that take every case in turn, so a busy machine slows all of them alike; the table shows the
median and the spread over rounds. The clock is ``time.perf_counter`` around the statement
inside the child (interpreter start-up is not counted).

Cases:

- ``import ragtrace``: the package (no framework, no OpenTelemetry SDK, no prometheus_client);
- ``import ragtrace + init``: also ``ragtrace.init`` with no evaluators, no metrics port and
  a tracer provider of its own: what an application pays before its first request;
- ``LangChain app: ...``: in a process that has already run a LangChain runnable (so
  langchain_core and what its first call imports are loaded, as in any LangChain app), what
  it takes to import, start and instrument each tracer with an SDK tracer provider: ragtrace,
  and the peers where installed (``.venv-bench``): OpenInference, OpenLLMetry, and Langfuse
  (its handler's import only: it needs keys to start).

Run::

    .venv-bench/bin/python benchmarks/import_time.py            # 15 rounds, ~1 minute
    .venv-bench/bin/python benchmarks/import_time.py --rounds 5

It prints a table and writes ``benchmarks/results/import_time.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
TARGET_IMPORT_MS = 100.0

_SDK = "from opentelemetry.sdk.trace import TracerProvider\n"
_INIT = _SDK + "ragtrace.init(app='probe', evaluators=(), tracer_provider=TracerProvider())"
# What a LangChain application has imported by the time it instruments: its first chain call.
_LC_APP = (
    "from langchain_core.runnables import RunnableLambda\nRunnableLambda(lambda x: x).invoke(1)"
)
CASES: dict[str, tuple[str, str]] = {
    # name -> (setup, timed statement)
    "import ragtrace": ("", "import ragtrace"),
    "import ragtrace + init": ("", "import ragtrace\n" + _INIT),
    # in a LangChain app: import, start and instrument, with an SDK tracer provider
    "LangChain app: ragtrace": (
        _LC_APP,
        "import ragtrace\n" + _INIT + "\n"
        "from ragtrace.integrations.langchain import instrument\ninstrument()",
    ),
    "LangChain app: OpenInference": (
        _LC_APP,
        _SDK + "from openinference.instrumentation.langchain import LangChainInstrumentor\n"
        "LangChainInstrumentor().instrument(tracer_provider=TracerProvider())",
    ),
    "LangChain app: OpenLLMetry": (
        _LC_APP,
        _SDK + "from opentelemetry.instrumentation.langchain import LangchainInstrumentor\n"
        "LangchainInstrumentor().instrument(tracer_provider=TracerProvider())",
    ),
    "LangChain app: Langfuse (import)": (_LC_APP, "from langfuse.langchain import CallbackHandler"),
}

_CHILD = """
import time, json
{setup}
t = time.perf_counter()
exec(compile({statement!r}, "<timed>", "exec"))
print(json.dumps({{"ms": (time.perf_counter() - t) * 1000}}))
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        OTEL_SDK_DISABLED="false",
    )
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    return env


def measure(setup: str, statement: str, env: dict[str, str]) -> float | str:
    """Milliseconds the statement took in a fresh interpreter, or why it could not run."""
    code = _CHILD.format(setup=setup, statement=statement)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        return last[:160]
    value: float = json.loads(proc.stdout.strip().splitlines()[-1])["ms"]
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    env = _env()
    samples: dict[str, list[float]] = {name: [] for name in CASES}
    missing: dict[str, str] = {}
    for rnd in range(args.rounds):
        names = list(CASES)
        names = names[rnd % len(names) :] + names[: rnd % len(names)]
        for name in names:
            if name in missing:
                continue
            result = measure(*CASES[name], env)
            if isinstance(result, str):
                missing[name] = result
            else:
                samples[name].append(result)
    rows = []
    print(f"{'case':32s} {'median ms':>10s} {'min':>8s} {'max':>8s}  note")
    for name in CASES:
        values = samples[name]
        if not values:
            print(f"{name:32s} {'-':>10s} {'-':>8s} {'-':>8s}  not measured: {missing[name]}")
            rows.append({"case": name, "status": "not measured", "why": missing.get(name)})
            continue
        median = statistics.median(values)
        note = ""
        if name == "import ragtrace":
            met = median < TARGET_IMPORT_MS
            note = f"target < {TARGET_IMPORT_MS:.0f} ms: {'met' if met else 'MISSED'}"
        print(f"{name:32s} {median:10.1f} {min(values):8.1f} {max(values):8.1f}  {note}")
        rows.append(
            {
                "case": name,
                "median_ms": median,
                "min_ms": min(values),
                "max_ms": max(values),
                "rounds": len(values),
            }
        )
    RESULTS.mkdir(exist_ok=True)
    out = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "rounds": args.rounds,
        "target_import_ms": TARGET_IMPORT_MS,
        "rows": rows,
    }
    (RESULTS / "import_time.json").write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {RESULTS / 'import_time.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
