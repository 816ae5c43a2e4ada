"""A LangChain RAG assistant instrumented ONLY with OpenInference, exporting OTLP/HTTP.

No ragtrace in the app: its spans go to an OpenTelemetry Collector or straight to
``ragtrace ingest``, which rebuilds each request and scores it. Run it in an environment with
``langchain-core``, ``openinference-instrumentation-langchain`` and
``opentelemetry-exporter-otlp-proto-http`` (``make bench-env`` builds one: ``.venv-bench``)::

    .venv-bench/bin/python examples/openinference_app.py \\
        --endpoint http://127.0.0.1:4318/v1/traces --service support-bot --requests 6

Each request runs under a ``POST /chat`` server span, as a web framework's instrumentation would
make; the app prints one JSON line per request with its trace id. The model is LangChain's own
fake chat model, so no API key or network is needed; one answer leaks a phone number and one is
not supported by what was retrieved, so the scores have something to find.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re

HELP_CENTRE = {
    "refunds": "Refunds are paid back to the original card within five business days of the "
    "cancellation. Annual plans are refunded pro rata for the unused months.",
    "passwords": "To reset a password, open Settings, choose Security and click Reset password. "
    "The reset link expires after thirty minutes.",
    "exports": "Workspace owners can export all data as CSV from Settings, Data, Export. "
    "Exports of more than one gigabyte are sent by email as a download link.",
}
QUESTIONS_AND_ANSWERS = [
    ("How long does a refund take?", "A refund reaches your card within five business days."),
    ("How do I reset my password?", "Open Settings, choose Security and click Reset password."),
    (
        "Can I export my data?",
        "Yes: owners export CSV from Settings, Data, Export. Call Dana on "
        "+1 415 555 0132 if it fails.",
    ),
    ("When does the reset link expire?", "The reset link never expires and works forever."),
]


def build_chain() -> object:
    """retriever (keyword match over the help centre) -> prompt -> fake chat model -> text."""
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough

    class HelpCentreRetriever(BaseRetriever):
        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            words = set(re.findall(r"[a-z]+", query.lower()))
            scored = [
                (len(words & set(re.findall(r"[a-z]+", text.lower()))) / (len(words) or 1), key)
                for key, text in HELP_CENTRE.items()
            ]
            return [
                Document(id=f"kb-{key}", page_content=HELP_CENTRE[key], metadata={"score": s})
                for s, key in sorted(scored, reverse=True)[:2]
            ]

    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer using only this context.\n\n{context}"), ("human", "{question}")]
    )
    answers = itertools.cycle([a for _, a in QUESTIONS_AND_ANSWERS])
    model = GenericFakeChatModel(messages=answers)
    context = HelpCentreRetriever() | RunnableLambda(
        lambda docs: "\n\n".join(d.page_content for d in docs)
    )
    return (
        RunnableParallel(context=context, question=RunnablePassthrough())
        | prompt
        | model
        | StrOutputParser()
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--endpoint", default="http://127.0.0.1:4318/v1/traces")
    parser.add_argument("--service", default="support-bot")
    parser.add_argument("--requests", type=int, default=len(QUESTIONS_AND_ANSWERS))
    args = parser.parse_args()

    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace import SpanKind

    provider = TracerProvider(resource=Resource.create({"service.name": args.service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=args.endpoint)))
    LangChainInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("examples.web")
    chain = build_chain()
    for n in range(args.requests):
        question = QUESTIONS_AND_ANSWERS[n % len(QUESTIONS_AND_ANSWERS)][0]
        with tracer.start_as_current_span("POST /chat", kind=SpanKind.SERVER) as span:
            answer = chain.invoke(question)  # type: ignore[attr-defined]
            trace_id = format(span.get_span_context().trace_id, "032x")
        print(json.dumps({"trace_id": trace_id, "question": question, "answer": answer}))
    provider.shutdown()  # flushes the last spans
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
