"""Summarization faithfulness and completeness (SummaC-style), on the real support detector.

Known small matrices check the zero-shot and Conv reductions by hand; hand-made summaries whose
right answer is known check the evaluators end to end (packaged MiniLM and support weights).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators import create
from ragtrace.evaluators._summac import (
    CONV_WEIGHTS,
    ConvAggregator,
    completeness,
    histograms,
    support_matrices,
    zero_shot,
)
from ragtrace.evaluators._summarization import (
    SummarizationCompleteness,
    SummarizationFaithfulness,
)
from tests.evaluators._tiny_classifier import build_tiny_classifier

SOURCE = (
    "The city council approved a new public park on Monday. "
    "The park will cost two million dollars. "
    "Construction of the park starts in May. "
    "The mayor said the park will include a large playground. "
    "Local residents asked the council to plant more oak trees."
)
COPY = SOURCE
INVENTED = (
    "The city council approved a new public park on Monday. "
    "The park was designed by the architect Zaha Hadid and will cost 90 million euros."
)
ONE_POINT = "The mayor said the park will include a large playground."


def record(response: object, chunks: object = (Chunk(text=SOURCE),), **extra: object) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query=None,
        chunks=chunks,  # type: ignore[arg-type]
        response=response,  # type: ignore[arg-type]
        **extra,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module")
def faithful() -> SummarizationFaithfulness:
    return SummarizationFaithfulness()


@pytest.fixture(scope="module")
def complete() -> SummarizationCompleteness:
    return SummarizationCompleteness()


# -- the matrix and its reductions, on known matrices -----------------------------------------


KNOWN = np.array(
    [
        [0.9, 0.1, 0.2],
        [0.3, 0.2, 0.6],
        [0.1, 0.05, 0.4],
    ]
)  # 3 source sentences (rows) x 3 summary sentences (columns)


def test_zero_shot_is_max_over_source_then_mean_over_summary() -> None:
    value, per_sentence = zero_shot(KNOWN)
    assert per_sentence == pytest.approx([0.9, 0.2, 0.6])
    assert value == pytest.approx((0.9 + 0.2 + 0.6) / 3)


def test_zero_shot_reductions_are_options() -> None:
    value, per_sentence = zero_shot(KNOWN, source_reduction="mean", summary_reduction="min")
    assert per_sentence == pytest.approx([1.3 / 3, 0.35 / 3, 1.2 / 3])
    assert value == pytest.approx(0.35 / 3)
    assert zero_shot(KNOWN, summary_reduction="min")[0] == pytest.approx(0.2)
    with pytest.raises(ValueError, match="source_reduction must be one of max, mean"):
        zero_shot(KNOWN, source_reduction="median")
    with pytest.raises(ValueError, match="at least one row"):
        zero_shot(np.zeros((0, 2)))
    with pytest.raises(ValueError, match="finite"):
        zero_shot(np.array([[math.nan]]))


def test_histograms_count_share_and_presence_per_summary_sentence() -> None:
    # Bins of 0.5: [0, 0.5) and [0.5, 1]; 1.0 falls in the last bin.
    matrix = np.array([[0.9, 0.1], [1.0, 0.2], [0.1, 0.3]])
    assert histograms(matrix, 2, "count").tolist() == [[1, 2], [3, 0]]
    assert histograms(matrix, 2, "share") == pytest.approx(np.array([[1 / 3, 2 / 3], [1, 0]]))
    assert histograms(matrix, 2, "presence").tolist() == [[1, 1], [1, 0]]


def test_conv_is_a_linear_filter_over_each_histogram_then_the_mean() -> None:
    conv = ConvAggregator(kernel=(-2.0, 3.0), bias=0.5, histogram="presence")
    matrix = np.array([[0.9, 0.1], [0.2, 0.3]])
    value, per_sentence = conv.score(matrix)
    # Column 0 has entries in both bins: -2 + 3 + 0.5; column 1 only in the low bin: -2 + 0.5.
    expected = [1 / (1 + math.exp(-1.5)), 1 / (1 + math.exp(1.5))]
    assert per_sentence == pytest.approx(expected)
    assert value == pytest.approx(sum(expected) / 2)
    low = ConvAggregator(
        kernel=(-2.0, 3.0), bias=0.5, histogram="presence", summary_reduction="min"
    )
    assert low.score(matrix)[0] == pytest.approx(expected[1])


def test_completeness_counts_only_faithful_sentences_and_weighs_salience() -> None:
    similarity = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.0]])
    assert completeness(similarity, [True, True])[0] == pytest.approx((1 + 1 + 0.5) / 3)
    value, covered = completeness(similarity, [True, False])
    assert covered == pytest.approx([1.0, 0.0, 0.5])
    assert value == pytest.approx(0.5)
    assert completeness(similarity, [False, False])[0] == 0.0
    weighted = completeness(similarity, [True, False], salience=[1.0, 0.0, 1.0])[0]
    assert weighted == pytest.approx(0.75)
    with pytest.raises(ValueError, match="one faithful flag per summary sentence"):
        completeness(similarity, [True])


def test_the_real_detector_fills_the_matrix_source_by_summary() -> None:
    source = ["The park will cost two million dollars.", "Construction starts in May."]
    summary = ["Construction starts in May.", "The park costs 80 million euros.", "It opens."]
    (matrix,) = support_matrices([(source, summary)])
    assert matrix.shape == (2, 3)
    assert ((matrix >= 0) & (matrix <= 1)).all()
    # A copied sentence is supported best by the sentence it copies.
    assert matrix[1, 0] > matrix[0, 0]
    assert matrix[1, 0] > matrix[:, 1].max()
    assert support_matrices([]) == []
    with pytest.raises(ValueError, match="non-empty"):
        support_matrices([(["  "], ["x"])])


def test_an_nli_model_fills_the_matrix_with_its_entailment_premise_first(
    tmp_path: Path,
) -> None:
    # A tiny random MNLI-shaped classifier, saved and loaded like a user's model; the expected
    # cells come from running the saved model by hand (premise = source sentence).
    import torch
    import transformers

    folder = build_tiny_classifier(
        tmp_path / "nli", ["CONTRADICTION", "NEUTRAL", "ENTAILMENT"], multi_label=False
    )
    source = ["The park will cost two million dollars.", "Construction starts in May."]
    summary = ["Construction starts in May.", "The park costs 80 million euros.", "It opens."]
    (matrix,) = support_matrices([(source, summary)], nli_model=str(folder), threads=1)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
    expected = np.zeros((2, 3))
    for i, premise in enumerate(source):
        for j, hypothesis in enumerate(summary):
            with torch.no_grad():
                logits = model(**tokenizer(premise, hypothesis, return_tensors="pt")).logits
            expected[i, j] = float(torch.softmax(logits.double(), dim=-1)[0, 2])
    assert matrix == pytest.approx(expected, abs=1e-6)
    # Through the evaluator: zero-shot over that matrix, named in details.
    text = " ".join(source)
    evaluator = SummarizationFaithfulness(aggregation="zs", nli_model=str(folder), threads=1)
    [score] = evaluator.evaluate(record(" ".join(summary), (Chunk(text=text),)))
    assert score.error is None, score.error
    assert score.details["matrix"] == str(folder)
    assert score.value == pytest.approx(expected.max(axis=0).mean(), abs=1e-4)
    assert score.details["summac_conv"] is None


# -- the shipped Conv weights ------------------------------------------------------------------


def test_shipped_conv_weights_load_and_say_how_they_were_made() -> None:
    conv = ConvAggregator.load()
    assert conv.bins == len(conv.kernel) >= 2
    info = conv.info
    assert info["script"].startswith("training/train_summac_conv.py")
    assert isinstance(info["seed"], int)
    assert len(info["data_sha256"]) == 64
    assert "tuning part" in info["data"]
    assert info["split"]["locked_groups_sha256"]
    data = json.loads(CONV_WEIGHTS.read_text(encoding="utf-8"))
    assert ConvAggregator.from_dict(data) == conv


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe not json", "cannot read them"),
        (b"[1, 2]", "expected a JSON object"),
        (b'{"format": "other"}', "format must be"),
        (b'{"format": "ragtrace-summac-conv-1", "kernel": [1.0], "bias": 0}', "kernel must be"),
        (
            b'{"format": "ragtrace-summac-conv-1", "kernel": [1.0, "x"], "bias": 0}',
            "finite numbers",
        ),
        (
            b'{"format": "ragtrace-summac-conv-1", "kernel": [1, 2], "bias": 0, "bins": 3}',
            "bins is 3",
        ),
        (
            b'{"format": "ragtrace-summac-conv-1", "kernel": [1, 2], "bias": 0,'
            b' "histogram": "median"}',
            "histogram must be one of",
        ),
    ],
)
def test_a_bad_weights_file_is_a_clear_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "conv.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        ConvAggregator.load(path)
    with pytest.raises(ValueError, match=message):
        SummarizationFaithfulness(conv_weights=path)
    with pytest.raises(ValueError, match="cannot read them"):
        ConvAggregator.load(tmp_path / "missing.json")


def test_conv_weights_fitted_on_other_matrices_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "nli.json"
    weights = ConvAggregator((1.0, 2.0), 0.0, matrix="some-nli-model").to_dict()
    path.write_text(json.dumps(weights), encoding="utf-8")
    with pytest.raises(ValueError, match="fitted on 'some-nli-model' matrices"):
        SummarizationFaithfulness(conv_weights=path)
    with pytest.raises(ValueError, match="needs conv_weights fitted on that model"):
        SummarizationFaithfulness(nli_model="/models/nli")


# -- hand-made summaries whose answer is known -------------------------------------------------


def test_a_copied_summary_is_faithful_and_complete(
    faithful: SummarizationFaithfulness, complete: SummarizationCompleteness
) -> None:
    [f] = faithful.evaluate(record(COPY))
    [c] = complete.evaluate(record(COPY))
    assert f.passed is True and f.value is not None and f.value >= 0.75, f.details
    assert f.details["unsupported"] == 0
    assert [s["closest_source_sentence"] for s in f.details["sentences"]] == [0, 1, 2, 3, 4]
    assert c.passed is True and c.value == pytest.approx(1.0), c.details
    assert c.details["faithful_sentences"] == 5


def test_an_invented_fact_is_not_faithful(faithful: SummarizationFaithfulness) -> None:
    [copy] = faithful.evaluate(record(COPY))
    [invented] = faithful.evaluate(record(INVENTED))
    assert invented.passed is False, invented.details
    assert invented.value is not None and copy.value is not None
    assert invented.value < copy.value
    sentences = invented.details["sentences"]
    assert [s["supported"] for s in sentences] == [True, False]
    assert "Zaha Hadid" in invented.explanation
    # Zero-shot says the same, with its own value in details.
    zs = SummarizationFaithfulness(aggregation="zs").evaluate(record(INVENTED))[0]
    assert zs.value == pytest.approx(invented.details["summac_zs"], abs=1e-4)
    assert zs.passed is False


def test_one_point_of_five_is_incomplete(
    faithful: SummarizationFaithfulness, complete: SummarizationCompleteness
) -> None:
    [f] = faithful.evaluate(record(ONE_POINT))
    [c] = complete.evaluate(record(ONE_POINT))
    assert f.details["unsupported"] == 0  # what it says is right...
    assert c.passed is False and c.value is not None and c.value < 0.75, c.details  # ...not enough
    assert c.value < complete.evaluate(record(COPY))[0].value  # type: ignore[operator]
    assert len(c.details["least_covered"]) == 3
    # An invented summary's unfaithful sentence covers nothing.
    [bad] = complete.evaluate(record(INVENTED))
    assert bad.details["faithful_sentences"] == 1
    assert "Zaha Hadid" in bad.details["unfaithful"][0]


def test_batches_give_the_same_scores_as_single_records(
    faithful: SummarizationFaithfulness,
) -> None:
    records = [record(COPY), record(None), record(INVENTED)]
    batch = faithful.evaluate_batch(records)
    assert [len(scores) for scores in batch] == [1, 1, 1]
    assert batch[1][0].error is not None
    singles = [faithful.evaluate(rec)[0] for rec in records]
    assert [s[0].value for s in batch] == pytest.approx([s.value for s in singles])
    assert singles[1].value is None and singles[0].value > singles[2].value  # type: ignore[operator]


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["summarization_faithfulness", "summarization_completeness"])
@pytest.mark.parametrize(
    ("response", "chunks", "error"),
    [
        (None, (Chunk(text=SOURCE),), "non-empty response"),
        ("   ", (Chunk(text=SOURCE),), "non-empty response"),
        ("A summary.", (), "retrieved chunks with text"),
        ("A summary.", (Chunk(text=" \n "),), "retrieved chunks with text"),
        ("A summary.", 42, "chunks must be a sequence"),
    ],
)
def test_missing_text_is_an_error_score(
    name: str, response: object, chunks: object, error: str
) -> None:
    [score] = create(name).evaluate(record(response, chunks))
    assert score.value is None and score.name == name
    assert score.error is not None and error in score.error


@pytest.mark.parametrize("name", ["summarization_faithfulness", "summarization_completeness"])
def test_bytes_odd_objects_and_huge_text_are_read_safely(name: str) -> None:
    evaluator = create(name, max_source_sentences=20, max_summary_sentences=5)
    non_utf8 = SOURCE.encode("utf-8") + b" \xff\xfe broken bytes."
    [score] = evaluator.evaluate(record(b"The park will cost two million dollars.", (non_utf8,)))
    assert score.error is None and score.value is not None
    huge = " ".join(f"Sentence number {i} is about the park." for i in range(5000))
    [score] = evaluator.evaluate(record(huge, (Chunk(text=huge),)))
    assert score.error is None and 0.0 <= score.value <= 1.0  # type: ignore[operator]
    assert score.details["truncated"] is True
    assert score.details["source_sentences"] == 20
    [score] = evaluator.evaluate(record("\x00\ud800 odd", (Chunk(text="\x00 \ud800 odd"),)))
    assert score.error is None


def test_options_are_checked_when_built() -> None:
    with pytest.raises(ValueError, match="aggregation must be one of conv, zs"):
        SummarizationFaithfulness(aggregation="max")
    with pytest.raises(ValueError, match="summary_reduction must be one of mean, min"):
        SummarizationFaithfulness(summary_reduction="max")
    with pytest.raises(ValueError, match="support_threshold"):
        SummarizationCompleteness(support_threshold=1.5)
    with pytest.raises(ValueError, match="max_source_sentences must be a positive integer"):
        SummarizationCompleteness(max_source_sentences=0)


# -- registry ----------------------------------------------------------------------------------


def test_registry_builds_both_with_004_defaults() -> None:
    for name, cls in (
        ("summarization_faithfulness", SummarizationFaithfulness),
        ("summarization_completeness", SummarizationCompleteness),
    ):
        evaluator = create(name, threshold=0.6)
        assert type(evaluator) is cls and evaluator.name == name
        assert evaluator.threshold == 0.6 and cls().threshold == 0.75
        assert evaluator.kind == "model" and evaluator.direction == "higher_is_better"
        assert evaluator.requires == frozenset({"chunks", "response"})
    assert create("summarization_faithfulness", aggregation="zs").aggregation == "zs"
