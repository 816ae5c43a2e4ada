"""The pytest plugin, through pytest's own ``pytester``: real pytest sessions in subprocesses,
with the plugin loaded from its ``pytest11`` entry point as a user's project would load it.

Sessions that pass and fail (with a readable message), the table at the end, the scores file
read by the real ``ragtrace report``, the gates, the plugin's cost when nothing is scored,
pytest-xdist, and judge answers cached across runs (with a real local llama.cpp judge).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

from ragtrace._judges.local import LocalJudgeServer
from tests.components import missing_component
from tests.testing.conftest import write_cases

pytest_plugins = ["pytester"]

CONTEXT = (
    "Artificial intelligence refers to machines mimicking human intelligence, like "
    "problem-solving and learning. AI includes applications like virtual assistants, robotics, "
    "and autonomous vehicles."
)
GROUNDED = {
    "id": "grounded",
    "query": "What is AI?",
    "contexts": [CONTEXT],
    "response": (
        "AI includes applications like virtual assistants, robotics, and autonomous vehicles."
    ),
}
KITTENS = {
    "id": "kittens",
    "query": "What is AI?",
    "contexts": [CONTEXT],
    "response": "AI includes applications like electric sheep and cyborg kittens.",
}
REFUND = "Refunds are accepted within 30 days of purchase."
PLAIN = [
    {"id": f"q{i}", "query": "How long is the refund window?", "contexts": [REFUND],
     "response": f"You have 30 days to ask for a refund, case {i}."}
    for i in range(1, 5)
]  # fmt: skip
LOOPING_ANSWER = "Please ask again. Please ask again. Please ask again. Please ask again."

LEXICAL_TESTS = """
import ragtrace
from ragtrace.testing import assert_scores, parametrize_cases

@parametrize_cases("cases.jsonl")
def test_answers_do_not_loop(case):
    assert_scores(case, ["looping"])
"""
DONE_WHEN_TESTS = """
from ragtrace.testing import assert_scores, parametrize_cases

@parametrize_cases("cases.jsonl")
def test_answers(case):
    assert_scores(case, ["faithfulness", "answer_relevance"])
"""
HEAVY = ("torch", "transformers", "sentence_transformers", "litellm", "langchain_core",
         "llama_index", "onnxruntime", "numpy", "xllamacpp")  # fmt: skip


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A pytest session in a subprocess, in ``pytester.path``."""
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=600)


def section(result: pytest.RunResult) -> str:
    """The plugin's part of the terminal summary (empty when it printed none)."""
    text = result.stdout.str()
    match = re.search(r"=+ ragtrace scores =+\n(.*?)(?:\n=+ |\Z)", text, re.S)
    return match.group(1) if match else ""


def table_rows(text: str) -> dict[str, list[str]]:
    """score -> the cells of its row in the plugin's table."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| score"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = cells[1:]
    return rows


def test_a_passing_session_prints_one_table_of_what_it_asserted(pytester: pytest.Pytester):
    write_cases(pytester.path / "cases.jsonl", PLAIN)
    pytester.makepyfile(test_rag=LEXICAL_TESTS)
    result = run(pytester, "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*test_answers_do_not_loop?q1? PASSED*"])  # ids from the cases
    text = section(result)
    rows = table_rows(text)
    assert set(rows) == {
        "looping.unique_sentences",
        "looping.longest_repeated_substring",
        "looping.compression_ratio",
    }
    cases, errors, pass_rate, _mean, worst = rows["looping.unique_sentences"]
    assert (cases, errors, pass_rate) == ("4", "0", "100.0%")
    assert re.fullmatch(r"q\d = 1\.000 \(.*test_answers_do_not_loop\[q\d\]\)", worst)
    assert "4 scored case(s) from 4 test(s)" in text


def test_a_failing_score_fails_its_test_naming_the_score_value_threshold_and_reason(
    pytester: pytest.Pytester,
):
    write_cases(pytester.path / "cases.jsonl", [GROUNDED, KITTENS])
    pytester.makepyfile(test_rag=DONE_WHEN_TESTS)
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*ScoresAssertionError: ragtrace: 1 of 2 check(s) failed for case 'kittens' "
            "(What is AI? -> AI includes applications like electric sheep and cyborg kittens.)",
            "*  - faithfulness = 0.* < threshold 0.7532 (higher is better): hallucination "
            "probability 0.*flagged as a whole: none of its 1 claim(s)*",
        ]
    )
    assert "answer_relevance =" not in result.stdout.str()  # it passed: not listed
    rows = table_rows(section(result))
    assert rows["faithfulness"][:3] == ["2", "0", "50.0%"]
    assert rows["faithfulness"][4].startswith("kittens = 0.")
    assert "test_answers[kittens]" in rows["faithfulness"][4]
    assert rows["answer_relevance"][:3] == ["2", "0", "100.0%"]


def test_the_scores_file_is_what_ragtrace_report_reads(pytester: pytest.Pytester):
    cases = [*PLAIN[:3], {**PLAIN[3], "response": LOOPING_ANSWER}]
    write_cases(pytester.path / "cases.jsonl", cases)
    pytester.makepyfile(
        test_rag=LEXICAL_TESTS
        + """
