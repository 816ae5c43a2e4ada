"""Tokens presence: do the retrieved context and the answer contain the strings they must?

A cheap lexical evaluator after H2O Eval Studio's "Tokens Presence Evaluator". Required strings
are given as the catalogue's constraint list, or as a boolean expression:

- a string must be contained (substring search); ``REGEXP:<pattern>`` must match
  (``re.search``, Python notation);
- a list of constraints means all of them (AND); a nested list means at least one of its
  items (OR)::

      TokensPresence(constraints=["15,969", "REGEXP:[Mm]illion", ["either", "or"]])

- or an expression with ``AND``, ``OR``, ``NOT`` and parentheses (``NOT`` binds tighter than
  ``AND``, which binds tighter than ``OR``; the keywords are upper case). Operands are quoted
  strings (``"..."`` or ``'...'``: a quote after an odd number of backslashes is part of the
  string and loses one backslash, other backslashes stay as written) or bare words without
  spaces, quotes or parentheses; either may carry the ``REGEXP:`` prefix::

      TokensPresence(expression='"15,969" AND (REGEXP:[Mm]illion OR either) AND NOT "sorry"')

Each checked target yields one Score, 1.0 when the constraints hold and 0.0 when not
(higher is better, threshold 0.5):

- ``tokens_presence.context``: the retrieved chunks (the catalogue's retrieval failures);
- ``tokens_presence.answer``: the response (its model passes / generation failures).

Choose them with ``targets`` (default both; ``requires`` follows: chunks and/or response).
The catalogue's rates (passes, failures = 1 - passes) are means of these values over records;
its parse failures do not apply to a lexical check.

Choices where the catalogue is silent: the context holds a string when at least one chunk
does (each chunk is searched on its own, so ``^``/``$`` anchor at chunk bounds), and
``details`` lists which chunks matched; ``ignore_case=True`` applies to both kinds of operand.
Patterns are compiled when the evaluator is built; a pattern prone to catastrophic
backtracking is bounded only by the pipeline's ``timeout_s``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._base import Evaluator

REGEXP_PREFIX = "REGEXP:"
TARGETS = {"context": "chunks", "answer": "response"}
_KEYWORDS = {"AND", "OR", "NOT"}
_MAX_DEPTH = 100
_MAX_CHUNKS_LISTED = 20
_TOKEN = re.compile(r"\s*(?:(?P<paren>[()])|(?P<quote>[\"'])|(?P<word>[^\s()\"']+))")


@dataclass(frozen=True, slots=True)
class Term:
    """One operand: the index of its compiled pattern."""

    index: int


@dataclass(frozen=True, slots=True)
class Not:
    """Negation."""

    operand: Node


@dataclass(frozen=True, slots=True)
class And:
    """Conjunction."""

    operands: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    """Disjunction."""

    operands: tuple[Node, ...]


Node = Term | Not | And | Or


class TokensPresence(Evaluator):
    """Checks required strings and regular expressions in the context and/or the answer."""

    name: ClassVar[str] = "tokens_presence"
    requires: ClassVar[frozenset[str]] = frozenset({"chunks", "response"})
    kind = "lexical"
    direction = "higher_is_better"
    threshold: float | None = 0.5

    def __init__(
        self,
        constraints: Sequence[str | Sequence[str]] | None = None,
        *,
        expression: str | None = None,
        targets: Sequence[str] = ("context", "answer"),
        ignore_case: bool = False,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            constraints: The catalogue's list: strings (AND) and lists of strings (OR).
            expression: Instead of ``constraints``: a boolean expression (see the module doc).
            targets: ``context`` and/or ``answer``: what must satisfy the constraints.
            ignore_case: Match substrings and regular expressions ignoring case.
            **options: ``threshold`` (0.5), ``inline``, ``timeout_s``, ...

        Raises:
            ValueError: No or both of constraints/expression, a bad expression, regular
                expression or target (the message names it).
        """
        if isinstance(targets, str) or not targets or set(targets) - TARGETS.keys():
            raise ValueError(
                f"tokens_presence: targets must be a non-empty list of {sorted(TARGETS)}, "
                f"got {targets!r}"
            )
        self.targets = tuple(t for t in TARGETS if t in targets)
        self.requires = frozenset(TARGETS[t] for t in self.targets)  # type: ignore[misc]
        super().__init__(**options)
        flags = re.IGNORECASE if ignore_case else 0
        builder = _Builder(flags)
        if (constraints is None) == (expression is None):
            raise ValueError("tokens_presence: pass exactly one of `constraints` or `expression`")
        if constraints is not None:
            self.tree = builder.from_constraints(constraints)
        else:
            self.tree = builder.from_expression(expression)
        self.terms = tuple(builder.terms)
        self.patterns = tuple(builder.patterns)
        self.expression = _render(self.tree, self.terms)

    def evaluate(self, record: RagRecord) -> list[Score]:
        scores = []
        if "context" in self.targets:
            scores.append(self._context(record))
        if "answer" in self.targets:
            scores.append(self._answer(record.response or ""))
        return scores

    def _context(self, record: RagRecord) -> Score:
        texts = [chunk.text or "" for chunk in record.chunks]
        matched: list[bool] = []
        evidence: list[dict[str, Any]] = []
        for term, pattern in zip(self.terms, self.patterns, strict=True):
            chunks = [i for i, text in enumerate(texts) if pattern.search(text)]
            matched.append(bool(chunks))
            evidence.append(
                {**term, "matched": bool(chunks), "chunks": chunks[:_MAX_CHUNKS_LISTED]}
            )
        return self._verdict("context", matched, evidence)

    def _answer(self, text: str) -> Score:
        matched: list[bool] = []
        evidence: list[dict[str, Any]] = []
        for term, pattern in zip(self.terms, self.patterns, strict=True):
            found = pattern.search(text)
            matched.append(found is not None)
            span = [found.start(), found.end()] if found else None
            evidence.append({**term, "matched": found is not None, "span": span})
        return self._verdict("answer", matched, evidence)

    def _verdict(self, target: str, matched: list[bool], evidence: list[dict[str, Any]]) -> Score:
        ok = _holds(self.tree, matched)
        hits = sum(matched)
        return self.score(
            1.0 if ok else 0.0,
            name=f"tokens_presence.{target}",
            explanation=(
                f"{target} {'satisfies' if ok else 'fails'} {self.expression} "
                f"({hits} of {len(matched)} strings found)"
            ),
            details={"expression": self.expression, "terms": evidence},
        )


