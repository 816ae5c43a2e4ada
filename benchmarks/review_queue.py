"""The review queue at scale: one page of every filter, at 100,000 items, on SQLite and PostgreSQL.

Fills a fresh store (a SQLite file; a throw-away PostgreSQL on loopback, started as the tests
start theirs) with realistic items: 5 apps, a queue reason each, 5 scores each (three model
scores, a judge score, a lexical one), a question from a help-centre vocabulary, an answer and
three 600-character chunks (about 3 KB of content per item), one item in ten labelled. Then,
for each filter, asks the review app for the queue page (``GET /queue?...``: the count, the 50
items of the page, the filter menus, who has them open, the HTML) ``--repeat`` times and reports
the median and the slowest, and the same for ``store.page`` alone. ``deep offset`` is the last
page of the unfiltered queue.

    .venv/bin/python benchmarks/review_queue.py                      # 100,000 items, both
    .venv/bin/python benchmarks/review_queue.py --items 10000 --backends sqlite

``--before CHECKOUT`` measures another checkout's review store too (SQLite, in a child
process that imports ragtrace from there: ``git worktree add /tmp/before <commit>``), beside
this one, on the same items; ``--no-analyze`` skips the statistics (``ANALYZE``) a store
nobody maintains lacks; ``--only`` picks filters by name.

Prints a table and writes ``benchmarks/results/review_queue.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CODE_ENV = "RAGTRACE_BENCH_OTHER_CHECKOUT"  # set in the child that measures another checkout
sys.path.insert(0, os.environ.get(CODE_ENV) or str(ROOT))

from ragtrace._model import Chunk, Score
from ragtrace.review._items import Label, Reason, ReviewItem, StoredScore
from ragtrace.review._labels import LabelService
from ragtrace.review._server import Request, ReviewApp
from ragtrace.review._store import SqlReviewStore, open_store

DAY_NS = 86_400 * 10**9
T0 = 1_800_000_000 * 10**9
APPS = ("support-bot", "billing-bot", "docs-search", "hr-helper", "sales-assistant")
REASONS = (("pii", 90), ("secret", 100), ("toxicity", 80), ("disagreement", 60),
           ("score_failed", 50), ("random_sample", 10))  # fmt: skip
WORDS = (
    "refund order invoice password reset account billing card delivery tracking return "
    "warranty subscription cancel upgrade plan login email address shipping discount coupon "
    "payment failed charged twice export data privacy delete profile language settings"
).split()
FILTERS: tuple[tuple[str, dict[str, str]], ...] = (
    ("queue (unlabelled)", {}),
    ("all items", {"labelled": "all"}),
    ("labelled", {"labelled": "yes"}),
    ("verdict bad", {"labelled": "all", "verdict": "bad"}),
    ("app", {"app": "billing-bot"}),
    ("last 7 days", {"since": "2027-01-08T08:00", "labelled": "all"}),
    ("reason", {"reason": "pii"}),
    ("evaluator", {"evaluator": "groundedness"}),
    ("evaluator min-max", {"evaluator": "groundedness", "min": "0.2", "max": "0.4"}),
    ("judge min-max", {"evaluator": "faithfulness", "min": "0.0", "max": "0.3"}),
    ("any score min-max", {"min": "0.95", "max": "1.0"}),
    ("question search", {"q": "charged twice"}),
    ("rare search", {"q": "zzqx"}),
    ("everything", {"app": "support-bot", "reason": "score_failed", "evaluator":
                    "groundedness", "max": "0.5", "since": "2027-01-01", "q": "refund"}),
)  # fmt: skip


def make_item(n: int, rng: random.Random) -> ReviewItem:
    """Item ``n``: realistic sizes and spreads (see the module docstring)."""
    reason, priority = REASONS[rng.randrange(len(REASONS))]
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 14))]
    scores = [
        ("groundedness", Score("groundedness", rng.random(), passed=rng.random() > 0.3,
                               threshold=0.5, evaluator_kind="model")),
        ("answer_relevance", Score("answer_relevance", rng.random(), passed=True,
                                   threshold=0.5, evaluator_kind="model")),
        ("pii_leakage", Score("pii_leakage", rng.choice((0.0, 1.0)), passed=True,
                              threshold=0.5, evaluator_kind="model")),
        ("judge_faithfulness", Score("faithfulness", rng.random(), passed=rng.random() > 0.2,
                                     threshold=0.5, evaluator_kind="judge")),
        ("looping", Score("looping.unique_sentences", rng.random(), passed=True, threshold=0.75)),
    ]  # fmt: skip
    chunk = " ".join(rng.choice(WORDS) for _ in range(90))[:600]
    return ReviewItem(
        trace_id=f"{n:032x}",
        span_id=f"{n:016x}",
        app=APPS[n % len(APPS)],
        query=" ".join(words).capitalize() + "?",
        response=" ".join(rng.choice(WORDS) for _ in range(50)) + ".",
        chunks=tuple(Chunk(chunk, id=f"doc-{n}-{k}", score=0.8 - k / 10) for k in range(3)),
        scores=tuple(StoredScore(e, s) for e, s in scores),
        reasons=(Reason(reason, priority, "groundedness", f"{reason} detail"),),
        priority=priority,
        model="model-x",
        request_ns=T0 - rng.randrange(30 * DAY_NS),
    )


def fill(store: SqlReviewStore, items: int, seed: int) -> float:
    """Enqueue ``items`` items (batches of 1,000) and label one in ten; seconds taken."""
    rng = random.Random(seed)
    start = time.perf_counter()
    ids: list[int] = []
    for first in range(0, items, 1000):
        batch = [make_item(n, rng) for n in range(first, min(items, first + 1000))]
        if hasattr(store, "enqueue_many"):
            ids.extend(store.enqueue_many(batch))
        else:  # an earlier store: one transaction an item
            ids.extend(store.enqueue(item) for item in batch)
    for item_id in ids[::10]:
        store.add_label(item_id, Label(rng.choice(("good", "bad", "unsure")), reviewer="bench"))
    return time.perf_counter() - start


def measure(app: ReviewApp, params: dict[str, str], repeat: int) -> dict[str, float]:
    """Milliseconds of the queue page (median, max) and of ``store.page`` alone."""
    from urllib.parse import urlencode

    from ragtrace.review._filters import filter_from_params

    target = "/queue?" + urlencode(params)
    request = Request("GET", target, {"host": "127.0.0.1"})
    pages, stores = [], []
    filters = filter_from_params(params)
    offset = int(params.get("offset") or 0)
    for _ in range(repeat):
        start = time.perf_counter()
        response = app.handle(request)
        pages.append((time.perf_counter() - start) * 1000)
        assert response.status == 200, response.body[:300]
        start = time.perf_counter()
        page = app.store.page(filters, offset=offset, limit=50)
        stores.append((time.perf_counter() - start) * 1000)
    return {
        "page_ms": statistics.median(pages),
        "page_max_ms": max(pages),
        "store_ms": statistics.median(stores),
        "matches": page.total,
    }


@contextmanager
def stores(backend: str, workdir: Path) -> Iterator[SqlReviewStore]:
    if backend == "sqlite":
        store = open_store(str(workdir / "review.db"))
        try:
            yield store
        finally:
            store.close()
        return
    from tests.components import run_postgres

    with run_postgres() as server:
        store = open_store(server.create_database("review_bench"))
        try:
            yield store
        finally:
            store.close()


def analyze(store: SqlReviewStore) -> None:
    """Refresh the planner's statistics, as ``ANALYZE`` (SQLite) or autovacuum (PostgreSQL)
    would on a live store."""
    if store.dialect.name == "sqlite":
        with store._write() as cur:
            cur.execute("ANALYZE")
        return
    conn = store._connect()
    try:
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE")
    finally:
        conn.close()


def run(backend: str, args: argparse.Namespace) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="ragtrace-review-bench-") as tmp,
        stores(backend, Path(tmp)) as store,
    ):
        load_s = fill(store, args.items, args.seed)
        if not args.no_analyze:
            analyze(store)
        app = ReviewApp(store, LabelService(store))
        total = store.count()
        cases = [*FILTERS, ("deep offset", {"offset": str(max(0, total - 50))})]
        rows = {}
        for name, params in cases:
            if args.only and name not in args.only.split(","):
                continue
            measure(app, params, 1)  # warm the cache once
            rows[name] = {"params": params, **measure(app, params, args.repeat)}
        return {"backend": backend, "items": args.items, "load_s": load_s, "filters": rows}


def before(args: argparse.Namespace) -> dict[str, Any]:
    """The same run with another checkout's ragtrace (SQLite), in a child process."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "before.json"
        argv = [
            sys.executable,
            __file__,
            "--items",
            str(args.items),
            "--backends",
            "sqlite",
            "--repeat",
            str(args.repeat),
            "--seed",
            str(args.seed),
            "--out",
            str(out),
        ]
        argv += ["--no-analyze"] * args.no_analyze + ["--only", args.only] * bool(args.only)
        env = {**os.environ, CODE_ENV: str(Path(args.before).resolve())}
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
        result: dict[str, Any] = json.loads(out.read_text())["results"][0]
    result["backend"] = "sqlite before"
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/review_queue.json"))
    parser.add_argument("--only", help="filters to measure, comma-separated names")
    parser.add_argument("--no-analyze", action="store_true", help="no planner statistics")
    parser.add_argument("--before", metavar="CHECKOUT", help="also measure this checkout")
    args = parser.parse_args()
    results = [run(b, args) for b in args.backends.split(",")]
    if args.before:
        results.append(before(args))
    names = list(results[0]["filters"])
    head = f"{'filter':<20} {'matches':>8}" + "".join(
        f" {r['backend'] + ' page ms (max)':>26} {'store ms':>9}" for r in results
    )
    print(f"review queue, {args.items:,} items, median of {args.repeat}")
    print(head)
    for name in names:
        line = f"{name:<20} {results[0]['filters'][name]['matches']:>8}"
        for r in results:
            row = r["filters"][name]
            line += f" {row['page_ms']:>16.1f} ({row['page_max_ms']:>6.1f}) {row['store_ms']:>9.1f}"
        print(line)
    for r in results:
        print(f"{r['backend']}: filled in {r['load_s']:.0f} s")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"repeat": args.repeat, "results": results}, indent=2))


if __name__ == "__main__":
    main()
