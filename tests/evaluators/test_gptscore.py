"""GPTScore: the catalogue's prompts, and values checked against log-softmax computed here.

Values are computed with the real packaged SmolLM2-135M (fast; its judgement is not the point):
the plumbing (which tokens are scored, both directions, averaging) is what is checked.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from ragtrace._backends.likelihood import CausalLM
from ragtrace._model import RagRecord
from ragtrace.evaluators import create
from ragtrace.evaluators._gptscore import (
    GptScore,
    GptScoreQa,
    GptScoreSummarization,
    GptScoreSummarizationRef,
    GptScoreTranslation,
)
from tests.evaluators.likelihood_fixtures import (
    SMOL,
    UNIFORM_CONTEXT,
    UNIFORM_VOCAB,
    reference_logprobs,
    smol_lm,
    uniform_model,
)

__all__ = ["smol_lm", "uniform_model"]  # the fixtures, imported for pytest

QUERY = "How long do I have to request a refund?"
ANSWER = "You can request a refund within 30 days of purchase."
REFERENCE = "Refunds are available within 30 days of purchase."


def record(**fields: Any) -> RagRecord:
    values = {"query": QUERY, "response": ANSWER, "reference": REFERENCE} | fields
    return RagRecord(trace_id="0" * 32, span_id="0" * 16, **values)


# The seed's templates, written out as the catalogue prints them.
SEED_QA_INTEREST = (
    "Answer the question based on the conversation between a human and AI.\n"
    "Question: Are the responses of AI interesting? (a) Yes. (b) No.\n"
    "Conversation: {history}\n"
    "Answer: Yes"
)
SEED_MT_FLUENCY = (
    "Rewrite the following text to make it more grammatical and well-written: {ref_hypo} "
    "In other words, {hypo_ref}"
)
SEED_SUM_REF_COVERAGE = (
    "Rewrite the following text with the same semantics. {ref_hypo} In other words, {hypo_ref}"
)
SEED_SUM_FLUENCY = (
    "Generate a fluent and grammatical summary for the following text: {src}\nTl;dr\n{target}"
)


def rendered(evaluator: GptScore, **fields: Any) -> list[tuple[str, str, str, str]]:
    prompts = evaluator.prompts(record(**fields))
    assert not isinstance(prompts, str), prompts
    return prompts


def test_qa_prompt_is_the_catalogue_template() -> None:
    prompts = rendered(GptScoreQa())
    assert [p[0] for p in prompts] == [
        "interest",
        "engagement",
        "understandability",
        "relevance",
        "specific",
        "correctness",
        "semantically_appropriate",
        "fluency",
    ]
    _, _, prefix, target = prompts[0]
    history = f"Human: {QUERY}\nAI: {ANSWER}"
    assert prefix + target == SEED_QA_INTEREST.format(history=history)
    # the scored tokens: "the average negative log likelihood is calculated from the tokens
    # Answer: Yes" (seed 004)
    assert target == "Answer: Yes" and prefix.endswith(f"Conversation: {history}\n")
    assert "Question: Are the responses of AI fluently written? (a) Yes. (b) No." in prompts[-1][2]


def test_translation_prompt_is_scored_both_ways() -> None:
    prompts = rendered(GptScoreTranslation(aspects=["fluency"]))
    assert [(p[0], p[1]) for p in prompts] == [
        ("fluency", "reference_to_answer"),
        ("fluency", "answer_to_reference"),
    ]
    forward, backward = prompts
    assert forward[2] + forward[3] == SEED_MT_FLUENCY.format(ref_hypo=REFERENCE, hypo_ref=ANSWER)
    assert backward[2] + backward[3] == SEED_MT_FLUENCY.format(ref_hypo=ANSWER, hypo_ref=REFERENCE)
    assert forward[2].endswith("In other words,") and forward[3] == " " + ANSWER
    assert [p[0] for p in rendered(GptScoreTranslation())][::2] == [
        "accuracy",
        "fluency",
        "multidimensional_quality",
    ]


def test_summarization_prompts_are_the_catalogue_templates() -> None:
    ref = rendered(GptScoreSummarizationRef())
    assert [p[0] for p in ref][::2] == [
        "semantic_coverage",
        "factuality",
        "informativeness",
        "coherence",
        "relevance",
        "fluency",
    ]
    assert ref[0][2] + ref[0][3] == SEED_SUM_REF_COVERAGE.format(
        ref_hypo=REFERENCE, hypo_ref=ANSWER
    )
    plain = rendered(GptScoreSummarization())
    assert [p[0] for p in plain] == [
        "semantic_coverage",
        "factuality",
        "consistency",
        "informativeness",
        "coherence",
        "relevance",
        "fluency",
    ]
    _, direction, prefix, target = plain[-1]
    assert direction == "" and prefix + target == SEED_SUM_FLUENCY.format(src=QUERY, target=ANSWER)
    assert prefix.endswith("Tl;dr\n") and target == ANSWER


def test_braces_in_the_text_are_kept_literally() -> None:
    odd = "Use {target} and {history} as written {"
    [(_, _, prefix, target)] = rendered(GptScoreSummarization(aspects=["fluency"]), query=odd)
    assert odd in prefix and target == ANSWER


def test_two_way_value_is_the_mean_of_both_directions_by_hand(smol_lm: CausalLM) -> None:
    evaluator = GptScoreTranslation(model=SMOL, aspects=["accuracy"])
    [score] = evaluator.evaluate(record())
    expected = []
    for _, _, prefix, target in rendered(evaluator):
        logprobs = reference_logprobs(smol_lm, prefix, target)
        expected.append(-sum(logprobs) / len(logprobs))
    assert score.name == "gptscore_translation.accuracy"
    assert score.value == pytest.approx(sum(expected) / 2, rel=1e-4)
    directions = score.details["directions"]
    assert directions["reference_to_answer"]["avg_nll"] == pytest.approx(expected[0], rel=1e-4)
    assert directions["answer_to_reference"]["avg_nll"] == pytest.approx(expected[1], rel=1e-4)
    assert directions["reference_to_answer"]["tokens"] == len(
        smol_lm.tokenizer(" " + ANSWER, add_special_tokens=False)["input_ids"]
    )
    assert score.direction == "lower_is_better" and score.threshold == math.inf
    assert score.passed is True and score.model == SMOL and score.details["primary"] is True


def test_qa_scores_the_answer_yes_tokens_only(smol_lm: CausalLM) -> None:
    """The catalogue's literal reading: the average NLL of the tokens of "Answer: Yes"."""
    evaluator = GptScoreQa(model=SMOL, aspects=["relevance", "fluency"], target="answer_yes")
    scores = evaluator.evaluate(record())
    assert [s.name for s in scores] == ["gptscore_qa.relevance", "gptscore_qa.fluency"]
    answer_yes = smol_lm.tokenizer("Answer: Yes", add_special_tokens=False)["input_ids"]
    for score, (_, _, prefix, target) in zip(scores, rendered(evaluator), strict=True):
        logprobs = reference_logprobs(smol_lm, prefix, target)
        assert len(logprobs) == len(answer_yes) > 1
        assert score.value == pytest.approx(-sum(logprobs) / len(logprobs), rel=1e-4)
        assert score.details["directions"]["forward"]["tokens"] == len(answer_yes)
        assert score.details["primary"] is False


