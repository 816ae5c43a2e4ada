"""One configuration of ``overhead.py`` for one scenario, in a fresh process.

``overhead.py`` starts one of these per configuration, all at once, and has them take turns:
each sets its configuration up, builds the app, warms up and prints ``@@READY``; then every
``run N`` line on stdin runs N requests and answers ``@@CHUNK`` with the CPU time
(``time.process_time()``: all threads of this process, the span processor's included) used
since READY. ``finish K`` flushes, adds the flush to the total, prints ``@@RESULT {json}`` and,
with K > 0, first attaches an in-memory exporter and runs K more requests to count spans and
attribute bytes per request. By hand::

    printf 'run 200\nfinish 4\n' | .venv-bench/bin/python benchmarks/_overhead_worker.py \\
        --config ragtrace --scenario lc-invoke
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
if importlib.util.find_spec("ragtrace") is None:  # not installed into this venv: use the checkout
    sys.path.insert(1, str(HERE.parent))

from _overhead_apps import (
    ANSWER,
    CHUNKS,
    NotInstalled,
    Tracing,
    Unsupported,
    apply_offline_env,
    build_langchain_chain,
    build_llama_index_engine,
    query,
    setup,
)

RESULT_MARK = "@@RESULT "
READY_MARK = "@@READY "
CHUNK_MARK = "@@CHUNK "
ASYNC_BATCH = 50

# scenario id -> (framework, label)
SCENARIOS: dict[str, tuple[str, str]] = {
    "lc-invoke": ("langchain", "LangChain invoke"),
    "lc-stream": ("langchain", "LangChain stream"),
    "lc-async": ("langchain", f"LangChain {ASYNC_BATCH}x ainvoke"),
    "li-query": ("llama_index", "LlamaIndex query"),
}

Runner = Callable[[int, int], None]
"""run(start, count): perform ``count`` requests using queries from index ``start``."""

# Wall time of each sequential request (ns), appended by the sync runners; the 50-way async
# scenario has no per-request latency of its own and leaves it empty.
LATENCIES_NS: list[int] = []


def _timed_loop(call: Callable[[str], Any]) -> Runner:
    """A runner calling ``call`` once per query, recording each call's wall time."""

    def run(start: int, count: int) -> None:
        clock, record = time.perf_counter_ns, LATENCIES_NS.append
        for i in range(start, start + count):
            t0 = clock()
            call(query(i))
            record(clock() - t0)

    return run


def latency_summary(samples_ns: Sequence[int]) -> dict[str, float] | None:
    """p50 and p99 of ``samples_ns`` in microseconds (None without samples)."""
    if not samples_ns:
        return None
    ordered = sorted(samples_ns)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000

    return {"p50_us": pick(0.50), "p99_us": pick(0.99), "n": len(ordered)}


Doc = tuple[str, float, str]


def _floor_children(tracer: Any, q: str, answer: str, docs: Iterable[Doc]) -> None:
    """The retriever and LLM spans of the floor, children of the current (root) span."""
    attrs: dict[str, Any] = {"openinference.span.kind": "RETRIEVER", "input.value": q}
    for n, (doc_id, score, text) in enumerate(docs):
        prefix = f"retrieval.documents.{n}.document."
        attrs[prefix + "id"] = doc_id
        attrs[prefix + "score"] = score
        attrs[prefix + "content"] = text
    tracer.start_span("retrieve", attributes=attrs).end()
    tracer.start_span(
        "llm",
        attributes={
            "openinference.span.kind": "LLM",
            "llm.model_name": "bench-fixed",
            "output.value": answer,
        },
    ).end()


def _root_attrs(q: str) -> dict[str, Any]:
    return {"openinference.span.kind": "CHAIN", "input.value": q}


_LC_DOCS: tuple[Doc, ...] = tuple((c.id, c.score, c.text) for c in CHUNKS)


