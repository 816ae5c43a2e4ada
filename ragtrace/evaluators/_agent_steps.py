"""Agent steps: failed tool calls, repeated tool calls and LLM calls of one answer.

Cheap lexical evaluators (no model, microseconds) for agents whose steps ragtrace records in the
turn (``record.tool_calls``, ``record.llm_calls``: LangChain ``create_agent``/LangGraph,
LlamaIndex agent workflows). Each returns one Score, lower is better:

- ``tool_errors`` = failed tool calls left standing / tool calls. A call failed when its
  ``status`` is ``error`` (the tool raised or reported an error); it was made good when a later
  call of the same tool succeeded in the turn, and by default (``count_recovered=False``) only
  failures nobody made good count. ``details["errors"]`` lists every failure, each marked
  ``recovered`` or not.
- ``repeated_tool_calls`` = calls that repeat an earlier one / tool calls. Two calls are the
  same when the tool's name is the same and so are the arguments after normalising: JSON is
  parsed and dumped again with sorted keys, strings compared with whitespace collapsed and case
  folded, ``2.0`` read as ``2``; arguments that are not JSON (or were cut by capture) are
  compared as text, normalised the same way. ``details["repeated"]`` lists each repeated call.
- ``agent_steps`` = ``(n - 1) / n`` for ``n`` LLM calls: the share of the turn's LLM calls
  spent beyond the one a plain chain makes (1 call: 0.0, 2: 0.5, 4: 0.75, 10: 0.9, 20: 0.95).
  It is monotone in ``n``, so the pass/fail rule is a step count: the threshold is the value of
  ``max_llm_calls`` (default 10, threshold 0.9) and a turn fails above that many LLM calls.
  ``details`` gives the LLM and tool call counts and the calls per tool.

Skipped (not applicable): ``tool_errors`` and ``repeated_tool_calls`` when the turn made no tool
call, ``agent_steps`` when no LLM call was counted (``llm_calls`` 0: a record built by hand,
or ingested without its LLM spans). The pipeline skips such records and counts them
(``outcome="skipped"``), as it does records that lack a field in ``requires``;
``requires`` names ``tool_calls`` / ``llm_calls``. ``evaluate`` on such a record returns
no Score. It never raises: a malformed record gives an error Score.

Default thresholds, measured (``benchmarks/alarms.py --agents``). No labelled agent traffic
exists, so the benchmark makes its own: LangChain ``create_agent`` agents on LangChain's fake
chat model, scripted by a seeded generator, with real tools (a BM25 search of the demo's help
centre, an account lookup that refuses unknown ids, a calculator), captured by ragtrace's
LangChain handler; 300 turns of each kind per part, split by question into a tuning part (where
the defaults were chosen) and a locked part (reported only). Healthy turns make 0-3 tool calls;
some meet a failure they make good (a refused id corrected, a timed-out search retried
unchanged) or end on a refusal (an account id the user mistyped). Share of healthy turns failed
/ share of the bad kind caught, tuning then locked:

- ``tool_errors`` 0.0, ``count_recovered=False``: 2.1% and 0.7% of healthy turns (the mistyped
  ids) / 100% and 100% of tool outages. Counting failures made good as well
  (``count_recovered=True``) failed 7.6% of healthy turns on the tuning part, over the 5%
  budget, and caught no more outages.
- ``repeated_tool_calls`` 0.0, ``count_retries=False``: 0.0% and 0.0% / 97.7% and 98.3% of
  turns that repeat a call unchanged. Counting a retry of a failed call (``count_retries=True``)
  failed 4.2% of healthy turns, every one a timed-out call retried, a point from the budget.
- ``agent_steps``, fail above 10 LLM calls: 0.0% and 0.0% / 86.0% and 89.3% of runaway loops (6
  to 40 rounds of tool use; the loops of 6-9 rounds pass). ``max_llm_calls=6`` caught every loop
  with no false alarm, but the healthy turns here make at most 5 LLM calls by construction; 10
  leaves room for agents with more tools, and is half of LlamaIndex agent workflows' stop
  (``max_iterations`` 20). LangGraph 1.x no longer stops a graph early (its recursion limit is
  10,007 steps), so a looping LangGraph agent is caught here or not at all.

A wrong tool is caught only when it refuses its arguments (``tool_errors``: 34.7% and 30.3%);
one that answers is left to the answer's own scores. The rates are this traffic's: an agent
that fails and recovers more often, or an app with several LLM calls per answer, has its own.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

from ragtrace._model import RagRecord, Score, ToolCall
from ragtrace.evaluators._base import Evaluator, positive_int
from ragtrace.evaluators._statement_support import clip

DEFAULT_MAX_LLM_CALLS = 10
DETAIL_ROWS = 10  # failures / repeated calls listed in details
DETAIL_CHARS = 200  # characters of an error or of arguments in details
MAX_TOOLS_LISTED = 20


class _AgentEvaluator(Evaluator):
    """Base of the agent evaluators: skip records without the agent fields (``requires``),
    never raise."""

    kind = "lexical"
    direction = "lower_is_better"

    def evaluate(self, record: RagRecord) -> list[Score]:
        try:
            if self.missing_fields(record):
                return []
            return [self.judge(record)]
        except Exception as exc:  # a malformed record: an error Score, never an exception
            return self.errors(f"{type(exc).__name__}: {exc}")

    def judge(self, record: RagRecord) -> Score:
        """The Score of a record that has what ``requires`` names."""
        raise NotImplementedError


class ToolErrors(_AgentEvaluator):
    """Share of the turn's tool calls that failed."""

    name: ClassVar[str] = "tool_errors"
    requires = frozenset({"tool_calls"})
    threshold: float | None = 0.0

    def __init__(self, *, count_recovered: bool = False, **options: Any) -> None:
        """Build the evaluator.

        Args:
            count_recovered: Count a failed call that a later call of the same tool made good
                too (False, the default: only failures left standing count).
            **options: ``threshold`` (0.0: any failure fails), ``inline``, ``timeout_s``, ...
        """
        super().__init__(**options)
        if not isinstance(count_recovered, bool):
            raise ValueError(
                f"tool_errors: count_recovered must be true or false, got {count_recovered!r}"
            )
        self.count_recovered = count_recovered

    def judge(self, record: RagRecord) -> Score:
        calls = _calls(record)
        failed = [i for i, call in enumerate(calls) if _failed(call)]
        recovered: set[int] = set()
        succeeded_later: set[str] = set()  # tools with a successful call after this one
        for i in range(len(calls) - 1, -1, -1):
            if not _failed(calls[i]):
                succeeded_later.add(calls[i].name)
            elif calls[i].name in succeeded_later:
                recovered.add(i)
        counted = [i for i in failed if self.count_recovered or i not in recovered]
        by_tool = Counter(calls[i].name for i in failed)
        explanation = (
            f"{len(failed)} of {len(calls)} tool calls failed"
            + (" (" + ", ".join(f"{n}: {k}" for n, k in by_tool.most_common(5)) + ")")
            + (
                f"; {len(recovered)} made good by a later call of the same tool"
                if recovered
                else ""
            )
            if failed
            else f"none of {len(calls)} tool calls failed"
        )
        return self.score(
            len(counted) / len(calls),
            explanation=explanation,
            details={
                "calls": len(calls),
                "failed": len(failed),
                "recovered": len(recovered),
                "counted": len(counted),
                "errors": [
                    {
                        "index": i,
                        "name": calls[i].name,
                        "error": clip(str(calls[i].error or "error"), DETAIL_CHARS),
                        "recovered": i in recovered,
                    }
                    for i in failed[:DETAIL_ROWS]
                ],
            },
        )