def test_every_case_again():
    import ragtrace
    ragtrace.evaluate("cases.jsonl", ["looping"], display="none")
"""
    )
    scores = pytester.path / "out" / "scores.jsonl"
    scores.parent.mkdir()
    result = run(pytester, "--ragtrace-scores", str(scores))
    result.assert_outcomes(passed=4, failed=1)
    assert "scores written to out/scores.jsonl (ragtrace report out/scores.jsonl)" in section(
        result
    )
    lines = [json.loads(x) for x in scores.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 8  # 4 assertions and 4 cases scored by evaluate in one test
    assert len({(x["system"], x["id"]) for x in lines}) == 8  # unique ids, as reports need
    q4 = [x for x in lines if x["case"] == "q4"]
    assert [x["id"] for x in q4] == [
        "q4 @ test_rag.py::test_answers_do_not_loop[q4]",
        "q4 @ test_rag.py::test_every_case_again",
    ]
    assert {x["test"] for x in lines} >= {"test_rag.py::test_every_case_again"}
    report_json = pytester.path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "ragtrace", "report", str(scores), "--json", str(report_json),
         "--fail-if", "looping.unique_sentences.pass_rate < 0.5"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(report_json.read_text(encoding="utf-8"))
    assert report["input"]["bad_lines"] == 0 and report["input"]["problems"] == 0
    by_name = {s["name"]: s for s in report["scores"]}
    entry = by_name["looping.unique_sentences"]["leaderboard"][0]
    assert (entry["n"], entry["pass_rate"]) == (4, 0.75)  # each case once, as the report counts
    assert by_name["looping.unique_sentences"]["repeated_cases"] == 4
    shown = table_rows(section(result))["looping.unique_sentences"]
    assert shown[:4] == ["4", "0", "75.0%", f"{entry['mean']:.3f}"]  # the table is the report's


def test_a_gate_fails_a_session_whose_tests_all_pass(pytester: pytest.Pytester):
    write_cases(pytester.path / "cases.jsonl", PLAIN[:3])
    pytester.makepyfile(test_rag=LEXICAL_TESTS)
    held = run(pytester, "--ragtrace-fail-if", "looping.unique_sentences.n < 10")
    held.assert_outcomes(passed=3)
    assert held.ret == pytest.ExitCode.TESTS_FAILED
    assert "gate FAILED: looping.unique_sentences.n < 10: default: n = 3" in section(held)
    kept = run(
        pytester,
        "--ragtrace-fail-if", "looping.unique_sentences.pass_rate < 0.9",
        "--ragtrace-fail-if", "looping.compression_ratio.mean_low < 0.5",
    )  # fmt: skip
    assert kept.ret == pytest.ExitCode.OK
    assert "gate ok: looping.unique_sentences.pass_rate < 0.9: default: pass_rate = 1" in (
        section(kept)
    )


def test_gates_and_the_scores_file_can_live_in_the_ini_file(pytester: pytest.Pytester):
    write_cases(pytester.path / "cases.jsonl", PLAIN[:2])
    pytester.makepyfile(test_rag=LEXICAL_TESTS)
    pytester.makeini(
        """
[pytest]
ragtrace_scores = build/scores.jsonl
ragtrace_fail_if =
    looping.unique_sentences.pass_rate < 0.9
    looping.unique_sentences.n > 1
