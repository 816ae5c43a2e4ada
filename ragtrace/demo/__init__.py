"""The embedded demo: a small LangChain RAG app over a shipped corpus, traced by ragtrace.

``ragtrace demo`` (or ``make demo``) runs it with no server, no API key and no network.
Its modules are internal: ``_corpus`` (help-centre articles, questions), ``_retrieval`` (BM25),
``_generator`` (seeded answer behaviours), ``_app`` (the LangChain chain), ``_evaluators`` (what
scores it), ``_board`` / ``_view`` / ``_summary`` (what is shown), ``_tracing`` (spans, OTLP),
``_run``.
"""

# Its one part to import is ``ragtrace.demo.systems``; the command is ``ragtrace demo``.
__all__: list[str] = []
