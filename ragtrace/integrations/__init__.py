"""Framework integrations: ``ragtrace.integrations.langchain`` and ``.llama_index``."""

# Each framework's integration is a subpackage with its own ``__all__``.
__all__: list[str] = []
