"""Real Arize Phoenix on loopback, read back through its API and its UI in headless Chromium.

One Phoenix serves the module (``phoenix_check.serving``); each test writes to a project of its
own.

- The demo's chain: ``benchmarks/phoenix_check.py`` (see its docs and docs/phoenix.md) sends it
  through ragtrace, then runs every check (trace latency = the root span's duration, streamed
  queries shown, each evaluator's score and label as annotations, a filter on a failed
  annotation keeping exactly the failed requests, the Playground replay holding the chunk text,
  the docs' filters).
- Sessions: a LangChain ``create_agent`` agent with a LangGraph checkpointer answers two turns
  of one thread (and one turn of another between them); Phoenix's GraphQL and REST APIs must
  hold exactly one session for the thread with both turns (their questions and answers, each
  an AGENT trace with its TOOL, RETRIEVER under the TOOL, and LLM spans), its Sessions tab
  must show the thread and keep it alone under the docs' filter, and the session's page must
  show both turns (screenshots ``sessions.png`` and ``session.png`` in the test's tmp dir).

Phoenix lives in an environment of its own (it wants ``openai>=3``, litellm ``openai<3``):
``RAGTRACE_PHOENIX_PYTHON``, ``.venv-phoenix`` (``make phoenix-env``) or ``../phoenix-venv``.
Missing, the tests are skipped, and fail under ``CI=true``.
"""

from __future__ import annotations

import json
import re
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ragtrace._model import RagRecord
from tests.components import missing_component

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.integration


def _phoenix_check() -> ModuleType:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import phoenix_check
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return phoenix_check


@pytest.fixture(scope="module")
def phoenix() -> Iterator[str]:
    """One fresh Phoenix for the module's tests; its base URL."""
    phoenix_check = _phoenix_check()
    python = phoenix_check.phoenix_python()
    if python is None:
        missing_component(
            "no Phoenix environment: make phoenix-env (or set RAGTRACE_PHOENIX_PYTHON)"
        )
    with phoenix_check.serving(python) as base_url:
        yield base_url


def test_phoenix_shows_requests_scores_and_prompts_as_it_should(
    phoenix: str, tmp_path: Path
) -> None:
    phoenix_check = _phoenix_check()
    python = phoenix_check.phoenix_python()
    summary = phoenix_check.run(python, requests=18, out=tmp_path, base_url=phoenix)
    assert summary["checks"], summary
    failures = summary["failures"]
    assert not failures, "\n".join(f"{k}: {v}" for k, v in failures.items())
    for name in phoenix_check.SCREENSHOTS:
        assert (tmp_path / name).stat().st_size > 10_000, name


# -- sessions: two turns of one thread ------------------------------------------------------------

SESSIONS_PROJECT = "phoenix-sessions"
USER = "u-phoenix"
# (thread, question, the agent's search, its answer), in the order they are asked.
CHAT = (
    ("main", "How long is the Aurora warranty?", "aurora warranty", "The Aurora: 3 years."),
    ("other", "How long does installation take?", "installation", "Installation takes one day."),
    ("main", "And the Borealis?", "borealis warranty", "The Borealis: 5 years."),
)
WAIT_S = 120.0  # for Phoenix to hold the chat's spans
UI_WAIT_MS = 120_000  # for each page to show what is waited for (a busy machine is slow)

_SESSIONS = """query($id: ID!, $f: String) { node(id: $id) { ... on Project {
  sessionCount(sessionFilterCondition: $f)
  sessions(first: 50, sessionFilterCondition: $f) { edges { node {
    id sessionId numTraces userId firstInput { value } lastOutput { value }
    traces(first: 10) { edges { node { traceId } } }
} } } } } }"""

_SPANS = """query($id: ID!, $f: String) { node(id: $id) { ... on Project {
  spans(first: 100, filterCondition: $f) { edges { node {
    spanId parentId spanKind attributes input { value } output { value } trace { traceId }
} } } } } }"""


def _chat(base_url: str, threads: dict[str, str]) -> list[tuple[str, RagRecord]]:
    """Ask ``CHAT`` of a ``create_agent`` agent (LangChain's fake chat model, a retriever tool,
    LangGraph's ``InMemorySaver``) through ragtrace, spans going to Phoenix over OTLP; each
    turn's thread key with its record."""
    from langchain_core.messages import BaseMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from prometheus_client import CollectorRegistry

    import ragtrace
    from ragtrace.integrations.langchain import RagtraceCallbackHandler
    from tests.integrations.lc_agent_app import answer, retriever_agent, tool_call

    replies: list[BaseMessage] = []
    for i, (_, _, search, reply) in enumerate(CHAT):
        replies += [tool_call("search_kb", f"call-{i}", query=search), answer(reply)]
    agent = retriever_agent(replies, checkpointer=InMemorySaver())
    rt = ragtrace.init(
        app=SESSIONS_PROJECT,
        registry=CollectorRegistry(),
        otlp_endpoint=base_url,
        evaluators=[],
        shutdown_timeout_s=30,
    )
    records: list[RagRecord] = []
    rt.add_record_sink(records.append)
    handler = RagtraceCallbackHandler(rt)
    try:
        for key, question, _, _ in CHAT:
            config: Any = {
                "callbacks": [handler],
                "configurable": {"thread_id": threads[key]},
                "metadata": {"user_id": USER},
            }
            agent.invoke({"messages": [("user", question)]}, config)
        assert rt.flush(60), "ragtrace did not hand everything on within 60 s"
    finally:
        rt.shutdown()  # exports the last spans
    assert len(records) == len(CHAT), [r.query for r in records]
    return [(key, record) for (key, *_), record in zip(CHAT, records, strict=True)]


