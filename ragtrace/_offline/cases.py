"""Test cases given in code, for ``ragtrace.evaluate``: records, mappings or a JSON Lines file.

``items_from(cases)`` turns what a developer has at hand into the answers the engine scores
(``EvalItem``, one system each), in order:

- ``RagRecord`` values (built in a test, captured in production, returned by
  ``ragtrace.testing.ask``): the id is ``attributes["id"]`` when set, else the trace id;
- mappings with the fields of ``ragtrace eval``'s input (``id``, ``query``, ``contexts``,
  ``response``, ``reference``, ``app``, ``model``, ``error``, ``metadata``, ``prompt_version``)
  or DeepEval's test-case names for the same things: ``input`` (the query), ``actual_output``
  (the response), ``expected_output`` (the reference), ``retrieval_context`` (the contexts). A
  mapping is read by the same parser as a line of the file (``ragtrace._offline.records``), so
  the same values are accepted; ``id`` may be left out (``case-N``, N its 1-based position).
  An unknown key is an error, with a did-you-mean: in code it is a typo, never a comment;
- a multi-turn case (a mapping or a line) may add the conversation its question belongs to:
  ``conversation`` (or ``turns`` / ``history``), the earlier turns ``[{"role": "user" |
  "assistant", "content": ...}, ...]``, and ``session_id``; they become the record's
  ``conversation`` (``ragtrace._offline.case_conversations``), which ``ragtrace.testing.ask``
  and ``ragtrace eval --system-callable`` ask the question after;
- a path (``str`` or ``os.PathLike``) of a JSON Lines file in the ``ragtrace eval --input``
  format, read with its reader (``ragtrace._offline.reading``); every refused line is an error
  here, naming the file and line, where ``ragtrace eval`` would skip and count it.

A case's system is ``system`` when given, else its ``model``, else its ``app`` (as ``ragtrace
eval --system-key auto`` names one input's systems). Ids must be unique per system.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

from ragtrace._config.suggestions import suggest
from ragtrace._model import RagRecord
from ragtrace._offline.case_conversations import CONVERSATION_FIELDS, CaseParser
from ragtrace._offline.reading import InputReader
from ragtrace._offline.records import FIELDS, InputRecord, LineError
from ragtrace._offline.summary import InputCounts
from ragtrace._offline.systems import EvalItem, SystemNamer

ALIASES = {
    "input": "query",
    "actual_output": "response",
    "expected_output": "reference",
    "retrieval_context": "contexts",
}
"""DeepEval's test-case field names and the fields they are here."""
CASE_FIELDS = (*FIELDS, *CONVERSATION_FIELDS)
"""Every field a case may have."""
MAX_LISTED = 10
_IN_CODE = "<cases>"
_NO_GROUND_TRUTH_CONTEXT = (
    "'context' (DeepEval's ideal, ground-truth context) has no field here: ragtrace's "
    "evaluators read the retrieved context ('retrieval_context' or 'contexts'); give a "
    "ground-truth answer as 'expected_output' (or 'reference')"
)

Case: TypeAlias = RagRecord | Mapping[str, Any]
"""One test case in code: a ``RagRecord``, or a mapping of ``ragtrace eval``'s input fields
(``query``, ``contexts``, ``response``, ``reference``...) or DeepEval's names for them
(``input``, ``retrieval_context``, ``actual_output``, ``expected_output``)."""
Cases: TypeAlias = Iterable[Case] | Case | str | os.PathLike[str]
"""The test cases ``ragtrace.evaluate`` scores: several, one alone, or the path of a JSON Lines
file in ``ragtrace eval``'s input format."""


class CaseError(ValueError):
    """Test cases that cannot be evaluated; the message says which and why."""


def items_from(
    cases: Cases, *, system: str | None = None, require_response: bool = False
) -> list[EvalItem]:
    """The answers to score, one per case, in order (see the module docstring).

    Args:
        cases: Records, mappings, one of them alone, or the path of a JSON Lines file.
        system: Names every case's system (default: the system ``ragtrace.testing.ask`` put
            in a record's ``attributes["system"]``, else its model, else its app).
        require_response: Refuse file lines without a ``response`` key (``ragtrace eval``
            does when an evaluator needs one); cases in code without one are scored anyway,
            and the evaluators that need it skip them.

    Raises:
        CaseError: No cases, a case of another type, a bad field, a bad line, a repeated id.
        FileNotFoundError, IsADirectoryError, PermissionError: The file cannot be opened.
    """
    if isinstance(cases, str | os.PathLike):
        found = read_cases(cases, require_response=require_response)
        where = os.fspath(cases)
    else:
        found = [case_record(case, n) for n, case in enumerate(_case_list(cases), 1)]
        where = "the cases given"
    if not found:
        raise CaseError(f"no test cases in {where}")
    namer = SystemNamer("auto", [_IN_CODE])
    items: list[EvalItem] = []
    first: dict[tuple[str, str], int] = {}
    in_code = not isinstance(cases, str | os.PathLike)
    for case in found:
        asked = case.record.attributes.get("system") if in_code else None
        if system is not None:
            name = system
        elif isinstance(asked, str) and asked:
            name = asked  # ragtrace.testing.ask named the system that answered
        else:
            name = namer.name(case, _IN_CODE)
        earlier = first.setdefault((name, case.id), case.line)
        if earlier != case.line:
            raise CaseError(
                f"{_where(where, case.line)}: duplicate id {case.id!r} (first at "
                f"{_where(where, earlier)}); give every case a distinct 'id'"
            )
        items.append(EvalItem(name, case.id, case.id, None, case.record))
    return items


