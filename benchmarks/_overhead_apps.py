"""What ``overhead.py`` measures: the tracing configurations (``setup``) and the deterministic
RAG apps they trace (a LangChain chain, a LlamaIndex engine).

Both retrieve the same four ~500-character chunks (fixed ids and scores) for every query and
answer with the same fixed text from the framework's own fake model, so that every tracing
configuration sees exactly the same work. Frameworks are imported inside the builders only.
"""

from __future__ import annotations

import importlib
import itertools
import os
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONFIGS: tuple[str, ...] = (
    "baseline",
    "floor",
    "ragtrace",
    "ragtrace-api",
    "ragtrace-other",
    "openinference",
    "openllmetry",
    "langfuse",
)

OTHER_CHECKOUT_ENV = "RAGTRACE_BENCH_OTHER_CHECKOUT"
"""Where the ``ragtrace-other`` configuration imports ragtrace from (a git worktree, say)."""

# Keep every peer offline and quiet: no telemetry, no LangSmith, Langfuse at a dead loopback port.
OFFLINE_ENV: dict[str, str] = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TRACELOOP_TELEMETRY": "false",
    "TRACELOOP_TRACE_CONTENT": "true",
    "DO_NOT_TRACK": "1",
    "ANONYMIZED_TELEMETRY": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGCHAIN_TRACING": "false",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_CALLBACKS_BACKGROUND": "false",
    "LANGFUSE_BASE_URL": "http://127.0.0.1:9",
    "LANGFUSE_HOST": "http://127.0.0.1:9",
    "LANGFUSE_PUBLIC_KEY": "pk-lf-bench-offline",
    "LANGFUSE_SECRET_KEY": "sk-lf-bench-offline",
    "LANGFUSE_MEDIA_UPLOAD_ENABLED": "false",
    "LANGFUSE_TRACING_ENABLED": "true",
    "OPENAI_API_KEY": "sk-bench-offline-unused",
    "OTEL_TRACES_EXPORTER": "none",
    "OTEL_METRICS_EXPORTER": "none",
    "OTEL_LOGS_EXPORTER": "none",
}
# Variables that would switch tracing off or hide content in one configuration but not another.
UNSET_ENV: tuple[str, ...] = (
    "OTEL_SDK_DISABLED",
    "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS",
    "OPENINFERENCE_HIDE_INPUTS",
    "OPENINFERENCE_HIDE_OUTPUTS",
    "RAGTRACE_CAPTURE_CONTENT",
)


def apply_offline_env(env: dict[str, str] | os._Environ[str]) -> None:
    """Set the offline variables (overriding) and drop the ones that would skew a config."""
    for key, value in OFFLINE_ENV.items():
        env[key] = value
    for key in UNSET_ENV:
        env.pop(key, None)


class NotInstalled(Exception):
    """A configuration's packages are missing from this environment."""


class Unsupported(Exception):
    """A configuration has no integration for this framework."""


@dataclass
class Tracing:
    """What the worker needs from a configuration once it is set up."""

    name: str
    provider: Any = None
    """The SDK TracerProvider the configuration's spans go to (None for baseline)."""
    flush: Callable[[], None] = lambda: None
    """Hands on everything buffered; runs inside the timed region."""
    langchain_config: dict[str, Any] | None = None
    """RunnableConfig passed to every LangChain call (callback-handler configurations)."""
    floor_tracer: Any = None
    """Set only for ``floor``: the tracer the hand-made spans come from."""
    keep: list[Any] = field(default_factory=list)


def noop_exporter() -> Any:
    """A SpanExporter whose export() succeeds and does nothing."""
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class NoopExporter(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

        def shutdown(self) -> None:
            return None

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

    return NoopExporter()


def _noop_provider() -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(noop_exporter()))
    return provider


def _set_global(provider: Any) -> None:
    from opentelemetry import trace

    trace.set_tracer_provider(provider)


def _flusher(provider: Any) -> Callable[[], None]:
    def flush() -> None:
        provider.force_flush(30_000)

    return flush


def _baseline(framework: str) -> Tracing:
    return Tracing("baseline")


def _floor(framework: str) -> Tracing:
    try:
        provider = _noop_provider()
    except ImportError as exc:
        raise NotInstalled(str(exc)) from exc
    _set_global(provider)
    tracer = provider.get_tracer("benchmarks.floor")
    return Tracing("floor", provider=provider, flush=_flusher(provider), floor_tracer=tracer)


