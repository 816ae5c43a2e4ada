"""Helpers the judge evaluator tests share."""

from __future__ import annotations

import socket

from ragtrace._judges import JudgeClient
from ragtrace._judges.usage import CALL_OUTCOMES
from ragtrace._model import Score


def dead_judge() -> JudgeClient:
    """A client whose server port is closed: every call fails as ``unavailable``."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return JudgeClient(
        "openai/nobody", api_base=f"http://127.0.0.1:{port}/v1", cache=False, max_retries=0
    )


def assert_judge_score(score: Score, name: str, *, calls: bool = False) -> bool:
    """A value in [0, 1] (with ``calls``: made by at least one judge call), or an error Score
    labelled with a judge outcome. True when it has a value."""
    assert score.name == name
    assert score.evaluator_kind == "judge"
    if score.error is not None:
        assert score.value is None
        assert score.label in CALL_OUTCOMES
        return False
    assert score.value is not None and 0.0 <= score.value <= 1.0
    if calls:
        assert score.details["judge_calls"] >= 1
    return True
