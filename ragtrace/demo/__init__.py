"""The embedded demo: a small LangChain RAG app over a shipped corpus, traced by ragtrace.

``ragtrace demo`` (or ``make demo``) runs it with no server, no API key and no network.
Modules: ``corpus`` (help-centre articles, questions), ``retrieval`` (BM25), ``generator``
(seeded answer behaviours), ``app`` (the LangChain chain), ``evaluators`` (what scores it),
``board`` / ``view`` / ``summary`` (what is shown), ``tracing`` (spans, OTLP), ``run``.
"""

# Its one part to import is ``ragtrace.demo.systems``; the command is ``ragtrace demo``.
__all__: list[str] = []
