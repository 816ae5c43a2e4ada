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

# Tracing configurations compared by ``overhead.py``; each is set up once in a fresh process.
#
# Every tracing configuration ends in an SDK ``TracerProvider`` with a ``BatchSpanProcessor`` around
# a no-op exporter, so the benchmark measures instrumentation, not export. ``setup(config,
# framework)`` raises ``NotInstalled`` when a configuration's packages are missing and
# ``Unsupported`` when a configuration has no integration for a framework.

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