_OI = "openinference.instrumentation"
_OL = "opentelemetry.instrumentation"
# (config, framework) -> "module:attribute" of what turns that configuration on.
_ENTRY_POINTS: dict[tuple[str, str], str] = {
    ("ragtrace", "langchain"): "ragtrace.integrations.langchain:instrument",
    ("ragtrace", "llama_index"): "ragtrace.integrations.llama_index:instrument",
    ("openinference", "langchain"): f"{_OI}.langchain:LangChainInstrumentor",
    ("openinference", "llama_index"): f"{_OI}.llama_index:LlamaIndexInstrumentor",
    ("openllmetry", "langchain"): f"{_OL}.langchain:LangchainInstrumentor",
    # Traceloop's LlamaIndex instrumentor imports only with llama-index-llms-openai installed.
    ("openllmetry", "llama_index"): f"{_OL}.llamaindex:LlamaIndexInstrumentor",
}


def _load(config: str, framework: str) -> Any:
    module, _, name = _ENTRY_POINTS[(config, framework)].partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise NotInstalled(f"{module}.{name}: {exc}") from exc


def _ragtrace(framework: str, name: str = "ragtrace", **options: Any) -> Tracing:
    """ragtrace as shipped; ``ragtrace-api`` passes ``direct_spans=False`` (its spans go through
    the SDK's ``Tracer.start_span`` instead of straight to the span processor)."""
    instrument = _load("ragtrace", framework)
    from prometheus_client import CollectorRegistry

    import ragtrace

    provider = _noop_provider()
    _set_global(provider)
    # Capture and record hand-off (submit) only: evaluators run off the request path and are
    # measured in benchmarks/pipeline.py.
    rt = ragtrace.init(
        app="bench",
        tracer_provider=provider,
        registry=CollectorRegistry(),
        evaluators=(),
        **options,
    )
    instrument()

    def flush() -> None:
        rt.flush(timeout_s=30)

    return Tracing(name, provider=provider, flush=flush, keep=[rt])


def _ragtrace_other(framework: str) -> Tracing:
    """ragtrace imported from another checkout (``overhead.py --compare-with PATH``, which sets
    ``OTHER_CHECKOUT_ENV``): an earlier commit side by side with this one, in one run."""
    import sys

    checkout = os.environ.get(OTHER_CHECKOUT_ENV)
    if not checkout:
        raise NotInstalled("no other checkout: run overhead.py --compare-with PATH")
    sys.path.insert(0, checkout)
    import ragtrace

    if not Path(ragtrace.__file__).resolve().is_relative_to(Path(checkout).resolve()):
        raise NotInstalled(f"ragtrace was already imported from {ragtrace.__file__}")
    return _ragtrace(framework, "ragtrace-other")


def _instrumentor(config: str) -> Callable[[str], Tracing]:
    """OpenInference and OpenLLMetry: an OpenTelemetry BaseInstrumentor given our provider."""

    def set_up(framework: str) -> Tracing:
        instrumentor = _load(config, framework)()
        provider = _noop_provider()
        _set_global(provider)
        instrumentor.instrument(tracer_provider=provider)
        return Tracing(config, provider=provider, flush=_flusher(provider), keep=[instrumentor])

    return set_up


def _langfuse(framework: str) -> Tracing:
    if framework != "langchain":
        raise Unsupported(
            "Langfuse traces LlamaIndex through OpenInference's instrumentor "
            "(the openinference config)"
        )
    try:
        from langfuse import Langfuse
        from langfuse.langchain import CallbackHandler
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError as exc:
        raise NotInstalled(str(exc)) from exc
    # Langfuse adds its own LangfuseSpanProcessor (a BatchSpanProcessor) around the exporter we
    # give it, so its provider gets no processor of ours.
    provider = TracerProvider()
    _set_global(provider)
    client = Langfuse(
        public_key=os.environ["LANGFUSE_PUBLIC_KEY"],
        secret_key=os.environ["LANGFUSE_SECRET_KEY"],
        base_url=os.environ["LANGFUSE_BASE_URL"],
        tracer_provider=provider,
        span_exporter=noop_exporter(),
        timeout=1,
    )
    handler = CallbackHandler(public_key=os.environ["LANGFUSE_PUBLIC_KEY"])

    def flush() -> None:
        provider.force_flush(30_000)

    return Tracing(
        "langfuse",
        provider=provider,
        flush=flush,
        langchain_config={"callbacks": [handler]},
        keep=[client, handler],
    )


