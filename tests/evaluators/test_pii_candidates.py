"""The cheap pass that marks which sentences NER reads (``pii_leakage.ner_candidates_only``)."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators._leakage.candidates import candidate_spans, is_candidate, sentence_spans
from ragtrace.evaluators._leakage.pii import PiiLeakage

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def pieces(text: str) -> list[str]:
    return [text[a:b] for a, b in candidate_spans(text)]


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Refunds are processed within a week.", True),  # a capitalised content word starts it
        ("The team reviews every request.", False),
        ("If the form is signed, the team approves it.", False),
        ("The parcel leaves from Berlin.", True),
        ("Call us on 555 0100.", True),
        ("Write to help at example dot com or ada@example.com.", True),
        ("Each order gets an iPhone case.", True),
        ("", False),
        ("...", False),
    ],
)
def test_is_candidate(sentence: str, expected: bool) -> None:
    assert is_candidate(sentence) is expected


def test_runs_join_neighbouring_candidates_and_keep_offsets() -> None:
    text = (
        "The team reviews every request. Maria Lopez signs it. Paris is the hub. "
        "The form is kept for a year.\nThe office in Lyon closes at six."
    )
    spans = candidate_spans(text)
    assert pieces(text) == [
        "Maria Lopez signs it. Paris is the hub.",
        "The office in Lyon closes at six.",
    ]
    assert all(a < b <= c for (a, b), (c, _) in itertools.pairwise(spans))


def test_text_that_is_not_cased_prose_is_read_whole() -> None:
    text = "owens, duran and oneal signed it. the office is in lyon."
    assert candidate_spans(text) == [(0, len(text))]


@pytest.mark.parametrize("text", ["", "   ", "\n\n"])
def test_empty_text_has_no_candidate(text: str) -> None:
    assert candidate_spans(text) == []


def test_huge_and_odd_text() -> None:
    huge = "The team reviews every request. " * 20_000 + "Maria Lopez signs it."
    spans = candidate_spans(huge)
    assert [huge[a:b] for a, b in spans] == ["Maria Lopez signs it."]
    odd = "The caf\udce9 in M\udcfcnchen. The rest is plain."
    assert pieces(odd) == ["The caf\udce9 in M\udcfcnchen."]
    assert sentence_spans("one. two.  three") == [(0, 4), (5, 9), (11, 16)]


@pytest.fixture(scope="module")
def gated() -> PiiLeakage:
    return PiiLeakage(ner_candidates_only=True)


@pytest.fixture(scope="module")
def full() -> PiiLeakage:
    return PiiLeakage(ner=True)


def test_off_by_default(full: PiiLeakage) -> None:
    assert full.ner_candidates_only is False


@pytest.mark.parametrize("entity", ["DATE_TIME", "NRP", "URL"])
def test_types_without_a_sign_are_refused(entity: str) -> None:
    # "The team replies within five days." shows no capital past its first word nor a digit.
    with pytest.raises(ValueError, match=rf"would miss \['{entity}'\]"):
        PiiLeakage(entities=["PERSON", entity], ner_candidates_only=True)
    assert PiiLeakage(entities=["PERSON", entity]).ner_entities == ("PERSON", entity)


def test_organization_and_regex_types_are_accepted() -> None:
    gated = PiiLeakage(entities=["EMAIL_ADDRESS", "ORGANIZATION"], ner_candidates_only=True)
    assert gated.ner_entities == ("ORGANIZATION",)
    assert gated.regex_entities == ("EMAIL_ADDRESS",)


def test_gated_findings_point_at_the_right_text(gated: PiiLeakage) -> None:
    text = (
        "The team reviews every request. Refunds go back to the card. "
        "Maria Lopez approves refunds from Toronto. The rest is routine."
    )
    found = {(f.entity_type, text[f.start : f.end]) for f in gated.detect([text])[0]}
    assert ("PERSON", "Maria Lopez") in found
    assert ("LOCATION", "Toronto") in found


def test_gated_equals_full_on_the_benchmark_chunks(gated: PiiLeakage, full: PiiLeakage) -> None:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from _throughput_records import records
    finally:
        sys.path.remove(str(BENCHMARKS))
    chunks = [c["text"] for r in records("cold", 12, seed=3) for c in r["contexts"]]

    def keyed(evaluator: PiiLeakage) -> list[set[tuple[str, int, int]]]:
        return [{(f.entity_type, f.start, f.end) for f in fs} for fs in evaluator.detect(chunks)]

    expected = keyed(full)
    assert sum(map(len, expected)) > 0  # the chunks name people and places
    assert keyed(gated) == expected


def test_gated_scores_match_in_the_evaluator(gated: PiiLeakage, full: PiiLeakage) -> None:
    record = RagRecord(
        trace_id="a" * 32,
        span_id="b" * 16,
        query="Who approves refunds?",
        chunks=(
            Chunk("Refunds are issued within five days. Maria Lopez approves each one."),
            Chunk("The team reviews every request. It is kept for a year."),
        ),
        response="Maria Lopez approves refunds. Mail ada@example.com for help.",
    )
    assert [(s.name, s.value) for s in gated.evaluate(record)] == [
        (s.name, s.value) for s in full.evaluate(record)
    ]
    assert [s.value for s in gated.evaluate(record)] == [0.0, 0.0]
