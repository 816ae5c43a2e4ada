"""Real scores files from a real ``ragtrace eval`` run (cheap lexical evaluators), then the real
``ragtrace report``: its numbers are checked against the scores file, worked out here."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from tests.report.lines import write_lines
from tests.report.test_gates import ENV, ragtrace_report

LEXICAL = ["-e", "looping,tokens_presence,bleu,rouge", "--option",
           'tokens_presence.constraints=["days"]']  # fmt: skip
KB = "Refunds are accepted within 30 days of purchase."
QUESTIONS = [
    ("refund", "How long is the refund window?", KB),
    ("shipping", "How long does shipping take?", "Shipping takes 3 to 5 business days."),
    ("warranty", "How long is the warranty?", "The warranty lasts 2 years from delivery."),
    ("password", "How do I reset my password?", "Reset your password from the login page."),
]


def ragtrace_eval(*args: str | Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "ragtrace", "eval", *map(str, args), "--no-progress"],
        capture_output=True,
        text=True,
        env={**ENV, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def scores_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def by_hand(lines: list[dict[str, Any]], name: str) -> dict[str, tuple[float, float]]:
    """system -> (mean, pass rate) of score ``name`` over unperturbed answers."""
    values: dict[str, list[float]] = defaultdict(list)
    verdicts: dict[str, list[bool]] = defaultdict(list)
    for ln in lines:
        if ln["perturbation"] is not None:
            continue
        for s in ln["scores"]:
            if s["name"] == name and s["value"] is not None:
                values[ln["system"]].append(s["value"])
                verdicts[ln["system"]].append(s["passed"])
    return {
        system: (math.fsum(vs) / len(vs), sum(verdicts[system]) / len(verdicts[system]))
        for system, vs in values.items()
    }


def test_two_models_in_one_input(tmp_path: Path) -> None:
    records = []
    for case, query, reference in QUESTIONS:
        records.append({"id": f"a-{case}", "query": query, "contexts": [KB], "model": "model-a",
                        "response": reference, "reference": reference})  # fmt: skip
        records.append({"id": f"b-{case}", "query": query, "contexts": [KB], "model": "model-b",
                        "response": "Please ask again. Please ask again.",
                        "reference": reference})  # fmt: skip
    scores = tmp_path / "scores.jsonl"
    ragtrace_eval("-i", write_lines(tmp_path / "in.jsonl", records), "-o", scores, *LEXICAL)
    out = tmp_path / "report.json"
    done = ragtrace_report(scores, "--json", out, "--html", tmp_path / "report.html")
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["systems"] == ["model-a", "model-b"] and report["input"]["problems"] == 0
    lines = scores_lines(scores)
    for section in report["scores"]:
        expected = by_hand(lines, section["name"])
        shown = {e["system"]: (e["mean"], e["pass_rate"]) for e in section["leaderboard"]}
        assert shown == {
            s: (round(m, 3) + 0.0, round(p, 3) + 0.0) for s, (m, p) in expected.items()
        }, section["name"]
    bleu = next(s for s in report["scores"] if s["name"] == "bleu.1")
    assert bleu["leaderboard"][0]["system"] == "model-a"  # answers with the reference itself
    assert "model-a is better than model-b on bleu.1" in done.stdout


def test_two_systems_asked_with_perturbations(tmp_path: Path) -> None:
    questions = write_lines(
        tmp_path / "questions.jsonl",
        [{"id": c, "query": q, "reference": r} for c, q, r in QUESTIONS],
    )
    scores = tmp_path / "scores.jsonl"
    ragtrace_eval(
        "-i", questions, "-o", scores, *LEXICAL, "--perturb", "typos,casing",
        "--system-callable", "careful=tests.report.toy_systems:careful",
        "--system-callable", "rambling=tests.report.toy_systems:rambling",
    )  # fmt: skip
    out = tmp_path / "report.json"
    done = ragtrace_report(
        scores, "--json", out, "--fail-if", "rouge.l.mean[system=rambling] < 0.5"
    )
    assert done.returncode == 1
    assert "gate failed: rouge.l.mean[system=rambling] < 0.5: rambling" in done.stderr
    report = json.loads(out.read_text())
    lines = scores_lines(scores)
    # Flips by hand: a perturbed answer whose verdict differs from its unperturbed answer's.
    plain = {
        (ln["system"], ln["case"], s["name"]): s["passed"]
        for ln in lines
        if ln["perturbation"] is None
        for s in ln["scores"]
    }
    flips: dict[str, int] = defaultdict(int)
    for ln in lines:
        for s in ln["scores"] if ln["perturbation"] is not None else []:
            before = plain.get((ln["system"], ln["case"], s["name"]))
            if None not in (before, s["passed"]) and before != s["passed"]:
                flips[s["name"]] += 1
    assert {s["name"]: s["flip_count"] for s in report["scores"] if s["flip_count"]} == flips
    assert sum(flips.values()) > 0  # typos hide the keyword "careful" answers from
    assert report["summary"]["flips"] == sum(flips.values())
    rouge = next(s for s in report["scores"] if s["name"] == "rouge.l")
    assert [e["system"] for e in rouge["leaderboard"]] == ["careful", "rambling"]
    assert all(e["perturbed"] == 2 * len(QUESTIONS) for e in rouge["leaderboard"])


def test_groundedness_sentences_are_marked_in_the_worst_answers(tmp_path: Path) -> None:
    """A real groundedness run: the page marks each answer sentence ✓ or ✗ against the
    score's threshold, the least grounded one with its text, as docs/report.md says."""
    from ragtrace._report.build import build_report
    from ragtrace._report.html import render_page
    from ragtrace._report.load import load_scores

    records = [
        {"id": "q1", "query": "How long is the refund window?", "contexts": [KB],
         "response": "Refunds are accepted within 30 days of purchase. Our CEO loves jazz."},
    ]  # fmt: skip
    scores = tmp_path / "scores.jsonl"
    ragtrace_eval("-i", write_lines(tmp_path / "in.jsonl", records), "-o", scores,
                  "-e", "groundedness")  # fmt: skip
    (line,) = scores_lines(scores)
    (score,) = line["scores"]
    threshold = score["threshold"]
    sentences = score["details"]["sentences"]
    assert len(sentences) == 2
    report = build_report(load_scores([scores]))
    (example,) = report["scores"][0]["worst"]
    least, other = example["claims"]
    assert least["text"] == "Our CEO loves jazz." and least["supported"] is False
    assert least["support"] < threshold <= other["support"]
    assert (other["text"], other["supported"]) == ("sentence 1", True)
    page = render_page(report)
    assert "✗ Our CEO loves jazz." in page and "✓ sentence 1" in page


