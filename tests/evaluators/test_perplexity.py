"""Perplexity on the real packaged SmolLM2-135M, checked against log-softmax computed here."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pytest

from ragtrace._backends._loading import MissingExtraError
from ragtrace._backends.likelihood import CausalLM, get_causal_lm
from ragtrace._model import RagRecord
from ragtrace.evaluators import create
from ragtrace.evaluators._perplexity import DEFAULT_THRESHOLD, Perplexity, causal_lm
from tests.evaluators.likelihood_fixtures import (
    SMOL,
    UNIFORM_CONTEXT,
    UNIFORM_VOCAB,
    reference_logprobs,
    smol_lm,
    uniform_model,
)

__all__ = ["smol_lm", "uniform_model"]  # the fixtures, imported for pytest

FLUENT = "The cat sat on the mat and looked out of the window at the birds in the garden."
SCRAMBLED = "garden window the cat birds of on looked sat out mat the at and in the The."


def record(response: Any) -> RagRecord:
    return RagRecord(trace_id="0" * 32, span_id="0" * 16, query=None, response=response)


@pytest.fixture(scope="module")
def perplexity(smol_lm: CausalLM) -> Perplexity:
    return Perplexity(model=SMOL)


def test_value_is_exp_of_mean_nll_computed_by_hand(
    smol_lm: CausalLM, perplexity: Perplexity
) -> None:
    [score] = perplexity.evaluate(record(FLUENT))
    expected = reference_logprobs(smol_lm, "", FLUENT)
    assert score.value == pytest.approx(math.exp(-sum(expected) / len(expected)), rel=1e-4)
    assert (
        score.details["tokens"] == len(expected) == len(smol_lm.tokenizer(FLUENT)["input_ids"]) - 1
    )
    assert score.details["mean_logprob"] == pytest.approx(sum(expected) / len(expected), abs=1e-4)
    assert score.details["truncated"] is False and score.details["windows"] == 1
    assert score.model == SMOL and score.direction == "lower_is_better"
    assert score.threshold == DEFAULT_THRESHOLD and score.passed is (score.value <= 250)
    assert score.error is None and "perplexity" in (score.explanation or "")


def test_fluent_text_is_less_perplexing_than_the_same_words_scrambled(
    perplexity: Perplexity,
) -> None:
    fluent, scrambled = perplexity.evaluate_batch([record(FLUENT), record(SCRAMBLED)])
    assert fluent[0].value is not None and scrambled[0].value is not None
    assert fluent[0].value * 10 < scrambled[0].value
    assert fluent[0].passed is True and scrambled[0].passed is False


def test_batch_padding_does_not_change_values(perplexity: Perplexity) -> None:
    alone = perplexity.evaluate(record(SCRAMBLED))[0].value
    batched = perplexity.evaluate_batch([record(FLUENT + " " + FLUENT), record(SCRAMBLED)])
    assert batched[1][0].value == pytest.approx(alone, rel=1e-4)


def test_long_answers_slide_and_cap(smol_lm: CausalLM) -> None:
    text = " ".join([FLUENT] * 6)
    n = len(smol_lm.tokenizer(text)["input_ids"])
    [slid] = Perplexity(model=SMOL, context_tokens=32).evaluate(record(text))
    assert slid.details["windows"] > 1 and slid.details["tokens"] == n - 1
    assert slid.details["truncated"] is False and slid.value is not None
    # Each window keeps 16 tokens of context, so later tokens are predicted worse than with all.
    [whole] = Perplexity(model=SMOL).evaluate(record(text))
    assert whole.details["windows"] == 1 and whole.value is not None and whole.value < slid.value
    [capped] = Perplexity(model=SMOL, max_tokens=20).evaluate(record(text))
    assert capped.details["tokens"] == 19
    assert capped.details["truncated"] is True and 0 < capped.details["dropped_tokens"] < n - 20


def test_a_uniform_model_gives_its_vocabulary_size(uniform_model: Path) -> None:
    """Every token at probability 1/V: the perplexity is V, whatever the text and windows."""
    text = " ".join([FLUENT] * 4)  # about 80 tokens: more than the 64 positions it reads
    [[short], [long]] = Perplexity(
        model=uniform_model, context_tokens=UNIFORM_CONTEXT
    ).evaluate_batch([record(FLUENT), record(text)])
    assert short.value == pytest.approx(UNIFORM_VOCAB, rel=1e-5)
    assert short.details["mean_logprob"] == pytest.approx(-math.log(UNIFORM_VOCAB), rel=1e-6)
    assert long.value == pytest.approx(UNIFORM_VOCAB, rel=1e-5) and long.details["windows"] == 2
    assert short.model == str(uniform_model) and short.passed is False
    with pytest.raises(ValueError, match="exceeds"):  # more than the model's 64 positions
        Perplexity(model=uniform_model).evaluate(record(FLUENT))


@pytest.mark.parametrize(
    "bad",
    [None, "", "   \n", "Hi", b"", 0.0],
    ids=["none", "empty", "blank", "one", "no-bytes", "0"],
)
def test_nothing_to_score_is_an_error_score(perplexity: Perplexity, bad: Any) -> None:
    [score] = perplexity.evaluate(record(bad))
    if bad == 0.0:  # an odd object is read as its text: "0.0" has tokens to score
        assert score.error is None and score.value is not None
    else:
        assert score.value is None and "two tokens or more" in (score.error or "")


@pytest.mark.parametrize(
    "odd", [b"caf\xc3\xa9 au lait \xff\xfe is served here", "caf\udce9 au lait is served here"]
)
def test_bytes_and_lone_surrogates_are_read_as_text(perplexity: Perplexity, odd: Any) -> None:
    [score] = perplexity.evaluate(record(odd))
    assert score.error is None and score.value is not None and score.value > 1


def test_huge_answer_is_cut_before_tokenising(perplexity: Perplexity) -> None:
    huge = "word " * 2_000_000  # 10 MB
    [score] = Perplexity(model=SMOL, max_tokens=64).evaluate(record(huge))
    assert score.details["tokens"] == 63 and score.details["truncated"] is True


def test_registry_builds_it_with_the_catalogue_direction() -> None:
    built = create("perplexity", threshold=0.5)
    assert isinstance(built, Perplexity)
    assert built.threshold == 0.5 and built.direction == "lower_is_better"
    assert built.kind == "model" and built.bounded is False and built.requires == {"response"}
    assert create("perplexity").threshold == DEFAULT_THRESHOLD


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"context_tokens": 0}, "context_tokens"),
        ({"max_tokens": True}, "max_tokens"),
        ({"max_tokens": "9"}, "max_tokens"),
    ],
)
def test_bad_options_fail_at_construction(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Perplexity(**options)


def test_unknown_model_path_is_a_clear_error(tmp_path: Any) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        get_causal_lm(tmp_path / "nothing.gguf")
    (tmp_path / "weights.bin").write_bytes(b"\0")
    with pytest.raises(FileNotFoundError, match=r"not a \.gguf"):
        get_causal_lm(tmp_path / "weights.bin")
    with pytest.raises(ValueError, match="exceeds"):
        causal_lm(SMOL, threads=None, context_tokens=10_000_000)


def test_missing_extra_names_the_likelihood_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gguf", None)  # "not installed" for importlib
    with pytest.raises(MissingExtraError, match=r"pip install 'ragtrace\[likelihood\]'") as info:
        causal_lm(SMOL, threads=7, context_tokens=1024)  # a (model, threads) not loaded yet
    assert info.value.module == "gguf" and info.value.extra == "likelihood"
