"""Building what a ``Config`` describes for evaluation: its evaluators and its sampler.

``ragtrace._config`` reads every source into checked values and builds nothing: a settings
file's ``evaluators`` entries and ``sampling`` section stay as the file writes them. The runtime
builds them here, with ``evaluation_config(config)``, before anything starts (``Ragtrace``
does it with the config it is given):

- ``evaluators``: names, ``{name: ..., <option>: ...}`` entries (options inline or under
  ``options``), ``{suite: online, profile: ..., options: {...}}`` entries (every evaluator of
  the online suite, ``ragtrace.evaluators._suites``) or ``Evaluator`` objects, built in order;
  an entry that fails is recorded and the others are still built, so the errors come together.
  Names from code or the environment stay names, checked against the registry;
- ``sampler`` (the ``sampling`` section): rates, rules, rate limits, the hourly budget and
  cascades, as one ``Sampler``. Every evaluator name it uses must be one that runs: when the
  same file configures ``evaluators``, the names are checked against those; otherwise against
  the evaluators code or the environment chose (a name that is missing is logged).

A file's mistakes raise one ``SettingsError`` (``<file>: <path>: <message>`` lines); a bad
name from code or the environment a ``ConfigError``.

``load_settings("ragtrace.yaml")`` and ``settings_from_mapping(data)`` give one file's view as
``EvaluationSettings``: the ``Config`` the file alone gives (defaults for what it does not say),
its evaluators built and its ``Sampler``, for tools that read a file's evaluators
(``ragtrace eval --config``). ``ragtrace.init`` does not use it: it reads the same file into a
``Config`` (``Config.resolve``), where code and the environment come first::

    settings = load_settings("ragtrace.yaml")   # EvaluationSettings: defaults for the rest
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from ragtrace._config.declared import Config
from ragtrace._config.kinds import describe
from ragtrace._config.options import ENV_PREFIX, ConfigError
from ragtrace._config.resolve import EXPLICIT, log_once, resolve
from ragtrace._config.settings_file import (
    SAMPLING_KEYS,
    Checks,
    FileLayer,
    SettingsError,
    option_tree,
    read_file,
    read_layer,
)
from ragtrace._config.suggestions import suggest
from ragtrace._pipeline import PipelineOptions
from ragtrace._pipeline.sampling import FailedSessions, Sampler
from ragtrace._pipeline.sampling.rules import STATUSES, Cascade, Rule
from ragtrace.evaluators import _registry as registry
from ragtrace.evaluators import _suites as suites
from ragtrace.evaluators._base import Evaluator
from ragtrace.evaluators._default_suite import default_evaluators

FAILED_SESSIONS_KEYS = ("max_sessions", "ttl_s", "max_turns", "evaluators")
RULE_KEYS = (
    "action", "status", "empty_retrieval", "top_score_below", "app", "route", "tenant",
    "metadata", "feedback", "evaluators", "name", "after_failure",
)  # fmt: skip
CASCADE_KEYS = ("evaluator", "after", "low", "high")
# Options every evaluator takes, matched against a misspelt option of an evaluator entry.
EVALUATOR_OPTIONS = ("threshold", "inline", "batch_size", "timeout_s", "cost_usd")
SUITES = ("online",)
SUITE_KEYS = ("suite", "profile", "options")
T = TypeVar("T")
_UNEXPECTED = re.compile(r"unexpected keyword argument '(\w+)'")
# -- one file's view ----------------------------------------------------------------------------


@dataclass(frozen=True)
class EvaluationSettings:
    """One file's view of evaluation: the ``Config`` the file alone gives (defaults for what it
    does not say; neither code nor the environment), with its evaluators built.

    Attributes:
        config: That ``Config``: every option is read from it (``settings.config.workers``,
            ``settings.config.metrics_port``, ``settings.config.evaluation_results``).
        evaluators: The file's evaluators, built, in order (none when it configures none).
        sampler: The file's sampler (one that samples everything when it has none).
    """

    config: Config
    evaluators: tuple[Evaluator, ...]
    sampler: Sampler

    def pipeline_options(self) -> PipelineOptions:
        """The pipeline's sizes and timings as ``PipelineOptions``."""
        return PipelineOptions.from_config(self.config)

    def __post_init__(self) -> None:
        if not all(isinstance(e, Evaluator) for e in self.evaluators):
            raise SettingsError("EvaluationSettings: evaluators must be Evaluator instances")
        if not isinstance(self.sampler, Sampler):
            raise SettingsError("EvaluationSettings: sampler must be a Sampler")


