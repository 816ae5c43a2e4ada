"""Where ragtrace's LangChain capture spends its time: CPU per request, split by callback.

One process, the benchmark's LangChain app (``_overhead_apps.build_langchain_chain``: a
retriever, a prompt and a fake chat model), an SDK ``BatchSpanProcessor`` with a no-op
exporter, no evaluators. Four modes take turns in rounds, each timed with process CPU:

- ``baseline``: the chain with no callback handler;
- ``noop handler``: a LangChain handler whose callbacks do nothing (LangChain's own dispatch);
- ``ragtrace``: ragtrace's handler;
- ``ragtrace, timed``: ragtrace's handler with each callback wrapped in a ``perf_counter_ns``
  pair, which gives the per-callback split (the wrapper adds its own small cost).

Run::

    .venv-bench/bin/python benchmarks/capture_profile.py            # 5 rounds x 400 requests
    .venv-bench/bin/python benchmarks/capture_profile.py --rounds 3 --requests 200

It prints two tables and writes ``benchmarks/results/capture_profile.json``. Overhead figures
for the peers, side by side, come from ``overhead.py``; this one says where ragtrace's own
part goes.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of every mode (default 5)")
    parser.add_argument("--requests", type=int, default=400, help="requests a mode a round")
    parser.add_argument("--warmup", type=int, default=300, help="untimed requests a mode first")
    parser.add_argument("--json", type=Path, default=RESULTS / "capture_profile.json")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.requests < 1 or args.warmup < 0:
        parser.error("--rounds and --requests must be >= 1, --warmup >= 0")
    return args


def timed_handler_class(totals: collections.Counter[str], calls: collections.Counter[str]) -> Any:
    """A subclass of ragtrace's handler whose ``on_*`` callbacks add their wall time to
    ``totals`` (nanoseconds) and their calls to ``calls``."""
    from ragtrace.integrations.langchain._handler import RagtraceCallbackHandler

    def timed(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter_ns()
            try:
                return method(self, *args, **kwargs)
            finally:
                totals[name] += time.perf_counter_ns() - start
                calls[name] += 1

        return wrapper

    own = {
        name: timed(name, member)
        for name, member in vars(RagtraceCallbackHandler).items()
        if name.startswith("on_") and callable(member)
    }
    return type("TimedRagtraceHandler", (RagtraceCallbackHandler,), own)


def build_modes(totals: collections.Counter[str], calls: collections.Counter[str]) -> Any:
    """The chain, and per mode the ``config`` to invoke it with."""
    sys.path.insert(0, str(HERE))
    from _overhead_apps import _noop_provider, _set_global, apply_offline_env, build_langchain_chain
    from langchain_core.callbacks import BaseCallbackHandler
    from prometheus_client import CollectorRegistry

    import ragtrace
    from ragtrace.integrations.langchain._handler import RagtraceCallbackHandler

    apply_offline_env(os.environ)
    provider = _noop_provider()
    _set_global(provider)
    instance = ragtrace.init(
        app="bench", tracer_provider=provider, registry=CollectorRegistry(), evaluators=()
    )
    modes: dict[str, dict[str, Any]] = {
        "baseline": {"callbacks": []},
        "noop handler": {"callbacks": [BaseCallbackHandler()]},
        "ragtrace": {"callbacks": [RagtraceCallbackHandler()]},
        "ragtrace, timed": {"callbacks": [timed_handler_class(totals, calls)()]},
    }
    return build_langchain_chain(), modes, instance


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from _overhead_apps import query

    totals: collections.Counter[str] = collections.Counter()
    calls: collections.Counter[str] = collections.Counter()
    chain, modes, instance = build_modes(totals, calls)
    for config in modes.values():
        for i in range(args.warmup):
            chain.invoke(query(i), config)
    totals.clear()
    calls.clear()
    cpu_us: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(args.rounds):
        for mode, config in modes.items():
            start = time.process_time()
            for i in range(args.requests):
                chain.invoke(query(i), config)
            cpu_us[mode].append((time.process_time() - start) / args.requests * 1e6)
    instance.shutdown()
    timed_requests = args.rounds * args.requests
    return {
        "rounds": args.rounds,
        "requests": args.requests,
        "cpu_us_per_request": {mode: statistics.median(v) for mode, v in cpu_us.items()},
        "cpu_us_rounds": cpu_us,
        "callbacks": {
            name: {
                "calls_per_request": calls[name] / timed_requests,
                "us_per_request": totals[name] / timed_requests / 1000,
            }
            for name, _ in totals.most_common()
        },
    }


def render(result: dict[str, Any]) -> str:
    cpu = result["cpu_us_per_request"]
    base = cpu["baseline"]
    lines = ["CPU us per request, median of rounds (+ over baseline)", ""]
    lines += [f"  {mode:<18} {value:8.0f}  +{value - base:6.0f}" for mode, value in cpu.items()]
    lines += ["", "ragtrace's callbacks, wall us per request (the timed mode)", ""]
    for name, row in result["callbacks"].items():
        lines.append(
            f"  {name:<22} {row['calls_per_request']:4.1f} calls  {row['us_per_request']:7.1f} us"
        )
    total = sum(row["us_per_request"] for row in result["callbacks"].values())
    lines.append(f"  {'all callbacks':<22} {'':10}  {total:7.1f} us")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    result = measure(args)
    print(render(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