"""
    )
    (pytester.path / "build").mkdir()
    result = run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = section(result)
    assert "gate ok: looping.unique_sentences.pass_rate < 0.9" in text
    assert "gate FAILED: looping.unique_sentences.n > 1: default: n = 2" in text
    assert len((pytester.path / "build" / "scores.jsonl").read_text().splitlines()) == 2


def test_a_gate_on_a_score_the_session_never_scored_fails_and_says_why(
    pytester: pytest.Pytester,
):
    write_cases(pytester.path / "cases.jsonl", PLAIN[:1])
    pytester.makepyfile(test_rag=LEXICAL_TESTS)
    typo = run(pytester, "--ragtrace-fail-if", "looping.unique_sentence.pass_rate < 0.9")
    assert typo.ret == pytest.ExitCode.TESTS_FAILED
    assert "gate FAILED: cannot be checked:" in section(typo)
    assert "(did you mean 'looping.unique_sentences'?)" in section(typo)
    pytester.makepyfile(test_rag="def test_nothing_scored():\n    pass\n")
    nothing = run(pytester, "--ragtrace-fail-if", "faithfulness.pass_rate < 0.9")
    assert nothing.ret == pytest.ExitCode.TESTS_FAILED  # no data never passes a gate
    assert "no scores were asserted in this session" in section(nothing)


def test_a_gate_that_cannot_be_read_is_a_usage_error(pytester: pytest.Pytester):
    pytester.makepyfile(test_rag="def test_x():\n    pass\n")
    result = run(pytester, "--ragtrace-fail-if", "faithfulness < 0.9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ragtrace-fail-if: cannot read gate 'faithfulness < 0.9'*"])


def test_a_session_that_scores_nothing_is_untouched_and_loads_no_model_library(
    pytester: pytest.Pytester,
):
    pytester.makepyfile(
        test_plain=f"""
import sys

def test_the_plugin_is_loaded_and_cheap(pytestconfig):
    assert pytestconfig.pluginmanager.has_plugin("ragtrace")
    heavy = {HEAVY!r}
    assert sorted(m for m in sys.modules if m.split(".")[0] in heavy) == []
    assert "ragtrace._offline.loop" not in sys.modules
    assert "ragtrace._offline.api" not in sys.modules
"""
    )
    result = run(pytester)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    assert "ragtrace scores" not in result.stdout.str()


def test_the_plugin_can_be_turned_off(pytester: pytest.Pytester):
    write_cases(pytester.path / "cases.jsonl", PLAIN[:1])
    pytester.makepyfile(test_rag=LEXICAL_TESTS)
    result = run(pytester, "-p", "no:ragtrace", "--ragtrace-scores", "x.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # its options are gone with it
    result = run(pytester, "-p", "no:ragtrace")
    result.assert_outcomes(passed=1)
    assert section(result) == ""


def test_scores_from_xdist_workers_reach_one_table_file_and_gate(pytester: pytest.Pytester):
    try:
        import xdist  # noqa: F401
    except ImportError:
        missing_component("pytest-xdist is not installed (pip install 'ragtrace[dev]')")
    write_cases(pytester.path / "cases.jsonl", [*PLAIN, {**PLAIN[0], "id": "q5",
                                                         "response": LOOPING_ANSWER}])  # fmt: skip
    pytester.makepyfile(test_rag=LEXICAL_TESTS)
    scores = pytester.path / "scores.jsonl"
    result = run(
        pytester, "-n", "2", "--ragtrace-scores", str(scores),
        "--ragtrace-fail-if", "looping.unique_sentences.pass_rate < 0.9",
    )  # fmt: skip
    result.assert_outcomes(passed=4, failed=1)
    lines = [json.loads(x) for x in scores.read_text(encoding="utf-8").splitlines()]
    assert sorted(x["case"] for x in lines) == ["q1", "q2", "q3", "q4", "q5"]
    text = section(result)
    assert table_rows(text)["looping.unique_sentences"][:3] == ["5", "0", "80.0%"]
    assert "5 scored case(s) from 5 test(s)" in text
    assert "gate FAILED: looping.unique_sentences.pass_rate < 0.9: default: pass_rate = 0.8" in text


def test_the_judge_cache_goes_to_the_pytest_cache_or_where_it_is_told(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("RAGTRACE_JUDGE_CACHE", raising=False)
    pytester.makeconftest(
        """
import pytest
from ragtrace._judges.cache import default_cache_path

AT_IMPORT = str(default_cache_path())  # a judge client a conftest builds at import time

@pytest.fixture
def at_import():
    return AT_IMPORT
"""
    )
    pytester.makepyfile(
        test_where="""
import os
from ragtrace._judges.cache import JudgeCache

def test_where(at_import):
    print("CACHE=" + os.environ.get("RAGTRACE_JUDGE_CACHE", "-"))
    assert str(JudgeCache().path) == os.environ["RAGTRACE_JUDGE_CACHE"] == at_import
