"""Test cases from a JSON Lines data set, and one pytest test per case.

::

    from ragtrace.testing import parametrize_cases

    @parametrize_cases("tests/rag_cases.jsonl")
    def test_answers(case):          # case: a RagRecord; the test id is the case's id
        ...

The file is in the ``ragtrace eval --input`` format (one JSON object per line: ``id``,
``query``, optional ``contexts``, ``response``, ``reference``, ``app``, ``model``,
``metadata``, and for a multi-turn case ``conversation``: the earlier turns
``[{"role": "user" | "assistant", "content": ...}]``, and ``session_id``), read with its
reader; every refused line is an error naming the file and line, raised when the test module
is collected. A relative path is read from the current directory, as ``open`` does: for a data
set beside the test module, pass ``Path(__file__).with_name("rag_cases.jsonl")``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

    from ragtrace._model import RagRecord


def load_cases(path: str | os.PathLike[str]) -> list[RagRecord]:
    """The cases of a JSON Lines data set, in order; each record's id is in
    ``attributes["id"]``, a multi-turn case's earlier turns in ``conversation``.

    Raises:
        CaseError: A line that cannot be read (file and line named) or an empty data set.
        FileNotFoundError: No such file (the message says where it was looked for).
    """
    from ragtrace._offline.cases import CaseError, read_cases

    name = os.fspath(path)
    if not os.path.exists(name):
        raise FileNotFoundError(
            2,
            f"no data set at {os.path.abspath(name)} (relative paths are read from the current "
            "directory; for a file beside the test module use Path(__file__).with_name(...))",
            name,
        )
    records = [case.record for case in read_cases(name)]
    if not records:
        raise CaseError(f"no test cases in {name}")
    return records


def parametrize_cases(path: str | os.PathLike[str], argname: str = "case") -> pytest.MarkDecorator:
    """``pytest.mark.parametrize`` over the data set's cases, ids from the cases' ids.

    Raises:
        CaseError, FileNotFoundError: As ``load_cases`` (at collection).
    """
    import pytest

    return pytest.mark.parametrize(
        argname,
        [pytest.param(record, id=str(record.attributes["id"])) for record in load_cases(path)],
    )
