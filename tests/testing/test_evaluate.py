"""``ragtrace.evaluate``: every case format, the result object, the scores file, the printout.

Real evaluators throughout: lexical ones (looping, tokens_presence) where the numbers are worked
out by hand, and the packaged local models (faithfulness, answer_relevance) where the question
is whether the same case gives the same scores whatever form it comes in.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import ragtrace
from ragtrace._backends._loading import MissingExtraError
from ragtrace._model import Chunk, RagRecord
from ragtrace._offline import listeners
from ragtrace._offline.api import build_evaluators
from ragtrace._offline.cases import CaseError
from ragtrace._offline.selection import SelectionError
from ragtrace.evaluators import create, evaluator
from tests.components import missing_component
from tests.testing.conftest import write_cases

CONTEXT = (
    "Artificial intelligence refers to machines mimicking human intelligence, like "
    "problem-solving and learning. AI includes applications like virtual assistants, robotics, "
    "and autonomous vehicles."
)
GOOD = "AI includes applications like virtual assistants, robotics, and autonomous vehicles."
BAD = "AI includes applications like electric sheep and cyborg kittens."
LOOP = "Please ask again. Please ask again. Please ask again. Please ask again."
SEED_FORM = {"id": "good", "input": "What is AI?", "actual_output": GOOD,
             "expected_output": "Machines that mimic human intelligence.",
             "retrieval_context": [CONTEXT]}  # fmt: skip
FILE_FORM = {"id": "good", "query": "What is AI?", "response": GOOD, "contexts": [CONTEXT],
             "reference": "Machines that mimic human intelligence."}  # fmt: skip
LOCAL = ["looping", "faithfulness", "answer_relevance"]


def lexical_cases() -> list[dict[str, Any]]:
    return [
        {
            "id": "q1",
            "input": "How long is the refund window?",
            "actual_output": "You have 30 days to ask for a refund.",
        },
        {"id": "q2", "input": "How long is the refund window?", "actual_output": LOOP},
    ]


def quiet(cases: Any, evaluators: Any, **options: Any) -> ragtrace.EvaluationResult:
    return ragtrace.evaluate(cases, evaluators, display="none", progress=False, **options)


def scores_of(result: ragtrace.EvaluationResult) -> list[tuple[Any, ...]]:
    return [
        (c.id, s.name, s.value, s.threshold, s.passed, s.explanation)
        for c in result
        for s in c.scores
    ]


def test_a_case_gives_the_same_scores_as_a_seed_dict_a_file_dict_a_record_or_a_file_line(
    tmp_path: Path,
):
    record = RagRecord(
        trace_id="1" * 32,
        span_id="1" * 16,
        query="What is AI?",
        chunks=(Chunk(CONTEXT),),
        response=GOOD,
        reference="Machines that mimic human intelligence.",
        attributes={"id": "good"},
    )
    path = write_cases(tmp_path / "cases.jsonl", [FILE_FORM])
    forms = [SEED_FORM, FILE_FORM, record, path, str(path)]
    results = [quiet(form, LOCAL) for form in forms]
    expected = scores_of(results[0])
    assert [n for _, n, *_ in expected] == [
        "looping.unique_sentences",
        "looping.longest_repeated_substring",
        "looping.compression_ratio",
        "faithfulness",
        "answer_relevance",
    ]
    assert all(v is not None and 0.0 <= v <= 1.0 for _, _, v, *_ in expected)
    for result in results[1:]:
        assert scores_of(result) == expected
    assert results[2].cases[0].record is record  # a record is scored as given


def test_the_result_holds_value_threshold_verdict_and_reason_per_case_and_score():
    cases = [
        {**SEED_FORM, "id": "good"},
        {**SEED_FORM, "id": "kittens", "actual_output": BAD},
    ]
    result = quiet(cases, ["faithfulness", "answer_relevance"])
    assert [c.id for c in result] == ["good", "kittens"] and len(result) == 2
    good, kittens = result.case("good"), result.case("kittens")
    assert good.passed and good.failures() == []
    faithful = kittens.score("faithfulness")
    assert faithful.value is not None and faithful.value < faithful.threshold  # type: ignore[operator]
    # Failing as a whole while its one claim clears the per-claim cut: said so.
    assert faithful.passed is False and "flagged as a whole" in (faithful.explanation or "")
    assert not result.passed
    [failure] = result.failures()
    assert (failure.case, failure.name, failure.status, failure.score) == (
        "kittens",
        "faithfulness",
        "fail",
        faithful,
    )
    assert repr(result) == "<EvaluationResult 2 case(s), 2 evaluator(s): 1 passed, 1 failed>"
    with pytest.raises(KeyError, match="no case 'kitten' \\(did you mean 'kittens'\\?\\)"):
        result.case("kitten")
    with pytest.raises(KeyError, match="has no score 'faithful'; its scores: faithfulness"):
        kittens.score("faithful")


def test_the_scores_file_is_line_for_line_the_one_ragtrace_eval_writes(tmp_path: Path):
    cases = [FILE_FORM, {**FILE_FORM, "id": "loop", "response": LOOP}]
    data = write_cases(tmp_path / "cases.jsonl", cases)
    by_eval = tmp_path / "eval.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "ragtrace", "eval", "-i", str(data), "-o", str(by_eval),
         "-e", ",".join(LOCAL), "--no-progress"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    by_api = tmp_path / "api.jsonl"
    quiet(data, LOCAL).write_scores(by_api)
    assert by_api.read_text(encoding="utf-8") == by_eval.read_text(encoding="utf-8")
    report = subprocess.run(
        [sys.executable, "-m", "ragtrace", "report", str(by_api), "--json", "-",
         "--fail-if", "looping.unique_sentences.pass_rate < 0.9"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert report.returncode == 1  # the gate holds: one of two answers loops
    assert "gate failed: looping.unique_sentences.pass_rate < 0.9: default: pass_rate = 0.5" in (
        report.stderr
    )
    sections = {s["name"]: s for s in json.loads(report.stdout)["scores"]}
    assert sections["looping.unique_sentences"]["leaderboard"][0]["n"] == 2


def test_it_prints_a_metrics_summary_like_the_seeds(capsys: pytest.CaptureFixture[str]):
    result = ragtrace.evaluate(lexical_cases(), ["looping"], progress=False)
    out = capsys.readouterr().out
    assert out.count("Metrics Summary") == 2
    for line in [
        "  - \u2705 looping.unique_sentences (score: 1.0, threshold: 0.75, "
        "reason: 1 unique of 1 sentences)",
        "  - \u274c looping.unique_sentences (score: 0.25, threshold: 0.75, "
        "reason: 1 unique of 4 sentences)",
        "  - \u2705 looping.longest_repeated_substring (score: ",
        "For test case q2:",
        "  - input: How long is the refund window?",
        f"  - actual output: {LOOP}",
        "  - expected output: None",
        "  - retrieval context: None",
        "Overall Metric Pass Rates",
        "looping.unique_sentences: 50.00% pass rate (1 passed of 2; mean 0.625)",
        "2 test case(s), 1 evaluator(s), ",
    ]:
        assert line in out, line
    assert ", lower is better, reason: " in out  # longest_repeated_substring's direction
    assert result.metrics_summary() in out


def test_the_summary_can_show_failing_cases_only_or_nothing(capsys: pytest.CaptureFixture[str]):
    ragtrace.evaluate(lexical_cases(), ["looping"], progress=False, display="failing")
    out = capsys.readouterr().out
    assert "For test case q2:" in out and "For test case q1:" not in out
    assert "Overall Metric Pass Rates" in out
    for display in ("none", None):
        ragtrace.evaluate(lexical_cases(), ["looping"], progress=False, display=display)
        assert capsys.readouterr().out == ""
    with pytest.raises(ValueError, match="display must be one of all, failing, none"):
        ragtrace.evaluate(lexical_cases(), ["looping"], progress=False, display="some")  # type: ignore[arg-type]


def test_words_replace_the_marks_where_the_stream_cannot_encode_them():
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    ragtrace.evaluate(lexical_cases(), ["looping"], progress=False, file=stream)
    stream.flush()
    text = raw.getvalue().decode("ascii")
    assert "  - PASS looping.unique_sentences (score: 1.0" in text
    assert "  - FAIL looping.unique_sentences (score: 0.25" in text


def test_thresholds_given_at_call_time_judge_the_scores_again():
    lenient = quiet(lexical_cases(), "looping", thresholds={"looping.unique_sentences": 0.2})
    score = lenient.case("q2").score("looping.unique_sentences")
    assert (score.value, score.threshold, score.passed, score.label) == (0.25, 0.2, True, "pass")
    strict = quiet(
        lexical_cases(), "looping", thresholds={"looping.longest_repeated_substring": 0.5}
    )
    lower = strict.case("q2").score("looping.longest_repeated_substring")
    assert lower.direction == "lower_is_better" and lower.value is not None and lower.value > 0
    assert (lower.threshold, lower.passed, lower.label) == (0.5, False, "fail")  # 0.7465 > 0.5
    assert strict.summary_rows()[1]["pass_rate"] == 0.5  # counted with the new verdicts


def test_thresholds_that_name_no_score_or_are_not_numbers_are_refused():
    with pytest.raises(ValueError, match=r"did you mean 'looping\.unique_sentences'"):
        quiet(lexical_cases(), "looping", thresholds={"looping.unique_sentence": 0.5})
    with pytest.raises(ValueError, match=r"evaluator 'looping' gives scores named looping\.comp"):
        quiet(lexical_cases(), "looping", thresholds={"looping": 0.5})
    with pytest.raises(TypeError, match=r"must be a number, got str 'strict'.*\('looping"):
        quiet(lexical_cases(), "looping", thresholds={"looping": "strict"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="must be finite"):
        quiet(lexical_cases(), "looping", thresholds={"looping.unique_sentences": float("nan")})


@pytest.mark.parametrize(
    ("cases", "message"),
    [
        ([{"inptu": "q"}], "case 1: unknown field 'inptu' (did you mean 'input'?)"),
        ([{"input": "q", "query": "q"}], "case 1: 'input' and 'query' are the same field"),
        ([{"input": "q", "context": ["x"]}], "case 1: 'context' (DeepEval's ideal"),
        ([{"retrieval_context": "x"}], "case 1: 'retrieval_context' must be a list"),
        ([{"id": "a"}, {"id": "a"}], "case 2: duplicate id 'a' (first at case 1)"),
        ([{"id": "a"}, 3], "case 2: expected a RagRecord or a mapping"),
        ([], "no test cases in the cases given"),
        (b"cases", "cases must be RagRecords, mappings, or the path"),
    ],
)
def test_cases_that_cannot_be_read_are_refused_naming_the_case(cases: Any, message: str):
    with pytest.raises(CaseError) as caught:
        quiet(cases, "looping")
    assert message in str(caught.value)


def test_bad_lines_of_a_file_are_errors_naming_the_file_and_line(tmp_path: Path):
    path = tmp_path / "cases.jsonl"
    path.write_text(
        '{"id": "a", "query": "q", "response": "r"}\n'
        "not json\n"
        '{"query": "no id", "response": "r"}\n'
        '{"id": "a", "query": "q", "response": "again"}\n',
        encoding="utf-8",
    )
    with pytest.raises(CaseError) as caught:
        quiet(path, "looping")
    assert str(caught.value).splitlines() == [
        f"3 bad line(s) in {path}:",
        f"  {path}:2: invalid JSON: Expecting value at column 1",
        f"  {path}:3: missing 'id'",
        f"  {path}:4: duplicate id 'a' (first on line 1)",
    ]
    with pytest.raises(FileNotFoundError):
        quiet(tmp_path / "missing.jsonl", "looping")
    with pytest.raises(IsADirectoryError):
        quiet(tmp_path, "looping")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(CaseError, match=r"no test cases in .*empty\.jsonl"):
        quiet(tmp_path / "empty.jsonl", "looping")


def test_unknown_fields_of_a_file_are_warned_about_as_ragtrace_eval_does(tmp_path: Path):
    path = write_cases(
        tmp_path / "cases.jsonl", [{"id": "a", "query": "q", "response": "r", "refrence": "x"}]
    )
    with pytest.warns(UserWarning, match="unknown field 'refrence' ignored .did you mean 'ref"):
        result = quiet(path, "looping")
    assert result.cases[0].record.reference is None
    path.write_text('{"id": "a", "query": "q"}\n', encoding="utf-8")
    with pytest.raises(CaseError, match=r"missing 'response' \(an evaluator that needs it"):
        quiet(path, "looping")  # as ragtrace eval refuses it


def test_evaluators_as_names_pairs_mappings_and_objects():
    @evaluator(name="says_days", requires={"response"}, threshold=0.5)
    def says_days(record: RagRecord) -> float:
        return 1.0 if "days" in (record.response or "") else 0.0

    specs = [
        "looping",
        ("tokens_presence", {"constraints": ["days"], "targets": ["answer"]}),
        {"name": "rouge"},
        says_days,
    ]
    result = quiet(lexical_cases(), specs)
    assert result.evaluators == ("looping", "tokens_presence", "rouge", "says_days")
    assert result.case("q1").score("says_days").passed is True
    assert [s.evaluator for s in result.case("q1").skipped] == ["rouge"]  # no reference
    assert build_evaluators(["looping"])[0] is build_evaluators("looping")[0]  # built once
    with pytest.raises(
        SelectionError, match=r"unknown evaluator 'loopin' \(did you mean 'looping'"
    ):
        quiet(lexical_cases(), ["loopin"])
    with pytest.raises(SelectionError, match="looping given more than once"):
        quiet(lexical_cases(), ["looping", create("looping")])
    with pytest.raises(SelectionError, match=r"evaluators\[0\]: expected an evaluator name"):
        quiet(lexical_cases(), [3])


def test_an_evaluator_that_fails_or_overstays_gives_an_error_not_a_crash(
    capsys: pytest.CaptureFixture[str],
):
    @evaluator(name="fragile", requires={"response"}, threshold=0.5, timeout_s=0.5)
    def fragile(record: RagRecord) -> float:
        if record.response == "slow":
            time.sleep(3)
        if record.response == "boom":
            raise RuntimeError("the model is gone")
        return 1.0

    cases = [{"id": "fine", "input": "q", "actual_output": "ok"},
             {"id": "slow", "input": "q", "actual_output": "slow"},
             {"id": "boom", "input": "q", "actual_output": "boom"}]  # fmt: skip
    result = ragtrace.evaluate(cases, [fragile], progress=False)
    errors = {c.id: c.scores[0].error for c in result}
    assert errors["fine"] is None
    assert errors["slow"] == "timed out after 0.5 s"
    assert errors["boom"] == "RuntimeError: the model is gone"
    captured = capsys.readouterr()
    assert "  - \u2757 fragile (error: timed out after 0.5 s)" in captured.out
    assert "fragile: 100.00% pass rate (1 passed of 1; mean 1.0); 2 error(s)" in captured.out
    assert "ragtrace evaluate: fragile failed on id 'slow': timed out after 0.5 s" in captured.err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_progress_bar_shows_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    ragtrace.evaluate(lexical_cases(), ["looping"], display="none")
    assert "ragtrace evaluate [####################] 100%  2/2 cases" in terminal.getvalue()
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    ragtrace.evaluate(lexical_cases(), ["looping"], display="none")
    assert log.getvalue() == ""  # not a terminal: no progress unless asked for
    ragtrace.evaluate(lexical_cases(), ["looping"], display="none", progress=True)
    assert log.getvalue().startswith("ragtrace evaluate: 2/2 cases, 2 records, ")


def test_a_dataframe_with_pandas_and_a_clear_error_without(monkeypatch: pytest.MonkeyPatch):
    try:
        import pandas  # noqa: F401
    except ImportError:
        missing_component("pandas is not installed (pip install 'ragtrace[pandas]')")
    result = quiet(lexical_cases(), ["looping", "rouge"])
    frame = result.to_dataframe()
    assert list(frame.columns)[:6] == ["system", "case", "score", "evaluator", "status", "value"]
    assert len(frame) == 2 * 3 + 2  # three looping scores per case, one rouge skip per case
    failing = frame[(frame["case"] == "q2") & (frame["score"] == "looping.unique_sentences")]
    assert failing["status"].tolist() == ["fail"] and failing["value"].tolist() == [0.25]
    assert (
        frame[frame["status"] == "skipped"]["error"].tolist()
        == ["not scored: the case lacks reference (expected_output)"] * 2
    )
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'ragtrace\[pandas\]'"):
        result.to_dataframe()


def test_worker_processes_give_the_same_scores_as_one():
    one = quiet(lexical_cases(), ["looping"])
    two = quiet(lexical_cases(), ["looping"], processes=2)
    assert scores_of(two) == scores_of(one)


def test_cases_of_several_systems_are_told_apart():
    cases = [{**c, "model": m} for m in ("model-a", "model-b") for c in lexical_cases()]
    result = quiet(cases, ["looping"])
    assert [(c.system, c.id) for c in result] == [
        ("model-a", "q1"), ("model-a", "q2"), ("model-b", "q1"), ("model-b", "q2"),
    ]  # fmt: skip
    with pytest.raises(KeyError, match="in several systems"):
        result.case("q1")
    assert result.case("q1", system="model-b").system == "model-b"
    assert {r["system"] for r in result.summary_rows()} == {"model-a", "model-b"}
    named = quiet(lexical_cases(), ["looping"], system="v2")
    assert {c.system for c in named} == {"v2"}


def test_every_result_reaches_the_listeners():
    heard: list[ragtrace.EvaluationResult] = []
    listener = listeners.add_result_listener(heard.append)
    try:
        result = quiet(lexical_cases(), ["looping"])
    finally:
        listeners.remove_result_listener(listener)
    quiet(lexical_cases(), ["looping"])
    assert heard == [result]
