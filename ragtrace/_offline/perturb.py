"""Small, meaning-preserving changes to a question, for ``ragtrace eval --perturb``.

Each perturbation is a pure function ``(text, rng) -> text``: the same text and the same seeded
``random.Random`` give the same result. ``perturb(name, text, seed=..., key=...)`` seeds the
generator from the run's seed, the perturbation's name and a key (the test case's id), so a
case gets the same perturbed question in every run and every system, whatever the order::

    perturb("typos", "How long does installation take?", seed=0, key="q-17")
    # -> 'How long does installatoin take?'

What each one promises:

- ``typos``: about one lower-case word in ten (at least one) of four letters or more gets one
  adjacent swap or one dropped letter, never the first or last letter. Words with a capital
  letter or a digit (names, product codes, numbers) are left alone.
- ``casing``: all lower case or all upper case; the text is equal to the original ignoring case.
- ``synonyms``: about half the words found in the shipped list (``synonym_data``; at least
  one) become another word of their group, keeping a leading capital. A capitalised word inside
  a sentence (a name) and numbers are left alone.
- ``whitespace``: some spaces doubled and maybe a trailing space; the words are unchanged.
- ``punctuation``: final ``?``, ``.`` or ``!`` removed (or a ``?`` added when there is none),
  and some commas before a space dropped; punctuation inside a token (``13.5``, ``7,900``) stays.
- ``contractions``: expanded forms contracted (``do not`` -> ``don't``), or when there are none,
  contracted forms expanded.

Text without anything to change (an empty string, a question with no eligible word) comes back
unchanged. ``None`` is passed through by ``perturb``; any other non-string raises ``TypeError``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable
from functools import lru_cache

from ragtrace._config.suggestions import suggest
from ragtrace._offline.synonym_data import SYNONYM_GROUPS

Perturbation = Callable[[str, random.Random], str]

TYPO_RATE = 0.1
SYNONYM_RATE = 0.5
SPACE_RATE = 0.25
COMMA_RATE = 0.5
_WORD = re.compile(r"\b[^\W\d_]+\b")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)$")
_LOOSE_COMMA = re.compile(r",(?=\s)")
_FINAL_MARKS = re.compile(r"[?.!]+(?=\s*$)")
_APOSTROPHES = "'\u2019"
CONTRACTIONS: tuple[tuple[str, str], ...] = (
    ("do not", "don't"), ("does not", "doesn't"), ("did not", "didn't"), ("is not", "isn't"),
    ("are not", "aren't"), ("was not", "wasn't"), ("were not", "weren't"), ("cannot", "can't"),
    ("will not", "won't"), ("would not", "wouldn't"), ("should not", "shouldn't"),
    ("could not", "couldn't"), ("have not", "haven't"), ("has not", "hasn't"),
    ("it is", "it's"), ("what is", "what's"), ("that is", "that's"), ("there is", "there's"),
    ("where is", "where's"), ("who is", "who's"), ("i am", "i'm"), ("you are", "you're"),
    ("we are", "we're"), ("they are", "they're"), ("i have", "i've"), ("i will", "i'll"),
    ("let us", "let's"),
)  # fmt: skip


class UnknownPerturbation(ValueError):
    """A perturbation name that is not registered; the message lists the known ones."""


def typos(text: str, rng: random.Random) -> str:
    """One adjacent swap or dropped inner letter in about ``TYPO_RATE`` of the eligible words."""
    eligible = [m for m in _WORD.finditer(text) if len(m.group()) >= 4 and m.group().islower()]
    if not eligible:
        return text
    count = max(1, round(TYPO_RATE * len(eligible)))
    chosen = sorted(rng.sample(eligible, count), key=lambda m: m.start(), reverse=True)
    for match in chosen:
        text = text[: match.start()] + _misspell(match.group(), rng) + text[match.end() :]
    return text


def _misspell(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 2)  # inner letters only: word[i] and word[i + 1]
    if rng.random() < 0.5 and word[i] != word[i + 1]:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    return word[:i] + word[i + 1 :]


def casing(text: str, rng: random.Random) -> str:
    """All lower case or all upper case (letters whose case change keeps one character)."""
    upper = rng.random() < 0.5
    return "".join(_recase(c, upper) for c in text)


def _recase(char: str, upper: bool) -> str:
    changed = char.upper() if upper else char.lower()
    return changed if len(changed) == 1 else char


def synonyms(text: str, rng: random.Random) -> str:
    """About ``SYNONYM_RATE`` of the listed words (at least one) replaced by a synonym."""
    groups = synonym_groups()
    eligible = [m for m in _WORD.finditer(text) if _swappable(text, m, groups)]
    if not eligible:
        return text
    chosen = [m for m in eligible if rng.random() < SYNONYM_RATE] or [rng.choice(eligible)]
    for match in reversed(chosen):
        word = match.group()
        others = [w for w in groups[word.lower()] if w != word.lower()]
        new = rng.choice(others)
        if word[0].isupper():
            new = new[0].upper() + new[1:]
        text = text[: match.start()] + new + text[match.end() :]
    return text


def _swappable(text: str, match: re.Match[str], groups: dict[str, tuple[str, ...]]) -> bool:
    word = match.group()
    if word.lower() not in groups:
        return False
    if word.islower():
        return True
    # Capitalised: only as a sentence's first word (elsewhere it is probably a name).
    return word[1:].islower() and bool(_SENTENCE_START.search(text[: match.start()]))


def whitespace(text: str, rng: random.Random) -> str:
    """Some single spaces doubled (at least one) and maybe a trailing space."""
    spaces = [i for i, c in enumerate(text) if c == " "]
    if not text.strip():
        return text
    doubled = {i for i in spaces if rng.random() < SPACE_RATE}
    if spaces and not doubled:
        doubled = {rng.choice(spaces)}
    out = "".join(c + " " if i in doubled else c for i, c in enumerate(text))
    return out + " " if rng.random() < 0.5 or not spaces else out


def punctuation(text: str, rng: random.Random) -> str:
    """Final ``?``/``.``/``!`` removed (a ``?`` added when none) and some loose commas dropped."""
    if not text.strip():
        return text
    commas = [m.start() for m in _LOOSE_COMMA.finditer(text)]
    dropped = {i for i in commas if rng.random() < COMMA_RATE}
    text = "".join(c for i, c in enumerate(text) if i not in dropped)
    if _FINAL_MARKS.search(text):
        return _FINAL_MARKS.sub("", text)
    stripped = text.rstrip()
    return stripped + "?" + text[len(stripped) :]


def contractions(text: str, rng: random.Random) -> str:
    """Expanded forms contracted; when there are none, contracted forms expanded."""
    contracted = _replace_all(
        text, [(_phrase(long, ending=short), short) for long, short in CONTRACTIONS]
    )
    if contracted != text:
        return contracted
    return _replace_all(text, [(_phrase(short), long) for long, short in CONTRACTIONS])


def _phrase(words: str, ending: str = "") -> re.Pattern[str]:
    body = re.escape(words).replace(r"\ ", r"\s+").replace("'", f"[{_APOSTROPHES}]")
    # "it is" ends a clause in "what it is": contract it only before another word.
    tail = "" if ending.endswith("n't") or not ending else r"(?=\s+\w)"
    return re.compile(rf"\b{body}\b{tail}", re.IGNORECASE)


def _replace_all(text: str, rules: list[tuple[re.Pattern[str], str]]) -> str:
    for pattern, new in rules:
        text = pattern.sub(_replacer(new), text)
    return text


def _replacer(new: str) -> Callable[[re.Match[str]], str]:
    return lambda match: _same_case(match.group(), new)


def _same_case(old: str, new: str) -> str:
    if old.isupper() and len(old) > 1:
        return new.upper()
    if new.startswith("i'") or new.startswith("i "):  # the pronoun stays a capital
        new = "I" + new[1:]
    return new[0].upper() + new[1:] if old[0].isupper() else new


PERTURBATIONS: dict[str, Perturbation] = {
    "typos": typos,
    "casing": casing,
    "synonyms": synonyms,
    "whitespace": whitespace,
    "punctuation": punctuation,
    "contractions": contractions,
}


def get(name: str) -> Perturbation:
    """The perturbation called ``name``.

    Raises:
        UnknownPerturbation: Not a registered name (the message suggests the closest one).
    """
    try:
        return PERTURBATIONS[name]
    except (KeyError, TypeError):
        hint = suggest(str(name), PERTURBATIONS)
        raise UnknownPerturbation(
            f"unknown perturbation {name!r}{hint}; known: {', '.join(PERTURBATIONS)}"
        ) from None


def parse_names(values: Iterable[str] | None) -> list[str]:
    """Names from ``--perturb`` values (each comma-separated), checked, in order.

    Raises:
        UnknownPerturbation: An unknown name, or one given twice.
    """
    names: list[str] = []
    for value in values or ():
        for name in (n.strip() for n in value.split(",")):
            if not name:
                continue
            get(name)
            if name in names:
                raise UnknownPerturbation(f"perturbation {name!r} is given twice")
            names.append(name)
    return names


def perturb(name: str, text: str | None, *, seed: int = 0, key: str = "") -> str | None:
    """``text`` changed by perturbation ``name``, seeded by ``seed``, ``name`` and ``key``.

    Raises:
        UnknownPerturbation: ``name`` is not registered.
        TypeError: ``text`` is neither a string nor None.
    """
    function = get(name)
    if text is None:
        return None
    if not isinstance(text, str):
        raise TypeError(f"perturb {name!r}: expected a string or None, got {type(text).__name__}")
    return function(text, random.Random(f"ragtrace-perturb:{seed}:{name}:{key}"))


@lru_cache(maxsize=1)
def synonym_groups() -> dict[str, tuple[str, ...]]:
    """Word -> its group (itself included), from the shipped list (``synonym_data``)."""
    groups: dict[str, tuple[str, ...]] = {}
    for line in SYNONYM_GROUPS.splitlines():
        words = tuple(line.split())
        if len(words) < 2:
            continue
        for word in words:
            groups[word] = words
    return groups
