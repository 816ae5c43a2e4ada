"""Asking callable systems the test questions, as written and perturbed (``--system-callable``).

``Asker.items(records)`` takes the input records (test cases: ``id``, ``query``, optional
``reference``) and, for each case and each system in turn, asks the question as written and
then once per perturbation (``ragtrace._offline.perturb``, seeded by ``--perturb-seed`` and the
case id). Each answer becomes an ``EvalItem``: id ``case`` for the question as written,
``f"{case}~{perturbation}"`` for a perturbed one; the reference and metadata come from the case.

A system that raises, or returns something that is not an answer, never stops the run: the
item gets no response (evaluators that need one skip it), ``error`` says what happened, the
failure is counted in ``AskCounts`` and the first one of each system is reported on ``note``.
A case without a query is recorded the same way.

A multi-turn case (one with ``conversation`` / ``turns`` / ``history`` and ``session_id``:
``ragtrace._offline.case_conversations``) is asked after its earlier turns (see each system in
``ragtrace._offline.callables``); only its last turn, the case's question, is scored. The input
read by ``ragtrace eval`` (an ``InputReader``) is read with a ``CaseParser``, so its lines may
hold those fields.

How long each answer took is measured around the call (``RagRecord.start_ns`` / ``end_ns``),
and the tokens and cost the system reported (``Answer.usage``) go into the record's attributes
(``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``, ``ragtrace.usage.cost_usd``), so
the scores file carries them (``ragtrace._offline.output``). The scored record keeps what the
capture saw of an agent's turn: its ``tool_calls``, ``llm_calls`` and ``conversation`` (else the
case's own conversation).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from ragtrace import _semconv as sc
from ragtrace._model import RagRecord, once_each
from ragtrace._offline.answers import Answer, Usage
from ragtrace._offline.callables import System
from ragtrace._offline.perturb import perturb
from ragtrace._offline.records import InputRecord
from ragtrace._offline.systems import EvalItem

MAX_ERROR_CHARS = 500
COST_ATTRIBUTE = "ragtrace.usage.cost_usd"


@dataclass(slots=True)
class AskCounts:
    """What asking found, per system: questions asked and those left unanswered.

    Attributes:
        asked: Questions asked (perturbed ones included).
        failed: Questions the system raised on or answered with junk (and cases with no
            question to ask): the record's ``error``.
        empty: Questions the system answered with nothing (an empty or blank response).
        unanswered: ``failed`` plus ``empty``: what the summary's ``unanswered`` column counts
            (for each evaluator that needs the answer) and ``ragtrace report`` counts as
            failures.
    """

    asked: int = 0
    failed: int = 0
    failed_by_system: dict[str, int] = field(default_factory=dict)
    empty: int = 0
    empty_by_system: dict[str, int] = field(default_factory=dict)
    unanswered: int = 0
    unanswered_by_system: dict[str, int] = field(default_factory=dict)


class Asker:
    """Asks every system every case, as written and under each perturbation.

    Args:
        systems: Who to ask, in order.
        perturbations: Perturbation names (``ragtrace._offline.perturb.PERTURBATIONS``).
        seed: Seeds the perturbations (with each case's id).
        note: Called with a message for the first failure of each system (``EvalLoop`` sets its
            own when None).
    """

    def __init__(
        self,
        systems: Sequence[System],
        perturbations: Sequence[str] = (),
        *,
        seed: int = 0,
        note: Callable[[str], None] | None = None,
    ) -> None:
        self.systems = tuple(systems)
        self.perturbations = tuple(perturbations)
        self.seed = seed
        self.counts = AskCounts()
        self.note = note

    def items(self, records: Iterable[tuple[str | None, InputRecord]]) -> Iterator[EvalItem]:
        """The answers to ``records`` (``InputReader`` pairs; their system is ignored)."""
        for _, case in records:
            questions = [(None, case.record.query)] + [
                (p, perturb(p, case.record.query, seed=self.seed, key=case.id))
                for p in self.perturbations
            ]
            for system in self.systems:
                for perturbation, query in questions:
                    yield self._ask(system, case, perturbation, query)

    def _ask(
        self, system: System, case: InputRecord, perturbation: str | None, query: str | None
    ) -> EvalItem:
        item_id = case.id if perturbation is None else f"{case.id}~{perturbation}"
        answer, error = Answer(None), None
        self.counts.asked += 1
        start_ns, started = time.time_ns(), time.perf_counter_ns()
        if query is None:
            error = "the case has no query to ask"
        else:
            conversation = case.record.conversation
            try:
                if conversation is None:
                    answer = system.ask(query)
                else:
                    answer = system.ask(query, conversation)
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]
        took_ns = time.perf_counter_ns() - started
        if error is not None:
            self._failed(system.name, item_id, error)
        elif not (answer.response or "").strip():
            _count(self.counts.empty_by_system, system.name)
            self.counts.empty += 1
        if error is not None or not (answer.response or "").strip():
            _count(self.counts.unanswered_by_system, system.name)
            self.counts.unanswered += 1
        timing = (start_ns, start_ns + took_ns) if query is not None else (0, 0)
        record = answered_record(
            case.record, answer, query, item_id, system.name, error, timing=timing
        )
        return EvalItem(system.name, item_id, case.id, perturbation, record)

    def _failed(self, system: str, item_id: str, error: str) -> None:
        counts = self.counts
        counts.failed += 1
        seen = counts.failed_by_system.get(system, 0)
        counts.failed_by_system[system] = seen + 1
        if seen == 0 and self.note is not None:
            self.note(
                f"system {system!r} failed on id {item_id!r}: {error} (further failures of "
                f"{system} are counted, not shown)"
            )

    def line(self) -> str:
        """One line for the end of the run: questions asked and those left unanswered (failed
        or empty), per system, as the summary table's ``unanswered`` column counts them."""
        counts = self.counts
        by_system = ", ".join(f"{s} {n:,}" for s, n in counts.unanswered_by_system.items())
        line = (
            f"asked {counts.asked:,} questions of {len(self.systems)} system(s); "
            f"{counts.unanswered:,} unanswered ({counts.failed:,} failed, {counts.empty:,} empty)"
        )
        if by_system:
            line += (
                f": {by_system}; counted in the table's unanswered column, as failures of each "
                "score that needs the answer"
            )
        return line

    def close(self) -> None:
        """Close every system."""
        close_systems(self.systems)


def _count(by_system: dict[str, int], system: str) -> None:
    by_system[system] = by_system.get(system, 0) + 1


def answered_record(
    case: RagRecord,
    answer: Answer,
    query: str | None,
    item_id: str,
    system: str,
    error: str | None = None,
    *,
    timing: tuple[int, int] = (0, 0),
) -> RagRecord:
    """The record of ``system``'s ``answer`` to ``query`` (the case's question, perhaps
    perturbed): the case's reference, app and metadata, the answer's response, contexts (each
    document once: ``once_each``), model, tool calls, LLM calls and conversation (else the
    case's conversation); ``attributes`` carry ``id`` (``item_id``), ``system`` and the tokens
    and cost the answer reported; ``timing`` is the ask's (start, end) in epoch nanoseconds
    (0, 0 when it was not asked); the trace and span ids are derived from system and item, so
    the same answer always maps to the same trace."""
    digest = hashlib.sha256(f"{system}\x00{item_id}".encode("utf-8", "replace")).hexdigest()
    return RagRecord(
        trace_id=digest[:32],
        span_id=digest[32:48],
        query=query,
        chunks=once_each(answer.chunks),
        response=answer.response,
        reference=case.reference,
        app=case.app,
        model=answer.model,
        start_ns=timing[0],
        end_ns=timing[1],
        error=error,
        attributes={
            **case.attributes,
            "id": item_id,
            "system": system,
            **usage_attributes(answer.usage),
        },
        conversation=answer.conversation if answer.conversation is not None else case.conversation,
        tool_calls=answer.tool_calls,
        llm_calls=answer.llm_calls,
    )


def usage_attributes(usage: Usage | None) -> dict[str, int | float]:
    """``Answer.usage`` as record attributes (the GenAI conventions' token names)."""
    if usage is None:
        return {}
    found = {
        sc.GEN_AI_USAGE_INPUT_TOKENS: usage.input_tokens,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: usage.output_tokens,
        COST_ATTRIBUTE: usage.cost_usd,
    }
    return {k: v for k, v in found.items() if v is not None}


def close_systems(systems: Iterable[System]) -> None:
    """Close each of ``systems`` (a failure to close one is ignored)."""
    for system in systems:
        try:
            system.close()
        except Exception:
            continue
