"""The chunks an answer rests on: those that reached the model call that produced it.

Capture and ingest mark each chunk with whether its text reached that call (``Chunk.used``).
An app that retrieves more than it answers from (a corrective RAG whose grader drops
documents, an agent that searches again) keeps the dropped chunks in the record: they are
what retrieval brought back, but the answer never saw them. Evaluators that judge the answer
against its context (groundedness, faithfulness) or the context the answer was given
(``context_relevance``'s precision) read only the chunks the answer rests on; those that judge
retrieval itself (recall) read them all::

    context = answer_context(record)
    judged = context.record(record)   # the record with only those chunks
    explanation += context.note()     # "; judged on the 2 of 4 chunks the answer's ..."

The context is narrowed only when capture knows which chunks were used: at least one chunk is
marked used and at least one unused. A chunk whose mark is unknown (None) stays in.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ragtrace._model import Chunk, RagRecord


@dataclass(frozen=True, slots=True)
class AnswerContext:
    """The chunks an answer rests on, and where they sit among the record's.

    Attributes:
        chunks: Those chunks, in the record's order.
        places: Each one's index in ``RagRecord.chunks``.
        total: How many chunks the record has.
    """

    chunks: tuple[Chunk, ...]
    places: tuple[int, ...]
    total: int

    @property
    def narrowed(self) -> bool:
        """Whether chunks the answer never saw were left out."""
        return len(self.chunks) < self.total

    def place(self, index: int) -> int:
        """The record's index of ``chunks[index]``."""
        return self.places[index]

    def record(self, record: RagRecord) -> RagRecord:
        """``record`` with only these chunks (itself when nothing was left out)."""
        return replace(record, chunks=self.chunks) if self.narrowed else record

    def note(self, prefix: str = "; ") -> str:
        """What was judged, for an explanation (empty when nothing was left out)."""
        if not self.narrowed:
            return ""
        return (
            f"{prefix}judged on the {len(self.chunks)} of {self.total} chunks the answer's "
            "model call saw"
        )

    def details(self) -> dict[str, object]:
        """For a Score's details: the record's indices of the chunks judged (empty when
        nothing was left out)."""
        return {"judged_chunks": list(self.places)} if self.narrowed else {}


def answer_context(record: RagRecord) -> AnswerContext:
    """The chunks ``record``'s answer rests on (see the module docstring)."""
    chunks = tuple(record.chunks or ())
    marks = [getattr(c, "used", None) for c in chunks]  # a bare string stands in for a chunk
    if True not in marks or False not in marks:
        return AnswerContext(chunks, tuple(range(len(chunks))), len(chunks))
    places = tuple(i for i, mark in enumerate(marks) if mark is not False)
    return AnswerContext(tuple(chunks[i] for i in places), places, len(chunks))
