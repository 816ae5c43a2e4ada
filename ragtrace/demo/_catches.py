"""Which of the demo model's bad answers the evaluators caught, and how often good ones failed.

The demo model misbehaves on a seeded schedule (``generator.WEIGHTS``). ``CatchTally`` is told
each finished request's behaviour and scores and counts, per bad behaviour, the answers that at
least one of the scores naming that failure failed (``NAMED_BY``), and, over the grounded
answers, how many each alarm failed (false alarms). The summary prints both, so a run shows the
alarm budget at work: bad answers caught, good answers left alone. Scores about the retrieval
(``RETRIEVAL``) are left out of the false alarms: the behaviour is the answer's.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable

from ragtrace._model import Score

# Behaviour -> the scores (names or name prefixes ending in ".") that name that failure.
NAMED_BY: dict[str, tuple[str, ...]] = {
    "looping": ("looping.",),
    "pii": ("pii_leakage.answer", "tokens_presence.answer"),
    "rude": ("toxicity",),
    "off_context": ("answer_relevance", "groundedness"),
    "invented": ("faithfulness",),
}
GOOD = "grounded"
# Scores about the retrieval, not the answer: the model's behaviour says nothing of them (the
# demo asks some questions its help centre does not cover), so they count no false alarm.
RETRIEVAL = ("context_relevance", "pii_leakage.context", "sensitive_data.context")
# faithfulness's verdict is a hallucination detector with its own accuracy targets (it flags
# a share of faithful answers by design): its failures on grounded answers are shown apart.
DETECTORS = ("faithfulness",)


def _names(score: Score, names: Iterable[str]) -> bool:
    return any(score.name.startswith(n) if n.endswith(".") else score.name == n for n in names)


class CatchTally:
    """Bad answers caught per behaviour, false alarms on grounded answers (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.answers: Counter[str] = Counter()
        self.caught: Counter[str] = Counter()
        self.judged: Counter[str] = Counter()  # grounded answers each alarm gave a verdict on
        self.false_alarms: Counter[str] = Counter()

    def add(self, behaviour: str | None, scores: Iterable[Score]) -> None:
        """One finished request: its behaviour (None when unknown) and its scores."""
        if behaviour is None:
            return
        scores = [s for s in scores if s.error is None]
        with self._lock:
            self.answers[behaviour] += 1
            named = NAMED_BY.get(behaviour)
            if named is not None and any(s.passed is False and _names(s, named) for s in scores):
                self.caught[behaviour] += 1
            if behaviour == GOOD:
                for s in scores:
                    if s.passed is not None and not _names(s, (*RETRIEVAL, "context_relevance.")):
                        self.judged[s.name] += 1
                        self.false_alarms[s.name] += int(s.passed is False)

    def lines(self) -> list[str]:
        """The summary's block: caught per bad behaviour, then false alarms on grounded ones."""
        with self._lock:
            if not self.answers:
                return []
            out = ["  bad answers caught (by the scores that name them)"]
            for behaviour, named in NAMED_BY.items():
                n = self.answers.get(behaviour, 0)
                if n:
                    by = ", ".join(x.rstrip(".") for x in named)
                    out.append(
                        f"    {behaviour:<12} {self.caught[behaviour]:>4} of {n:<4} "
                        f"{self.caught[behaviour] / n:>7.1%}  by {by}"
                    )
            good = self.answers.get(GOOD, 0)
            if good:
                alarms = {k: v for k, v in self.false_alarms.items() if k not in DETECTORS}
                worst = sorted(alarms.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
                shown = ", ".join(f"{k} {v / self.judged[k]:.1%}" for k, v in worst if v)
                out.append(f"    false alarms on {good} grounded answers: {shown or 'none'}")
                for name in DETECTORS:
                    if self.judged[name]:
                        share = self.false_alarms[name] / self.judged[name]
                        out.append(
                            f"    ({name}, a hallucination detector with its own accuracy "
                            f"targets, flagged {share:.1%} of them)"
                        )
            return out
