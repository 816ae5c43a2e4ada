"""The Phoenix check's three parts: the traffic it sends (``send``), what Phoenix holds read back
through its GraphQL API (``PhoenixApi``, ``api_checks``), and its UI in headless Chromium
(``ui_checks``; each part's notes are the comments above it).

``PhoenixApi(base_url)`` runs queries; ``api_checks(api, sent)`` compares each request's trace
with its record: the trace's latency against the root span's duration (within 10 ms), the
spans in the trace, the root's query (streamed requests too), every score as an annotation with
its label and score, filters on annotations and attributes (the ones docs/phoenix.md lists),
and the LLM span's input holding the chunk text.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import statistics
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._exporters.phoenix import PhoenixAnnotationSink
from ragtrace._exporters.phoenix_annotations import annotation_label
from ragtrace._model import Evaluation, RagRecord
from ragtrace.demo._app import build_chain
from ragtrace.demo._corpus import QUESTIONS
from ragtrace.evaluators import evaluator
from ragtrace.integrations.langchain import RagtraceCallbackHandler

PROJECT = "phoenix-check"
GROUNDING = "answer_grounding"
MODES = ("invoke", "stream", "astream", "invoke", "stream", "abandon")
_WORD = re.compile(r"[a-z0-9]+")


@evaluator(name=GROUNDING, requires={"response", "chunks"}, threshold=0.6)
def answer_grounding(record: RagRecord) -> float:
    """Share of the answer's words (3+ letters) that appear in the retrieved chunks."""
    words = [w for w in _WORD.findall((record.response or "").lower()) if len(w) > 2]
    context = set(_WORD.findall(" ".join(c.text for c in record.chunks).lower()))
    return sum(w in context for w in words) / len(words) if words else 0.0


INFORMATIONAL = "query_coverage"


@evaluator(name=INFORMATIONAL, requires={"query", "chunks"})
def query_coverage(record: RagRecord) -> float:
    """Share of the question's words (3+ letters) found in the chunks: no threshold, so no
    verdict (its annotation's label is ``none``)."""
    words = [w for w in _WORD.findall(record.query.lower()) if len(w) > 2]
    context = set(_WORD.findall(" ".join(c.text for c in record.chunks).lower()))
    return sum(w in context for w in words) / len(words) if words else 0.0


@dataclass
class Sent:
    """One request as ragtrace recorded it, with the verdicts of its scores."""

    mode: str
    record: RagRecord
    verdicts: dict[str, tuple[str | None, float | None]] = field(default_factory=dict)


class _Keep:
    """A score sink that keeps each record's scores by trace id."""

    def __init__(self) -> None:
        self.by_trace: dict[str, dict[str, tuple[str | None, float | None]]] = {}

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        kept = self.by_trace.setdefault(record.trace_id, {})
        for evaluation in evaluations:
            for score in evaluation.scores:
                kept[score.name] = (annotation_label(score), score.value)

    def shutdown(self) -> None:
        """Nothing to release."""


def send(base_url: str, n: int, seed: int = 7, project: str = PROJECT) -> list[Sent]:
    """Ask ``n`` questions through ragtrace (its ``app``, and so the Phoenix project, is
    ``project``), exporting spans (OTLP) and annotations to Phoenix at ``base_url``; return
    what was sent once every score is posted."""
    keep = _Keep()
    rt = ragtrace.init(
        app=project,
        registry=CollectorRegistry(),
        otlp_endpoint=base_url,
        phoenix_endpoint=base_url,
        evaluators=["looping", "sensitive_data", answer_grounding, query_coverage],
        score_sinks=[keep],
        shutdown_timeout_s=30,
    )
    records: list[RagRecord] = []
    rt.add_record_sink(records.append)
    chain = build_chain(seed=seed)
    config: Any = {"callbacks": [RagtraceCallbackHandler(rt)]}
    modes = [MODES[i % len(MODES)] for i in range(n)]
    try:
        for i, mode in enumerate(modes):
            question = QUESTIONS[(i * 7) % len(QUESTIONS)]
            with contextlib.suppress(Exception):  # the demo's model fails now and then
                _ask(chain, config, question, mode)
        if not rt.flush(60):
            raise RuntimeError("ragtrace did not hand everything on within 60 s")
        phoenix = next((s for s in rt.score_sinks if isinstance(s, PhoenixAnnotationSink)), None)
        if phoenix is not None and phoenix.dropped:
            raise RuntimeError(f"annotations were dropped: {phoenix.dropped}")
    finally:
        rt.shutdown()
    return [
        Sent(mode, record, keep.by_trace.get(record.trace_id, {}))
        for mode, record in zip(modes, records, strict=True)
    ]


