"""Building a ``Config`` from its sources, one rule for every key.

explicit argument > ``RAGTRACE_*`` environment variable > settings file > default, key by
key: a source that does not name a key leaves it to the next one. What each source does with
a bad value:

- explicit (code, a command-line flag): ``ConfigError`` naming every bad key and its value;
- environment: logged once, with the value used instead, and ignored (the key falls through to
  the file, else the default), as OpenTelemetry SDKs treat their variables; a ``RAGTRACE_*``
  variable that is no option and none of ``ragtrace.config.variables`` is logged once with
  the closest known name;
- settings file: ``SettingsError`` listing every mistake of the file at once.

The settings file is read by ``ragtrace.settings`` (it builds evaluators and a sampler, which
this package knows nothing of). It registers itself here with ``use_settings``; ``resolve``
imports it by name the first time a file is given, so that ``Config.resolve`` works whatever
the caller imported.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ragtrace.config.options import ENV_PREFIX, ConfigError, Option, options, short
from ragtrace.config.variables import VARIABLES

if TYPE_CHECKING:
    from ragtrace.config.declared import Config

logger = logging.getLogger("ragtrace")
C = TypeVar("C", bound="Config")

SETTINGS_MODULE = "ragtrace.settings"
EXPLICIT, ENV, FILE, DEFAULT = "explicit", "env", "file", "default"


@dataclass(frozen=True)
class FileLayer:
    """What a settings file says: only the keys it names.

    Attributes:
        source: The file's path (for messages and ``Config.sources``).
        values: Option name -> the value the file gives it, already checked.
        warnings: Things in the file that were ignored (unknown keys, with the closest name).
        cross_checks: Run on the resolved values (all sources merged) and return problems to
            log: a sampling section that names an evaluator a higher source left out, say.
    """

    source: str
    values: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    cross_checks: tuple[Callable[[Mapping[str, Any], Mapping[str, str]], list[str]], ...] = ()


class Settings(Protocol):
    """What ``ragtrace.settings`` lends the resolution: reading a file, and the checks of the
    options whose values only it can judge (evaluator names, a queue URL's options)."""

    def read_file(self, path: str) -> FileLayer: ...

    def check(self, name: str, value: Any) -> None: ...


_settings: Settings | None = None
_logged: set[str] = set()
_log_lock = threading.Lock()


def use_settings(settings: Settings) -> None:
    """Register the settings-file reader (``ragtrace.settings`` does, as it is imported)."""
    global _settings
    _settings = settings


def settings() -> Settings:
    """The registered reader, importing ``ragtrace.settings`` on first need."""
    if _settings is None:
        importlib.import_module(SETTINGS_MODULE)
    assert _settings is not None, f"{SETTINGS_MODULE} did not register itself"
    return _settings


def log_once(message: str) -> None:
    """Log a configuration warning the first time this process sees it."""
    with _log_lock:
        if message in _logged:
            return
        _logged.add(message)
    logger.warning("%s", message)


def resolve(cls: type[C], env: Mapping[str, str] | None, explicit: Mapping[str, Any]) -> C:
    """``Config.resolve`` (see the module docstring)."""
    env = os.environ if env is None else env
    declared = {o.name: o for o in options(cls)}
    unknown = sorted(set(explicit) - set(declared))
    if unknown:
        raise ConfigError(
            [f"unknown option {name!r}{_closest(name, declared)}" for name in unknown]
        )
    given = {k: v for k, v in explicit.items() if v is not None}
    values, problems = _checked(declared, given)
    if problems:
        raise ConfigError(problems)
    sources = dict.fromkeys(values, EXPLICIT)
    from_env, bad_env = _environment(declared.values(), env)
    _warn_unknown_variables(env, declared.values())
    path = values.get("config_file", from_env.get("config_file"))
    layer = settings().read_file(path) if path else FileLayer("")
    for message in layer.warnings:
        log_once(message)
    for opt in declared.values():
        if opt.name in values:
            continue
        if opt.name in from_env:
            values[opt.name], sources[opt.name] = from_env[opt.name], opt.env or ENV
        elif opt.name in layer.values:
            values[opt.name], sources[opt.name] = layer.values[opt.name], layer.source
    for name, message in bad_env.items():
        used = values.get(name, declared[name].default)
        where = sources.get(name, DEFAULT)
        log_once(f"ragtrace config: {message}; ignored, {name} = {short(used)} (from {where})")
    for check in layer.cross_checks:
        for message in check(values, sources):
            log_once(message)
    config = cls(**values)
    object.__setattr__(config, "_sources", MappingProxyType(sources))
    return config


def _checked(
    declared: Mapping[str, Option], given: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    values: dict[str, Any] = {}
    problems: list[str] = []
    for name, value in given.items():
        try:
            values[name] = declared[name].accept(value)
            settings_check(name, values[name])
        except ValueError as exc:
            problems.append(f"{name}: {exc}")
    return values, problems


def settings_check(name: str, value: Any) -> None:
    """The check ``ragtrace.settings`` adds for ``name`` (evaluator names, queue options)."""
    if value is not None:
        settings().check(name, value)


def _environment(declared: Any, env: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Values of the options' variables that are set, and the problems of the bad ones. A
    variable set to blanks counts as unset, except for a list (``RAGTRACE_EVALUATORS=``: none)."""
    values: dict[str, Any] = {}
    bad: dict[str, str] = {}
    for opt in declared:
        raw = None if opt.env is None else env.get(opt.env)
        if raw is None or (not raw.strip() and not isinstance(opt.default, tuple)):
            continue
        try:
            value = opt.parse(raw)
            settings_check(opt.name, value)
            values[opt.name] = value
        except ValueError as exc:
            bad[opt.name] = f"{opt.env}: {exc}"
    return values, bad


def known_variables(declared: Any) -> set[str]:
    """Every ``RAGTRACE_*`` variable ragtrace reads: the options' and ``VARIABLES``."""
    return {o.env for o in declared if o.env} | set(VARIABLES)


def _warn_unknown_variables(env: Mapping[str, str], declared: Any) -> None:
    known = known_variables(declared)
    suffixes = {k.removeprefix(ENV_PREFIX): k for k in known}
    for name in env:
        if name.startswith(ENV_PREFIX) and name not in known:
            close = difflib.get_close_matches(name.removeprefix(ENV_PREFIX), suffixes, 1, 0.75)
            hint = (
                f" (did you mean {suffixes[close[0]]}?)"
                if close
                else "; see the options table in docs/configuration.md"
            )
            log_once(f"ragtrace config: unknown environment variable {name}{hint}")


def _closest(word: str, options_: Any) -> str:
    close = difflib.get_close_matches(word, sorted(options_), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""
