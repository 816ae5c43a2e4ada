"""Bleu and Rouge: hand-computed n-gram values through sacrebleu and rouge-score, bad input."""

from __future__ import annotations

import math

import pytest

from ragtrace._model import Chunk, RagRecord, Score
from ragtrace.evaluators import create
from ragtrace.evaluators._text_overlap import Bleu, Rouge


def record(response: object, reference: object) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query="q",
        chunks=(Chunk("c"),),
        response=response,  # type: ignore[arg-type]
        reference=reference,  # type: ignore[arg-type]
    )


def scores(ev: Bleu | Rouge, response: object, reference: object) -> dict[str, Score]:
    return {s.name: s for s in ev.evaluate(record(response, reference))}


@pytest.fixture(scope="module")
def bleu() -> Bleu:
    return Bleu()


@pytest.fixture(scope="module")
def rouge() -> Rouge:
    return Rouge()


def test_declare_what_they_are() -> None:
    for name, cls in (("bleu", Bleu), ("rouge", Rouge)):
        ev = create(name)
        assert isinstance(ev, cls)
        assert ev.requires == frozenset({"response", "reference"})
        assert (ev.kind, ev.direction, ev.threshold) == ("lexical", "higher_is_better", 0.75)


def test_bleu_hand_computed_without_smoothing_effects(bleu: Bleu) -> None:
    # hyp "the cat sat on a mat", ref "the cat sat on the mat": same length (BP = 1);
    # p1 = 5/6, p2 = 3/5 (the cat, cat sat, sat on), p3 = 2/4, p4 = 1/3.
    got = scores(bleu, "the cat sat on a mat", "the cat sat on the mat")
    p = [5 / 6, 3 / 5, 2 / 4, 1 / 3]
    for n in (1, 2, 3, 4):
        expected = math.exp(sum(math.log(x) for x in p[:n]) / n)
        assert got[f"bleu.{n}"].value == pytest.approx(expected)
    assert got["bleu.2"].value == pytest.approx(math.sqrt(0.5))
    assert got["bleu.4"].value == pytest.approx((1 / 12) ** 0.25)  # 0.5373
    assert got["bleu.4"].details["precisions"] == pytest.approx(p, abs=1e-6)
    assert got["bleu.4"].details["brevity_penalty"] == pytest.approx(1.0)
    assert [got[f"bleu.{n}"].passed for n in (1, 2, 3, 4)] == [True, False, False, False]


def test_bleu_brevity_penalty(bleu: Bleu) -> None:
    # 3 of 6 reference words, all matching: every precision 1, BP = exp(1 - 6/3) = 1/e.
    got = scores(bleu, "the cat sat", "the cat sat on the mat")
    assert got["bleu.1"].value == pytest.approx(math.exp(-1))
    assert got["bleu.3"].value == pytest.approx(math.exp(-1))
    # effective order: a 3-word answer has no 4-gram, so BLEU-4 uses orders 1..3 only
    assert got["bleu.4"].value == pytest.approx(math.exp(-1))


def test_bleu_exp_smoothing_hand_computed() -> None:
    # hyp "the cat ran away", ref "the cat sat down": p1 = 2/4, p2 = 1/3, no 3- or 4-gram match.
    # exp smoothing: the k-th zero order counts 1/2^k matches: p3 = (1/2)/2, p4 = (1/4)/1.
    smoothed = scores(Bleu(orders=(4,)), "the cat ran away", "the cat sat down")
    assert list(smoothed) == ["bleu.4"]
    assert smoothed["bleu.4"].value == pytest.approx((1 / 2 * 1 / 3 * 1 / 4 * 1 / 4) ** 0.25)
    unsmoothed = scores(
        Bleu(orders=[4], smooth_method="none"), "the cat ran away", "the cat sat down"
    )
    assert unsmoothed["bleu.4"].value == 0.0


def test_bleu_identical_and_disjoint(bleu: Bleu) -> None:
    same = scores(bleu, "Paris is the capital of France.", "Paris is the capital of France.")
    assert all(s.value == pytest.approx(1.0) for s in same.values())
    disjoint = scores(bleu, "x y z", "a b c")
    assert all(s.value == 0.0 and s.passed is False for s in disjoint.values())


