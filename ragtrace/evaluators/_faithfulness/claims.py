"""Claim splitters: a text cut into claims, below the sentence.

The seeds' worked examples (002, 003) count "Leonardo da Vinci painted the Mona Lisa, and it was
painted in the 15th century." as two claims. ``split_clauses(text)`` splits each sentence
(``text.split_sentences``) with fixed, conservative rules, written before they were measured
(docs/decisions/claims-below-the-sentence.md):

- at ``;`` always;
- at ``, and`` / ``, but`` / `` but`` when what follows starts a clause: a subject pronoun and a
  finite verb ("and it was"), a verb ("and is"), or a noun phrase of at most three words and a
  finite verb ("but the museum is");
- at `` and`` without a comma only before a subject pronoun and a finite verb ("and she
  wrote"): "cats and dogs" and "between 5 and 10 people were" stay whole;
- at ``, which`` (a non-restrictive relative clause), the relative pronoun replaced by its
  antecedent, the noun phrase before the comma ("He founded Acme Corp, which makes chips." ->
  "He founded Acme Corp." and "Acme Corp makes chips.").

Nothing inside quotes or brackets is split ("'Pride and Prejudice'" stays a title), and every
piece keeps at least ``MIN_WORDS`` words (a shorter one stays joined). Pronouns are left as
written. Each claim ends with the sentence's final punctuation.

``split_claim_parts`` also cuts at an appositive and at a last adjunct of place or time;
``named_splitter`` turns a ``splitter=`` option (a name or a function) into a splitter.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ragtrace.evaluators._text import split_sentences

MIN_WORDS = 3
NOUN_PHRASE_WORDS = 3
ANTECEDENT_WORDS = 5
SUBJECT_PRONOUNS = frozenset(
    "i you he she it we they this these those there".split()  # "that": often a conjunction
)
FINITE_VERBS = frozenset(
    """is are was were am has have had will would can could should shall may might must does
    do did isn't aren't wasn't weren't hasn't haven't hadn't won't wouldn't can't couldn't
    shouldn't doesn't don't didn't""".split()
)
DETERMINERS = frozenset("the a an its his her their our my your this that these those".split())
STOPS_BEFORE_ANTECEDENT = frozenset(
    """in on at of for from by with to into onto about as than over under after before during
    is are was were be been being has have had founded built made called named""".split()
)
_JOINS = re.compile(
    r"(?P<semi>\s*;\s+)|(?P<comma>,)?(?P<quote>['\"\u2019\u201d]?)\s+(?P<word>and|but|which)\s+",
    re.IGNORECASE,
)
_OPENING = "\"'\u2018\u201c([{"
_CLOSING = {"(": ")", "[": "]", "{": "}"}
_WORD = re.compile(r"[\w'\u2019-]+")


def split_clauses(text: str | None) -> list[str]:
    """The claims of ``text``: its sentences, each split at its joined clauses."""
    return [clause for sentence in split_sentences(text) for clause in sentence_clauses(sentence)]


def sentence_clauses(sentence: str) -> list[str]:
    """One sentence split at the joins the module docstring lists (itself when none)."""
    sentence = sentence.strip()
    if not sentence:
        return []
    end = sentence[-1] if sentence[-1] in ".!?" else "."
    pieces: list[str] = []
    start, prefix = 0, ""
    for match in _JOINS.finditer(sentence):
        quote = match.group("quote") or ""
        at = match.end("quote") if quote else match.start()
        if match.start() < start or _quoted(sentence, at):
            continue
        left = sentence[start : match.start()] + quote
        decided = _join(match, left, sentence[match.end() :])
        if decided is None:
            continue
        pieces.append(prefix + left)
        start, prefix = match.end(), decided
    pieces.append(prefix + sentence[start:])
    cleaned = [_finish(p, end) for p in pieces]
    return [c for c in cleaned if c]


def _join(match: re.Match[str], left: str, right: str) -> str | None:
    """When the join splits, the words to put before the right piece ("" or the antecedent of
    "which"); None when it does not split."""
    if len(_words(left)) < MIN_WORDS or len(_words(right)) < MIN_WORDS:
        return None
    if match.group("semi"):
        return ""
    word = match.group("word").lower()
    comma = bool(match.group("comma"))
    if word == "which":
        antecedent = _antecedent(left) if comma else ""
        return antecedent + " " if antecedent else None
    return "" if _starts_clause(right, loose=comma or word == "but") else None


def _starts_clause(text: str, *, loose: bool) -> bool:
    tokens = [t.lower() for t in _words(text)[: NOUN_PHRASE_WORDS + 1]]
    if not tokens:
        return False
    if tokens[0] in SUBJECT_PRONOUNS:
        return len(tokens) > 1 and _finite(tokens[1])
    if not loose:
        return False
    if tokens[0] in FINITE_VERBS:
        return True
    return any(t in FINITE_VERBS for t in tokens[1:])


def _finite(token: str) -> bool:
    return token in FINITE_VERBS or (len(token) > 3 and token.endswith(("ed", "es", "s")))


def _antecedent(left: str) -> str:
    """The noun phrase just before a ", which": back from the comma to a determiner
    (included) or a preposition or verb (excluded), at most ``ANTECEDENT_WORDS`` words."""
    words = left.rstrip(" ,'\"\u2019\u201d").split()
    taken: list[str] = []
    for word in reversed(words):
        bare = word.strip(".,;:()[]\"'").lower()
        if not bare or bare in STOPS_BEFORE_ANTECEDENT or len(taken) == ANTECEDENT_WORDS:
            break
        taken.append(word.strip(",;:"))
        if bare in DETERMINERS:
            break
    if not taken:
        return ""
    phrase = " ".join(reversed(taken))
    return phrase[:1].upper() + phrase[1:] if phrase[:1].islower() else phrase


def _quoted(text: str, at: int) -> bool:
    """Whether position ``at`` lies inside quotes or brackets opened before it."""
    stack: list[str] = []
    for i, char in enumerate(text[:at]):
        before = text[i - 1] if i else " "
        after = text[i + 1] if i + 1 < len(text) else " "
        if char in "([{":
            stack.append(_CLOSING[char])
        elif stack and char == stack[-1] and char in ")]}":
            stack.pop()
        elif char in "\"\u201c\u201d'\u2018\u2019":
            if before.isalnum() and after.isalnum():
                continue  # an apostrophe inside a word
            if stack and stack[-1] in "\"\u201d'\u2019" and not after.isalnum():
                stack.pop()  # a closing quote
            elif not before.isalnum():
                stack.append({"\u201c": "\u201d", "\u2018": "\u2019"}.get(char, char))
    return bool(stack)


def _finish(piece: str, end: str) -> str:
    text = piece.strip().rstrip(",;:").strip()
    if len(_words(text)) < 1:
        return ""
    if text[-1] not in ".!?" and not (text[-1] in "'\"\u2019\u201d" and text[-2:-1] in ".!?"):
        text += end
    return text[:1].upper() + text[1:] if text[:1].islower() else text


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


APPOSITIVE = re.compile(
    r"^(?P<subject>[^,]{2,80}?), (?P<marker>(?:also |better )?(?:known as|called)) "
    r"(?P<name>[^,]{1,80}), (?P<rest>.+)$",
    re.IGNORECASE,
)
ADJUNCT_PREPOSITIONS = frozenset("in at on near from during".split())


def split_claim_parts(text: str | None) -> list[str]:
    """``split_clauses``, then each clause also split at an appositive naming its subject
    ("AI, also known as Artificial Intelligence, is used ..." -> "AI is also known as
    Artificial Intelligence." and "AI is used ...") and at a last comma-separated adjunct of
    place or time after a verb with an auxiliary ("The game was held on January 15, 1967, in
    Florida." -> "The game was held on January 15, 1967." and "The game was held in
    Florida.")."""
    found: list[str] = []
    for clause in split_clauses(text):
        for part in _appositive(clause):
            found.extend(_adjunct(part))
    return found


def _appositive(clause: str) -> list[str]:
    match = APPOSITIVE.match(clause)
    if match is None or not _words(match.group("rest")):
        return [clause]
    subject, rest = match.group("subject").strip(), match.group("rest").strip()
    first = rest.split()[0].lower()
    if first not in FINITE_VERBS:
        return [clause]
    end = clause[-1] if clause[-1] in ".!?" else "."
    return [
        f"{subject} is {match.group('marker')} {match.group('name').strip()}{end}",
        f"{subject} {rest}",
    ]


def _adjunct(clause: str) -> list[str]:
    body = clause.rstrip(".!?")
    head, comma, last = body.rpartition(", ")
    tokens = last.split()
    if not comma or not tokens or tokens[0].lower() not in ADJUNCT_PREPOSITIONS:
        return [clause]
    if any(t.lower() in FINITE_VERBS for t in tokens):
        return [clause]
    words = head.split()
    verb = next((i for i, w in enumerate(words) if w.lower() in FINITE_VERBS), None)
    if verb is None:
        return [clause]
    preposition = next(
        (i for i in range(verb + 1, len(words)) if words[i].lower() in ADJUNCT_PREPOSITIONS),
        None,
    )
    if preposition is None or preposition < verb + 1 or len(words) - preposition < 1:
        return [clause]
    end = clause[-1] if clause[-1] in ".!?" else "."
    stem = " ".join(words[:preposition])
    return [f"{head}{end}", f"{stem} {last}{end}"]


SPLITTERS: dict[str, Callable[[str | None], list[str]]] = {
    "sentences": split_sentences,
    "clauses": split_clauses,
    "claims": split_claim_parts,
}


def named_splitter(
    owner: str, value: str | Callable[[str], list[str]] | None, default: str
) -> Callable[[str], list[str]]:
    """The splitter ``value`` names (``sentences`` or ``clauses``), a callable as given, or
    ``default``'s when None.

    Raises:
        ValueError: An unknown name or something that is not callable.
    """
    if value is None:
        value = default
    if isinstance(value, str):
        if value not in SPLITTERS:
            raise ValueError(
                f"{owner}: splitter must be one of {', '.join(SPLITTERS)} or a function, "
                f"got {value!r}"
            )
        return SPLITTERS[value]
    if not callable(value):
        raise ValueError(f"{owner}: splitter must be callable, got {value!r}")
    return value