def _ask(chain: Any, config: Any, question: str, mode: str) -> None:
    if mode == "invoke":
        chain.invoke(question, config=config)
    elif mode == "stream":
        "".join(chain.stream(question, config=config))
    elif mode == "astream":

        async def consume() -> None:
            async for _ in chain.astream(question, config=config):
                pass

        asyncio.run(consume())
    else:  # the user closed the tab after the first token
        stream = iter(chain.stream(question, config=config))
        next(stream, None)
        stream.close()  # type: ignore[attr-defined]


LATENCY_TOLERANCE_MS = 10.0


def passed(ok: bool, seen: Any) -> Any:
    """A check's result: True when ``ok``, else what was seen instead (for the report)."""
    return True if ok else seen


_SPANS = """query($id: ID!, $f: String, $after: String) { node(id: $id) { ... on Project {
  spans(first: 200, after: $after, filterCondition: $f) {
    pageInfo { hasNextPage endCursor }
    edges { node { id spanId name spanKind parentId latencyMs statusCode
      input { value } output { value }
      trace { traceId latencyMs }
      spanAnnotations { name label score explanation annotatorKind }
} } } } } }"""


class PhoenixApi:
    """Phoenix's GraphQL endpoint at ``base_url``."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")

    def query(self, text: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        body = json.dumps({"query": text, "variables": variables or {}}).encode()
        request = urllib.request.Request(
            f"{self.base_url}/graphql", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            answer: dict[str, Any] = json.loads(response.read())
        if answer.get("errors"):
            raise RuntimeError(f"GraphQL: {answer['errors'][0].get('message')}")
        return answer["data"]

    def project_id(self, name: str = PROJECT) -> str | None:
        edges = self.query("{ projects { edges { node { id name } } } }")["projects"]["edges"]
        return next((e["node"]["id"] for e in edges if e["node"]["name"] == name), None)

    def spans(self, project: str, condition: str | None = None) -> list[dict[str, Any]]:
        """Every span of ``project`` matching the span filter ``condition``."""
        out: list[dict[str, Any]] = []
        after = None
        while True:
            page = self.query(_SPANS, {"id": project, "f": condition, "after": after})
            spans = page["node"]["spans"]
            out.extend(edge["node"] for edge in spans["edges"])
            if not spans["pageInfo"]["hasNextPage"]:
                return out
            after = spans["pageInfo"]["endCursor"]

    def wait_for(self, sent: list[Sent], project: str = PROJECT, timeout_s: float = 120.0) -> str:
        """Wait until Phoenix has every request's root span with all its annotations; return
        the project's id."""
        deadline = time.monotonic() + timeout_s
        expected = sum(len(s.verdicts) for s in sent)
        last = "no project yet"
        while time.monotonic() < deadline:
            found = self.project_id(project)
            if found is not None:
                roots = self.spans(found, "parent_id is None")
                annotations = sum(len(r["spanAnnotations"]) for r in roots)
                if len(roots) >= len(sent) and annotations >= expected:
                    return found
                last = f"{len(roots)} of {len(sent)} roots, {annotations} of {expected} annotations"
            time.sleep(1.0)
        raise RuntimeError(f"Phoenix did not show everything within {timeout_s:g} s: {last}")


def expected_roots(sent: list[Sent], label: str) -> set[str]:
    """Span ids of the requests whose ``answer_grounding`` verdict is ``label``."""
    return {s.record.span_id for s in sent if s.verdicts.get(GROUNDING, (None, None))[0] == label}


