"""Cascades at worker time: the order evaluators run in, and whether a cascaded one may run.

A cascaded (expensive) evaluator runs only when the score of the cheaper one it follows lies in
``[low, high]``. ``Cascades`` checks the ``Cascade`` list it is given (no cycles), puts
evaluators cheapest first with every cascaded one after the one it depends on, and says whether
a record's scores so far let one run; reporting the drops is the sampler's job::

    cascades = Cascades([Cascade("judge_faithfulness", after="groundedness", low=0.3, high=0.7)])
    evaluators = cascades.order(evaluators)  # lexical, model, judge; each after its cheaper one
    ok, reason = cascades.ready("judge_faithfulness", {"groundedness": score})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragtrace._model import Score
from ragtrace._pipeline.sampling.rules import Cascade, check_acyclic
from ragtrace.evaluators._base import Evaluator

NO_CASCADE, CASCADE_IN_BAND = "no_cascade", "cascade_in_band"
CASCADE_OUT_OF_BAND, CASCADE_MISSING = "cascade_out_of_band", "cascade_missing"

_KIND_RANK = {"lexical": 0, "model": 1, "judge": 2, "human": 3}


class Cascades:
    """The cascades a sampler was given, by the evaluator each one holds back.

    Args:
        cascades: ``Cascade`` values; together they must not form a cycle.

    Raises:
        ValueError: An entry is not a Cascade, or the cascades form a cycle.
    """

    def __init__(self, cascades: Sequence[Cascade]) -> None:
        self.all = tuple(cascades)
        self._after: dict[str, list[Cascade]] = {}
        for i, cascade in enumerate(self.all):
            if not isinstance(cascade, Cascade):
                raise ValueError(f"Sampler: cascades[{i}] must be a Cascade")
            self._after.setdefault(cascade.evaluator, []).append(cascade)
        check_acyclic(self._after)

    def ready(self, evaluator_name: str, scores: Mapping[str, Score]) -> tuple[bool, str]:
        """Whether the cheaper scores ``evaluator_name`` follows (by score name) are in band.

        Returns:
            ``(True, "no_cascade" or "cascade_in_band")``, or False with ``cascade_missing``
            (no such score, or no value) or ``cascade_out_of_band``.
        """
        reason = NO_CASCADE
        for cascade in self._after.get(evaluator_name, ()):
            score = scores.get(cascade.after)
            if score is None or score.value is None:
                return False, CASCADE_MISSING
            if not cascade.low <= score.value <= cascade.high:
                return False, CASCADE_OUT_OF_BAND
            reason = CASCADE_IN_BAND
        return True, reason

    def order(self, evaluators: Sequence[Evaluator]) -> list[Evaluator]:
        """Cheapest first (lexical, model, judge; stable), each cascaded one after its cheaper."""
        pending = sorted(evaluators, key=lambda e: _KIND_RANK.get(e.kind, 2))
        present = {e.name for e in pending}
        ordered: list[Evaluator] = []
        placed: set[str] = set()
        while pending:
            for i, ev in enumerate(pending):
                needs = {c.after for c in self._after.get(ev.name, ()) if c.after in present}
                if needs <= placed:
                    ordered.append(pending.pop(i))
                    placed.add(ev.name)
                    break
            else:  # unreachable: cycles are refused at construction
                ordered.extend(pending)
                break
        return ordered
