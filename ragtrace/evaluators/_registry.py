"""Evaluators by name: the built-in ones, ones registered in code, and third-party packages.

``create("looping", threshold=0.6)`` builds an evaluator; ``names()`` lists what can be built.
A package adds its own through the ``ragtrace.evaluators`` entry-point group::

    [project.entry-points."ragtrace.evaluators"]
    my_metric = "my_package.metrics:MyMetric"

Built-ins are named as ``"module:attribute"`` strings and imported only when created, so listing
names loads no model library. Each registration has a tier (``TIERS``): ``online`` (the default
suite, ``ONLINE_SUITE``, and what else is cheap enough for the request path), ``offline``
(reference-based, or too slow for live traffic) and ``judge`` (LLM judges). ``by_tier()`` groups
the names; ``ragtrace eval --list`` shows them so.
"""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragtrace.evaluators._base import Evaluator
from ragtrace.evaluators._judge.safety import SAFETY_JUDGES

ENTRY_POINT_GROUP = "ragtrace.evaluators"

Factory = Callable[..., Evaluator]
"""What ``register`` takes: a callable that builds an evaluator from its options (keyword
arguments, none for the defaults)."""

ONLINE = "online"
OFFLINE = "offline"
JUDGE = "judge"
# The catalogue's tiers, in the order listings show them, with their titles.
TIERS: dict[str, str] = {
    ONLINE: "Online (the default suite, and what is cheap enough for the request path)",
    OFFLINE: "Offline (against a reference, or too slow for live traffic)",
    JUDGE: "LLM judges (one or more judge-model calls per record)",
}


@dataclass(frozen=True)
class Registration:
    """How ``create(name)`` builds an evaluator: its factory, its tier and preset options."""

    target: Factory | str
    tier: str = OFFLINE
    options: Mapping[str, Any] = field(default_factory=dict)


def _tier(tier: str, targets: Mapping[str, str]) -> dict[str, Registration]:
    return {name: Registration(target, tier) for name, target in targets.items()}


_E = "ragtrace.evaluators"
BUILTIN: dict[str, Registration] = {
    **_tier(
        ONLINE,
        {
            # lexical, no model
            "looping": f"{_E}._looping:LoopingDetection",
            "tokens_presence": f"{_E}._tokens_presence:TokensPresence",
            "sensitive_data": f"{_E}._leakage.sensitive_data:SensitiveDataLeakage",
            # agents: the turn's tool calls and LLM calls (lexical, no model)
            "tool_errors": f"{_E}._agent_steps:ToolErrors",
            "repeated_tool_calls": f"{_E}._agent_steps:RepeatedToolCalls",
            "agent_steps": f"{_E}._agent_steps:AgentSteps",
            # small local models (the "models" extra)
            "pii_leakage": f"{_E}._leakage.pii:PiiLeakage",
            "toxicity": f"{_E}._toxicity:Toxicity",
            "language_mismatch": f"{_E}._language_mismatch:LanguageMismatch",
            "answer_relevance": f"{_E}._answer_relevance:AnswerRelevance",
            "answer_relevance_similarity": (
                f"{_E}._answer_relevance:AnswerRelevanceSentenceSimilarity"
            ),
            "context_relevance": f"{_E}._context_relevance:ContextRelevance",
            "groundedness": f"{_E}._groundedness:Groundedness",
            "faithfulness": f"{_E}._faithfulness:Faithfulness",
            "hallucination": f"{_E}._faithfulness:Hallucination",
        },
    ),
    **_tier(
        OFFLINE,
        {
            # against a reference (offline runs and labelled traffic)
            "bleu": f"{_E}._text_overlap:Bleu",
            "rouge": f"{_E}._text_overlap:Rouge",
            "classification": f"{_E}._classification:Classification",
            "answer_similarity": f"{_E}._reference:AnswerSimilarity",
            "answer_correctness": f"{_E}._reference:AnswerCorrectness",
            "context_recall": f"{_E}._retrieval_quality:ContextRecall",
            "context_entities_recall": f"{_E}._retrieval_quality:ContextEntitiesRecall",
            "context_precision": f"{_E}._retrieval_quality:ContextPrecision",
            "noise_sensitivity": f"{_E}._noise_sensitivity:NoiseSensitivity",
            "ragas": f"{_E}._ragas:Ragas",
            # summaries against their document (a sentence-by-sentence support matrix)
            "summarization_faithfulness": f"{_E}._summarization:SummarizationFaithfulness",
            "summarization_completeness": f"{_E}._summarization:SummarizationCompleteness",
            # likelihood under a causal model (the "likelihood" extra)
            "perplexity": f"{_E}._perplexity:Perplexity",
            "gptscore_qa": f"{_E}._gptscore:GptScoreQa",
            "gptscore_translation": f"{_E}._gptscore:GptScoreTranslation",
            "gptscore_summarization_ref": f"{_E}._gptscore:GptScoreSummarizationRef",
            "gptscore_summarization": f"{_E}._gptscore:GptScoreSummarization",
        },
    ),
    **_tier(
        JUDGE,
        {
            # the "judge" extra
            "judge_faithfulness": f"{_E}._judge.claims:JudgeFaithfulness",
            "judge_hallucination": f"{_E}._judge.claims:JudgeHallucination",
            "judge_answer_correctness": f"{_E}._judge.correctness:JudgeAnswerCorrectness",
            "judge_noise_sensitivity": f"{_E}._judge.noise:JudgeNoiseSensitivity",
            "judge_answer_relevancy": f"{_E}._judge.relevance:JudgeAnswerRelevancy",
            "judge_response_relevancy": f"{_E}._judge.relevance:JudgeResponseRelevancy",
            "judge_context_precision": f"{_E}._judge.context:JudgeContextPrecision",
            "judge_context_recall": f"{_E}._judge.context:JudgeContextRecall",
            "judge_context_relevancy": f"{_E}._judge.context:JudgeContextRelevancy",
            "judge_context_entities_recall": (
                f"{_E}._judge.context_entities:JudgeContextEntitiesRecall"
            ),
            "judge_geval": f"{_E}._judge.geval:GEval",
            "judge_byop": f"{_E}._judge.byop:Byop",
            "judge_summarization": f"{_E}._judge.summarization:JudgeSummarization",
        },
    ),
    # the ten critics and five checks: one row each in ragtrace.evaluators._judge.safety
    **{row.name: Registration(row.target, JUDGE, row.options) for row in SAFETY_JUDGES},
}

