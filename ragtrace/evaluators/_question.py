"""The question an answer is judged against: a follow-up's standalone question, when there is one.

In a conversation the user's literal message is often a fragment ("and in winter?", "what
about the other one?"). An app that rewrites such a follow-up into a question that stands on
its own keeps it in ``record.conversation.standalone_query``; an evaluator that judges the
answer (or the retrieved passages) against the question should read that one, since the
fragment alone makes a good answer look off-topic. This module is the one place that rule
lives::

    from ragtrace.evaluators._question import question_of
    query = whole(question_of(record))      # instead of whole(record.query)

``question_of(record)`` is the standalone question when the app set a non-blank one, else
``record.query``. ``as_asked(record)`` is the record with that question as its ``query`` (the
same object when nothing changes), for code that reads ``record.query`` by field name (the LLM
judges' ``field_text``). Evaluators where the literal message is the point (PII or secrets the
user typed, the language the user wrote in) keep reading ``record.query``.
"""

from __future__ import annotations

import dataclasses

from ragtrace._model import RagRecord


def standalone_query(record: RagRecord) -> str | None:
    """The follow-up rewritten to stand alone, when the app set a non-blank one."""
    conversation = record.conversation
    rewritten = conversation.standalone_query if conversation is not None else None
    if isinstance(rewritten, str) and rewritten.strip():
        return rewritten
    return None


def question_of(record: RagRecord) -> str | None:
    """The question the answer is judged against: the standalone one, else ``record.query``."""
    return standalone_query(record) or record.query


def as_asked(record: RagRecord) -> RagRecord:
    """``record`` with ``question_of(record)`` as its ``query`` (``record`` itself if equal)."""
    question = standalone_query(record)
    if question is None or question == record.query:
        return record
    return dataclasses.replace(record, query=question)