DOC = Path(__file__).resolve().parents[1] / "docs" / "phoenix.md"


def documented_filters() -> list[tuple[str, str]]:
    """(what it finds, the filter) of each row of docs/phoenix.md's "Filters that work" table."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Filters that work", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| ([^|`]+?) \| `(.+)` \|$", section, re.M)
    return [(what.strip(), condition) for what, condition in rows]


def doc_filters(sent: list[Sent]) -> list[tuple[str, set[str] | None]]:
    """The filters docs/phoenix.md lists, read from the page, on this traffic, with the root
    spans each must keep (None: any number, the filter must parse and run). The page's
    ``faithfulness`` is this traffic's ``answer_grounding`` and its ``my_metric`` this traffic's
    ``query_coverage`` (lexical stand-ins); a row the check has no expectation for raises
    ``KeyError``."""
    failed = expected_roots(sent, "fail")
    low = {s.record.span_id for s in sent if (s.verdicts.get(GROUNDING, (None, 1.0))[1] or 0) < 0.5}
    abandoned = {s.record.span_id for s in sent if s.record.status == "abandoned"}
    errors = {s.record.span_id for s in sent if s.record.status == "error"}
    slow = {s.record.span_id for s in sent if (s.record.end_ns - s.record.start_ns) > 2000e6}
    no_verdict = {
        s.record.span_id for s in sent if s.verdicts.get(INFORMATIONAL, ("",))[0] == "none"
    }
    expected: dict[str, set[str] | None] = {
        "requests whose faithfulness failed": failed,
        "requests scored below 0.5 on faithfulness": low,
        "requests where an evaluator failed to score": set(),
        "the judge's verdicts that failed": set(),  # no judge in this traffic
        "requests scored by a metric with no threshold": no_verdict,
        "streamed answers the user abandoned": abandoned,
        "failed requests": errors,
        "retrievals that returned no chunk": None,
        "slow requests": slow,
    }
    names = {"['faithfulness']": f"['{GROUNDING}']", "['my_metric']": f"['{INFORMATIONAL}']"}
    found = []
    for what, documented_condition in documented_filters():
        condition = documented_condition
        for documented, sent_as in names.items():
            condition = condition.replace(documented, sent_as)
        found.append((condition, expected[what]))
    return found


def api_checks(api: PhoenixApi, project: str, sent: list[Sent]) -> dict[str, Any]:
    """Every check that Phoenix's API can answer exactly; returns {check: detail} where a
    detail of ``True`` means passed."""
    spans = api.spans(project)
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_trace.setdefault(span["trace"]["traceId"], []).append(span)
    checks: dict[str, Any] = {}
    latency_off, extra_spans, queries_off, annotations_off = [], [], [], []
    for s in sent:
        record = s.record
        trace = by_trace.get(record.trace_id, [])
        root = next((x for x in trace if x["parentId"] is None), None)
        if root is None:
            latency_off.append((record.trace_id, "missing"))
            continue
        duration_ms = (record.end_ns - record.start_ns) / 1e6
        if abs(root["trace"]["latencyMs"] - duration_ms) > LATENCY_TOLERANCE_MS:
            latency_off.append((record.trace_id, root["trace"]["latencyMs"], duration_ms))
        kinds = sorted(x["spanKind"] for x in trace)
        if kinds != ["chain", "llm", "retriever"]:
            extra_spans.append((record.trace_id, kinds))
        if (root["input"] or {}).get("value") != record.query:
            queries_off.append((s.mode, record.query, (root["input"] or {}).get("value")))
        shown = {a["name"]: (a["label"], a["score"]) for a in root["spanAnnotations"]}
        if shown != s.verdicts:
            annotations_off.append((record.trace_id, shown, s.verdicts))
    checks["trace latency = root span duration (within 10 ms), every request"] = passed(
        not latency_off, latency_off[:5]
    )
    durations = sorted((s.record.end_ns - s.record.start_ns) / 1e6 for s in sent)
    p50 = api.query(
        "query($id: ID!) { node(id: $id) { ... on Project {"
        " p50: latencyMsQuantile(probability: 0.5) p99: latencyMsQuantile(probability: 0.99)"
        " } } }",
        {"id": project},
    )["node"]
    ours = statistics.median(durations)
    checks["project latency p50 = requests' p50 (within 10 ms)"] = abs(
        p50["p50"] - ours
    ) <= LATENCY_TOLERANCE_MS or (p50["p50"], ours)
    checks["each trace holds the request's three spans only"] = not extra_spans or extra_spans[:5]
    streamed = [s for s in sent if s.mode != "invoke"]
    checks[f"root shows the query, {len(streamed)} streamed requests included"] = passed(
        bool(streamed) and not queries_off, queries_off[:5]
    )
    checks["every score is an annotation with its label and score"] = passed(
        not annotations_off, annotations_off[:3]
    )
    kinds = {a["annotatorKind"] for x in spans for a in x["spanAnnotations"]}
    checks["annotator kind CODE for ragtrace's local evaluators"] = passed(kinds == {"CODE"}, kinds)
    for condition, roots in doc_filters(sent):
        found = api.spans(project, condition)
        got = {x["spanId"] for x in found}
        ok = roots is None or got == roots
        checks[f"filter {condition!r} keeps {'its' if roots is None else len(roots)} spans"] = (
            passed(ok, (sorted(got), sorted(roots or ())))
        )
    failed = expected_roots(sent, "fail")
    checks["a failed annotation exists, and a passed one"] = bool(failed) and len(failed) < len(
        sent
    )
    llm_ok = []
    for s in sent:
        llm = next((x for x in by_trace.get(s.record.trace_id, []) if x["spanKind"] == "llm"), None)
        text = (llm or {}).get("input", {}) or {}
        llm_ok.append(bool(s.record.chunks) and s.record.chunks[0].text in str(text.get("value")))
    checks["LLM span input holds the retrieved chunk text"] = passed(
        all(llm_ok), llm_ok.count(False)
    )
    return checks


# Phoenix's UI in headless Chromium (Debian's, through Playwright): what a person sees.
#
# ``ui_checks(base_url, project_id, sent, out)`` opens the project's root spans with a column per
# evaluator's annotation, checks the scores and latencies shown there, types a filter on a failed
# annotation, opens a streamed request's trace (its query, its annotations with their labels, the
# retriever's documents) and the Playground from its LLM span, and screenshots each page into
# ``out``. Pages load slowly on a busy machine: every wait is generous.

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.components import launch_chromium

LOAD_MS = 300_000
RELOAD_AFTER_MS = 60_000
RELOADS = 5
VIEWPORT = {"width": 1800, "height": 1050}
WIDE = {"width": 2500, "height": 1050}
_SCORE = re.compile(r"μ\s*(-?\d+(?:\.\d+)?)")
_LATENCY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)\s*$")


def ui_checks(
    base_url: str, project: str, sent: list[Sent], out: Path, api: PhoenixApi
) -> dict[str, Any]:
    """Drive the UI; returns {check: True or what was seen instead}."""
    from playwright.sync_api import sync_playwright

    run = _Run(base_url, project, sent, out, api)
    with sync_playwright() as p:
        browser = launch_chromium(p)
        run.page = browser.new_page(viewport=VIEWPORT)
        run.page.set_default_timeout(LOAD_MS)
        steps = [
            ("requests page", run.requests_page),
            ("filter", run.filter),
            ("trace page", run.trace_page),
            ("playground", run.playground),
        ]
        try:
            for name, step in steps:
                try:
                    step()
                except Exception as exc:
                    seen = f"{type(exc).__name__}: {exc}"
                    run.checks[f"{name} loads and can be read"] = seen[:600]
                    with contextlib.suppress(Exception):
                        run.page.screenshot(path=str(out / f"failed-{name.replace(' ', '-')}.png"))
        finally:
            browser.close()
    return run.checks


@dataclass
class _Run:
    """What every step of one UI run shares."""

    base_url: str
    project: str
    sent: list[Sent]
    out: Path
    api: PhoenixApi
    page: Any = None
    checks: dict[str, Any] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return sorted({name for s in self.sent for name in s.verdicts})

    def requests_page(self) -> None:
        """Root spans with a column per annotation: scores and latencies as shown."""
        self.page.set_viewport_size(WIDE)  # every annotation column beside the stats panel
        _open_spans(self.page, self.base_url, self.project)
        self.page.get_by_role("button", name="Columns").click()
        for label in [*self.names, "error", "user", "annotations"]:
            item = self.page.locator("li[data-column-id]").filter(
                has_text=re.compile("^" + re.escape(label) + r"(\s*span)?$")
            )
            if item.count():
                item.first.click()
        self.page.keyboard.press("Escape")
        self.page.wait_for_timeout(1500)
        self.page.screenshot(path=str(self.out / "requests.png"))
        heads = [h.strip() for h in self.page.locator("table thead th").all_inner_texts()]
        expected = {(s.record.query, (s.record.response or "")[:40]): s for s in self.sent}
        missing_columns = [n for n in self.names if n not in heads]
        self.checks["a column per evaluator's annotation"] = passed(
            not missing_columns, missing_columns
        )
        score_off, latency_off, matched = [], [], 0
        for row in range(_rows(self.page).count()):
            cells = [c.strip() for c in _rows(self.page).nth(row).locator("td").all_inner_texts()]
            if len(cells) != len(heads):
                continue
            shown = dict(zip(heads, cells, strict=True))
            s = next(
                (
                    v
                    for (q, a), v in expected.items()
                    if q == shown["input"] and a[:20] in shown["output"]
                ),
                None,
            )
            if s is None:
                continue
            matched += 1
            for name in self.names:
                value = s.verdicts.get(name, (None, None))[1]
                found = _SCORE.search(shown.get(name, ""))
                if value is None and found is None:
                    continue  # not scored (an error request has no answer to judge)
                if value is None or found is None or abs(float(found.group(1)) - value) >= 0.01:
                    score_off.append((s.record.query, name, shown.get(name), value))  # shown cut
            ms = _milliseconds(shown.get("latency", ""))
            duration = (s.record.end_ns - s.record.start_ns) / 1e6
            if ms is None or abs(ms - duration) > LATENCY_TOLERANCE_MS + 1:  # shown rounded to 1 ms
                latency_off.append((s.record.query, shown.get("latency"), round(duration, 2)))
        self.checks[f"rows shown for the requests ({matched} of {len(self.sent)} matched)"] = (
            passed(matched >= min(len(self.sent), 10), matched)
        )
        self.checks["annotation columns show each evaluator's score"] = passed(
            not score_off, score_off[:4]
        )
        self.checks["latency column = root span duration (within 10 ms)"] = passed(
            not latency_off, latency_off[:4]
        )
        stats = self.page.locator("text=Latency P50").locator("xpath=..").inner_text()
        p50 = _milliseconds(stats.split("\n")[-1])
        ours = statistics.median((s.record.end_ns - s.record.start_ns) / 1e6 for s in self.sent)
        self.checks["self.project latency P50 shown = requests' p50 (within 10 ms)"] = passed(
            p50 is not None and abs(p50 - ours) <= LATENCY_TOLERANCE_MS + 1, (stats, ours)
        )

    def filter(self) -> None:
        """The filter on a failed annotation keeps exactly the requests that failed it."""
        condition = f"parent_id is None and annotations['{GROUNDING}'].label == 'fail'"
        editor = self.page.locator(".cm-content").first
        editor.click()
        self.page.keyboard.press("Control+a")
        self.page.keyboard.insert_text(condition)
        self.page.keyboard.press("Escape")
        self.page.keyboard.press("Enter")
        failed = {
            s.record.query
            for s in self.sent
            if s.record.span_id in expected_roots(self.sent, "fail")
        }
        with contextlib.suppress(Exception):  # the count below says what was shown
            self.page.wait_for_function(
                "n => document.querySelectorAll('table tbody tr').length <= n", arg=len(failed)
            )
        self.page.wait_for_timeout(1500)
        self.page.screenshot(path=str(self.out / "filter.png"))
        self.page.set_viewport_size(VIEWPORT)
        shown = [
            [c.strip() for c in _rows(self.page).nth(i).locator("td").all_inner_texts()]
            for i in range(_rows(self.page).count())
        ]
        queries = {q for row in shown for q in row if q in failed}
        self.checks[
            f"filter on a failed annotation shows exactly the {len(failed)} failed requests"
        ] = passed(
            len(shown) == len(failed) and queries == failed, ([r[:6] for r in shown], failed)
        )

    def trace_page(self) -> None:
        """A streamed request's trace: its query, its annotations (labels), its documents."""
        failed = expected_roots(self.sent, "fail")
        streamed = [s for s in self.sent if s.mode in ("stream", "astream") and s.record.chunks]
        s = next((x for x in streamed if x.record.span_id in failed), streamed[0])
        self.page.goto(f"{self.base_url}/projects/{self.project}/traces/{s.record.trace_id}")
        self.page.get_by_text(s.record.query or "", exact=False).first.wait_for()
        self.page.wait_for_timeout(1500)
        self.page.screenshot(path=str(self.out / "trace.png"))
        body = self.page.inner_text("body")
        self.checks["a streamed request's trace shows its query"] = (s.record.query or "") in body
        self.page.locator(
            "h3", has_text=re.compile("^Annotations")
        ).first.click()  # open the section
        self.page.get_by_text("Table", exact=True).first.click()  # name, annotator, label, score
        self.page.get_by_text("CODE", exact=True).first.wait_for()
        self.page.wait_for_timeout(1000)
        self.page.screenshot(path=str(self.out / "annotations.png"))
        body = self.page.inner_text("body")
        labels_off = [
            (name, label)
            for name, (label, _) in s.verdicts.items()
            if not re.search(rf"{re.escape(name)}\s+CODE\s+{label}\s", body)
        ]
        self.checks["the trace's annotations show each evaluator's label"] = passed(
            not labels_off, labels_off
        )
        retriever = self.page.get_by_text("CorpusRetriever").first
        retriever.click()
        self.page.wait_for_timeout(1500)
        self.page.screenshot(path=str(self.out / "documents.png"))
        body = self.page.inner_text("body")
        ids = [c.id for c in s.record.chunks if c.id]
        self.checks["the retriever's documents show with their ids"] = passed(
            all(i in body for i in ids), ids
        )

    def playground(self) -> None:
        """Replay an LLM span in the Playground: its prompt holds the retrieved text."""
        s = next(x for x in self.sent if x.mode == "invoke" and x.record.chunks)
        llm = next(
            x
            for x in self.api.spans(
                self.project, f"span_kind == 'LLM' and trace_id == '{s.record.trace_id}'"
            )
        )
        self.page.goto(f"{self.base_url}/playground/spans/{llm['id']}")
        chunk = s.record.chunks[0].text
        self.page.get_by_text("LLM Span Replay").first.wait_for()
        self.page.get_by_text(chunk[:40], exact=False).first.wait_for()
        self.page.wait_for_timeout(1000)
        self.page.screenshot(path=str(self.out / "playground.png"))
        body = self.page.inner_text("body")
        self.checks["Playground replay of the LLM span holds the chunk text"] = (
            chunk[:200] in body or (body[:600])
        )


def _rows(page: Any) -> Any:
    return page.locator("table tbody tr:visible")


def _open_spans(page: Any, base_url: str, project: str) -> None:
    """The project's root spans; a page whose table does not fill within a minute (seen on a
    busy machine, the first time) is loaded again."""
    for attempt in range(RELOADS):
        page.goto(f"{base_url}/projects/{project}/spans", wait_until="domcontentloaded")
        try:
            _rows(page).first.wait_for(timeout=RELOAD_AFTER_MS)
            return
        except Exception:
            if attempt == RELOADS - 1:
                raise


def _milliseconds(text: str) -> float | None:
    found = _LATENCY.match(text or "")
    if found is None:
        return None
    value, unit = float(found.group(1)), found.group(2)
    return value * {"ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]
