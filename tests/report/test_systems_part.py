"""The report's cross-score parts, by hand: retrieval versus generation failures, latency and
cost insights, and the classification leaderboard against the pure report function."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragtrace.evaluators._classification_metrics import confusion_report
from tests.report.lines import (
    LABELS,
    PREDICTED,
    line,
    score,
    three_systems,
    unanswered_line,
)
from tests.report.lines import (
    report_of as shared_report_of,
)


def report_of(tmp_path: Path, rows: list[Any], **options: Any) -> dict[str, Any]:
    return shared_report_of(tmp_path, rows, resamples=200, **options)


def test_retrieval_and_generation_failures_per_system(tmp_path: Path) -> None:
    # (context passes, answer passes) per case: "r" retrieves badly on q1 and q2 and answers
    # badly on q1 only; "g" retrieves well but answers badly on q3.
    plan = {
        "r": {"q1": (0, 0), "q2": (0, 1), "q3": (1, 1), "q4": (1, 1)},
        "g": {"q1": (1, 1), "q2": (1, 1), "q3": (1, 0), "q4": (1, 1)},
    }
    rows = [
        line(
            system,
            case,
            [
                score("tokens_presence.context", float(context), 0.5),
                score("tokens_presence.answer", float(answer), 0.5),
                score("looping.unique_sentences", 1.0, 0.75),
            ],
        )
        for system, cases in plan.items()
        for case, (context, answer) in cases.items()
    ]
    report = report_of(tmp_path, rows)
    assert report["failure_sources"] == {
        "r": {
            "cases": 4, "retrieval_cases": 4, "unanswered": 0,
            "retrieval_failures": 2, "generation_failures": 1,
            "generation_failures_with_good_retrieval": 0,
            "retrieval_failure_rate": 0.5, "generation_failure_rate": 0.25,
        },
        "g": {
            "cases": 4, "retrieval_cases": 4, "unanswered": 0,
            "retrieval_failures": 0, "generation_failures": 1,
            "generation_failures_with_good_retrieval": 1,
            "retrieval_failure_rate": 0.0, "generation_failure_rate": 0.25,
        },
    }  # fmt: skip
    kinds = {i["kind"]: i["system"] for i in report["insights"]}
    assert kinds["best_retrieval"] == "g" and kinds["worst_retrieval"] == "r"


def test_failures_compare_systems_on_the_same_cases(tmp_path: Path) -> None:
    # Three systems on one retriever, which fails on the three hard cases h1..h3; "careful"
    # answers everything (and fails to generate on h1), "quick" times out on the hard cases,
    # "also" answers everything well.
    cases = [f"h{i}" for i in (1, 2, 3)] + [f"e{i}" for i in range(1, 8)]

    def answered(system: str, case: str) -> dict[str, Any]:
        context = 0.0 if case.startswith("h") else 1.0
        answer = 0.0 if (system, case) == ("careful", "h1") else 1.0
        scores = [
            score("tokens_presence.context", context, 0.5),
            score("tokens_presence.answer", answer, 0.5),
        ]
        return line(system, case, scores)

    rows = [answered(s, c) for s in ("careful", "also") for c in cases]
    rows += [
        unanswered_line("quick", c, ["tokens_presence"])
        if c.startswith("h")
        else answered("quick", c)
        for c in cases
    ]
    report = report_of(tmp_path, rows)
    sources = report["failure_sources"]
    # The same retriever fails equally often for all: compared on the 7 cases all answered.
    assert {s: (v["retrieval_failures"], v["retrieval_cases"]) for s, v in sources.items()} == {
        "careful": (0, 7), "also": (0, 7), "quick": (0, 7),
    }  # fmt: skip
    # Generation on the 10 cases all were asked: quick's 3 unanswered count as failures.
    assert {s: (v["generation_failures"], v["cases"]) for s, v in sources.items()} == {
        "careful": (1, 10), "also": (0, 10), "quick": (3, 10),
    }  # fmt: skip
    assert sources["quick"]["unanswered"] == 3
    assert not {"best_retrieval", "worst_retrieval"} & {i["kind"] for i in report["insights"]}
    paired = report_of(tmp_path, rows, unanswered="paired")["failure_sources"]
    assert {s: (v["generation_failures"], v["cases"]) for s, v in paired.items()} == {
        "careful": (0, 7), "also": (0, 7), "quick": (0, 7),
    }  # fmt: skip


def test_no_retrieval_score_no_split(tmp_path: Path) -> None:
    rows = [line("a", "q1", [score("faithfulness", 0.9)])]
    assert report_of(tmp_path, rows)["failure_sources"] == {}


def test_latency_and_cost_per_system(tmp_path: Path) -> None:
    report = report_of(tmp_path, three_systems())
    answers = report["answers"]
    assert answers["model-b"]["latency"] == {"n": 6, "mean_s": 0.3, "median_s": 0.3, "p95_s": 0.3}
    assert answers["model-c"]["latency"]["n"] == 3  # its unanswered line reports none
    assert answers["model-a"]["usage"] == {
        "input_tokens": 500.0, "input_tokens_n": 4, "output_tokens": 40.0,
        "output_tokens_n": 4, "cost_usd": 0.002, "cost_usd_n": 4,
    }  # fmt: skip
    kinds = {i["kind"]: i["system"] for i in report["insights"]}
    assert kinds == {
        "fastest": "model-b", "slowest": "model-c", "cheapest": "model-b",
        "most_expensive": "model-a", "least_reliable": "model-c",
    }  # fmt: skip


def test_classification_leaderboard_is_the_confusion_report(tmp_path: Path) -> None:
    (board,) = report_of(tmp_path, three_systems())["classification"]
    assert board["score"] == "classification" and board["mode"] == "fail"
    by_system = {e["system"]: e for e in board["systems"]}
    cases = sorted(LABELS)
    for system, entry in by_system.items():
        expected = [LABELS[c] for c in cases]
        predicted = [PREDICTED[system].get(c) for c in cases]  # model-c: q3 unanswered
        ours = confusion_report(expected, predicted)
        assert entry["accuracy"] == round(ours["accuracy"], 3)
        assert entry["macro"]["f1"] == round(ours["macro"]["f1"], 3)
        assert entry["confusion_matrix"] == ours["confusion_matrix"]
        assert entry["unanswered"] == ours["unanswered"]
    assert by_system["model-c"]["unanswered"] == 1 and by_system["model-c"]["no_answer"] == [
        1,
        0,
        0,
    ]
    assert [e["system"] for e in board["systems"]] == ["model-b", "model-a", "model-c"]


def test_a_case_every_system_left_unanswered_is_a_miss_of_its_class(tmp_path: Path) -> None:
    # model-c alone: it timed out on q3, which then has no row naming its expected label; the
    # case's reference names it, as ``ragtrace eval`` and scikit-learn count it.
    rows = [row for row in three_systems() if row["system"] == "model-c"]
    for row in rows:
        row["record"]["reference"] = LABELS[row["case"]]
    (board,) = report_of(tmp_path, rows)["classification"]
    (entry,) = board["systems"]
    cases = sorted(LABELS)
    ours = confusion_report(
        [LABELS[c] for c in cases], [PREDICTED["model-c"].get(c) for c in cases]
    )
    assert (entry["n"], entry["accuracy"], entry["unanswered"]) == (4, 0.5, 1)
    assert entry["accuracy"] == round(ours["accuracy"], 3)
    assert entry["confusion_matrix"] == ours["confusion_matrix"]


def test_systems_tied_on_unanswered_cases_are_named_as_tied(tmp_path: Path) -> None:
    rows = []
    for system in ("x", "y", "z", "w"):
        for case in ("q1", "q2", "q3", "q4"):
            if system != "w" and case == "q4":
                rows.append(unanswered_line(system, case, ["faithfulness"]))
            else:
                rows.append(line(system, case, [score("faithfulness", 0.9)]))
    (least,) = [i for i in report_of(tmp_path, rows)["insights"] if i["kind"] == "least_reliable"]
    assert least["tied"] == ["x", "y", "z"]
    assert least["text"] == (
        "least reliable, tied: x (1 of 4), y (1 of 4), z (1 of 4) case(s) left unanswered"
    )
