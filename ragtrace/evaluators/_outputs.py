"""Checking what an evaluator returned, for every place that runs evaluators (the online
pipeline, the offline runner, worker processes): bad outputs become error Scores whose message
says what was wrong, and error messages stay bounded."""

from __future__ import annotations

from ragtrace._model import Score
from ragtrace.evaluators._base import Evaluator


def checked_scores(evaluator: Evaluator, output: object) -> tuple[Score, ...]:
    """The evaluator's scores, each bad one replaced by an error Score saying what was wrong."""
    if not isinstance(output, list | tuple):
        return (evaluator.error_score(f"evaluate returned {describe_value(output)}, not a list"),)
    checked: list[Score] = []
    for score in output:
        if not isinstance(score, Score):
            checked.append(evaluator.error_score(f"evaluate returned {describe_value(score)}"))
        elif (
            evaluator.bounded
            and score.error is None
            and score.value is not None
            and not 0.0 <= score.value <= 1.0
        ):
            checked.append(
                evaluator.error_score(f"value {score.value!r} outside [0, 1]", name=score.name)
            )
        else:
            checked.append(score)
    return tuple(checked)


def describe_value(value: object) -> str:
    """What an evaluator returned, briefly, for an error message."""
    return type(value).__name__ if not isinstance(value, list) else f"a list of {len(value)}"


def clip_error(text: str, limit: int = 500) -> str:
    """``text`` cut to ``limit`` characters (error messages stay bounded)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
