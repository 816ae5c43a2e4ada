"""RAG quality tests of the demo's LangChain app: answers grounded in what was retrieved, on topic.

One test per case of ``rag_cases.jsonl``; each asks the app the case's question and asserts the
answer's scores with the evaluators that watch the app in production. See docs/testing.md::

    pytest examples/ci --ragtrace-scores scores.jsonl
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragtrace import RagRecord
from ragtrace.demo.systems import careful_chain
from ragtrace.testing import ask, assert_scores, parametrize_cases

CASES = Path(__file__).with_name("rag_cases.jsonl")


@pytest.fixture(scope="module")
def app() -> Any:
    """The app under test: your LangChain runnable, LlamaIndex query engine or function."""
    return careful_chain()


@parametrize_cases(CASES)
def test_answers_are_grounded_and_relevant(app: Any, case: RagRecord) -> None:
    record = ask(app, case)  # the app's answer, with the documents its retriever returned
    assert_scores(record, ["faithfulness", "answer_relevance"])
