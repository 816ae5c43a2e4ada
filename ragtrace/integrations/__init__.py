"""Framework integrations; the only places that import LangChain or LlamaIndex."""
