"""LLM-judge context entities recall (000 2.2, RAGAS): reference entities found in the context.

``judge_context_entities_recall``::

    entities of the reference also found in the retrieved context / entities of the reference

as Ejento's guide (000) defines it. The judge lists the named entities (people, places,
organisations, dates, numbers, named concepts) of the reference and of the retrieved context
(prompt ``context_entities``, one call per text). Choices where 000 is silent:

- Entities are compared after ``retrieval_quality.normalise_entity`` (case-folded, whitespace
  collapsed, outer punctuation and a leading "the" removed) and deduplicated.
- The 0.5B judge sometimes lists a word that is not in the text (or copies its prompt's
  example); an entity counts only when it occurs, normalised and as whole words, in the text it
  was extracted from. Dropped ones are listed in ``details["dropped"]``.
- A reference entity is found when it occurs as whole words in the (normalised) context text,
  or when it equals, contains or is contained in, as whole words, an entity the judge listed
  for the context ("Los Angeles Memorial Coliseum" matches "the Los Angeles Memorial Coliseum
  in California"). The first test is what RAGAS' set intersection amounts to when the judge
  copies entities exactly; the text test keeps an entity the judge missed in a long context
  from counting as missing. The context's entities are extracted only when some reference
  entity is not already found in its text: they could only add matches.
- A reference in which the judge finds no entity yields no Score (recall is undefined; the
  local ``context_entities_recall`` does the same). ``details["entities"]`` gives each
  reference entity, whether it was found and how (``"text"`` or ``"entity"``).

Threshold 0.75 (004's default for retrieval metrics). Chunks are joined with blank lines (not
numbered: numbering would add numbers to the entities). Caps: ``judge_statements``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from ragtrace._judges.client import JudgeReply
from ragtrace._judges.prompts import DEFAULT_MAX_CHARS as PROMPT_MAX_CHARS
from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._judge.base import object_schema
from ragtrace.evaluators._judge.statements import StatementJudge, with_addressed
from ragtrace.evaluators._retrieval_quality import normalise_entity
from ragtrace.evaluators._statement_support import as_text, clip

ENTITIES_PROMPT = "context_entities"
ENTITIES_MAX_TOKENS = 384
MAX_ENTITIES = 64
_MAX_LISTED = 50

ENTITIES_SCHEMA: dict[str, Any] = object_schema(
    entities={"type": "array", "items": {"type": "string"}}
)


def entities_recall(found: Sequence[bool]) -> float | None:
    """000's context entities recall: reference entities found / reference entities."""
    if not found:
        return None
    return sum(bool(f) for f in found) / len(found)


def occurs(entity: str, text: str) -> bool:
    """Whether normalised ``entity`` occurs as whole words in normalised ``text``."""
    if not entity:
        return False
    return re.search(rf"(?<!\w){re.escape(entity)}(?!\w)", text) is not None


def match_entity(entity: str, context_text: str, context_entities: Iterable[str]) -> str | None:
    """How a normalised reference entity is found in the context: ``text``, ``entity`` or None.

    ``context_text`` must be normalised (``normalise_entity``); ``context_entities`` too.
    """
    if occurs(entity, context_text):
        return "text"
    for other in context_entities:
        if occurs(entity, other) or occurs(other, entity):
            return "entity"
    return None


def kept_entities(raw: Iterable[object], text: str) -> tuple[list[str], list[str]]:
    """Normalised distinct entities of ``raw`` that occur in ``text``, and those that do not."""
    normal_text = normalise_entity(text)
    kept: list[str] = []
    dropped: list[str] = []
    for item in raw:
        entity = normalise_entity(as_text(item))
        if not entity or entity in kept or entity in dropped:
            continue
        (kept if occurs(entity, normal_text) else dropped).append(entity)
    return kept, dropped


class JudgeContextEntitiesRecall(StatementJudge):
    """Share of the reference's entities (judge-extracted) found in the retrieved context."""

    name: ClassVar[str] = "judge_context_entities_recall"
    requires: ClassVar[frozenset[str]] = frozenset({"chunks", "reference"})

    def judge_record(self, record: RagRecord) -> list[Score]:
        reference, cut_reference = self.field_text(record, "reference")
        chunks, cut_chunks, addressed = self.guarded_chunks(record)
        context = "\n\n".join(t for t in chunks if t)
        replies: list[JudgeReply] = []
        entities, dropped, cut_entities = self.extract(reference, replies)
        normal_context = normalise_entity(context)
        how = {e: match_entity(e, normal_context, ()) for e in entities}
        context_entities: list[str] | None = None
        if context and not all(how.values()):
            context_entities, context_dropped, _ = self.extract(context, replies)
            dropped += context_dropped
            how = {
                e: h or match_entity(e, normal_context, context_entities) for e, h in how.items()
            }
        if not entities:
            return []
        found = [how[e] is not None for e in entities]
        hits = sum(found)
        details: dict[str, Any] = {
            "entities": [{"entity": clip(e), "found": bool(h), "via": h} for e, h in how.items()][
                :_MAX_LISTED
            ],
            "found": hits,
            "dropped": [clip(d) for d in dropped][:_MAX_LISTED],
            "truncated": cut_reference or cut_chunks or cut_entities,
        }
        if context_entities is not None:
            details["context_entities"] = [clip(e) for e in context_entities][:_MAX_LISTED]
        return [
            self.score(
                entities_recall(found),
                explanation=f"{hits} of {len(entities)} reference entities in the context",
                details=with_addressed(details, addressed),
                replies=replies,
            )
        ]

    def extract(self, text: str, replies: list[JudgeReply]) -> tuple[list[str], list[str], bool]:
        """The judge's entities of ``text``: kept (at most ``MAX_ENTITIES``), dropped, and
        whether a cap applied (too many entities, or the text clipped in the prompt)."""
        reply = self.ask(
            ENTITIES_PROMPT, ENTITIES_SCHEMA, max_tokens=ENTITIES_MAX_TOKENS, text=text
        )
        replies.append(reply)
        kept, dropped = kept_entities(reply.data["entities"], text)
        cut = len(kept) > MAX_ENTITIES or len(text) > PROMPT_MAX_CHARS
        return kept[:MAX_ENTITIES], dropped, cut