class RepeatedToolCalls(_AgentEvaluator):
    """Share of the turn's tool calls that repeat an earlier call with the same arguments."""

    name: ClassVar[str] = "repeated_tool_calls"
    requires = frozenset({"tool_calls"})
    threshold: float | None = 0.0

    def __init__(self, *, count_retries: bool = False, **options: Any) -> None:
        """Build the evaluator.

        Args:
            count_retries: Count a repeat that follows a failure of the same call (a retry)
                too (False, the default: retries are left to ``tool_errors``).
            **options: ``threshold`` (0.0: any repeat fails), ``inline``, ``timeout_s``, ...
        """
        super().__init__(**options)
        if not isinstance(count_retries, bool):
            raise ValueError(
                f"repeated_tool_calls: count_retries must be true or false, got {count_retries!r}"
            )
        self.count_retries = count_retries

    def judge(self, record: RagRecord) -> Score:
        calls = _calls(record)
        seen: dict[tuple[str, str], list[int]] = {}
        repeats = retries = 0
        for index, call in enumerate(calls):
            earlier = seen.setdefault(call_key(call), [])
            if earlier:
                retry = _failed(calls[earlier[-1]])
                retries += retry
                repeats += self.count_retries or not retry
            earlier.append(index)
        repeated = [(key, at) for key, at in seen.items() if len(at) > 1]
        listed = [
            {
                "name": key[0],
                "arguments": clip(key[1], DETAIL_CHARS),
                "count": len(at),
                "indices": at[:DETAIL_ROWS],
                "retries": sum(_failed(calls[a]) for a in at[:-1]),
            }
            for key, at in sorted(repeated, key=lambda item: (-len(item[1]), item[1][0]))
        ]
        explanation = (
            f"{repeats} of {len(calls)} tool calls repeat an earlier one: "
            + ", ".join(f"{r['name']} x{r['count']}" for r in listed[:5])
            + (f" ({retries} after the same call failed)" if retries else "")
            if repeated
            else f"no repeated call among {len(calls)} tool calls"
        )
        return self.score(
            repeats / len(calls),
            explanation=explanation,
            details={
                "calls": len(calls),
                "repeats": repeats,
                "retries": retries,
                "repeated": listed[:DETAIL_ROWS],
            },
        )