def test_qa_targets_read_the_verdict_token_by_hand(smol_lm: CausalLM) -> None:
    """``yes`` is the NLL of " Yes" after "Answer:", ``yes_vs_no`` that token against " No";
    all three readings come from one forward pass and are kept in ``details``."""
    by_target = {
        target: GptScoreQa(model=SMOL, aspects=["fluency"], target=target).evaluate(record())[0]
        for target in ("answer_yes", "yes", "yes_vs_no")
    }
    [(_, _, prefix, _)] = rendered(GptScoreQa(aspects=["fluency"]))
    (yes,) = reference_logprobs(smol_lm, prefix + "Answer:", " Yes")
    (no,) = reference_logprobs(smol_lm, prefix + "Answer:", " No")
    assert by_target["yes"].value == pytest.approx(-yes, rel=1e-4)
    assert by_target["yes_vs_no"].value == pytest.approx(
        -math.log(math.exp(yes) / (math.exp(yes) + math.exp(no))), rel=1e-4
    )
    details = by_target["yes_vs_no"].details["directions"]["forward"]
    assert details["target"] == "yes_vs_no" and 0 < details["p_yes_vs_no"] < 1
    assert details["answer_yes"] == pytest.approx(by_target["answer_yes"].value, abs=1e-5)
    assert '-ln P(" Yes") against " No"' in (by_target["yes_vs_no"].explanation or "")
    with pytest.raises(ValueError, match="target must be one of answer_yes, yes, yes_vs_no"):
        GptScoreQa(target="no")
    assert GptScoreQa().target == "yes_vs_no"  # the default, after the probes of BENCHMARKS.md


