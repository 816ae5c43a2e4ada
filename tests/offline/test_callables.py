"""``ragtrace eval --system-callable ... --perturb ...``: real systems asked, answers scored.

The demo's real LangChain app (its fake model answers from the retrieved articles), a real
LlamaIndex query engine (LlamaIndex's MockLLM over a tiny index), and plain functions
(``tests.offline.systems_fixtures``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragtrace._offline.answers import AnswerError, answer_from, chunks_from
from ragtrace._offline.callables import SystemSpecError, load_system, parse_spec
from ragtrace._offline.cli import main
from ragtrace._offline.perturb import perturb
from ragtrace.demo._corpus import QUESTIONS
from tests.offline.test_cli import in_process, ragtrace_eval, read_jsonl, write_jsonl

FIXTURES = "tests.offline.systems_fixtures"


def questions(tmp_path: Path, texts: list[str | None], **extra: Any) -> Path:
    rows = [{"id": f"q{i}", "query": t, **extra} for i, t in enumerate(texts)]
    return write_jsonl(tmp_path / "questions.jsonl", rows)


def test_demo_langchain_app_with_typos_and_casing(tmp_path: Path) -> None:
    src = questions(tmp_path, list(QUESTIONS[:6]), reference="ref")
    out, summary = tmp_path / "o.jsonl", tmp_path / "s.json"
    proc = ragtrace_eval(
        "-i", src, "-o", out, "-e", "looping,tokens_presence", "--summary-json", summary,
        "--option", 'tokens_presence.constraints=["H5"]',
        "--system-callable", "ragtrace.demo.systems:demo_chain", "--perturb", "typos,casing",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = read_jsonl(out)
    assert [(x["id"], x["case"], x["perturbation"]) for x in lines] == [
        (i, f"q{n}", p)
        for n in range(6)
        for p, i in ((None, f"q{n}"), ("typos", f"q{n}~typos"), ("casing", f"q{n}~casing"))
    ]
    assert {x["system"] for x in lines} == {"demo_chain"}
    for line in lines:
        case = int(line["case"][1:])
        asked = QUESTIONS[case] if line["perturbation"] is None else (
            perturb(line["perturbation"], QUESTIONS[case], key=line["case"])
        )  # fmt: skip
        assert line["record"]["query"] == asked
        assert line["record"]["reference"] == "ref"
    # The capture saw the retrieved articles: tokens_presence.context needs them, and ran.
    answered = [x for x in lines if x["record"]["response"]]
    assert answered and all(
        "tokens_presence.context" in {s["name"] for s in x["scores"]} for x in answered
    )
    # Casing does not change what the question-seeded demo model says.
    by_id = {x["id"]: x["record"]["response"] for x in lines}
    assert all(by_id[f"q{n}"] == by_id[f"q{n}~casing"] for n in range(6))
    data = json.loads(summary.read_text())
    flips = {r["name"]: r["perturbations"] for r in data["flips"]}
    assert flips["looping.unique_sentences"]["casing"] == {"flipped": 0, "compared": 6 - (
        sum(by_id[f"q{n}"] is None for n in range(6))
    )}  # fmt: skip
    assert data["asks"]["asked"] == 18
    assert "verdict flips (cases flipped / compared) per perturbation:" in proc.stdout
    assert "| score " in proc.stdout and "| typos " in proc.stdout
    assert "asked 18 questions of 1 system(s)" in proc.stdout


def test_flips_are_counted_by_hand(tmp_path: Path, registered: None) -> None:
    texts = ["How long is the Warranty?", "Can I return it?", "What is Storm Watch?", "Hello?"]
    src = questions(tmp_path, list(texts))
    out, summary = tmp_path / "o.jsonl", tmp_path / "s.json"
    code = main([
        "-i", str(src), "-o", str(out), "-e", "length", "--summary-json", str(summary),
        "--system-callable", f"{FIXTURES}:short_when_lower", "--perturb", "casing,whitespace",
        "--perturb-seed", "7", "--no-progress",
    ])  # fmt: skip
    assert code == 0
    # short_when_lower passes (long answer) unless the question is all lower case.
    lowered = sum(perturb("casing", t, seed=7, key=f"q{i}").islower() for i, t in enumerate(texts))
    flips = json.loads(summary.read_text())["flips"]
    assert flips == [
        {
            "system": "short_when_lower",
            "name": "length",
            "perturbations": {
                "casing": {"flipped": lowered, "compared": 4},
                "whitespace": {"flipped": 0, "compared": 4},
            },
        }
    ]
    assert 0 < lowered < 4  # the seed gives both kinds, so the test means something


def test_llama_index_query_engine(tmp_path: Path) -> None:
    src = questions(tmp_path, ["When was the lighthouse built?", "When did the harbour open?"])
    out = tmp_path / "o.jsonl"
    proc = ragtrace_eval(
        "-i", src, "-o", out, "-e", "looping,tokens_presence",
        "--option", 'tokens_presence.constraints=["1850"]',
        "--system-callable", f"li={FIXTURES}:llama_index_engine", "--perturb", "punctuation",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = read_jsonl(out)
    assert [(x["system"], x["id"]) for x in lines] == [
        ("li", "q0"), ("li", "q0~punctuation"), ("li", "q1"), ("li", "q1~punctuation")
    ]  # fmt: skip
    assert all(x["record"]["response"] for x in lines)  # MockLLM's "text text ..."
    context = [s for s in lines[0]["scores"] if s["name"] == "tokens_presence.context"]
    assert context and context[0]["value"] == 1.0  # the source nodes hold "1850"
    system = load_system(f"{FIXTURES}:llama_index_engine")
    answer = system.ask("When was the lighthouse built?")
    assert sorted(c.text for c in answer.chunks) == sorted(
        ["The lighthouse was built in 1850.", "The harbour opened in 1901."]
    )
    assert all(c.score is not None and c.id for c in answer.chunks)


def test_a_failing_or_junk_answer_is_recorded_and_counted(tmp_path: Path) -> None:
    src = questions(tmp_path, ["fine one", "boom here", "junk please", None, "fine two"])
    out, summary = tmp_path / "o.jsonl", tmp_path / "s.json"
    proc = ragtrace_eval(
        "-i", src, "-o", out, "-e", "looping", "--summary-json", summary,
        "--system-callable", f"{FIXTURES}:flaky",
    )  # fmt: skip
    assert proc.returncode == 0
    assert proc.stderr == (
        "ragtrace eval: system 'flaky' failed on id 'q1': RuntimeError: backend exploded "
        "(further failures of flaky are counted, not shown)\n"
    )
    lines = read_jsonl(out)
    assert [x["id"] for x in lines] == ["q0", "q1", "q2", "q3", "q4"]
    assert [bool(x["scores"]) for x in lines] == [True, False, False, False, True]
    assert lines[1]["skipped"] == [{"evaluator": "looping", "missing": ["response"]}]
    # Why each answer is missing is in its line, so a report counts it against the system.
    assert [x["error"] for x in lines] == [
        None,
        "RuntimeError: backend exploded",
        "AnswerError: returned int 42; expected a string, a mapping with an 'answer' or "
        "'response', or an object with a .response",
        "the case has no query to ask",
        None,
    ]
    # Asked questions carry how long the call took; the unasked one does not.
    assert [("latency_s" in x) for x in lines] == [True, True, True, False, True]
    assert all(0 <= x["latency_s"] < 5 for x in lines if "latency_s" in x)
    assert json.loads(summary.read_text())["asks"] == {
        "asked": 5, "failed": 3, "failed_by_system": {"flaky": 3}, "empty": 0,
        "empty_by_system": {}, "unanswered": 3, "unanswered_by_system": {"flaky": 3},
    }  # fmt: skip
    assert "asked 5 questions of 1 system(s); 3 unanswered (3 failed, 0 empty): flaky 3" in (
        proc.stdout
    )
    strict = ragtrace_eval("-i", src, "-o", out, "-e", "looping", "--strict",
                           "--system-callable", f"{FIXTURES}:flaky")  # fmt: skip
    assert strict.returncode == 1


def test_the_end_line_counts_the_unanswered_questions_the_summary_counts(tmp_path: Path) -> None:
    """A system that raises on one question and answers another with nothing left two
    unanswered: the summary table and the end line both say 2, and the end line says how many
    of them failed and how many came back empty."""
    src = questions(tmp_path, ["fine one", "boom here", "blank please", "fine two"])
    out, summary = tmp_path / "o.jsonl", tmp_path / "s.json"
    proc = ragtrace_eval(
        "-i", src, "-o", out, "-e", "looping", "--summary-json", summary,
        "--system-callable", f"{FIXTURES}:patchy", "--perturb", "casing",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(summary.read_text())
    rows = {r["name"]: r for r in data["scores"]}
    unanswered = {r["unanswered"] for r in rows.values()}
    assert unanswered == {4}  # boom and blank, each as written and re-cased
    assert data["asks"]["unanswered"] == 4
    assert (data["asks"]["failed"], data["asks"]["empty"]) == (2, 2)
    end = "asked 8 questions of 1 system(s); 4 unanswered (2 failed, 2 empty): patchy 4"
    assert end in proc.stdout
    assert "counted in the table's unanswered column" in proc.stdout


def test_two_callables_and_a_factory(tmp_path: Path) -> None:
    src = questions(tmp_path, ["Can I buy it?"])
    out = tmp_path / "o.jsonl"
    proc = ragtrace_eval(
        "-i", src, "-o", out, "-e", "looping",
        "--system-callable", f"{FIXTURES}:echo", "--system-callable", f"made={FIXTURES}:make_echo",
        "--perturb", "synonyms",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = read_jsonl(out)
    assert [(x["system"], x["id"]) for x in lines] == [
        ("echo", "q0"), ("echo", "q0~synonyms"), ("made", "q0"), ("made", "q0~synonyms")
    ]  # fmt: skip
    assert lines[1]["record"]["response"] == "You asked: Can I purchase it?"
    # The tokens and cost the system reported travel into every line.
    assert [x["usage"] for x in lines] == [
        {"input_tokens": 4, "output_tokens": 7, "cost_usd": 0.0004}
    ] * 4


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nocolon", "--system-callable 'nocolon': expected [NAME=]module:attr"),
        ("a b:c", "expected [NAME=]module:attr"),
        ("=m:a", "the NAME before '=' is empty"),
        ("no_such_module_xyz:f", "cannot import 'no_such_module_xyz': ModuleNotFoundError"),
        (f"{FIXTURES}:ech", "no attribute 'ech' (did you mean 'echo'?)"),
        (f"{FIXTURES}:NOT_A_SYSTEM", "int is not a LangChain runnable (.invoke), a LlamaIndex"),
        (f"{FIXTURES}:broken_factory", "the factory raised OSError: model file missing"),
    ],
)
def test_bad_system_callable_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, message: str
) -> None:
    src = questions(tmp_path, ["q"])
    out = tmp_path / "o.jsonl"
    code, err = in_process(capsys, "-i", src, "-o", out, "-e", "looping", "--system-callable", spec)
    assert code == 2, err
    assert err.startswith("ragtrace eval: ") and message in err
    assert not out.exists()


def test_other_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = questions(tmp_path, ["q"])
    out = tmp_path / "o.jsonl"
    base = ["-i", str(src), "-o", str(out), "-e", "looping"]
    cases = {
        ("--perturb", "typos"): "--perturb needs --system-callable",
        ("--system-callable", f"{FIXTURES}:echo", "--perturb", "typo"): "--perturb: unknown "
        "perturbation 'typo' (did you mean 'typos'?)",
        ("--system-callable", f"{FIXTURES}:echo", "--system-key", "model"): "--system-key does "
        "not apply with --system-callable",
        ("--system-callable", f"{FIXTURES}:echo", "--system-callable", f"{FIXTURES}:echo"): "a "
        "second system named 'echo'; name them: --system-callable NAME=module:attr",
        ("--perturb-seed", "-1"): "argument --perturb-seed: must be >= 0",
    }  # fmt: skip
    for args, message in cases.items():
        code, err = in_process(capsys, *base, *args)
        assert code == 2 and message in err, (args, err)
    assert not out.exists()


def test_answers_from_what_systems_return() -> None:
    from langchain_core.documents import Document
    from langchain_core.messages import AIMessage

    assert answer_from("hi").response == "hi"
    got = answer_from({"answer": "a", "source_documents": [
        Document(page_content="doc", id="d1", metadata={"score": 0.5}), "plain",
        {"page_content": "mapped", "id": 3, "score": float("nan")},
    ], "model": "m"})  # fmt: skip
    assert (got.response, got.model) == ("a", "m")
    assert [(c.text, c.id, c.score) for c in got.chunks] == [
        ("doc", "d1", 0.5), ("plain", None, None), ("mapped", "3", None)
    ]  # fmt: skip
    assert answer_from(AIMessage(content="msg")).response == "msg"
    assert answer_from({"response": None}).response is None
    for junk, message in [
        (42, "returned int 42; expected a string"),
        ({"x": 1}, "returned a mapping without any of response, answer"),
        ({"answer": 3}, "'answer' is int 3, not a string"),
        ({"answer": "a", "contexts": 5}, "contexts must be a list, got int 5"),
        ({"answer": "a", "contexts": [object()]}, "context 0 is object"),
        ({"answer": "a", "contexts": [{"id": 1}]}, "context 0 has no text"),
    ]:
        with pytest.raises(AnswerError, match=message):
            answer_from(junk)
    assert chunks_from(None) == () and chunks_from("one")[0].text == "one"
    assert parse_spec("n=pkg.mod:obj.attr").name == "n"
    assert parse_spec("pkg.mod:obj.attr").name == "attr"
    with pytest.raises(SystemSpecError):
        parse_spec("pkg.mod:")
