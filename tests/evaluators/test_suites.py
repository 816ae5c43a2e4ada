"""The online suite built whole, and the static profile through the real models.

The static profile needs the ``wordllama`` wheel and spaCy's small model (the ``models``
extra); without them the model tests skip locally and FAIL under ``CI=true``.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from ragtrace._backends.static_embeddings import MODEL_ID as STATIC_MODEL_ID
from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators._faithfulness import Faithfulness
from ragtrace.evaluators._faithfulness.detector import (
    RESPONSE_WEIGHTS,
    TASK_WEIGHTS,
    WEIGHTS,
    ShippedWeights,
    SupportDetector,
)
from ragtrace.evaluators._faithfulness.features import FEATURES
from ragtrace.evaluators._registry import ONLINE_SUITE
from ragtrace.evaluators._suites import PROFILES, online_suite, suite_options
from tests.components import missing_component

PASSAGES = (
    "The Aurora X2 router supports WPA3 and has four gigabit ports. It was released in 2021.",
    "Firmware updates are installed from the admin page under System > Update.",
)


def record(response: str, query: str = "What does the Aurora X2 support?") -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query=query,
        chunks=tuple(Chunk(text=p, id=str(i)) for i, p in enumerate(PASSAGES)),
        response=response,
    )


@pytest.fixture(scope="module")
def static_suite() -> list:
    if importlib.util.find_spec("wordllama") is None:
        missing_component("wordllama is not installed; pip install 'wordllama==0.4.0.post1'")
    return online_suite("static")


def test_default_profile_is_every_member_with_its_defaults() -> None:
    assert suite_options() == {name: {} for name in ONLINE_SUITE}
    assert list(suite_options("static")) == list(ONLINE_SUITE)


def test_static_profile_options_and_overrides_merge() -> None:
    options = suite_options("static", {"groundedness": {"threshold": 0.6}, "looping": {}})
    assert options["groundedness"] == {"model": "wordllama", "threshold": 0.6}
    assert options["faithfulness"] == {"embedding_model": "wordllama"}
    assert options["context_relevance"] == {"model": "wordllama"}
    assert options["pii_leakage"] == {} and options["answer_relevance"] == {}
    assert "toxicity" not in options  # below the alarm budget: opt-in
    # An override wins over the profile.
    assert suite_options("static", {"groundedness": {"model": None}})["groundedness"] == {
        "model": None
    }
    assert PROFILES["static"]["groundedness"] == {"model": "wordllama"}  # not mutated


def test_bad_profile_or_options_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown profile 'fast'; known: default, static, select"):
        suite_options("fast")
    with pytest.raises(ValueError, match="rouge, which is not in the online suite"):
        suite_options("static", {"rouge": {}})
    with pytest.raises(TypeError):
        online_suite("static", {"looping": {"no_such_option": 1}})


def test_static_weights_are_fitted_on_the_same_split_and_features() -> None:
    shipped = ShippedWeights.for_embedder("wordllama")
    assert (shipped.claim.name, shipped.response.name, shipped.tasks.name) == (
        "support_model_wordllama.json",
        "support_response_model_wordllama.json",
        "support_tasks_wordllama.json",
    )
    static = json.loads(shipped.claim.read_text())
    minilm = json.loads(WEIGHTS.read_text())
    assert tuple(static["features"]) == FEATURES
    assert static["info"]["embedding_model"] == "wordllama"
    assert static["info"]["split"] == minilm["info"]["split"]
    assert static["coef"] != minilm["coef"]
    tasks = json.loads(shipped.tasks.read_text())["tasks"]
    assert set(tasks) == set(json.loads(TASK_WEIGHTS.read_text())["tasks"])
    # Any other embedder gets the MiniLM files.
    other = ShippedWeights.for_embedder("sentence-transformers/other")
    assert (other.claim, other.response, other.tasks) == (WEIGHTS, RESPONSE_WEIGHTS, TASK_WEIGHTS)


def test_static_detector_loads_its_own_weights_and_refuses_the_crossencoder() -> None:
    detector = SupportDetector(embedding_model="wordllama")
    assert detector.model.info["embedding_model"] == "wordllama"
    assert detector.embedding_model == "wordllama"
    assert SupportDetector().embedding_model == "minilm"
    with pytest.raises(ValueError, match="detector='crossencoder' is fitted on the packaged"):
        SupportDetector(embedding_model="wordllama", detector="crossencoder")


def test_static_suite_scores_a_grounded_and_a_fabricated_answer(static_suite: list) -> None:
    by_name = {e.name: e for e in static_suite}
    assert list(by_name) == list(ONLINE_SUITE)
    grounded = record("The Aurora X2 supports WPA3. It has four gigabit ports.")
    invented = record(
        "The Aurora X2 supports WPA2 only. It has twelve ports and was released in 2015."
    )
    faithfulness = by_name["faithfulness"]
    assert isinstance(faithfulness, Faithfulness)
    (good,) = faithfulness.evaluate(grounded)
    (bad,) = faithfulness.evaluate(invented)
    assert good.details["embedding_model"] == "wordllama"
    assert good.passed is True and bad.passed is False
    assert good.value > bad.value + 0.3
    (grounded_score,) = by_name["groundedness"].evaluate(grounded)
    assert grounded_score.model == STATIC_MODEL_ID and grounded_score.error is None
    relevance = {s.name: s for s in by_name["context_relevance"].evaluate(grounded)}
    assert all(s.model == STATIC_MODEL_ID for s in relevance.values())
    # answer_relevance keeps MiniLM.
    (answer,) = by_name["answer_relevance"].evaluate(grounded)
    assert answer.model != STATIC_MODEL_ID and answer.error is None


def test_static_suite_finds_a_leaked_identifier_not_a_name(static_suite: list) -> None:
    pii = next(e for e in static_suite if e.name == "pii_leakage")
    named = record("Margaret Thompson in Berlin wrote about the WPA3 update.")
    assert all(s.passed is not False for s in pii.evaluate(named))
    leaked = record("Call Margaret Thompson on +1 415-555-0132 about the WPA3 update.")
    answer = next(s for s in pii.evaluate(leaked) if s.name == "pii_leakage.answer")
    assert answer.passed is False
    assert {f["type"] for f in answer.details["findings"]} == {"PHONE_NUMBER"}