class _Builder:
    """Compiles constraints or an expression into a tree of Terms over deduplicated patterns."""

    def __init__(self, flags: int) -> None:
        self.flags = flags
        self.terms: list[dict[str, Any]] = []
        self.patterns: list[re.Pattern[str]] = []
        self._index: dict[tuple[str, str], int] = {}

    def term(self, raw: str, where: str) -> Term:
        regex = raw.startswith(REGEXP_PREFIX)
        text = raw[len(REGEXP_PREFIX) :] if regex else raw
        if not text:
            raise ValueError(f"tokens_presence: empty string or pattern {raw!r} {where}")
        key = ("regex" if regex else "substring", text)
        if key not in self._index:
            try:
                pattern = re.compile(text if regex else re.escape(text), self.flags)
            except re.error as exc:
                raise ValueError(
                    f"tokens_presence: invalid regular expression {raw!r} {where}: {exc}"
                ) from None
            self._index[key] = len(self.patterns)
            self.patterns.append(pattern)
            self.terms.append({"term": text, "kind": key[0]})
        return Term(self._index[key])

    def from_constraints(self, constraints: Sequence[str | Sequence[str]]) -> Node:
        if isinstance(constraints, str) or not isinstance(constraints, Sequence):
            raise ValueError(
                "tokens_presence: constraints must be a list of strings and lists of strings, "
                f"got {constraints!r} (use expression= for a boolean expression)"
            )
        if not constraints:
            raise ValueError("tokens_presence: constraints is empty")
        required: list[Node] = []
        for i, item in enumerate(constraints):
            where = f"in constraints[{i}]"
            if isinstance(item, str):
                required.append(self.term(item, where))
                continue
            if not isinstance(item, Sequence) or not item:
                raise ValueError(
                    f"tokens_presence: constraints[{i}] must be a string or a non-empty list "
                    f"of strings, got {item!r}"
                )
            options: list[Node] = []
            for j, option in enumerate(item):
                if not isinstance(option, str):
                    raise ValueError(
                        f"tokens_presence: constraints[{i}][{j}] must be a string, got {option!r}"
                    )
                options.append(self.term(option, f"in constraints[{i}][{j}]"))
            required.append(options[0] if len(options) == 1 else Or(tuple(options)))
        return required[0] if len(required) == 1 else And(tuple(required))

    def from_expression(self, expression: object) -> Node:
        if not isinstance(expression, str):
            raise ValueError(f"tokens_presence: expression must be a string, got {expression!r}")
        return _Parser(expression, self).parse()


