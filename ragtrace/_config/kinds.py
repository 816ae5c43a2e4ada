"""What a configuration value may be, and how it is read from text or checked as given.

A ``Kind`` turns the text of an environment variable (``from_text``) or a value given in code
or in a settings file (``from_value``) into the value ``Config`` holds, or raises
``ValueError`` saying what was expected. The kind of an option follows from its annotation on
``Config`` (``int``, ``float | None``, ``tuple[str, ...]``, ...); options whose values are
objects (evaluators, a sampler, a redaction function) name their kind in the declaration.

Numbers must be finite: ``nan`` and ``inf`` are refused everywhere, whatever the option.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")
_EXPONENT = re.compile(r"[-+]?\d+(\.\d*)?[eE][-+]?\d+")
YAML_BOOLEAN_HINT = " (quote it: YAML reads yes/no/on/off as booleans)"


def describe(value: object) -> str:
    """``value``'s type and repr, for a message that says what was found instead."""
    return f"{type(value).__name__} {value!r}"


@dataclass(frozen=True)
class Kind:
    """How values of one type are read and checked.

    Attributes:
        name: What the value is, for messages and the docs table (``an integer``).
        parse: Text -> value (raises ``ValueError``).
        accept: A given value -> the value kept (raises ``ValueError``); strings are read
            with ``parse`` first unless ``text_is_value``.
        text_is_value: Strings are values of this kind (text options), not text to parse.
        env: Whether an environment variable can carry such a value.
        optional: None is a value (off, absent) rather than a mistake.
        listed: A list: a variable set to blanks is the empty list, not unset.
    """

    name: str
    parse: Callable[[str], Any]
    accept: Callable[[Any], Any]
    text_is_value: bool = False
    env: bool = True
    optional: bool = False
    listed: bool = False

    def from_text(self, text: str) -> Any:
        """The value an environment variable's text stands for."""
        if not self.env:
            raise ValueError(f"cannot be set from text: expected {self.name}")
        return self.parse(text.strip())

    def from_value(self, value: object, *, read_text: bool = True) -> Any:
        """A value given in code or read from a settings file, checked and normalised.

        Args:
            value: The value.
            read_text: Read a string as an environment variable's text would be (code:
                ``metrics_port="9464"``); False for a settings file, whose values have types.
        """
        if value is None:
            if self.optional:
                return None
            raise ValueError(f"expected {self.name}, got None")
        if isinstance(value, str) and not self.text_is_value and read_text and self.env:
            return self.parse(value.strip())
        return self.accept(value)

    def or_none(self) -> Kind:
        """The same kind where None is also a value."""
        return replace(self, name=f"{self.name} or none", optional=True)


def _flag_text(text: str) -> bool:
    lowered = text.lower()
    if lowered in TRUE:
        return True
    if lowered in FALSE:
        return False
    raise ValueError(f"expected one of {'/'.join(TRUE + FALSE)}, got {text!r}")


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {describe(value)}")
    return value


def _integer_text(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"expected an integer, got {text!r}") from None


def _integer(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {describe(value)}")
    return value


def _number_text(text: str) -> float:
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"expected a number, got {text!r}") from None
    return _number(number)


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        hint = ""
        if isinstance(value, str) and _EXPONENT.fullmatch(value.strip()):
            hint = " (YAML reads 1e-3 as a string: write 1.0e-3)"
        raise ValueError(f"expected a number, got {describe(value)}{hint}")
    if not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value!r}")
    return float(value)


def _text(value: object) -> str:
    if not isinstance(value, str):
        hint = YAML_BOOLEAN_HINT if isinstance(value, bool) else ""
        raise ValueError(f"expected a string, got {describe(value)}{hint}")
    return value


