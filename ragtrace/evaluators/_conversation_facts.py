"""Facts a user states in a conversation, and answers that lose them (``knowledge_retention``).

A lexical heuristic, no model. It finds few lapses, but plain ones:

- **A fact** is a statement (a sentence that is not a question) of the user's that names a
  value: a number ("3", "12,345", "three") or a name (a capitalised word or run of words past
  the sentence's first word: "Lisbon", "New York"). Its **subject** is the sentence's other
  content words ("My order number is 12345" -> values {12345}, subject {order, number}). A later
  fact sharing a subject word and a kind of value replaces it ("Actually my budget is 700").
- An answer **contradicts** a fact when one of its sentences is about the fact (it speaks to
  the user, "you"/"your", or names two of its subject words, or one of its values) and puts a
  value of the same kind within three words of a subject word, and none of the fact's values of
  that kind ("your budget of 300 euros" after "my budget is 500"). A value the user gave
  elsewhere is no contradiction, unless it is that of a fact the user replaced.
- An answer **asks again** for a fact when one of its sentences is a request ("What is ...",
  "Could you tell me ...", "please provide ...") about it (speaking to the user or naming two
  of its subject words, and a subject word) without its value ("What is your order number?").

An answer is checked when a fact was stated in its turn or before (the earlier turns include
the first record's ``conversation.history``). ``retention`` gives the facts, the answers
checked and the lapses; ``knowledge_retention`` is the share of checked answers without one.

Limits: English only; a name at the start of a sentence is not seen ("Lisbon is home"); a
paraphrased value ("a dozen") or a fact without a number or a name ("I am vegetarian") is not
a fact here; subject words are matched after dropping a plural "s" only. An answer that says
the value otherwise ("your 12 3 45") reads as a contradiction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragtrace.evaluators._statement_support import clip
from ragtrace.evaluators._text import STOP_WORDS, split_sentences

NEAR = 3  # a contradicting value lies within this many words of a subject word
MAX_TEXT_CHARS = 5000  # of each message read
_TOKEN = re.compile("[^\\W_]+(?:[.,:/'\u2019-][^\\W_]+)*")
_SECOND_PERSON = frozenset({"you", "your", "yours", "you're", "you've", "you'd", "yourself"})
_FIRST_PERSON = frozenset({"i", "i'm", "i've", "i'd", "i'll"})
_INTERROGATIVE = frozenset(
    "what when where who whom whose which why how is are am was were can could do does did "
    "will would should shall may might have has had".split()
)
_REQUEST = re.compile(
    r"^(?:what|which|when|where|who)\b|\bhow (?:many|much|old|long)\b|"
    r"\b(?:could|can|would|will) you (?:please )?(?:tell|give|provide|share|confirm|send|"
    r"let me know|remind)\b|\bmay i (?:have|ask)\b|\bplease (?:provide|share|tell|send|"
    r"confirm|give|enter|remind)\b|\blet me know\b"
)
_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}


@dataclass(frozen=True)
class Fact:
    """One user statement with a value: where it was said, its values and its subject."""

    turn: int  # the record's index in the session; -1: the first record's history
    order: int  # position among all facts (later facts replace earlier ones)
    text: str
    values: dict[str, str]  # normalised value -> kind ("number" or "name")
    subject: frozenset[str]

    def public(self) -> dict[str, Any]:
        """The fact for ``details``."""
        return {
            "turn": self.turn,
            "statement": clip(self.text),
            "values": sorted(self.values),
            "subject": sorted(self.subject),
        }


@dataclass
class Retention:
    """What ``retention`` found: the facts, how many answers were checked, the lapses."""

    facts: list[Fact] = field(default_factory=list)
    checked: int = 0
    lapses: list[dict[str, Any]] = field(default_factory=list)
    lapsed_turns: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class _Sentence:
    text: str
    words: tuple[str, ...]  # lower-cased, plural "s" dropped
    values: tuple[tuple[int, str, str], ...]  # (word index, value, kind)


def retention(earlier: Sequence[str], queries: Sequence[str], answers: Sequence[str]) -> Retention:
    """Facts of the user's messages and the answers that contradict or ask again for them.

    Args:
        earlier: User messages before the first turn (oldest first).
        queries: The user's message of each turn, in order.
        answers: The answer of each turn ("" for none), in order.
    """
    found = Retention()
    said: list[set[str]] = []  # values the user gave up to each turn
    given: set[str] = set()
    for text in earlier:
        _add_facts(found.facts, text, -1)
        given.update(v for s in _sentences(text) for _, v, _ in s.values)
    for turn, query in enumerate(queries):
        _add_facts(found.facts, query, turn)
        given.update(v for s in _sentences(query) for _, v, _ in s.values)
        said.append(set(given))
    for turn, answer in enumerate(answers):
        known = [f for f in found.facts if f.turn <= turn]
        active = _active(known)
        if not active or not answer.strip():
            continue
        found.checked += 1
        # a value of a fact the user replaced is no longer theirs: repeating it is a lapse
        replaced = {v for f in known if f not in active for v in f.values}
        current = {v for f in active for v in f.values}
        given_now = (said[turn] - replaced) | current
        for sentence in _sentences(answer):
            for fact in active:
                lapse = _lapse(fact, sentence, given_now)
                if lapse is not None:
                    found.lapses.append(
                        {
                            "turn": turn,
                            "kind": lapse[0],
                            "stated_in_turn": fact.turn,
                            "values": sorted(fact.values),
                            "found": lapse[1],
                            "answer_sentence": clip(sentence.text),
                        }
                    )
                    found.lapsed_turns.add(turn)
    return found


def facts_of(text: str, turn: int = 0) -> list[Fact]:
    """The facts a user message states (see the module docstring)."""
    facts: list[Fact] = []
    _add_facts(facts, text, turn)
    return facts


def _add_facts(facts: list[Fact], text: str, turn: int) -> None:
    for sentence in _sentences(text):
        words = sentence.words
        if not words or sentence.text.rstrip().endswith("?") or words[0] in _INTERROGATIVE:
            continue
        at = {
            i + k
            for i, v, kind in sentence.values
            for k in range(len(v.split()) if kind == "name" else 1)
        }
        subject = frozenset(
            w
            for i, w in enumerate(words)
            if i not in at and len(w) > 2 and w.isalpha() and w not in STOP_WORDS
        )
        if sentence.values and subject:
            values = {v: kind for _, v, kind in sentence.values}
            facts.append(Fact(turn, len(facts), sentence.text, values, subject))


def _active(facts: list[Fact]) -> list[Fact]:
    """Facts not replaced by a later one with a subject word and a kind of value in common."""
    return [
        f
        for f in facts
        if not any(
            g.order > f.order
            and f.subject & g.subject
            and set(f.values.values()) & set(g.values.values())
            for g in facts
        )
    ]


def _lapse(fact: Fact, sentence: _Sentence, said: set[str]) -> tuple[str, list[str]] | None:
    """``("contradicted", values)`` or ``("asked_again", [])`` when ``sentence`` loses the
    fact, else None."""
    places = [i for i, w in enumerate(sentence.words) if w in fact.subject]
    if not places:
        return None
    present = {v for _, v, _ in sentence.values}
    second = any(w in _SECOND_PERSON for w in sentence.words)
    about = second or len({sentence.words[i] for i in places}) >= 2
    if _REQUEST.search(sentence.text.lower().replace("\u2019", "'")) and about:
        return None if present & set(fact.values) else ("asked_again", [])
    if not (about or present & set(fact.values)):
        return None
    for kind in set(fact.values.values()):
        if any(v in present for v, k in fact.values.items() if k == kind):
            continue  # the fact's own value of this kind is there
        other = sorted(
            {
                v
                for i, v, k in sentence.values
                if k == kind and v not in said and any(abs(i - p) <= NEAR for p in places)
            }
        )
        if other:
            return "contradicted", other
    return None


def _sentences(text: str) -> list[_Sentence]:
    return [_read(s) for s in split_sentences(text[:MAX_TEXT_CHARS])]


def _read(text: str) -> _Sentence:
    tokens = _TOKEN.findall(text.replace("\u2019", "'"))
    words: list[str] = []
    values: list[tuple[int, str, str]] = []
    name: list[str] = []
    for index, token in enumerate(tokens):
        lower = token.lower()
        is_name = index > 0 and token[0].isupper() and lower not in _FIRST_PERSON
        if is_name:
            name.append(token)
        elif name:
            values.append((index - len(name), " ".join(name).lower(), "name"))
            name = []
        if any(c.isdigit() for c in token):
            values.append((index, token.replace(",", "").lower(), "number"))
        elif lower in _NUMBER_WORDS:
            values.append((index, _NUMBER_WORDS[lower], "number"))
        words.append(lower if lower in STOP_WORDS else _stem(lower))
    if name:
        values.append((len(tokens) - len(name), " ".join(name).lower(), "name"))
    return _Sentence(text, tuple(words), tuple(values))


def _stem(word: str) -> str:
    if word.endswith("'s"):
        word = word[:-2]
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