def test_bleu_case_and_options() -> None:
    assert scores(Bleu(orders=(1,)), "THE CAT", "the cat")["bleu.1"].value == 0.0
    assert scores(Bleu(orders=(1,), lowercase=True), "THE CAT", "the cat")[
        "bleu.1"
    ].value == pytest.approx(1.0)
    for bad in ({"orders": ()}, {"orders": (5,)}, {"orders": (True,)}, {"orders": "12"}):
        with pytest.raises(ValueError, match="orders"):
            Bleu(**bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="smooth_method"):
        Bleu(smooth_method="magic")
    with pytest.raises(ValueError, match="tokenize"):
        Bleu(tokenize="nonsense")
    with pytest.raises(ValueError, match="max_chars"):
        Bleu(max_chars=0)


def test_rouge_hand_computed(rouge: Rouge) -> None:
    # "the cat sat on the mat" vs "the cat is on the mat": 5 of 6 unigrams shared (P = R = 5/6),
    # bigrams shared: the cat, on the, the mat = 3 of 5; LCS "the cat on the mat" = 5 of 6.
    got = scores(rouge, "the cat sat on the mat", "the cat is on the mat")
    assert list(got) == ["rouge.1", "rouge.2", "rouge.l"]
    assert got["rouge.1"].value == pytest.approx(5 / 6)
    assert got["rouge.2"].value == pytest.approx(3 / 5)
    assert got["rouge.l"].value == pytest.approx(5 / 6)
    assert got["rouge.2"].passed is False and got["rouge.l"].passed is True


def test_rouge_precision_recall_are_answer_vs_reference(rouge: Rouge) -> None:
    # answer of 2 words inside a 4-word reference: precision 2/2, recall 2/4, F = 2/3.
    got = scores(rouge, "cat sat", "the cat sat down")["rouge.1"]
    assert (got.details["precision"], got.details["recall"]) == (1.0, 0.5)
    assert got.value == pytest.approx(2 / 3)


def test_rouge_stemming_option(rouge: Rouge) -> None:
    assert scores(rouge, "cats running", "cat runs")["rouge.1"].value == pytest.approx(1.0)
    assert scores(Rouge(stemmer=False), "cats running", "cat runs")["rouge.1"].value == 0.0


def test_rouge_unicode_tokenizer_scores_other_scripts(rouge: Rouge) -> None:
    # rouge-score's own tokenizer drops Cyrillic entirely; the unicode one keeps the words:
    # 2 of 4 answer words in a 2-word reference -> P 1/2, R 1, F 2/3.
    assert scores(rouge, "Привет мир как дела", "Привет мир")["rouge.1"].value == 0.0
    got = scores(Rouge(tokenizer="unicode"), "Привет мир как дела", "Привет мир")
    assert got["rouge.1"].value == pytest.approx(2 / 3)
    assert got["rouge.2"].value == pytest.approx(0.5)  # bigrams: P 1/3, R 1/1, F 1/2
    # and agrees with the default on English
    english = scores(Rouge(tokenizer="unicode"), "the cat sat on the mat", "the cat is on the mat")
    assert english["rouge.l"].value == pytest.approx(5 / 6)
    with pytest.raises(ValueError, match="tokenizer"):
        Rouge(tokenizer="whitespace")


@pytest.mark.parametrize("cls", [Bleu, Rouge])
@pytest.mark.parametrize(
    "response, reference",
    [("an answer", None), ("an answer", "   "), (None, "a reference"), ("", "a reference")],
)
def test_missing_text_gives_error_scores(cls: type, response: object, reference: object) -> None:
    ev = cls()
    got = ev.evaluate(record(response, reference))
    assert [s.name for s in got] == list(ev.names)
    assert all(s.value is None and s.error and "needs a non-empty" in s.error for s in got)
    # the pipeline skips such records before calling: they lack a required field
    assert ev.missing_fields(record(response, reference))


@pytest.mark.parametrize("cls", [Bleu, Rouge])
def test_bytes_and_lone_surrogates(cls: type) -> None:
    ev = cls()
    as_bytes = {s.name: s.value for s in ev.evaluate(record(b"the cat sat", "the cat sat"))}
    assert all(v == pytest.approx(1.0) for v in as_bytes.values())
    odd = ev.evaluate(record("the cat \ud800 sat", b"the cat \xff sat"))
    assert all(s.error is None and s.value is not None and 0 <= s.value <= 1 for s in odd)


@pytest.mark.parametrize("cls", [Bleu, Rouge])
def test_huge_text_is_capped(cls: type) -> None:
    huge = "the quick brown fox jumps over the lazy dog " * 100_000  # 4.4 MB
    ev = cls()
    got = ev.evaluate(record(huge, huge[:500]))
    assert all(s.details["truncated"] is True and s.error is None for s in got)
    short = ev.evaluate(record("the quick brown fox", "the quick brown fox"))
    assert all(s.details["truncated"] is False for s in short)