_SETUPS: dict[str, Callable[[str], Tracing]] = {
    "baseline": _baseline,
    "floor": _floor,
    "ragtrace": _ragtrace,
    "ragtrace-api": lambda framework: _ragtrace(framework, "ragtrace-api", direct_spans=False),
    "ragtrace-other": _ragtrace_other,
    "openinference": _instrumentor("openinference"),
    "openllmetry": _instrumentor("openllmetry"),
    "langfuse": _langfuse,
}


def setup(config: str, framework: str) -> Tracing:
    """Set up one configuration for ``framework`` ("langchain" or "llama_index")."""
    if config not in _SETUPS:
        raise ValueError(f"unknown config {config!r}; choose from {', '.join(CONFIGS)}")
    return _SETUPS[config](framework)


_WORDS = (
    "refund policy invoice customer account billing period annual plan monthly "
    "subscription cancel renewal prorated credit card support ticket escalation "
    "enterprise seat license upgrade downgrade trial workspace owner admin export "
    "data retention region compliance audit log session token password reset"
).split()


def _text(seed: int, chars: int = 500) -> str:
    words: list[str] = []
    size = 0
    i = seed
    while size < chars:
        word = _WORDS[(i * 7 + seed * 13) % len(_WORDS)]
        words.append(word)
        size += len(word) + 1
        i += 1
    return (" ".join(words))[:chars].rstrip() + "."


@dataclass(frozen=True)
class BenchChunk:
    """One retrieved chunk; ids and scores are distinctive so the byte pass can find them."""

    id: str
    score: float
    text: str
    source: str


CHUNKS: tuple[BenchChunk, ...] = tuple(
    BenchChunk(
        id=f"kb-{4711 + n}-chunk",
        score=round(0.9137 - 0.0411 * n, 4),
        text=_text(n + 1),
        source=f"handbook/billing-{n + 1}.md",
    )
    for n in range(4)
)

ANSWER = (
    "You can cancel an annual plan at any time from the billing page; the unused months are "
    "refunded as a prorated credit to the card on file within five business days, and the "
    "workspace owner receives an invoice that shows the credit. Enterprise seats follow the "
    "contract terms instead, so open a support ticket and billing will confirm the amount."
)

QUERIES: tuple[str, ...] = tuple(
    f"How do I get a refund when I cancel my annual plan? (case {n})" for n in range(16)
)


def query(n: int) -> str:
    """The n-th benchmark query (a small fixed cycle)."""
    return QUERIES[n % len(QUERIES)]


def build_langchain_chain() -> Any:
    """A typical LCEL RAG chain: {context: retriever | format, question} | prompt | llm | parser.

    The retriever, the formatter and the model have native async paths; StrOutputParser keeps
    LangChain's own async path (one thread-pool hop per request), as in a real app.
    """
    from langchain_core.callbacks import (
        AsyncCallbackManagerForLLMRun,
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import BaseMessage
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.outputs import ChatGenerationChunk, ChatResult
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough

    class FixedRetriever(BaseRetriever):
        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return [
                Document(
                    id=c.id,
                    page_content=c.text,
                    metadata={"score": c.score, "source": c.source},
                )
                for c in CHUNKS
            ]

        async def _aget_relevant_documents(
            self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
        ) -> list[Document]:
            return self._get_relevant_documents(query, run_manager=run_manager.get_sync())

    class BenchChatModel(GenericFakeChatModel):
        """GenericFakeChatModel with native async paths (the stock one uses a thread pool)."""

        async def _agenerate(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: AsyncCallbackManagerForLLMRun | None = None,
            **kwargs: Any,
        ) -> ChatResult:
            return self._generate(messages, stop=stop, **kwargs)

        async def _astream(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: AsyncCallbackManagerForLLMRun | None = None,
            **kwargs: Any,
        ) -> AsyncIterator[ChatGenerationChunk]:
            for chunk in self._stream(messages, stop=stop, **kwargs):
                if run_manager is not None:
                    await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                yield chunk

    def format_docs(docs: list[Document]) -> str:
        return "\n\n".join(d.page_content for d in docs)

    async def aformat_docs(docs: list[Document]) -> str:
        return format_docs(docs)

    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "Answer using only this context.\n\n{context}"),
            ("human", "{question}"),
        ]
    )
    llm = BenchChatModel(messages=itertools.cycle([ANSWER]))
    context = FixedRetriever() | RunnableLambda(format_docs, afunc=aformat_docs)
    setup = RunnableParallel(context=context, question=RunnablePassthrough())
    return setup | prompt | llm | StrOutputParser()


AGENT_DOC_CHARS = 750  # ~100 words a document
AGENT_SEARCH = "refund annual plan cancel"