def _graphql(base_url: str, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps({"query": query, "variables": variables}).encode()
    request = urllib.request.Request(
        f"{base_url}/graphql", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        answer: dict[str, Any] = json.loads(response.read())
    assert not answer.get("errors"), answer["errors"]
    return answer["data"]


def _edges(connection: dict[str, Any]) -> list[dict[str, Any]]:
    return [edge["node"] for edge in connection["edges"]]


def _wait_for_traces(base_url: str, records: list[RagRecord]) -> tuple[str, list[dict[str, Any]]]:
    """Wait until Phoenix holds every span (five a turn) of the ``records``' traces; the
    sessions project's id and those spans."""
    condition = " or ".join(f"trace_id == '{r.trace_id}'" for r in records)
    deadline = time.monotonic() + WAIT_S
    last = "no project yet"
    while time.monotonic() < deadline:
        projects = _graphql(base_url, "{ projects { edges { node { id name } } } }", {})
        found = next(
            (p["id"] for p in _edges(projects["projects"]) if p["name"] == SESSIONS_PROJECT), None
        )
        if found is not None:
            spans = _edges(
                _graphql(base_url, _SPANS, {"id": found, "f": condition})["node"]["spans"]
            )
            if len(spans) >= 5 * len(records):
                return found, spans
            last = f"{len(spans)} of {5 * len(records)} spans"
        time.sleep(1.0)
    raise AssertionError(f"Phoenix did not hold the chat within {WAIT_S:g} s: {last}")


def _sessions(base_url: str, project: str, condition: str | None = None) -> dict[str, Any]:
    return _graphql(base_url, _SESSIONS, {"id": project, "f": condition})["node"]


def test_two_turns_of_a_thread_are_one_session_in_phoenix(phoenix: str, tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:12]
    threads = {"main": f"thread-{run}", "other": f"thread-{run}-other"}
    thread = threads["main"]
    asked = _chat(phoenix, threads)
    turns = [record for key, record in asked if key == "main"]
    assert [r.conversation and (r.conversation.session_id, r.conversation.turn) for r in turns] == [
        (thread, 0),
        (thread, 1),
    ]
    project, spans = _wait_for_traces(phoenix, [record for _, record in asked])

    # Phoenix's Sessions, through GraphQL: one session per thread, the thread's holding both turns.
    listed = _edges(_sessions(phoenix, project)["sessions"])
    ours = [s for s in listed if s["sessionId"] in threads.values()]
    assert sorted(s["sessionId"] for s in ours) == sorted(threads.values()), listed
    by_id = {s["sessionId"]: s for s in ours}
    session = by_id[thread]
    assert {k: v for k, v in session.items() if k not in ("id", "traces")} == {
        "sessionId": thread,
        "numTraces": 2,
        "userId": USER,
        "firstInput": {"value": CHAT[0][1]},
        "lastOutput": {"value": CHAT[2][3]},
    }
    assert [t["traceId"] for t in _edges(session["traces"])] == [r.trace_id for r in turns]
    assert by_id[threads["other"]]["numTraces"] == 1
    filtered = _sessions(phoenix, project, f"session_id == '{thread}'")  # the docs' filter
    assert filtered["sessionCount"] == 1
    assert [s["sessionId"] for s in _edges(filtered["sessions"])] == [thread]
    partly = _sessions(phoenix, project, f"'{run.upper()}' in session_id")  # any case, a part
    assert sorted(s["sessionId"] for s in _edges(partly["sessions"])) == sorted(threads.values())

    # The same through Phoenix's REST API.
    url = f"{phoenix}/v1/projects/{SESSIONS_PROJECT}/sessions"
    with urllib.request.urlopen(url, timeout=60) as response:
        rest = json.loads(response.read())["data"]
    held = {s["session_id"]: [t["trace_id"] for t in s["traces"]] for s in rest}
    assert held[thread] == [r.trace_id for r in turns]

    # Each turn: an AGENT trace with its question and answer, the RETRIEVER under the TOOL.
    for i, record in enumerate(turns):
        trace = [s for s in spans if s["trace"]["traceId"] == record.trace_id]
        kinds = sorted(s["spanKind"] for s in trace)
        assert kinds == ["agent", "llm", "llm", "retriever", "tool"], kinds
        (root,) = [s for s in trace if s["parentId"] is None]
        (tool,) = [s for s in trace if s["spanKind"] == "tool"]
        (retriever,) = [s for s in trace if s["spanKind"] == "retriever"]
        assert root["spanKind"] == "agent" and root["spanId"] == record.span_id
        assert tool["parentId"] == root["spanId"]
        assert retriever["parentId"] == tool["spanId"]
        assert {s["parentId"] for s in trace if s["spanKind"] == "llm"} == {root["spanId"]}
        _, question, search, reply = [c for c in CHAT if c[0] == "main"][i]
        assert (root["input"]["value"], root["output"]["value"]) == (question, reply)
        assert retriever["input"]["value"] == search
        attributes = json.loads(root["attributes"])
        assert attributes["session"] == {"id": thread}
        assert attributes["user"] == {"id": USER}
        assert attributes["gen_ai"]["conversation"] == {"id": thread}
        conversation = attributes["ragtrace"]["conversation"]  # the other thread stays out
        assert (conversation["turn"], conversation.get("history_turns", 0)) == (i, 2 * i)
    roots = _graphql(
        phoenix, _SPANS, {"id": project, "f": f"attributes['session']['id'] == '{thread}'"}
    )["node"]["spans"]
    assert sorted(s["spanId"] for s in _edges(roots)) == sorted(r.span_id for r in turns)

    # Phoenix's Sessions tab and the session's page, in Chromium.
    seen = _sessions_ui(phoenix, project, session["id"], threads, tmp_path)
    assert thread in seen["sessions tab"] and threads["other"] in seen["sessions tab"]
    assert [row for row in seen["filtered rows"] if thread in row] == seen["filtered rows"]
    assert len(seen["filtered rows"]) == 1, seen["filtered rows"]
    page = seen["session page"]
    assert thread in page, page[:1500]
    assert re.search(r"Turns\s+2\b", page), page[:1500]
    texts = [
        text for key, question, _, reply in CHAT if key == "main" for text in (question, reply)
    ]
    assert [t for t in texts if t not in page] == [], page[:1500]
    assert CHAT[1][1] not in page  # the other thread's question
    for name in ("sessions.png", "session.png"):
        assert (tmp_path / name).stat().st_size > 10_000, name


FILTER_TRIES = 3


def _filter_sessions(page: Any, condition: str, out: Path) -> None:
    """Type ``condition`` into the Sessions tab's filter and wait until one row is left. On a
    busy machine a keystroke can land before the editor takes it, so the condition is typed
    again (``FILTER_TRIES`` times at most) until the table narrows; the last try's page is kept
    as ``filter-<n>.png`` in ``out``."""
    from playwright.sync_api import TimeoutError as PageTimeout

    one_row = "() => document.querySelectorAll('table tbody tr').length === 1"
    for attempt in range(1, FILTER_TRIES + 1):
        editor = page.locator(".cm-content").first  # "filter condition (e.g. ...)"
        editor.click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(condition)
        page.keyboard.press("Escape")
        page.keyboard.press("Enter")
        try:
            page.wait_for_function(one_row, timeout=UI_WAIT_MS // FILTER_TRIES)
            return
        except PageTimeout:
            page.screenshot(path=str(out / f"filter-{attempt}.png"))
            if attempt == FILTER_TRIES:
                raise AssertionError(
                    f"the Sessions tab kept its rows after {FILTER_TRIES} tries of the filter "
                    f"{condition!r} (the editor holds {editor.inner_text()!r}; screenshots "
                    f"in {out})"
                ) from None


def _sessions_ui(
    base_url: str, project: str, session: str, threads: dict[str, str], out: Path
) -> dict[str, Any]:
    """The Sessions tab's text, its rows under the filter ``session_id == '<thread>'``, and the
    thread's session page's text; screenshots of both pages in ``out``."""
    from playwright.sync_api import sync_playwright

    from tests.components import launch_chromium

    thread = threads["main"]
    seen: dict[str, Any] = {}
    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            page = browser.new_page(viewport={"width": 1800, "height": 1050})
            page.set_default_timeout(UI_WAIT_MS)
            page.goto(f"{base_url}/projects/{project}/sessions")
            page.get_by_text(threads["other"]).first.wait_for()
            seen["sessions tab"] = page.inner_text("body")
            _filter_sessions(page, f"session_id == '{thread}'", out)
            rows = page.locator("table tbody tr:visible")
            page.get_by_text(thread).first.wait_for()
            page.wait_for_timeout(1000)
            page.screenshot(path=str(out / "sessions.png"))
            seen["filtered rows"] = rows.all_inner_texts()
            page.goto(
                f"{base_url}/projects/{project}/sessions/{urllib.parse.quote(session, safe='')}"
            )
            drawer = page.get_by_role("dialog").first  # the session, over the Sessions tab
            drawer.get_by_text(CHAT[2][3]).first.wait_for()
            page.wait_for_timeout(1000)
            page.screenshot(path=str(out / "session.png"))
            seen["session page"] = drawer.inner_text()
        finally:
            browser.close()
    return seen