def _floor_sync(
    tracer: Any, call: Callable[[str], Any], docs: Callable[[Any], Iterable[Doc]]
) -> Callable[[str], Any]:
    """Wrap ``call`` in the floor's root span, adding the retriever and LLM spans."""

    def traced(q: str) -> Any:
        with tracer.start_as_current_span("rag", attributes=_root_attrs(q)) as root:
            result = call(q)
            answer = str(result)
            _floor_children(tracer, q, answer, docs(result))
            root.set_attribute("output.value", answer)
        return result

    return traced


def _langchain_runner(scenario: str, tracing: Tracing) -> tuple[Runner, Callable[[], Any]]:
    chain = build_langchain_chain()
    cfg = tracing.langchain_config
    tracer = tracing.floor_tracer

    if scenario == "lc-async":
        loop = asyncio.new_event_loop()

        async def ainvoke(q: str) -> Any:
            if tracer is None:
                return await chain.ainvoke(q, cfg)
            with tracer.start_as_current_span("rag", attributes=_root_attrs(q)) as root:
                answer = await chain.ainvoke(q, cfg)
                _floor_children(tracer, q, answer, _LC_DOCS)
                root.set_attribute("output.value", answer)
            return answer

        async def batch(start: int, count: int) -> list[Any]:
            return await asyncio.gather(*(ainvoke(query(i)) for i in range(start, start + count)))

        def run_async(start: int, count: int) -> None:
            for b in range(start, start + count, ASYNC_BATCH):
                loop.run_until_complete(batch(b, min(ASYNC_BATCH, start + count - b)))

        return run_async, lambda: loop.run_until_complete(batch(0, 1))[0]

    def stream(q: str) -> Any:
        return "".join(chain.stream(q, cfg))

    def invoke(q: str) -> Any:
        return chain.invoke(q, cfg)

    call: Callable[[str], Any] = stream if scenario == "lc-stream" else invoke
    if tracer is not None:
        call = _floor_sync(tracer, call, lambda _result: _LC_DOCS)

    return _timed_loop(call), lambda: call(query(0))


def _llama_index_runner(tracing: Tracing) -> tuple[Runner, Callable[[], Any]]:
    engine = build_llama_index_engine()
    call: Callable[[str], Any] = engine.query
    if tracing.floor_tracer is not None:

        def docs(response: Any) -> list[Doc]:
            return [(n.node.node_id, n.score, n.node.get_content()) for n in response.source_nodes]

        call = _floor_sync(tracing.floor_tracer, call, docs)

    return _timed_loop(call), lambda: str(call(query(0)))


def _str_bytes(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, list | tuple):
        return sum(len(v.encode("utf-8")) for v in value if isinstance(v, str))
    return 0


def _values(attrs: Any) -> Iterable[tuple[str, Any]]:
    return attrs.items() if attrs else ()


def span_stats(spans: Sequence[Any], requests: int) -> dict[str, Any]:
    """Spans and attribute bytes per request, and which request content the spans carry."""
    total = 0
    n_attrs = 0
    found: dict[str, set[str]] = {
        k: set() for k in ("query", "answer", "chunk_ids", "chunk_scores", "chunk_text")
    }
    ids = [c.id for c in CHUNKS]
    scores = [c.score for c in CHUNKS]
    score_strs = [repr(s) for s in scores]
    text_probe = CHUNKS[0].text[:80]
    answer_probe = ANSWER[:80]
    for span in spans:
        pairs = list(_values(span.attributes))
        for event in span.events:
            pairs.extend((f"event:{event.name}:{k}", v) for k, v in _values(event.attributes))
        for key, value in pairs:
            n_attrs += 1
            total += _str_bytes(value)
            texts = [value] if isinstance(value, str) else []
            if isinstance(value, list | tuple):
                texts = [v for v in value if isinstance(v, str)]
            if isinstance(value, float) and value in scores:
                found["chunk_scores"].add(key)
            for text in texts:
                if "How do I get a refund" in text:
                    found["query"].add(key)
                if answer_probe in text:
                    found["answer"].add(key)
                if text_probe in text:
                    found["chunk_text"].add(key)
                if any(i in text for i in ids):
                    found["chunk_ids"].add(key)
                if any(s in text for s in score_strs):
                    found["chunk_scores"].add(key)
    return {
        "requests": requests,
        "spans_per_request": len(spans) / requests,
        "attributes_per_request": n_attrs / requests,
        "attr_bytes_per_request": total / requests,
        "span_names": sorted({s.name for s in spans}),
        "captures": {k: sorted(v)[:6] for k, v in found.items()},
    }