def start_config(env: Mapping[str, str] | None = None, **explicit: Any) -> Config:
    """The ``Config`` the runtime starts with: ``Config.resolve(env, **explicit)`` with its
    settings file's evaluation parts built (``evaluation_config``), every mistake of the file
    reported at once.

    Raises:
        ConfigError: Bad explicit values or variables, an unregistered evaluator name.
        SettingsError: Every mistake of the settings file, in the file's order.
    """
    try:
        config = Config.resolve(env, **explicit)
    except SettingsError as exc:
        raise with_section_errors(exc) from None
    return evaluation_config(config)


def with_section_errors(error: SettingsError) -> SettingsError:
    """``error`` with the mistakes of the evaluation sections its file set (which only building
    them finds) added, in the file's order: every mistake of a file is reported at once."""
    if error.partial is None:
        return error
    try:
        evaluation_config(resolve(Config, {}, {}, error.partial))
    except SettingsError as built:
        order = list(option_tree(Config))
        source = error.partial.source

        def section(message: str) -> int:
            key = re.split(r"[.\[:]", message.removeprefix(f"{source}: "), maxsplit=1)[0]
            return order.index(key) if key in order else len(order)

        return SettingsError(sorted((*error.errors, *built.errors), key=section), error.partial)
    except ValueError:  # the file's other values do not make a Config: its own report stands
        return error
    return error


def load_settings(path: str | os.PathLike[str]) -> EvaluationSettings:
    """Read settings from a ``.yaml``/``.yml`` (PyYAML) or ``.toml`` file; keys it ignores are
    logged.

    Raises:
        SettingsError: The file cannot be read or parsed, or values are invalid (all listed).
    """
    return _as_settings(lambda: read_file(path, Config))


def settings_from_mapping(data: Mapping[str, Any], source: str = "<dict>") -> EvaluationSettings:
    """Build settings from a mapping shaped like the file (config as code).

    Entries of ``evaluators`` may also be ``Evaluator`` instances.

    Raises:
        SettingsError: Values are invalid; each line names ``source`` and the key's path.
    """
    return _as_settings(lambda: read_layer(data, source, Config))


def _as_settings(read: Callable[[], FileLayer]) -> EvaluationSettings:
    try:
        layer = read()
    except SettingsError as exc:
        raise with_section_errors(exc) from None
    config = evaluation_config(resolve(Config, {}, {}, layer))
    sampler = config.sampler
    return EvaluationSettings(
        config,
        tuple(cast("Sequence[Evaluator]", config.evaluators or ())),
        sampler if isinstance(sampler, Sampler) else Sampler(),
    )


# -- building a Config's evaluation parts ---------------------------------------------------


def evaluation_config(config: Config) -> Config:
    """``config`` with what its settings file describes built: its ``evaluators`` entries as
    ``Evaluator`` objects and its ``sampling`` section as a ``Sampler``. Names from code or the
    environment are checked and stay names. A built config is returned as it is built again.

    Raises:
        SettingsError: The file's entries or sampling section are invalid (all listed).
        ConfigError: An evaluator name from code or the environment is not registered.
    """
    sources = config.sources
    built: dict[str, Any] = {}
    files: dict[str, Checks] = {}
    evaluators = config.evaluators
    entries = evaluators is not None and any(isinstance(e, Mapping) for e in evaluators)
    if evaluators is not None and (entries or _from_file(sources["evaluators"])):
        checks = files.setdefault(sources["evaluators"], Checks(sources["evaluators"]))
        with checks.attempt():
            built["evaluators"] = read_evaluators(checks, evaluators)
    elif evaluators is not None:
        try:
            check_evaluator_names(evaluators)
        except ValueError as exc:
            where = sources["evaluators"]
            raise ConfigError([f"{where if _from_env(where) else 'evaluators'}: {exc}"]) from None
    if isinstance(config.sampler, Mapping):
        source = sources["sampler"]
        checks = files.setdefault(source, Checks(source))
        same_file = "evaluators" in built and sources["evaluators"] == source
        names = [e.name for e in built["evaluators"]] if same_file else None
        sampling = SamplingReader(checks, names)
        with checks.attempt():
            built["sampler"] = sampling.sampler(config.sampler)
        if not same_file and not checks.errors:
            chosen = built.get("evaluators", evaluators)
            for message in missing_names(source, sampling.used, chosen, sources["evaluators"]):
                log_once(message)
    for checks in files.values():
        checks.raise_errors()
    if not built:
        return config
    result = copy.copy(config)
    for name, value in built.items():
        object.__setattr__(result, name, value)
    return result


def evaluators_of(config: Config) -> list[Evaluator | str] | None:
    """The evaluators ``config`` names (None: unset), its file's entries built; names from
    code or the environment stay names."""
    chosen = evaluation_config(config).evaluators
    return None if chosen is None else [cast("Evaluator | str", e) for e in chosen]


