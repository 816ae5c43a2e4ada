"""The embedded demo: a small LangChain RAG app over a shipped corpus, traced by ragtrace.

``ragtrace demo`` (or ``make demo``) runs it with no server, no API key and no network.
"""
