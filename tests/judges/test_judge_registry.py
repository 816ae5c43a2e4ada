"""Every judge evaluator is registered, builds without calling a judge, and documents itself."""

from __future__ import annotations

import subprocess
import sys

from ragtrace.evaluators import _registry as registry
from ragtrace.evaluators._judge.base import JudgeEvaluator

JUDGES = sorted(name for name in registry.BUILTIN if name.startswith("judge_"))


def test_the_catalogue_of_judges_is_complete():
    expected = {
        "judge_faithfulness",
        "judge_hallucination",
        "judge_answer_correctness",
        "judge_noise_sensitivity",
        "judge_answer_relevancy",
        "judge_response_relevancy",
        "judge_context_precision",
        "judge_context_recall",
        "judge_context_relevancy",
        "judge_context_entities_recall",
        "judge_geval",
        "judge_byop",
        "judge_contact_leakage",
        "judge_sexism",
        "judge_stereotypes",
        "judge_fairness_bias",
        "judge_language_mismatch",
        "judge_summarization",
    } | {
        f"judge_{c}"
        for c in (
            "harmful",
            "malicious",
            "bias",
            "toxic",
            "hateful",
            "sexual",
            "violent",
            "insensitive",
            "self_harm",
            "manipulative",
        )
    }
    assert set(JUDGES) == expected


def test_every_safety_row_is_registered_as_a_judge_and_built_with_its_row():
    from ragtrace.evaluators._judge.safety import SAFETY_JUDGES

    assert len(SAFETY_JUDGES) == 15
    for row in SAFETY_JUDGES:
        assert registry.tier(row.name) == registry.JUDGE, row.name
        made = registry.create(row.name, judge="openai/not-called")
        assert made.name == row.name and made.direction == row.direction, row.name
        assert made.threshold == row.threshold and made.requires == set(row.requires), row.name


def test_every_judge_builds_lazily_with_a_name_kind_and_docstring():
    needs_options = {
        "judge_geval": {"criteria": "Is the answer polite?"},
        "judge_byop": {"prompt": "Is {answer} polite? Answer true or false."},
    }
    for name in JUDGES:
        evaluator = registry.create(name, judge="openai/not-called", **needs_options.get(name, {}))
        assert isinstance(evaluator, JudgeEvaluator), name
        assert evaluator.kind == "judge" and evaluator.name.startswith("judge_"), name
        assert evaluator.requires, name
        assert (type(evaluator).__doc__ or "").strip(), name
        assert evaluator.judge.model_name == "openai/not-called"


def test_importing_ragtrace_and_the_judges_loads_no_llm_library():
    code = (
        "import sys, ragtrace, ragtrace._judges, ragtrace.evaluators._judge.claims;"
        "print(sorted(m for m in ('litellm', 'xllamacpp', 'openai') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
