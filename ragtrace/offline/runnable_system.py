"""A LangChain runnable as a ``ragtrace eval`` system, read through ragtrace's own capture.

``RunnableSystem(name, chain).ask(query)`` invokes the chain with the query string and a
``RagtraceCallbackHandler`` of a private ``Ragtrace`` (no evaluators, no exporters, its own
tracer provider and metrics registry, no port), so the answer carries what the capture saw: the
retrievers' documents in rank order (with ids and scores), the model's name, the final output
and the tokens the model reported (``gen_ai.usage.*``). This works whatever the chain returns (a
string, a message, a dict), which reading the return value could not. When no request was
captured (a runnable without callbacks), the return value is read instead
(``ragtrace.offline.answers.answer_from``).

Invocations are sequential; the capture's text limits are raised so nothing is cut offline.
"""

from __future__ import annotations

from typing import Any

from ragtrace.capture import semconv as sc
from ragtrace.model import RagRecord
from ragtrace.offline.answers import Answer, answer_from, usage_from

MAX_TEXT_CHARS = 10_000_000
MAX_CHUNKS = 10_000


class RunnableSystem:
    """A LangChain runnable, asked with ``invoke(query)``.

    Args:
        name: The system's name (also the capture's app name).
        runnable: Anything with LangChain's ``invoke(input, config=...)``.
    """

    def __init__(self, name: str, runnable: Any) -> None:
        from opentelemetry.sdk.trace import TracerProvider
        from prometheus_client import CollectorRegistry

        from ragtrace.config import Config
        from ragtrace.integrations.langchain import RagtraceCallbackHandler
        from ragtrace.runtime import Ragtrace

        self.name = name
        self.runnable = runnable
        config = Config(
            app=name,
            max_text_chars=MAX_TEXT_CHARS,
            max_chunk_chars=MAX_TEXT_CHARS,
            max_chunks=MAX_CHUNKS,
            evaluators=(),
        )
        self._ragtrace = Ragtrace(
            config,
            tracer_provider=TracerProvider(),
            registry=CollectorRegistry(),
            evaluators=[],
            export_evaluation_spans=False,
        )
        self._records: list[RagRecord] = []
        self._ragtrace.add_record_sink(self._records.append)
        self._config = {"callbacks": [RagtraceCallbackHandler(self._ragtrace)]}

    def ask(self, query: str) -> Answer:
        self._records.clear()
        result = self.runnable.invoke(query, config=self._config)
        if not self._records:
            return answer_from(result)
        record = self._records[-1]  # the root request ends last
        response = record.response
        if response is None:
            response = answer_from(result).response
        usage = usage_from(
            {
                "input_tokens": record.attributes.get(sc.GEN_AI_USAGE_INPUT_TOKENS),
                "output_tokens": record.attributes.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS),
            }
        )
        return Answer(response, record.chunks, record.model, usage)

    def close(self) -> None:
        self._ragtrace.shutdown()
