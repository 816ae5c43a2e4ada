"""End to end in headless Chromium: a reviewer opens the queue, filters it, opens a record,
labels it with the keyboard; the label lands in the store and the metrics move. The record page
is kept as a screenshot in ``test-artifacts/review/`` (git-ignored)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from ragtrace._model import Chunk, Evaluation, RagRecord, Score
from ragtrace.review import QueueFilter, ReviewRules, ReviewSink
from ragtrace.review._httpd import ReviewServer, serve_review
from ragtrace.review._pages import TraceLinks
from ragtrace.review._store import SqlReviewStore
from ragtrace.review._wiring import build_app
from tests.components import launch_chromium, require_module

pytestmark = pytest.mark.integration

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "review"
PAYLOAD = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def evaluation(name: str, value: float, passed: bool, kind: str, **details: Any) -> Evaluation:
    score = Score(
        name,
        value,
        label="pass" if passed else "fail",
        threshold=0.5,
        passed=passed,
        evaluator_kind=kind,
        explanation=f"{name} says {'pass' if passed else 'fail'} "  # type: ignore[arg-type]
        f"{PAYLOAD}",
        details=details,
    )
    return Evaluation(name, (score,), 0, 1)


def fill_queue(store: SqlReviewStore) -> None:
    """Three flagged requests through the real sink and rules, one with hostile content."""
    sink = ReviewSink(store, ReviewRules(sample_rate=0.0))
    hostile = RagRecord(
        trace_id=TRACE,
        span_id="00f067aa0ba902b7",
        app="aurora-help",
        model="aurora-1",
        query=f"When did Aurora open its Lyon office? {PAYLOAD}",
        chunks=(
            Chunk(f"Aurora opened in Paris in 2015. {PAYLOAD}", id="kb-12", score=0.81),
            Chunk("Offices: Paris, Berlin.", id="kb-3", score=0.42),
        ),
        response="Aurora opened its Lyon office in 2019. Offices are in Paris and Berlin.",
        end_ns=1_790_000_000 * 10**9,
    )
    sink.export(
        hostile,
        [
            evaluation("groundedness", 0.9, True, "model", chunks=[0.92, 0.35]),
            evaluation(
                "faithfulness",
                0.2,
                False,
                "judge",
                unsupported=["Aurora opened its Lyon office in 2019."],
            ),
        ],
    )
    for n, (name, kind) in enumerate((("pii_leakage", "model"), ("looping", "lexical")), 1):
        record = RagRecord(
            trace_id=f"{n:032x}",
            span_id=f"{n:016x}",
            app="aurora-help",
            query=f"question {n}",
            response=f"answer {n}",
            end_ns=1_790_000_000 * 10**9 + n,
        )
        sink.export(record, [evaluation(name, 0.1, False, kind)])
    assert store.count() == 3


@pytest.fixture
def review(sqlite_store: SqlReviewStore) -> Iterator[tuple[ReviewServer, CollectorRegistry]]:
    fill_queue(sqlite_store)
    registry = CollectorRegistry()
    app = build_app(sqlite_store, registry=registry, links=TraceLinks("jaeger"))
    with serve_review(app, "127.0.0.1", 0) as server:
        yield server, registry
    app.close()


def metric(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_a_reviewer_filters_opens_and_labels_with_the_keyboard(
    review: tuple[ReviewServer, CollectorRegistry], sqlite_store: SqlReviewStore
) -> None:
    server, registry = review
    sync_api = require_module(
        "playwright.sync_api",
        "pip install playwright (it drives Debian's chromium; never `playwright install`)",
    )
    labels_bad = {"app": "aurora-help", "verdict": "bad", "failure_type": "hallucination"}
    assert metric(registry, "ragtrace_review_labels_total", **labels_bad) is None
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("dialog", lambda d: (problems.append(f"dialog {d.message}"), d.dismiss()))
            page.on("pageerror", lambda exc: problems.append(f"page error {exc}"))
            page.goto(server.url + "/queue")
            assert page.locator("tr[data-href]").count() == 3
            page.screenshot(path=str(ARTIFACTS / "queue-page.png"), full_page=True)
            # Filter: only the cheap evaluator and the judge disagreeing.
            page.select_option("select[name=reason]", "disagreement")
            page.click("form.filters button[type=submit]")
            page.wait_for_url("**/queue?*reason=disagreement*")
            rows = page.locator("tr[data-href]")
            assert rows.count() == 1
            assert PAYLOAD in rows.first.inner_text()  # shown as text, not run
            # Open it from the keyboard: j selects the first row, o opens it.
            page.keyboard.press("j")
            assert "selected" in (rows.first.get_attribute("class") or "")
            page.keyboard.press("o")
            page.wait_for_url("**/item/*")
            item_id = int(page.url.split("/item/")[1].split("?")[0])
            assert page.inner_text("#query").endswith(PAYLOAD)
            mark = page.locator("#answer mark.unsupported")
            assert mark.inner_text() == "Aurora opened its Lyon office in 2019."
            assert (
                page.locator("ol.chunks li")
                .first.inner_text()
                .startswith("#1 · kb-12 · retrieval score 0.810 · groundedness 0.920")
            )
            trace_link = page.locator(f"a[href='http://localhost:16686/trace/{TRACE}']")
            assert trace_link.count() == 1
            # Even if something slipped through, the policy stops inline script.
            page.evaluate(
                "() => { const s = document.createElement('script');"
                " s.textContent = 'window.__pwned = 3'; document.body.appendChild(s); }"
            )
            assert page.evaluate("() => window.__pwned === undefined")
            page.keyboard.press("?")
            assert page.locator("#help").is_visible()
            page.keyboard.press("?")
            page.screenshot(path=str(ARTIFACTS / "record-page.png"), full_page=True)
            # Label it: b (bad), 1 (hallucination), n + notes, c + corrected answer, s (save).
            page.keyboard.press("b")
            page.keyboard.press("1")
            page.keyboard.press("n")
            page.keyboard.type("The judge is right: Lyon is not in the chunks.")
            page.keyboard.press("Escape")
            page.keyboard.press("c")
            page.keyboard.type("Aurora has offices in Paris and Berlin; none in Lyon.")
            page.keyboard.press("Escape")
            with page.expect_response(lambda r: r.request.method == "POST") as posted:
                page.keyboard.press("s")
            response = posted.value
            assert response.status == 303
            page.wait_for_url("**saved=*")
            assert "Label saved for item" in page.inner_text("main")
            page.screenshot(path=str(ARTIFACTS / "after-label.png"), full_page=True)
        finally:
            browser.close()
    assert problems == []
    (stored,) = sqlite_store.labels(item_id)
    assert stored.label.verdict == "bad"
    assert stored.label.failure_type == "hallucination"
    assert stored.label.notes == "The judge is right: Lyon is not in the chunks."
    assert stored.label.corrected_answer == "Aurora has offices in Paris and Berlin; none in Lyon."
    assert sqlite_store.count(QueueFilter(reason="disagreement")) == 0  # left the queue
    # The metrics moved: a human verdict, a label, agreement of the judge and the model.
    assert metric(registry, "ragtrace_review_labels_total", **labels_bad) == 1
    assert (
        metric(
            registry,
            "ragtrace_evaluations_total",
            evaluator="human",
            app="aurora-help",
            outcome="fail",
        )
        == 1
    )
    agreement = {"app": "aurora-help"}
    assert (
        metric(
            registry,
            "ragtrace_review_agreement",
            evaluator="faithfulness",
            kind="judge",
            **agreement,
        )
        == 1.0
    )
    assert (
        metric(
            registry,
            "ragtrace_review_agreement",
            evaluator="groundedness",
            kind="model",
            **agreement,
        )
        == 0.0
    )
    assert (ARTIFACTS / "record-page.png").stat().st_size > 10_000
