"""Evaluators by name: the built-in ones, ones registered in code, and third-party packages.

``create("looping", threshold=0.6)`` builds an evaluator; ``names()`` lists what can be built.
A package adds its own through the ``ragtrace.evaluators`` entry-point group::

    [project.entry-points."ragtrace.evaluators"]
    my_metric = "my_package.metrics:MyMetric"

Built-ins are named as ``"module:attribute"`` strings and imported only when created, so listing
names loads no model library.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

from ragtrace.evaluators.base import Evaluator

ENTRY_POINT_GROUP = "ragtrace.evaluators"

Factory = Callable[..., Evaluator]

_E = "ragtrace.evaluators"
BUILTIN: dict[str, str] = {
    # lexical, no model
    "looping": f"{_E}.looping:LoopingDetection",
    "tokens_presence": f"{_E}.tokens_presence:TokensPresence",
    "sensitive_data": f"{_E}.sensitive_data:SensitiveDataLeakage",
    "bleu": f"{_E}.text_overlap:Bleu",
    "rouge": f"{_E}.text_overlap:Rouge",
    "classification": f"{_E}.classification:Classification",
    # local models (the "models" extra)
    "pii_leakage": f"{_E}.pii:PiiLeakage",
    "toxicity": f"{_E}.toxicity:Toxicity",
    "language_mismatch": f"{_E}.language_mismatch:LanguageMismatch",
    "answer_relevance": f"{_E}.answer_relevance:AnswerRelevance",
    "answer_relevance_similarity": f"{_E}.answer_relevance:AnswerRelevanceSentenceSimilarity",
    "context_relevance": f"{_E}.context_relevance:ContextRelevance",
    "groundedness": f"{_E}.groundedness:Groundedness",
    "faithfulness": f"{_E}.faithfulness:Faithfulness",
    "hallucination": f"{_E}.faithfulness:Hallucination",
    "summarization_faithfulness": f"{_E}.summarization:SummarizationFaithfulness",
    "summarization_completeness": f"{_E}.summarization:SummarizationCompleteness",
    # reference-based (offline runs and labelled traffic)
    "answer_similarity": f"{_E}.reference:AnswerSimilarity",
    "answer_correctness": f"{_E}.reference:AnswerCorrectness",
    "context_recall": f"{_E}.retrieval_quality:ContextRecall",
    "context_entities_recall": f"{_E}.retrieval_quality:ContextEntitiesRecall",
    "context_precision": f"{_E}.retrieval_quality:ContextPrecision",
    "noise_sensitivity": f"{_E}.noise_sensitivity:NoiseSensitivity",
    "ragas": f"{_E}.ragas:Ragas",
    # likelihood under a causal model (the "likelihood" extra)
    "perplexity": f"{_E}.perplexity:Perplexity",
    "gptscore_qa": f"{_E}.gptscore:GptScoreQa",
    "gptscore_translation": f"{_E}.gptscore:GptScoreTranslation",
    "gptscore_summarization_ref": f"{_E}.gptscore:GptScoreSummarizationRef",
    "gptscore_summarization": f"{_E}.gptscore:GptScoreSummarization",
    # LLM judges (the "judge" extra; any litellm model, else the local llama.cpp judge)
    "judge_faithfulness": f"{_E}.judge.claims:JudgeFaithfulness",
    "judge_hallucination": f"{_E}.judge.claims:JudgeHallucination",
    "judge_answer_correctness": f"{_E}.judge.correctness:JudgeAnswerCorrectness",
    "judge_noise_sensitivity": f"{_E}.judge.noise:JudgeNoiseSensitivity",
    "judge_answer_relevancy": f"{_E}.judge.relevance:JudgeAnswerRelevancy",
    "judge_response_relevancy": f"{_E}.judge.relevance:JudgeResponseRelevancy",
    "judge_context_precision": f"{_E}.judge.context:JudgeContextPrecision",
    "judge_context_recall": f"{_E}.judge.context:JudgeContextRecall",
    "judge_context_relevancy": f"{_E}.judge.context:JudgeContextRelevancy",
    "judge_context_entities_recall": f"{_E}.judge.context_entities:JudgeContextEntitiesRecall",
    "judge_geval": f"{_E}.judge.geval:GEval",
    "judge_byop": f"{_E}.judge.byop:Byop",
    "judge_harmful": f"{_E}.judge.critics:JudgeHarmful",
    "judge_malicious": f"{_E}.judge.critics:JudgeMalicious",
    "judge_bias": f"{_E}.judge.critics:JudgeBias",
    "judge_toxic": f"{_E}.judge.critics:JudgeToxic",
    "judge_hateful": f"{_E}.judge.critics:JudgeHateful",
    "judge_sexual": f"{_E}.judge.critics:JudgeSexual",
    "judge_violent": f"{_E}.judge.critics:JudgeViolent",
    "judge_insensitive": f"{_E}.judge.critics:JudgeInsensitive",
    "judge_self_harm": f"{_E}.judge.critics:JudgeSelfHarm",
    "judge_manipulative": f"{_E}.judge.critics:JudgeManipulative",
    "judge_contact_leakage": f"{_E}.judge.checks:JudgeContactLeakage",
    "judge_sexism": f"{_E}.judge.checks:JudgeSexism",
    "judge_stereotypes": f"{_E}.judge.checks:JudgeStereotypes",
    "judge_fairness_bias": f"{_E}.judge.checks:JudgeFairnessBias",
    "judge_language_mismatch": f"{_E}.judge.checks:JudgeLanguageMismatch",
    "judge_summarization": f"{_E}.judge.summarization:JudgeSummarization",
}

# The default online suite: reference-free, local models on CPU, no server and no API key, and
# every score within the alarm budget (docs/evaluators.md, "Alarms you can trust": at most 5% of
# normal answers failed, at least 80% of the bad answers it names caught; faithfulness keeps its
# own accuracy targets). ``toxicity`` cannot meet it (62% of toxic comments caught at 2.7% false
# alarms) and is opt-in.
ONLINE_SUITE: tuple[str, ...] = (
    "looping",
    "sensitive_data",
    "language_mismatch",
    "pii_leakage",
    "answer_relevance",
    "context_relevance",
    "groundedness",
    "faithfulness",
)

_lock = threading.Lock()
_registered: dict[str, Factory | str] = {}


def register(name: str, factory: Factory | str, *, replace: bool = False) -> None:
    """Make ``create(name)`` build evaluators with ``factory`` (a callable or "module:attr")."""
    if not name or not isinstance(name, str):
        raise ValueError("evaluator name must be a non-empty string")
    with _lock:
        if not replace and name in _all_locked():
            raise ValueError(f"evaluator {name!r} is already registered (pass replace=True)")
        _registered[name] = factory


def unregister(name: str) -> None:
    """Forget an evaluator registered with ``register`` (built-ins stay)."""
    with _lock:
        _registered.pop(name, None)


def names() -> list[str]:
    """Every evaluator name ``create`` accepts, sorted."""
    with _lock:
        return sorted(_all_locked())


def create(name: str, /, **options: Any) -> Evaluator:
    """Build the evaluator called ``name`` with ``options`` (its constructor's keyword arguments;
    they may include a ``name`` of their own, as ``judge_geval`` takes).

    Raises:
        KeyError: No such evaluator (the message lists the known names).
        TypeError, ValueError: Bad options, from the evaluator's constructor.
    """
    with _lock:
        factory = _all_locked().get(name)
    if factory is None:
        raise KeyError(f"unknown evaluator {name!r}; known: {', '.join(names())}")
    if isinstance(factory, str):
        factory = _load(factory)
    built = factory(**options)
    if not isinstance(built, Evaluator):
        raise TypeError(f"evaluator factory for {name!r} returned {type(built).__name__}")
    return built


def factory(name: str) -> Factory:
    """What ``create(name)`` calls (an evaluator class, usually), imported but not called.

    Raises:
        KeyError: No such evaluator.
    """
    with _lock:
        found = _all_locked().get(name)
    if found is None:
        raise KeyError(f"unknown evaluator {name!r}; known: {', '.join(names())}")
    return _load(found) if isinstance(found, str) else found


def _all_locked() -> dict[str, Factory | str]:
    from importlib.metadata import entry_points  # ~20 ms: only once evaluators are named

    found: dict[str, Factory | str] = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.value)
    found.update(_registered)
    return found


def _load(target: str) -> Factory:
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    factory = module
    for part in attr.split("."):
        factory = getattr(factory, part)
    if not callable(factory):
        raise TypeError(f"evaluator target {target!r} is not callable")
    return factory
