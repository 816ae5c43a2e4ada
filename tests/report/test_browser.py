"""The report page in real headless Chromium: it renders with no console error and no request
beyond the file itself, the numbers it shows are the JSON's (leaderboards, overview, systems,
classification), hostile answers show as text, the index stays in view. The page is kept as a
screenshot in ``test-artifacts/report/`` (git-ignored)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.components import launch_chromium, require_module
from tests.report.lines import PAYLOAD, line, score, three_systems, two_systems, write_lines
from tests.report.test_gates import ragtrace_report

pytestmark = pytest.mark.integration

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "report"


@contextmanager
def offline_page(sync_api: Any, path: Path) -> Iterator[tuple[Any, list[str], list[str]]]:
    """``path`` open in headless Chromium; every request it makes is logged and, but for the
    file itself, refused; console errors and page errors are collected."""
    problems: list[str] = []
    requests: list[str] = []

    def route(r: Any) -> None:
        requests.append(r.request.url)
        if r.request.url == path.as_uri():
            r.continue_()
        else:
            r.abort()

    with sync_api.sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            context = browser.new_context(viewport={"width": 1300, "height": 1000})
            context.route("**/*", route)
            page = context.new_page()
            page.on("console", lambda m: m.type == "error" and problems.append(m.text))
            page.on("pageerror", lambda exc: problems.append(f"page error {exc}"))
            page.goto(path.as_uri())
            page.wait_for_load_state("load")
            yield page, requests, problems
        finally:
            browser.close()


def cell_text(row: Any) -> Any:
    return lambda cls: row.locator(f"td.{cls}").inner_text()


def percent(value: float) -> str:
    return f"{value * 100:.1f}%"


def test_the_page_renders_offline_and_shows_the_json_numbers(tmp_path: Path) -> None:
    sync_api = require_module(
        "playwright.sync_api",
        "pip install playwright (it drives Debian's chromium; never `playwright install`)",
    )
    scores = write_lines(tmp_path / "scores.jsonl", two_systems())
    page_path, json_path = tmp_path / "report.html", tmp_path / "report.json"
    done = ragtrace_report(
        scores, "--html", page_path, "--json", json_path,
        "--fail-if", "faithfulness.pass_rate < 0.5",
    )  # fmt: skip
    assert done.returncode == 1  # model-a passes 25% of faithfulness: the gate fails
    report: dict[str, Any] = json.loads(json_path.read_text(encoding="utf-8"))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with offline_page(sync_api, page_path) as (page, requests, problems):
        shown_headline = page.locator("ul.headline li").all_inner_texts()
        for comparison, text in zip(report["headline"], shown_headline, strict=True):
            assert text.startswith(comparison["text"])
        assert "model-b is better than model-a on faithfulness by +0.150" in shown_headline[0]

        for section in report["scores"]:
            block = page.locator(f"section.score[data-score='{section['name']}']")
            rows = block.locator("table.leaderboard tbody tr")
            assert rows.count() == len(section["leaderboard"])
            for i, entry in enumerate(section["leaderboard"]):
                row = rows.nth(i)
                assert row.get_attribute("data-system") == entry["system"]
                cell = cell_text(row)
                assert float(cell("mean")) == entry["mean"]
                assert cell("mean-ci") == f"[{entry['mean_low']:.3f}, {entry['mean_high']:.3f}]"
                assert cell("pass-rate") == percent(entry["pass_rate"])
                assert float(cell("pass-rate").rstrip("%")) / 100 == pytest.approx(
                    entry["pass_rate"], abs=1e-12
                )
                assert int(cell("n")) == entry["n"] and int(cell("flips")) == entry["flips"]
            cells = block.locator("svg.heatmap rect.cell")
            assert cells.count() == sum(len(c["values"]) for c in section["heatmap"]["cases"])

        faith = page.locator("section.score[data-score='faithfulness']")
        summary = faith.locator("ul.problems li.flip-summary > details > summary")
        assert summary.inner_text() == (
            "1 verdict(s) flipped under perturbation: 1 regression(s), 0 improvement(s)"
        )
        summary.click()
        flipped = faith.locator("ul.problems li.flip-regression")
        assert flipped.inner_text() == "model-b: 1 regression(s) under 'typos' (pass to fail)"
        assert flipped.get_attribute("data-count") == "1"
        assert "hardest case: q3" in faith.locator("ul.insights").inner_text()
        assert faith.locator("table.flips tbody tr.flip-regression").count() == 1
        assert "FAILED" in page.locator("#gates").inner_text()

        # The hostile answer is text: visible as written, not run, no element made of it.
        faith.locator("details.worst > summary").click()
        example = faith.locator("details.example[data-system='model-a'][data-case='q3']")
        example.locator("summary").click()
        assert example.locator("pre.response").inner_text() == f"Answer {PAYLOAD}"
        assert "✗ Aurora opened in Lyon in 2019." in example.locator("ul.claims").inner_text()
        assert page.locator("img").count() == 0 and page.locator("body script").count() == 0
        assert page.evaluate("() => window.__pwned === undefined")
        page.screenshot(path=str(ARTIFACTS / "report-page.png"), full_page=True)
    assert problems == []
    assert set(requests) == {page_path.as_uri()}  # nothing but the file itself
    assert (ARTIFACTS / "report-page.png").stat().st_size > 10_000


def test_unanswered_cases_classes_latency_and_the_index(tmp_path: Path) -> None:
    """Three systems, one of which timed out on a case: every number the systems part, the
    overview and the classification leaderboard show is the JSON's; the index stays in view
    while the page scrolls and every score links back to the overview."""
    sync_api = require_module("playwright.sync_api", "pip install playwright")
    scores = write_lines(tmp_path / "scores.jsonl", three_systems())
    page_path, json_path = tmp_path / "report.html", tmp_path / "report.json"
    done = ragtrace_report(scores, "--html", page_path, "--json", json_path)
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(json_path.read_text(encoding="utf-8"))
    with offline_page(sync_api, page_path) as (page, requests, problems):
        # Systems: asked and unanswered per system, the latency and cost the lines carry.
        for system, stats in report["answers"].items():
            row = page.locator(f"table.systems tr[data-system='{system}']")
            cell = cell_text(row)
            assert (int(cell("asked")), int(cell("unanswered"))) == (
                stats["asked"], stats["unanswered"]
            )  # fmt: skip
            assert cell("latency") == f"{stats['latency']['median_s']:.3f} s"
            assert cell("cost") == f"${stats['usage']['cost_usd']:.6f}"
        assert report["answers"]["model-c"]["unanswered"] == 1
        insights = page.locator("#systems ul.insights").inner_text()
        for insight in report["insights"]:
            assert insight["text"] in insights
        assert "fastest: model-b" in insights and "slowest: model-c" in insights
        assert "cheapest: model-b" in insights and "most expensive: model-a" in insights

        # Overview: the unanswered row, and each cell's mean and pass rate as the JSON has them.
        overview = page.locator("table.overview")
        unanswered = overview.locator("tr.unanswered-row td[data-system='model-c']")
        assert unanswered.inner_text() == "1 of 4"
        for section in report["scores"]:
            row = overview.locator(f"tr[data-score='{section['name']}']")
            for entry in section["leaderboard"]:
                shown = row.locator(f"td[data-system='{entry['system']}']")
                assert shown.inner_text() == (
                    f"{entry['mean']:.3f} ({percent(entry['pass_rate'])})"
                )
                assert "background" in (shown.get_attribute("style") or "")

        # The classification leaderboard is the JSON's, systems by accuracy.
        (board,) = report["classification"]
        rows = page.locator("table.classification-board tbody tr")
        assert rows.count() == len(board["systems"])
        for i, entry in enumerate(board["systems"]):
            cell = cell_text(rows.nth(i))
            assert rows.nth(i).get_attribute("data-system") == entry["system"]
            assert float(cell("accuracy")) == entry["accuracy"]
            assert float(cell("macro-f1")) == entry["macro"]["f1"]
            assert float(cell("weighted-f1")) == entry["weighted"]["f1"]
            assert int(cell("unanswered")) == entry["unanswered"]

        # The heatmap marks the unanswered case; the leaderboard counts it.
        faith = page.locator("section.score[data-score='faithfulness']")
        assert faith.locator("svg.heatmap g.unanswered[data-system='model-c']").count() == 1
        c_row = faith.locator("table.leaderboard tr[data-system='model-c']")
        assert cell_text(c_row)("unanswered") == "1"

        # The index stays in view at the bottom of the page; every score links back.
        index = page.locator("nav#index")
        assert index.evaluate("e => getComputedStyle(e).position") == "sticky"
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        box = index.bounding_box()
        assert box is not None and box["y"] >= -1 and box["y"] < 50
        links = index.locator("a").evaluate_all("es => es.map(e => e.getAttribute('href'))")
        assert [f"#score-{i}" for i in range(len(report["scores"]))] == [
            x for x in links if x.startswith("#score-")
        ]
        assert page.locator("section.score a.back[href='#overview']").count() == len(
            report["scores"]
        )
        page.screenshot(path=str(ARTIFACTS / "report-three-systems.png"), full_page=True)
    assert problems == []
    assert set(requests) == {page_path.as_uri()}


def test_the_offline_check_sees_a_page_that_fetches(tmp_path: Path) -> None:
    """The harness above is able to fail: a page with a CDN stylesheet and a remote image."""
    sync_api = require_module("playwright.sync_api", "pip install playwright")
    page_path = tmp_path / "fetching.html"
    page_path.write_text(
        '<html><head><link rel="stylesheet" href="https://cdn.example.com/x.css"></head>'
        '<body><img src="http://203.0.113.1/x.png"></body></html>'
    )
    with offline_page(sync_api, page_path) as (_, requests, problems):
        pass
    assert set(requests) - {page_path.as_uri()} == {
        "https://cdn.example.com/x.css",
        "http://203.0.113.1/x.png",
    }
    assert problems  # the refused loads show as console errors


def test_improvements_are_green_and_regressions_red_in_the_problems(tmp_path: Path) -> None:
    """As docs/report.md says: in the Problems list, flips from fail to pass are drawn green,
    from pass to fail red (the computed colour Chromium paints)."""
    sync_api = require_module(
        "playwright.sync_api",
        "pip install playwright (it drives Debian's chromium; never `playwright install`)",
    )
    rows = two_systems()  # model-b: q2 flips pass -> fail under typos
    rows.append(line("model-b", "q3", [score("faithfulness", 0.9)], perturbation="typos"))
    scores = write_lines(tmp_path / "scores.jsonl", rows)  # ... and q3 fail -> pass
    page_path = tmp_path / "report.html"
    assert ragtrace_report(scores, "--html", page_path).returncode == 0
    with offline_page(sync_api, page_path) as (page, _, problems):
        faith = page.locator("section.score[data-score='faithfulness']")
        faith.locator("ul.problems li.flip-summary > details > summary").click()

        def colour(kind: str) -> tuple[int, ...]:
            item = faith.locator(f"ul.problems li.flip-{kind} summary")
            rgb = item.evaluate("e => getComputedStyle(e).color")
            return tuple(int(x) for x in rgb[rgb.index("(") + 1 : -1].split(","))

        red, green, blue = colour("improvement")
        assert green > red and green > blue, (red, green, blue)
        red, green, blue = colour("regression")
        assert red > green and red > blue, (red, green, blue)
    assert problems == []
