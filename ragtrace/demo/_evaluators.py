"""The demo's evaluators, in one place: the local online suite, toxicity and a contact check.

``demo_evaluators()`` builds ragtrace's online suite (``registry.ONLINE_SUITE``: looping,
sensitive data, language mismatch, PII leakage, answer and context relevance, groundedness and
faithfulness, all on CPU with packaged models) at their default operating points, plus
``toxicity`` (not in the default suite: it cannot meet the alarm budget on public data, but the
demo model is sometimes rude, and an operator who wants that alarm adds it so) and
``tokens_presence`` configured to fail an answer that contains an email address or a phone
number (the demo model sometimes leaks one). ``pii_leakage`` is told the help centre's own
public names (``PUBLIC_NAMES``: the product family and the countries it is sold in), which
matter once NER is turned on (``ner=True``: spaCy's small model reads "Aurora" as a person).
``names=`` picks a subset, e.g. the lexical ones for a quick run without loading models.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any, cast

from ragtrace._config import EvaluatorLike
from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators import Evaluator, create
from ragtrace.evaluators._registry import ONLINE_SUITE

EMAIL = r"[\w.+-]+@[\w-]+\.[\w.-]+"
PHONE = r"\+\d[\d ]{7,}\d"

PUBLIC_NAMES = (
    "REGEXP:Aurora(?: [\\w-]+)?",
    "Gateway",
    "Storm Watch",
    "Germany",
    "France",
    "Spain",
)

# name -> options for ``ragtrace.evaluators.create``; defaults first, with no options.
DEMO_EVALUATORS: dict[str, dict[str, Any]] = {
    **{name: {} for name in ONLINE_SUITE},
    "toxicity": {},
    "pii_leakage": {"allow": PUBLIC_NAMES},
    "tokens_presence": {
        "expression": f'NOT "REGEXP:{EMAIL}" AND NOT "REGEXP:{PHONE}"',
        "targets": ("answer",),
    },
}


def warm_up(evaluators: Iterable[Evaluator]) -> None:
    """Score one small record with each evaluator, so models load before traffic starts.

    A failure here is left for the pipeline to report on real records.
    """
    record = RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query="How do I reset my router?",
        chunks=(Chunk(text="Hold the reset button for ten seconds.", id="warm-up"),),
        response="Hold the reset button for ten seconds.",
    )
    for evaluator in evaluators:
        with contextlib.suppress(Exception):
            evaluator.evaluate(record)


def demo_evaluators(names: Iterable[EvaluatorLike | str] | None = None) -> list[Evaluator]:
    """Build the demo's evaluators (see ``DEMO_EVALUATORS``), or those of them in ``names``.

    A name the demo does not configure is built with its defaults; an evaluator given as an
    object is used as it is.
    """
    chosen = list(DEMO_EVALUATORS) if names is None else list(names)
    return [
        create(name, **DEMO_EVALUATORS.get(name, {}))
        if isinstance(name, str)
        else cast(Evaluator, name)
        for name in chosen
    ]
