"""Framework integrations: one subpackage per framework (``langchain``, ``llama_index``).

Each owns its framework's capture (a callback handler, ``instrument()``) and its adapter
(``<framework>/_adapter.py``: a ``ragtrace.integrations._adapters.FrameworkAdapter``), through
which ``ragtrace eval`` and ``ragtrace.testing.ask`` call an app of the framework and read what
it returns. ``ADAPTERS`` lists the adapters by name, in the order they are asked; they are
loaded on first use, so importing ragtrace imports no framework.
"""

# Each framework's integration is a subpackage with its own ``__all__``.
__all__: list[str] = []

ADAPTERS = (
    "ragtrace.integrations.langchain._adapter:ADAPTER",
    "ragtrace.integrations.llama_index._adapter:ADAPTER",
)