def _names_text(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _names(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValueError(f"expected a list of names, got {describe(value)}")
    names = []
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"expected non-empty names, got {describe(item)} in the list")
        names.append(item.strip())
    return tuple(names)


class EvaluatorLike(Protocol):
    """An evaluator object as ``Config.evaluators`` holds it, beside names and settings entries.

    Give a ``ragtrace.evaluators.Evaluator`` (a subclass, or a function made one with
    ``@ragtrace.evaluators.evaluator``): the runtime runs it as one. The configuration, which
    loads no evaluator, knows it only by what it checks, its ``name`` and its ``evaluate``
    method.
    """

    @property
    def name(self) -> str: ...

    def evaluate(self, record: Any) -> Any: ...


class SamplerLike(Protocol):
    """A sampler object as ``Config.sampler`` holds it, beside a settings file's section.

    Give a ``ragtrace.Sampler``: the runtime samples with it. The configuration, which loads
    no pipeline, knows it only by its ``select`` method.
    """

    def select(self, record: Any, evaluators: Any) -> Any: ...


def _evaluators(value: object) -> tuple[Any, ...]:
    """Names, evaluator objects (anything with a ``name`` and an ``evaluate`` method), or
    entries of a settings file (mappings: ``{name: ..., <option>: ...}``, ``{suite: ...}``),
    which the runtime builds."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValueError(f"expected a list of evaluators or names, got {describe(value)}")
    items: list[Any] = []
    for item in value:
        if isinstance(item, str):
            if not item.strip():
                raise ValueError("expected evaluator names, got an empty one")
            items.append(item.strip())
        elif isinstance(getattr(item, "name", None), str) and callable(
            getattr(item, "evaluate", None)
        ):
            items.append(item)
        elif isinstance(item, Mapping):
            items.append(dict(item))
        else:
            raise ValueError(f"expected an evaluator or its name, got {describe(item)}")
    return tuple(items)


def _sampler(value: object) -> Any:
    """A sampler, or a settings file's ``sampling`` mapping, which the runtime builds."""
    if isinstance(value, Mapping):
        return dict(value)
    if not callable(getattr(value, "select", None)):
        raise ValueError(f"expected a Sampler, got {describe(value)}")
    return value


REDACTION_POLICIES = ("none", "secrets", "pii")
"""The built-in redaction policies (``ragtrace._redaction``)."""


def _policy_name(text: str) -> str:
    name = text.strip().lower()
    if name not in REDACTION_POLICIES:
        raise ValueError(
            f"expected a redaction policy ({', '.join(REDACTION_POLICIES)}), got {text!r}"
        )
    return name


def _redactor(value: object) -> Any:
    """A built-in policy's name, or a function str -> str."""
    if isinstance(value, str):
        return _policy_name(value)
    if callable(value):
        return value
    raise ValueError(
        f"expected a redaction policy ({', '.join(REDACTION_POLICIES)}) or a function "
        f"str -> str, got {describe(value)}"
    )


def _no_text(text: str) -> Any:
    raise ValueError("cannot be given as text")


FLAG = Kind("true or false", _flag_text, _flag)
INTEGER = Kind("an integer", _integer_text, _integer)
NUMBER = Kind("a finite number", _number_text, _number)
TEXT = Kind("a string", str, _text, text_is_value=True)
NAMES = Kind("a list of names (comma-separated in a variable)", _names_text, _names, listed=True)
EVALUATORS = Kind("evaluators or their names (comma-separated in a variable)", _names_text,
                  _evaluators, listed=True)  # fmt: skip
SAMPLER = Kind("a Sampler", _no_text, _sampler, env=False, optional=True)
REDACTOR = Kind(
    f"{', '.join(REDACTION_POLICIES)} or a function str -> str",
    _policy_name,
    _redactor,
    optional=True,
)

BY_ANNOTATION: dict[str, Kind] = {
    "bool": FLAG,
    "int": INTEGER,
    "float": NUMBER,
    "str": TEXT,
    "tuple[str, ...]": NAMES,
    "int | None": INTEGER.or_none(),
    "float | None": NUMBER.or_none(),
    "str | None": TEXT.or_none(),
}
"""The kind of an option whose declaration names none, by its annotation on ``Config``."""