def _from_env(source: str) -> bool:
    return source.startswith(ENV_PREFIX)


def _from_file(source: str) -> bool:
    return source not in (EXPLICIT, "default") and not _from_env(source)


# -- evaluators -----------------------------------------------------------------------------


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
    (``ragtrace.evaluators._suites``), each built as a ``{name: ...}`` entry would be."""
    entry = checks.mapping(item, at, SUITE_KEYS)
    suite = checks.string(entry["suite"], f"{at}.suite")
    if suite not in SUITES:
        checks.fail(f"{at}.suite", _unknown("suite", suite, SUITES))
    profile = checks.string(entry.get("profile", "default"), f"{at}.profile")
    if profile not in suites.PROFILES:
        checks.fail(f"{at}.profile", _unknown("profile", profile, tuple(suites.PROFILES)))
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
        checks.fail(f"{at}.name", _unknown("evaluator", name, known))
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


def _unknown(what: str, name: str, known: Sequence[str]) -> str:
    return f"unknown {what} {name!r}{suggest(name, known)}; known: {', '.join(known)}"


def check_evaluator_names(value: Sequence[object]) -> None:
    """Raise ``ValueError`` for a name in ``value`` that no registered evaluator has."""
    known = registry.names()
    for item in value:
        if isinstance(item, str) and item not in known:
            raise ValueError(_unknown("evaluator", item, known))


# -- sampling -----------------------------------------------------------------------------------


def missing_names(
    source: str, used: Sequence[str], chosen: Sequence[object] | None, where: str
) -> list[str]:
    """The warning for a file's ``sampling`` that uses evaluator names which will not run
    (``chosen``: the evaluators from ``where``; None: the default ones): that part of it never
    applies."""
    if chosen is None:  # unset: the default evaluators
        chosen = default_evaluators().names
    running = {str(getattr(e, "name", e)) for e in chosen}
    missing = sorted(set(used) - running)
    if not missing:
        return []
    return [
        f"{source}: sampling: names {', '.join(map(repr, missing))}, which will not run "
        f"(evaluators from {where}: {', '.join(sorted(running)) or 'none'}); "
        "the parts of sampling that name them never apply"
    ]


class SamplingReader:
    """Builds a ``Sampler`` from one ``sampling`` mapping.

    Args:
        checks: The checks of the source, which also record its errors.
        names: The configured evaluators, the only names ``sampling`` may use (None: any;
            they are checked later).
    """

    def __init__(self, checks: Checks, names: Sequence[str] | None) -> None:
        self.checks = checks
        self.names = None if names is None else list(names)
        self.used: list[str] = []

    def sampler(self, value: object) -> Sampler:
        """The whole section; each part that fails is recorded and the others still read."""
        checks = self.checks
        s = checks.mapping(value, "sampling", SAMPLING_KEYS)
        errors = len(checks.errors)
        options: dict[str, Any] = {}
        parts: dict[str, Callable[[], Any]] = {
            "rate": lambda: checks.number(s["rate"], "sampling.rate", 0, 1),
            "evaluator_rates": lambda: self.per_evaluator(
                s["evaluator_rates"], "sampling.evaluator_rates", 0, 1
            ),
            "rate_limits": lambda: self.per_evaluator(
                s["rate_limits"], "sampling.rate_limits", 0, None
            ),
            "burst": lambda: self.per_evaluator(s["burst"], "sampling.burst", 1, None),
            "hourly_budget_usd": lambda: (
                None
                if s["hourly_budget_usd"] is None
                else checks.number(s["hourly_budget_usd"], "sampling.hourly_budget_usd", 0)
            ),
            "by": lambda: self.by(s["by"]),
            "failed_sessions": lambda: self.failed_sessions(s["failed_sessions"]),
        }
        for key, read in parts.items():
            if key in s:
                with checks.attempt():
                    options[key] = read()
        for key in options.get("burst", {}).keys() - options.get("rate_limits", {}).keys():
            with checks.attempt():
                checks.fail(
                    f"sampling.burst.{key}",
                    "no rate limit for this evaluator in sampling.rate_limits",
                )
        for key, entry in (("rules", self.rule), ("cascades", self.cascade)):
            with checks.attempt():
                listed = checks.items(s.get(key, []), f"sampling.{key}")
                options[key] = []
                for i, item in enumerate(listed):
                    with checks.attempt():
                        options[key].append(entry(item, f"sampling.{key}[{i}]"))
        if len(checks.errors) > errors:
            return Sampler()  # the file fails as a whole; this value is never used
        return self.build(Sampler, "sampling.cascades", **options)

    def by(self, value: object) -> str:
        """``sampling.by``: ``trace`` or ``session``."""
        chosen = self.checks.string(value, "sampling.by")
        if chosen not in ("trace", "session"):
            self.checks.fail("sampling.by", f"expected 'trace' or 'session', got {chosen!r}")
        return chosen

    def failed_sessions(self, value: object) -> FailedSessions:
        """``sampling.failed_sessions``: the memory ``after_failure`` rules read."""
        path = "sampling.failed_sessions"
        f = self.checks.mapping(value, path, FAILED_SESSIONS_KEYS)
        options: dict[str, Any] = {}
        for key in ("max_sessions", "max_turns"):
            if key in f:
                number = self.checks.number(f[key], f"{path}.{key}", 1)
                if not number.is_integer():
                    self.checks.fail(f"{path}.{key}", f"expected a whole number, got {f[key]!r}")
                options[key] = int(number)
        if "ttl_s" in f:
            options["ttl_s"] = self.checks.number(f["ttl_s"], f"{path}.ttl_s", 1e-3)
        if "evaluators" in f:
            options["evaluators"] = self.checks.strings(f["evaluators"], f"{path}.evaluators")
        return self.build(FailedSessions, path, **options)

    def build(self, cls: type[T], path: str, *args: Any, **kwargs: Any) -> T:
        """``cls(*args, **kwargs)``; its ``ValueError`` fails the value at ``path`` (without
        the ``<class>: `` it starts with)."""
        try:
            return cls(*args, **kwargs)
        except ValueError as exc:
            self.checks.fail(path, str(exc).removeprefix(f"{cls.__name__}: "))

    def configured(self, value: object, path: str) -> str:
        """The name of a configured evaluator."""
        name = self.checks.string(value, path)
        if self.names is not None and name not in self.names:
            known = ", ".join(self.names) or "(none)"
            self.checks.fail(
                path, f"unknown evaluator {name!r}{suggest(name, self.names)}; configured: {known}"
            )
        if name not in self.used:
            self.used.append(name)
        return name

    def per_evaluator(
        self, value: object, path: str, low: float, high: float | None
    ) -> dict[str, float]:
        """A table of configured evaluator name -> number in ``[low, high]``."""
        table = self.checks.mapping(value, path, None)
        return {
            self.configured(k, f"{path}.{k}"): self.checks.number(v, f"{path}.{k}", low, high)
            for k, v in table.items()
        }

    def rule(self, value: object, path: str) -> Rule:
        """One entry of ``sampling.rules``."""
        checks = self.checks
        r = checks.mapping(value, path, RULE_KEYS)
        if "action" not in r:
            checks.fail(path, "missing key 'action' (always or never)")
        if r["action"] not in ("always", "never"):
            checks.fail(
                f"{path}.action", f"expected 'always' or 'never', got {describe(r['action'])}"
            )
        options: dict[str, Any] = {"action": r["action"]}
        scalars: dict[str, Callable[[object, str], object]] = {
            "empty_retrieval": checks.boolean,
            "feedback": checks.boolean,
            "app": checks.string,
            "route": checks.string,
            "tenant": checks.string,
            "name": checks.string,
            "top_score_below": checks.number,
            "after_failure": checks.boolean,
        }
        for key, read in scalars.items():
            if key in r:
                options[key] = read(r[key], f"{path}.{key}")
        if "status" in r:
            options["status"] = checks.strings(r["status"], f"{path}.status")
            for status in options["status"]:
                if status not in STATUSES:
                    hint = suggest(status, STATUSES) or f"; expected one of: {', '.join(STATUSES)}"
                    checks.fail(f"{path}.status", f"unknown status {status!r}{hint}")
        if "metadata" in r:
            meta = checks.mapping(r["metadata"], f"{path}.metadata", None)
            for key, v in meta.items():
                if not isinstance(v, str | int | float | bool):
                    checks.fail(
                        f"{path}.metadata.{key}", f"expected a string or number, got {describe(v)}"
                    )
            options["metadata"] = meta
        if "evaluators" in r:
            names = checks.strings(r["evaluators"], f"{path}.evaluators")
            options["evaluators"] = tuple(self.configured(n, f"{path}.evaluators") for n in names)
        return self.build(Rule, path, **options)

    def cascade(self, value: object, path: str) -> Cascade:
        """One entry of ``sampling.cascades``."""
        checks = self.checks
        c = checks.mapping(value, path, CASCADE_KEYS)
        for key in ("evaluator", "after"):
            if key not in c:
                checks.fail(path, f"missing key {key!r}")
        evaluator = self.configured(c["evaluator"], f"{path}.evaluator")
        after = self.configured(c["after"], f"{path}.after")
        bounds = {k: checks.number(c[k], f"{path}.{k}") for k in ("low", "high") if k in c}
        return self.build(Cascade, path, evaluator, after, **bounds)