class _Parser:
    """Recursive descent: or := and (OR and)*; and := not (AND not)*; not := NOT not | atom."""

    def __init__(self, text: str, builder: _Builder) -> None:
        self.text = text
        self.builder = builder
        self.tokens = _tokenize(text)
        self.pos = 0
        self.depth = 0

    def parse(self) -> Node:
        if not self.tokens:
            raise ValueError("tokens_presence: expression is empty")
        node = self._or()
        if self.pos < len(self.tokens):
            self._fail("expected AND, OR or the end")
        return node

    def _peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self, kind: str, value: str) -> bool:
        token = self._peek()
        if token is not None and token[0] == kind and token[1] == value:
            self.pos += 1
            return True
        return False

    def _fail(self, expected: str) -> None:
        token = self._peek()
        if token is None:
            found, at = "the end", len(self.text)
        else:
            found, at = repr(token[1]), token[2]
        raise ValueError(
            f"tokens_presence: invalid expression at position {at}: {expected}, "
            f"found {found} in {self.text!r}"
        )

    def _or(self) -> Node:
        operands = [self._and()]
        while self._take("keyword", "OR"):
            operands.append(self._and())
        return operands[0] if len(operands) == 1 else Or(tuple(operands))

    def _and(self) -> Node:
        operands = [self._not()]
        while self._take("keyword", "AND"):
            operands.append(self._not())
        return operands[0] if len(operands) == 1 else And(tuple(operands))

    def _not(self) -> Node:
        if self._take("keyword", "NOT"):
            return Not(self._nested(self._not))
        return self._atom()

    def _atom(self) -> Node:
        token = self._peek()
        if token is not None and token[0] == "operand":
            self.pos += 1
            return self.builder.term(token[1], f"at position {token[2]}")
        if self._take("paren", "("):
            node = self._nested(self._or)
            if not self._take("paren", ")"):
                self._fail("expected ')'")
            return node
        self._fail("expected a string, NOT or '('")
        raise AssertionError  # pragma: no cover - _fail always raises

    def _nested(self, rule: Callable[[], Node]) -> Node:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            self._fail(f"nesting deeper than {_MAX_DEPTH}")
        node: Node = rule()
        self.depth -= 1
        return node


def _tokenize(text: str) -> list[tuple[str, str, int]]:
    """``(kind, value, position)`` tokens; kind is paren, keyword or operand."""
    tokens: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(text):
        found = _TOKEN.match(text, pos)
        if found is None:  # only trailing whitespace is left
            break
        start = found.start(found.lastgroup or 0)
        pos = found.end()
        if found.group("paren"):
            tokens.append(("paren", found.group("paren"), start))
        elif found.group("word"):
            word = found.group("word")
            if word == REGEXP_PREFIX and text.startswith(("'", '"'), pos):
                value, pos = _quoted(text, pos)
                tokens.append(("operand", REGEXP_PREFIX + value, start))
            else:
                tokens.append(("keyword" if word in _KEYWORDS else "operand", word, start))
        else:
            value, pos = _quoted(text, start)
            tokens.append(("operand", value, start))
    return tokens


def _quoted(text: str, start: int) -> tuple[str, int]:
    """The string quoted at ``start`` and the position after its closing quote."""
    quote = text[start]
    parts: list[str] = []
    pos = start + 1
    while True:
        end = text.find(quote, pos)
        if end < 0:
            raise ValueError(
                f"tokens_presence: invalid expression at position {start}: "
                f"unterminated string in {text!r}"
            )
        backslashes = len(text[pos:end]) - len(text[pos:end].rstrip("\\"))
        if backslashes % 2:  # an escaped quote: keep looking
            parts.append(text[pos : end - 1] + quote)
            pos = end + 1
            continue
        parts.append(text[pos:end])
        return "".join(parts), end + 1


def _holds(node: Node, matched: list[bool]) -> bool:
    if isinstance(node, Term):
        return matched[node.index]
    if isinstance(node, Not):
        return not _holds(node.operand, matched)
    if isinstance(node, And):
        return all(_holds(n, matched) for n in node.operands)
    return any(_holds(n, matched) for n in node.operands)


def _render(node: Node, terms: Sequence[dict[str, Any]]) -> str:
    if isinstance(node, Term):
        term = terms[node.index]
        prefix = REGEXP_PREFIX if term["kind"] == "regex" else ""
        return prefix + repr(term["term"])
    if isinstance(node, Not):
        return f"NOT {_render(node.operand, terms)}"
    joiner = " AND " if isinstance(node, And) else " OR "
    return "(" + joiner.join(_render(n, terms) for n in node.operands) + ")"