"""
    )

    def cache_of(result: pytest.RunResult) -> str:
        result.assert_outcomes(passed=1)
        found = re.search(r"CACHE=(\S+)", result.stdout.str())
        assert found is not None
        return found.group(1)

    default = pytester.runpytest_subprocess("-s", timeout=300)
    expected = pytester.path / ".pytest_cache" / "d" / "ragtrace" / "judge_cache.sqlite"
    assert cache_of(default) == str(expected)
    chosen = pytester.path / "judge.sqlite"
    told = pytester.runpytest_subprocess("-s", "--ragtrace-judge-cache", str(chosen), timeout=300)
    assert cache_of(told) == str(chosen)
    monkeypatch.setenv("RAGTRACE_JUDGE_CACHE", str(pytester.path / "mine.sqlite"))
    kept = pytester.runpytest_subprocess("-s", timeout=300)
    assert cache_of(kept) == str(pytester.path / "mine.sqlite")  # the user's setting wins


JUDGE_TESTS = """
import ragtrace

def test_judged():
    result = ragtrace.evaluate("cases.jsonl", ["judge_faithfulness"], display="none")
    assert [s.error for c in result for s in c.scores] == [None, None]
"""


@pytest.mark.judge
@pytest.mark.integration
def test_a_rerun_asks_the_judge_nothing_it_asked_before(
    pytester: pytest.Pytester, smol_server: LocalJudgeServer, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("RAGTRACE_JUDGE_CACHE", raising=False)
    monkeypatch.setenv("RAGTRACE_JUDGE_MODEL", smol_server.model_name)
    monkeypatch.setenv("RAGTRACE_JUDGE_API_BASE", smol_server.api_base)
    write_cases(pytester.path / "cases.jsonl", [GROUNDED, KITTENS])
    pytester.makepyfile(test_judge=JUDGE_TESTS)

    def judge_calls(*args: str) -> dict[str, Any]:
        result = pytester.runpytest_subprocess(*args, timeout=600)
        result.assert_outcomes(passed=1)
        found = re.search(r"judge: ([\d,]+) calls \(([^)]*)\)", section(result))
        assert found is not None, section(result)
        outcomes = dict(item.rsplit(" ", 1) for item in found.group(2).split(", "))
        return {"calls": int(found.group(1)), **{k: int(v) for k, v in outcomes.items()}}

    first = judge_calls()
    assert first.get("ok", 0) > 0 and first["calls"] == first["ok"] + first.get("cached", 0)
    cache = pytester.path / ".pytest_cache" / "d" / "ragtrace" / "judge_cache.sqlite"
    assert cache.is_file()
    again = judge_calls()
    assert again == {"calls": first["calls"], "cached": first["calls"]}  # nothing asked again
    cleared = judge_calls("--cache-clear")  # pytest --cache-clear empties it: asked again
    assert cleared.get("ok", 0) > 0 and cleared["calls"] == cleared["ok"] + cleared.get("cached", 0)


@pytest.fixture(autouse=True)
def _no_inherited_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner sessions see neither a developer's judge nor a settings file."""
    for name in ("RAGTRACE_JUDGE_MODEL", "RAGTRACE_JUDGE_API_BASE", "PYTEST_ADDOPTS"):
        monkeypatch.delenv(name, raising=False)


PLAIN_FUNCTION_TESTS = """
from ragtrace.testing import ask, assert_scores

def answer(question):
    return {"answer": "You have 30 days to ask for a refund.", "contexts": ["Refunds: 30 days."]}

def test_a_plain_function(ragtrace_record=None):
    record = ask(answer, "How long is the refund window?")
    assert record.attributes["system"] == "answer"
    assert_scores(record, ["looping"])
"""


def test_a_plain_function_system_has_one_name_everywhere(pytester: pytest.Pytester):
    """The record's attributes, the scores file and the gates all call a plain-function system
    by its name (``answer``), not ``default`` in some places."""
    pytester.makepyfile(test_rag=PLAIN_FUNCTION_TESTS)
    gate = "looping.unique_sentences.mean[system=answer] < 0"
    result = run(pytester, "--ragtrace-scores", "scores.jsonl", "--ragtrace-fail-if", gate)
    result.assert_outcomes(passed=1)
    lines = [json.loads(x) for x in (pytester.path / "scores.jsonl").read_text().splitlines()]
    assert {line["system"] for line in lines} == {"answer"}
    assert "gate ok: looping.unique_sentences.mean[system=answer] < 0: answer: mean = " in (
        section(result)
    )