class AgentSteps(_AgentEvaluator):
    """LLM calls (and tool calls) per answer; fails above ``max_llm_calls`` LLM calls."""

    name: ClassVar[str] = "agent_steps"
    requires = frozenset({"llm_calls"})
    threshold: float | None = (DEFAULT_MAX_LLM_CALLS - 1) / DEFAULT_MAX_LLM_CALLS

    def __init__(self, *, max_llm_calls: int | None = None, **options: Any) -> None:
        """Build the evaluator.

        Args:
            max_llm_calls: A turn fails above this many LLM calls (None: 10, unless
                ``threshold`` is given on the value's scale, ``(n - 1) / n``).
            **options: ``threshold`` (0.9), ``inline``, ``timeout_s``, ...

        Raises:
            ValueError: ``max_llm_calls`` is not a positive integer, or both it and a
                ``threshold`` were given.
        """
        if max_llm_calls is not None and options.get("threshold") is not None:
            raise ValueError(
                "agent_steps: give max_llm_calls or threshold, not both "
                "(threshold is max_llm_calls on the value's scale: (n - 1) / n)"
            )
        super().__init__(**options)
        self.max_llm_calls: int | None = None
        if options.get("threshold") is None:
            chosen = DEFAULT_MAX_LLM_CALLS if max_llm_calls is None else max_llm_calls
            self.max_llm_calls = positive_int(self.name, "max_llm_calls", chosen)
            self.threshold = steps_value(self.max_llm_calls)

    def judge(self, record: RagRecord) -> Score:
        llm_calls = record.llm_calls
        if isinstance(llm_calls, bool) or not isinstance(llm_calls, int) or llm_calls < 0:
            raise ValueError(f"llm_calls must be a non-negative integer, got {llm_calls!r}")
        calls = _calls(record)
        tools = Counter(c.name for c in calls)
        limit = (
            f"fails above {self.max_llm_calls} LLM calls"
            if self.max_llm_calls is not None
            else f"threshold {self.threshold}"
        )
        return self.score(
            steps_value(llm_calls),
            explanation=(
                f"{llm_calls} LLM call(s) and {len(calls)} tool call(s) for one answer ({limit})"
            ),
            details={
                "llm_calls": llm_calls,
                "tool_calls": len(calls),
                "failed_tool_calls": sum(_failed(c) for c in calls),
                "tools": dict(tools.most_common(MAX_TOOLS_LISTED)),
                "max_llm_calls": self.max_llm_calls,
            },
        )


def steps_value(llm_calls: int) -> float:
    """``agent_steps``'s value for ``llm_calls`` calls: ``(n - 1) / n``, 0.0 for 0 or 1."""
    return (llm_calls - 1) / llm_calls if llm_calls > 1 else 0.0


def call_key(call: ToolCall) -> tuple[str, str]:
    """What makes two tool calls the same: the tool's name and its normalised arguments."""
    return (str(call.name).strip(), normalised_arguments(call.arguments))


def normalised_arguments(arguments: object) -> str:
    """Tool arguments in a canonical form (see the module docstring); "" for none."""
    if arguments is None:
        return ""
    if isinstance(arguments, bytes | bytearray):
        arguments = bytes(arguments).decode("utf-8", "replace")
    if isinstance(arguments, str):
        if not arguments.strip():
            return ""
        try:
            parsed = json.loads(arguments)
        except (ValueError, RecursionError):  # not JSON, or cut by capture: compare the text
            return _fold(arguments)
    else:
        parsed = arguments
    try:
        return json.dumps(
            _canonical(parsed), sort_keys=True, ensure_ascii=False, separators=(",", ":")
        )
    except (TypeError, ValueError, RecursionError):
        return _fold(str(arguments))


def _canonical(value: Any) -> Any:
    if isinstance(value, str):
        return _fold(value)
    if isinstance(value, dict):
        return {str(k).strip(): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def _calls(record: RagRecord) -> Sequence[ToolCall]:
    calls = record.tool_calls
    return tuple(calls) if calls else ()


def _failed(call: ToolCall) -> bool:
    return call.status == "error"