# The default online suite: reference-free, local models on CPU, no server and no API key, and
# every score within the alarm budget (docs/evaluators-online.md, "Alarms you can trust": at most
# 5% of normal answers failed, at least 80% of the bad answers it names caught; faithfulness keeps
# its own accuracy targets). ``toxicity`` cannot meet it (62% of toxic comments caught at 2.7% false
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
_registered: dict[str, Registration] = {}


def register(
    name: str, factory: Factory | str, *, replace: bool = False, tier: str = OFFLINE
) -> None:
    """Make ``create(name)`` build evaluators with ``factory`` (a callable or "module:attr").

    ``tier`` places it in the catalogue (one of ``TIERS``; entry points are ``offline``).
    """
    if not name or not isinstance(name, str):
        raise ValueError("evaluator name must be a non-empty string")
    if tier not in TIERS:
        raise ValueError(f"evaluator {name!r}: tier must be one of {', '.join(TIERS)}")
    with _lock:
        if not replace and name in _all_locked():
            raise ValueError(f"evaluator {name!r} is already registered (pass replace=True)")
        _registered[name] = Registration(factory, tier)


def unregister(name: str) -> None:
    """Forget an evaluator registered with ``register`` (built-ins stay)."""
    with _lock:
        _registered.pop(name, None)


def names() -> list[str]:
    """Every evaluator name ``create`` accepts, sorted."""
    with _lock:
        return sorted(_all_locked())


def tier(name: str) -> str:
    """The tier ``name`` is registered in (``online``, ``offline`` or ``judge``).

    Raises:
        KeyError: No such evaluator.
    """
    return _registration(name).tier


def by_tier() -> dict[str, list[str]]:
    """Every evaluator name by tier, in ``TIERS`` order, each list sorted."""
    with _lock:
        found = _all_locked()
    return {t: sorted(n for n, r in found.items() if r.tier == t) for t in TIERS}


def create(name: str, /, **options: Any) -> Evaluator:
    """Build the evaluator called ``name`` with ``options`` (its constructor's keyword arguments;
    they may include a ``name`` of their own, as ``judge_geval`` takes).

    Raises:
        KeyError: No such evaluator (the message lists the known names).
        TypeError, ValueError: Bad options, from the evaluator's constructor.
    """
    found = _registration(name)
    target = found.target
    made = _load(target) if isinstance(target, str) else target
    given = {**found.options, **options}
    for key in getattr(made, "components_by_name", ()):
        if isinstance(given.get(key), str | Mapping):
            given[key] = _component(name, key, given[key])
    built = made(**given)
    if not isinstance(built, Evaluator):
        raise TypeError(f"evaluator factory for {name!r} returned {type(built).__name__}")
    return built


def _component(owner: str, key: str, given: str | Mapping[str, Any]) -> Evaluator:
    """A component of the composite evaluator ``owner`` (one of its ``components_by_name``
    arguments) built from a registry name or a ``{name: ..., option: ...}`` mapping (options
    inline or under ``options``, as in a settings file's ``evaluators`` entry)."""
    entry: dict[str, Any] = {"name": given} if isinstance(given, str) else dict(given)
    name = entry.pop("name", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"{owner}: {key} needs the evaluator's 'name', got {given!r}")
    nested: Any = entry.pop("options", {})
    if not isinstance(nested, Mapping):
        raise ValueError(f"{owner}: {key}.options must be a mapping, got {nested!r}")
    try:
        return create(name, **{**entry, **nested})
    except KeyError as exc:
        raise ValueError(f"{owner}: {key}: {exc.args[0] if exc.args else exc}") from None
    except TypeError as exc:
        raise ValueError(f"{owner}: {key}: {exc}") from None


def factory(name: str) -> Factory:
    """What ``create(name)`` calls (an evaluator class, usually), imported but not called.

    A registration with preset options (a critic's category, a check's row) gives the class
    with those options bound (``functools.partial``).

    Raises:
        KeyError: No such evaluator.
    """
    found = _registration(name)
    loaded = _load(found.target) if isinstance(found.target, str) else found.target
    return functools.partial(loaded, **found.options) if found.options else loaded


def _registration(name: str) -> Registration:
    with _lock:
        found = _all_locked().get(name)
    if found is None:
        raise KeyError(f"unknown evaluator {name!r}; known: {', '.join(names())}")
    return found


def _all_locked() -> dict[str, Registration]:
    from importlib.metadata import entry_points  # ~20 ms: only once evaluators are named

    found: dict[str, Registration] = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, Registration(ep.value, OFFLINE))
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
