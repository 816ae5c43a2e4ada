"""Reader of the ``evaluators`` section: names, entries with options, suites, or objects.

``read_evaluators(Checks("ragtrace.yaml"), ["looping", {"name": "groundedness"}])`` builds them
in order; each entry that fails is recorded in the checks and the others are still built, so
the file's errors are reported together.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ragtrace.evaluators import registry, suites
from ragtrace.evaluators.base import Evaluator
from ragtrace.settings.checks import Checks, suggest
from ragtrace.settings.schema import EVALUATOR_OPTIONS

_UNEXPECTED = re.compile(r"unexpected keyword argument '(\w+)'")
SUITES = ("online",)
SUITE_KEYS = ("suite", "profile", "options")


def read_evaluators(checks: Checks, value: object) -> tuple[Evaluator, ...]:
    """``evaluators``: a list of names, ``{name: ..., option: ...}`` entries, ``{suite: online,
    profile: ..., options: {name: {...}}}`` entries (every evaluator of the online suite) or
    ``Evaluator``s."""
    built: list[Evaluator] = []
    where: dict[str, str] = {}
    for i, item in enumerate(checks.items(value, "evaluators")):
        at = f"evaluators[{i}]"
        with checks.attempt():
            if isinstance(item, Evaluator):
                group = [item]
            elif isinstance(item, Mapping) and "suite" in item:
                group = build_suite(checks, item, at)
            else:
                group = [build_evaluator(checks, item, at)]
            for evaluator in group:
                if evaluator.name in where:
                    checks.fail(
                        at, f"duplicate evaluator {evaluator.name!r} (also {where[evaluator.name]})"
                    )
                where[evaluator.name] = at
                built.append(evaluator)
    return tuple(built)


def build_suite(checks: Checks, item: Mapping[str, Any], at: str) -> list[Evaluator]:
    """The evaluators of a ``{suite: online, profile: ..., options: {...}}`` entry
    (``ragtrace.evaluators.suites``), each built as a ``{name: ...}`` entry would be."""
    entry = checks.mapping(item, at, SUITE_KEYS)
    suite = checks.string(entry["suite"], f"{at}.suite")
    if suite not in SUITES:
        hint = suggest(suite, SUITES)
        checks.fail(f"{at}.suite", f"unknown suite {suite!r}{hint}; known: {', '.join(SUITES)}")
    profile = checks.string(entry.get("profile", "default"), f"{at}.profile")
    if profile not in suites.PROFILES:
        known = tuple(suites.PROFILES)
        checks.fail(
            f"{at}.profile",
            f"unknown profile {profile!r}{suggest(profile, known)}; known: {', '.join(known)}",
        )
    options = checks.mapping(entry.get("options", {}), f"{at}.options", registry.ONLINE_SUITE)
    for name, given in options.items():
        checks.mapping(given, f"{at}.options.{name}", None)
    return [
        build_evaluator(checks, {"name": name, **chosen}, f"{at}.options.{name}")
        for name, chosen in suites.suite_options(profile, options).items()
    ]


def build_evaluator(checks: Checks, item: object, at: str) -> Evaluator:
    """Build the evaluator one entry names, with its options (inline or under ``options``)."""
    entry = checks.mapping({"name": item} if isinstance(item, str) else item, at, None)
    if "name" not in entry:
        checks.fail(at, "missing key 'name' (the evaluator to build)")
    name = checks.string(entry.pop("name"), f"{at}.name")
    known = registry.names()
    if name not in known:
        checks.fail(
            f"{at}.name",
            f"unknown evaluator {name!r}{suggest(name, known)}; known: {', '.join(known)}",
        )
    nested = checks.mapping(entry.pop("options", {}), f"{at}.options", None)
    for key in nested.keys() & entry.keys():
        checks.fail(f"{at}.options.{key}", f"also given as {at}.{key}")
    options = {**entry, **nested}
    try:
        return registry.create(name, **options)
    except TypeError as exc:
        match = _UNEXPECTED.search(str(exc))
        if match and match.group(1) in options:
            key = match.group(1)
            path = f"{at}.options.{key}" if key in nested else f"{at}.{key}"
            checks.fail(
                path, f"unknown option for evaluator {name!r}{suggest(key, EVALUATOR_OPTIONS)}"
            )
        checks.fail(at, f"evaluator {name!r}: {exc}")
    except Exception as exc:  # the constructor's own checks, a missing extra, ...
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        checks.fail(at, f"evaluator {name!r}: {message}")
