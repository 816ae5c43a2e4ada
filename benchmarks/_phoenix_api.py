"""What Phoenix holds, read back through its GraphQL API, checked against what ragtrace sent.

``PhoenixApi(base_url)`` runs queries; ``api_checks(api, sent)`` compares each request's trace
with its record: the trace's latency against the root span's duration (within 10 ms), the
spans in the trace, the root's query (streamed requests too), every score as an annotation with
its label and score, filters on annotations and attributes (the ones docs/phoenix.md lists),
and the LLM span's input holding the chunk text.
"""

from __future__ import annotations

import json
import statistics
import time
import urllib.request
from typing import Any

from _phoenix_traffic import GROUNDING, PROJECT, Sent

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


def doc_filters(sent: list[Sent]) -> list[tuple[str, set[str] | None]]:
    """The filters docs/phoenix.md lists, on this traffic, with the root spans each must keep
    (None: any number, the filter must parse and run)."""
    failed = expected_roots(sent, "fail")
    low = {s.record.span_id for s in sent if (s.verdicts.get(GROUNDING, (None, 1.0))[1] or 0) < 0.5}
    abandoned = {s.record.span_id for s in sent if s.record.status == "abandoned"}
    errors = {s.record.span_id for s in sent if s.record.status == "error"}
    return [
        (f"annotations['{GROUNDING}'].label == 'fail'", failed),
        (f"annotations['{GROUNDING}'].score < 0.5", low),
        (f"annotations['{GROUNDING}'].label == 'error'", set()),
        (
            "parent_id is None and attributes['ragtrace']['request']['status'] == 'abandoned'",
            abandoned,
        ),
        ("parent_id is None and status_code == 'ERROR'", errors),
        (
            "span_kind == 'RETRIEVER' and attributes['ragtrace']['retrieval']['chunks_total'] == 0",
            None,
        ),
        ("latency_ms > 2000", None),
    ]


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
