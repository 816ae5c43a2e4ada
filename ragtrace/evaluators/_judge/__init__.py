"""LLM-judge evaluators: metrics only a language model can judge, through ``ragtrace._judges``.

Each module holds one family (claims, relevance, context, critics, checks, G-Eval, your own
prompt); ``base`` has what they share, including ``set_default_judge``. They are built by name
through ``ragtrace.evaluators.create("judge_...")``.
"""

from __future__ import annotations

# The judges are built by name (``ragtrace.evaluators.create``), not imported from here.
__all__: list[str] = []
