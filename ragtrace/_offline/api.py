"""``ragtrace.evaluate``: score test cases in one call, print a metrics summary, get the scores.

::

    import ragtrace

    result = ragtrace.evaluate(
        [{"input": "What is AI?", "actual_output": "AI is ...", "retrieval_context": ["..."]}],
        ["faithfulness", "answer_relevance", ("judge_geval", {"criteria": "Is it concise?"})],
    )
    result.passed                       # every case passed every threshold
    result.write_scores("scores.jsonl")  # for `ragtrace report`
    result.to_dataframe()               # with pandas

A thin layer over the offline engine (``ragtrace._offline.loop.EvalLoop.run_items``), the one
``ragtrace eval`` runs: the same evaluators, batches, timeouts, error isolation, worker
processes and judges (any litellm model, else the local llama.cpp judge). Cases are read by
``ragtrace._offline.cases``, evaluators built by ``ragtrace._offline.selection``, the result is
``ragtrace._offline.results.EvaluationResult`` and the printed text comes from
``ragtrace._offline.metrics_summary``.

Every result is also handed to the listeners of ``ragtrace._offline.listeners``: the pytest
plugin (``ragtrace.testing.plugin``) collects a session's scores that way.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TextIO

from ragtrace._engine.outcomes import Outcome
from ragtrace._offline import listeners
from ragtrace._offline.cases import Cases, items_from
from ragtrace._offline.metrics_summary import DISPLAYS, Display
from ragtrace._offline.results import CaseResult, EvaluationResult, Thresholds
from ragtrace._offline.selection import EvaluatorSpec, evaluators_from, spec_list
from ragtrace._offline.systems import EvalItem
from ragtrace.evaluators._base import Evaluator

LABEL = "ragtrace evaluate"
BUILT_CACHE_SIZE = 64


def evaluate(
    cases: Cases,
    evaluators: EvaluatorSpec | Sequence[EvaluatorSpec],
    *,
    thresholds: Mapping[str, float] | None = None,
    system: str | None = None,
    timeout_s: float | None = None,
    workers: int = 1,
    processes: int = 1,
    progress: bool | None = None,
    display: Display | None = "all",
    file: TextIO | None = None,
) -> EvaluationResult:
    """Score ``cases`` with ``evaluators``; print a metrics summary; return every score.

    Args:
        cases: ``RagRecord`` values, mappings (the ``ragtrace eval`` input fields, or DeepEval's
            ``input``, ``actual_output``, ``expected_output``, ``retrieval_context``), one of
            them alone, or the path of a JSON Lines file in the ``ragtrace eval`` format.
        evaluators: Names (``"faithfulness"``), ``(name, options)`` pairs, mappings with a
            ``name`` (a settings file's entries) or ``Evaluator`` objects; one or a list.
        thresholds: Pass/fail boundaries by score name, replacing the evaluators' own.
        system: Names the system of every case (default: each case's model, else its app).
        timeout_s: Seconds per record of an evaluator call (default: each evaluator's own).
        workers: Evaluators run at the same time (threads).
        processes: Worker processes, each with its own models (evaluators must pickle).
        progress: A progress bar on stderr; None (default): only when stderr is a terminal.
        display: Print every case (``"all"``), only failing ones (``"failing"``), or only
            nothing (``"none"`` or None).
        file: Where the summary goes (default: stdout).

    Raises:
        CaseError: No cases, or a case that cannot be read (which one and why).
        SelectionError: An unknown evaluator or option (with a did-you-mean).
        TypeError, ValueError: Bad thresholds or run options.
    """
    if display not in (None, *DISPLAYS):
        raise ValueError(f"display must be one of {', '.join(DISPLAYS)} or None; got {display!r}")
    limits = Thresholds(thresholds)
    built = build_evaluators(evaluators)
    needs_response = any("response" in e.requires for e in built)
    items = items_from(cases, system=system, require_response=needs_response)
    result = run_items(
        items,
        built,
        limits,
        timeout_s=timeout_s,
        workers=workers,
        processes=processes,
        progress=_on_a_terminal(sys.stderr) if progress is None else progress,
    )
    listeners.publish(result)
    if display not in (None, "none"):
        result.print_summary(display, file)
    return result


def run_items(
    items: Sequence[EvalItem],
    evaluators: Sequence[Evaluator],
    thresholds: Thresholds,
    *,
    timeout_s: float | None = None,
    workers: int = 1,
    processes: int = 1,
    progress: bool = False,
) -> EvaluationResult:
    """Score ``items`` on the offline engine; the result, thresholds applied.

    Raises:
        ValueError: Bad run options, an evaluator that cannot go to a worker process, or a
            threshold naming no score of the run.
    """
    from ragtrace._judges import usage
    from ragtrace._offline.loop import EvalLoop
    from ragtrace._offline.summary import judge_summary

    cases: list[CaseResult] = []

    def collect(item: EvalItem, outcome: Outcome) -> None:
        judged = thresholds.apply(outcome)
        cases.append(CaseResult(item.id, item.system, item.record, judged.scores, judged.skipped))

    engine = EvalLoop(
        evaluators,
        timeout_s=timeout_s,
        workers=workers,
        processes=processes,
        progress=progress,
        messages=sys.stderr,
        label=LABEL,
        on_outcome=collect,
    )
    tally = usage.add_listener(usage.UsageTally())
    start = time.monotonic()
    try:
        engine.run_items(items)
    finally:
        engine.close()
        usage.remove_listener(tally)
    names = [e.name for e in evaluators]
    thresholds.check_names(cases, names)
    return EvaluationResult(
        cases,
        names,
        duration_s=time.monotonic() - start,
        judge=judge_summary(tally) if tally.calls else None,
    )


def build_evaluators(specs: EvaluatorSpec | Sequence[EvaluatorSpec]) -> list[Evaluator]:
    """The evaluators ``specs`` name, reusing ones built earlier from the same name and options.

    Evaluators hold no per-call state (they are shared across threads by contract), so a test
    suite that names the same evaluators in every test builds each once. Objects are used as
    given; specs whose options are not plain JSON values are built every time.

    Raises:
        SelectionError: An unknown evaluator or option, or a spec of another type.
    """
    found: list[Evaluator] = []
    for spec in spec_list(specs):
        key = _cache_key(spec)
        if key is None:
            found.extend(evaluators_from([spec]))
            continue
        with _built_lock:
            cached = _built.get(key)
            if cached is not None:
                _built.move_to_end(key)
        if cached is None:
            cached = evaluators_from([spec])
            with _built_lock:
                _built[key] = cached
                while len(_built) > BUILT_CACHE_SIZE:
                    _built.popitem(last=False)
        found.extend(cached)
    names = [e.name for e in found]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        from ragtrace._offline.selection import SelectionError

        raise SelectionError(f"evaluators: {', '.join(repeated)} given more than once")
    return found


_built: OrderedDict[str, list[Evaluator]] = OrderedDict()
_built_lock = threading.Lock()


def _on_a_terminal(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):  # no stream (pythonw), or a closed one
        return False


def _cache_key(spec: object) -> str | None:
    if isinstance(spec, Evaluator):
        return None
    try:
        return json.dumps(spec, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None