def bytes_pass(tracing: Tracing, run: Runner, requests: int) -> dict[str, Any] | None:
    if tracing.provider is None:
        return None
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    tracing.flush()
    memory = InMemorySpanExporter()
    tracing.provider.add_span_processor(SimpleSpanProcessor(memory))
    run(10_000, requests)
    tracing.flush()
    return span_stats(memory.get_finished_spans(), requests)


def _say(mark: str, payload: dict[str, Any]) -> None:
    sys.stdout.write(mark + json.dumps(payload) + "\n")
    sys.stdout.flush()


def serve(args: argparse.Namespace) -> dict[str, Any]:
    """Set up, warm up, say READY, then run the chunks asked for on stdin; returns the result."""
    framework, _label = SCENARIOS[args.scenario]
    result: dict[str, Any] = {"config": args.config, "scenario": args.scenario}
    try:
        tracing = setup(args.config, framework)
    except NotInstalled as exc:
        return {**result, "status": "not installed", "detail": str(exc)}
    except Unsupported as exc:
        return {**result, "status": "unsupported", "detail": str(exc)}

    if framework == "langchain":
        run, probe = _langchain_runner(args.scenario, tracing)
    else:
        run, probe = _llama_index_runner(tracing)

    answer = str(probe())
    if answer != ANSWER:
        return {**result, "status": "error", "detail": f"wrong answer: {answer[:200]!r}"}
    run(1, args.warmup)
    tracing.flush()
    LATENCIES_NS.clear()
    gc.collect()
    _say(READY_MARK, {"pid": os.getpid()})

    # CPU is read cumulatively from here, so work that this process's background threads do
    # between chunks (span export, timers) is counted too.
    cpu0 = time.process_time()
    done = 0
    wall = 0.0
    bytes_requests = 0
    for line in sys.stdin:
        command, _, number = line.strip().partition(" ")
        if command == "run":
            count = int(number)
            wall0 = time.perf_counter()
            run(1000 + done, count)
            wall += time.perf_counter() - wall0
            done += count
            _say(CHUNK_MARK, {"requests": done, "cpu_s": time.process_time() - cpu0})
        elif command == "finish":
            bytes_requests = int(number or 0)
            break
    latency = latency_summary(LATENCIES_NS)
    tracing.flush()
    cpu = time.process_time() - cpu0
    if done == 0:
        return {**result, "status": "error", "detail": "no requests were asked for"}
    result.update(
        status="ok",
        requests=done,
        cpu_s=cpu,
        cpu_us_per_request=cpu / done * 1e6,
        wall_us_per_request=wall / done * 1e6,
        latency=latency,
    )
    if bytes_requests > 0:
        result["spans"] = bytes_pass(tracing, run, bytes_requests)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--config", required=True)
    parser.add_argument("--scenario", required=True, choices=sorted(SCENARIOS))
    parser.add_argument("--warmup", type=int, default=100)
    args = parser.parse_args(argv)
    apply_offline_env(os.environ)
    try:
        result = serve(args)
    except Exception as exc:
        result = {
            "config": args.config,
            "scenario": args.scenario,
            "status": "error",
            "detail": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc()[-4000:],
        }
    _say(RESULT_MARK, result)
    sys.stderr.flush()
    # Skip interpreter shutdown: atexit hooks of peers (flush threads, HTTP clients) must not
    # hang or cost anything after the measurement.
    os._exit(0)


if __name__ == "__main__":
    main()