def build_langchain_agent() -> Any:
    """A LangChain 1.x agent (``create_agent``, LangGraph underneath) with two tools, driven by
    LangChain's own fake chat model (``FakeMessagesListChatModel``, ``bind_tools`` accepted)
    whose replies cycle, so every turn is the same: a call to ``search_kb`` (a ``@tool`` that
    invokes a retriever returning four documents of ~100 words, the chain's chunk ids and
    scores), a call to ``billing_account`` (a plain tool), then the answer. A turn is three LLM
    steps, two tool calls and one retrieval; ragtrace makes it one record."""
    from langchain.agents import create_agent
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import tool

    docs = [
        Document(
            id=c.id,
            page_content=_text(n + 1, AGENT_DOC_CHARS),
            metadata={"score": c.score, "source": c.source},
        )
        for n, c in enumerate(CHUNKS)
    ]

    class FixedRetriever(BaseRetriever):
        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return list(docs)

    class ScriptedChatModel(FakeMessagesListChatModel):
        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
            return self

    retriever = FixedRetriever()

    @tool
    def search_kb(query: str) -> str:
        """Search the billing knowledge base."""
        return "\n\n".join(d.page_content for d in retriever.invoke(query))

    @tool
    def billing_account(account_id: str) -> str:
        """Look up a billing account's plan."""
        return f"Account {account_id}: annual plan, renews 2027-01-01, card on file."

    def call(name: str, call_id: str, **args: Any) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])

    replies: list[BaseMessage] = [
        call("search_kb", "call-1", query=AGENT_SEARCH),
        call("billing_account", "call-2", account_id="acct-4711"),
        AIMessage(content=ANSWER),
    ]
    return create_agent(ScriptedChatModel(responses=replies), tools=[search_kb, billing_account])


def build_llama_index_engine() -> Any:
    """A RetrieverQueryEngine over a fixed retriever, answered by a small CustomLLM."""
    from llama_index.core.llms import (
        CompletionResponse,
        CompletionResponseGen,
        CustomLLM,
        LLMMetadata,
    )
    from llama_index.core.llms.callbacks import llm_completion_callback
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    class FixedRetriever(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return [
                NodeWithScore(
                    node=TextNode(id_=c.id, text=c.text, metadata={"source": c.source}),
                    score=c.score,
                )
                for c in CHUNKS
            ]

    class FixedLLM(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(context_window=8192, num_output=256, model_name="bench-fixed")

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            return CompletionResponse(text=ANSWER)

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            def gen() -> CompletionResponseGen:
                text = ""
                for word in ANSWER.split(" "):
                    delta = word if not text else " " + word
                    text += delta
                    yield CompletionResponse(text=text, delta=delta)

            return gen()

    return RetrieverQueryEngine.from_args(FixedRetriever(), llm=FixedLLM())


# One configuration of ``overhead.py`` for one scenario, in a fresh process.
#
# ``overhead.py`` starts one of these per configuration, all at once, and has them take turns:
# each sets its configuration up, builds the app, warms up and prints ``@@READY``; then every
# ``run N`` line on stdin runs N requests and answers ``@@CHUNK`` with the CPU time
# (``time.process_time()``: all threads of this process, the span processor's included) used
# since READY. ``finish K`` flushes, adds the flush to the total, prints ``@@RESULT {json}`` and,
# with K > 0, first attaches an in-memory exporter and runs K more requests to count spans and
# attribute bytes per request. By hand::
#
#     printf 'run 200\nfinish 4\n' | .venv-bench/bin/python benchmarks/_overhead_apps.py \
#         --config ragtrace --scenario lc-invoke

import argparse
import asyncio
import gc
import importlib.util
import json
import sys
import time
import traceback
from collections.abc import Iterable

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
if importlib.util.find_spec("ragtrace") is None:  # not installed into this venv: use the checkout
    sys.path.insert(1, str(HERE.parent))


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
    "lc-agent": ("langchain", "LangChain agent turn"),
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
    if scenario == "lc-agent":
        return _agent_runner(tracing)
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


def _agent_runner(tracing: Tracing) -> tuple[Runner, Callable[[], Any]]:
    """One agent turn per query (``floor``: the chain's three hand-made spans around each
    turn, a lower bound only)."""
    agent = build_langchain_agent()
    cfg = tracing.langchain_config

    def turn(q: str) -> str:
        state = agent.invoke({"messages": [{"role": "user", "content": q}]}, cfg)
        return str(state["messages"][-1].content)

    call: Callable[[str], Any] = turn
    if tracing.floor_tracer is not None:
        call = _floor_sync(tracing.floor_tracer, turn, lambda _answer: _LC_DOCS)
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
