"""Test a RAG app with the evaluators that watch it in production: assertions and a pytest plugin.

::

    from ragtrace.testing import ask, assert_scores, parametrize_cases
    from my_app import chain

    @parametrize_cases("tests/rag_cases.jsonl")       # one test per case, ids from the cases
    def test_answers_stay_grounded(case):
        record = ask(chain, case)                      # the app's answer and what it retrieved
        assert_scores(record, ["faithfulness", "answer_relevance"])

``assert_scores`` raises an ``AssertionError`` naming every failed score with its value,
threshold and explanation. The pytest plugin (``ragtrace.testing.plugin``, active whenever
ragtrace is installed) prints one table of every score asserted in the session, writes the
scores file ``ragtrace report`` reads (``--ragtrace-scores PATH``), fails the session on a gate
(``--ragtrace-fail-if 'faithfulness.pass_rate < 0.9'``) and keeps judge answers in the pytest
cache, so a re-run asks the judge nothing it asked before. See docs/testing.md.

Importing this package loads nothing else: the names below are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragtrace._lazy_exports import lazy_exports

if TYPE_CHECKING:
    from ragtrace.testing._apps import ask
    from ragtrace.testing._assertions import ScoresAssertionError, assert_scores
    from ragtrace.testing._datasets import load_cases, parametrize_cases

_HOMES = {
    "ScoresAssertionError": "ragtrace.testing._assertions",
    "ask": "ragtrace.testing._apps",
    "assert_scores": "ragtrace.testing._assertions",
    "load_cases": "ragtrace.testing._datasets",
    "parametrize_cases": "ragtrace.testing._datasets",
}
__all__ = ["ScoresAssertionError", "ask", "assert_scores", "load_cases", "parametrize_cases"]


__getattr__ = lazy_exports(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
