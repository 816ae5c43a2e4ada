"""Phoenix's UI in headless Chromium (Debian's, through Playwright): what a person sees.

``ui_checks(base_url, project_id, sent, out)`` opens the project's root spans with a column per
evaluator's annotation, checks the scores and latencies shown there, types a filter on a failed
annotation, opens a streamed request's trace (its query, its annotations with their labels, the
retriever's documents) and the Playground from its LLM span, and screenshots each page into
``out``. Pages load slowly on a busy machine: every wait is generous.
"""

from __future__ import annotations

import contextlib
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _phoenix_api import LATENCY_TOLERANCE_MS, PhoenixApi, expected_roots, passed
from _phoenix_traffic import GROUNDING, Sent

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.components import launch_chromium  # noqa: E402

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
