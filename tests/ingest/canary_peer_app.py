"""One LangChain request carrying personal data and a secret, traced by OpenInference's real
instrumentation and exported as OTLP/HTTP: run it in the peers' environment (``.venv-bench``)::

    .venv-bench/bin/python tests/ingest/canary_peer_app.py --endpoint URL --canary JSON

``--canary`` is a JSON object: ``query``, ``answer``, ``chunk`` (a document's text) and
``metadata`` (its metadata, nested). The app is LangChain's own fake chat model behind a
retriever that returns that document; ragtrace is not imported here.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--canary", required=True)
    args = parser.parse_args()
    canary: dict[str, Any] = json.loads(args.canary)

    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "canary-peer"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=args.endpoint)))
    LangChainInstrumentor().instrument(tracer_provider=provider)

    document = Document(id="doc-1", page_content=canary["chunk"], metadata=canary["metadata"])

    class OneDocument(BaseRetriever):
        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return [document]

    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context.\n\n{context}"), ("human", "{question}")]
    )
    llm = GenericFakeChatModel(messages=iter([AIMessage(content=canary["answer"])]))
    context = OneDocument() | RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs))
    chain = (
        {"context": context, "question": RunnablePassthrough()} | prompt | llm | StrOutputParser()
    )
    chain.invoke(canary["query"])
    if not provider.force_flush(30_000):
        print("export did not finish", file=sys.stderr)
        return 1
    provider.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