@pytest.mark.parametrize(
    "cls", [GptScoreQa, GptScoreTranslation, GptScoreSummarizationRef, GptScoreSummarization]
)
def test_a_uniform_model_gives_ln_v_for_every_aspect(
    cls: type[GptScore], uniform_model: Path
) -> None:
    """Every token at probability 1/V: each aspect's average NLL is ln V, in both directions."""
    evaluator = cls(model=uniform_model, context_tokens=UNIFORM_CONTEXT)
    scores = evaluator.evaluate(record())
    assert [s.name for s in scores] == [f"{cls.name}.{a.key}" for a in cls.all_aspects]
    # gptscore_qa's default reads " Yes" against " No": equally likely, -ln(1/2).
    expected = math.log(2) if cls is GptScoreQa else math.log(UNIFORM_VOCAB)
    for score in scores:
        assert score.error is None and score.value == pytest.approx(expected)
        for found in score.details["directions"].values():
            assert found["avg_nll"] == pytest.approx(math.log(UNIFORM_VOCAB))


def test_copying_the_reference_is_likelier_than_an_unrelated_answer(smol_lm: CausalLM) -> None:
    evaluator = GptScoreSummarizationRef(model=SMOL, aspects=["semantic_coverage"])
    same, unrelated = evaluator.evaluate_batch(
        [
            record(response=REFERENCE),
            record(response="Purple elephants dance quietly on Tuesday mornings."),
        ]
    )
    assert same[0].value is not None and unrelated[0].value is not None
    assert same[0].value < unrelated[0].value


def test_missing_text_gives_an_error_score_per_aspect() -> None:
    evaluator = GptScoreTranslation(model=SMOL)
    scores = evaluator.evaluate(record(reference=None))
    assert [s.name for s in scores] == [
        "gptscore_translation.accuracy",
        "gptscore_translation.fluency",
        "gptscore_translation.multidimensional_quality",
    ]
    assert all(s.value is None and "non-empty reference" in (s.error or "") for s in scores)
    [blank] = GptScoreQa(model=SMOL, aspects=["fluency"]).evaluate(record(response="  \n"))
    assert blank.error == "gptscore_qa needs a non-empty response"


def test_bytes_and_huge_text_are_read_and_cut(smol_lm: CausalLM) -> None:
    evaluator = GptScoreSummarization(model=SMOL, aspects=["fluency"], max_chars=200)
    [score] = evaluator.evaluate(
        record(query=b"Refund rules \xff " * 10_000, response="caf\udce9 refunds take 30 days.")
    )
    assert score.error is None and score.value is not None and score.value > 0
    assert score.details["truncated"] is True


def test_registry_names_and_catalogue_defaults() -> None:
    expected = {
        "gptscore_qa": (GptScoreQa, 8, {"query", "response"}),
        "gptscore_translation": (GptScoreTranslation, 3, {"response", "reference"}),
        "gptscore_summarization_ref": (GptScoreSummarizationRef, 6, {"response", "reference"}),
        "gptscore_summarization": (GptScoreSummarization, 7, {"query", "response"}),
    }
    for name, (cls, aspects, requires) in expected.items():
        built = create(name)
        assert type(built) is cls and len(built.aspects) == aspects
        assert built.requires == requires and built.threshold == math.inf
        assert built.direction == "lower_is_better" and built.kind == "judge"
        assert built.model == "qwen2.5-coder-0.5b"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"aspects": ["nope"]}, "unknown aspect"),
        ({"aspects": "fluency"}, "non-empty list"),
        ({"aspects": []}, "non-empty list"),
        ({"max_chars": 0}, "max_chars"),
        ({"context_tokens": -1}, "context_tokens"),
    ],
)
def test_bad_options_fail_at_construction(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GptScoreQa(**options)
