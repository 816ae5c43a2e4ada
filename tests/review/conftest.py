"""Fixtures of the review queue tests: stores on SQLite and on a real PostgreSQL, items."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrace._model import Chunk, Score
from ragtrace.review._items import Reason, ReviewItem, StoredScore
from ragtrace.review._store import SqlReviewStore, open_store
from tests.components import Postgres, run_postgres

T0 = 1_800_000_000 * 10**9  # 2027-01-15T08:00:00Z in ns


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """One throw-away PostgreSQL for the whole session (a fresh database per test)."""
    with run_postgres() as server:
        yield server


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqlReviewStore]:
    store = open_store(str(tmp_path / "review.db"))
    yield store
    store.close()


@pytest.fixture
def pg_store(postgres: Postgres) -> Iterator[SqlReviewStore]:
    store = open_store(postgres.create_schema())
    yield store
    store.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest) -> SqlReviewStore:
    """The same behaviour on both databases."""
    name = "sqlite_store" if request.param == "sqlite" else "pg_store"
    return request.getfixturevalue(name)  # type: ignore[no-any-return]


def score(
    name: str,
    value: float | None,
    passed: bool | None = None,
    *,
    kind: str = "lexical",
    threshold: float | None = 0.5,
    error: str | None = None,
    details: dict[str, object] | None = None,
    explanation: str | None = None,
) -> Score:
    return Score(
        name=name,
        value=value,
        passed=passed,
        threshold=threshold,
        error=error,
        evaluator_kind=kind,  # type: ignore[arg-type]
        details=details or {},
        explanation=explanation,
        label=None if passed is None else ("pass" if passed else "fail"),
    )


def make_item(
    n: int,
    *,
    app: str = "shop",
    reasons: tuple[str, ...] = ("score_failed",),
    priority: int = 50,
    scores: tuple[tuple[str, Score], ...] | None = None,
    query: str | None = None,
    request_ns: int | None = None,
    trace_id: str | None = None,
) -> ReviewItem:
    """Item number ``n``: unique trace and span ids, one failing lexical score by default."""
    if scores is None:
        scores = (("groundedness", score("groundedness", 0.2, False, kind="model")),)
    return ReviewItem(
        trace_id=trace_id if trace_id is not None else f"{n:032x}",
        span_id=f"{n:016x}",
        app=app,
        query=query if query is not None else f"question {n}?",
        response=f"answer {n}.",
        chunks=(Chunk(f"chunk text {n}", id=f"doc-{n}", score=0.8, metadata={"n": n}),),
        scores=tuple(StoredScore(ev, s) for ev, s in scores),
        reasons=tuple(Reason(r, priority, None, f"{r} detail") for r in reasons),
        priority=priority,
        model="model-x",
        request_ns=request_ns if request_ns is not None else T0 + n * 10**9,
    )
