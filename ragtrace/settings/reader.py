"""Walking a settings mapping into the options it sets (a ``FileLayer``).

The file's shape comes from ``Config``'s declarations: an option declared with
``file="pipeline.workers"`` is the key ``workers`` of the section ``pipeline``. A key that is
no option is ignored with a warning naming the closest one (the file may come from a newer
ragtrace); a bad value is an error, and every error of the file is reported in one
``SettingsError``. Values are checked exactly as ``Config`` checks them, so a file can hold
nothing a ``Config`` would refuse.

Most values are read by their option's kind. A few need more than a kind says, and have a
reader here (``READERS``, by option name): ``evaluators`` (entries with options, suites),
``sampler`` (the ``sampling`` section) and ``queue_url`` (a URL, or a mapping of the queue's
options). ``SHORTHANDS`` turns a non-mapping value of a section into the mapping it stands for
(``sinks.prometheus: true`` is ``{port: 9464}``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ragtrace.config import DEFAULT_PROMETHEUS_PORT, Config, Option, options
from ragtrace.config.resolve import FileLayer
from ragtrace.evaluators import registry
from ragtrace.settings.checks import Checks, kind, suggest
from ragtrace.settings.queue import check_queue_url, read_queue
from ragtrace.settings.sampling import names_check, read_sampling
from ragtrace.settings.sections import read_evaluators

Tree = dict[str, Any]
"""Section -> its keys: a nested ``Tree`` or the ``Option`` the key sets."""


def option_tree() -> Tree:
    """The file's shape, from the declarations (in their order: ``evaluators`` before
    ``sampling``, which checks its names against them)."""
    tree: Tree = {}
    for opt in options(Config):
        if opt.file is None:
            continue
        *sections, key = opt.file.split(".")
        node = tree
        for section in sections:
            node = node.setdefault(section, {})
        node[key] = opt
    return tree


def _prometheus(checks: Checks, value: object, path: str) -> object:
    """``true``: the default port; ``false`` or empty: no endpoint; a mapping: its port, else
    the default port."""
    if value is True:
        return {"port": DEFAULT_PROMETHEUS_PORT}
    if value is None or value is False:
        return {"port": None}
    if isinstance(value, Mapping):
        return {"port": DEFAULT_PROMETHEUS_PORT, **value}
    checks.fail(path, f"expected true, false or a mapping of port and addr, got {kind(value)}")


SHORTHANDS: dict[str, Callable[[Checks, object, str], object]] = {"sinks.prometheus": _prometheus}


class FileReader:
    """Reads one settings mapping into option values, recording every mistake in ``checks``."""

    def __init__(self, checks: Checks) -> None:
        self.checks = checks
        self.values: dict[str, Any] = {}
        self.sampling_names: tuple[str, ...] | None = None

    def section(self, value: object, tree: Tree, path: str) -> None:
        """Every option of one section (``path``: ``""`` for the top level)."""
        present = self.checks.mapping(value, path, tuple(tree), strict=False)
        for key, child in tree.items():
            if key not in present:
                continue
            at = f"{path}.{key}" if path else key
            with self.checks.attempt():
                if isinstance(child, Option):
                    self.values[child.name] = self.option(child, present[key], at)
                else:
                    shorthand = SHORTHANDS.get(at)
                    raw = (
                        present[key]
                        if shorthand is None
                        else shorthand(self.checks, present[key], at)
                    )
                    self.section(raw, child, at)

    def option(self, opt: Option, value: object, path: str) -> Any:
        """One option's value, read by its reader or checked by its kind."""
        if opt.name == "evaluators":
            return read_evaluators(self.checks, value)
        if opt.name == "sampler":
            names = self.values.get("evaluators")
            sampler, self.sampling_names = read_sampling(
                self.checks, value, None if names is None else [e.name for e in names]
            )
            return sampler
        if opt.name == "queue_url":
            return read_queue(self.checks, value)
        if opt.name == "evaluation_results" and isinstance(value, bool):
            return opt.default if value else "none"  # `sinks.otel: true | false`
        if opt.name == "phoenix_endpoint" and value is False:
            return None
        if opt.name == "phoenix_endpoint" and isinstance(value, Mapping):
            unknown = sorted(set(value) - {"endpoint"})
            if unknown or "endpoint" not in value:
                self.checks.fail(path, "expected a URL or {endpoint: URL} (Phoenix's base URL)")
            value = value.get("endpoint")
            path += ".endpoint"
        try:
            accepted = opt.accept(value, read_text=False)
            check_value(opt.name, accepted)
            return accepted
        except ValueError as exc:
            self.checks.fail(path, str(exc))


def read_layer(data: object, source: str) -> FileLayer:
    """Check ``data`` (shaped like the file) and return the options it sets.

    Raises:
        SettingsError: Every bad value, one ``<source>: <path>: <message>`` line each.
    """
    checks = Checks(source)
    reader = FileReader(checks)
    with checks.attempt():
        if not isinstance(data, Mapping):
            checks.fail("", f"expected a mapping at the top level, got {type(data).__name__}")
        reader.section(data, option_tree(), "")
    checks.raise_errors()
    names = reader.sampling_names
    cross = () if names is None else (names_check(source, names),)
    return FileLayer(source, reader.values, tuple(checks.warnings), cross)


def check_value(name: str, value: Any) -> None:
    """The checks of options whose values only this package can judge: evaluator names must
    be registered, a queue URL's options valid.

    Raises:
        ValueError: Saying what is wrong.
    """
    if name == "evaluators":
        known = registry.names()
        for item in value:
            if isinstance(item, str) and item not in known:
                raise ValueError(
                    f"unknown evaluator {item!r}{suggest(item, known)}; known: {', '.join(known)}"
                )
    elif name == "queue_url":
        check_queue_url(value)