def read_cases(
    path: str | os.PathLike[str], *, require_response: bool = False
) -> list[InputRecord]:
    """Every case of a JSON Lines file in the ``ragtrace eval --input`` format (with the
    conversation fields of a multi-turn case), in order.

    Unknown field names are reported as warnings (and ignored), as ``ragtrace eval`` does.

    Raises:
        CaseError: Refused lines, each named with its file and line.
        FileNotFoundError, IsADirectoryError, PermissionError: The file cannot be opened.
    """
    name = os.fspath(path)
    if os.path.isdir(name):
        raise IsADirectoryError(21, "is a directory, not a JSON Lines file of cases", name)
    problems: list[str] = []

    def unknown_field(text: str) -> None:
        warnings.warn(f"{name}: {text}", UserWarning, stacklevel=2)

    def bad(input_name: str, number: int, reason: str) -> None:
        problems.append(f"{input_name}:{number}: {reason}")

    parser = CaseParser(require_response=require_response, warn=unknown_field)
    with open(name, "rb") as stream:
        namer = SystemNamer("auto", [name])
        reader = InputReader([(name, stream)], parser, InputCounts(), bad, namer)
        found = [case for _, case in reader]
    if problems:
        shown = "\n  ".join(problems[:MAX_LISTED])
        more = f"\n  ... {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
        raise CaseError(f"{len(problems)} bad line(s) in {name}:\n  {shown}{more}")
    return found


def case_record(case: Case, position: int) -> InputRecord:
    """One case in code as an ``InputRecord`` (``position``: 1-based, for ids and messages).

    Raises:
        CaseError: Neither a ``RagRecord`` nor a mapping, or a bad field.
    """
    if isinstance(case, RagRecord):
        given = case.attributes.get("id")
        if isinstance(given, str | int) and not isinstance(given, bool) and str(given).strip():
            return InputRecord(position, str(given), case)
        return InputRecord(position, case.trace_id, case)
    if not isinstance(case, Mapping):
        raise CaseError(
            f"case {position}: expected a RagRecord or a mapping (input, actual_output, "
            f"expected_output, retrieval_context, ...), got {type(case).__name__}"
        )
    data = _canonical(case, position)
    data.setdefault("id", f"case-{position}")

    def refuse(text: str) -> None:
        raise LineError(text.replace(" ignored", ""))

    parser = CaseParser(require_response=False, warn=refuse)
    try:
        return parser.parse_object(data, position)
    except LineError as exc:
        message = str(exc)
        for alias, field in ALIASES.items():  # name the field as the case spells it
            if alias in case:
                message = message.replace(f"'{field}", f"'{alias}")
        raise CaseError(f"case {position}: {message}") from None


def _canonical(case: Mapping[str, Any], position: int) -> dict[str, Any]:
    """The case with DeepEval's names turned into the file's; unknown keys refused."""
    data: dict[str, Any] = {}
    for key, value in case.items():
        if not isinstance(key, str):
            raise CaseError(f"case {position}: keys must be strings, got {key!r}")
        field = ALIASES.get(key, key)
        if field not in CASE_FIELDS:
            raise CaseError(f"case {position}: {_unknown(key)}")
        if field in data:
            other = next(k for k in case if ALIASES.get(k, k) == field and k != key)
            raise CaseError(f"case {position}: {other!r} and {key!r} are the same field; give one")
        data[field] = value
    return data


def _unknown(key: str) -> str:
    if key == "context":
        return _NO_GROUND_TRUTH_CONTEXT
    known = [*CASE_FIELDS, *ALIASES]
    return f"unknown field {key!r}{suggest(key, known)}; known: {', '.join(known)}"


def _case_list(cases: object) -> list[Any]:
    if isinstance(cases, RagRecord | Mapping):
        return [cases]
    if isinstance(cases, str | bytes) or not isinstance(cases, Iterable):
        raise CaseError(
            "cases must be RagRecords, mappings, or the path of a JSON Lines file; "
            f"got {type(cases).__name__}"
        )
    return list(cases)


def _where(source: str, number: int) -> str:
    return f"case {number}" if source == "the cases given" else f"{source}:{number}"