def test_the_demos_three_systems_the_one_that_times_out_does_not_rank_first(
    tmp_path: Path,
) -> None:
    """The demo's three systems asked the demo's questions: a retrieval score (the retriever is
    the same for all three, so its values are the same wherever all answered) must not rank
    the system that timed out on some questions first, and no system is "best" on it."""
    from ragtrace.demo._corpus import QUESTIONS

    questions = write_lines(
        tmp_path / "questions.jsonl",
        [{"id": f"q{i:02d}", "query": q} for i, q in enumerate(QUESTIONS)],
    )
    scores = tmp_path / "scores.jsonl"
    ragtrace_eval(
        "-i", questions, "-o", scores, "-e", "context_relevance,looping",
        "--system-callable", "demo=ragtrace.demo.systems:demo_chain",
        "--system-callable", "careful=ragtrace.demo.systems:careful_chain",
        "--system-callable", "sloppy=ragtrace.demo.systems:sloppy_chain",
    )  # fmt: skip
    out = tmp_path / "report.json"
    done = ragtrace_report(scores, "--json", out, "--html", tmp_path / "report.html")
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    unanswered = {s: a["unanswered"] for s, a in report["answers"].items()}
    # The sloppy setting times out on some questions, the careful one never.
    assert unanswered["sloppy"] > unanswered["demo"] >= 0 == unanswered["careful"]
    assert f"sloppy left {unanswered['sloppy']} of {len(QUESTIONS)} case(s) unanswered" in (
        done.stdout
    )
    for section in report["scores"]:
        if not section["name"].startswith("context_relevance"):
            continue
        board = {e["system"]: e for e in section["leaderboard"]}
        assert board["sloppy"]["unanswered"] == unanswered["sloppy"]
        # Its mean counts the questions it left unanswered as failures, so it is under the
        # mean over its own answers (what the report once ranked on) ...
        assert board["sloppy"]["mean"] < board["sloppy"]["own_mean"]
        # ... and it ranks last, below the one that answered all.
        assert board["careful"]["rank"] == 1
        assert board["sloppy"]["rank"] == 3 and board["sloppy"]["mean"] < board["careful"]["mean"]
        if unanswered["demo"] == 0:
            assert board["demo"]["mean"] == board["careful"]["mean"]
            assert "best_system" not in [i["kind"] for i in section["insights"]]


def test_the_classification_example_of_the_eval_page_system_b_alone(tmp_path: Path) -> None:
    """docs/eval.md's intents, system b alone (it timed out on the last case, which then no
    system answered): the report's classification board counts that case as ``ragtrace eval``
    does, as a miss of its class: n 4, accuracy 0.500, 1 unanswered."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "eval.md").read_text(encoding="utf-8")
    block = re.search(r'```json\n(\{"id": "1", "query": "I was charged twice".*?)```', page, re.S)
    assert block is not None
    lines = [x for x in block.group(1).splitlines() if '"model": "b"' in x]
    assert len(lines) == 4
    (tmp_path / "intents.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = ragtrace_eval(
        "-i", tmp_path / "intents.jsonl", "-e", "classification",
        "--option", 'classification.labels=["billing","shipping","returns"]',
        "-o", tmp_path / "scores.jsonl", "--summary-json", tmp_path / "summary.json",
        "--no-progress",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    ours = json.loads((tmp_path / "summary.json").read_text())["classification"]
    evaluated = ours["classification"]["b"]
    report = ragtrace_report(tmp_path / "scores.jsonl", "--json", "-")
    (board,) = json.loads(report.stdout)["classification"]
    (entry,) = board["systems"]
    assert (entry["n"], entry["accuracy"], entry["unanswered"]) == (4, 0.5, 1)
    assert (evaluated["n"], round(evaluated["accuracy"], 3), evaluated["unanswered"]) == (4, 0.5, 1)
    assert entry["confusion_matrix"] == evaluated["confusion_matrix"]
