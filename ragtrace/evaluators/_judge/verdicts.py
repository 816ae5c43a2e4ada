"""A judge's yes / no / idk verdict on one claim, read from its token probabilities.

The judge answers ``{"verdict": "yes" | "no" | "idk"}`` (prompt ``claims_verdict``, v2) and
nothing else: no reason to write, so a small model cannot argue itself into the wrong verdict
or loop inside a reason string, and the JSON grammar bounds the answer to a few tokens. The
call asks for the top ``TOP_LOGPROBS`` alternatives of each output token; at the verdict's
token, the alternatives that are verdicts are renormalised (``geval.value_distribution``), which
gives ``p_yes``, the judge's probability that the source supports the claim.

The claim is supported when ``p_yes`` is at least the judge's ``yes`` cut: 0.5 for any judge,
except the packaged local models, whose probabilities lean towards "no" and whose cut was
calibrated on the tuning part of the labelled data (``CALIBRATED_YES_CUTS``;
``docs/decisions/faithfulness-detector-experiments.md``). Otherwise the verdict is the likelier
of "no" and "idk".
A server that returns no log-probabilities (or an answer without a verdict token) falls back to
the generated verdict, with ``p_yes`` None.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragtrace._judges.client import JudgeReply
from ragtrace.evaluators._judge import steering
from ragtrace.evaluators._judge.base import object_schema
from ragtrace.evaluators._judge.geval import value_distribution
from ragtrace.evaluators._statement_support import clip

SUPPORTED, CONFLICTS, UNKNOWN = "yes", "no", "idk"
VERDICTS = (SUPPORTED, CONFLICTS, UNKNOWN)
TOP_LOGPROBS = 5
MAX_TOKENS = 16
DEFAULT_YES_CUT = 0.5
# Judge model name -> the p_yes at or above which its verdict is "yes", chosen on the tuning
# part of the labelled data (docs/decisions/faithfulness-detector-experiments.md): 120
# label-balanced claims of RAGTruth QA, Summary and HaluEval; balanced accuracy 0.508 at 0.5,
# 0.733 at 0.33 (AUROC 0.734).
CALIBRATED_YES_CUTS: Mapping[str, float] = {"qwen2.5-coder-0.5b": 0.33}

SCHEMA: dict[str, Any] = object_schema(verdict={"type": "string", "enum": list(VERDICTS)})


@dataclass(frozen=True)
class Verdict:
    """The judge's verdict on one claim against one source text.

    ``p_yes`` is the judge's probability of "yes" at its verdict token (None when the server
    gave no log-probabilities: the generated verdict stands). ``overruled`` says why the verdict
    was set without asking the judge (a claim addressed to the evaluation: ``steering``).
    """

    claim: str
    verdict: str
    p_yes: float | None = None
    overruled: str | None = None

    @property
    def supported(self) -> bool:
        """Whether the source supports the claim (verdict ``yes``)."""
        return self.verdict == SUPPORTED

    def detail(self, **extra: Any) -> dict[str, Any]:
        """The verdict as a ``details`` entry a reviewer can read."""
        p_yes = None if self.p_yes is None else round(self.p_yes, 4)
        found = {
            "claim": clip(self.claim),
            "verdict": self.verdict,
            "supported": self.supported,
            "p_yes": p_yes,
            **extra,
        }
        if self.overruled is not None:
            found["overruled"] = self.overruled
        return found


def _decode(token: str) -> str | None:
    text = token.strip().strip("\"'").lower()
    return {"yes": SUPPORTED, "no": CONFLICTS, "id": UNKNOWN, "idk": UNKNOWN}.get(text)


def yes_cut(model_name: str) -> float:
    """The ``p_yes`` cut for a judge model (a litellm string: ``openai/qwen2.5-coder-0.5b`` is
    the local server's): its calibrated one, else ``DEFAULT_YES_CUT``."""
    return CALIBRATED_YES_CUTS.get(model_name.rsplit("/", 1)[-1], DEFAULT_YES_CUT)


def read_verdict(claim: str, reply: JudgeReply, cut: float) -> Verdict:
    """The verdict of one judge reply: from its token probabilities where it has them."""
    found = value_distribution(reply.logprobs, "verdict", _decode)
    if not found:
        return Verdict(claim, str(reply.data["verdict"]))
    p_yes = found.get(SUPPORTED, 0.0)
    if p_yes >= cut:
        return Verdict(claim, SUPPORTED, p_yes)
    verdict = CONFLICTS if found.get(CONFLICTS, 0.0) >= found.get(UNKNOWN, 0.0) else UNKNOWN
    return Verdict(claim, verdict, p_yes)


def overruled(claim: str) -> Verdict:
    """The verdict on a claim that addresses the evaluation (``steering``): ``idk`` (the context
    cannot support it), without asking the judge."""
    kinds = dict.fromkeys(kind for _, kind in steering.split_directed(claim)[1])
    reason = ", ".join(kinds) or "addresses the evaluation"
    return Verdict(claim, UNKNOWN, None, overruled=f"addressed to the evaluation ({reason})")
